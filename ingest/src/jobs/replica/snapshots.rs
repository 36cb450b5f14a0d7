//! Snapshots of a cluster's account for nodes that join later: the files a data
//! directory needs (a catalogue snapshot, a state snapshot, the user records, the delta
//! statuses, the feed jobs), written by one node into a directory of their own, tagged
//! with the replicated log's sequence each includes (see `vitrine-cluster`, which
//! stores them in the object store and trims the replicated log behind them).
//!
//! A node that starts with an empty directory gets those files and a
//! [`FLOORS_FILE`]: it reads the replicated log after the lower of the two sequences,
//! and skips the deltas (and feed records) the catalogue includes and the events and
//! erasures the state includes.
//!
//! The catalogue is exact: taken at the delta worker's batch boundary, tagged with the
//! position before the first delta read and still waiting to be applied (the position
//! read when none waits), and the delta statuses taken with it (so that every
//! delta they name is in it: a node applies a delta once per token, and takes one it
//! holds a status for as read already). The state is as
//! exact as a local state snapshot: an order is in it whole or not at all (see the
//! engine's `tracking::cut`), so a node restored from it counts each order once; other
//! events applied while it is exported, and this node's own events applied before they
//! reached the replicated log, may be counted a second time (the same window as a
//! restart's replay).

use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use vitrine_snapshots::snapshot::{self, Kind};

use crate::jobs::AccountJobs;
use crate::jobs::replica::POSITION_FILE;
use crate::jobs::replica::port::ReplicationError;
use crate::{state, store};

/// The file of a restored account directory naming what its snapshots include.
pub const FLOORS_FILE: &str = "stream-floors";

/// The replicated log's sequences a restored directory's snapshots include.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floors {
    /// Every delta and feed record through it is in the catalogue.
    pub catalogue: u64,
    /// Every request, event and erasure through it is in the state.
    pub state: u64,
}

impl Floors {
    /// Reads [`FLOORS_FILE`] of an account directory (none: zeros).
    pub(in crate::jobs) fn load(dir: &Path) -> Floors {
        fs::read(dir.join(FLOORS_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }
}

/// A snapshot set written by [`AccountJobs::cluster_snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotSet {
    /// What the set includes.
    pub floors: Floors,
    /// Its files, relative to the directory it was written in.
    pub files: Vec<String>,
}

impl AccountJobs {
    /// See [`ReplicaNode::cluster_snapshot`](crate::jobs::ReplicaNode::cluster_snapshot),
    /// which the cluster calls.
    pub(in crate::jobs) fn cluster_snapshot(
        &self,
        out: &Path,
    ) -> Result<SnapshotSet, ReplicationError> {
        let shared = &self.shared;
        // The catalogue at the delta worker's batch boundary: with the writer held, it
        // includes every delta read before the first one still waiting to be applied
        // (all of them when none waits), and the statuses taken with it name only
        // those.
        let (catalogue, catalogue_floor, statuses) = {
            let _writer = shared.account.writer();
            let position = shared.stream_position.load(Ordering::Acquire);
            let first_pending = shared.deltas.stream_pending.lock().front().copied();
            let floor = first_pending.map_or(position, |first| position.min(first - 1));
            let statuses = shared.deltas.statuses.decided();
            (shared.account.catalogue(), floor, statuses)
        };
        let write = |bytes: &[u8]| {
            snapshot::write(out, store::PREFIX, Kind::Catalogue, 1, 1, bytes)
                .map(|_| ())
                .map_err(|e| ReplicationError::failed("the catalogue snapshot", e))
        };
        if catalogue.has_overlay() {
            let compacted = shared
                .config
                .pool
                .install(|| catalogue.compact())
                .map_err(|e| ReplicationError::failed("compacting the catalogue", e))?;
            write(compacted.archive_bytes())?;
        } else {
            write(catalogue.archive_bytes())?;
        }
        drop(catalogue);
        // The state: everything through the position read first is in it.
        let state_floor = shared.stream_position.load(Ordering::Acquire);
        // Saved once the log holds every event the export includes (see `applying`):
        // what this node took and a crash then lost is in no set either.
        state::write(out, &shared.account, 1, || {
            shared.applying.wait_for_earlier();
            shared.wal.sync().map(|_| ())
        })
        .map_err(|e| ReplicationError::failed("the state snapshot", e))?;
        store::save_users(out, &shared.account.users())
            .map_err(|e| ReplicationError::failed("the users file", e))?;
        statuses
            .save(out)
            .map_err(|e| ReplicationError::failed("the delta statuses", e))?;
        let feeds = out.join("feeds");
        fs::create_dir_all(&feeds).map_err(|e| ReplicationError::file(&feeds, e))?;
        let jobs = shared.dir.join("feeds");
        for entry in fs::read_dir(&jobs).map_err(|e| ReplicationError::file(&jobs, e))? {
            let path = entry.map_err(|e| ReplicationError::file(&jobs, e))?.path();
            if path.extension().is_some_and(|e| e == "job")
                && let Some(name) = path.file_name()
            {
                fs::copy(&path, feeds.join(name)).map_err(|e| ReplicationError::file(&path, e))?;
            }
        }
        let floors = Floors {
            catalogue: catalogue_floor,
            state: state_floor,
        };
        let text =
            serde_json::to_vec(&floors).map_err(|e| ReplicationError::failed(FLOORS_FILE, e))?;
        fs::write(out.join(FLOORS_FILE), text)
            .map_err(|e| ReplicationError::file(&out.join(FLOORS_FILE), e))?;
        let position = catalogue_floor.min(state_floor);
        fs::write(out.join(POSITION_FILE), format!("{position}\n"))
            .map_err(|e| ReplicationError::file(&out.join(POSITION_FILE), e))?;
        let mut files = Vec::new();
        collect(out, out, &mut files).map_err(|e| ReplicationError::file(out, e))?;
        files.sort();
        Ok(SnapshotSet { floors, files })
    }
}

/// The files under `dir`, relative to `root`.
fn collect(root: &Path, dir: &Path, files: &mut Vec<String>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(root, &path, files)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            files.push(relative.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

/// Whether an account directory has nothing of its own yet (no snapshot, no log): a
/// node may restore it from the cluster's snapshots.
pub fn is_fresh(dir: &Path) -> bool {
    let has_log = fs::read_dir(dir.join("wal"))
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false);
    let has_snapshot = snapshot::list(dir, store::PREFIX).is_ok_and(|list| !list.is_empty());
    !has_log && !has_snapshot
}
