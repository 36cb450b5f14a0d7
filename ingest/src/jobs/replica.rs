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
//!   published; each node skips what its own data directory published (its
//!   *incarnation*, a random id saved with the data directory: a node whose directory is
//!   lost applies its own earlier records again, from the replicated log).
//! - An erasure is applied and logged locally, then published and applied by the others.
//!
//! A record applied from the replicated log is logged locally as a
//! [`RecordKind::Replicated`] record: the replicated log's sequence, then the record. A
//! restart replays the local log as usual and resumes the replicated log after the
//! highest sequence found there, or in the `stream-position` file written when the local
//! log is cut.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::log::{self, RecordKind};
use super::status::DeltaStatus;
use super::worker::Queued;
use super::{AccountJobs, Shared, SubmitError};

/// The file holding the replicated log's sequence that the account's snapshots and
/// local log include (written when the local log is cut).
pub const POSITION_FILE: &str = "stream-position";

/// Where a replicated record comes from: the incarnation of the data directory of the
/// node that published it.
pub type Incarnation = u64;

/// The file in an account's directory holding its outbox mark: every record this node
/// took with an [`OutboxId`] up to it is stored in the replicated log.
pub const OUTBOX_MARK_FILE: &str = "cluster-outbox";

/// A record's place in this node's outbox: the count of the data directory's starts in
/// the cluster when it was taken, and its number among that start's records. Ordered
/// as the outbox publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OutboxId {
    /// The start it was taken in.
    pub start: u32,
    /// Its number in that start, from 1.
    pub number: u64,
}

impl std::fmt::Display for OutboxId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.start, self.number)
    }
}

/// An outbox id reserved for a record about to be logged, and the lowest local log
/// sequence the record can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reserved {
    /// The lowest local log sequence of the record.
    pub logged_from: u64,
    /// Its outbox id.
    pub id: OutboxId,
}

/// A record taken for the outbox and not known to be stored (read back from the local
/// log past the outbox mark when the account opens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unstored {
    /// Its outbox id.
    pub id: OutboxId,
    /// Its kind.
    pub kind: RecordKind,
    /// The record.
    pub payload: Vec<u8>,
}

/// Saves the outbox mark of the account in `dir` (atomically, durably).
pub fn save_outbox_mark(dir: &Path, mark: OutboxId) -> Result<(), vitrine_snapshots::Error> {
    vitrine_snapshots::atomic::atomic_write(
        dir,
        OUTBOX_MARK_FILE,
        format!("{} {}\n", mark.start, mark.number).as_bytes(),
    )
}

/// The outbox mark saved in `dir` (`None` when none is).
pub(super) fn outbox_mark(dir: &Path) -> Option<OutboxId> {
    let text = fs::read_to_string(dir.join(OUTBOX_MARK_FILE)).ok()?;
    let (start, number) = text.trim().split_once(' ')?;
    Some(OutboxId {
        start: start.parse().ok()?,
        number: number.parse().ok()?,
    })
}

/// Why the replicated log, the job claims or the shared objects did not do what was
/// asked. The NATS client's and the file system's reasons are kept as their text: they
/// end in a log line or an error message, never in a decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicationError {
    /// The account has no replicated log (it is served by one node).
    #[error("the account is not replicated")]
    NotReplicated,
    /// The cluster did not answer within the time allowed.
    #[error("no answer from the cluster within {0:?}")]
    Timeout(std::time::Duration),
    /// The records not yet stored by the cluster are at their bound (the cluster has
    /// not been storing records for a while): nothing was recorded.
    #[error(
        "{0} records wait for the cluster to store them, the bound: nothing was recorded; try again once the cluster answers"
    )]
    QueueFull(usize),
    /// The cluster is not storing records now (its last attempt failed for the reason
    /// given), and the write would have to wait for it: nothing was recorded.
    #[error(
        "the cluster is not storing records now ({0}): nothing was recorded; try again shortly"
    )]
    Unavailable(String),
    /// The cluster did not confirm storing the record within the time a request
    /// waits. The record is kept and stored once the cluster answers, on every node.
    #[error(
        "the cluster did not confirm storing the record within {0:?}; it is kept and will be stored on every node once the cluster answers: do not send it again"
    )]
    Unconfirmed(std::time::Duration),
    /// A task or thread the work needs has stopped (named).
    #[error("the {0} stopped")]
    Stopped(&'static str),
    /// NATS failed or refused: what was being done (may be empty), and the client's
    /// reason.
    #[error("{doing}{}{reason}", if doing.is_empty() { "" } else { ": " })]
    Nats {
        /// What was being done, e.g. `storing the shared object built-7`.
        doing: String,
        /// The client's reason.
        reason: String,
    },
    /// A local file could not be read or written.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
    /// Something the replicated log or a shared object holds does not read, or work
    /// on it failed here (what, and why).
    #[error("{what}: {reason}")]
    Failed {
        /// What it is, e.g. `the shared catalogue built-7`.
        what: String,
        /// Why.
        reason: String,
    },
}

