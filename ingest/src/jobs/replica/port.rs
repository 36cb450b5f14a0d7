//! What the jobs need of a replicated log, which the `vitrine-cluster` crate provides:
//! [`Replication`] (publish a record, wait for a quorum to store it, claim a job, share
//! objects, scrub an erased person), the outbox's record ids and the mark saved with
//! an account's data, and [`ReplicationError`]. How the jobs use it is in `replica`.

use std::fs;
use std::path::Path;

use crate::jobs::log::{self, RecordKind};
pub use crate::jobs::log::{OutboxId, Unstored};
pub use vitrine_snapshots::wal::Handed;

/// Where a replicated record comes from: the incarnation of the data directory of the
/// node that published it.
pub type Incarnation = u64;

/// The file in an account's directory holding its outbox mark: every record this node
/// took with an [`OutboxId`] up to it is stored in the replicated log.
pub const OUTBOX_MARK_FILE: &str = "cluster-outbox";

/// An outbox id reserved for a record about to be logged, and the lowest local log
/// sequence the record can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reserved {
    /// The lowest local log sequence of the record.
    pub logged_from: u64,
    /// Its outbox id.
    pub id: OutboxId,
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
pub(in crate::jobs) fn outbox_mark(dir: &Path) -> Option<OutboxId> {
    let text = fs::read_to_string(dir.join(OUTBOX_MARK_FILE)).ok()?;
    let (start, number) = text.trim().split_once(' ')?;
    Some(OutboxId {
        start: start.parse().ok()?,
        number: number.parse().ok()?,
    })
}

/// An account's local log as its outbox sees it: whether a record handed to it is kept
/// there yet (fsynced under `always` and `interval`, written under `never`). A record is
/// published only once its own node's log holds it, so that a node that crashes never
/// lacks, once restarted, a record the others hold: every record is on every node, or
/// (lost within the window of the node that took it) on none.
#[derive(Clone)]
pub struct LocalLog(pub(in crate::jobs) std::sync::Arc<dyn KeepsRecords>);

/// What the outbox asks of an account's local log (the jobs' account state implements
/// it): whether a record handed to it is kept there yet.
pub(crate) trait KeepsRecords: Send + Sync {
    /// Whether the record of `handed` (and every one handed over before it) is kept.
    fn holds(&self, handed: Handed) -> bool;
    /// Whether the log has failed.
    fn has_failed(&self) -> bool;
    /// The account's directory (for its name in messages).
    fn dir(&self) -> &Path;
}

impl LocalLog {
    /// Whether the record of `handed` (and every one handed over before it) is kept
    /// (false for good once the log has failed).
    pub fn holds(&self, handed: Handed) -> bool {
        self.0.holds(handed)
    }

    /// Whether the log has failed: what it was handed last may never be kept.
    pub fn has_failed(&self) -> bool {
        self.0.has_failed()
    }
}

impl std::fmt::Debug for LocalLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LocalLog").field(&self.0.dir()).finish()
    }
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
    /// Writes refused before anything was applied (the outbox at its bound, or the
    /// cluster not storing records), since the process started.
    pub refused: u64,
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
    /// it, so that a restart publishing it again stores it once), once the local log
    /// holds its hand-over `handed`.
    fn publish_reserved(
        &self,
        reserved: Reserved,
        handed: Handed,
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
    /// name the person is deleted. A scrub that fails is tried again until it is done
    /// or the node stops.
    fn scrub(&self, scrub: Scrub);

    /// Scrubs this node started and has not finished yet (each being tried until done).
    fn scrubs_pending(&self) -> usize;
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
