//! [`ReplicaNode`]: what the cluster asks of an account's jobs, and all it asks. The
//! `vitrine-cluster` crate holds an account as a `dyn ReplicaNode`, never as the jobs
//! themselves.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::jobs::log::RecordKind;
use crate::jobs::replica::Applied;
use crate::jobs::replica::port::{
    Incarnation, KeepsRecords, LocalLog, Replication, ReplicationError, Unstored,
};
use crate::jobs::replica::snapshots::SnapshotSet;
use crate::jobs::replica::state::Replica;
use crate::jobs::{AccountJobs, SubmitError};

/// An account's jobs as one node of a cluster: joined to the replicated log, reading
/// it in order, publishing through an outbox that asks the local log, and writing the
/// snapshot sets a joining node restores.
pub trait ReplicaNode: Send + Sync + std::fmt::Debug {
    /// The account's access key (its name in the cluster's streams and buckets).
    fn access_key(&self) -> &str;

    /// The account's directory.
    fn dir(&self) -> &Path;

    /// Makes this account's jobs a node of a cluster: from now on deltas, events and
    /// erasures are published to `log` too (see `jobs::replica`). Once only: false
    /// when the jobs already publish somewhere.
    fn replicate(&self, log: Arc<dyn Replication>, incarnation: Incarnation) -> bool;

    /// The replicated log's sequence this node's account includes: the next record to
    /// read from the replicated log is the one after it.
    fn stream_position(&self) -> u64;

    /// Whether the account includes the replicated log through `target`: read that far,
    /// and every delta read applied to the catalogue (not just queued for it).
    fn stream_caught_up(&self, target: u64) -> bool;

    /// Applies a record of the replicated log, at `sequence` there, published by the
    /// node of `origin`: logs it locally (as a [`RecordKind::Replicated`] record) and
    /// applies it: a delta is queued for the delta worker (its token's status is the
    /// same on every node once applied), events are tracked, an erasure erases.
    fn apply_replicated(
        &self,
        sequence: u64,
        origin: Incarnation,
        kind: RecordKind,
        payload: &[u8],
    ) -> Result<Applied, SubmitError>;

    /// The local log as the outbox sees it (see [`LocalLog`]).
    fn local_log(&self) -> LocalLog;

    /// The records this node took before it stopped and the replicated log may not
    /// have stored, in order (once: the outbox takes them when the account joins).
    fn take_unstored(&self) -> Vec<Unstored>;

    /// Writes the account's snapshot set for the cluster into the empty directory
    /// `out` (see `jobs::replica::snapshots`).
    fn cluster_snapshot(&self, out: &Path) -> Result<SnapshotSet, ReplicationError>;
}

impl ReplicaNode for AccountJobs {
    fn access_key(&self) -> &str {
        self.shared.account.access_key()
    }

    fn dir(&self) -> &Path {
        &self.shared.dir
    }

    fn replicate(&self, log: Arc<dyn Replication>, incarnation: Incarnation) -> bool {
        self.shared
            .replica
            .set(Replica { log, incarnation })
            .is_ok()
    }

    fn stream_position(&self) -> u64 {
        self.shared.stream_position.load(Ordering::Acquire)
    }

    fn stream_caught_up(&self, target: u64) -> bool {
        let shared = &self.shared;
        shared.stream_position.load(Ordering::Acquire) >= target
            && shared.deltas.applied_through.load(Ordering::Acquire)
                >= shared.stream_deltas_queued.load(Ordering::Acquire)
    }

    fn apply_replicated(
        &self,
        sequence: u64,
        origin: Incarnation,
        kind: RecordKind,
        payload: &[u8],
    ) -> Result<Applied, SubmitError> {
        AccountJobs::apply_replicated(self, sequence, origin, kind, payload)
    }

    fn local_log(&self) -> LocalLog {
        LocalLog(Arc::clone(&self.shared) as Arc<dyn KeepsRecords>)
    }

    fn take_unstored(&self) -> Vec<Unstored> {
        std::mem::take(&mut *self.shared.unstored.lock())
    }

    fn cluster_snapshot(&self, out: &Path) -> Result<SnapshotSet, ReplicationError> {
        AccountJobs::cluster_snapshot(self, out)
    }
}
