//! Status tokens: the jobs behind `/api/delta` and `/api/productfeed`.
//!
//! Each account has one [`AccountJobs`]: a table of delta statuses, a table of feed
//! jobs, and one delta worker thread that applies the account's deltas in token order
//! (FIFO). A token is only ever visible to the account that received it.
//!
//! Submissions are journaled before they are acknowledged: each delta is written to
//! `deltas/<sequence>-<token>.json` and each feed to `feeds/<token>.job` in the
//! account's directory, by [`vitrine_snapshots::atomic_write`] (fsynced). On start the
//! journaled deltas are applied again in sequence order, so every acknowledged delta is
//! in the catalogue and every token has its status after a restart or a crash.

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;

use dashmap::DashMap;
use parking_lot::Mutex;
use vitrine_engine::Account;
use vitrine_engine::catalogue::UnixMillis;

use crate::delta::{self, Delta};
use crate::json::{Errors, Fields, KeyMatch};

/// Status of a delta, as `/api/deltastatus` reports it.
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

/// One account's jobs and its delta worker.
#[derive(Debug)]
pub struct AccountJobs {
    dir: PathBuf,
    account: Arc<Account>,
    /// Held by whoever produces the account's next catalogue version (the delta worker,
    /// the feed runner), so that no change is lost between load and swap.
    writer: Arc<Mutex<()>>,
    /// token → (journal sequence, status).
    deltas: Arc<DashMap<String, (u64, DeltaStatus)>>,
    /// Journal sequence of the next delta to apply: everything before it is in the
    /// account's catalogue.
    applied_through: Arc<AtomicU64>,
    feeds: DashMap<String, FeedJob>,
    feed_queue: Mutex<VecDeque<String>>,
    /// `None` once shut down.
    intake: Mutex<Option<Intake>>,
    worker: Mutex<Option<thread::JoinHandle<()>>>,
}

/// The worker's channel and the next journal sequence number, under one lock so that
/// journal order and application order are the same.
#[derive(Debug)]
struct Intake {
    sender: mpsc::Sender<(String, u64, Delta)>,
    next_sequence: u64,
}

/// What [`AccountJobs::start`] found in the journal.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Deltas applied again.
    pub deltas: usize,
    /// Feed jobs found.
    pub feeds: usize,
    /// Journal files that could not be read, with the reason (their tokens report Status 2).
    pub problems: Vec<String>,
}

/// Why a submission was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The server is stopping.
    #[error("the server is shutting down and takes no more jobs")]
    Closed,
    /// The journal could not be written.
    #[error("the submission could not be saved: {0}")]
    Journal(#[from] vitrine_snapshots::Error),
}

impl AccountJobs {
    /// Replays the journal in `dir` into `account`, then starts its delta worker.
    ///
    /// `base_position` is the journal position the account's starting catalogue already
    /// includes (from its snapshot): earlier deltas are not applied again, their
    /// statuses come from the saved status file.
    pub fn start(
        account: Arc<Account>,
        dir: &Path,
        base_position: u64,
    ) -> Result<(AccountJobs, Recovery), SubmitError> {
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| vitrine_snapshots::Error::Io {
                action,
                path,
                source,
            }
        };
        let delta_dir = dir.join("deltas");
        let feed_dir = dir.join("feeds");
        fs::create_dir_all(&delta_dir).map_err(io("creating directory", &delta_dir))?;
        fs::create_dir_all(&feed_dir).map_err(io("creating directory", &feed_dir))?;

        let deltas: Arc<DashMap<String, (u64, DeltaStatus)>> = Arc::new(DashMap::new());
        let mut recovery = Recovery::default();
        let mut next_sequence = base_position;
        for (token, sequence, status) in read_statuses(&delta_dir.join(STATUS_FILE)) {
            next_sequence = next_sequence.max(sequence + 1);
            deltas.insert(token, (sequence, status));
        }
        for (sequence, token, path) in journal_entries(&delta_dir, ".json")? {
            next_sequence = next_sequence.max(sequence + 1);
            if sequence < base_position {
                // Already in the snapshot; its status was saved with it.
                deltas
                    .entry(token)
                    .or_insert((sequence, DeltaStatus::Applied));
                continue;
            }
            let status = match read_delta(&path) {
                Ok(delta) => match delta::apply(&account, &delta) {
                    Ok(_) => DeltaStatus::Applied,
                    Err(error) => DeltaStatus::Failed(error.to_string()),
                },
                Err(reason) => {
                    recovery
                        .problems
                        .push(format!("{}: {reason}", path.display()));
                    DeltaStatus::Failed(format!("the journaled delta could not be read: {reason}"))
                }
            };
            deltas.insert(token, (sequence, status));
            recovery.deltas += 1;
        }
        let applied_through = Arc::new(AtomicU64::new(next_sequence));
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

