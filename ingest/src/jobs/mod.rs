//! The jobs of one account behind its status tokens, on the account's write-ahead log.
//!
//! Each account has one [`AccountJobs`]: its write-ahead log (`wal/` in the account's
//! directory), the table of delta statuses, the table of feed jobs, a delta worker
//! thread that applies the account's deltas in token order (FIFO) to the catalogue
//! overlay, and a compactor thread that folds the overlay into a new base snapshot and
//! writes state snapshots. A token is only ever visible to the account that received it.
//!
//! - A delta is appended to the log and fsynced before its token is returned; the
//!   worker applies deltas in log order, a batch at a time (one new catalogue version per
//!   batch, each delta still all or nothing), and reports Status 1 only once the version
//!   holding it is served.
//! - A rebuild (a full feed, or a compaction) takes the catalogue and the log position
//!   it covers, builds a new base on the ingest pool without blocking the worker, writes
//!   it as a snapshot at that position, maps it, and swaps it in with every delta
//!   applied since that position applied again on top. Log segments wholly behind the
//!   older kept snapshot are deleted.
//! - On start the newest valid snapshot is the base and every delta record at or past
//!   its position is applied again; the decided statuses saved with each rebuild
//!   (`delta-statuses.json`) make those re-applications reach the outcomes already
//!   reported. Then tracking events and erasures past the state snapshot's position
//!   are replayed in log order.
//!
//! Feed submissions are journaled as `feeds/<token>.job` files (see `snapshots/FORMAT.md`).
//!
//! # Threads and locks
//!
//! The table of threads and the locks each may take, and the guard types that keep
//! the order, are in `locks.rs`.
//!
//! Modules: `status` (delta and feed statuses, the status file, the feed-job codec),
//! `log` (record kinds and payloads), `campaigns` and `drafts` (campaign changes and
//! drafts, logged as campaign records), `recovery` (start: state, log, feeds), `worker`
//! (delta intake and the delta worker), `locks` (the lock order), `rebuild` (rebuilds,
//! the compactor thread, checkpoints, the erasure flush), `feeds` (feed submissions and
//! the feed queue), `streams` (streamed feeds), `history` (imported order history),
//! `replica` (the account as a node of a cluster, and the port the cluster implements),
//! `applying` (requests counted while they apply), `metrics`, `pool` (the ingest pool
//! and thread priority).
//!
//! Each feature's module adds its methods to [`AccountJobs`]; the state it keeps there
//! is defined in a child that names nothing of the jobs (`feeds::queue`,
//! `streams::spool`, `worker::queue`, `replica::state`), so that this front holds the
//! account's state without importing any feature (`scripts/import-circles`).

mod applying;
mod campaigns;
mod drafts;
mod feeds;
mod history;
mod locks;
mod log;
mod metrics;
mod pool;
mod rebuild;
mod recovery;
mod replica;
mod status;
mod streams;
#[cfg(test)]
mod tests;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use parking_lot::Mutex;
use vitrine_engine::Account;
use vitrine_engine::account::{ServeOutcome, ServeRequest, UserRecord};
use vitrine_engine::catalogue::Catalogue;
use vitrine_engine::state::Clicked;
use vitrine_snapshots::wal::{self, SyncPolicy, Wal};

pub use self::campaigns::{
    CampaignChange, CampaignError, ChangeRequest, Changed, ExperimentAction, HoldoutAction,
    RestorePart, recompile as recompile_campaigns,
};
pub use self::drafts::{DraftError, DraftPart, DraftRequest, MAX_DRAFT_BYTES};
pub use self::feeds::FEED_JOBS_KEPT;
use self::feeds::queue::Feeds;
pub use self::history::{IMPORT_CHUNK, ImportedOrders};
pub use self::log::{Logged, RecordKind, inspect};
pub use self::metrics::JobsMetrics;
pub(crate) use self::metrics::SnapshotKind;
pub use self::pool::{BackgroundPriority, ingest_pool, ingest_pool_at, lower_thread_priority};
use self::replica::state::Durability;
pub use self::replica::{
    Applied, Claim, FLOORS_FILE, Floors, Handed, Incarnation, Lease, LocalLog, OUTBOX_MARK_FILE,
    OutboxFigures, OutboxId, POSITION_FILE, ReplicaNode, Replication, ReplicationError, Reserved,
    Scrub, SnapshotSet, Unstored, Wait, is_fresh, save_outbox_mark,
};
pub use self::status::{
    DeltaStatus, FeedJob, FeedStatus, STATUS_FILE, STATUSES_KEPT, UNKNOWN_TOKEN,
};
pub use self::streams::{StreamError, StreamKind};
use self::worker::queue::{Deltas, Queued};
use crate::erasure::Forgotten;
use crate::{state, store};

