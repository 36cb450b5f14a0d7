//! An account's jobs as one node of a cluster: what this node writes is published to a
//! replicated log (shared by every node serving the account) as well as logged locally,
//! and what the other nodes published is applied here in the replicated log's order.
//!
//! The replicated log itself (a NATS JetStream stream) is the `vitrine-cluster` crate's;
//! the jobs only see [`Replication`]: publish a record, and wait for it to be stored on a
//! quorum when the record's durability asks for it.
//!
//! - A delta is not logged locally by the node that takes it: it is published (its
//!   token is returned once the replicated log acknowledges it), and every node,
//!   including that one, logs and applies it when it comes back from the replicated log,
//!   so deltas are applied in the same order everywhere.
//! - A request's events are applied and logged locally first (read-your-writes), then
//!   published once the local log holds them ([`LocalLog`]: a crash never leaves the
//!   others holding a record this node lost); each node skips what its own data
//!   directory published (its
//!   *incarnation*, a random id saved with the data directory: a node whose directory is
//!   lost applies its own earlier records again, from the replicated log).
//! - An erasure is applied and logged locally, then published and applied by the others.
//!
//! A record applied from the replicated log is logged locally as a
//! [`RecordKind::Replicated`] record: the replicated log's sequence, then the record. A
//! restart replays the local log as usual and resumes the replicated log after the
//! highest sequence found there, or in the `stream-position` file written when the local
//! log is cut.
//!
//! Its parts: `port` (what the jobs need of a replicated log: the [`Replication`] trait
//! the `vitrine-cluster` crate implements, its errors, outbox ids and marks, claims,
//! scrubs, and the [`LocalLog`] the outbox asks), `feeds` (full feeds built once for the
//! cluster), `snapshots` (the snapshot sets a joining node restores), `state` (what
//! [`AccountJobs`] keeps of its replication), `node` ([`ReplicaNode`]: all the cluster
//! asks of an account's jobs).

mod feeds;
mod node;
pub(in crate::jobs) mod port;
mod snapshots;
pub(in crate::jobs) mod state;

pub use self::node::ReplicaNode;
pub use self::port::{
    Claim, Handed, Incarnation, Lease, LocalLog, OUTBOX_MARK_FILE, OutboxFigures, OutboxId,
    Replication, ReplicationError, Reserved, Scrub, Unstored, Wait, save_outbox_mark,
};
pub use self::snapshots::{FLOORS_FILE, Floors, SnapshotSet, is_fresh};
use self::state::Durability;

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use self::port::KeepsRecords;
use crate::jobs::applying::Entered;
use crate::jobs::log::{self, RecordKind};
use crate::jobs::status::DeltaStatus;
use crate::jobs::worker::queue::Queued;
use crate::jobs::{AccountJobs, Shared, SubmitError};
use vitrine_snapshots::wal::Payload;

/// The file holding the replicated log's sequence that the account's snapshots and
/// local log include (written when the local log is cut).
pub const POSITION_FILE: &str = "stream-position";

/// What a record from the replicated log did here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Applied (and logged locally).
    Applied,
    /// Published by this data directory: already applied.
    Own,
    /// Already in the local log (a restart read it again).
    Seen,
}