        let (sender, receiver) = mpsc::channel::<(String, u64, Delta)>();
        let statuses = Arc::clone(&deltas);
        let worker_applied = Arc::clone(&applied_through);
        let writer = Arc::new(Mutex::new(()));
        let worker_writer = Arc::clone(&writer);
        let worker_account = Arc::clone(&account);
        let name = format!("delta-{}", account.settings().access_key);
        let worker = thread::Builder::new()
            .name(name)
            .spawn(move || {
                for (token, sequence, delta) in receiver {
                    let _writing = worker_writer.lock();
                    let status = match delta::apply(&worker_account, &delta) {
                        Ok(_) => DeltaStatus::Applied,
                        Err(error) => DeltaStatus::Failed(error.to_string()),
                    };
                    statuses.insert(token, (sequence, status));
                    worker_applied.store(sequence + 1, Ordering::Release);
                }
            })
            .map_err(io("starting the delta worker for", dir))?;
        let jobs = AccountJobs {
            dir: dir.to_path_buf(),
            account,
            writer,
            deltas,
            applied_through,
            feeds,
            feed_queue: Mutex::new(queue.into_iter().map(|(_, t)| t).collect()),
            intake: Mutex::new(Some(Intake {
                sender,
                next_sequence,
            })),
            worker: Mutex::new(Some(worker)),
        };
        Ok((jobs, recovery))
    }

    /// Journals a delta (`record`: its JSON parts, without credentials), queues it and
    /// returns its token; it is applied after every earlier one.
    pub fn submit_delta(&self, delta: Delta, record: &[u8]) -> Result<String, SubmitError> {
        let token = format!("dlt_{}", vitrine_engine::account::new_id());
        let mut guard = self.intake.lock();
        let Some(intake) = guard.as_mut() else {
            return Err(SubmitError::Closed);
        };
        let sequence = intake.next_sequence;
        let name = format!("{sequence:016}-{token}.json");
        vitrine_snapshots::atomic_write(&self.dir.join("deltas"), &name, record)?;
        intake.next_sequence += 1;
        self.deltas
            .insert(token.clone(), (sequence, DeltaStatus::Pending));
        if intake
            .sender
            .send((token.clone(), sequence, delta))
            .is_err()
        {
            let stopped = DeltaStatus::Failed("the delta worker stopped".to_owned());
            self.deltas.insert(token.clone(), (sequence, stopped));
            return Err(SubmitError::Closed);
        }
        Ok(token)
    }

    /// The journal position the account's catalogue includes. Read it while holding
    /// [`AccountJobs::writer`] to pair it with the catalogue version.
    pub fn applied_through(&self) -> u64 {
        self.applied_through.load(Ordering::Acquire)
    }

    /// Saves the statuses of every delta before `position` (fsynced), so that a snapshot
    /// covering them can stand in for their journal files.
    pub fn save_statuses(&self, position: u64) -> Result<(), SubmitError> {
        let mut items: Vec<serde_json::Value> = self
            .deltas
            .iter()
            .filter(|entry| entry.value().0 < position && entry.value().1 != DeltaStatus::Pending)
            .map(|entry| {
                let (sequence, status) = entry.value();
                let reason = match status {
                    DeltaStatus::Failed(reason) => Some(reason.clone()),
                    DeltaStatus::Pending | DeltaStatus::Applied => None,
                };
                serde_json::json!([entry.key(), sequence, status.code(), reason])
            })
            .collect();
        items.sort_by_key(|item| item.get(1).and_then(serde_json::Value::as_u64));
        let bytes =
            serde_json::to_vec(&serde_json::json!({ "statuses": items })).unwrap_or_default();
        vitrine_snapshots::atomic_write(&self.dir.join("deltas"), STATUS_FILE, &bytes)?;
        Ok(())
    }

    /// Deletes journal files of deltas before `position`: a snapshot includes them and
    /// their statuses are saved.
    pub fn prune_journal(&self, position: u64) -> Result<usize, SubmitError> {
        let mut removed = 0;
        for (sequence, _, path) in journal_entries(&self.dir.join("deltas"), ".json")? {
            if sequence < position && fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// The status of a delta token; unknown tokens fail with [`UNKNOWN_TOKEN`].
    pub fn delta_status(&self, token: &str) -> DeltaStatus {
        self.deltas.get(token).map_or_else(
            || DeltaStatus::Failed(UNKNOWN_TOKEN.to_owned()),
            |entry| entry.1.clone(),
        )
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
            &self.dir.join("feeds"),
            &format!("{token}.job"),
            &job.encode(),
        )?;
        self.feeds.insert(token.clone(), job);
        self.feed_queue.lock().push_back(token.clone());
        Ok(token)
    }

    /// Records the end of a feed job, on disk first, so that it is not run again.
    pub fn finish_feed(&self, token: &str, status: FeedStatus) -> Result<(), SubmitError> {
        let Some(mut job) = self.feed_job(token) else {
            return Ok(());
        };
        job.status = status;
        let written = vitrine_snapshots::atomic_write(
            &self.dir.join("feeds"),
            &format!("{token}.job"),
            &job.encode(),
        );
        self.feed_queue.lock().retain(|t| t != token);
        self.feeds.insert(token.to_owned(), job);
        written.map_err(SubmitError::from)
    }

    /// A feed job.
    pub fn feed_job(&self, token: &str) -> Option<FeedJob> {
        self.feeds.get(token).map(|job| job.clone())
    }

    /// The account the jobs belong to.
    pub fn account(&self) -> &Arc<Account> {
        &self.account
    }

    /// The lock held while producing the account's next catalogue version.
    pub fn writer(&self) -> &Mutex<()> {
        &self.writer
    }

    /// The account's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The status of a feed token; unknown tokens are an error with [`UNKNOWN_TOKEN`].
    pub fn feed_status(&self, token: &str) -> FeedStatus {
        self.feeds.get(token).map_or_else(
            || FeedStatus::Failed(UNKNOWN_TOKEN.to_owned()),
            |job| job.status.clone(),
        )
    }

    /// Feed jobs waiting to be fetched, oldest first.
    pub fn queued_feeds(&self) -> Vec<FeedJob> {
        let queue = self.feed_queue.lock();
        queue
            .iter()
            .filter_map(|t| self.feeds.get(t).map(|j| j.clone()))
            .collect()
    }

    /// Stops taking deltas and waits until every queued one is applied.
    pub fn shutdown(&self) {
        self.intake.lock().take();
        if let Some(worker) = self.worker.lock().take() {
            let _ = worker.join();
        }
    }
}