impl ReplicationError {
    /// A NATS error while `doing` something.
    pub fn nats(doing: impl Into<String>, reason: impl std::fmt::Display) -> ReplicationError {
        ReplicationError::Nats {
            doing: doing.into(),
            reason: reason.to_string(),
        }
    }

    /// A file error at `path`.
    pub fn file(path: &Path, reason: impl std::fmt::Display) -> ReplicationError {
        ReplicationError::File {
            path: path.display().to_string(),
            reason: reason.to_string(),
        }
    }

    /// `what` failed for `reason`.
    pub fn failed(what: impl Into<String>, reason: impl std::fmt::Display) -> ReplicationError {
        ReplicationError::Failed {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}

/// How long a publish waits for the replicated log to store its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Not at all: handed to the outbox, which retries it in order until it is stored.
    No,
    /// As a request waits: [`Replication::publish`] returns once the record is stored,
    /// or with [`ReplicationError::Unconfirmed`] after 0.9 s (the record stays
    /// in the outbox), or at once with [`ReplicationError::Unavailable`] while the
    /// cluster is known not to be storing records (nothing kept).
    Answer,
    /// Until it is stored, up to ten minutes (background work: a feed's outcome, an
    /// imported order history); then [`ReplicationError::Unconfirmed`], the record
    /// still in the outbox.
    Stored,
}

/// The records of an account not yet stored by the replicated log.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OutboxFigures {
    /// Records waiting (published and not acknowledged, or not yet published).
    pub records: usize,
    /// Seconds the oldest of them has waited (0 when none waits).
    pub oldest_seconds: f64,
    /// Publishes attempted again after a failure, since the process started.
    pub retries: u64,
}

/// A replicated log the account's records are published to.
pub trait Replication: Send + Sync + std::fmt::Debug {
    /// Publishes a record through the account's outbox: records are stored in the
    /// order they were handed over, each retried until the replicated log stored it
    /// (on a quorum). `wait` says how long this call waits for that. Never refused for
    /// the outbox's bound or a failing log (the write may be applied already): ask
    /// [`Replication::admit`] before applying anything.
    fn publish(
        &self,
        kind: RecordKind,
        payload: Vec<u8>,
        wait: Wait,
    ) -> Result<(), ReplicationError>;

    /// Takes the outbox's next id for a record about to be logged locally as
    /// [`RecordKind::Outboxed`] at `logged_from` or later (the local log's next
    /// sequence now); it counts in the outbox's depth from now on. Then
    /// [`Replication::publish_reserved`], or [`Replication::release`] when the record
    /// could not be logged.
    fn reserve(&self, logged_from: u64) -> Reserved;

    /// [`Replication::publish`] of a record logged under a reserved id (published with
    /// it, so that a restart publishing it again stores it once).
    fn publish_reserved(
        &self,
        reserved: Reserved,
        kind: RecordKind,
        payload: Vec<u8>,
        wait: Wait,
    ) -> Result<(), ReplicationError>;

    /// Gives back a reservation whose record was not logged.
    fn release(&self, reserved: Reserved);

    /// The lowest local log sequence a record of the outbox not yet stored may have
    /// (`None` when every reserved record is stored): the local log is never cut past
    /// it, so that a restart finds every such record to publish again.
    fn unstored_from(&self) -> Option<u64>;

    /// Whether a write that will publish with `wait` may be applied now: refused
    /// ([`ReplicationError::QueueFull`]) when the outbox is at its bound, and, for
    /// [`Wait::Answer`], ([`ReplicationError::Unavailable`]) while the replicated log is
    /// failing to store records. Checked before anything is applied, so that a refused
    /// write changes nothing.
    fn admit(&self, wait: Wait) -> Result<(), ReplicationError>;

    /// The outbox's figures, for `/metrics`.
    fn outbox(&self) -> OutboxFigures;

    /// Claims the job submitted at `job` in the replicated log for this node (see
    /// [`Claim`]).
    fn claim(&self, job: u64) -> Result<Claim, ReplicationError>;