/// Settings of an account's jobs.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// Size at which the log starts a new segment.
    pub wal_segment_bytes: u64,
    /// Sync policy of ordinary log appends (deltas are always fsynced).
    pub sync: SyncPolicy,
    /// Compact once the overlay holds this many changes.
    pub compact_after_changes: usize,
    /// Compact an overlay that is this old even when it is small.
    pub compact_interval: Duration,
    /// Write a state snapshot (and cut the log behind the kept snapshots) this often.
    pub state_interval: Duration,
    /// The data directory's erasure key (see [`crate::erasure`]).
    pub erasure_key: [u8; 32],
    /// The ingest pool: feed parses, builds and compactions run on it.
    pub pool: Arc<rayon::ThreadPool>,
}

impl JobsConfig {
    /// Defaults for tests and tools: 64 MiB segments, deltas-only fsyncs, compaction
    /// after 50,000 changes or 5 minutes.
    pub fn with_pool(pool: Arc<rayon::ThreadPool>) -> JobsConfig {
        JobsConfig {
            wal_segment_bytes: 64 << 20,
            sync: SyncPolicy::Interval(Duration::from_millis(10)),
            compact_after_changes: 50_000,
            compact_interval: Duration::from_secs(300),
            state_interval: Duration::from_secs(60),
            erasure_key: rand::random(),
            pool,
        }
    }
}

/// What [`AccountJobs::start`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Deltas applied again from the log.
    pub deltas: usize,
    /// Requests' tracking events applied again from the log.
    pub events: usize,
    /// The state snapshot restored, if any.
    pub state: Option<state::RestoredState>,
    /// Feed jobs found.
    pub feeds: usize,
    /// Where the log was cut, when it ended in a torn or bad record.
    pub truncated: Option<String>,
    /// When the log ended before a snapshot's position: where it ended and where it
    /// goes on (every record kept; see `vitrine_snapshots::wal::KIND_GAP`).
    pub resumed: Option<String>,
    /// Records or files that could not be read, with the reason.
    pub problems: Vec<String>,
}

/// Why a submission was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The server is stopping.
    #[error("the server is shutting down and takes no more jobs")]
    Closed,
    /// The log or a journal file could not be written.
    #[error("the submission could not be saved: {0}")]
    Journal(vitrine_snapshots::Error),
    /// The log writer is behind (a slow disk): try again shortly.
    #[error("{0}")]
    Busy(vitrine_snapshots::Error),
    /// The replicated log did not store the record (a cluster without a quorum).
    #[error("the cluster's log did not store the record: {0}")]
    Replication(ReplicationError),
}

impl From<vitrine_snapshots::Error> for SubmitError {
    fn from(error: vitrine_snapshots::Error) -> SubmitError {
        match error {
            vitrine_snapshots::Error::Backlog { .. } => SubmitError::Busy(error),
            other => SubmitError::Journal(other),
        }
    }
}

impl From<store::StoreError> for SubmitError {
    fn from(store::StoreError(error): store::StoreError) -> SubmitError {
        SubmitError::Journal(error)
    }
}

/// Why a rebuild did not replace the catalogue.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    /// The new base could not be built (the builder's reason).
    #[error("{0}")]
    Build(String),
    /// The snapshot or the statuses could not be saved; the previous catalogue is kept.
    #[error("the new catalogue could not be saved: {0}")]
    Save(#[from] store::StoreError),
}

/// What a rebuild produces: a catalogue without overlay, and for a feed carrying
/// `Users`, the account's new user records.
#[derive(Debug)]
pub struct Rebuilt {
    /// The new base.
    pub catalogue: Catalogue,
    /// Replacement user records.
    pub users: Option<Vec<UserRecord>>,
}

/// What a finished rebuild did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebuildReport {
    /// The snapshot written.
    pub saved: store::Saved,
    /// Deltas applied again on top of the new base.
    pub reapplied: usize,
    /// Log segments deleted behind the kept snapshots.
    pub segments_removed: usize,
    /// The state snapshot written after it.
    pub checkpoint: CheckpointReport,
}