impl Drop for AccountJobs {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The file holding statuses of deltas whose journal files were pruned.
pub const STATUS_FILE: &str = "statuses";

/// Reads the status file: (token, sequence, status) of every covered delta.
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

/// Journal files of a directory as (sequence, token, path), in sequence order.
fn journal_entries(dir: &Path, suffix: &str) -> Result<Vec<(u64, String, PathBuf)>, SubmitError> {
    let mut entries = Vec::new();
    let listing = fs::read_dir(dir).map_err(|source| vitrine_snapshots::Error::Io {
        action: "reading directory",
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in listing.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(suffix))
        else {
            continue;
        };
        let Some((sequence, token)) = name.split_once('-') else {
            continue;
        };
        let Ok(sequence) = sequence.parse::<u64>() else {
            continue;
        };
        entries.push((sequence, token.to_owned(), path));
    }
    entries.sort();
    Ok(entries)
}

fn read_delta(path: &Path) -> Result<Delta, String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let mut errors = Errors::default();
    let fields =
        Fields::of(&value, "", KeyMatch::Exact, &mut errors).ok_or_else(|| errors.joined())?;
    delta::parse(&fields).map_err(|e| e.joined())
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
            thread::sleep(Duration::from_millis(5));
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

    fn submit(jobs: &AccountJobs, body: serde_json::Value) -> String {
        let mut errors = Errors::default();
        let fields = Fields::of(&body, "", KeyMatch::Exact, &mut errors).unwrap();
        let delta = delta::parse(&fields).unwrap();
        jobs.submit_delta(delta, body.to_string().as_bytes())
            .unwrap()
    }