impl AccountJobs {
    /// See [`ReplicaNode::apply_replicated`], which the cluster calls.
    pub(in crate::jobs) fn apply_replicated(
        &self,
        sequence: u64,
        origin: Incarnation,
        kind: RecordKind,
        payload: &[u8],
    ) -> Result<Applied, SubmitError> {
        let shared = &self.shared;
        if sequence <= shared.stream_position.load(Ordering::Acquire) {
            return Ok(Applied::Seen);
        }
        // Restored from the cluster's snapshots: what they include is not applied again.
        let floor = match kind {
            RecordKind::Delta | RecordKind::FeedSubmitted | RecordKind::FeedBuilt => {
                shared.floors.catalogue
            }
            RecordKind::Served
            | RecordKind::Events
            | RecordKind::Forget
            | RecordKind::ForgetHashed
            | RecordKind::Campaigns
            | RecordKind::Click => shared.floors.state,
            RecordKind::Replicated | RecordKind::Outboxed => 0,
        };
        if sequence <= floor {
            shared.stream_position.store(sequence, Ordering::Release);
            return Ok(Applied::Seen);
        }
        match kind {
            RecordKind::FeedSubmitted => return self.apply_feed_submitted(sequence, payload),
            RecordKind::FeedBuilt => return self.apply_feed_built(sequence, payload),
            _ => {}
        }
        let own = shared
            .replica
            .get()
            .is_some_and(|replica| replica.incarnation == origin);
        // Deltas and campaign changes are applied from the replicated log on every
        // node, the one that took them included (in the log's order, so that every
        // node refuses the same rival change); events and erasures were applied where
        // they were taken.
        if own && !matches!(kind, RecordKind::Delta | RecordKind::Campaigns) {
            shared.stream_position.store(sequence, Ordering::Release);
            return Ok(Applied::Own);
        }
        let logged = log::encode_replicated(sequence, kind, payload);
        match kind {
            RecordKind::Delta => {
                let (token, parsed) = log::decode_delta(payload);
                let Some(token) = token else {
                    shared.stream_position.store(sequence, Ordering::Release);
                    return Ok(Applied::Seen);
                };
                let deltas = &shared.deltas;
                if deltas.statuses.read_from_stream(&token) {
                    // A second copy of a delta read already (a publish retried past
                    // the stream's duplicate window): applied once, where its first
                    // copy is, so that it cannot undo the deltas after that.
                    shared.stream_position.store(sequence, Ordering::Release);
                    return Ok(Applied::Seen);
                }
                let intake = self.intake.lock();
                let Some(sender) = intake.as_ref() else {
                    return Err(SubmitError::Closed);
                };
                deltas.pending.fetch_add(1, Ordering::AcqRel);
                let local = match shared
                    .wal
                    .append_durable(RecordKind::Replicated.code(), logged)
                {
                    Ok(local) => local,
                    Err(error) => {
                        deltas.pending.fetch_sub(1, Ordering::AcqRel);
                        return Err(error.into());
                    }
                };
                let delta = match parsed {
                    Ok(delta) => delta,
                    Err(reason) => {
                        shared.stream_position.store(sequence, Ordering::Release);
                        deltas.pending.fetch_sub(1, Ordering::AcqRel);
                        let failed = DeltaStatus::Failed(format!(
                            "the replicated delta could not be read: {reason}"
                        ));
                        deltas.statuses.set(token, local, failed);
                        return Ok(Applied::Applied);
                    }
                };
                // Queued before the position moves: a node is not caught up with a
                // delta it has read but not applied, and a cluster snapshot's
                // catalogue stops before it.
                shared
                    .stream_deltas_queued
                    .store(local + 1, Ordering::Release);
                deltas.stream_pending.lock().push_back(sequence);
                shared.stream_position.store(sequence, Ordering::Release);
                deltas
                    .statuses
                    .set(token.clone(), local, DeltaStatus::Pending);
                let queued = Queued::replicated(token, local, sequence, delta);
                if sender.send(queued).is_err() {
                    deltas.pending.fetch_sub(1, Ordering::AcqRel);
                    return Err(SubmitError::Closed);
                }
            }
            RecordKind::Served | RecordKind::Events | RecordKind::Click => {
                apply_tracking(&shared.account, kind, payload);
                // Not refused while the log writer is behind (serving is, with a 503):
                // a refusal here would stop the account's replication.
                shared
                    .wal
                    .append_under_policy_waiting(RecordKind::Replicated.code(), logged)?;
                shared.stream_position.store(sequence, Ordering::Release);
            }
            RecordKind::Campaigns => {
                // Applied in the log's order on every node: a change whose base is no
                // longer current is refused the same way everywhere.
                super::campaigns::apply(&shared.account, payload);
                shared
                    .wal
                    .append_under_policy_waiting(RecordKind::Replicated.code(), logged)?;
                shared.stream_position.store(sequence, Ordering::Release);
            }
            RecordKind::Forget => {
                let identifier = String::from_utf8_lossy(payload).into_owned();
                self.forget_replicated(sequence, &[identifier])?;
            }
            RecordKind::ForgetHashed => {
                // Every identifier of this node whose keyed hash it is (none when the
                // person never reached this node), erased and logged as an erasure.
                let found = <[u8; 32]>::try_from(payload).map_or_else(
                    |_| Vec::new(),
                    |hash| {
                        let key = self.cluster_erasure_key();
                        shared
                            .account
                            .identifiers_matching(|id| crate::erasure::keyed_hash(&key, id) == hash)
                    },
                );
                self.forget_replicated(sequence, &found)?;
                if found.is_empty() {
                    return Ok(Applied::Seen);
                }
            }
            RecordKind::Replicated
            | RecordKind::Outboxed
            | RecordKind::FeedSubmitted
            | RecordKind::FeedBuilt => {
                shared.stream_position.store(sequence, Ordering::Release);
                return Ok(Applied::Seen);
            }
        }
        Ok(Applied::Applied)
    }

