//! Server configuration: a TOML file (or the embedded demo), environment overrides, and
//! validation into [`Config`].
//!
//! Precedence for `listen` and `data_dir`: command line, then `VITRINE_LISTEN` /
//! `VITRINE_DATA_DIR`, then the file, then the defaults. Every error names the file,
//! the key and what is wrong, e.g.
//! `vitrine.toml: accounts[0].zones[1].count: must be between 1 and 100, got 0`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use vitrine_ingest::jobs::BackgroundPriority;

use serde::Deserialize;
use vitrine_engine::event::PageType;
use vitrine_engine::experiment::{Experiment, Variant};
use vitrine_engine::models::ModelSettings;
use vitrine_engine::money::Currency;
use vitrine_engine::visitor::MAX_RECENT_VIEWS;
use vitrine_engine::zone::{
    DEFAULT_CONTENT, DEFAULT_HISTORY, DEFAULT_LONG_TERM, DEFAULT_RECENCY, Strategy, ZoneKind,
    ZoneSpec,
};

use crate::error::Endpoint;

/// The demo configuration used when no `--config` is given.
pub const DEMO_CONFIG: &str = include_str!("demo.toml");
/// Name under which errors in the demo configuration are reported.
pub const DEMO_CONFIG_NAME: &str = "<embedded demo config>";
/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7480";
/// Default data directory.
pub const DEFAULT_DATA_DIR: &str = "data";

/// A configuration error: the source, the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (or other source) the value came from.
    pub source: String,
    /// The key, e.g. `accounts[0].zones[1].strategy`; empty for the whole file.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.source, self.message)
        } else {
            write!(f, "{}: {}: {}", self.source, self.key, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Which region this process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// EU (Ireland).
    Eu,
    /// US (Virginia).
    Us,
}

impl Region {
    fn parse(text: &str) -> Option<Region> {
        match text {
            "eu" => Some(Region::Eu),
            "us" => Some(Region::Us),
            _ => None,
        }
    }

    /// The config name, `eu` or `us`.
    pub fn name(self) -> &'static str {
        match self {
            Region::Eu => "eu",
            Region::Us => "us",
        }
    }
}

/// When acknowledged events are fsynced (effective once events go to the write-ahead log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventsFsync {
    /// Before the 200.
    Always,
    /// At most `fsync_interval_ms` after the 200.
    Interval,
    /// Left to the operating system.
    Never,
}

/// Request size and count limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body except deltas (413 beyond).
    pub max_body_bytes: usize,
    /// Largest delta body (413 beyond).
    pub max_delta_bytes: usize,
    /// Most events per server-side request (400 beyond).
    pub max_events: usize,
    /// Most zones per server-side request (400 beyond).
    pub max_zones: usize,
    /// Most tokens per status request (400 beyond).
    pub max_tokens: usize,
    /// Most connections served at once; 0 for automatic (the open-file limit, raised to
    /// its hard limit at start, less a reserve for the server's own files). Beyond it,
    /// new connections wait in the listen backlog; existing ones are served.
    pub max_connections: usize,
    /// A client must send a request's whole header within this many milliseconds of
    /// starting it, or of its previous response on a kept-alive connection (so idle
    /// and slow connections are closed).
    pub header_read_timeout_ms: u64,
    /// Records an account's log writer may have waiting to be written (events appended
    /// without waiting for the disk); beyond it, requests that would add one get 503
    /// with `Retry-After` instead of queueing without bound behind a slow disk.
    pub max_log_backlog: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_body_bytes: 1024 * 1024,
            max_delta_bytes: 8 * 1024 * 1024,
            max_events: 100,
            max_zones: 32,
            max_tokens: 1000,
            max_connections: 0,
            header_read_timeout_ms: 10_000,
            max_log_backlog: 100_000,
        }
    }
}

/// `[feeds]`: download limits and the ingest pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedConfig {
    /// Largest feed accepted, in bytes.
    pub max_bytes: u64,
    /// Whole download timeout, in seconds.
    pub fetch_timeout_secs: u64,
    /// Connect timeout, in seconds.
    pub connect_timeout_secs: u64,
    /// Redirects followed.
    pub max_redirects: usize,
    /// Threads of the ingest pool (default: all cores but one, at least one).
    pub ingest_threads: usize,
    /// A second address serving only the streamed-feed paths (`/feed-create`,
    /// `/feed-append`, `/feed-close`), as the vendor keeps feeds on another host and
    /// port; they are on the main address too.
    pub stream_listen: Option<SocketAddr>,
    /// A streamed feed whose last piece came longer ago than this is removed.
    pub stream_idle_secs: u64,
    /// Priority of feed builds, compactions and model rebuilds.
    pub background_priority: BackgroundPriority,
}

/// `[deltas]`: when the delta overlay is folded into a new base snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeltaConfig {
    /// Compact once the overlay holds this many changes (products changed plus
    /// account-price entries).
    pub compact_after_changes: usize,
    /// Compact a non-empty overlay at least this often, in seconds.
    pub compact_interval_secs: u64,
}

/// One configured store account.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountConfig {
    /// Access key (`appId`, `appKey`, `AppKey`, `AccessKey` on the wire).
    pub access_key: String,
    /// Secret key.
    pub secret_key: String,
    /// Region of the account.
    pub region: Region,
    /// Currency of requests that name none.
    pub default_currency: Currency,
    /// Whether the account starts with the generated demo catalogue.
    pub demo_catalogue: bool,
    /// Its zones.
    pub zones: Vec<ZoneSpec>,
    /// Content of its image, image-carousel and html zones, by zone id.
    pub content: HashMap<String, ZoneContent>,
    /// Request rate limits by endpoint (endpoints without one are not limited).
    pub rate_limits: Vec<(Endpoint, RateLimit)>,
    /// Visitors (and sessions) kept in memory at most; `memory.max_visitors` unless the
    /// account sets its own.
    pub max_visitors: usize,
    /// `[accounts.models]`: how much of the co-view and co-purchase models it keeps.
    pub models: ModelSettings,
    /// Days after a zone answer within which basket adds and order lines of the products
    /// it showed are credited to it.
    pub attribution_days: u32,
    /// `[[accounts.experiments]]`: A/B tests of its zones' strategies.
    pub experiments: Vec<Experiment>,
    /// Whether zone answers are recorded for analytics.
    pub zone_analytics: bool,
}

/// `[memory]`: how much per-visitor state is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryConfig {
    /// Visitors kept per account unless the account says otherwise.
    pub max_visitors: usize,
    /// A visitor not seen for this many days is dropped.
    pub visitor_retention_days: u64,
    /// Order ids remembered per account for de-duplication.
    pub max_order_ids: usize,
    /// A budget for the whole process's resident memory, in MiB: above it, each
    /// account's least recently seen visitors are evicted, a tenth at a time.
    pub max_rss_mb: Option<u64>,
}

impl Default for MemoryConfig {
    fn default() -> MemoryConfig {
        MemoryConfig {
            max_visitors: 1_000_000,
            visitor_retention_days: 90,
            max_order_ids: 1_000_000,
            max_rss_mb: None,
        }
    }
}

/// A token bucket: `per_second` requests a second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests a second, sustained.
    pub per_second: u32,
    /// Requests allowed at once after a quiet spell (the bucket's size).
    pub burst: u32,
}

/// Configured content of a zone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ZoneContent {
    /// `images` of image and image-carousel zones.
    pub images: Vec<ZoneImage>,
    /// `template` of an html zone (minijinja syntax, checked at load).
    pub template: Option<String>,
}

/// One configured image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneImage {
    /// `url` of the image.
    pub url: String,
    /// `link`: where a click goes (may be empty).
    pub link: String,
    /// `alt` text (may be empty).
    pub alt: String,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the configuration came from (a path, or the demo marker).
    pub source: String,
    /// Address to listen on.
    pub listen: SocketAddr,
    /// A second address serving only `/metrics` (and `/healthz`), if set; `/metrics` is
    /// then not on `listen`.
    pub metrics_listen: Option<SocketAddr>,
    /// Data directory.
    pub data_dir: PathBuf,
    /// Region this process serves.
    pub region: Region,
    /// Events fsync policy.
    pub events_fsync: EventsFsync,
    /// Interval of the `interval` policy.
    pub fsync_interval_ms: u64,
    /// Size at which the write-ahead log starts a new segment file.
    pub wal_segment_bytes: u64,
    /// Seconds between state snapshots (visitors, sessions, orders, model counters).
    pub state_snapshot_interval_secs: u64,
    /// Overlay compaction.
    pub deltas: DeltaConfig,
    /// Limits.
    pub limits: Limits,
    /// Whether feed URLs may point at private and loopback addresses.
    pub allow_private_feed_addresses: bool,
    /// Feed download and ingest settings.
    pub feeds: FeedConfig,
    /// Bounds on per-visitor state.
    pub memory: MemoryConfig,
    /// Accounts.
    pub accounts: Vec<AccountConfig>,
    /// `[admin] tokens`: the bearer tokens that open `/admin/` (none: it is closed).
    pub admin_tokens: Vec<String>,
    /// `[cluster]`: this server is a node of a cluster (none: one server on its own).
    pub cluster: Option<ClusterConfig>,
}