    fn product(id: &str) -> serde_json::Value {
        json!({"Id": id, "Title": id, "Link": "/", "Image": "/i", "Prices": ["1 GBP"], "Categories": []})
    }

    #[test]
    fn deltas_apply_in_token_order_and_report_status() {
        let dir = tempfile::tempdir().unwrap();
        let (jobs, _) = AccountJobs::start(account(), dir.path(), 0).unwrap();
        let t1 = submit(
            &jobs,
            json!({"DeleteAccountPrices": [{"AccountId": "a", "Id": "nope"}]}),
        );
        let t2 = submit(&jobs, json!({"Products": [product("p1")]}));
        assert_eq!(wait_for(&jobs, &t2), DeltaStatus::Applied);
        assert_eq!(
            wait_for(&jobs, &t1),
            DeltaStatus::Failed("unknown product ids in DeleteAccountPrices: nope".into())
        );
        assert_eq!(
            jobs.delta_status("dlt_other"),
            DeltaStatus::Failed(UNKNOWN_TOKEN.into())
        );
        jobs.shutdown();
        assert!(matches!(
            jobs.submit_delta(Delta::default(), b"{}"),
            Err(SubmitError::Closed)
        ));
    }

    #[test]
    fn journaled_deltas_and_feeds_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (t1, t2, feed) = {
            let (jobs, _) = AccountJobs::start(account(), dir.path(), 0).unwrap();
            let t1 = submit(&jobs, json!({"Products": [product("p1"), product("p2")]}));
            let t2 = submit(
                &jobs,
                json!({"DeleteProducts": ["p1"], "SetCategoryOnProducts": [{"Category": "c", "Products": ["zz"]}]}),
            );
            let feed = jobs
                .submit_feed("https://shop.example/feed.json", 42)
                .unwrap();
            (t1, t2, feed)
        };
        std::fs::write(
            dir.path().join("deltas/0000000000000099-dlt_bad.json"),
            b"{not json",
        )
        .unwrap();
        let account = account();
        let (jobs, recovery) = AccountJobs::start(Arc::clone(&account), dir.path(), 0).unwrap();
        assert_eq!(recovery.deltas, 3);
        assert_eq!(recovery.feeds, 1);
        assert_eq!(recovery.problems.len(), 1, "{:?}", recovery.problems);
        assert_eq!(jobs.delta_status(&t1), DeltaStatus::Applied);
        assert!(matches!(jobs.delta_status(&t2), DeltaStatus::Failed(r) if r.contains("zz")));
        assert!(
            matches!(jobs.delta_status("dlt_bad"), DeltaStatus::Failed(r) if r.contains("could not be read"))
        );
        assert_eq!(account.catalogue().len(), 2);
        assert_eq!(jobs.feed_status(&feed), FeedStatus::Processing);
        assert_eq!(jobs.queued_feeds()[0].url, "https://shop.example/feed.json");
        // New submissions continue the sequence after the highest journaled one.
        let t3 = submit(&jobs, json!({"DeleteProducts": ["p2"]}));
        assert_eq!(wait_for(&jobs, &t3), DeltaStatus::Applied);
        assert!(
            std::fs::read_dir(dir.path().join("deltas"))
                .unwrap()
                .any(|e| e
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("0000000000000100-"))
        );
    }

    #[test]
    fn a_journal_that_cannot_be_written_refuses_the_submission() {
        let dir = tempfile::tempdir().unwrap();
        let (jobs, _) = AccountJobs::start(account(), dir.path(), 0).unwrap();
        std::fs::remove_dir_all(dir.path().join("feeds")).unwrap();
        std::fs::write(dir.path().join("feeds"), b"not a directory").unwrap();
        let error = jobs
            .submit_feed("https://shop.example/f", 1)
            .unwrap_err()
            .to_string();
        assert!(error.contains("could not be saved"), "{error}");
        assert!(jobs.queued_feeds().is_empty());
    }
}
