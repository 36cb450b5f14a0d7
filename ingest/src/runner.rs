//! The feed runner: one thread for the whole server that takes feed jobs in submission
//! order, downloads each (on its own small tokio runtime), parses, validates and builds
//! it on the ingest rayon pool, swaps the new catalogue in, and records the outcome.
//!
//! One feed at a time keeps memory bounded (a feed is held in memory while it is parsed)
//! and leaves the other core to serving. A job cut short by a stop stays `Processing` in
//! its job file and is run again after the restart.

use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::thread;

use parking_lot::Mutex;

use crate::fetch::{self, FetchLimits};
use crate::jobs::StreamKind;
use crate::jobs::{AccountJobs, FeedStatus, RebuildKind, Rebuilt};
use crate::{feed, orders};

/// Settings of the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedSettings {
    /// Download limits.
    pub limits: FetchLimits,
    /// The runner thread's priority.
    pub priority: crate::jobs::BackgroundPriority,
}

type Task = (Arc<AccountJobs>, String);

/// The feed runner.
pub struct FeedRunner {
    sender: Mutex<Option<mpsc::Sender<Task>>>,
}

impl std::fmt::Debug for FeedRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedRunner").finish_non_exhaustive()
    }
}

impl FeedRunner {
    /// Starts the runner thread; feeds are parsed and built on `pool`.
    pub fn start(
        settings: FeedSettings,
        pool: Arc<rayon::ThreadPool>,
    ) -> std::io::Result<FeedRunner> {
        let (sender, receiver) = mpsc::channel::<Task>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        thread::Builder::new()
            .name("feed-runner".to_owned())
            .spawn(move || {
                // Downloads are background work, like the parse and build on `pool`.
                if settings.priority == crate::jobs::BackgroundPriority::Lowest {
                    crate::jobs::lower_thread_priority();
                }
                let client = fetch::client(settings.limits);
                for (jobs, token) in receiver {
                    let status = match &client {
                        Ok(client) => run(&jobs, &token, client, settings.limits, &pool, &runtime),
                        Err(e) => FeedStatus::Failed(e.to_string()),
                    };
                    log(&jobs, &token, &status);
                    if let Err(error) = jobs.finish_feed(&token, status) {
                        tracing::error!(%token, %error, "feed status could not be saved");
                    }
                }
            })?;
        Ok(FeedRunner {
            sender: Mutex::new(Some(sender)),
        })
    }

    /// Queues a journaled feed job.
    pub fn enqueue(&self, jobs: Arc<AccountJobs>, token: String) {
        if let Some(sender) = self.sender.lock().as_ref() {
            let _ = sender.send((jobs, token));
        }
    }

    /// Takes no more jobs. A job in progress is left to finish or to be cut short by the
    /// process exit; either way its job file tells the next start what to do.
    pub fn shutdown(&self) {
        self.sender.lock().take();
    }
}

fn log(jobs: &AccountJobs, token: &str, status: &FeedStatus) {
    let account = &jobs.account().access_key();
    let metrics = jobs.metrics();
    match status {
        FeedStatus::Complete { .. } => metrics.feeds_complete.fetch_add(1, Ordering::Relaxed),
        FeedStatus::Failed(_) => metrics.feeds_failed.fetch_add(1, Ordering::Relaxed),
        FeedStatus::Processing => 0,
    };
    match status {
        FeedStatus::Complete { detail } => {
            let products = jobs.account().catalogue().len();
            tracing::info!(%account, %token, products, detail = detail.as_deref().unwrap_or(""), "feed complete");
        }
        FeedStatus::Failed(error) => tracing::warn!(%account, %token, %error, "feed failed"),
        FeedStatus::Processing => {}
    }
}