    /// Erases `identifiers`, read from the replicated record at `sequence`: each is
    /// erased and logged as an erasure of its own, the stream position moves past the
    /// record, then each erasure's flush runs.
    fn forget_replicated(&self, sequence: u64, identifiers: &[String]) -> Result<(), SubmitError> {
        let shared = &self.shared;
        for identifier in identifiers {
            shared.account.forget(identifier);
            let logged =
                log::encode_replicated(sequence, RecordKind::Forget, identifier.as_bytes());
            shared
                .wal
                .append_durable(RecordKind::Replicated.code(), logged)?;
        }
        shared.stream_position.store(sequence, Ordering::Release);
        for identifier in identifiers {
            self.after_forget(identifier)?;
        }
        Ok(())
    }

    /// Sets the key of the erasures this account publishes to a cluster's replicated log
    /// and reads from it: the same on every node (the server derives it from the
    /// account's secret key). Once; without it, the access key is used.
    pub fn set_cluster_erasure_key(&self, key: &[u8]) {
        let _ = self.shared.cluster_erasure_key.set(key.to_vec());
    }

    /// The key of the cluster's erasures (see [`AccountJobs::set_cluster_erasure_key`]).
    fn cluster_erasure_key(&self) -> Vec<u8> {
        self.shared
            .cluster_erasure_key
            .get()
            .cloned()
            .unwrap_or_else(|| self.shared.account.access_key().as_bytes().to_vec())
    }

    /// The keyed hash an erasure of `identifier` is published as.
    pub(in crate::jobs) fn cluster_erasure_hash(&self, identifier: &str) -> [u8; 32] {
        crate::erasure::keyed_hash(&self.cluster_erasure_key(), identifier)
    }

    /// Publishes a record when the account is replicated (see [`Wait`]).
    pub(in crate::jobs) fn publish(
        &self,
        kind: RecordKind,
        payload: impl FnOnce() -> Vec<u8>,
        wait: Wait,
    ) -> Result<bool, SubmitError> {
        let Some(replica) = self.shared.replica.get() else {
            return Ok(false);
        };
        replica
            .log
            .publish(kind, payload(), wait)
            .map_err(SubmitError::Replication)?;
        Ok(true)
    }

    /// Refuses a write that would publish with `wait` when the replicated log cannot
    /// take it now ([`Replication::admit`]); nothing when the account is not replicated.
    pub(in crate::jobs) fn admit(&self, wait: Wait) -> Result<(), SubmitError> {
        match self.shared.replica.get() {
            Some(replica) => replica.log.admit(wait).map_err(SubmitError::Replication),
            None => Ok(()),
        }
    }

