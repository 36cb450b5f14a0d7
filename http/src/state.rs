//! The server's shared state: the validated config, each account's engine state and job
//! queue, and the locked data directory.
//!
//! The configuration and the table of accounts are each behind an `ArcSwap`, so that a
//! reload ([`AppState::reload`], on SIGHUP) replaces them while requests are served: a
//! request reads the account it names once (an `Arc<AccountEntry>`) and finishes with
//! it even if a reload replaces or removes it meanwhile. An account's engine state,
//! jobs, text cache and metrics live on across reloads that change its keys or zones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use vitrine_engine::Account;
use vitrine_engine::catalogue::{CatalogueBuilder, CatalogueError};
use vitrine_engine::shards::TextHasher;
use vitrine_ingest::fetch::FetchLimits;
use vitrine_ingest::jobs::{AccountJobs, JobsConfig, SubmitError, ingest_pool_at};
use vitrine_ingest::runner::{FeedRunner, FeedSettings};
use vitrine_ingest::store;
use vitrine_snapshots::DataDir;
use vitrine_snapshots::wal::SyncPolicy;

use crate::api::clientside::limits::ClientsideState;
use crate::api::render::{Rendering, TextCache};
use crate::config::{AccountConfig, Config, EventsFsync, FeedConfig};
use crate::error::ApiError;
use crate::metrics::{AccountFigures, AccountMetrics, Metrics};
use crate::routes::Endpoint;

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
    pub product_texts: Arc<TextCache>,
    /// What the server measures of it (the engine and jobs keep their own).
    pub metrics: Arc<AccountMetrics>,
    /// Its browser requests' limits and zone templates.
    pub clientside: ClientsideState,
    /// Its rate limiters, by [`Endpoint::index`] (`None`: not limited).
    limiters: Vec<Option<Limiter>>,
    /// Where the co-view list setting self-tuning chose is kept.
    pub tuned: Arc<crate::tuned::TunedFile>,
    /// The html templates of its campaigns.
    pub campaign_templates: crate::api::render::CampaignTemplates,
}

/// Product texts a models round writes ahead of the requests at most: a round that
/// writes them all takes about 0.15 s of a core (some 7 µs each, with their prices),
/// and once every product's is kept a round only looks them over.
pub const TEXTS_PREPARED_PER_ROUND: usize = 20_000;

/// A token bucket of one endpoint of an account.
type Limiter = governor::DefaultDirectRateLimiter;

impl AccountEntry {
    /// What `/metrics` reads of it.
    pub fn figures(&self) -> AccountFigures<'_> {
        AccountFigures {
            key: &self.config.access_key,
            engine: &self.account,
            jobs: &self.jobs,
            text_cache_bytes: self.product_texts.kept_bytes(),
            metrics: &self.metrics,
            rate_limits: &self.config.rate_limits,
        }
    }

    /// One models round of the account, off the request path (the server runs one per
    /// account every [`crate::server::MODELS_REBUILD`], on the ingest pool): its models
    /// rebuilt, the tuned settings kept, up to [`TEXTS_PREPARED_PER_ROUND`] more product
    /// texts of the catalogue served written ahead of the requests (with their prices
    /// in the default currency), and the replaced text caches freed.
    pub fn models_round(&self) {
        let started = std::time::Instant::now();
        if self.account.rebuild_models() {
            self.metrics
                .model_rebuild_seconds
                .observe(started.elapsed().as_secs_f64());
        }
        self.tuned.keep(&self.account);
        let currency = self.account.settings().default_currency;
        self.product_texts.prepare(
            &self.account.catalogue(),
            currency,
            TEXTS_PREPARED_PER_ROUND,
        );
        self.product_texts.sweep();
    }

    /// What its zones are rendered with.
    pub fn rendering(&self) -> Rendering<'_> {
        Rendering {
            texts: &self.product_texts,
            templates: &self.templates,
            content: &self.config.content,
            campaign_templates: &self.campaign_templates,
        }
    }

    /// Takes one request to `endpoint` out of its rate limit: refused with the seconds
    /// until one is allowed (at least 1) when the bucket is empty; counted.
    pub fn admit(&self, endpoint: Endpoint) -> Result<(), ApiError> {
        let Some(Some(limiter)) = self.limiters.get(endpoint.index()) else {
            return Ok(());
        };
        match limiter.check() {
            Ok(()) => Ok(()),
            Err(not_until) => {
                self.metrics.rate_limited(endpoint);
                let seconds = retry_seconds(&not_until);
                let limit = self
                    .config
                    .rate_limits
                    .iter()
                    .find(|(e, _)| *e == endpoint)
                    .map_or(0, |(_, limit)| limit.per_second);
                Err(ApiError::RateLimited(
                    format!(
                        "rate limit of {limit} requests per second on {} exceeded for this account; retry after {seconds} s",
                        endpoint.name()
                    ),
                    seconds,
                ))
            }
        }
    }
}

