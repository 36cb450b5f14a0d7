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
//! - [`threads`]: where serving and background threads run (`cpu_layout`).
//! - `error`: the crate's [`Error`], each naming the path involved.

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
pub mod threads;
pub mod wal;

mod error;

pub use atomic::atomic_write;
pub use datadir::DataDir;
pub use error::{Error, Result};
pub use frozen::Frozen;
