//! The server's own sections: `[durability]`, `[deltas]`, `[limits]`,
//! `[memory]`, `[feeds]` and `[admin]`, each validated with its defaults and bounds.

use std::net::SocketAddr;

use vitrine_ingest::jobs::BackgroundPriority;

use super::accounts::AccountConfig;
use super::checks::{ConfigError, within};
use super::file::{
    FileAdmin, FileAdminToken, FileDeltas, FileDurability, FileFeeds, FileLimits, FileMemory,
};
pub use super::region::Region;

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
    /// Bytes each account's zone cache holds at most (0: no cache).
    pub zone_cache_bytes: usize,
}

impl Default for MemoryConfig {
    fn default() -> MemoryConfig {
        MemoryConfig {
            max_visitors: 1_000_000,
            visitor_retention_days: 90,
            max_order_ids: 1_000_000,
            max_rss_mb: None,
            zone_cache_bytes: 0,
        }
    }
}

/// Shortest admin token accepted.
pub const MIN_ADMIN_TOKEN_LEN: usize = 24;

/// What an admin token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminRole {
    /// Reads and changes (campaigns, segments, restores).
    Editor,
    /// Reads only: its writes are refused with 403.
    Viewer,
}

impl AdminRole {
    /// Its name in the configuration and the API.
    pub fn name(self) -> &'static str {
        match self {
            AdminRole::Editor => "editor",
            AdminRole::Viewer => "viewer",
        }
    }
}

/// An admin token of `[admin] tokens`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminToken {
    /// The bearer token.
    pub token: String,
    /// What it may do (a plain token is an editor).
    pub role: AdminRole,
    /// Who it is, as the audit log names it (default `tokens[i]`).
    pub label: String,
}

/// Longest admin token label.
pub(super) const MAX_LABEL_LEN: usize = 64;

/// `[admin] tokens`, validated: long enough to be secret, printable, and none of them a
/// store's key (the store keys must never open the admin API); a role of `editor` or
/// `viewer`, a label of printable characters.
pub(super) fn admin_tokens(
    file: &FileAdmin,
    accounts: &[AccountConfig],
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<Vec<AdminToken>, ConfigError> {
    let mut tokens: Vec<AdminToken> = Vec::with_capacity(file.tokens.len());
    for (i, entry) in file.tokens.iter().enumerate() {
        let key = format!("admin.tokens[{i}]");
        let token = entry.token();
        let token_key = match entry {
            FileAdminToken::Plain(_) => key.clone(),
            FileAdminToken::Table(_) => format!("{key}.token"),
        };
        if token.len() < MIN_ADMIN_TOKEN_LEN {
            return Err(err(
                &token_key,
                format!(
                    "must be at least {MIN_ADMIN_TOKEN_LEN} characters, got {}",
                    token.len()
                ),
            ));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(err(
                &token_key,
                "must be printable ASCII without spaces".to_owned(),
            ));
        }
        if accounts
            .iter()
            .any(|a| a.access_key == *token || a.secret_key == *token)
        {
            return Err(err(
                &token_key,
                "must not be an account's access key or secret key".to_owned(),
            ));
        }
        if tokens.iter().any(|t| t.token == token) {
            return Err(err(&token_key, "is given twice".to_owned()));
        }
        let (role, label) = match entry {
            FileAdminToken::Plain(_) => (AdminRole::Editor, None),
            FileAdminToken::Table(table) => {
                let role = match table.role.as_deref() {
                    None | Some("editor") => AdminRole::Editor,
                    Some("viewer") => AdminRole::Viewer,
                    Some(other) => {
                        return Err(err(
                            &format!("{key}.role"),
                            format!("expected \"editor\" or \"viewer\", got {other:?}"),
                        ));
                    }
                };
                (role, table.label.clone())
            }
        };
        let label = label.unwrap_or_else(|| format!("tokens[{i}]"));
        if label.is_empty() || label.len() > MAX_LABEL_LEN || label.chars().any(char::is_control) {
            return Err(err(
                &format!("{key}.label"),
                format!("expected 1 to {MAX_LABEL_LEN} printable characters"),
            ));
        }
        tokens.push(AdminToken {
            token: token.to_owned(),
            role,
            label,
        });
    }
    Ok(tokens)
}

/// The `[durability]` table, validated.
#[derive(Debug, Clone, Copy)]
pub(super) struct Durability {
    pub(super) events_fsync: EventsFsync,
    pub(super) fsync_interval_ms: u64,
    pub(super) wal_segment_bytes: u64,
    pub(super) state_snapshot_interval_secs: u64,
}

pub(super) fn durability(
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
        within(value.unwrap_or(default), min, max).map_err(|message| err(key, message.to_string()))
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

pub(super) fn delta_config(
    file: &FileDeltas,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<DeltaConfig, ConfigError> {
    let range = |key: &str, value: Option<u64>, default: u64, min: u64, max: u64| {
        within(value.unwrap_or(default), min, max).map_err(|message| err(key, message.to_string()))
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

pub(super) fn limits(
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

pub(super) fn memory_config(
    file: &FileMemory,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<MemoryConfig, ConfigError> {
    let defaults = MemoryConfig::default();
    let pick = |value: Option<u64>, default: u64, key: &str, min: u64, max: u64| {
        within(value.unwrap_or(default), min, max)
            .map_err(|m| err(&format!("memory.{key}"), m.to_string()))
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
            Some(mb) => {
                Some(within(mb, 1, 16 << 20).map_err(|m| err("memory.max_rss_mb", m.to_string()))?)
            }
        },
        zone_cache_bytes: pick(
            file.zone_cache_mib,
            (defaults.zone_cache_bytes >> 20) as u64,
            "zone_cache_mib",
            0,
            64 << 10,
        )? as usize
            * (1 << 20),
    })
}

pub(super) fn feed_config(
    file: &FileFeeds,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<FeedConfig, ConfigError> {
    let range = |value: u64, key: &str, min: u64, max: u64| {
        within(value, min, max).map_err(|message| err(&format!("feeds.{key}"), message.to_string()))
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