/// What a checkpoint writes before its state snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Before {
    /// A catalogue snapshot when the account has none yet, so that the log can be cut
    /// at all.
    CatalogueIfNone,
    /// Nothing: a stop only wants a quick restart.
    Nothing,
}

/// What a checkpoint did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointReport {
    /// The state snapshot written.
    pub saved: store::Saved,
    /// Log segments deleted behind the kept snapshots.
    pub segments_removed: usize,
}

/// A rebuild's relation to the content it starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebuildKind {
    /// Same content, new base (compaction): deltas keep flowing while the snapshot is
    /// written.
    Compaction,
    /// New content (a full feed): deltas wait while the snapshot is written, so that
    /// every status they get is decided on the lineage a restart replays.
    Feed,
}

/// State shared by the handle, the delta worker, the compactor and the feed runner.
#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    account: Arc<Account>,
    wal: Wal,
    config: JobsConfig,
    /// Statuses, positions and the overlay's deltas.
    deltas: Deltas,
    /// Feed jobs and their queue.
    feeds: Feeds,
    /// Feeds being streamed in.
    streams: self::streams::spool::Streams,
    /// Hashes of the identifiers erased.
    forgotten: Forgotten,
    /// The key of the erasures published to a cluster's replicated log (see
    /// [`AccountJobs::set_cluster_erasure_key`]).
    cluster_erasure_key: std::sync::OnceLock<Vec<u8>>,
    /// `rebuild` and `checkpointing` (see `locks.rs`).
    locks: self::locks::Locks,
    /// Set while a compaction asked for by the worker has not run yet.
    compaction_asked: AtomicBool,
    /// Counts and durations for `/metrics`.
    metrics: JobsMetrics,
    /// Set once when the account becomes a node of a cluster (see `replica`): read
    /// without a lock on the request path.
    replica: std::sync::OnceLock<self::replica::state::Replica>,
    /// The replicated log's sequence the account includes (0 outside a cluster).
    stream_position: std::sync::atomic::AtomicU64,
    /// The local log's sequence after the last delta queued from the replicated log: the
    /// catalogue includes every such delta once the worker applied through it.
    stream_deltas_queued: std::sync::atomic::AtomicU64,
    /// In a cluster: called with each feed job read from the replicated log that this
    /// node did not know (see `replica::feeds`).
    feed_hook: std::sync::OnceLock<self::replica::state::FeedHook>,
    /// Restored from a cluster's snapshots: what they include of the replicated log.
    floors: Floors,
    /// Records this node took before it stopped, past the outbox mark: for the outbox
    /// (see `replica`).
    unstored: Mutex<Vec<Unstored>>,
    /// Requests between applying events and handing them to the log (see `applying`).
    applying: self::applying::Applying,
}

/// One account's jobs, its log and its threads.
#[derive(Debug)]
pub struct AccountJobs {
    shared: Arc<Shared>,
    /// `None` once shut down. Held while a delta is logged and queued, so that log order
    /// and application order are the same.
    intake: Mutex<Option<mpsc::Sender<Queued>>>,
    worker: Mutex<Option<thread::JoinHandle<()>>>,
    compactor: Mutex<Option<(mpsc::Sender<()>, thread::JoinHandle<()>)>>,
}

impl AccountJobs {
    /// Fills the zones of a request for a shopper who is not tracked (a crawler, or a
    /// browser without consent): nothing is recorded, applied or logged (see
    /// [`Account::serve_anonymous`]).
    pub fn serve_anonymous(&self, request: &ServeRequest) -> Box<ServeOutcome> {
        self.shared.account.serve_anonymous(request)
    }

    /// Counts a click reported by the browser script on a product a zone showed, and
    /// logs it without waiting for the disk (as a request that only shows zones is:
    /// analytics only, never an acknowledged event). False when the account has no
    /// such zone or zone analytics are off (nothing is logged then).
    pub fn record_click(&self, clicked: &Clicked) -> Result<bool, SubmitError> {
        self.admit(Wait::No)?;
        let applying = self.shared.applying.enter();
        if !self.shared.account.record_click(clicked) {
            return Ok(false);
        }
        let payload = log::encode_click(clicked).map_err(|e| SubmitError::Journal(e.into()))?;
        self.log_and_publish(
            RecordKind::Click,
            payload,
            Durability::Unwaited,
            Wait::No,
            applying,
        )?;
        Ok(true)
    }

