//! The server's shared state: the validated config, each account's engine state and job
//! queue, and the locked data directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use vitrine_engine::catalogue::{CatalogueBuilder, CatalogueError};
use vitrine_engine::{Account, AccountSettings};
use vitrine_ingest::fetch::FetchLimits;
use vitrine_ingest::jobs::{AccountJobs, JobsConfig, SubmitError, ingest_pool_at};
use vitrine_ingest::runner::{FeedRunner, FeedSettings};
use vitrine_ingest::store;
use vitrine_snapshots::DataDir;
use vitrine_snapshots::wal::SyncPolicy;

use crate::api::render::TextCache;
use crate::config::{AccountConfig, Config, EventsFsync};
use crate::metrics::{AccountMetrics, Metrics};

/// One account as the server holds it.
#[derive(Debug)]
pub struct AccountEntry {
    /// Its configuration (keys, region, zones).
    pub config: AccountConfig,
    /// Its engine state.
    pub account: Arc<Account>,
    /// Its delta and feed jobs.
    pub jobs: Arc<AccountJobs>,
    /// The templates of its html zones, named by zone id.
    pub templates: minijinja::Environment<'static>,
    /// Product text of the latest catalogue version served.
    pub product_texts: TextCache,
    /// What the server measures of it (the engine and jobs keep their own).
    pub metrics: AccountMetrics,
}

