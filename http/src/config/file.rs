//! The TOML file's schema: what `serde` reads, before any value is checked. Every table
//! refuses unknown keys, so a misspelt key is an error rather than a silent default.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) listen: Option<String>,
    pub(super) metrics_listen: Option<String>,
    pub(super) data_dir: Option<PathBuf>,
    pub(super) region: Option<String>,
    pub(super) cpu_layout: Option<String>,
    #[serde(default)]
    pub(super) durability: FileDurability,
    #[serde(default)]
    pub(super) limits: FileLimits,
    #[serde(default)]
    pub(super) deltas: FileDeltas,
    #[serde(default)]
    pub(super) feeds: FileFeeds,
    #[serde(default)]
    pub(super) memory: FileMemory,
    #[serde(default)]
    pub(super) accounts: Vec<FileAccount>,
    #[serde(default)]
    pub(super) admin: FileAdmin,
    pub(super) cluster: Option<FileCluster>,
    pub(super) sftp: Option<FileSftp>,
    pub(super) tls: Option<FileTls>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSftp {
    pub(super) listen: Option<String>,
    pub(super) host_key: Option<PathBuf>,
    pub(super) max_failed_logins_per_minute: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTls {
    pub(super) cert: Option<PathBuf>,
    pub(super) key: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCluster {
    #[serde(default)]
    pub(super) servers: Vec<String>,
    pub(super) node: Option<String>,
    pub(super) replicas: Option<u64>,
    #[serde(default)]
    pub(super) accounts: Vec<String>,
    pub(super) ready_lag: Option<u64>,
    pub(super) join_timeout_secs: Option<u64>,
    pub(super) snapshot_interval_secs: Option<u64>,
    pub(super) duplicate_window_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAdmin {
    #[serde(default)]
    pub(super) tokens: Vec<FileAdminToken>,
}

/// An admin token: the token alone (an editor), or a table with its role and label.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum FileAdminToken {
    Plain(String),
    Table(FileAdminTokenTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAdminTokenTable {
    pub(super) token: String,
    pub(super) role: Option<String>,
    pub(super) label: Option<String>,
}

impl FileAdminToken {
    pub(super) fn token(&self) -> &str {
        match self {
            FileAdminToken::Plain(token) => token,
            FileAdminToken::Table(table) => &table.token,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileMemory {
    pub(super) max_visitors: Option<u64>,
    pub(super) visitor_retention_days: Option<u64>,
    pub(super) max_order_ids: Option<u64>,
    pub(super) max_rss_mb: Option<u64>,
    pub(super) zone_cache_mib: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDurability {
    pub(super) events_fsync: Option<String>,
    pub(super) fsync_interval_ms: Option<u64>,
    pub(super) wal_segment_bytes: Option<u64>,
    pub(super) state_snapshot_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDeltas {
    pub(super) compact_after_changes: Option<usize>,
    pub(super) compact_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLimits {
    pub(super) max_body_bytes: Option<usize>,
    pub(super) max_delta_bytes: Option<usize>,
    pub(super) max_events: Option<usize>,
    pub(super) max_zones: Option<usize>,
    pub(super) max_tokens: Option<usize>,
    pub(super) max_connections: Option<usize>,
    pub(super) header_read_timeout_ms: Option<u64>,
    pub(super) max_log_backlog: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileFeeds {
    #[serde(default)]
    pub(super) allow_private_addresses: bool,
    pub(super) max_bytes: Option<u64>,
    pub(super) fetch_timeout_secs: Option<u64>,
    pub(super) connect_timeout_secs: Option<u64>,
    pub(super) max_redirects: Option<usize>,
    pub(super) ingest_threads: Option<usize>,
    pub(super) stream_listen: Option<String>,
    pub(super) stream_idle_secs: Option<u64>,
    pub(super) background_priority: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAccount {
    pub(super) access_key: String,
    pub(super) secret_key: String,
    pub(super) region: Option<String>,
    pub(super) default_currency: String,
    pub(super) time_zone: Option<String>,
    #[serde(default)]
    pub(super) demo_catalogue: bool,
    pub(super) max_visitors: Option<u64>,
    #[serde(default)]
    pub(super) rate_limits: BTreeMap<String, FileRateLimit>,
    #[serde(default)]
    pub(super) zones: Vec<FileZone>,
    pub(super) models: Option<FileModels>,
    pub(super) attribution_days: Option<u64>,
    pub(super) zone_analytics: Option<bool>,
    pub(super) self_evaluation: Option<bool>,
    #[serde(default)]
    pub(super) experiments: Vec<FileExperiment>,
    #[serde(default)]
    pub(super) clientside: FileClientside,
    pub(super) deltas_without_secret: Option<FileTrusted>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTrusted {
    #[serde(default)]
    pub(super) networks: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileClientside {
    #[serde(default)]
    pub(super) allowed_origins: Vec<String>,
    pub(super) consent: Option<String>,
    pub(super) card_template: Option<String>,
    pub(super) per_ip: Option<FileRateLimit>,
    pub(super) per_visitor: Option<FileRateLimit>,
    pub(super) max_events: Option<u64>,
    pub(super) max_zones: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileExperiment {
    pub(super) id: String,
    pub(super) zone: String,
    pub(super) start: Option<String>,
    pub(super) end: Option<String>,
    #[serde(default)]
    pub(super) variants: Vec<FileVariant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileVariant {
    pub(super) name: String,
    pub(super) weight: Option<i64>,
    pub(super) strategy: Option<String>,
    pub(super) fallback: Option<Vec<String>>,
    pub(super) count: Option<i64>,
    pub(super) history: Option<i64>,
    pub(super) recency: Option<f64>,
    pub(super) long_term: Option<f64>,
    pub(super) context: Option<i64>,
    pub(super) content: Option<f64>,
    pub(super) sessions: Option<f64>,
    pub(super) popularity: Option<f64>,
    pub(super) purchases: Option<f64>,
    pub(super) campaigns: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileModels {
    pub(super) partners: Option<u64>,
    pub(super) neighbours: Option<u64>,
    pub(super) partner_damping: Option<f64>,
    pub(super) seed_damping: Option<f64>,
    pub(super) co_view_window: Option<u64>,
    pub(super) co_purchase_window: Option<u64>,
    pub(super) purchase_partner_damping: Option<f64>,
    pub(super) purchase_seed_damping: Option<f64>,
    pub(super) co_view_forward: Option<f64>,
    pub(super) co_purchase_forward: Option<f64>,
    pub(super) sessions: Option<u64>,
    pub(super) session_neighbours: Option<u64>,
    pub(super) session_steps: Option<u64>,
    pub(super) tuning: Option<String>,
    pub(super) tuning_trials_per_second: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileRateLimit {
    pub(super) per_second: u64,
    pub(super) burst: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileZone {
    pub(super) id: String,
    pub(super) title: String,
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) strategy: Option<String>,
    #[serde(default)]
    pub(super) fallback: Vec<String>,
    pub(super) count: Option<i64>,
    #[serde(default)]
    pub(super) page_types: Vec<String>,
    #[serde(default)]
    pub(super) images: Vec<FileImage>,
    pub(super) template: Option<String>,
    pub(super) history: Option<i64>,
    pub(super) recency: Option<f64>,
    pub(super) long_term: Option<f64>,
    pub(super) context: Option<i64>,
    pub(super) content: Option<f64>,
    pub(super) sessions: Option<f64>,
    pub(super) popularity: Option<f64>,
    pub(super) purchases: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileImage {
    pub(super) url: String,
    #[serde(default)]
    pub(super) link: String,
    #[serde(default)]
    pub(super) alt: String,
}

/// What a zone or an experiment variant gives of a zone's recipe (`history` to
/// `purchases`, read from its own table: the keys sit beside the zone's others).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FileRecipe {
    pub(super) history: Option<i64>,
    pub(super) recency: Option<f64>,
    pub(super) long_term: Option<f64>,
    pub(super) context: Option<i64>,
    pub(super) content: Option<f64>,
    pub(super) sessions: Option<f64>,
    pub(super) popularity: Option<f64>,
    pub(super) purchases: Option<f64>,
}

/// The recipe's keys of a table that has them beside its others (a zone's, a
/// variant's): serde's `flatten` would lose `deny_unknown_fields`.
macro_rules! recipe_keys {
    ($table:expr) => {
        FileRecipe {
            history: $table.history,
            recency: $table.recency,
            long_term: $table.long_term,
            context: $table.context,
            content: $table.content,
            sessions: $table.sessions,
            popularity: $table.popularity,
            purchases: $table.purchases,
        }
    };
}

impl FileRecipe {
    /// Each setting this gives, else `base`'s.
    pub(super) fn or(self, base: FileRecipe) -> FileRecipe {
        FileRecipe {
            history: self.history.or(base.history),
            recency: self.recency.or(base.recency),
            long_term: self.long_term.or(base.long_term),
            context: self.context.or(base.context),
            content: self.content.or(base.content),
            sessions: self.sessions.or(base.sessions),
            popularity: self.popularity.or(base.popularity),
            purchases: self.purchases.or(base.purchases),
        }
    }
}

impl FileZone {
    /// What the zone gives of its recipe.
    pub(super) fn recipe(&self) -> FileRecipe {
        recipe_keys!(self)
    }
}

impl FileVariant {
    /// What the variant gives of its zone's recipe.
    pub(super) fn recipe(&self) -> FileRecipe {
        recipe_keys!(self)
    }
}
