//! Asking a running server to do something, from the command line: reload its
//! configuration (SIGHUP: the server reads its configuration file again and puts it in
//! force, [`AppState::reload`]; `vitrine reload`), or write and fsync every log record
//! it has acknowledged (SIGUSR1; `vitrine backup` asks it before it copies).
//!
//! The outcome of each is written to `DATA_DIR/<what>-status.json`
//! (`{"request":"…","ok":true,"message":"…"}`, atomically): the command first writes a
//! request id to `DATA_DIR/<what>-request`, sends the signal to the process holding the
//! data directory's lock, and waits for a status carrying its id. A plain `kill -HUP`
//! works too (its status carries whatever id the request file holds).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::{self, Config, ConfigError, Overrides};
use crate::state::AppState;

/// A request a running server answers: its signal and files.
#[derive(Debug, Clone, Copy)]
pub struct Control {
    /// The signal that asks.
    pub signal: rustix::process::Signal,
    /// The file the asker writes its request id to, in the data directory.
    pub request_file: &'static str,
    /// The file the server writes the outcome to, in the data directory.
    pub status_file: &'static str,
}

/// Read the configuration again and put it in force.
pub const RELOAD: Control = Control {
    signal: rustix::process::Signal::HUP,
    request_file: "reload-request",
    status_file: "reload-status.json",
};

/// Write and fsync every log record acknowledged so far.
pub const FLUSH: Control = Control {
    signal: rustix::process::Signal::USR1,
    request_file: "flush-request",
    status_file: "flush-status.json",
};

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
            None => {
                // The demo opens its console with the token of its data directory.
                let mut demo = config::demo(&self.overrides)?;
                let token = config::demo::console_token(&demo.data_dir)?;
                demo.admin_tokens.push(token);
                Ok(demo)
            }
        }
    }
}

/// The outcome of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlStatus {
    /// The id the asker wrote to the request file (empty when there was none).
    pub request: String,
    /// Whether it was done (for a reload: the new configuration is in force).
    pub ok: bool,
    /// What was done, or why not (for a refused reload: as `vitrine serve` would print
    /// it).
    pub message: String,
}

/// The id in `control`'s request file, if any.
fn request_id(data_dir: &Path, control: Control) -> String {
    std::fs::read_to_string(data_dir.join(control.request_file))
        .map(|text| text.trim().to_owned())
        .unwrap_or_default()
}

/// Writes `status` to `control`'s status file.
fn record(data_dir: &Path, control: Control, status: &ControlStatus) {
    let written = serde_json::to_vec(status)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            vitrine_snapshots::atomic_write(data_dir, control.status_file, &bytes)
                .map_err(|e| e.to_string())
        });
    if let Err(error) = written {
        tracing::error!(%error, file = control.status_file, "a status could not be written");
    }
}

/// Writes and fsyncs every account's log up to the last record acknowledged; records
/// the outcome.
pub fn flush(state: &AppState) -> ControlStatus {
    let data_dir = state.data_dir().to_path_buf();
    let request = request_id(&data_dir, FLUSH);
    let accounts = state.accounts();
    let failed: Vec<String> = accounts
        .iter()
        .filter_map(|entry| {
            let synced = entry.jobs.sync_log();
            synced
                .err()
                .map(|error| format!("{}: {error}", entry.config.access_key))
        })
        .collect();
    let status = ControlStatus {
        request,
        ok: failed.is_empty(),
        message: if failed.is_empty() {
            format!(
                "the logs of {} accounts are written and fsynced",
                accounts.len()
            )
        } else {
            format!("the logs could not be synced: {}", failed.join("; "))
        },
    };
    if status.ok {
        tracing::info!("logs flushed on request");
    } else {
        tracing::error!(error = %status.message, "flushing the logs failed");
    }
    record(&data_dir, FLUSH, &status);
    status
}

/// Reads the configuration again and puts it in force; logs and records the outcome.
pub fn reload(state: &AppState, source: &ConfigSource) -> ControlStatus {
    let data_dir = state.data_dir().to_path_buf();
    let request = request_id(&data_dir, RELOAD);
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
            ControlStatus {
                request,
                ok: true,
                message: format!("configuration reloaded; {report}"),
            }
        }
        Err(message) => {
            tracing::error!(error = %message, "configuration reload refused; the configuration in force stays");
            ControlStatus {
                request,
                ok: false,
                message,
            }
        }
    };
    record(&data_dir, RELOAD, &status);
    status
}

/// Takes over SIGHUP (whose default is to end the process): call before the server
/// says it is ready, then hand the result to [`on_hangup`].
pub fn hangups() -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
}

/// Takes over SIGUSR1 (whose default is to end the process): call before the server
/// says it is ready, then hand the result to [`on_flush_request`].
pub fn flush_requests() -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
}

/// Flushes the logs on every SIGUSR1 until the process ends (on the blocking pool).
pub async fn on_flush_request(state: Arc<AppState>, mut requests: tokio::signal::unix::Signal) {
    while requests.recv().await.is_some() {
        let state = Arc::clone(&state);
        if let Err(error) = tokio::task::spawn_blocking(move || flush(&state)).await {
            tracing::error!(%error, "flushing the logs failed");
        }
    }
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

/// Why a running server could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The data directory's lock or request file could not be read or written.
    #[error("{0}")]
    DataDir(vitrine_snapshots::Error),
    /// No server holds the data directory.
    #[error("no server is running on {}", .0.display())]
    NotRunning(std::path::PathBuf),
    /// The lock names no process that can be signalled.
    #[error("the data directory's lock names no process ({0})")]
    NoProcess(u32),
    /// The signal could not be sent.
    #[error("signalling process {pid}: {reason}")]
    Signal {
        /// The server's process.
        pid: i32,
        /// The system's reason.
        reason: String,
    },
    /// The server did not write its answer in time.
    #[error("the server (process {pid}) did not answer within {seconds} s; see its log")]
    NoAnswer {
        /// The server's process.
        pid: i32,
        /// The time waited.
        seconds: u64,
    },
}

/// Asks the server running on `data_dir` for `control` and waits (up to `timeout`) for
/// the outcome.
pub fn request(
    data_dir: &Path,
    control: Control,
    timeout: Duration,
) -> Result<ControlStatus, ControlError> {
    let pid = vitrine_snapshots::datadir::holder(data_dir)
        .map_err(ControlError::DataDir)?
        .ok_or_else(|| ControlError::NotRunning(data_dir.to_owned()))?;
    let id = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    vitrine_snapshots::atomic_write(data_dir, control.request_file, id.as_bytes())
        .map_err(ControlError::DataDir)?;
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or(ControlError::NoProcess(pid))?;
    rustix::process::kill_process(pid, control.signal).map_err(|e| ControlError::Signal {
        pid: pid.as_raw_nonzero().get(),
        reason: e.to_string(),
    })?;
    let deadline = Instant::now() + timeout;
    let path = data_dir.join(control.status_file);
    loop {
        let status = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<ControlStatus>(&bytes).ok());
        if let Some(status) = status.filter(|s| s.request == id) {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            return Err(ControlError::NoAnswer {
                pid: pid.as_raw_nonzero().get(),
                seconds: timeout.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