/// Everything a request handler may need.
#[derive(Debug)]
pub struct AppState {
    /// The validated configuration.
    pub config: Config,
    /// Request counts and durations, and the registry `/metrics` reads.
    pub metrics: Metrics,
    accounts: HashMap<String, AccountEntry>,
    runner: FeedRunner,
    pool: Arc<rayon::ThreadPool>,
    _data_dir: DataDir,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data directory could not be opened or locked.
    #[error("the data directory: {0}")]
    DataDir(#[source] vitrine_snapshots::Error),
    /// The ingest pool or the feed runner could not be started.
    #[error("the ingest threads could not start: {0}")]
    Threads(#[source] std::io::Error),
    /// An account could not be set up.
    #[error("account {account}: {source}")]
    Account {
        /// Its access key.
        account: String,
        /// What failed.
        source: AccountError,
    },
}

/// What failed while an account was set up.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// Its snapshots could not be read.
    #[error("restoring the catalogue: {0}")]
    Restore(#[from] store::StoreError),
    /// Its starting catalogue (demo or empty) could not be built.
    #[error("building the starting catalogue: {0}")]
    Catalogue(#[from] CatalogueError),
    /// The data directory's erasure key could not be read or made.
    #[error("the erasure key: {0}")]
    Key(#[from] vitrine_snapshots::Error),
    /// Its log could not be opened or replayed, or its threads started.
    #[error("starting its jobs: {0}")]
    Jobs(#[from] SubmitError),
    /// An html zone's template does not compile.
    #[error("a zone template: {0}")]
    Template(#[from] minijinja::Error),
}

impl AppState {
    /// Opens the data directory and sets up every configured account.
    pub fn open(config: Config) -> Result<AppState, StartError> {
        let data_dir = DataDir::open(&config.data_dir).map_err(StartError::DataDir)?;
        let feeds = config.feeds;
        let pool = ingest_pool_at(feeds.ingest_threads, feeds.background_priority)
            .map_err(StartError::Threads)?;
        let runner = FeedRunner::start(
            FeedSettings {
                limits: FetchLimits {
                    max_bytes: feeds.max_bytes,
                    total_timeout: std::time::Duration::from_secs(feeds.fetch_timeout_secs),
                    connect_timeout: std::time::Duration::from_secs(feeds.connect_timeout_secs),
                    max_redirects: feeds.max_redirects,
                    allow_private: config.allow_private_feed_addresses,
                },
                priority: feeds.background_priority,
            },
            Arc::clone(&pool),
        )
        .map_err(StartError::Threads)?;
        let mut accounts = HashMap::with_capacity(config.accounts.len());
        for account_config in &config.accounts {
            let entry = open_account(&config, account_config, data_dir.path(), &pool, &runner)
                .map_err(|source| StartError::Account {
                    account: account_config.access_key.clone(),
                    source,
                })?;
            accounts.insert(account_config.access_key.clone(), entry);
        }
        Ok(AppState {
            config,
            metrics: Metrics::new(),
            accounts,
            runner,
            pool,
            _data_dir: data_dir,
        })
    }

    /// The ingest pool (feeds, compactions, model rebuilds).
    pub fn pool(&self) -> &rayon::ThreadPool {
        &self.pool
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        self._data_dir.path()
    }

    /// The account of an access key.
    pub fn account(&self, access_key: &str) -> Option<&AccountEntry> {
        self.accounts.get(access_key)
    }

    /// Every account.
    pub fn accounts(&self) -> impl Iterator<Item = &AccountEntry> {
        self.accounts.values()
    }

    /// Hands a journaled feed job to the feed runner.
    pub fn run_feed(&self, entry: &AccountEntry, token: String) {
        self.runner.enqueue(Arc::clone(&entry.jobs), token);
    }

    /// Stops the job queues, applying every delta already accepted.
    pub fn shutdown(&self) {
        self.runner.shutdown();
        for entry in self.accounts.values() {
            entry.jobs.shutdown();
        }
    }
}

/// Restores one account from its files (or its starting catalogue), starts its jobs and
/// queues its unfinished feeds.
fn open_account(
    config: &Config,
    account_config: &AccountConfig,
    data_dir: &Path,
    pool: &Arc<rayon::ThreadPool>,
    runner: &FeedRunner,
) -> Result<AccountEntry, AccountError> {
    let dir = account_dir(data_dir, &account_config.access_key);
    let key = &account_config.access_key;
    let (restored, skipped) = store::restore(&dir)?;
    for problem in &skipped {
        tracing::warn!(account = %key, "skipping snapshot: {problem}");
    }
    let (catalogue, base_position) = match restored {
        Some(restored) => {
            tracing::info!(account = %key, snapshot = %restored.path.display(), "catalogue restored");
            (restored.catalogue, restored.position)
        }
        None if account_config.demo_catalogue => (vitrine_engine::demo::catalogue()?, 0),
        None => (CatalogueBuilder::new().build()?, 0),
    };
    let settings = AccountSettings {
        access_key: account_config.access_key.clone(),
        default_currency: account_config.default_currency,
        zones: account_config.zones.clone(),
    };
    let account = Arc::new(Account::new(settings, catalogue));
    let (users, problems) = store::restore_users(&dir);
    for problem in &problems {
        tracing::warn!(account = %key, "users: {problem}");
    }
    account.replace_users(users);
    let (jobs, recovery) = AccountJobs::start(
        Arc::clone(&account),
        &dir,
        base_position,
        jobs_config(config, Arc::clone(pool))?,
    )?;
    if let Some(resumed) = &recovery.resumed {
        tracing::warn!(account = %key, "write-ahead log: {resumed}");
    }
    if let Some(cut) = &recovery.truncated {
        tracing::warn!(account = %key, "write-ahead log: {cut}");
    }
    for problem in &recovery.problems {
        tracing::warn!(account = %key, "write-ahead log: {problem}");
    }
    if let Some(restored) = &recovery.state {
        tracing::info!(account = %key, snapshot = %restored.path.display(), entries = restored.entries, "tracking state restored");
    }
    tracing::info!(
        account = %account_config.access_key,
        deltas = recovery.deltas,
        events = recovery.events,
        feeds = recovery.feeds,
        products = account.catalogue().len(),
        "account ready"
    );
    let jobs = Arc::new(jobs);
    for job in jobs.queued_feeds() {
        runner.enqueue(Arc::clone(&jobs), job.token);
    }
    Ok(AccountEntry {
        config: account_config.clone(),
        jobs,
        templates: templates(account_config)?,
        product_texts: TextCache::new(account.catalogue()),
        metrics: AccountMetrics::default(),
        account,
    })
}

/// The html zones' templates of an account: auto-escaped as HTML, an undefined variable
/// is an error rather than silently empty.
fn templates(config: &AccountConfig) -> Result<minijinja::Environment<'static>, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for (zone, content) in &config.content {
        if let Some(template) = &content.template {
            env.add_template_owned(zone.clone(), template.clone())?;
        }
    }
    Ok(env)
}

/// The settings of every account's jobs, from the configuration.
/// Fails when the data directory's erasure key cannot be read or made.
pub fn jobs_config(
    config: &Config,
    pool: Arc<rayon::ThreadPool>,
) -> Result<JobsConfig, vitrine_snapshots::Error> {
    let sync = match config.events_fsync {
        EventsFsync::Always => SyncPolicy::Always,
        EventsFsync::Interval => {
            SyncPolicy::Interval(std::time::Duration::from_millis(config.fsync_interval_ms))
        }
        EventsFsync::Never => SyncPolicy::Never,
    };
    Ok(JobsConfig {
        wal_segment_bytes: config.wal_segment_bytes,
        sync,
        compact_after_changes: config.deltas.compact_after_changes,
        compact_interval: std::time::Duration::from_secs(config.deltas.compact_interval_secs),
        state_interval: std::time::Duration::from_secs(config.state_snapshot_interval_secs),
        erasure_key: vitrine_ingest::erasure::key(&config.data_dir)?,
        pool,
    })
}

/// The directory of an account's files: `accounts/<access key in hex>`, so that any
/// access key makes a safe file name.
pub fn account_dir(data_dir: &Path, access_key: &str) -> PathBuf {
    let hex: String = access_key.bytes().map(|b| format!("{b:02x}")).collect();
    data_dir.join("accounts").join(hex)
}
