//! Reloading the configuration without a restart: on SIGHUP the server reads its
//! configuration file again and puts it in force ([`AppState::reload`]); `vitrine reload`
//! sends the signal and reports the outcome.
//!
//! The outcome of every reload is written to `DATA_DIR/reload-status.json`
//! (`{"request":"…","ok":true,"message":"…"}`, atomically): `vitrine reload` first
//! writes a request id to `DATA_DIR/reload-request`, sends SIGHUP to the process holding
//! the data directory's lock, and waits for a status carrying its id. A plain
//! `kill -HUP` works too (its status carries whatever id the request file holds).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::{self, Config, ConfigError, Overrides};
use crate::state::AppState;

/// The file a reload's outcome is written to, in the data directory.
pub const STATUS_FILE: &str = "reload-status.json";
/// The file `vitrine reload` writes its request id to, in the data directory.
pub const REQUEST_FILE: &str = "reload-request";

/// Where the server's configuration comes from, to be read again on a reload.
#[derive(Debug, Clone)]
pub struct ConfigSource {
    /// The file given with `--config`, or `None` for the embedded demo.
    pub path: Option<PathBuf>,
    /// The command line's and environment's overrides.
    pub overrides: Overrides,
}

impl ConfigSource {
    /// Reads and validates the configuration.
    pub fn load(&self) -> Result<Config, ConfigError> {
        match &self.path {
            Some(path) => config::load_file(path, &self.overrides),
            None => config::demo(&self.overrides),
        }
    }
}

/// The outcome of one reload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadStatus {
    /// The id `vitrine reload` wrote to [`REQUEST_FILE`] (empty when there was none).
    pub request: String,
    /// Whether the new configuration is in force.
    pub ok: bool,
    /// What changed, or why the configuration was refused (as `vitrine serve` would
    /// print it).
    pub message: String,
}

/// Reads the configuration again and puts it in force; logs and records the outcome.
pub fn reload(state: &AppState, source: &ConfigSource) -> ReloadStatus {
    let data_dir = state.data_dir().to_path_buf();
    let request = std::fs::read_to_string(data_dir.join(REQUEST_FILE))
        .map(|text| text.trim().to_owned())
        .unwrap_or_default();
    let outcome = source
        .load()
        .map_err(|error| format!("error: {error}"))
        .and_then(|config| {
            state
                .reload(config)
                .map_err(|error| format!("error: {error}"))
        });
    let status = match outcome {
        Ok(report) => {
            tracing::info!(added = ?report.added, changed = ?report.changed, removed = ?report.removed, "configuration reloaded");
            ReloadStatus {
                request,
                ok: true,
                message: format!("configuration reloaded; {report}"),
            }
        }
        Err(message) => {
            tracing::error!(error = %message, "configuration reload refused; the configuration in force stays");
            ReloadStatus {
                request,
                ok: false,
                message,
            }
        }
    };
    let path = data_dir.join(STATUS_FILE);
    let written = serde_json::to_vec(&status)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            vitrine_snapshots::atomic_write(&data_dir, STATUS_FILE, &bytes)
                .map_err(|e| e.to_string())
        });
    if let Err(error) = written {
        tracing::error!(%error, path = %path.display(), "the reload status could not be written");
    }
    status
}

/// Takes over SIGHUP (whose default is to end the process): call before the server
/// says it is ready, then hand the result to [`on_hangup`].
pub fn hangups() -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
}

/// Reloads on every SIGHUP until the process ends (a reload runs on the blocking pool).
pub async fn on_hangup(
    state: Arc<AppState>,
    source: ConfigSource,
    mut hangups: tokio::signal::unix::Signal,
) {
    while hangups.recv().await.is_some() {
        let state = Arc::clone(&state);
        let source = source.clone();
        if let Err(error) = tokio::task::spawn_blocking(move || reload(&state, &source)).await {
            tracing::error!(%error, "the reload failed");
        }
    }
}

/// Asks the server running on `data_dir` to reload its configuration and waits (up to
/// `timeout`) for the outcome.
pub fn request(data_dir: &Path, timeout: Duration) -> Result<ReloadStatus, String> {
    let pid = vitrine_snapshots::datadir::holder(data_dir)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no server is running on {}", data_dir.display()))?;
    let id = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    vitrine_snapshots::atomic_write(data_dir, REQUEST_FILE, id.as_bytes())
        .map_err(|e| e.to_string())?;
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| format!("the data directory's lock names no process ({pid})"))?;
    rustix::process::kill_process(pid, rustix::process::Signal::HUP)
        .map_err(|e| format!("signalling process {}: {e}", pid.as_raw_nonzero()))?;
    let deadline = Instant::now() + timeout;
    let path = data_dir.join(STATUS_FILE);
    loop {
        let status = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<ReloadStatus>(&bytes).ok());
        if let Some(status) = status.filter(|s| s.request == id) {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the server (process {}) did not report a reload within {} s; see its log",
                pid.as_raw_nonzero(),
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