fn run(
    jobs: &AccountJobs,
    token: &str,
    client: &reqwest::Client,
    limits: FetchLimits,
    pool: &rayon::ThreadPool,
    runtime: &tokio::runtime::Runtime,
) -> FeedStatus {
    let Some(job) = jobs.feed_job(token) else {
        return FeedStatus::Failed(crate::jobs::UNKNOWN_TOKEN.to_owned());
    };
    if job.streamed {
        return run_streamed(jobs, token, pool);
    }
    let dest = jobs.dir().join("feeds").join(format!("{token}.download"));
    let started = std::time::Instant::now();
    let downloaded = runtime.block_on(fetch::download(client, &job.url, &dest, limits));
    jobs.metrics()
        .feed_download_seconds
        .observe(started.elapsed().as_secs_f64());
    if let Err(error) = downloaded {
        let _ = std::fs::remove_file(&dest);
        return FeedStatus::Failed(error.to_string());
    }
    let bytes = std::fs::read(&dest);
    let _ = std::fs::remove_file(&dest);
    let mut bytes = match bytes {
        Ok(bytes) => bytes,
        Err(error) => {
            return FeedStatus::Failed(format!("the downloaded feed could not be read: {error}"));
        }
    };
    apply(jobs, &mut bytes, pool, &|_| {})
}

/// A feed streamed by the plugins: the JSON kinds go through [`apply`], the order
/// history is imported; the stream file is removed once its outcome is known.
fn run_streamed(jobs: &AccountJobs, token: &str, pool: &rayon::ThreadPool) -> FeedStatus {
    let path = jobs.streamed_feed_path(token);
    let status = match std::fs::read(&path) {
        Ok(bytes) if StreamKind::of_name(token) == Some(StreamKind::Orders) => {
            import_orders(jobs, &bytes)
        }
        Ok(mut bytes) => apply(jobs, &mut bytes, pool, &|_| {}),
        Err(error) => FeedStatus::Failed(format!("the streamed feed could not be read: {error}")),
    };
    let _ = std::fs::remove_file(&path);
    status
}

/// Imports an order history (CSV, see [`crate::orders`]) into the jobs' account.
pub fn import_orders(jobs: &AccountJobs, bytes: &[u8]) -> FeedStatus {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let history = match orders::parse(bytes, now) {
        Ok(history) => history,
        Err(error) => return FeedStatus::Failed(error.to_string()),
    };
    let summary = history.summary();
    match jobs.import_orders(history.orders) {
        Ok(imported) => FeedStatus::Complete {
            detail: Some(format!(
                "{summary}; {} orders recorded, {} already known",
                imported.new, imported.known
            )),
        },
        Err(error) => FeedStatus::Failed(error.to_string()),
    }
}

/// Parses, validates and applies a feed held in `bytes` to the jobs' account: the new
/// base is snapshotted and swapped in under the deltas accepted meanwhile before the
/// feed is reported `Complete`.
pub fn apply(
    jobs: &AccountJobs,
    bytes: &mut [u8],
    pool: &rayon::ThreadPool,
    progress: feed::Progress<'_>,
) -> FeedStatus {
    let started = std::time::Instant::now();
    let (mut document, report) = match pool.install(|| feed::parse_with_progress(bytes, progress)) {
        Ok(parsed) => parsed,
        Err(error) => return FeedStatus::Failed(error.to_string()),
    };
    let parsed = started.elapsed();
    jobs.metrics()
        .feed_parse_seconds
        .observe(parsed.as_secs_f64());
    let users = document.users.take();
    let rebuilt = jobs.rebuild(RebuildKind::Feed, |current| {
        let catalogue = feed::build(current, &document).map_err(|e| e.to_string())?;
        Ok(Rebuilt { catalogue, users })
    });
    let rebuilt = match rebuilt {
        Ok(rebuilt) => rebuilt,
        Err(error) => return FeedStatus::Failed(error.to_string()),
    };
    jobs.metrics()
        .feed_build_seconds
        .observe((started.elapsed() - parsed).as_secs_f64());
    tracing::info!(
        account = %jobs.account().access_key(),
        products = jobs.account().catalogue().len(),
        parse_and_validate_s = parsed.as_secs_f64(),
        build_and_snapshot_s = (started.elapsed() - parsed).as_secs_f64(),
        snapshot = %rebuilt.saved.path.display(),
        deltas_reapplied = rebuilt.reapplied,
        "feed applied"
    );
    FeedStatus::Complete {
        detail: (!report.problems.is_empty()).then(|| report.summary()),
    }
}