/// The rate limiters of an account's configuration, by endpoint.
fn limiters(config: &AccountConfig) -> Vec<Option<Limiter>> {
    Endpoint::ALL
        .iter()
        .map(|endpoint| {
            let (_, limit) = config.rate_limits.iter().find(|(e, _)| e == endpoint)?;
            Some(governor::RateLimiter::direct(limit.quota()))
        })
        .collect()
}

/// Whole seconds until a rate limit lets a request in again (at least 1), for
/// `Retry-After`.
pub fn retry_seconds(
    not_until: &governor::NotUntil<
        <governor::clock::DefaultClock as governor::clock::Clock>::Instant,
    >,
) -> u32 {
    use governor::clock::Clock;
    let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
    u32::try_from(wait.as_secs())
        .unwrap_or(u32::MAX)
        .saturating_add(u32::from(wait.subsec_nanos() > 0))
        .max(1)
}

/// The accounts served, by access key (looked up on every request: hashed as the
/// engine's maps of outside keys are).
type Accounts = HashMap<String, Arc<AccountEntry>, TextHasher>;

/// Everything a request handler may need.
#[derive(Debug)]
pub struct AppState {
    /// The configuration in force.
    config: ArcSwap<Config>,
    /// Request counts and durations, and the registry `/metrics` reads.
    pub metrics: Metrics,
    accounts: ArcSwap<Accounts>,
    runner: FeedRunner,
    pool: Arc<rayon::ThreadPool>,
    /// Held for a whole reload: one at a time.
    reloading: parking_lot::Mutex<()>,
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
                    addresses: config.feed_addresses,
                },
                priority: feeds.background_priority,
            },
            Arc::clone(&pool),
        )
        .map_err(StartError::Threads)?;
        let mut accounts =
            Accounts::with_capacity_and_hasher(config.accounts.len(), TextHasher::default());
        for account_config in &config.accounts {
            let entry = open_account(&config, account_config, data_dir.path(), &pool, &runner)
                .map_err(|source| StartError::Account {
                    account: account_config.access_key.clone(),
                    source,
                })?;
            accounts.insert(account_config.access_key.clone(), Arc::new(entry));
        }
        Ok(AppState {
            config: ArcSwap::from_pointee(config),
            metrics: Metrics::new(),
            accounts: ArcSwap::from_pointee(accounts),
            runner,
            pool,
            reloading: parking_lot::Mutex::new(()),
            _data_dir: data_dir,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> Guard<Arc<Config>> {
        self.config.load()
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
    pub fn account(&self, access_key: &str) -> Option<Arc<AccountEntry>> {
        self.accounts.load().get(access_key).cloned()
    }

    /// Every account served now.
    pub fn accounts(&self) -> Vec<Arc<AccountEntry>> {
        // By access key: the same order on every run (the dashboard opens on the first).
        let mut accounts: Vec<Arc<AccountEntry>> = self.accounts.load().values().cloned().collect();
        accounts.sort_by(|a, b| a.config.access_key.cmp(&b.config.access_key));
        accounts
    }

    /// Hands a journaled feed job to the feed runner.
    pub fn run_feed(&self, entry: &AccountEntry, token: String) {
        self.runner.enqueue(Arc::clone(&entry.jobs), token);
    }

    /// A cluster's node, once an account has joined: feed jobs read from the account's
    /// replicated log go to the feed runner, and so do the unfinished ones of its files.
    pub fn share_feeds(self: &Arc<Self>, entry: &AccountEntry) {
        let state = Arc::downgrade(self);
        let jobs = Arc::downgrade(&entry.jobs);
        entry.jobs.on_replicated_feed(move |token| {
            if let (Some(state), Some(jobs)) = (state.upgrade(), jobs.upgrade()) {
                state.runner.enqueue(jobs, token);
            }
        });
        for job in entry.jobs.queued_feeds() {
            self.runner.enqueue(Arc::clone(&entry.jobs), job.token);
        }
    }

    /// Stops the job queues, applying every delta already accepted.
    pub fn shutdown(&self) {
        self.runner.shutdown();
        for entry in self.accounts() {
            entry.jobs.shutdown();
        }
    }

    /// Puts `config` in force without a restart: accounts added are opened (their data,
    /// log and threads, as on start), accounts removed stop taking requests (their jobs
    /// stop once the deltas they accepted are applied; their data stays on disk),
    /// accounts changed get their new keys, region, currency, zones and content (their
    /// state, jobs and caches are kept); limits and the other reloadable settings apply
    /// to the next request. Settings that only a restart can change (addresses, data
    /// directory, durability, threads) must be unchanged. On any error nothing changes
    /// and the configuration in force stays.
    pub fn reload(&self, config: Config) -> Result<ReloadReport, ReloadError> {
        let _one = self.reloading.lock();
        let current = self.config.load_full();
        let fixed = restart_only_changes(&current, &config);
        if !fixed.is_empty() {
            return Err(ReloadError::NeedsRestart(fixed));
        }
        let old = self.accounts.load_full();
        let mut accounts =
            Accounts::with_capacity_and_hasher(config.accounts.len(), TextHasher::default());
        let mut report = ReloadReport::default();
        let mut opened = Vec::new();
        for account_config in &config.accounts {
            let key = &account_config.access_key;
            let entry = match old.get(key) {
                Some(entry) if entry.config == *account_config => Arc::clone(entry),
                Some(entry) => {
                    report.changed.push(key.clone());
                    Arc::new(changed_account(entry, account_config).map_err(|source| {
                        ReloadError::Account {
                            account: key.clone(),
                            source,
                        }
                    })?)
                }
                None => {
                    report.added.push(key.clone());
                    let opened_entry = open_account(
                        &config,
                        account_config,
                        self.data_dir(),
                        &self.pool,
                        &self.runner,
                    );
                    match opened_entry {
                        Ok(entry) => {
                            let entry = Arc::new(entry);
                            opened.push(Arc::clone(&entry));
                            entry
                        }
                        Err(source) => {
                            // Those opened for this reload stop again.
                            for entry in opened {
                                entry.jobs.shutdown();
                            }
                            return Err(ReloadError::Account {
                                account: key.clone(),
                                source,
                            });
                        }
                    }
                }
            };
            accounts.insert(key.clone(), entry);
        }
        let removed: Vec<Arc<AccountEntry>> = old
            .iter()
            .filter(|(key, _)| !accounts.contains_key(*key))
            .map(|(_, entry)| Arc::clone(entry))
            .collect();
        // Engine settings first: a request that reads the new entry serves its zones.
        for key in &report.changed {
            if let Some(entry) = accounts.get(key) {
                entry.account.replace_settings(entry.config.settings());
                // The live campaigns stay; compiled again against the new zones and
                // time zone (a list of a zone the file no longer has goes inert).
                vitrine_ingest::jobs::recompile_campaigns(&entry.account);
            }
        }
        for entry in accounts.values() {
            entry
                .jobs
                .set_max_log_backlog(config.limits.max_log_backlog as u64);
        }
        self.accounts.store(Arc::new(accounts));
        self.config.store(Arc::new(config));
        for entry in removed {
            report.removed.push(entry.config.access_key.clone());
            entry.jobs.shutdown();
        }
        report.added.sort();
        report.changed.sort();
        report.removed.sort();
        Ok(report)
    }
}

/// What a reload changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReloadReport {
    /// Accounts opened, by access key.
    pub added: Vec<String>,
    /// Accounts whose keys, region, currency, zones or content changed.
    pub changed: Vec<String>,
    /// Accounts no longer served.
    pub removed: Vec<String>,
}

impl std::fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |keys: &[String]| {
            if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.join(", ")
            }
        };
        write!(
            f,
            "accounts added: {}; changed: {}; removed: {}",
            list(&self.added),
            list(&self.changed),
            list(&self.removed)
        )
    }
}

