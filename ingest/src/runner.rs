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
use vitrine_engine::account::UserRecord;
use vitrine_engine::catalogue::Catalogue;

use crate::jobs::{
    AccountJobs, Claim, FeedJob, FeedStatus, RebuildError, RebuildKind, Rebuilt, ReplicationError,
    StreamKind,
};
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
                vitrine_snapshots::threads::place_current_thread(
                    vitrine_snapshots::threads::Role::Background,
                );
                // Downloads are background work, like the parse and build on `pool`.
                if settings.priority == crate::jobs::BackgroundPriority::Lowest {
                    crate::jobs::lower_thread_priority();
                }
                let client = fetch::client(settings.limits);
                for (jobs, token) in receiver {
                    let status = match &client {
                        Ok(client) => {
                            let tools = Tools {
                                client,
                                limits: settings.limits,
                                pool: &pool,
                                runtime: &runtime,
                            };
                            run(&jobs, &token, &tools)
                        }
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

/// What the runner thread downloads, parses and builds with.
struct Tools<'a> {
    client: &'a reqwest::Client,
    limits: FetchLimits,
    pool: &'a rayon::ThreadPool,
    runtime: &'a tokio::runtime::Runtime,
}

fn run(jobs: &AccountJobs, token: &str, tools: &Tools<'_>) -> FeedStatus {
    let Some(job) = jobs.feed_job(token) else {
        return FeedStatus::Failed(crate::jobs::UNKNOWN_TOKEN.to_owned());
    };
    if jobs.is_replicated() {
        return run_replicated(jobs, token, tools);
    }
    if job.streamed {
        return run_streamed(jobs, token, tools.pool);
    }
    match download(jobs, &job, tools) {
        Ok(mut bytes) => apply(jobs, &mut bytes, tools.pool, &|_| {}),
        Err(status) => status,
    }
}

/// Downloads a feed job's URL; a failure is the job's outcome.
fn download(jobs: &AccountJobs, job: &FeedJob, tools: &Tools<'_>) -> Result<Vec<u8>, FeedStatus> {
    let dest = jobs
        .dir()
        .join("feeds")
        .join(format!("{}.download", job.token));
    let started = std::time::Instant::now();
    let downloaded =
        tools
            .runtime
            .block_on(fetch::download(tools.client, &job.url, &dest, tools.limits));
    jobs.metrics()
        .feed_download_seconds
        .observe(started.elapsed().as_secs_f64());
    if let Err(error) = downloaded {
        let _ = std::fs::remove_file(&dest);
        return Err(FeedStatus::Failed(error.to_string()));
    }
    let bytes = std::fs::read(&dest);
    let _ = std::fs::remove_file(&dest);
    bytes.map_err(|error| {
        FeedStatus::Failed(format!("the downloaded feed could not be read: {error}"))
    })
}

/// A feed job of a cluster's account (see `jobs::replica::feeds`): built by the node
/// whose runner claims it, which publishes the outcome; every node (that one included)
/// reports the outcome once it has read it back and swapped the catalogue in.
fn run_replicated(jobs: &AccountJobs, token: &str, tools: &Tools<'_>) -> FeedStatus {
    let account = jobs.account().access_key().to_owned();
    loop {
        let Some(job) = jobs.feed_job(token) else {
            return FeedStatus::Failed(crate::jobs::UNKNOWN_TOKEN.to_owned());
        };
        if job.status != FeedStatus::Processing {
            return job.status;
        }
        // 0 until the submission is read back from the replicated log.
        if job.stream_sequence > 0 {
            match jobs.claim_feed(job.stream_sequence) {
                Some(Ok(Claim::Ours(lease))) => {
                    tracing::info!(%account, %token, job = job.stream_sequence, "building the feed for the cluster");
                    let published = build_shared(jobs, &job, tools).and_then(|built| {
                        jobs.publish_built(
                            &job,
                            &built.status,
                            built.catalogue.as_ref(),
                            built.users.as_deref(),
                        )
                    });
                    match published {
                        Ok(()) => {
                            if let Err(error) = lease.done() {
                                tracing::warn!(%account, %token, %error, "the feed job could not be marked done");
                            }
                        }
                        // The claim lapses; this node or another builds it again.
                        Err(error) => {
                            tracing::warn!(%account, %token, %error, "the feed could not be shared; trying again");
                        }
                    }
                }
                Some(Ok(Claim::Busy | Claim::Done)) => {}
                Some(Err(error)) => {
                    tracing::warn!(%account, %token, %error, "the feed job could not be claimed; trying again");
                }
                None => return FeedStatus::Failed("the account left the cluster".to_owned()),
            }
        }
        thread::sleep(CLAIM_WAIT);
    }
}

/// Wait between two looks at a cluster's feed job built elsewhere.
const CLAIM_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// A feed built for the cluster, not swapped in.
struct SharedBuild {
    status: FeedStatus,
    catalogue: Option<Catalogue>,
    users: Option<Vec<UserRecord>>,
}

/// Builds a cluster's feed job: downloads it (or reads its streamed body, from the
/// shared objects when it was streamed to another node), parses, validates and builds
/// the catalogue; an order history is imported (its orders published as events). An
/// error is a problem of the cluster (tried again); the feed's own problems are its
/// status.
fn build_shared(
    jobs: &AccountJobs,
    job: &FeedJob,
    tools: &Tools<'_>,
) -> Result<SharedBuild, ReplicationError> {
    let failed = |status| SharedBuild {
        status,
        catalogue: None,
        users: None,
    };
    let mut bytes = if job.streamed {
        let path = jobs.streamed_feed_path(&job.token);
        if !jobs.fetch_feed_body(&job.token, &path)? {
            return Ok(failed(FeedStatus::Failed(
                "the streamed feed's body is neither on this node nor shared".to_owned(),
            )));
        }
        let bytes = read_streamed(&path);
        let _ = std::fs::remove_file(&path);
        match bytes {
            Ok(bytes) => bytes,
            Err(status) => return Ok(failed(status)),
        }
    } else {
        match download(jobs, job, tools) {
            Ok(bytes) => bytes,
            Err(status) => return Ok(failed(status)),
        }
    };
    if job.streamed && StreamKind::of_name(&job.token) == Some(StreamKind::Orders) {
        return Ok(failed(import_orders(jobs, &bytes)));
    }
    let (mut document, report) = match parse(jobs, &mut bytes, tools.pool, &|_| {}) {
        Ok(parsed) => parsed,
        Err(status) => return Ok(failed(status)),
    };
    let users = document.users.take();
    let current = jobs.account().catalogue();
    match tools.pool.install(|| feed::build(&current, &document)) {
        Ok(catalogue) => Ok(SharedBuild {
            status: complete(&report),
            catalogue: Some(catalogue),
            users,
        }),
        Err(error) => Ok(failed(FeedStatus::Failed(error.to_string()))),
    }
}

/// A streamed feed's body; a failure is the job's outcome.
fn read_streamed(path: &std::path::Path) -> Result<Vec<u8>, FeedStatus> {
    std::fs::read(path).map_err(|error| {
        FeedStatus::Failed(format!("the streamed feed could not be read: {error}"))
    })
}

/// A feed streamed by the plugins: the JSON kinds go through [`apply`], the order
/// history is imported; the stream file is removed once its outcome is known.
fn run_streamed(jobs: &AccountJobs, token: &str, pool: &rayon::ThreadPool) -> FeedStatus {
    let path = jobs.streamed_feed_path(token);
    let status = match read_streamed(&path) {
        Ok(bytes) if StreamKind::of_name(token) == Some(StreamKind::Orders) => {
            import_orders(jobs, &bytes)
        }
        Ok(mut bytes) => apply(jobs, &mut bytes, pool, &|_| {}),
        Err(status) => status,
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
    let (mut document, report) = match parse(jobs, bytes, pool, progress) {
        Ok(parsed) => parsed,
        Err(status) => return status,
    };
    let parsed = started.elapsed();
    let users = document.users.take();
    let rebuilt = jobs.rebuild(RebuildKind::Feed, |current| {
        let catalogue =
            feed::build(current, &document).map_err(|e| RebuildError::Build(e.to_string()))?;
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
    complete(&report)
}

/// Parses and validates a feed on `pool` (timed for `/metrics` when it reads); a feed
/// that does not read is the job's outcome.
fn parse(
    jobs: &AccountJobs,
    bytes: &mut [u8],
    pool: &rayon::ThreadPool,
    progress: feed::Progress<'_>,
) -> Result<(feed::FeedDocument, feed::FeedReport), FeedStatus> {
    let started = std::time::Instant::now();
    let parsed = pool
        .install(|| feed::parse_with_progress(bytes, progress))
        .map_err(|error| FeedStatus::Failed(error.to_string()));
    if parsed.is_ok() {
        jobs.metrics()
            .feed_parse_seconds
            .observe(started.elapsed().as_secs_f64());
    }
    parsed
}

/// The outcome of a feed that was applied: what was skipped, if anything.
fn complete(report: &feed::FeedReport) -> FeedStatus {
    FeedStatus::Complete {
        detail: (!report.problems.is_empty()).then(|| report.summary()),
    }
}
