//! Catalogue snapshots of one account, and its user file.
//!
//! A snapshot is the base archive of a catalogue at a log position (every delta before
//! it is in the archive). [`write_snapshot`] writes it (fsynced) and opens it again by
//! memory map, so the served base is the file on disk. The two newest snapshots are
//! kept; the caller deletes log segments behind the older of them, so that falling back
//! to it loses nothing.
//!
//! User records (from feeds' `Users` and deltas' `Users`) are account state rather than
//! catalogue; they are saved whole to `users.json` after every rebuild.

use std::path::{Path, PathBuf};

use vitrine_engine::account::UserRecord;
use vitrine_engine::catalogue::{Catalogue, CatalogueData};
use vitrine_snapshots::snapshot::{self, Kind};

/// File-name prefix of catalogue snapshots.
pub const PREFIX: &str = "catalogue";
/// Snapshots kept per account (the newest, and one to fall back to).
pub const KEEP: usize = 2;

/// Why a snapshot or the user file could not be saved.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StoreError(#[from] pub vitrine_snapshots::Error);

/// A snapshot that was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// Its file.
    pub path: PathBuf,
    /// Its sequence number.
    pub sequence: u64,
    /// The log position it covers.
    pub position: u64,
    /// Its size in bytes (payload).
    pub bytes: usize,
}

/// Writes `catalogue`'s base archive as the account's next snapshot at `position` and
/// returns the same catalogue read from the file (memory-mapped), without overlay.
pub fn write_snapshot(
    dir: &Path,
    catalogue: &Catalogue,
    position: u64,
) -> Result<(Catalogue, Saved), StoreError> {
    let sequence = snapshot::list(dir, PREFIX)?
        .first()
        .map_or(1, |(s, _)| s + 1);
    let payload = catalogue.archive_bytes();
    let path = snapshot::write(dir, PREFIX, Kind::Catalogue, sequence, position, payload)?;
    let (frozen, _) = snapshot::open::<CatalogueData>(&path, Kind::Catalogue)?;
    let saved = Saved {
        path,
        sequence,
        position,
        bytes: payload.len(),
    };
    Ok((Catalogue::from_frozen(frozen), saved))
}

/// Deletes all but the [`KEEP`] newest snapshots.
pub fn prune(dir: &Path) -> Result<(), StoreError> {
    snapshot::prune(dir, PREFIX, KEEP)?;
    Ok(())
}

/// File of an account's user records.
pub const USERS_FILE: &str = "users.json";

/// The co-view lists' setting self-tuning chose (written by the server; kept by
/// backups).
pub const TUNED_MODELS_FILE: &str = "tuned-models.json";

/// Saves the account's user records (fsynced).
pub fn save_users(dir: &Path, users: &[UserRecord]) -> Result<(), StoreError> {
    vitrine_snapshots::atomic_write(dir, USERS_FILE, &users_json(users))?;
    Ok(())
}

/// User records as [`USERS_FILE`] holds them.
pub fn users_json(users: &[UserRecord]) -> Vec<u8> {
    let records: Vec<serde_json::Value> = users
        .iter()
        .map(|u| {
            serde_json::json!({
                "UserId": u.user_id, "Email": u.email, "FirstName": u.first_name,
                "LastName": u.last_name, "Title": u.title,
                "DOB": u.dob.map(|d| d.to_string()), "Gender": u.gender, "City": u.city,
                "State": u.state, "Country": u.country, "GroupId": u.group_id,
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "Users": records })).unwrap_or_default()
}

/// Rewrites the account's user file from memory (after an erasure), if one exists.
pub fn persist_users(dir: &Path, users: &[UserRecord]) -> Result<(), StoreError> {
    if dir.join(USERS_FILE).exists() {
        save_users(dir, users)?;
    }
    Ok(())
}

/// The user records saved with the last snapshot (none when there is no file); records
/// that do not read back are returned as messages for the log.
pub fn restore_users(dir: &Path) -> (Vec<UserRecord>, Vec<String>) {
    let Ok(bytes) = std::fs::read(dir.join(USERS_FILE)) else {
        return (Vec::new(), Vec::new());
    };
    parse_users(&bytes)
}

/// User records written by [`users_json`]; records that do not read back are returned
/// as messages for the log.
pub fn parse_users(bytes: &[u8]) -> (Vec<UserRecord>, Vec<String>) {
    let value: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(error) => return (Vec::new(), vec![format!("{USERS_FILE}: {error}")]),
    };
    let mut users = Vec::new();
    let mut problems = Vec::new();
    let items = value
        .get("Users")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, item) in items.iter().enumerate() {
        let mut errors = vitrine_fields::Errors::default();
        match crate::record::user(item, &format!("Users[{i}]"), &mut errors) {
            Some(user) => users.push(user),
            None => problems.push(format!("{USERS_FILE}: {}", errors.joined())),
        }
    }
    (users, problems)
}

/// The newest valid snapshot of an account.
#[derive(Debug)]
pub struct Restored {
    /// The catalogue, memory-mapped.
    pub catalogue: Catalogue,
    /// The log position it covers.
    pub position: u64,
    /// Its file.
    pub path: PathBuf,
}

/// Opens the newest valid snapshot in `dir`; newer files that are unusable are returned
/// as messages for the log.
pub fn restore(dir: &Path) -> Result<(Option<Restored>, Vec<String>), StoreError> {
    let opened = snapshot::open_newest::<CatalogueData>(dir, PREFIX, Kind::Catalogue)?;
    let skipped = opened.skipped.iter().map(ToString::to_string).collect();
    let restored = opened.snapshot.map(|(frozen, header, path)| Restored {
        catalogue: Catalogue::from_frozen(frozen),
        position: header.position,
        path,
    });
    Ok((restored, skipped))
}