    /// Whether an answer acknowledging events logged under `interval` must wait for
    /// the log ([`vitrine_snapshots::wal::Wal::behind_window`]).
    pub fn behind_window(&self) -> bool {
        self.shared.wal.behind_window()
    }

    /// Blocks until the log is within its `interval` window again: every event handed
    /// to it more than `fsync_interval_ms` ago is on disk
    /// ([`vitrine_snapshots::wal::Wal::keep_window`]).
    pub fn keep_window(&self) -> Result<(), SubmitError> {
        Ok(self.shared.wal.keep_window()?)
    }

    /// Serves a validated server-side call, durably: strips personal data from events
    /// naming a forgotten email or user id, tracks the events and fills the zones
    /// ([`Account::serve`]), then logs the events as applied under the log's policy
    /// (`always`: returns once fsynced; otherwise once handed to the log's writer).
    /// Events are applied before they are logged, so a state snapshot's position never
    /// passes an event it lacks; a log that cannot be written fails the call (the
    /// events stay applied in memory but the 200 that a crash would undo is not sent).
    pub fn serve(&self, mut request: ServeRequest) -> Result<Box<ServeOutcome>, SubmitError> {
        // Refused before anything is applied when the log could not take the events.
        self.shared.wal.check_backlog()?;
        // In a cluster, and when the replicated log cannot take them either. Under
        // `always` the answer waits for the cluster's log too, except for a request that
        // only views pages: it changes only session and site counts, so it is answered
        // on credit (through the outbox) and shop pages keep answering while the
        // cluster has no quorum.
        let page_views_only = || {
            request
                .events
                .iter()
                .all(|event| matches!(event, vitrine_engine::event::Event::PageView { .. }))
        };
        let wait = if self.shared.config.sync == SyncPolicy::Always && !page_views_only() {
            Wait::Answer
        } else {
            Wait::No
        };
        if !request.events.is_empty() {
            self.admit(wait)?;
        }
        self.shared.forgotten.strip(&mut request.events);
        // Counted from before the events are applied until they are handed to the log.
        let applying = self.shared.applying.enter();
        let outcome = self.shared.account.serve(request);
        let served = &outcome.served;
        // The log's writer encodes the record (it shares it with the answer).
        let payload = || log::ServedRecord::payload(served);
        if !served.tracked.events.is_empty() {
            self.log_and_publish(
                RecordKind::Served,
                payload(),
                Durability::UnderPolicy,
                wait,
                applying,
            )?;
        } else if !served.shown.is_empty() {
            // Only analytics: logged without waiting for the disk, and a log that
            // cannot take it does not stop the page from getting its zones.
            let logged = self
                .shared
                .wal
                .append_unwaited(RecordKind::Served.code(), payload());
            if let Err(error) = logged {
                let account = self.shared.account.access_key();
                tracing::warn!(account = %account, %error, "zone impressions not logged");
            }
        }
        Ok(outcome)
    }

    /// Erases everything tied to `identifier` (see [`Account::forget`]). When anything
    /// matched, the erasure is logged and fsynced, the user file rewritten and the
    /// identifier's hash saved before this returns; then a background flush removes the
    /// identifier from every file of the account ([`AccountJobs::flush_erasure`]).
    pub fn forget(
        &self,
        identifier: &str,
    ) -> Result<vitrine_engine::account::Erasure, SubmitError> {
        self.admit(Wait::Answer)?;
        let names = self
            .is_replicated()
            .then(|| self.shared.account.erasure_names(identifier));
        let erasure = self.shared.account.forget(identifier);
        if !erasure.matched() {
            return Ok(erasure);
        }
        self.shared
            .wal
            .append_durable(RecordKind::Forget.code(), identifier.as_bytes().to_vec())?;
        // The other nodes find the person by the identifier's keyed hash: the replicated
        // log never holds the identifier itself.
        self.publish(
            RecordKind::ForgetHashed,
            || self.cluster_erasure_hash(identifier).to_vec(),
            Wait::Answer,
        )?;
        self.after_forget(identifier)?;
        // In a cluster, the node that took the erasure removes the person from the
        // cluster's storage too.
        if let (Some(names), Some(replication)) = (names, self.replication()) {
            replication.scrub(Scrub::of(names));
        }
        Ok(erasure)
    }