    /// Logs a record this node took, and publishes it when the account is replicated:
    /// then logged as [`RecordKind::Outboxed`] under a reserved outbox id (so that a
    /// restart publishes again what the replicated log had not stored), as `durability`
    /// says. `applying` (the request, counted since before it applied what the record
    /// holds) is let go once the record is handed to the log.
    pub(in crate::jobs) fn log_and_publish(
        &self,
        kind: RecordKind,
        payload: impl Into<Payload>,
        durability: Durability,
        wait: Wait,
        applying: Entered<'_>,
    ) -> Result<(), SubmitError> {
        let wal = &self.shared.wal;
        let append = |kind: RecordKind, payload: Payload| match durability {
            Durability::UnderPolicy => wal.append_under_policy(kind.code(), payload),
            Durability::Unwaited => wal.append_unwaited(kind.code(), payload),
        };
        let Some(replica) = self.shared.replica.get() else {
            let appended = append(kind, payload.into());
            drop(applying);
            appended?;
            return Ok(());
        };
        // The replicated log publishes the record's bytes: a record the log's writer
        // would have encoded is encoded here.
        let payload = payload
            .into()
            .into_bytes()
            .map_err(|e| SubmitError::Journal(vitrine_snapshots::Error::Wal(e)))?;
        let reserved = replica.log.reserve(wal.next_sequence());
        let appended = append(
            RecordKind::Outboxed,
            log::encode_outboxed(reserved.id, kind, &payload).into(),
        );
        drop(applying);
        let handed = match appended {
            Ok(handed) => handed,
            Err(error) => {
                replica.log.release(reserved);
                return Err(error.into());
            }
        };
        replica
            .log
            .publish_reserved(reserved, handed, kind, payload, wait)
            .map_err(SubmitError::Replication)
    }

    /// The replicated log's outbox figures (`None` when the account is not replicated).
    pub fn outbox(&self) -> Option<OutboxFigures> {
        self.shared
            .replica
            .get()
            .map(|replica| replica.log.outbox())
    }

    /// Erasure scrubs of the cluster's storage this node started and has not finished
    /// (`None` when the account is not replicated).
    pub fn scrubs_pending(&self) -> Option<usize> {
        self.shared
            .replica
            .get()
            .map(|replica| replica.log.scrubs_pending())
    }

    /// Whether the account's writes go to a replicated log.
    pub fn is_replicated(&self) -> bool {
        self.shared.replica.get().is_some()
    }

    /// The replicated log, when the account is replicated.
    pub(crate) fn replication(&self) -> Option<&Arc<dyn Replication>> {
        self.shared.replica.get().map(|replica| &replica.log)
    }

    /// This data directory's incarnation (0 when the account is not replicated).
    pub(crate) fn incarnation(&self) -> Incarnation {
        self.shared
            .replica
            .get()
            .map_or(0, |replica| replica.incarnation)
    }
}

/// Applies a logged request's events to the account (as a restart replays them).
pub(in crate::jobs) fn apply_tracking(
    account: &vitrine_engine::Account,
    kind: RecordKind,
    payload: &[u8],
) {
    match kind {
        RecordKind::Served => {
            if let Ok(served) = log::decode_served(payload) {
                account.replay_served(&served);
            }
        }
        RecordKind::Events => {
            if let Ok(tracked) = log::decode_tracked(payload) {
                account.replay(&tracked);
            }
        }
        RecordKind::Click => {
            if let Ok(clicked) = log::decode_click(payload) {
                account.record_click(&clicked);
            }
        }
        _ => {}
    }
}

/// The replicated sequence saved in the account's directory (0 when none is).
pub(in crate::jobs) fn saved_position(dir: &Path) -> u64 {
    fs::read_to_string(dir.join(POSITION_FILE))
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0)
}

impl Shared {
    /// Saves the replicated sequence that the local log and snapshots hold (before the
    /// local log is cut: whatever the cut removes is then behind it).
    pub(in crate::jobs) fn save_stream_position(
        &self,
        position: u64,
    ) -> Result<(), vitrine_snapshots::Error> {
        if position == 0 {
            return Ok(());
        }
        vitrine_snapshots::atomic::atomic_write(
            &self.dir,
            POSITION_FILE,
            format!("{position}\n").as_bytes(),
        )
    }
}

impl KeepsRecords for Shared {
    fn holds(&self, handed: Handed) -> bool {
        self.wal.holds(handed)
    }

    fn has_failed(&self) -> bool {
        self.wal.has_failed()
    }

    fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}
