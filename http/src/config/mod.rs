//! Server configuration: a TOML file (or the embedded demo), environment overrides, and
//! validation into [`Config`].
//!
//! Precedence for `listen` and `data_dir`: command line, then `VITRINE_LISTEN` /
//! `VITRINE_DATA_DIR`, then the file, then the defaults. Every error names the file,
//! the key and what is wrong, e.g.
//! `vitrine.toml: accounts[0].zones[1].count: must be between 1 and 100, got 0`.

//!
//! Files: `file.rs` (the TOML schema), `server.rs` (the server's own sections),
//! `accounts.rs`, `zones.rs` and `experiments.rs` (the account domain), `clientside.rs`
//! (the browser integration), `cluster.rs`, `listeners.rs` (`[sftp]` and `[tls]`),
//! `demo.rs` (the embedded demo's console token).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use vitrine_ingest::fetch::Addresses;
use vitrine_snapshots::threads::Layout;

mod accounts;
mod checks;
mod clientside;
mod cluster;
pub mod demo;
mod experiments;
mod file;
mod listeners;
mod rate_limits;
mod region;
mod server;
mod zones;

pub use accounts::AccountConfig;
pub use checks::ConfigError;
pub use clientside::{ClientsideConfig, ConsentPolicy};
pub use cluster::ClusterConfig;
pub use listeners::{SftpConfig, TlsConfig};
pub use rate_limits::RateLimit;
pub use server::{
    DeltaConfig, EventsFsync, FeedConfig, Limits, MIN_ADMIN_TOKEN_LEN, MemoryConfig, Region,
};
pub use zones::{ZoneContent, ZoneImage};

use accounts::accounts;
use cluster::cluster_config;
use file::FileConfig;
use listeners::{sftp_config, tls_config};
pub use server::{AdminRole, AdminToken};
use server::{admin_tokens, delta_config, durability, feed_config, limits, memory_config};

/// The demo configuration used when no `--config` is given.
pub const DEMO_CONFIG: &str = include_str!("../demo.toml");
/// Name under which errors in the demo configuration are reported.
pub const DEMO_CONFIG_NAME: &str = "<embedded demo config>";
/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7480";
/// Default data directory.
pub const DEFAULT_DATA_DIR: &str = "data";

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
    /// `cpu_layout`: whether background threads run on a CPU of their own.
    pub cpu_layout: Layout,
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
    /// Which hosts feed URLs may name (`feeds.allow_private_addresses`).
    pub feed_addresses: Addresses,
    /// Feed download and ingest settings.
    pub feeds: FeedConfig,
    /// Bounds on per-visitor state.
    pub memory: MemoryConfig,
    /// Accounts.
    pub accounts: Vec<AccountConfig>,
    /// `[admin] tokens`: the bearer tokens that open `/admin/` (none: it is closed).
    pub admin_tokens: Vec<AdminToken>,
    /// `[cluster]`: this server is a node of a cluster (none: one server on its own).
    pub cluster: Option<ClusterConfig>,
    /// `[sftp]`: the SFTP server for feed uploads (none: off).
    pub sftp: Option<SftpConfig>,
    /// `[tls]`: HTTPS on the HTTP listeners (none: plain HTTP).
    pub tls: Option<TlsConfig>,
}

/// Values that override the file: from the command line or the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--listen` / `VITRINE_LISTEN`.
    pub listen: Option<String>,
    /// `--data-dir` / `VITRINE_DATA_DIR`.
    pub data_dir: Option<PathBuf>,
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
    let cpu_layout = match file.cpu_layout.as_deref() {
        None | Some("shared") => Layout::Shared,
        Some("split") => Layout::Split,
        Some(other) => {
            return Err(err(
                "cpu_layout",
                format!("expected \"shared\" or \"split\", got {other:?}"),
            ));
        }
    };
    let durability = durability(&file.durability, &err)?;
    let deltas = delta_config(&file.deltas, &err)?;
    let limits = limits(&file.limits, &err)?;
    let feeds = feed_config(&file.feeds, &err)?;
    let memory = memory_config(&file.memory, &err)?;

    // Files an account names (its card template) are read relative to the configuration
    // file's directory.
    let base = Path::new(source).parent().unwrap_or(Path::new("."));
    let accounts = accounts(&file.accounts, region, memory.max_visitors, base, &err)?;
    if accounts.is_empty() {
        return Err(err(
            "accounts",
            "at least one [[accounts]] entry is required".to_owned(),
        ));
    }
    let admin_tokens = admin_tokens(&file.admin, &accounts, &err)?;
    let sftp = sftp_config(file.sftp.as_ref(), &data_dir, base, &err)?;
    let tls = tls_config(file.tls.as_ref(), base, &err)?;
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
        cpu_layout,
        events_fsync: durability.events_fsync,
        fsync_interval_ms: durability.fsync_interval_ms,
        wal_segment_bytes: durability.wal_segment_bytes,
        state_snapshot_interval_secs: durability.state_snapshot_interval_secs,
        deltas,
        limits,
        feed_addresses: if file.feeds.allow_private_addresses {
            Addresses::PrivateAllowed
        } else {
            Addresses::PublicOnly
        },
        feeds,
        memory,
        accounts,
        admin_tokens,
        cluster,
        sftp,
        tls,
    })
}

#[cfg(test)]
mod tests;
