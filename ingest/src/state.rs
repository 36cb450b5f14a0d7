//! State snapshots of one account: its visitors, sessions, orders, identity links and
//! model counters at a log position (every tracking record before it is in the
//! snapshot; records at or after it may be too, and are applied again on restore,
//! which orders absorb and visitor histories mostly do).
//!
//! The payload is a sequence of frames, `length (u32 LE) | rkyv archive of one
//! StateEntry`, so that a snapshot is written and read one entry at a time. Two
//! snapshots are kept; the log is cut only behind the older one, so falling back to it
//! loses nothing.

use std::path::{Path, PathBuf};

use rkyv::rancor;
use rkyv::util::AlignedVec;
use vitrine_engine::Account;
use vitrine_engine::state::StateEntry;
use vitrine_snapshots::snapshot::{self, Kind};

use crate::store::{KEEP, Saved, StoreError};

/// File-name prefix of state snapshots.
pub const PREFIX: &str = "state";

/// Writes `account`'s tracking state as its next state snapshot at `position`, then
/// deletes all but the [`KEEP`] newest. `before_saving` runs between the export and the
/// file's saving (a snapshot's caller waits there for the log to hold what the export
/// includes).
pub fn write(
    dir: &Path,
    account: &Account,
    position: u64,
    before_saving: impl FnOnce() -> Result<(), vitrine_snapshots::Error>,
) -> Result<Saved, StoreError> {
    let sequence = snapshot::list(dir, PREFIX)?
        .first()
        .map_or(1, |(s, _)| s + 1);
    let mut payload = Vec::new();
    let mut failed = None;
    account.export_state(&mut |entry| match rkyv::to_bytes::<rancor::Error>(&entry) {
        Ok(bytes) => {
            payload.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            payload.extend_from_slice(&bytes);
        }
        Err(error) => failed = Some(error.to_string()),
    });
    if let Some(reason) = failed {
        return Err(StoreError::from(vitrine_snapshots::Error::Corrupt {
            path: dir.join(snapshot::file_name(PREFIX, sequence)),
            reason: format!("an entry could not be archived: {reason}"),
        }));
    }
    before_saving()?;
    let path = snapshot::write(dir, PREFIX, Kind::State, sequence, position, &payload)?;
    snapshot::prune(dir, PREFIX, KEEP)?;
    Ok(Saved {
        path,
        sequence,
        position,
        bytes: payload.len(),
    })
}

/// A state snapshot that was restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredState {
    /// Its file.
    pub path: PathBuf,
    /// The log position it covers.
    pub position: u64,
    /// Entries restored.
    pub entries: usize,
}

/// Restores the newest valid state snapshot into `account` (which has no tracking state
/// yet); newer files that are unusable are returned as messages for the log. A snapshot
/// is used whole or not at all.
pub fn restore(
    dir: &Path,
    account: &Account,
) -> Result<(Option<RestoredState>, Vec<String>), StoreError> {
    let mut skipped = Vec::new();
    for (_, path) in snapshot::list(dir, PREFIX)? {
        let read = snapshot::read_checked(&path, Kind::State)
            .map_err(|e| e.to_string())
            .and_then(|(payload, header)| {
                let entries = decode(&payload).map_err(|e| e.to_string())?;
                Ok((entries, header))
            });
        match read {
            Ok((entries, header)) => {
                let count = entries.len();
                for entry in entries {
                    account.restore_entry(entry);
                }
                return Ok((
                    Some(RestoredState {
                        path,
                        position: header.position,
                        entries: count,
                    }),
                    skipped,
                ));
            }
            Err(reason) => {
                let aside = snapshot::set_aside(&path)?;
                skipped.push(format!(
                    "{}: {reason} (set aside as {})",
                    path.display(),
                    aside.display()
                ));
            }
        }
    }
    Ok((None, skipped))
}

/// Why a state snapshot's payload does not read: the frame (counted from 0) that is not
/// a whole, valid entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The frame ends before its length says.
    #[error("frame {0} is cut short")]
    CutShort(usize),
    /// The frame is not an rkyv archive of a state entry (rkyv's reason).
    #[error("frame {frame} is not a state entry: {reason}")]
    NotAnEntry {
        /// The frame.
        frame: usize,
        /// Why.
        reason: String,
    },
}

/// Reads the frames of a state snapshot's payload; any frame that is not a whole, valid
/// entry makes the snapshot unusable.
pub fn decode(payload: &[u8]) -> Result<Vec<StateEntry>, FrameError> {
    let mut entries = Vec::new();
    let mut rest = payload;
    let mut aligned = AlignedVec::<16>::new();
    while !rest.is_empty() {
        let (len, body) = rest
            .split_first_chunk::<4>()
            .ok_or(FrameError::CutShort(entries.len()))?;
        let len = u32::from_le_bytes(*len) as usize;
        let frame = body.get(..len).ok_or(FrameError::CutShort(entries.len()))?;
        aligned.clear();
        aligned.extend_from_slice(frame);
        let entry = rkyv::from_bytes::<StateEntry, rancor::Error>(&aligned).map_err(|e| {
            FrameError::NotAnEntry {
                frame: entries.len(),
                reason: e.to_string(),
            }
        })?;
        entries.push(entry);
        rest = body.get(len..).unwrap_or_default();
    }
    Ok(entries)
}