/// Why a reload was refused (the configuration in force stays).
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The new configuration changes settings that need a restart.
    #[error("only a restart can change {}", .0.join(", "))]
    NeedsRestart(Vec<String>),
    /// A new or changed account could not be set up.
    #[error("account {account}: {source}")]
    Account {
        /// Its access key.
        account: String,
        /// What failed.
        source: AccountError,
    },
}

/// The keys of settings that differ between `old` and `new` and that only a restart
/// can change: the sockets, the data directory, durability (the logs are open under
/// it), the compaction thresholds and feed settings the accounts' threads were started
/// with, and the connection settings of the accept loop.
fn restart_only_changes(old: &Config, new: &Config) -> Vec<String> {
    let mut changed = Vec::new();
    let mut check = |key: &str, same: bool| {
        if !same {
            changed.push(key.to_owned());
        }
    };
    check("listen", old.listen == new.listen);
    check("metrics_listen", old.metrics_listen == new.metrics_listen);
    check("sftp", old.sftp == new.sftp);
    check("tls", old.tls == new.tls);
    check("data_dir", old.data_dir == new.data_dir);
    check("cpu_layout", old.cpu_layout == new.cpu_layout);
    check(
        "durability.events_fsync",
        old.events_fsync == new.events_fsync,
    );
    check(
        "durability.fsync_interval_ms",
        old.fsync_interval_ms == new.fsync_interval_ms,
    );
    check(
        "durability.wal_segment_bytes",
        old.wal_segment_bytes == new.wal_segment_bytes,
    );
    check(
        "durability.state_snapshot_interval_secs",
        old.state_snapshot_interval_secs == new.state_snapshot_interval_secs,
    );
    check("deltas", old.deltas == new.deltas);
    check(
        "limits.max_connections",
        old.limits.max_connections == new.limits.max_connections,
    );
    check(
        "limits.header_read_timeout_ms",
        old.limits.header_read_timeout_ms == new.limits.header_read_timeout_ms,
    );
    check(
        "feeds (other than allow_private_addresses and stream_idle_secs)",
        FeedConfig {
            stream_idle_secs: 0,
            ..old.feeds
        } == FeedConfig {
            stream_idle_secs: 0,
            ..new.feeds
        },
    );
    changed
}

