//! Status tokens: the jobs behind `/api/delta` and `/api/productfeed`, on the account's
//! write-ahead log.
//!
//! Each account has one [`AccountJobs`]: its write-ahead log (`wal/` in the account's
//! directory), a table of delta statuses, a table of feed jobs, a delta worker thread
//! that applies the account's deltas in token order (FIFO) to the catalogue overlay,
//! and a compactor thread that folds the overlay into a new base snapshot. A token is
//! only ever visible to the account that received it.
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
//!   reported.
//!
//! Feed submissions are journaled as `feeds/<token>.job` files (see `snapshots/FORMAT.md`).

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use dashmap::DashMap;
use parking_lot::Mutex;
use vitrine_engine::Account;
use vitrine_engine::account::UserRecord;
use vitrine_engine::catalogue::{Catalogue, UnixMillis};
use vitrine_engine::state::Tracked;
use vitrine_snapshots::snapshot;
use vitrine_snapshots::wal::{self, SyncPolicy, Wal, WalConfig};

use crate::delta::{self, Delta, Mode};
use crate::erasure::Forgotten;
use crate::json::{Errors, Fields, KeyMatch};
use crate::{state, store};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaStatus {
    /// 0: accepted, not yet applied.
    Pending,
    /// 1: applied.
    Applied,
    /// 2: failed, with the reason.
    Failed(String),
}

impl DeltaStatus {
    /// The integer of the contract: 0, 1 or 2.
    pub fn code(&self) -> u8 {
        match self {
            DeltaStatus::Pending => 0,
            DeltaStatus::Applied => 1,
            DeltaStatus::Failed(_) => 2,
        }
    }
}

/// Status of a feed job, as `/api/productfeedstatus` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedStatus {
    /// Queued or running.
    Processing,
    /// Loaded and live; `detail` summarises skipped records, if any.
    Complete {
        /// Counts and the skipped records, when some were skipped.
        detail: Option<String>,
    },
    /// Failed, with a readable reason.
    Failed(String),
}

impl FeedStatus {
    /// The `Status` string of the contract.
    pub fn name(&self) -> &'static str {
        match self {
            FeedStatus::Processing => "Processing",
            FeedStatus::Complete { .. } => "Complete",
            FeedStatus::Failed(_) => "Error",
        }
    }
}

/// A submitted feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedJob {
    /// Its token.
    pub token: String,
    /// The URL to fetch.
    pub url: String,
    /// When it was submitted.
    pub submitted_at: UnixMillis,
    /// Where it stands.
    pub status: FeedStatus,
}

impl FeedJob {
    /// The job file: a JSON object (see `snapshots/FORMAT.md`).
    pub fn encode(&self) -> Vec<u8> {
        let (status, error, detail) = match &self.status {
            FeedStatus::Processing => ("Processing", None, None),
            FeedStatus::Complete { detail } => ("Complete", None, detail.clone()),
            FeedStatus::Failed(error) => ("Error", Some(error.clone()), None),
        };
        let value = serde_json::json!({
            "url": self.url,
            "submitted_at": self.submitted_at,
            "status": status,
            "error": error,
            "detail": detail,
        });
        serde_json::to_vec(&value).unwrap_or_default()
    }

    /// Reads a job file written by [`FeedJob::encode`].
    pub fn decode(token: &str, bytes: &[u8]) -> Option<FeedJob> {
        let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let text = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let status = match value.get("status")?.as_str()? {
            "Processing" => FeedStatus::Processing,
            "Complete" => FeedStatus::Complete {
                detail: text("detail"),
            },
            "Error" => FeedStatus::Failed(text("error").unwrap_or_default()),
            _ => return None,
        };
        Some(FeedJob {
            token: token.to_owned(),
            url: text("url")?,
            submitted_at: value.get("submitted_at")?.as_i64()?,
            status,
        })
    }
}

/// The reason given for a token this account never issued.
pub const UNKNOWN_TOKEN: &str = "unknown token";

/// Log record kind of a delta: its token, a newline, and its parts as JSON (no
/// credentials).
pub const KIND_DELTA: u8 = 1;
/// Log record kind of one request's tracking events (an rkyv archive of
/// [`Tracked`]).
pub const KIND_EVENTS: u8 = 2;
/// Log record kind of an erasure (the identifier given to `/api/user/forget`; the
/// erasure's flush removes it from the log with everything before it).
pub const KIND_FORGET: u8 = 3;

/// Delta statuses kept per account; older tokens answer [`UNKNOWN_TOKEN`].
pub const STATUSES_KEPT: usize = 100_000;

