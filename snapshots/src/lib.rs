//! `vitrine-snapshots`: everything Vitrine keeps on disk.
//!
//! This crate knows bytes, files and directories, never product fields. Today it owns
//! the data directory ([`DataDir`]: created on start, locked so that two servers never
//! share one) and the atomic file write every snapshot goes through
//! ([`atomic_write`]: temp file, fsync, rename, directory fsync). The snapshot archives
//! and the write-ahead log are documented in `FORMAT.md` as they land.
//!
//! Modules:
//! - [`datadir`]: opening and locking the data directory.
//! - [`atomic`]: crash-safe whole-file writes.

#![forbid(unsafe_code)]

pub mod atomic;
pub mod datadir;

pub use atomic::atomic_write;
pub use datadir::DataDir;

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
    /// Another process holds the data directory.
    #[error("data directory {0} is in use by another process (its LOCK file is held)")]
    Locked(PathBuf),
}

/// Result of this crate's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

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
