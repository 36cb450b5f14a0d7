//! `vitrine-snapshots`: everything Vitrine keeps on disk.
//!
//! This crate knows bytes, files and directories, never product fields: the data
//! directory ([`DataDir`]: created on start, locked so that two servers never share
//! one), the atomic file write every file goes through ([`atomic_write`]: temp file,
//! fsync, rename, directory fsync), snapshot files (header + checksums + rkyv archive,
//! opened by memory map with fallback to an older file), and [`Frozen<T>`], the
//! validated archive that serving reads in place. Byte layouts are in `FORMAT.md`.
//!
//! It is the only crate with `unsafe` (the memory map and the unchecked archive access
//! after validation); each block carries a `SAFETY:` comment.
//!
//! Modules:
//! - [`datadir`]: opening and locking the data directory.
//! - [`atomic`]: crash-safe whole-file writes.
//! - [`frozen`]: validated rkyv archives, owned or memory-mapped.
//! - [`snapshot`]: snapshot files: write, list, open newest valid, prune.
//! - [`wal`]: the write-ahead log: framed records, group commit, recovery.
//! - [`metrics`]: the duration histograms the crates keep for `/metrics`.

#![deny(unsafe_code)]

pub mod atomic;
pub mod datadir;
#[expect(
    unsafe_code,
    reason = "the memory map and unchecked access to an archive validated once; each block has a SAFETY comment"
)]
pub mod frozen;
pub mod metrics;
#[expect(
    unsafe_code,
    reason = "mapping a snapshot file read-only; see its SAFETY comment"
)]
pub mod snapshot;
pub mod wal;

pub use atomic::atomic_write;
pub use datadir::DataDir;
pub use frozen::Frozen;

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
    Wal(wal::WalError),
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
