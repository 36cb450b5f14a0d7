//! This crate's errors, each naming the path involved.

use std::path::PathBuf;

/// Errors of on-disk operations, each naming the path involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done, e.g. "creating directory".
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A snapshot file is truncated, corrupt or of another format.
    #[error("snapshot {path} is unusable: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The write-ahead log refused or failed an append.
    #[error("write-ahead log: {0}")]
    Wal(crate::wal::record::WalError),
    /// Another process holds the data directory.
    #[error("data directory {0} is in use by another process (its LOCK file is held)")]
    Locked(PathBuf),
    /// The log writer has more records waiting than it may (a slow disk): the append
    /// was refused rather than queued without bound.
    #[error(
        "the log writer is behind: {waiting} records are waiting to be written (the limit is {limit})"
    )]
    Backlog {
        /// Records waiting.
        waiting: u64,
        /// The limit.
        limit: u64,
    },
}

/// Result of this crate's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error of doing `action` on `path`, made from the system's error (for
    /// `map_err`).
    pub fn io(
        action: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Error {
        io_error(action, path)
    }
}

pub(crate) fn io_error(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io {
        action,
        path,
        source,
    }
}