/// Shortest admin token accepted.
pub const MIN_ADMIN_TOKEN_LEN: usize = 24;

/// `[cluster]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The NATS servers, this node's id, the replication factor, the accounts served,
    /// the lag allowed at the ready line.
    pub settings: vitrine_cluster::ClusterSettings,
    /// How long a starting node waits for the NATS servers and to catch up before it
    /// gives up.
    pub join_timeout_secs: u64,
}

/// Values that override the file: from the command line or the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--listen` / `VITRINE_LISTEN`.
    pub listen: Option<String>,
    /// `--data-dir` / `VITRINE_DATA_DIR`.
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    metrics_listen: Option<String>,
    data_dir: Option<PathBuf>,
    region: Option<String>,
    #[serde(default)]
    durability: FileDurability,
    #[serde(default)]
    limits: FileLimits,
    #[serde(default)]
    deltas: FileDeltas,
    #[serde(default)]
    feeds: FileFeeds,
    #[serde(default)]
    memory: FileMemory,
    #[serde(default)]
    accounts: Vec<FileAccount>,
    #[serde(default)]
    admin: FileAdmin,
    cluster: Option<FileCluster>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCluster {
    #[serde(default)]
    servers: Vec<String>,
    node: Option<String>,
    replicas: Option<u64>,
    #[serde(default)]
    accounts: Vec<String>,
    ready_lag: Option<u64>,
    join_timeout_secs: Option<u64>,
    snapshot_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAdmin {
    #[serde(default)]
    tokens: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMemory {
    max_visitors: Option<u64>,
    visitor_retention_days: Option<u64>,
    max_order_ids: Option<u64>,
    max_rss_mb: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDurability {
    events_fsync: Option<String>,
    fsync_interval_ms: Option<u64>,
    wal_segment_bytes: Option<u64>,
    state_snapshot_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDeltas {
    compact_after_changes: Option<usize>,
    compact_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    max_body_bytes: Option<usize>,
    max_delta_bytes: Option<usize>,
    max_events: Option<usize>,
    max_zones: Option<usize>,
    max_tokens: Option<usize>,
    max_connections: Option<usize>,
    header_read_timeout_ms: Option<u64>,
    max_log_backlog: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFeeds {
    #[serde(default)]
    allow_private_addresses: bool,
    max_bytes: Option<u64>,
    fetch_timeout_secs: Option<u64>,
    connect_timeout_secs: Option<u64>,
    max_redirects: Option<usize>,
    ingest_threads: Option<usize>,
    stream_listen: Option<String>,
    stream_idle_secs: Option<u64>,
    background_priority: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAccount {
    access_key: String,
    secret_key: String,
    region: Option<String>,
    default_currency: String,
    #[serde(default)]
    demo_catalogue: bool,
    max_visitors: Option<u64>,
    #[serde(default)]
    rate_limits: BTreeMap<String, FileRateLimit>,
    #[serde(default)]
    zones: Vec<FileZone>,
    models: Option<FileModels>,
    attribution_days: Option<u64>,
    zone_analytics: Option<bool>,
    #[serde(default)]
    experiments: Vec<FileExperiment>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileExperiment {
    id: String,
    zone: String,
    start: Option<String>,
    end: Option<String>,
    #[serde(default)]
    variants: Vec<FileVariant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileVariant {
    name: String,
    weight: Option<i64>,
    strategy: Option<String>,
    fallback: Option<Vec<String>>,
    count: Option<i64>,
    history: Option<i64>,
    recency: Option<f64>,
    long_term: Option<f64>,
    context: Option<i64>,
    content: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModels {
    partners: Option<u64>,
    neighbours: Option<u64>,
    partner_damping: Option<f64>,
    seed_damping: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRateLimit {
    per_second: u64,
    burst: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileZone {
    id: String,
    title: String,
    #[serde(rename = "type")]
    kind: String,
    strategy: Option<String>,
    #[serde(default)]
    fallback: Vec<String>,
    count: Option<i64>,
    #[serde(default)]
    page_types: Vec<String>,
    #[serde(default)]
    images: Vec<FileImage>,
    template: Option<String>,
    history: Option<i64>,
    recency: Option<f64>,
    long_term: Option<f64>,
    context: Option<i64>,
    content: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileImage {
    url: String,
    #[serde(default)]
    link: String,
    #[serde(default)]
    alt: String,
}

/// Reads and validates a configuration file.
pub fn load_file(path: &Path, overrides: &Overrides) -> Result<Config, ConfigError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        source: source.clone(),
        key: String::new(),
        message: format!("cannot read the file: {e}"),
    })?;
    parse(&text, &source, overrides)
}

/// Validates the embedded demo configuration.
pub fn demo(overrides: &Overrides) -> Result<Config, ConfigError> {
    parse(DEMO_CONFIG, DEMO_CONFIG_NAME, overrides)
}

/// Parses and validates configuration text from `source`.
pub fn parse(text: &str, source: &str, overrides: &Overrides) -> Result<Config, ConfigError> {
    let err = |key: &str, message: String| ConfigError {
        source: source.to_owned(),
        key: key.to_owned(),
        message,
    };
    let file: FileConfig = toml::from_str(text).map_err(|e| {
        let message = e.message().to_owned();
        let location = e
            .span()
            .map(|span| {
                let line = text
                    .get(..span.start)
                    .map_or(1, |t| t.lines().count().max(1));
                format!(" (line {line})")
            })
            .unwrap_or_default();
        err("", format!("{message}{location}"))
    })?;

    let (listen_text, listen_key) = match &overrides.listen {
        Some(l) => (l.clone(), "--listen / VITRINE_LISTEN"),
        None => (
            file.listen
                .clone()
                .unwrap_or_else(|| DEFAULT_LISTEN.to_owned()),
            "listen",
        ),
    };
    let listen: SocketAddr = listen_text.parse().map_err(|_| {
        err(
            listen_key,
            format!("expected an address such as 127.0.0.1:7480, got {listen_text:?}"),
        )
    })?;
    let metrics_listen = match &file.metrics_listen {
        None => None,
        Some(text) => Some(text.parse().map_err(|_| {
            err(
                "metrics_listen",
                format!("expected an address such as 127.0.0.1:9480, got {text:?}"),
            )
        })?),
    };
    let data_dir = overrides
        .data_dir
        .clone()
        .or(file.data_dir)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
    if data_dir.as_os_str().is_empty() {
        return Err(err("data_dir", "must not be empty".to_owned()));
    }
    let region = match &file.region {
        None => Region::Eu,
        Some(r) => Region::parse(r)
            .ok_or_else(|| err("region", format!("expected \"eu\" or \"us\", got {r:?}")))?,
    };
    let durability = durability(&file.durability, &err)?;
    let deltas = delta_config(&file.deltas, &err)?;
    let limits = limits(&file.limits, &err)?;
    let feeds = feed_config(&file.feeds, &err)?;
    let memory = memory_config(&file.memory, &err)?;

    let accounts = accounts(&file.accounts, region, memory.max_visitors, &err)?;
    if accounts.is_empty() {
        return Err(err(
            "accounts",
            "at least one [[accounts]] entry is required".to_owned(),
        ));
    }
    let admin_tokens = admin_tokens(&file.admin, &accounts, &err)?;
    let cluster = match &file.cluster {
        None => None,
        Some(cluster) => Some(cluster_config(cluster, &accounts, &err)?),
    };
    Ok(Config {
        source: source.to_owned(),
        listen,
        metrics_listen,
        data_dir,
        region,
        events_fsync: durability.events_fsync,
        fsync_interval_ms: durability.fsync_interval_ms,
        wal_segment_bytes: durability.wal_segment_bytes,
        state_snapshot_interval_secs: durability.state_snapshot_interval_secs,
        deltas,
        limits,
        allow_private_feed_addresses: file.feeds.allow_private_addresses,
        feeds,
        memory,
        accounts,
        admin_tokens,
        cluster,
    })
}

/// `[cluster]`, validated: at least one NATS server URL, a node id usable in names,
/// a replication factor JetStream accepts (1..=5), accounts that exist.
fn cluster_config(
    file: &FileCluster,
    accounts: &[AccountConfig],
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<ClusterConfig, ConfigError> {
    if file.servers.is_empty() {
        return Err(err(
            "cluster.servers",
            "give at least one NATS server URL, such as \"nats://127.0.0.1:4222\"".to_owned(),
        ));
    }
    for (i, server) in file.servers.iter().enumerate() {
        if !vitrine_cluster::is_server_url(server) {
            return Err(err(
                &format!("cluster.servers[{i}]"),
                format!("expected a NATS URL such as \"nats://127.0.0.1:4222\", got {server:?}"),
            ));
        }
    }
    let node = file.node.clone().unwrap_or_default();
    if node.is_empty()
        || node.len() > 64
        || !node
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(err(
            "cluster.node",
            format!("expected 1 to 64 letters, digits, '-' or '_' naming this node, got {node:?}"),
        ));
    }
    let replicas =
        within(file.replicas.unwrap_or(3), 1, 5).map_err(|m| err("cluster.replicas", m))?;
    for (i, key) in file.accounts.iter().enumerate() {
        if !accounts.iter().any(|a| a.access_key == *key) {
            return Err(err(
                &format!("cluster.accounts[{i}]"),
                format!("no [[accounts]] entry has the access key {key:?}"),
            ));
        }
    }
    let ready_lag = within(file.ready_lag.unwrap_or(0), 0, 1_000_000_000)
        .map_err(|m| err("cluster.ready_lag", m))?;
    let join_timeout_secs = within(file.join_timeout_secs.unwrap_or(300), 1, 86_400)
        .map_err(|m| err("cluster.join_timeout_secs", m))?;
    let snapshot_interval_secs = within(file.snapshot_interval_secs.unwrap_or(300), 1, 86_400)
        .map_err(|m| err("cluster.snapshot_interval_secs", m))?;
    Ok(ClusterConfig {
        settings: vitrine_cluster::ClusterSettings {
            servers: file.servers.clone(),
            node,
            replicas: replicas as usize,
            accounts: file.accounts.clone(),
            ready_lag,
            snapshot_interval: std::time::Duration::from_secs(snapshot_interval_secs),
        },
        join_timeout_secs,
    })
}

/// `[admin] tokens`, validated: long enough to be secret, printable, and none of them a
/// store's key (the store keys must never open the admin API).
fn admin_tokens(
    file: &FileAdmin,
    accounts: &[AccountConfig],
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<Vec<String>, ConfigError> {
    for (i, token) in file.tokens.iter().enumerate() {
        let key = format!("admin.tokens[{i}]");
        if token.len() < MIN_ADMIN_TOKEN_LEN {
            return Err(err(
                &key,
                format!(
                    "must be at least {MIN_ADMIN_TOKEN_LEN} characters, got {}",
                    token.len()
                ),
            ));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(err(
                &key,
                "must be printable ASCII without spaces".to_owned(),
            ));
        }
        if accounts
            .iter()
            .any(|a| a.access_key == *token || a.secret_key == *token)
        {
            return Err(err(
                &key,
                "must not be an account's access key or secret key".to_owned(),
            ));
        }
        if file
            .tokens
            .get(..i)
            .is_some_and(|earlier| earlier.contains(token))
        {
            return Err(err(&key, "is given twice".to_owned()));
        }
    }
    Ok(file.tokens.clone())
}

/// The `[durability]` table, validated.
#[derive(Debug, Clone, Copy)]
struct Durability {
    events_fsync: EventsFsync,
    fsync_interval_ms: u64,
    wal_segment_bytes: u64,
    state_snapshot_interval_secs: u64,
}

fn durability(
    file: &FileDurability,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<Durability, ConfigError> {
    let events_fsync = match file.events_fsync.as_deref() {
        None | Some("interval") => EventsFsync::Interval,
        Some("always") => EventsFsync::Always,
        Some("never") => EventsFsync::Never,
        Some(other) => {
            return Err(err(
                "durability.events_fsync",
                format!("expected \"always\", \"interval\" or \"never\", got {other:?}"),
            ));
        }
    };
    let range = |key: &str, value: Option<u64>, default: u64, min: u64, max: u64| {
        within(value.unwrap_or(default), min, max).map_err(|message| err(key, message))
    };
    let fsync_interval_ms = range(
        "durability.fsync_interval_ms",
        file.fsync_interval_ms,
        10,
        1,
        10_000,
    )?;
    let wal_segment_bytes = range(
        "durability.wal_segment_bytes",
        file.wal_segment_bytes,
        64 << 20,
        4096,
        1 << 30,
    )?;
    let state_snapshot_interval_secs = range(
        "durability.state_snapshot_interval_secs",
        file.state_snapshot_interval_secs,
        60,
        1,
        86_400,
    )?;
    Ok(Durability {
        events_fsync,
        fsync_interval_ms,
        wal_segment_bytes,
        state_snapshot_interval_secs,
    })
}

fn delta_config(
    file: &FileDeltas,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<DeltaConfig, ConfigError> {
    let range = |key: &str, value: Option<u64>, default: u64, min: u64, max: u64| {
        within(value.unwrap_or(default), min, max).map_err(|message| err(key, message))
    };
    let compact_after_changes = range(
        "deltas.compact_after_changes",
        file.compact_after_changes.map(|n| n as u64),
        50_000,
        1,
        10_000_000,
    )? as usize;
    let compact_interval_secs = range(
        "deltas.compact_interval_secs",
        file.compact_interval_secs,
        300,
        1,
        86_400,
    )?;
    Ok(DeltaConfig {
        compact_after_changes,
        compact_interval_secs,
    })
}

/// The `[[accounts]]`, validated: keys unique, secrets long enough, zones well-formed.
fn accounts(
    file: &[FileAccount],
    region: Region,
    max_visitors: usize,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<Vec<AccountConfig>, ConfigError> {
    let mut accounts = Vec::with_capacity(file.len());
    let mut keys = HashSet::new();
    for (i, account) in file.iter().enumerate() {
        let key = |field: &str| format!("accounts[{i}].{field}");
        if account.access_key.trim().is_empty() {
            return Err(err(&key("access_key"), "must not be empty".to_owned()));
        }
        if !keys.insert(account.access_key.clone()) {
            return Err(err(
                &key("access_key"),
                format!("{:?} is used by an earlier account", account.access_key),
            ));
        }
        if account.secret_key.len() < 8 {
            return Err(err(
                &key("secret_key"),
                "must be at least 8 characters".to_owned(),
            ));
        }
        let account_region = match &account.region {
            None => region,
            Some(r) => Region::parse(r).ok_or_else(|| {
                err(
                    &key("region"),
                    format!("expected \"eu\" or \"us\", got {r:?}"),
                )
            })?,
        };
        let default_currency = Currency::from_code(&account.default_currency)
            .map_err(|e| err(&key("default_currency"), e.to_string()))?;
        let mut zones = Vec::with_capacity(account.zones.len());
        let mut content = HashMap::new();
        let mut zone_ids = HashSet::new();
        for (z, zone) in account.zones.iter().enumerate() {
            let zone_key = |field: &str| format!("accounts[{i}].zones[{z}].{field}");
            let spec = zone_spec(zone, &zone_key).map_err(|(k, m)| err(&k, m))?;
            let zone_content =
                zone_content(zone, spec.kind, &zone_key).map_err(|(k, m)| err(&k, m))?;
            if zone_content != ZoneContent::default() {
                content.insert(spec.id.clone(), zone_content);
            }
            if !zone_ids.insert(spec.id.clone()) {
                return Err(err(
                    &zone_key("id"),
                    format!("zone {:?} is defined twice", spec.id),
                ));
            }
            zones.push(spec);
        }
        let mut rate_limits = Vec::with_capacity(account.rate_limits.len());
        for (name, limit) in &account.rate_limits {
            let limit_key = |field: &str| key(&format!("rate_limits.{name}{field}"));
            let endpoint = Endpoint::of_config_name(name).ok_or_else(|| {
                let names: Vec<&str> = Endpoint::ALL
                    .iter()
                    .filter_map(|e| e.config_name())
                    .collect();
                err(
                    &limit_key(""),
                    format!("unknown endpoint; expected one of {}", names.join(", ")),
                )
            })?;
            let per_second = within(limit.per_second, 1, 1_000_000)
                .map_err(|m| err(&limit_key(".per_second"), m))?;
            let burst = within(limit.burst.unwrap_or(per_second), 1, 10_000_000)
                .map_err(|m| err(&limit_key(".burst"), m))?;
            rate_limits.push((
                endpoint,
                RateLimit {
                    per_second: u32::try_from(per_second).unwrap_or(u32::MAX),
                    burst: u32::try_from(burst).unwrap_or(u32::MAX),
                },
            ));
        }
        let max_visitors = match account.max_visitors {
            None => max_visitors,
            Some(n) => {
                within(n, 100, 1_000_000_000).map_err(|m| err(&key("max_visitors"), m))? as usize
            }
        };
        let mut models = ModelSettings::default();
        if let Some(file) = &account.models {
            if let Some(n) = file.partners {
                models.partners =
                    within(n, 8, 1024).map_err(|m| err(&key("models.partners"), m))? as usize;
            }
            models.neighbours = match file.neighbours {
                Some(n) => within(n, 1, models.partners as u64)
                    .map_err(|m| err(&key("models.neighbours"), m))?
                    as usize,
                None => models.neighbours.min(models.partners),
            };
            if let Some(power) = file.partner_damping {
                models.partner_damping = fraction(power, 0.0, 1.0)
                    .map_err(|m| err(&key("models.partner_damping"), m))?;
            }
            if let Some(power) = file.seed_damping {
                models.seed_damping =
                    fraction(power, 0.0, 1.0).map_err(|m| err(&key("models.seed_damping"), m))?;
            }
        }
        let attribution_days = match account.attribution_days {
            None => vitrine_engine::analytics::DEFAULT_ATTRIBUTION_DAYS,
            Some(n) => within(n, 1, 90).map_err(|m| err(&key("attribution_days"), m))? as u32,
        };
        let experiments = experiments(account, &zones, i).map_err(|(k, m)| err(&k, m))?;
        accounts.push(AccountConfig {
            models,
            attribution_days,
            experiments,
            zone_analytics: account.zone_analytics.unwrap_or(true),
            max_visitors,
            access_key: account.access_key.clone(),
            secret_key: account.secret_key.clone(),
            region: account_region,
            default_currency,
            demo_catalogue: account.demo_catalogue,
            zones,
            content,
            rate_limits,
        });
    }
    Ok(accounts)
}

fn limits(
    file: &FileLimits,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<Limits, ConfigError> {
    let defaults = Limits::default();
    let pick = |value: Option<usize>, default: usize, key: &str, min: usize, max: usize| {
        let value = value.unwrap_or(default);
        if (min..=max).contains(&value) {
            Ok(value)
        } else {
            Err(err(
                &format!("limits.{key}"),
                format!("must be between {min} and {max}, got {value}"),
            ))
        }
    };
    Ok(Limits {
        max_body_bytes: pick(
            file.max_body_bytes,
            defaults.max_body_bytes,
            "max_body_bytes",
            1024,
            64 << 20,
        )?,
        max_delta_bytes: pick(
            file.max_delta_bytes,
            defaults.max_delta_bytes,
            "max_delta_bytes",
            1024,
            1 << 30,
        )?,
        max_events: pick(
            file.max_events,
            defaults.max_events,
            "max_events",
            1,
            10_000,
        )?,
        max_zones: pick(file.max_zones, defaults.max_zones, "max_zones", 1, 1_000)?,
        max_tokens: pick(
            file.max_tokens,
            defaults.max_tokens,
            "max_tokens",
            1,
            100_000,
        )?,
        max_connections: pick(
            file.max_connections,
            defaults.max_connections,
            "max_connections",
            0,
            1_000_000,
        )?,
        header_read_timeout_ms: pick(
            file.header_read_timeout_ms.map(|ms| ms as usize),
            defaults.header_read_timeout_ms as usize,
            "header_read_timeout_ms",
            100,
            600_000,
        )? as u64,
        max_log_backlog: pick(
            file.max_log_backlog,
            defaults.max_log_backlog,
            "max_log_backlog",
            1,
            100_000_000,
        )?,
    })
}

fn memory_config(
    file: &FileMemory,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<MemoryConfig, ConfigError> {
    let defaults = MemoryConfig::default();
    let pick = |value: Option<u64>, default: u64, key: &str, min: u64, max: u64| {
        within(value.unwrap_or(default), min, max).map_err(|m| err(&format!("memory.{key}"), m))
    };
    Ok(MemoryConfig {
        max_visitors: pick(
            file.max_visitors,
            defaults.max_visitors as u64,
            "max_visitors",
            100,
            1_000_000_000,
        )? as usize,
        visitor_retention_days: pick(
            file.visitor_retention_days,
            defaults.visitor_retention_days,
            "visitor_retention_days",
            1,
            3_650,
        )?,
        max_order_ids: pick(
            file.max_order_ids,
            defaults.max_order_ids as u64,
            "max_order_ids",
            1_000,
            1_000_000_000,
        )? as usize,
        max_rss_mb: match file.max_rss_mb {
            None => None,
            Some(mb) => Some(within(mb, 1, 16 << 20).map_err(|m| err("memory.max_rss_mb", m))?),
        },
    })
}

/// `value` when it lies in `min..=max`, else the message saying it does not.
/// `value` as an `f32` if it lies in `min..=max`.
fn fraction(value: f64, min: f64, max: f64) -> Result<f32, String> {
    if (min..=max).contains(&value) {
        Ok(value as f32)
    } else {
        Err(format!("must be between {min} and {max}, got {value}"))
    }
}

fn within(value: u64, min: u64, max: u64) -> Result<u64, String> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(format!("must be between {min} and {max}, got {value}"))
    }
}

fn feed_config(
    file: &FileFeeds,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<FeedConfig, ConfigError> {
    let range = |value: u64, key: &str, min: u64, max: u64| {
        within(value, min, max).map_err(|message| err(&format!("feeds.{key}"), message))
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(FeedConfig {
        max_bytes: range(
            file.max_bytes.unwrap_or(4 << 30),
            "max_bytes",
            1024,
            1 << 40,
        )?,
        fetch_timeout_secs: range(
            file.fetch_timeout_secs.unwrap_or(600),
            "fetch_timeout_secs",
            1,
            86_400,
        )?,
        connect_timeout_secs: range(
            file.connect_timeout_secs.unwrap_or(10),
            "connect_timeout_secs",
            1,
            600,
        )?,
        max_redirects: range(
            file.max_redirects.unwrap_or(5) as u64,
            "max_redirects",
            0,
            20,
        )? as usize,
        ingest_threads: range(
            file.ingest_threads
                .unwrap_or(cores.saturating_sub(1).max(1)) as u64,
            "ingest_threads",
            1,
            256,
        )? as usize,
        stream_listen: match &file.stream_listen {
            None => None,
            Some(text) => Some(text.parse().map_err(|_| {
                err(
                    "feeds.stream_listen",
                    format!("expected an address such as 0.0.0.0:7481, got {text:?}"),
                )
            })?),
        },
        stream_idle_secs: range(
            file.stream_idle_secs.unwrap_or(3_600),
            "stream_idle_secs",
            60,
            7 * 86_400,
        )?,
        background_priority: match file.background_priority.as_deref() {
            None | Some("lowest") => BackgroundPriority::Lowest,
            Some("normal") => BackgroundPriority::Normal,
            Some(other) => {
                return Err(err(
                    "feeds.background_priority",
                    format!("expected \"lowest\" or \"normal\", got {other:?}"),
                ));
            }
        },
    })
}

/// Longest experiment id or variant name.
const MAX_EXPERIMENT_NAME: usize = 64;

/// An experiment id or variant name: 1 to [`MAX_EXPERIMENT_NAME`] letters, digits, `-`
/// or `_`.
fn check_experiment_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= MAX_EXPERIMENT_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if fine {
        Ok(())
    } else {
        Err(format!(
            "must be 1 to {MAX_EXPERIMENT_NAME} letters, digits, '-' or '_', got {name:?}"
        ))
    }
}

/// An account's `[[accounts.experiments]]`, validated against its zones: a product zone
/// each, 2 to 8 variants with unique names and weights 1..10000 (a variant's strategy,
/// fallback, count and history default to the zone's and are checked as the zone's
/// are), a start before the end, and no two experiments on one zone at the same time.
fn experiments(
    account: &FileAccount,
    zones: &[ZoneSpec],
    i: usize,
) -> Result<Vec<Experiment>, (String, String)> {
    let mut experiments: Vec<Experiment> = Vec::with_capacity(account.experiments.len());
    for (e, file) in account.experiments.iter().enumerate() {
        let key = |field: &str| format!("accounts[{i}].experiments[{e}].{field}");
        check_experiment_name(&file.id).map_err(|m| (key("id"), m))?;
        if experiments.iter().any(|x| x.id == file.id) {
            return Err((
                key("id"),
                format!("experiment {:?} is defined twice", file.id),
            ));
        }
        let Some((z, zone)) = account
            .zones
            .iter()
            .enumerate()
            .find(|(_, z)| z.id == file.zone)
        else {
            let ids: Vec<&str> = zones.iter().map(|z| z.id.as_str()).collect();
            return Err((
                key("zone"),
                format!(
                    "no zone {:?}; the account's zones: {}",
                    file.zone,
                    ids.join(", ")
                ),
            ));
        };
        let spec = zones
            .get(z)
            .ok_or_else(|| (key("zone"), "not found".to_owned()))?;
        if !matches!(spec.kind, ZoneKind::RecommenderProduct | ZoneKind::Html)
            || spec.strategy.is_none()
        {
            return Err((
                key("zone"),
                format!(
                    "zone {:?} shows no products from a strategy; experiments compare product strategies",
                    file.zone
                ),
            ));
        }
        let instant = |field: &str,
                       text: &Option<String>|
         -> Result<Option<i64>, (String, String)> {
            text.as_deref()
                .map(|t| {
                    vitrine_fields::parse_instant(t).ok_or_else(|| {
                        (
                            key(field),
                            format!("expected a date (YYYY-MM-DD) or an RFC 3339 time, got {t:?}"),
                        )
                    })
                })
                .transpose()
        };
        let start = instant("start", &file.start)?;
        let end = instant("end", &file.end)?;
        if let (Some(start), Some(end)) = (start, end)
            && start >= end
        {
            return Err((key("end"), "must be after start".to_owned()));
        }
        if !(2..=8).contains(&file.variants.len()) {
            return Err((
                key("variants"),
                format!("expected 2 to 8 variants, got {}", file.variants.len()),
            ));
        }
        let mut variants: Vec<Variant> = Vec::with_capacity(file.variants.len());
        for (v, variant) in file.variants.iter().enumerate() {
            let variant_key = |field: &str| format!("{}[{v}].{field}", key("variants"));
            check_experiment_name(&variant.name).map_err(|m| (variant_key("name"), m))?;
            if variants.iter().any(|x| x.name == variant.name) {
                return Err((
                    variant_key("name"),
                    format!("variant {:?} is given twice", variant.name),
                ));
            }
            let weight = variant.weight.unwrap_or(1);
            if !(1..=10_000).contains(&weight) {
                return Err((
                    variant_key("weight"),
                    format!("must be between 1 and 10000, got {weight}"),
                ));
            }
            // The zone as this variant fills it, checked as a zone is.
            let mut as_zone = zone.clone();
            if let Some(strategy) = &variant.strategy {
                as_zone.strategy = Some(strategy.clone());
                // A variant with its own strategy has its own history settings.
                as_zone.history = None;
                as_zone.recency = None;
                as_zone.long_term = None;
                as_zone.context = None;
                as_zone.content = None;
            }
            if let Some(fallback) = &variant.fallback {
                as_zone.fallback = fallback.clone();
            }
            if variant.count.is_some() {
                as_zone.count = variant.count;
            }
            if variant.history.is_some() {
                as_zone.history = variant.history;
            }
            if variant.recency.is_some() {
                as_zone.recency = variant.recency;
            }
            if variant.long_term.is_some() {
                as_zone.long_term = variant.long_term;
            }
            if variant.context.is_some() {
                as_zone.context = variant.context;
            }
            if variant.content.is_some() {
                as_zone.content = variant.content;
            }
            let spec = zone_spec(&as_zone, &variant_key)?;
            variants.push(Variant {
                name: variant.name.clone(),
                weight: weight as u32,
                spec,
            });
        }
        let overlaps = |other: &Experiment| {
            other.zone == file.zone
                && other.start.is_none_or(|s| end.is_none_or(|e| s < e))
                && start.is_none_or(|s| other.end.is_none_or(|e| s < e))
        };
        if let Some(other) = experiments.iter().find(|x| overlaps(x)) {
            return Err((
                key("zone"),
                format!(
                    "zone {:?} is already in experiment {:?} at the same time; give them \
                     start and end dates that do not overlap",
                    file.zone, other.id
                ),
            ));
        }
        experiments.push(Experiment {
            id: file.id.clone(),
            zone: file.zone.clone(),
            start,
            end,
            variants,
        });
    }
    Ok(experiments)
}

fn zone_spec(zone: &FileZone, key: &impl Fn(&str) -> String) -> Result<ZoneSpec, (String, String)> {
    if zone.id.trim().is_empty() || zone.id.len() > 128 {
        return Err((key("id"), "must be 1 to 128 characters".to_owned()));
    }
    let kind = ZoneKind::from_name(&zone.kind).ok_or_else(|| {
        (
            key("type"),
            format!(
                "unknown zone type {:?}; expected recommender-product, recommender-category, \
                 recommender-brand, image-carousel (or carousel), image (or staticimage) or html",
                zone.kind
            ),
        )
    })?;
    let shows_images = matches!(kind, ZoneKind::Image | ZoneKind::ImageCarousel);
    if shows_images && (zone.strategy.is_some() || !zone.fallback.is_empty()) {
        return Err((
            key("strategy"),
            format!(
                "{} zones show their configured images; remove strategy and fallback",
                kind.name()
            ),
        ));
    }
    // html zones take product strategies for the items their template shows.
    let kind_filled = if kind == ZoneKind::Html {
        ZoneKind::RecommenderProduct
    } else {
        kind
    };
    let fits = |strategy: Strategy| -> Result<Strategy, String> {
        if strategy.kind() == kind_filled {
            return Ok(strategy);
        }
        let fitting: Vec<&str> = Strategy::AVAILABLE
            .iter()
            .filter(|(_, s)| s.kind() == kind_filled)
            .map(|(n, _)| *n)
            .collect();
        Err(format!(
            "strategy {:?} does not fill {} zones; use one of {}",
            strategy.name(),
            kind.name(),
            fitting.join(", ")
        ))
    };
    let main = match zone.strategy.as_deref() {
        Some(name) => Some(
            strategy(name)
                .and_then(fits)
                .map_err(|m| (key("strategy"), m))?,
        ),
        // Image zones have no items; an html zone without a strategy renders its
        // template without items.
        None if shows_images || kind == ZoneKind::Html => None,
        None => return Err((key("strategy"), "required for recommender zones".to_owned())),
    };
    let mut fallback = Vec::with_capacity(zone.fallback.len());
    for (f, name) in zone.fallback.iter().enumerate() {
        fallback.push(
            strategy(name)
                .and_then(fits)
                .map_err(|m| (format!("{}[{f}]", key("fallback")), m))?,
        );
    }
    let count = zone.count.unwrap_or(8);
    if !(1..=100).contains(&count) {
        return Err((
            key("count"),
            format!("must be between 1 and 100, got {count}"),
        ));
    }
    let page_types = page_types(zone, key)?;
    let uses = |wanted: &[Strategy]| {
        main.into_iter()
            .chain(fallback.iter().copied())
            .any(|s| wanted.contains(&s))
    };
    let personal = uses(&[Strategy::Personalized]);
    let recency_read = personal || uses(&[Strategy::ViewedTogether, Strategy::BoughtTogether]);
    let only_personal = |name: &str| {
        (
            key(name),
            "only the personalized strategy starts from the visitor's history; \
             remove it or use personalized"
                .to_owned(),
        )
    };
    let history = match zone.history {
        None => DEFAULT_HISTORY,
        Some(_) if !personal => return Err(only_personal("history")),
        Some(history) => {
            if !(1..=MAX_RECENT_VIEWS as i64).contains(&history) {
                return Err((
                    key("history"),
                    format!("must be between 1 and {MAX_RECENT_VIEWS}, got {history}"),
                ));
            }
            history as usize
        }
    };
    let recency = match zone.recency {
        None => DEFAULT_RECENCY,
        Some(_) if !recency_read => {
            return Err((
                key("recency"),
                "only the personalized, viewed_together and bought_together strategies \
                 weigh the visitor's history; remove it or use one of them"
                    .to_owned(),
            ));
        }
        // Greater than 0 (0 would leave all but the latest out: history = 1 does that).
        Some(recency) if recency > 0.0 && recency <= 1.0 => recency,
        Some(recency) => {
            return Err((
                key("recency"),
                format!("must be greater than 0 and at most 1, got {recency}"),
            ));
        }
    };
    let long_term = match zone.long_term {
        None => DEFAULT_LONG_TERM,
        Some(_) if !personal => return Err(only_personal("long_term")),
        Some(weight) if (0.0..=100.0).contains(&weight) => weight,
        Some(weight) => {
            return Err((
                key("long_term"),
                format!("must be between 0 and 100, got {weight}"),
            ));
        }
    };
    let context = match zone.context {
        None => 0,
        Some(_) if !uses(&[Strategy::ViewedTogether, Strategy::BoughtTogether]) => {
            return Err((
                key("context"),
                "only the viewed_together and bought_together strategies read the \
                 visitor's history with the page's product; remove it or use one of them"
                    .to_owned(),
            ));
        }
        Some(n) if (0..=MAX_RECENT_VIEWS as i64).contains(&n) => n as usize,
        Some(n) => {
            return Err((
                key("context"),
                format!("must be between 0 and {MAX_RECENT_VIEWS}, got {n}"),
            ));
        }
    };
    // viewed_together and bought_together blend only with `context` (else they list the
    // page's product's pairs in their order).
    let blends = uses(&[Strategy::Personalized, Strategy::BasketCrossSell])
        || (context > 0 && uses(&[Strategy::ViewedTogether, Strategy::BoughtTogether]));
    let content = match zone.content {
        None => DEFAULT_CONTENT,
        Some(_) if !blends => {
            return Err((
                key("content"),
                "only blends mix content with pairs: personalized, basket_cross_sell, and \
                 viewed_together or bought_together with context above 0; remove it, use one \
                 of them or set context"
                    .to_owned(),
            ));
        }
        Some(weight) if (0.0..=1.0).contains(&weight) => weight,
        Some(weight) => {
            return Err((
                key("content"),
                format!("must be between 0 and 1, got {weight}"),
            ));
        }
    };
    Ok(ZoneSpec {
        id: zone.id.clone(),
        title: zone.title.clone(),
        kind,
        strategy: main,
        fallback,
        count: count as usize,
        page_types,
        history,
        recency,
        long_term,
        context,
        content,
    })
}

fn page_types(
    zone: &FileZone,
    key: &impl Fn(&str) -> String,
) -> Result<Vec<PageType>, (String, String)> {
    let mut page_types = Vec::with_capacity(zone.page_types.len());
    for (p, name) in zone.page_types.iter().enumerate() {
        let page_type = PageType::from_name(name).ok_or_else(|| {
            let all: Vec<&str> = PageType::ALL.iter().map(|p| p.name()).collect();
            (
                format!("{}[{p}]", key("page_types")),
                format!(
                    "unknown page type {name:?}; expected one of {}",
                    all.join(", ")
                ),
            )
        })?;
        page_types.push(page_type);
    }
    Ok(page_types)
}

/// The images or template of a zone, checked against its type.
fn zone_content(
    zone: &FileZone,
    kind: ZoneKind,
    key: &impl Fn(&str) -> String,
) -> Result<ZoneContent, (String, String)> {
    let takes_images = matches!(kind, ZoneKind::Image | ZoneKind::ImageCarousel);
    if !takes_images && !zone.images.is_empty() {
        return Err((
            key("images"),
            format!(
                "{} zones have no images; only image and image-carousel zones do",
                kind.name()
            ),
        ));
    }
    if kind != ZoneKind::Html && zone.template.is_some() {
        return Err((
            key("template"),
            format!("{} zones have no template; only html zones do", kind.name()),
        ));
    }
    let mut content = ZoneContent::default();
    match kind {
        ZoneKind::Image | ZoneKind::ImageCarousel => {
            if zone.images.is_empty() {
                return Err((key("images"), "at least one image is required".to_owned()));
            }
            if kind == ZoneKind::Image && zone.images.len() > 1 {
                return Err((
                    key("images"),
                    format!(
                        "an image zone shows one image, got {}; use image-carousel for several",
                        zone.images.len()
                    ),
                ));
            }
            for (n, image) in zone.images.iter().enumerate() {
                if image.url.trim().is_empty() {
                    return Err((
                        format!("{}[{n}].url", key("images")),
                        "must not be empty".to_owned(),
                    ));
                }
                content.images.push(ZoneImage {
                    url: image.url.clone(),
                    link: image.link.clone(),
                    alt: image.alt.clone(),
                });
            }
        }
        ZoneKind::Html => {
            let Some(template) = &zone.template else {
                return Err((key("template"), "required for html zones".to_owned()));
            };
            let mut env = minijinja::Environment::new();
            env.add_template("zone", template)
                .map_err(|e| (key("template"), format!("not a valid template: {e}")))?;
            content.template = Some(template.clone());
        }
        ZoneKind::RecommenderProduct
        | ZoneKind::RecommenderCategory
        | ZoneKind::RecommenderBrand => {}
    }
    Ok(content)
}

fn strategy(name: &str) -> Result<Strategy, String> {
    Strategy::from_name(name).ok_or_else(|| {
        let available: Vec<&str> = Strategy::AVAILABLE.iter().map(|(n, _)| *n).collect();
        format!(
            "unknown strategy {name:?}; available: {}",
            available.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        [[accounts]]
        access_key = "k1"
        secret_key = "secret-1234"
        default_currency = "GBP"
          [[accounts.zones]]
          id = "HP-01"
          title = "Trending"
          type = "recommender-product"
          strategy = "trending"
    "#;

    fn fails(text: &str) -> String {
        parse(text, "test.toml", &Overrides::default())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn demo_config_is_valid() {
        let config = demo(&Overrides::default()).unwrap();
        assert_eq!(config.accounts.len(), 1);
        let ids: Vec<&str> = config.accounts[0]
            .zones
            .iter()
            .map(|z| z.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "HP-01", "PP-01", "PP-02", "BP-01", "OC-01", "CP-01", "SR-01"
            ]
        );
        assert!(config.accounts[0].demo_catalogue);
    }

    #[test]
    fn overrides_win_over_the_file() {
        let text = format!("listen = \"127.0.0.1:1\"\ndata_dir = \"d\"\n{MINIMAL}");
        let overrides = Overrides {
            listen: Some("127.0.0.1:0".into()),
            data_dir: Some("/tmp/x".into()),
        };
        let config = parse(&text, "t", &overrides).unwrap();
        assert_eq!(config.listen.port(), 0);
        assert_eq!(config.data_dir, PathBuf::from("/tmp/x"));
        let config = parse(&text, "t", &Overrides::default()).unwrap();
        assert_eq!(config.listen.port(), 1);
    }

    #[test]
    fn the_cluster_table_is_checked() {
        let cluster = |body: &str| format!("{MINIMAL}\n[cluster]\n{body}\n");
        let config = parse(
            &cluster("servers = [\"nats://127.0.0.1:4222\"]\nnode = \"a\""),
            "t",
            &Overrides::default(),
        )
        .unwrap();
        let settings = config.cluster.unwrap().settings;
        assert_eq!(settings.servers, ["nats://127.0.0.1:4222"]);
        assert_eq!((settings.replicas, settings.ready_lag), (3, 0));
        assert!(settings.accounts.is_empty());
        assert!(
            parse(MINIMAL, "t", &Overrides::default())
                .unwrap()
                .cluster
                .is_none()
        );
        assert!(fails(&cluster("node = \"a\"")).contains("cluster.servers: give at least one"));
        assert!(
            fails(&cluster(
                "servers = [\"http://127.0.0.1:4222\"]\nnode = \"a\""
            ))
            .contains("cluster.servers[0]: expected a NATS URL")
        );
        assert!(
            fails(&cluster("servers = [\"nats://127.0.0.1:4222\"]"))
                .contains("cluster.node: expected 1 to 64 letters")
        );
        assert!(
            fails(&cluster(
                "servers = [\"nats://127.0.0.1:4222\"]\nnode = \"a b\""
            ))
            .contains("cluster.node")
        );
        assert!(
            fails(&cluster(
                "servers = [\"nats://127.0.0.1:4222\"]\nnode = \"a\"\nreplicas = 7"
            ))
            .contains("cluster.replicas: must be between 1 and 5")
        );
        assert!(
            fails(&cluster(
                "servers = [\"nats://127.0.0.1:4222\"]\nnode = \"a\"\naccounts = [\"nobody\"]"
            ))
            .contains("cluster.accounts[0]: no [[accounts]] entry has the access key \"nobody\"")
        );
        assert!(
            fails(&cluster(
                "servers = [\"nats://h:1\"]\nnode = \"a\"\nbogus = 1"
            ))
            .contains("unknown field")
        );
    }

    #[test]
    fn admin_tokens_and_the_attribution_window_are_checked() {
        let admin = |tokens: &str| format!("{MINIMAL}\n[admin]\ntokens = [{tokens}]\n");
        let config = parse(
            &admin("\"a-long-enough-admin-token-1\""),
            "t",
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(config.admin_tokens, ["a-long-enough-admin-token-1"]);
        assert_eq!(config.accounts[0].attribution_days, 7);
        assert_eq!(
            fails(&admin("\"short\"")),
            "test.toml: admin.tokens[0]: must be at least 24 characters, got 5"
        );
        assert!(fails(&admin("\"a long enough admin token 1\"")).contains("without spaces"));
        let store_key = MINIMAL.replace("secret-1234", "a-secret-key-long-as-a-token");
        assert_eq!(
            fails(&format!(
                "{store_key}\n[admin]\ntokens = [\"a-secret-key-long-as-a-token\"]\n"
            )),
            "test.toml: admin.tokens[0]: must not be an account's access key or secret key"
        );
        assert!(
            fails(&admin(
                "\"a-long-enough-admin-token-1\", \"a-long-enough-admin-token-1\""
            ))
            .contains("admin.tokens[1]: is given twice")
        );
        let window = |days: u32| {
            MINIMAL.replace(
                "default_currency = \"GBP\"",
                &format!("default_currency = \"GBP\"\nattribution_days = {days}"),
            )
        };
        let config = parse(&window(30), "t", &Overrides::default()).unwrap();
        assert_eq!(config.accounts[0].attribution_days, 30);
        assert!(
            fails(&window(0)).contains("accounts[0].attribution_days: must be between 1 and 90")
        );
    }

    #[test]
    fn experiments_are_checked_against_the_zones() {
        let with = |experiments: &str| format!("{MINIMAL}\n{experiments}");
        let two = r#"
        [[accounts.experiments]]
        id = "hp-test"
        zone = "HP-01"
        start = "2026-11-01"
        end = "2026-12-01"
          [[accounts.experiments.variants]]
          name = "control"
          [[accounts.experiments.variants]]
          name = "top"
          strategy = "top_sellers"
          count = 4
          weight = 3
        "#;
        let config = parse(&with(two), "t", &Overrides::default()).unwrap();
        let experiment = &config.accounts[0].experiments[0];
        assert_eq!(experiment.zone, "HP-01");
        assert_eq!(experiment.start, Some(1_793_491_200_000));
        assert_eq!(
            experiment.variants[0].spec.strategy,
            Some(Strategy::Trending)
        );
        assert_eq!(experiment.variants[0].weight, 1);
        assert_eq!(
            experiment.variants[1].spec.strategy,
            Some(Strategy::TopSellers)
        );
        assert_eq!(experiment.variants[1].spec.count, 4);
        assert_eq!(experiment.variants[1].weight, 3);
        // A variant sets the model keys its strategy reads, checked as a zone's are.
        let personal = two.replace(
            "\"top_sellers\"",
            "\"personalized\"\n          content = 0.5",
        );
        let config = parse(&with(&personal), "t", &Overrides::default()).unwrap();
        assert_eq!(
            config.accounts[0].experiments[0].variants[1].spec.content,
            0.5
        );
        assert!(
            fails(&with(
                &two.replace("count = 4", "count = 4\n          content = 0.5")
            ))
            .contains("accounts[0].experiments[0].variants[1].content: only blends mix content")
        );
        let fails_with = |from: &str, to: &str| fails(&with(&two.replace(from, to)));
        assert!(fails_with("zone = \"HP-01\"", "zone = \"NOPE\"").contains(
            "accounts[0].experiments[0].zone: no zone \"NOPE\"; the account's zones: HP-01"
        ));
        assert!(fails_with("\"top_sellers\"", "\"nope\"").contains(
            "accounts[0].experiments[0].variants[1].strategy: unknown strategy \"nope\""
        ));
        assert!(fails_with("\"top_sellers\"", "\"category_affinity\"").contains(
            "accounts[0].experiments[0].variants[1].strategy: strategy \"category_affinity\" does not fill recommender-product zones"
        ));
        assert!(fails_with("weight = 3", "weight = 0").contains(
            "accounts[0].experiments[0].variants[1].weight: must be between 1 and 10000, got 0"
        ));
        assert!(
            fails_with("name = \"top\"", "name = \"control\"")
                .contains("variants[1].name: variant \"control\" is given twice")
        );
        assert!(
            fails_with("end = \"2026-12-01\"", "end = \"2026-10-01\"")
                .contains("accounts[0].experiments[0].end: must be after start")
        );
        assert!(
            fails_with("start = \"2026-11-01\"", "start = \"soon\"")
                .contains("experiments[0].start: expected a date (YYYY-MM-DD) or an RFC 3339 time, got \"soon\"")
        );
        let one_variant = two
            .split("[[accounts.experiments.variants]]\n          name = \"top\"")
            .next()
            .unwrap();
        assert!(
            fails(&with(one_variant))
                .contains("experiments[0].variants: expected 2 to 8 variants, got 1")
        );
        // Two experiments on one zone at once: an error; one after the other: fine.
        let second = two.replace("hp-test", "hp-later");
        assert!(fails(&with(&format!("{two}{second}"))).contains(
            "accounts[0].experiments[1].zone: zone \"HP-01\" is already in experiment \"hp-test\" at the same time"
        ));
        let later = second
            .replace("2026-11-01", "2026-12-01")
            .replace("end = \"2026-12-01\"", "end = \"2027-01-01\"");
        assert_eq!(
            parse(&with(&format!("{two}{later}")), "t", &Overrides::default())
                .unwrap()
                .accounts[0]
                .experiments
                .len(),
            2
        );
    }

    #[test]
    fn errors_name_file_key_and_problem() {
        assert_eq!(
            fails(&MINIMAL.replace("\"trending\"", "\"nope\"")),
            "test.toml: accounts[0].zones[0].strategy: unknown strategy \"nope\"; available: \
             trending, top_sellers, recently_viewed, new_arrivals, on_offer, category_top, similar, \
             viewed_together, bought_together, complete_the_look, associated, personalized, \
             basket_cross_sell, category_affinity, brand_affinity"
        );
        assert!(fails(&MINIMAL.replace("\"GBP\"", "\"gbp\"")).starts_with(
            "test.toml: accounts[0].default_currency: expected a three-letter upper-case ISO 4217 code"
        ));
        assert!(
            fails(&format!("{MINIMAL}\n count = 0"))
                .contains("accounts[0].zones[0].count: must be between 1 and 100, got 0")
        );
        assert!(fails(&format!("bogus = 1\n{MINIMAL}")).contains("unknown field `bogus`"));
        assert!(fails(&format!("{MINIMAL}\n history = 5")).contains(
            "accounts[0].zones[0].history: only the personalized strategy starts from the \
             visitor's history"
        ));
        let personalized = MINIMAL.replace("\"trending\"", "\"personalized\"");
        assert!(
            fails(&format!("{personalized}\n history = 0"))
                .contains("accounts[0].zones[0].history: must be between 1 and 50, got 0")
        );
        let config = parse(
            &format!("{personalized}\n history = 20"),
            "t",
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(config.accounts[0].zones[0].history, 20);
        let config = parse(&personalized, "t", &Overrides::default()).unwrap();
        assert_eq!(config.accounts[0].zones[0].history, DEFAULT_HISTORY);
        assert_eq!(config.accounts[0].zones[0].recency, DEFAULT_RECENCY);
        assert_eq!(config.accounts[0].zones[0].long_term, DEFAULT_LONG_TERM);
        let config = parse(
            &format!("{personalized}\n recency = 0.5\n long_term = 0"),
            "t",
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(config.accounts[0].zones[0].recency, 0.5);
        assert_eq!(config.accounts[0].zones[0].long_term, 0.0);
        for (line, error) in [
            (
                "recency = 0",
                "accounts[0].zones[0].recency: must be greater than 0 and at most 1, got 0",
            ),
            (
                "recency = 1.25",
                "accounts[0].zones[0].recency: must be greater than 0 and at most 1, got 1.25",
            ),
            (
                "long_term = -1",
                "accounts[0].zones[0].long_term: must be between 0 and 100, got -1",
            ),
            (
                "long_term = inf",
                "accounts[0].zones[0].long_term: must be between 0 and 100",
            ),
        ] {
            assert!(
                fails(&format!("{personalized}\n {line}")).contains(error),
                "{line}"
            );
        }
        assert!(fails(&format!("{MINIMAL}\n recency = 0.5")).contains(
            "accounts[0].zones[0].recency: only the personalized, viewed_together and \
             bought_together strategies weigh the visitor's history"
        ));
        let together = MINIMAL.replace("\"trending\"", "\"viewed_together\"");
        let config = parse(
            &format!("{together}\n context = 5\n recency = 0.5"),
            "t",
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(config.accounts[0].zones[0].context, 5);
        assert_eq!(config.accounts[0].zones[0].recency, 0.5);
        assert_eq!(
            parse(&together, "t", &Overrides::default())
                .unwrap()
                .accounts[0]
                .zones[0]
                .context,
            0
        );
        assert!(
            fails(&format!("{together}\n context = 51"))
                .contains("accounts[0].zones[0].context: must be between 0 and 50, got 51")
        );
        assert!(fails(&format!("{personalized}\n context = 2")).contains(
            "accounts[0].zones[0].context: only the viewed_together and bought_together \
             strategies read the visitor's history"
        ));
        assert!(
            fails(&format!("{together}\n long_term = 1"))
                .contains("accounts[0].zones[0].long_term: only the personalized strategy")
        );
        // `content`: the blending strategies only, 0..1, 0 by default.
        assert_eq!(config.accounts[0].zones[0].content, DEFAULT_CONTENT);
        let cross_sell = MINIMAL.replace("\"trending\"", "\"basket_cross_sell\"");
        let together_blended = format!("{together}\n context = 3");
        for zone in [&personalized, &together_blended, &cross_sell] {
            let config = parse(
                &format!("{zone}\n content = 0.25"),
                "t",
                &Overrides::default(),
            )
            .unwrap();
            assert_eq!(config.accounts[0].zones[0].content, 0.25);
        }
        assert!(
            fails(&format!("{together_blended}\n content = 1.5"))
                .contains("accounts[0].zones[0].content: must be between 0 and 1, got 1.5")
        );
        assert!(fails(&format!("{together}\n content = 0.5")).contains(
            "accounts[0].zones[0].content: only blends mix content with pairs: personalized, \
             basket_cross_sell, and viewed_together or bought_together with context above 0"
        ));
        assert!(
            fails(&format!("{personalized}\n content = -0.1"))
                .contains("accounts[0].zones[0].content: must be between 0 and 1, got -0.1")
        );
        assert!(
            fails(&format!("{MINIMAL}\n content = 0.1"))
                .contains("accounts[0].zones[0].content: only blends mix content with pairs")
        );
        assert_eq!(config.accounts[0].models, ModelSettings::default());
        let models = |table: &str| {
            MINIMAL.replace(
                "default_currency = \"GBP\"",
                &format!("default_currency = \"GBP\"\n[accounts.models]\n{table}\n"),
            )
        };
        let config = parse(
            &models("partners = 256\nneighbours = 100"),
            "t",
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            config.accounts[0].models,
            ModelSettings {
                partners: 256,
                neighbours: 100,
                ..ModelSettings::default()
            }
        );
        let config = parse(
            &models("partner_damping = 0\nseed_damping = 1"),
            "t",
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(config.accounts[0].models.partner_damping, 0.0);
        assert_eq!(config.accounts[0].models.seed_damping, 1.0);
        assert!(
            fails(&models("partner_damping = 1.5"))
                .contains("accounts[0].models.partner_damping: must be between 0 and 1, got 1.5")
        );
        assert!(
            fails(&models("seed_damping = -0.5"))
                .contains("accounts[0].models.seed_damping: must be between 0 and 1, got -0.5")
        );
        assert!(fails(&models("seed_damping = nan")).contains("accounts[0].models.seed_damping"));
        assert!(
            fails(&models("partners = 4"))
                .contains("accounts[0].models.partners: must be between 8 and 1024, got 4")
        );
        assert!(
            fails(&models("neighbours = 300"))
                .contains("accounts[0].models.neighbours: must be between 1 and 256, got 300")
        );
        assert!(fails(&models("window = 3")).contains("unknown field `window`"));
        assert!(
            fails(&format!("region = \"asia\"\n{MINIMAL}"))
                .contains("test.toml: region: expected \"eu\" or \"us\"")
        );
        assert!(fails("listen = \"nowhere\"\n").contains("test.toml: listen: expected an address"));
        assert!(
            fails(&format!("[feeds]\nbackground_priority = \"high\"\n{MINIMAL}")).contains(
                "test.toml: feeds.background_priority: expected \"lowest\" or \"normal\", got \"high\""
            )
        );
        assert!(
            fails(&format!("[feeds]\nstream_listen = \"here\"\n{MINIMAL}"))
                .contains("test.toml: feeds.stream_listen: expected an address")
        );
        assert!(
            fails(&format!("[limits]\nheader_read_timeout_ms = 5\n{MINIMAL}"))
                .contains("limits.header_read_timeout_ms: must be between 100 and 600000, got 5")
        );
        assert!(
            fails("").contains("test.toml: accounts: at least one [[accounts]] entry is required")
        );
        assert_eq!(
            fails(&MINIMAL.replace("\"trending\"", "\"category_affinity\"")),
            "test.toml: accounts[0].zones[0].strategy: strategy \"category_affinity\" does not \
             fill recommender-product zones; use one of trending, top_sellers, recently_viewed, \
             new_arrivals, on_offer, category_top, similar, viewed_together, bought_together, \
             complete_the_look, associated, personalized, basket_cross_sell"
        );
        assert!(
            fails(&MINIMAL.replace("\"recommender-product\"", "\"recommender-brand\"")).contains(
                "strategy \"trending\" does not fill recommender-brand zones; use one of brand_affinity"
            )
        );
        assert!(
            fails(&format!("[limits]\nmax_events = 0\n{MINIMAL}"))
                .contains("test.toml: limits.max_events: must be between 1 and 10000, got 0")
        );
        let image = MINIMAL
            .replace("\"recommender-product\"", "\"image\"")
            .replace("strategy = \"trending\"", "");
        assert_eq!(
            fails(&image),
            "test.toml: accounts[0].zones[0].images: at least one image is required"
        );
        assert!(
            fails(&MINIMAL.replace("\"recommender-product\"", "\"image\""))
                .contains("zones[0].strategy: image zones show their configured images")
        );
        let two = format!("{image}  images = [{{ url = \"/a.jpg\" }}, {{ url = \"/b.jpg\" }}]\n");
        assert!(fails(&two).contains("an image zone shows one image, got 2"));
        assert!(
            parse(
                &two.replace("\"image\"", "\"carousel\""),
                "t",
                &Overrides::default()
            )
            .is_ok()
        );
        assert!(
            fails(&format!("{image}  images = [{{ url = \" \" }}]\n"))
                .contains("zones[0].images[0].url: must not be empty")
        );
        let html = MINIMAL.replace("\"recommender-product\"", "\"html\"");
        assert!(fails(&html).contains("zones[0].template: required for html zones"));
        assert!(
            fails(&format!("{html}  template = \"{{% for x in %}}\"\n"))
                .contains("zones[0].template: not a valid template")
        );
        assert!(
            fails(&format!("{MINIMAL}  template = \"<p/>\"\n"))
                .contains("recommender-product zones have no template")
        );
        let twice = format!(
            "{MINIMAL}{}",
            MINIMAL.replace("access_key = \"k1\"", "access_key = \"k2\"")
        );
        assert!(parse(&twice, "t", &Overrides::default()).is_ok());
        let dup = format!("{MINIMAL}{MINIMAL}");
        assert!(
            fails(&dup).contains("accounts[1].access_key: \"k1\" is used by an earlier account")
        );
    }
}