    /// Stores the file at `path` as the shared object `name` (replacing one of that name).
    fn put_object(&self, name: &str, path: &Path) -> Result<(), ReplicationError>;

    /// Writes the shared object `name` to `path`; false when there is no such object.
    fn get_object(&self, name: &str, path: &Path) -> Result<bool, ReplicationError>;

    /// The names of the shared objects.
    fn objects(&self) -> Result<Vec<String>, ReplicationError>;

    /// Deletes the shared object `name` (nothing when there is none).
    fn delete_object(&self, name: &str) -> Result<(), ReplicationError>;

    /// The delta records of the replicated log strictly between `after` and `before`,
    /// in order.
    fn deltas_between(&self, after: u64, before: u64) -> Result<Vec<Vec<u8>>, ReplicationError>;

    /// Removes an erased person from the cluster's storage, in the background: once
    /// every node reading the replicated log is past its end, every record `scrub`
    /// matches is erased from it, and every shared object holding user records that
    /// name the person is deleted.
    fn scrub(&self, scrub: Scrub);
}

/// What names an erased person in the replicated log and the shared objects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scrub {
    /// The person's visitor ids: their requests' records.
    pub visitor_ids: std::collections::HashSet<String>,
    /// The identifier erased, the person's user ids and emails, lower case: records and
    /// objects holding one (ASCII case-insensitive). Texts shorter than
    /// [`Scrub::SHORTEST_TEXT`] are not looked for in bytes (they would match others'
    /// records); the person's requests are found by visitor id.
    pub texts: Vec<String>,
}

impl Scrub {
    /// The shortest text looked for in a record's bytes.
    pub const SHORTEST_TEXT: usize = 4;

    /// What names the person `names` describes.
    pub fn of(names: vitrine_engine::account::ErasureNames) -> Scrub {
        Scrub {
            visitor_ids: names.visitor_ids.into_iter().collect(),
            texts: names
                .identities
                .into_iter()
                .map(|text| text.to_ascii_lowercase())
                .filter(|text| text.len() >= Scrub::SHORTEST_TEXT)
                .collect(),
        }
    }

    /// Whether bytes hold one of the texts.
    pub fn names_in(&self, bytes: &[u8]) -> bool {
        let lower = bytes.to_ascii_lowercase();
        self.texts.iter().any(|text| {
            let text = text.as_bytes();
            lower.windows(text.len()).any(|window| window == text)
        })
    }

    /// Whether a record of the replicated log names the person: an erasure of one of
    /// the texts, a request of one of the visitors, or an event, a request or a delta
    /// (user records) holding one of the texts.
    pub fn matches(&self, kind: RecordKind, payload: &[u8]) -> bool {
        let visitor = match kind {
            RecordKind::Served => log::decode_served(payload)
                .ok()
                .map(|s| s.tracked.visitor_id),
            RecordKind::Events => log::decode_tracked(payload).ok().map(|t| t.visitor_id),
            RecordKind::Click => log::decode_click(payload).ok().map(|c| c.visitor_id),
            RecordKind::Forget | RecordKind::Delta => None,
            _ => return false,
        };
        visitor.is_some_and(|v| self.visitor_ids.contains(&v)) || self.names_in(payload)
    }
}

/// Who builds a job of the cluster (a full feed: built once, by one node).
pub enum Claim {
    /// This node: build it, publish its outcome, then say so with [`Lease::done`]. The
    /// claim is kept alive until then; dropped (or the process gone), it lapses and
    /// another node takes the job over.
    Ours(Box<dyn Lease>),
    /// Finished: its outcome is in the replicated log.
    Done,
    /// Another node is building it.
    Busy,
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Claim::Ours(_) => "Ours",
            Claim::Done => "Done",
            Claim::Busy => "Busy",
        })
    }
}

/// A job claimed by this node.
pub trait Lease: Send {
    /// Marks the job finished (its outcome published), for good.
    fn done(self: Box<Self>) -> Result<(), ReplicationError>;
}