/// Deltas applied per catalogue version at most (under load several queued deltas share
/// one version; each is still applied all or nothing).
const BATCH: usize = 256;

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
    Journal(#[from] vitrine_snapshots::Error),
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

/// A delta applied since the current base was built.
#[derive(Debug, Clone)]
struct Logged {
    sequence: u64,
    delta: Arc<Delta>,
}

#[derive(Debug)]
struct Queued {
    token: String,
    sequence: u64,
    delta: Arc<Delta>,
}

/// State shared by the handle, the delta worker and the compactor.
#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    account: Arc<Account>,
    wal: Wal,
    config: JobsConfig,
    /// Held by whoever swaps the account's next catalogue version, so that no change is
    /// lost between load and swap.
    writer: Mutex<()>,
    /// Held for a whole rebuild: one feed or compaction per account at a time.
    rebuild: Mutex<()>,
    /// token → (log sequence, status).
    deltas: DashMap<String, (u64, DeltaStatus)>,
    /// Log sequence after the last applied delta: everything before it is in the
    /// account's catalogue.
    applied_through: AtomicU64,
    /// Deltas counted in before their log append and out once applied: when none is
    /// pending, the catalogue includes every delta before the log's next sequence.
    pending: AtomicU64,
    /// Held while a state snapshot is written and the log cut.
    checkpointing: Mutex<()>,
    /// Hashes of the identifiers erased.
    forgotten: Forgotten,
    /// Deltas applied since the current base (they make up its overlay), in order.
    since_base: Mutex<Vec<Logged>>,
    feeds: DashMap<String, FeedJob>,
    feed_queue: Mutex<VecDeque<String>>,
    compaction_asked: AtomicBool,
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
    /// Opens the account's log in `dir`, applies again every delta at or past
    /// `base_position` (the log position of the account's starting catalogue, from its
    /// snapshot), then starts the delta worker and the compactor.
    pub fn start(
        account: Arc<Account>,
        dir: &Path,
        base_position: u64,
        config: JobsConfig,
    ) -> Result<(AccountJobs, Recovery), SubmitError> {
        let feed_dir = dir.join("feeds");
        fs::create_dir_all(&feed_dir).map_err(io("creating directory", &feed_dir))?;
        let (restored_state, skipped_states) = state::restore(dir, &account)?;
        let state_position = restored_state.as_ref().map_or(0, |s| s.position);
        let (wal, log) = Wal::open(WalConfig {
            dir: dir.join("wal"),
            segment_bytes: config.wal_segment_bytes,
            policy: config.sync,
            first_sequence: base_position.max(state_position).max(1),
        })?;
        let mut recovery = Recovery {
            truncated: log.truncated.clone(),
            problems: skipped_states
                .into_iter()
                .map(|problem| format!("skipping state snapshot {problem}"))
                .collect(),
            state: restored_state,
            ..Recovery::default()
        };

        let deltas: DashMap<String, (u64, DeltaStatus)> = DashMap::new();
        for (token, sequence, status) in read_statuses(&dir.join(STATUS_FILE)) {
            deltas.insert(token, (sequence, status));
        }
        let mut edit = account.catalogue().edit();
        let mut since_base = Vec::new();
        let mut replayed_users = Vec::new();
        for record in log.records.iter().filter(|r| r.kind == KIND_DELTA) {
            if record.sequence < base_position {
                continue;
            }
            let (token, parsed) = decode_delta(&record.payload);
            let Some(token) = token else {
                recovery.problems.push(format!(
                    "log record {}: not a delta record",
                    record.sequence
                ));
                continue;
            };
            recovery.deltas += 1;
            let delta = match parsed {
                Ok(delta) => Arc::new(delta),
                Err(reason) => {
                    recovery
                        .problems
                        .push(format!("log record {}: {reason}", record.sequence));
                    let status = DeltaStatus::Failed(format!(
                        "the logged delta could not be read: {reason}"
                    ));
                    deltas.insert(token, (record.sequence, status));
                    continue;
                }
            };
            let decided = deltas.get(&token).map(|entry| entry.1.clone());
            let status = match decided {
                Some(DeltaStatus::Failed(reason)) => DeltaStatus::Failed(reason),
                Some(DeltaStatus::Applied) => {
                    let _ = delta::apply_to(&mut edit, &delta, Mode::Reapply);
                    DeltaStatus::Applied
                }
                Some(DeltaStatus::Pending) | None => {
                    match delta::apply_to(&mut edit, &delta, Mode::Strict) {
                        Ok(_) => DeltaStatus::Applied,
                        Err(error) => DeltaStatus::Failed(error.to_string()),
                    }
                }
            };
            if status == DeltaStatus::Applied {
                replayed_users.push(Arc::clone(&delta));
                since_base.push(Logged {
                    sequence: record.sequence,
                    delta,
                });
            }
            deltas.insert(token, (record.sequence, status));
        }
        account.swap_catalogue(edit.finish());
        for delta in &replayed_users {
            delta::apply_users(&account, delta);
        }
        for record in log
            .records
            .iter()
            .filter(|r| r.kind == KIND_EVENTS || r.kind == KIND_FORGET)
        {
            if record.sequence < state_position {
                continue;
            }
            if record.kind == KIND_FORGET {
                account.forget(&String::from_utf8_lossy(&record.payload));
                continue;
            }
            match decode_tracked(&record.payload) {
                Ok(tracked) => {
                    account.replay(&tracked);
                    recovery.events += 1;
                }
                Err(reason) => recovery
                    .problems
                    .push(format!("log record {}: {reason}", record.sequence)),
            }
        }

        let feeds = DashMap::new();
        let mut queue = Vec::new();
        for entry in fs::read_dir(&feed_dir).map_err(io("reading directory", &feed_dir))? {
            let path = entry.map_err(io("reading directory", &feed_dir))?.path();
            let Some(token) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".job"))
            else {
                if path.extension().is_some_and(|e| e == "download") {
                    // A download cut short by a stop; its job is queued again.
                    let _ = fs::remove_file(&path);
                }
                continue;
            };
            let Some(job) = fs::read(&path)
                .ok()
                .and_then(|bytes| FeedJob::decode(token, &bytes))
            else {
                recovery
                    .problems
                    .push(format!("{}: not a feed job record", path.display()));
                continue;
            };
            if job.status == FeedStatus::Processing {
                queue.push((job.submitted_at, token.to_owned()));
            }
            feeds.insert(token.to_owned(), job);
            recovery.feeds += 1;
        }
        queue.sort();

        let forgotten = Forgotten::load(dir, config.erasure_key);
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            account,
            wal,
            config,
            writer: Mutex::new(()),
            rebuild: Mutex::new(()),
            deltas,
            applied_through: AtomicU64::new(log.next_sequence.max(base_position)),
            pending: AtomicU64::new(0),
            checkpointing: Mutex::new(()),
            forgotten,
            since_base: Mutex::new(since_base),
            feeds,
            feed_queue: Mutex::new(queue.into_iter().map(|(_, t)| t).collect()),
            compaction_asked: AtomicBool::new(false),
        });
        let key = shared.account.settings().access_key.clone();
        let (compact_sender, compact_receiver) = mpsc::channel::<()>();
        let compactor_shared = Arc::clone(&shared);
        let compactor = thread::Builder::new()
            .name(format!("compact-{key}"))
            .spawn(move || compactor_shared.run_compactor(&compact_receiver))
            .map_err(io("starting the compactor for", dir))?;
        let (sender, receiver) = mpsc::channel::<Queued>();
        let worker_shared = Arc::clone(&shared);
        let worker_compact = compact_sender.clone();
        let worker = thread::Builder::new()
            .name(format!("delta-{key}"))
            .spawn(move || worker_shared.run_worker(&receiver, &worker_compact))
            .map_err(io("starting the delta worker for", dir))?;
        let jobs = AccountJobs {
            shared,
            intake: Mutex::new(Some(sender)),
            worker: Mutex::new(Some(worker)),
            compactor: Mutex::new(Some((compact_sender, compactor))),
        };
        Ok((jobs, recovery))
    }

    /// Logs a delta (`record`: its JSON parts, without credentials; fsynced before this
    /// returns), queues it and returns its token; it is applied after every earlier one.
    pub fn submit_delta(&self, delta: Delta, record: &[u8]) -> Result<String, SubmitError> {
        let token = format!("dlt_{}", vitrine_engine::account::new_id());
        let intake = self.intake.lock();
        let Some(sender) = intake.as_ref() else {
            return Err(SubmitError::Closed);
        };
        let mut payload = Vec::with_capacity(token.len() + 1 + record.len());
        payload.extend_from_slice(token.as_bytes());
        payload.push(b'\n');
        payload.extend_from_slice(record);
        self.shared.pending.fetch_add(1, Ordering::AcqRel);
        let sequence = match self.shared.wal.append_durable(KIND_DELTA, payload) {
            Ok(sequence) => sequence,
            Err(error) => {
                self.shared.pending.fetch_sub(1, Ordering::AcqRel);
                return Err(error.into());
            }
        };
        self.shared
            .deltas
            .insert(token.clone(), (sequence, DeltaStatus::Pending));
        let queued = Queued {
            token: token.clone(),
            sequence,
            delta: Arc::new(delta),
        };
        if sender.send(queued).is_err() {
            self.shared.pending.fetch_sub(1, Ordering::AcqRel);
            let stopped = DeltaStatus::Failed("the delta worker stopped".to_owned());
            self.shared.deltas.insert(token, (sequence, stopped));
            return Err(SubmitError::Closed);
        }
        Ok(token)
    }

    /// Logs one request's tracking events under the log's policy (`always`: returns
    /// once fsynced; otherwise once handed to the log's writer). The events are already
    /// applied: a state snapshot's position then never passes an event it lacks.
    pub fn log_events(&self, tracked: &Tracked) -> Result<(), SubmitError> {
        let payload = rkyv::to_bytes::<rkyv::rancor::Error>(tracked).map_err(|e| {
            SubmitError::Journal(vitrine_snapshots::Error::Wal(format!(
                "the events could not be archived: {e}"
            )))
        })?;
        Ok(self
            .shared
            .wal
            .append_under_policy(KIND_EVENTS, payload.into_vec())?)
    }

    /// Strips personal data from events naming a forgotten email or user id (before
    /// they are applied or logged); returns how many were stripped.
    pub fn strip_forgotten(&self, events: &mut [vitrine_engine::event::Event]) -> usize {
        self.shared.forgotten.strip(events)
    }

    /// Erases everything tied to `identifier` (see [`Account::forget`]). When anything
    /// matched, the erasure is logged and fsynced, the user file rewritten and the
    /// identifier's hash saved before this returns; then a background flush removes the
    /// identifier from every file of the account ([`AccountJobs::flush_erasure`]).
    pub fn forget(
        &self,
        identifier: &str,
    ) -> Result<vitrine_engine::account::Erasure, SubmitError> {
        let erasure = self.shared.account.forget(identifier);
        if !erasure.matched() {
            return Ok(erasure);
        }
        self.shared
            .wal
            .append_durable(KIND_FORGET, identifier.as_bytes().to_vec())?;
        store::persist_users(&self.shared.dir, &self.shared.account.users())?;
        self.shared.forgotten.add(identifier)?;
        let shared = Arc::clone(&self.shared);
        let spawned = thread::Builder::new()
            .name("erasure-flush".to_owned())
            .spawn(move || {
                if let Err(error) = shared.flush_erasure() {
                    let key = &shared.account.settings().access_key;
                    tracing::error!(account = %key, %error, "erasure flush failed");
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "erasure flush could not start; the next snapshots cut the log");
        }
        Ok(erasure)
    }

    /// Removes erased data from the account's files now: seals the log's current
    /// segment, writes a catalogue and a state snapshot past it, keeps only those, and
    /// deletes every log segment before them (with the erasure record and every event
    /// or delta that carried the identifier).
    pub fn flush_erasure(&self) -> Result<usize, RebuildError> {
        self.shared.flush_erasure()
    }

    /// Writes a state snapshot now and cuts the log behind the kept snapshots (see
    /// [`Shared::checkpoint`]).
    pub fn checkpoint(&self) -> Result<CheckpointReport, RebuildError> {
        self.shared.checkpoint(true)
    }

    /// The status of a delta token; unknown tokens fail with [`UNKNOWN_TOKEN`].
    pub fn delta_status(&self, token: &str) -> DeltaStatus {
        self.shared.deltas.get(token).map_or_else(
            || DeltaStatus::Failed(UNKNOWN_TOKEN.to_owned()),
            |entry| entry.1.clone(),
        )
    }

    /// The log position the account's catalogue includes.
    pub fn applied_through(&self) -> u64 {
        self.shared.applied_through.load(Ordering::Acquire)
    }

    /// Builds a new base with `build` (on the ingest pool) from the current catalogue,
    /// snapshots it and swaps it in under the deltas applied since; see the module
    /// documentation.
    pub fn rebuild(
        &self,
        kind: RebuildKind,
        build: impl FnOnce(&Catalogue) -> Result<Rebuilt, String> + Send,
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

    /// The log's counters.
    pub fn wal_stats(&self) -> &wal::WalStats {
        self.shared.wal.stats()
    }

    /// Journals a feed submission and returns its token; the caller hands the token to
    /// the feed runner.
    pub fn submit_feed(&self, url: &str, now: UnixMillis) -> Result<String, SubmitError> {
        let token = format!("feed_{}", vitrine_engine::account::new_id());
        let job = FeedJob {
            token: token.clone(),
            url: url.to_owned(),
            submitted_at: now,
            status: FeedStatus::Processing,
        };
        vitrine_snapshots::atomic_write(
            &self.shared.dir.join("feeds"),
            &format!("{token}.job"),
            &job.encode(),
        )?;
        self.shared.feeds.insert(token.clone(), job);
        self.shared.feed_queue.lock().push_back(token.clone());
        Ok(token)
    }

    /// Records the end of a feed job, on disk first, so that it is not run again.
    pub fn finish_feed(&self, token: &str, status: FeedStatus) -> Result<(), SubmitError> {
        let Some(mut job) = self.feed_job(token) else {
            return Ok(());
        };
        job.status = status;
        let written = vitrine_snapshots::atomic_write(
            &self.shared.dir.join("feeds"),
            &format!("{token}.job"),
            &job.encode(),
        );
        self.shared.feed_queue.lock().retain(|t| t != token);
        self.shared.feeds.insert(token.to_owned(), job);
        written.map_err(SubmitError::from)
    }

    /// A feed job.
    pub fn feed_job(&self, token: &str) -> Option<FeedJob> {
        self.shared.feeds.get(token).map(|job| job.clone())
    }

    /// The status of a feed token; unknown tokens are an error with [`UNKNOWN_TOKEN`].
    pub fn feed_status(&self, token: &str) -> FeedStatus {
        self.shared.feeds.get(token).map_or_else(
            || FeedStatus::Failed(UNKNOWN_TOKEN.to_owned()),
            |job| job.status.clone(),
        )
    }

    /// Feed jobs waiting to be fetched, oldest first.
    pub fn queued_feeds(&self) -> Vec<FeedJob> {
        let queue = self.shared.feed_queue.lock();
        queue
            .iter()
            .filter_map(|t| self.shared.feeds.get(t).map(|j| j.clone()))
            .collect()
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
            if let Err(error) = self.shared.checkpoint(false) {
                let key = &self.shared.account.settings().access_key;
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

impl Shared {
    fn run_worker(&self, receiver: &mpsc::Receiver<Queued>, compact: &mpsc::Sender<()>) {
        while let Ok(first) = receiver.recv() {
            let mut batch = vec![first];
            while batch.len() < BATCH
                && let Ok(more) = receiver.try_recv()
            {
                batch.push(more);
            }
            self.apply_batch(batch);
            if self.account.catalogue().overlay_size() >= self.config.compact_after_changes
                && !self.compaction_asked.swap(true, Ordering::AcqRel)
            {
                let _ = compact.send(());
            }
        }
    }

    fn apply_batch(&self, batch: Vec<Queued>) {
        let _writing = self.writer.lock();
        let count = batch.len();
        let mut edit = self.account.catalogue().edit();
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut last = 0;
        for queued in batch {
            last = queued.sequence;
            let status = match delta::apply_to(&mut edit, &queued.delta, Mode::Strict) {
                Ok(_) => DeltaStatus::Applied,
                Err(error) => DeltaStatus::Failed(error.to_string()),
            };
            if status == DeltaStatus::Applied {
                self.since_base.lock().push(Logged {
                    sequence: queued.sequence,
                    delta: Arc::clone(&queued.delta),
                });
            }
            outcomes.push((queued, status));
        }
        self.account.swap_catalogue(edit.finish());
        for (queued, status) in outcomes {
            if status == DeltaStatus::Applied {
                delta::apply_users(&self.account, &queued.delta);
            }
            self.deltas.insert(queued.token, (queued.sequence, status));
        }
        self.applied_through.store(last + 1, Ordering::Release);
        self.pending.fetch_sub(count as u64, Ordering::AcqRel);
    }

    fn run_compactor(&self, receiver: &mpsc::Receiver<()>) {
        let key = &self.account.settings().access_key;
        let mut last_compaction = std::time::Instant::now();
        let mut last_checkpoint = std::time::Instant::now();
        loop {
            let due =
                |last: std::time::Instant, every: Duration| every.saturating_sub(last.elapsed());
            let wait = due(last_compaction, self.config.compact_interval)
                .min(due(last_checkpoint, self.config.state_interval));
            let asked = match receiver.recv_timeout(wait) {
                Ok(()) => true,
                Err(mpsc::RecvTimeoutError::Timeout) => false,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            };
            if last_checkpoint.elapsed() >= self.config.state_interval {
                last_checkpoint = std::time::Instant::now();
                match self.checkpoint(true) {
                    Ok(report) => tracing::debug!(
                        account = %key,
                        snapshot = %report.saved.path.display(),
                        segments_removed = report.segments_removed,
                        seconds = last_checkpoint.elapsed().as_secs_f64(),
                        "state snapshot written"
                    ),
                    Err(error) => tracing::error!(account = %key, %error, "state snapshot failed"),
                }
            }
            if !asked && last_compaction.elapsed() < self.config.compact_interval {
                continue;
            }
            last_compaction = std::time::Instant::now();
            let started = std::time::Instant::now();
            match self.compact() {
                Ok(Some(report)) => tracing::info!(
                    account = %key,
                    snapshot = %report.saved.path.display(),
                    reapplied = report.reapplied,
                    segments_removed = report.segments_removed,
                    seconds = started.elapsed().as_secs_f64(),
                    "overlay compacted"
                ),
                Ok(None) => {}
                Err(error) => tracing::error!(account = %key, %error, "compaction failed"),
            }
            self.compaction_asked.store(false, Ordering::Release);
        }
    }

    fn compact(&self) -> Result<Option<RebuildReport>, RebuildError> {
        if !self.account.catalogue().has_overlay() {
            return Ok(None);
        }
        self.rebuild_compacted().map(Some)
    }

    /// A rebuild of the same content into a new base (and so a new snapshot), whether
    /// or not the catalogue has an overlay.
    fn rebuild_compacted(&self) -> Result<RebuildReport, RebuildError> {
        self.rebuild(RebuildKind::Compaction, |current| {
            Ok(Rebuilt {
                catalogue: current.compact().map_err(|e| e.to_string())?,
                users: None,
            })
        })
    }

    fn rebuild(
        &self,
        kind: RebuildKind,
        build: impl FnOnce(&Catalogue) -> Result<Rebuilt, String> + Send,
    ) -> Result<RebuildReport, RebuildError> {
        let _rebuilding = self.rebuild.lock();
        let (start, position) = {
            let _writing = self.writer.lock();
            (self.account.catalogue(), self.catalogue_position())
        };
        let rebuilt = self
            .config
            .pool
            .install(|| build(&start))
            .map_err(RebuildError::Build)?;
        drop(start);
        // A feed holds the writer lock from before the statuses are saved until the swap;
        // a compaction (same content) only for the swap.
        let early = (kind == RebuildKind::Feed).then(|| self.writer.lock());
        self.save_statuses()?;
        let (base, saved) = store::write_snapshot(&self.dir, &rebuilt.catalogue, position)?;
        let _writing = early.unwrap_or_else(|| self.writer.lock());
        let reapplied = self.swap_base(base, position, rebuilt.users);
        store::save_users(&self.dir, &self.account.users())?;
        store::prune(&self.dir)?;
        drop(_writing);
        // The tracking state too, so that the log can be cut behind both.
        let checkpoint = self.write_state()?;
        Ok(RebuildReport {
            saved,
            reapplied,
            segments_removed: checkpoint.segments_removed,
            checkpoint,
        })
    }

    /// The log position the current catalogue includes (called with the writer lock
    /// held): after the last applied delta, or the log's next sequence when no delta is
    /// pending (the next sequence is read first: a delta logged after it was counted
    /// pending before its append).
    fn catalogue_position(&self) -> u64 {
        let next = self.wal.next_sequence();
        let applied = self.applied_through.load(Ordering::Acquire);
        if self.pending.load(Ordering::Acquire) == 0 {
            applied.max(next)
        } else {
            applied
        }
    }

    /// Writes a state snapshot at the log's current position, then deletes log segments
    /// behind every kept snapshot. With `compact`, a catalogue snapshot is written first
    /// when the account has none yet, so that the log can be cut at all (a stop skips
    /// it: it only wants a quick restart); an overlay waits for its own compaction.
    fn checkpoint(&self, compact: bool) -> Result<CheckpointReport, RebuildError> {
        let catalogued = snapshot::oldest_position(&self.dir, store::PREFIX)
            .map_err(store::StoreError::from)?
            .is_some();
        if compact && !catalogued {
            // A rebuild ends with a state snapshot.
            return Ok(self.rebuild_compacted()?.checkpoint);
        }
        Ok(self.write_state()?)
    }

    /// Writes a state snapshot at the log's current position and cuts the log.
    fn write_state(&self) -> Result<CheckpointReport, store::StoreError> {
        let _checkpointing = self.checkpointing.lock();
        // Read before the export: every event before it is applied (events are applied
        // before they are logged).
        let position = self.wal.next_sequence();
        let saved = state::write(&self.dir, &self.account, position)?;
        let segments_removed = self.cut_log()?;
        Ok(CheckpointReport {
            saved,
            segments_removed,
        })
    }

    fn flush_erasure(&self) -> Result<usize, RebuildError> {
        // Deltas logged before the erasure are applied first, so that the catalogue
        // snapshot can cover the whole sealed log.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while self.pending.load(Ordering::Acquire) > 0 && std::time::Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        self.wal.rotate().map_err(store::StoreError::from)?;
        self.rebuild_compacted()?;
        let _checkpointing = self.checkpointing.lock();
        for prefix in [store::PREFIX, state::PREFIX] {
            snapshot::prune(&self.dir, prefix, 1).map_err(store::StoreError::from)?;
        }
        Ok(self.cut_log()?)
    }

    /// Deletes log segments wholly behind both the older kept catalogue snapshot and
    /// the older kept state snapshot; nothing while either kind has none.
    fn cut_log(&self) -> Result<usize, store::StoreError> {
        let catalogue = snapshot::oldest_position(&self.dir, store::PREFIX)?;
        let tracking = snapshot::oldest_position(&self.dir, state::PREFIX)?;
        match (catalogue, tracking) {
            (Some(c), Some(t)) => Ok(self.wal.remove_before(c.min(t))?),
            _ => Ok(0),
        }
    }

    /// Serves `base` with every delta applied since `position` on top (called with the
    /// writer lock held); returns how many deltas were applied again.
    fn swap_base(&self, base: Catalogue, position: u64, users: Option<Vec<UserRecord>>) -> usize {
        let mut since_base = self.since_base.lock();
        since_base.retain(|logged| logged.sequence >= position);
        let mut edit = base.edit();
        for logged in since_base.iter() {
            let _ = delta::apply_to(&mut edit, &logged.delta, Mode::Reapply);
        }
        self.account.swap_catalogue(edit.finish());
        if let Some(users) = users {
            self.account.replace_users(users);
            for logged in since_base.iter() {
                delta::apply_users(&self.account, &logged.delta);
            }
        }
        since_base.len()
    }

    /// Saves every decided status (the newest [`STATUSES_KEPT`]), fsynced.
    fn save_statuses(&self) -> Result<(), store::StoreError> {
        let mut decided: Vec<(u64, String, DeltaStatus)> = self
            .deltas
            .iter()
            .filter(|entry| entry.value().1 != DeltaStatus::Pending)
            .map(|entry| {
                (
                    entry.value().0,
                    entry.key().clone(),
                    entry.value().1.clone(),
                )
            })
            .collect();
        decided.sort_by_key(|(sequence, _, _)| std::cmp::Reverse(*sequence));
        decided.truncate(STATUSES_KEPT);
        decided.reverse();
        let items: Vec<serde_json::Value> = decided
            .into_iter()
            .map(|(sequence, token, status)| {
                let reason = match &status {
                    DeltaStatus::Failed(reason) => Some(reason.clone()),
                    DeltaStatus::Pending | DeltaStatus::Applied => None,
                };
                serde_json::json!([token, sequence, status.code(), reason])
            })
            .collect();
        let bytes =
            serde_json::to_vec(&serde_json::json!({ "statuses": items })).unwrap_or_default();
        vitrine_snapshots::atomic_write(&self.dir, STATUS_FILE, &bytes)?;
        Ok(())
    }
}

fn io(
    action: &'static str,
    path: &Path,
) -> impl FnOnce(std::io::Error) -> vitrine_snapshots::Error {
    let path = path.to_path_buf();
    move |source| vitrine_snapshots::Error::Io {
        action,
        path,
        source,
    }
}

/// The file of decided delta statuses, in the account's directory.
pub const STATUS_FILE: &str = "delta-statuses.json";

/// Reads the status file: (token, sequence, status) of every decided delta it holds.
fn read_statuses(path: &Path) -> Vec<(String, u64, DeltaStatus)> {
    let Ok(bytes) = fs::read(path) else {
        return Vec::new();
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    let items = value
        .get("statuses")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|item| {
            let token = item.get(0)?.as_str()?.to_owned();
            let sequence = item.get(1)?.as_u64()?;
            let status = match item.get(2)?.as_u64()? {
                1 => DeltaStatus::Applied,
                _ => DeltaStatus::Failed(item.get(3)?.as_str().unwrap_or_default().to_owned()),
            };
            Some((token, sequence, status))
        })
        .collect()
}

/// Splits a delta record into its token and parsed parts.
fn decode_delta(payload: &[u8]) -> (Option<String>, Result<Delta, String>) {
    let Some(newline) = payload.iter().position(|b| *b == b'\n') else {
        return (None, Err("no token".to_owned()));
    };
    let (token, rest) = payload.split_at(newline);
    let Ok(token) = std::str::from_utf8(token) else {
        return (None, Err("token is not UTF-8".to_owned()));
    };
    let parse = || -> Result<Delta, String> {
        let value: serde_json::Value =
            serde_json::from_slice(rest.get(1..).unwrap_or_default()).map_err(|e| e.to_string())?;
        let mut errors = Errors::default();
        let fields =
            Fields::of(&value, "", KeyMatch::Exact, &mut errors).ok_or_else(|| errors.joined())?;
        delta::parse(&fields).map_err(|e| e.joined())
    };
    (Some(token.to_owned()), parse())
}

/// Builds the ingest pool. Its threads run at the lowest scheduling priority (niceness
/// 19 on Linux): feed builds, compactions and model rebuilds take the CPU that serving
/// leaves, so a full ingest does not queue requests behind it on a busy machine.
pub fn ingest_pool(threads: usize) -> std::io::Result<Arc<rayon::ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("ingest-{i}"))
        .start_handler(|_| lower_thread_priority())
        .build()
        .map(Arc::new)
        .map_err(std::io::Error::other)
}

/// Puts the calling thread at the lowest scheduling priority (niceness 19 on Linux), for
/// background work that must not delay requests: the ingest pool and the feed download.
pub fn lower_thread_priority() {
    if let Err(error) =
        thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min)
    {
        tracing::debug!(?error, "could not lower the thread's priority");
    }
}

/// Reads a logged request's events.
fn decode_tracked(payload: &[u8]) -> Result<Tracked, String> {
    let mut aligned = rkyv::util::AlignedVec::<16>::new();
    aligned.extend_from_slice(payload);
    rkyv::from_bytes::<Tracked, rkyv::rancor::Error>(&aligned)
        .map_err(|e| format!("not a tracking record: {e}"))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;
    use vitrine_engine::AccountSettings;
    use vitrine_engine::catalogue::CatalogueBuilder;
    use vitrine_engine::money::Currency;

    use super::*;

    fn wait_for(jobs: &AccountJobs, token: &str) -> DeltaStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = jobs.delta_status(token);
            if status != DeltaStatus::Pending {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "delta {token} still pending after 10 s"
            );
            thread::sleep(Duration::from_millis(2));
        }
    }

    fn account() -> Arc<Account> {
        let settings = AccountSettings {
            access_key: "k".into(),
            default_currency: Currency::from_code("GBP").unwrap(),
            zones: Vec::new(),
        };
        Arc::new(Account::new(
            settings,
            CatalogueBuilder::new().build().unwrap(),
        ))
    }

    fn config() -> JobsConfig {
        JobsConfig {
            wal_segment_bytes: 4096,
            ..JobsConfig::with_pool(ingest_pool(1).unwrap())
        }
    }

    fn start(dir: &Path, base_position: u64, config: JobsConfig) -> (AccountJobs, Recovery) {
        AccountJobs::start(account(), dir, base_position, config).unwrap()
    }

    /// Restarts like the server: newest snapshot, users file, then the log past it.
    fn restart(dir: &Path) -> (AccountJobs, Recovery) {
        let (restored, skipped) = store::restore(dir).unwrap();
        assert!(skipped.is_empty(), "{skipped:?}");
        let (catalogue, position) = restored.map_or_else(
            || (CatalogueBuilder::new().build().unwrap(), 0),
            |r| (r.catalogue, r.position),
        );
        let settings = AccountSettings {
            access_key: "k".into(),
            default_currency: Currency::from_code("GBP").unwrap(),
            zones: Vec::new(),
        };
        let account = Arc::new(Account::new(settings, catalogue));
        account.replace_users(store::restore_users(dir).0);
        AccountJobs::start(account, dir, position, config()).unwrap()
    }

    fn submit_nowait(jobs: &AccountJobs, body: serde_json::Value) -> String {
        let mut errors = Errors::default();
        let fields = Fields::of(&body, "", KeyMatch::Exact, &mut errors).unwrap();
        let delta = delta::parse(&fields).unwrap();
        jobs.submit_delta(delta, body.to_string().as_bytes())
            .unwrap()
    }

    fn submit(jobs: &AccountJobs, body: serde_json::Value) -> String {
        let token = submit_nowait(jobs, body);
        wait_for(jobs, &token);
        token
    }

    fn product(id: &str, title: &str) -> serde_json::Value {
        json!({"Id": id, "Title": title, "Link": "/", "Image": "/i", "Prices": ["1 GBP"], "Categories": []})
    }

    fn title(jobs: &AccountJobs, id: &str) -> Option<String> {
        let catalogue = jobs.account().catalogue();
        let idx = catalogue.idx_of(id)?;
        Some(catalogue.product(idx)?.title.to_string())
    }

    fn feed(jobs: &AccountJobs, products: &[(&str, &str)]) -> FeedStatus {
        let records: Vec<serde_json::Value> =
            products.iter().map(|(id, t)| product(id, t)).collect();
        let mut bytes = serde_json::to_vec(&records).unwrap();
        crate::runner::apply(jobs, &mut bytes, jobs.pool(), &|_| {})
    }

    #[test]
    fn deltas_apply_in_token_order_and_report_status() {
        let dir = tempfile::tempdir().unwrap();
        let (jobs, _) = start(dir.path(), 0, config());
        let t1 = submit_nowait(
            &jobs,
            json!({"DeleteAccountPrices": [{"AccountId": "a", "Id": "nope"}]}),
        );
        let t2 = submit_nowait(&jobs, json!({"Products": [product("p1", "one")]}));
        let t3 = submit_nowait(
            &jobs,
            json!({"AccountPrices": [{"AccountId": "a", "Id": "p1", "Prices": ["2 GBP"]}]}),
        );
        assert_eq!(wait_for(&jobs, &t3), DeltaStatus::Applied);
        assert_eq!(wait_for(&jobs, &t2), DeltaStatus::Applied);
        assert_eq!(
            wait_for(&jobs, &t1),
            DeltaStatus::Failed("unknown product ids in DeleteAccountPrices: nope".into())
        );
        assert!(
            jobs.account()
                .catalogue()
                .account_prices("a", "p1")
                .is_some()
        );
        assert_eq!(
            jobs.delta_status("dlt_other"),
            DeltaStatus::Failed(UNKNOWN_TOKEN.into())
        );
        assert_eq!(
            jobs.applied_through(),
            4,
            "log sequences 1 to 3 are applied"
        );
        jobs.shutdown();
        assert!(matches!(
            jobs.submit_delta(Delta::default(), b"{}"),
            Err(SubmitError::Closed)
        ));
    }

    #[test]
    fn logged_deltas_and_feeds_survive_a_restart_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (t1, t2, feed_token) = {
            let (jobs, _) = start(dir.path(), 0, config());
            let t1 = submit(
                &jobs,
                json!({"Products": [product("p1", "one"), product("p2", "two")]}),
            );
            let t2 = submit(
                &jobs,
                json!({"DeleteProducts": ["p1"], "SetCategoryOnProducts": [{"Category": "c", "Products": ["zz"]}]}),
            );
            let feed_token = jobs
                .submit_feed("https://shop.example/feed.json", 42)
                .unwrap();
            (t1, t2, feed_token)
        };
        // A record torn by the crash: half of a header at the end of the last segment.
        let (_, last) = wal::segments(&dir.path().join("wal"))
            .unwrap()
            .pop()
            .unwrap();
        let intact = fs::metadata(&last).unwrap().len();
        let mut bytes = fs::read(&last).unwrap();
        bytes.extend_from_slice(&[200, 0, 0, 0, 1, 2]);
        fs::write(&last, bytes).unwrap();

        let (jobs, recovery) = restart(dir.path());
        assert_eq!(recovery.deltas, 2);
        assert_eq!(recovery.feeds, 1);
        assert!(
            recovery
                .truncated
                .as_deref()
                .is_some_and(|cut| cut.contains("torn record header")),
            "{recovery:?}"
        );
        assert_eq!(fs::metadata(&last).unwrap().len(), intact, "cut back");
        assert_eq!(jobs.delta_status(&t1), DeltaStatus::Applied);
        assert!(matches!(jobs.delta_status(&t2), DeltaStatus::Failed(r) if r.contains("zz")));
        assert_eq!(jobs.account().catalogue().len(), 2);
        assert_eq!(jobs.feed_status(&feed_token), FeedStatus::Processing);
        assert_eq!(jobs.queued_feeds()[0].url, "https://shop.example/feed.json");
        // New deltas continue the log after the last intact record.
        let t3 = submit(&jobs, json!({"DeleteProducts": ["p2"]}));
        assert_eq!(jobs.delta_status(&t3), DeltaStatus::Applied);
        assert_eq!(jobs.applied_through(), 4);
    }

    #[test]
    fn a_feed_reapplies_the_deltas_accepted_while_it_was_built() {
        let dir = tempfile::tempdir().unwrap();
        let (before, during) = {
            let (jobs, _) = start(dir.path(), 0, config());
            let before = submit(
                &jobs,
                json!({"Products": [product("old", "from a delta before the feed")],
                       "Users": [{"UserId": "u1", "Email": "u1@example.com"}]}),
            );
            let mut during = String::new();
            let report = jobs
                .rebuild(RebuildKind::Feed, |current| {
                    assert!(current.idx_of("old").is_some());
                    // A delta accepted and applied while the new base is being built.
                    during = submit(
                        &jobs,
                        json!({"Products": [product("f1", "changed by a delta")],
                               "Users": [{"UserId": "u2"}]}),
                    );
                    assert_eq!(jobs.delta_status(&during), DeltaStatus::Applied);
                    let mut builder = CatalogueBuilder::new();
                    let mut errors = Errors::default();
                    for (id, t) in [("f1", "from the feed"), ("f2", "from the feed")] {
                        let record = product(id, t);
                        builder.upsert_product(
                            crate::record::product(&record, "", &mut errors).unwrap(),
                        );
                    }
                    Ok(Rebuilt {
                        catalogue: builder.build().map_err(|e| e.to_string())?,
                        users: Some(Vec::new()),
                    })
                })
                .unwrap();
            assert_eq!(report.reapplied, 1);
            assert_eq!(report.saved.position, 2, "the feed comes after delta 1");
            assert!(jobs.account().catalogue().is_mapped());
            assert_eq!(title(&jobs, "f1").as_deref(), Some("changed by a delta"));
            assert_eq!(title(&jobs, "f2").as_deref(), Some("from the feed"));
            assert!(title(&jobs, "old").is_none(), "the feed replaced it");
            assert!(
                jobs.account().user("u1").is_none(),
                "the feed's users replace"
            );
            assert!(
                jobs.account().user("u2").is_some(),
                "a later delta's user stays"
            );
            (before, during)
        };
        let (jobs, recovery) = restart(dir.path());
        assert_eq!(recovery.deltas, 1, "only the delta past the snapshot");
        assert_eq!(title(&jobs, "f1").as_deref(), Some("changed by a delta"));
        assert!(title(&jobs, "old").is_none());
        assert_eq!(jobs.delta_status(&before), DeltaStatus::Applied);
        assert_eq!(jobs.delta_status(&during), DeltaStatus::Applied);
        assert!(jobs.account().user("u2").is_some());
    }

    #[test]
    fn a_large_overlay_is_compacted_and_the_log_truncated_behind_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = JobsConfig {
            compact_after_changes: 20,
            ..config()
        };
        let mut tokens = Vec::new();
        {
            let (jobs, _) = start(dir.path(), 0, config);
            for round in 0..60 {
                let big = "x".repeat(300);
                tokens.push(submit(
                    &jobs,
                    json!({"Products": [product(&format!("p{round}"), &big)]}),
                ));
            }
            let deadline = Instant::now() + Duration::from_secs(20);
            while jobs.account().catalogue().overlay_size() >= 20 {
                assert!(Instant::now() < deadline, "no compaction");
                thread::sleep(Duration::from_millis(10));
            }
            // Wait for the compactor to finish its last round.
            drop(jobs.shared.rebuild.lock());
            assert_eq!(jobs.account().catalogue().len(), 60);
            let snapshots = vitrine_snapshots::snapshot::list(dir.path(), store::PREFIX).unwrap();
            assert!(!snapshots.is_empty() && snapshots.len() <= store::KEEP);
            let segments = wal::segments(&dir.path().join("wal")).unwrap();
            assert!(
                segments.first().unwrap().0 > 1,
                "segments behind the snapshots are deleted: {segments:?}"
            );
        }
        let (jobs, _) = restart(dir.path());
        assert_eq!(jobs.account().catalogue().len(), 60);
        for token in &tokens {
            assert_eq!(jobs.delta_status(token), DeltaStatus::Applied, "{token}");
        }
        assert_eq!(title(&jobs, "p59").unwrap().len(), 300);
    }

    #[test]
    fn feeds_prune_snapshots_and_the_log_only_behind_the_oldest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (jobs, _) = start(dir.path(), 0, config());
        for round in 0..3 {
            submit(
                &jobs,
                json!({"Products": [product(&format!("d{round}"), &"y".repeat(3000))]}),
            );
            assert!(matches!(
                feed(&jobs, &[("f", "feed")]),
                FeedStatus::Complete { .. }
            ));
        }
        let snapshots = vitrine_snapshots::snapshot::list(dir.path(), store::PREFIX).unwrap();
        assert_eq!(
            snapshots.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            [3, 2]
        );
        // Snapshot 2 covers deltas 1 and 2: the segment holding them is deleted, the one
        // from delta 3 on is kept.
        let segments = wal::segments(&dir.path().join("wal")).unwrap();
        assert_eq!(
            segments.iter().map(|(first, _)| *first).collect::<Vec<_>>(),
            [3]
        );
        drop(jobs);
        let (jobs, recovery) = restart(dir.path());
        assert_eq!(recovery.deltas, 0, "every delta is in the newest snapshot");
        assert_eq!(jobs.account().catalogue().len(), 1);
    }

    #[test]
    fn a_log_that_cannot_be_written_refuses_the_submission() {
        let dir = tempfile::tempdir().unwrap();
        let (jobs, _) = start(dir.path(), 0, config());
        submit(
            &jobs,
            json!({"Products": [product("p", &"z".repeat(5000))]}),
        );
        // The next append must start a segment, in a directory that is now a file.
        fs::rename(dir.path().join("wal"), dir.path().join("wal.moved")).unwrap();
        fs::write(dir.path().join("wal"), b"in the way").unwrap();
        let mut errors = Errors::default();
        let body = json!({"DeleteProducts": ["p"]});
        let fields = Fields::of(&body, "", KeyMatch::Exact, &mut errors).unwrap();
        let error = jobs
            .submit_delta(delta::parse(&fields).unwrap(), b"{}")
            .unwrap_err()
            .to_string();
        assert!(error.contains("could not be saved"), "{error}");
        assert!(jobs.account().catalogue().idx_of("p").is_some());
        // Feed submissions are journaled as files and refused the same way.
        fs::remove_dir_all(dir.path().join("feeds")).unwrap();
        fs::write(dir.path().join("feeds"), b"not a directory").unwrap();
        let error = jobs
            .submit_feed("https://shop.example/f", 1)
            .unwrap_err()
            .to_string();
        assert!(error.contains("could not be saved"), "{error}");
        assert!(jobs.queued_feeds().is_empty());
    }
}