/// An account's entry with a new configuration, keeping its state, jobs and caches.
fn changed_account(
    entry: &AccountEntry,
    config: &AccountConfig,
) -> Result<AccountEntry, AccountError> {
    Ok(AccountEntry {
        config: config.clone(),
        account: Arc::clone(&entry.account),
        jobs: Arc::clone(&entry.jobs),
        templates: templates(config)?,
        clientside: ClientsideState::new(&config.clientside)?,
        product_texts: Arc::clone(&entry.product_texts),
        metrics: Arc::clone(&entry.metrics),
        limiters: limiters(config),
        tuned: Arc::clone(&entry.tuned),
        campaign_templates: Default::default(),
    })
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
    let account = Arc::new(Account::new(account_config.settings(), catalogue));
    account.set_zone_cache_bytes(config.memory.zone_cache_bytes);
    let tuned = Arc::new(crate::tuned::TunedFile::restore(dir.clone(), &account));
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
    jobs.set_max_log_backlog(config.limits.max_log_backlog as u64);
    // A cluster's node queues them once it has joined (`AppState::share_feeds`): built
    // for the cluster, not on their own.
    if config.cluster.is_none() {
        for job in jobs.queued_feeds() {
            runner.enqueue(Arc::clone(&jobs), job.token);
        }
    }
    Ok(AccountEntry {
        config: account_config.clone(),
        jobs,
        templates: templates(account_config)?,
        clientside: ClientsideState::new(&account_config.clientside)?,
        product_texts: Arc::new(TextCache::new(account.catalogue())),
        metrics: Arc::new(AccountMetrics::default()),
        limiters: limiters(account_config),
        tuned,
        account,
        campaign_templates: Default::default(),
    })
}

/// The html zones' templates of an account, in the one html template environment
/// ([`vitrine_ingest::templates`]).
fn templates(config: &AccountConfig) -> Result<minijinja::Environment<'static>, minijinja::Error> {
    let mut env = vitrine_ingest::templates::environment();
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