/// The replication of one account's jobs.
#[derive(Debug)]
pub(super) struct Replica {
    pub(super) log: Arc<dyn Replication>,
    /// This data directory's incarnation: records it published are skipped.
    pub(super) incarnation: Incarnation,
}

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
    /// Makes this account's jobs a node of a cluster: from now on deltas, events and
    /// erasures are published to `log` too (see the module documentation). Once only:
    /// false when the jobs already publish somewhere.
    pub fn replicate(&self, log: Arc<dyn Replication>, incarnation: Incarnation) -> bool {
        self.shared
            .replica
            .set(Replica { log, incarnation })
            .is_ok()
    }

    /// The replicated log's sequence this node's account includes: the next record to
    /// read from the replicated log is the one after it.
    pub fn stream_position(&self) -> u64 {
        self.shared.stream_position.load(Ordering::Acquire)
    }

    /// Whether the account includes the replicated log through `target`: read that far,
    /// and every delta read applied to the catalogue (not just queued for it).
    pub fn stream_caught_up(&self, target: u64) -> bool {
        let shared = &self.shared;
        shared.stream_position.load(Ordering::Acquire) >= target
            && shared.deltas.applied_through.load(Ordering::Acquire)
                >= shared.stream_deltas_queued.load(Ordering::Acquire)
    }

    /// Applies a record of the replicated log, at `sequence` there, published by the
    /// node of `origin`: logs it locally (as a [`RecordKind::Replicated`] record) and
    /// applies it: a delta is queued for the delta worker (its token's status is the
    /// same on every node once applied), events are tracked, an erasure erases.
    pub fn apply_replicated(
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
        // Deltas are applied from the replicated log on every node, the one that took
        // them included; events and erasures were applied where they were taken.
        if own && kind != RecordKind::Delta {
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
                let intake = self.intake.lock();
                let Some(sender) = intake.as_ref() else {
                    return Err(SubmitError::Closed);
                };
                let deltas = &shared.deltas;
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
                // delta it has read but not applied.
                shared
                    .stream_deltas_queued
                    .store(local + 1, Ordering::Release);
                shared.stream_position.store(sequence, Ordering::Release);
                deltas
                    .statuses
                    .set(token.clone(), local, DeltaStatus::Pending);
                let queued = Queued::new(token, local, delta);
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
    pub(super) fn cluster_erasure_hash(&self, identifier: &str) -> [u8; 32] {
        crate::erasure::keyed_hash(&self.cluster_erasure_key(), identifier)
    }

    /// Publishes a record when the account is replicated (see [`Wait`]).
    pub(super) fn publish(
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
    pub(super) fn admit(&self, wait: Wait) -> Result<(), SubmitError> {
        match self.shared.replica.get() {
            Some(replica) => replica.log.admit(wait).map_err(SubmitError::Replication),
            None => Ok(()),
        }
    }

    /// Logs a record this node took, and publishes it when the account is replicated:
    /// then logged as [`RecordKind::Outboxed`] under a reserved outbox id (so that a
    /// restart publishes again what the replicated log had not stored). `durable`:
    /// logged under the log's policy; otherwise without waiting for the disk.
    pub(super) fn log_and_publish(
        &self,
        kind: RecordKind,
        payload: Vec<u8>,
        durable: bool,
        wait: Wait,
    ) -> Result<(), SubmitError> {
        let wal = &self.shared.wal;
        let append = |kind: RecordKind, payload: Vec<u8>| {
            if durable {
                wal.append_under_policy(kind.code(), payload)
            } else {
                wal.append_unwaited(kind.code(), payload)
            }
        };
        let Some(replica) = self.shared.replica.get() else {
            return Ok(append(kind, payload)?);
        };
        let reserved = replica.log.reserve(wal.next_sequence());
        if let Err(error) = append(
            RecordKind::Outboxed,
            log::encode_outboxed(reserved.id, kind, &payload),
        ) {
            replica.log.release(reserved);
            return Err(error.into());
        }
        replica
            .log
            .publish_reserved(reserved, kind, payload, wait)
            .map_err(SubmitError::Replication)
    }

    /// The records this node took before it stopped and the replicated log may not
    /// have stored, in order (once: the outbox takes them when the account joins).
    pub fn take_unstored(&self) -> Vec<Unstored> {
        std::mem::take(&mut *self.shared.unstored.lock())
    }

    /// The replicated log's outbox figures (`None` when the account is not replicated).
    pub fn outbox(&self) -> Option<OutboxFigures> {
        self.shared
            .replica
            .get()
            .map(|replica| replica.log.outbox())
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
pub(super) fn apply_tracking(account: &vitrine_engine::Account, kind: RecordKind, payload: &[u8]) {
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
pub(super) fn saved_position(dir: &Path) -> u64 {
    fs::read_to_string(dir.join(POSITION_FILE))
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0)
}

impl Shared {
    /// Saves the replicated sequence that the local log and snapshots hold (before the
    /// local log is cut: whatever the cut removes is then behind it).
    pub(super) fn save_stream_position(
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