    /// What follows a logged erasure: the user file rewritten, the identifier's hash
    /// saved, and the flush of the account's files started.
    fn after_forget(&self, identifier: &str) -> Result<(), SubmitError> {
        store::persist_users(&self.shared.dir, &self.shared.account.users())?;
        self.shared.forgotten.add(identifier)?;
        let shared = Arc::clone(&self.shared);
        let spawned = thread::Builder::new()
            .name("erasure-flush".to_owned())
            .spawn(move || {
                vitrine_snapshots::threads::place_current_thread(
                    vitrine_snapshots::threads::Role::Background,
                );
                if let Err(error) = shared.flush_erasure() {
                    let key = &shared.account.access_key();
                    tracing::error!(account = %key, %error, "erasure flush failed");
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "erasure flush could not start; the next snapshots cut the log");
        }
        Ok(())
    }

    /// Removes erased data from the account's files now: seals the log's current
    /// segment, writes a catalogue and a state snapshot past it, keeps only those, and
    /// deletes every log segment before them (with the erasure record and every event
    /// or delta that carried the identifier).
    pub fn flush_erasure(&self) -> Result<usize, RebuildError> {
        self.shared.flush_erasure()
    }

    /// Writes a state snapshot now and cuts the log behind the kept snapshots.
    pub fn checkpoint(&self) -> Result<CheckpointReport, RebuildError> {
        self.shared.checkpoint(Before::CatalogueIfNone)
    }

    /// Builds a new base with `build` (on the ingest pool) from the current catalogue,
    /// snapshots it and swaps it in under the deltas applied since; see the module
    /// documentation.
    pub fn rebuild(
        &self,
        kind: RebuildKind,
        build: impl FnOnce(&Catalogue) -> Result<Rebuilt, RebuildError> + Send,
    ) -> Result<RebuildReport, RebuildError> {
        self.shared.rebuild(kind, build)
    }

    /// Folds the overlay into a new base now (the compactor does this on its own once
    /// the overlay is large or old); `None` when there is no overlay.
    pub fn compact(&self) -> Result<Option<RebuildReport>, RebuildError> {
        self.shared.compact()
    }

    /// Rewrites the account's user file from memory (after an erasure).
    pub fn persist_users(&self) -> Result<(), store::StoreError> {
        store::persist_users(&self.shared.dir, &self.shared.account.users())
    }

    /// The jobs' counts and durations.
    pub fn metrics(&self) -> &JobsMetrics {
        &self.shared.metrics
    }

    /// Bounds the log records waiting for the writer (see
    /// [`vitrine_snapshots::wal::Wal::set_max_backlog`]): beyond it, serving refuses
    /// with [`SubmitError::Busy`].
    pub fn set_max_log_backlog(&self, limit: u64) {
        self.shared.wal.set_max_backlog(limit);
    }

    /// Waits until every record appended so far (every event and delta acknowledged) is
    /// written and fsynced.
    pub fn sync_log(&self) -> Result<u64, SubmitError> {
        Ok(self.shared.wal.sync()?)
    }

    /// Bytes of the account's log segments on disk.
    pub fn wal_disk_bytes(&self) -> u64 {
        self.shared.wal.disk_bytes()
    }

    /// Deltas accepted and not yet applied.
    pub fn deltas_pending(&self) -> u64 {
        self.shared
            .deltas
            .pending
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// The log writer's counters.
    pub fn wal_stats(&self) -> &wal::WalStats {
        self.shared.wal.stats()
    }

    /// The account the jobs belong to.
    pub fn account(&self) -> &Arc<Account> {
        &self.shared.account
    }

    /// The account's directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The ingest pool.
    pub fn pool(&self) -> &rayon::ThreadPool {
        &self.shared.config.pool
    }

    /// Stops taking deltas, waits until every queued one is applied, stops the
    /// compactor (after the compaction in progress, if any) and closes the log.
    pub fn shutdown(&self) {
        self.intake.lock().take();
        if let Some(worker) = self.worker.lock().take() {
            let _ = worker.join();
        }
        if let Some((sender, compactor)) = self.compactor.lock().take() {
            drop(sender);
            let _ = compactor.join();
            // Once per stop: a state snapshot, so that a restart replays little.
            if let Err(error) = self.shared.checkpoint(Before::Nothing) {
                let key = &self.shared.account.access_key();
                tracing::error!(account = %key, %error, "state snapshot at shutdown failed");
            }
        }
        self.shared.wal.close();
    }
}

impl Drop for AccountJobs {
    fn drop(&mut self) {
        self.shutdown();
    }
}
