//! Backups of a data directory, taken while the server runs, and their restore.
//!
//! A backup is a directory: `manifest.json` and `data/`, a copy of the data directory's
//! files that a server needs (the erasure key; per account its snapshots, write-ahead
//! log segments, user records, delta statuses, erased identifiers and feed jobs), each
//! listed in the manifest with its size and SHA-256.
//!
//! Consistency without stopping the server rests on how it writes: every file but the
//! log segments is written whole and renamed into place, and log segments are only
//! appended to. Per account the snapshots are copied first, then the log segments; a
//! copy is consistent when the segments copied reach back to the position of the
//! newest snapshot of each kind copied (a rebuild that deleted older segments
//! meanwhile is detected, and the account is copied again). The caller first makes the
//! server write and fsync what it has acknowledged (`vitrine backup` asks it by
//! signal), so the log copied holds every delta and event acknowledged before the
//! backup began; a record being written while a segment is copied may be cut short in
//! the copy, which a restored server's recovery cuts away like a torn tail.
//!
//! A restore checks every file against the manifest before it writes anything, into a
//! data directory that must be new or empty.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use vitrine_snapshots::{snapshot, wal};

use crate::{state, store};

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// The directory of the copied files inside a backup.
pub const DATA: &str = "data";
/// Format of the manifest.
pub const FORMAT: u32 = 1;
/// Times an account is copied again when the server rebuilt it meanwhile.
pub const ATTEMPTS: usize = 5;

/// What a backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// When it was taken, Unix milliseconds.
    pub created_at_ms: i64,
    /// Every file, by path relative to `data/`.
    pub files: Vec<FileEntry>,
}

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the data directory, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256 of the content, lower-case hex.
    pub sha256: String,
}

/// Why a backup or a restore failed.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// A file could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The destination exists and is not empty.
    #[error("{0} exists and is not empty")]
    NotEmpty(PathBuf),
    /// An account kept changing while it was copied.
    #[error(
        "account directory {account} changed under every one of {ATTEMPTS} copies (rebuilds back to back); try again"
    )]
    Unsettled {
        /// The account's directory name.
        account: String,
    },
    /// The backup is incomplete or damaged.
    #[error("the backup is damaged: {0}")]
    Damaged(String),
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BackupError {
    let path = path.to_path_buf();
    move |source| BackupError::Io {
        action,
        path,
        source,
    }
}

/// Copies `data_dir` into `out` (created; must be new or empty) and writes its
/// manifest. The server may be running on `data_dir`: see the module's notes.
pub fn backup(data_dir: &Path, out: &Path) -> Result<Manifest, BackupError> {
    ensure_empty(out)?;
    let target = out.join(DATA);
    fs::create_dir_all(&target).map_err(io("creating directory", &target))?;
    let mut files = Vec::new();
    let key = data_dir.join(crate::erasure::KEY_FILE);
    if key.exists() {
        files.push(copy_file(
            data_dir,
            &target,
            Path::new(crate::erasure::KEY_FILE),
        )?);
    }
    let accounts = data_dir.join("accounts");
    let mut names: Vec<String> = match fs::read_dir(&accounts) {
        Ok(entries) => entries
            .flatten()
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io("reading directory", &accounts)(e)),
    };
    names.sort();
    for name in names {
        files.extend(copy_account(data_dir, &target, &name)?);
    }
    let manifest = Manifest {
        format: FORMAT,
        created_at_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        files,
    };
    let text = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| BackupError::Damaged(format!("the manifest could not be encoded: {e}")))?;
    vitrine_snapshots::atomic_write(out, MANIFEST, &text).map_err(|e| BackupError::Io {
        action: "writing",
        path: out.join(MANIFEST),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(manifest)
}

/// Copies one account; again from scratch (at most [`ATTEMPTS`] times) when the copy
/// turns out inconsistent because the server rebuilt the account meanwhile.
fn copy_account(data_dir: &Path, target: &Path, name: &str) -> Result<Vec<FileEntry>, BackupError> {
    let relative = Path::new("accounts").join(name);
    for _ in 0..ATTEMPTS {
        let destination = target.join(&relative);
        if destination.exists() {
            fs::remove_dir_all(&destination).map_err(io("removing", &destination))?;
        }
        match try_copy_account(data_dir, target, &relative)? {
            Some(files) => return Ok(files),
            None => continue,
        }
    }
    Err(BackupError::Unsettled {
        account: name.to_owned(),
    })
}

/// One copy of an account, or `None` when a file vanished or the log copied does not
/// reach back to the snapshots copied.
fn try_copy_account(
    data_dir: &Path,
    target: &Path,
    relative: &Path,
) -> Result<Option<Vec<FileEntry>>, BackupError> {
    let source = data_dir.join(relative);
    let mut files = Vec::new();
    // Snapshots first, with the position each covers.
    let mut needed_from = u64::MAX;
    for prefix in [store::PREFIX, state::PREFIX] {
        let listed = snapshot::list(&source, prefix).map_err(|e| BackupError::Io {
            action: "listing snapshots in",
            path: source.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut newest_position = None;
        for (_, path) in &listed {
            let Some(name) = path.file_name() else {
                continue;
            };
            let Some(entry) = copy_if_present(data_dir, target, &relative.join(name))? else {
                return Ok(None);
            };
            if newest_position.is_none() {
                let copied = target.join(relative).join(name);
                newest_position = snapshot::read_header(&copied).ok().map(|h| h.position);
            }
            files.push(entry);
        }
        if let Some(position) = newest_position {
            needed_from = needed_from.min(position);
        }
    }
    // Whole files written by rename: users, statuses, erased identifiers, the tuned
    // model setting, feed jobs.
    for name in [
        store::USERS_FILE,
        crate::jobs::STATUS_FILE,
        crate::erasure::FORGOTTEN_FILE,
        store::TUNED_MODELS_FILE,
    ] {
        if let Some(entry) = copy_if_present(data_dir, target, &relative.join(name))? {
            files.push(entry);
        }
    }
    let feeds = source.join("feeds");
    if let Ok(entries) = fs::read_dir(&feeds) {
        let mut jobs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "job"))
            .collect();
        jobs.sort();
        for job in jobs {
            let Some(name) = job.file_name() else {
                continue;
            };
            if let Some(entry) =
                copy_if_present(data_dir, target, &relative.join("feeds").join(name))?
            {
                files.push(entry);
            }
        }
    }
    // Then the log: every segment, in order; they must reach back to the snapshots.
    let log = source.join("wal");
    let segments = wal::segments(&log).map_err(|e| BackupError::Io {
        action: "listing the log in",
        path: log.clone(),
        source: std::io::Error::other(e.to_string()),
    })?;
    if let Some((first, _)) = segments.first()
        && needed_from != u64::MAX
        && *first > needed_from.max(1)
    {
        return Ok(None);
    }
    for (_, path) in &segments {
        let Some(name) = path.file_name() else {
            continue;
        };
        match copy_if_present(data_dir, target, &relative.join("wal").join(name))? {
            Some(entry) => files.push(entry),
            None => return Ok(None),
        }
    }
    Ok(Some(files))
}

/// Copies `relative` from `data_dir` to `target`; `None` when it no longer exists.
fn copy_if_present(
    data_dir: &Path,
    target: &Path,
    relative: &Path,
) -> Result<Option<FileEntry>, BackupError> {
    match copy_file(data_dir, target, relative) {
        Ok(entry) => Ok(Some(entry)),
        Err(BackupError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(other) => Err(other),
    }
}

/// Copies one file (read whole, written and fsynced), returning its manifest entry.
fn copy_file(data_dir: &Path, target: &Path, relative: &Path) -> Result<FileEntry, BackupError> {
    let from = data_dir.join(relative);
    let bytes = fs::read(&from).map_err(io("reading", &from))?;
    let to = target.join(relative);
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(io("creating directory", parent))?;
    }
    write_synced(&to, &bytes)?;
    Ok(FileEntry {
        path: relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        bytes: bytes.len() as u64,
        sha256: hex(&Sha256::digest(&bytes)),
    })
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), BackupError> {
    let mut file = fs::File::create(path).map_err(io("creating", path))?;
    file.write_all(bytes).map_err(io("writing", path))?;
    file.sync_all().map_err(io("syncing", path))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn ensure_empty(dir: &Path) -> Result<(), BackupError> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(BackupError::NotEmpty(dir.to_path_buf()));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(io("creating directory", dir))
        }
        Err(e) => Err(io("reading directory", dir)(e)),
    }
}

/// Reads and checks `backup` (every file of its manifest present, with its size and
/// SHA-256), then copies it into `data_dir`, which must be new or empty.
pub fn restore(backup: &Path, data_dir: &Path) -> Result<Manifest, BackupError> {
    let manifest_path = backup.join(MANIFEST);
    let text = fs::read(&manifest_path).map_err(io("reading", &manifest_path))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| BackupError::Damaged(format!("{MANIFEST}: {e}")))?;
    if manifest.format != FORMAT {
        return Err(BackupError::Damaged(format!(
            "{MANIFEST}: format {} (this version reads {FORMAT})",
            manifest.format
        )));
    }
    let source = backup.join(DATA);
    let mut contents = Vec::with_capacity(manifest.files.len());
    for entry in &manifest.files {
        let relative = safe_relative(&entry.path)?;
        let path = source.join(&relative);
        let bytes =
            fs::read(&path).map_err(|e| BackupError::Damaged(format!("{}: {e}", entry.path)))?;
        if bytes.len() as u64 != entry.bytes || hex(&Sha256::digest(&bytes)) != entry.sha256 {
            return Err(BackupError::Damaged(format!(
                "{}: its content does not match the manifest",
                entry.path
            )));
        }
        contents.push((relative, bytes));
    }
    ensure_empty(data_dir)?;
    for (relative, bytes) in contents {
        let to = data_dir.join(&relative);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(io("creating directory", parent))?;
        }
        write_synced(&to, &bytes)?;
    }
    Ok(manifest)
}

/// A manifest path as a relative path that stays inside the data directory.
fn safe_relative(path: &str) -> Result<PathBuf, BackupError> {
    let relative: PathBuf = path.split('/').collect();
    let inside = path
        .split('/')
        .all(|part| !part.is_empty() && part != "." && part != "..")
        && relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if inside {
        Ok(relative)
    } else {
        Err(BackupError::Damaged(format!(
            "{path:?} is not a path inside the data directory"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_restores_byte_for_byte_and_a_damaged_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let account = data.join("accounts").join("6162");
        fs::create_dir_all(account.join("wal")).unwrap();
        fs::create_dir_all(account.join("feeds")).unwrap();
        fs::write(data.join(crate::erasure::KEY_FILE), [7u8; 32]).unwrap();
        fs::write(account.join("users.json"), b"[]").unwrap();
        fs::write(account.join("tuned-models.json"), b"{}").unwrap();
        fs::write(account.join("feeds").join("t1.job"), b"{}").unwrap();
        fs::write(account.join("feeds").join("t1.download"), b"partial").unwrap();
        fs::write(account.join("wal").join("00000000000000000001.wal"), b"log").unwrap();
        let out = tmp.path().join("backup");
        let manifest = backup(&data, &out).unwrap();
        let paths: Vec<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "erasure.key",
                "accounts/6162/users.json",
                "accounts/6162/tuned-models.json",
                "accounts/6162/feeds/t1.job",
                "accounts/6162/wal/00000000000000000001.wal"
            ]
        );
        let restored = tmp.path().join("restored");
        restore(&out, &restored).unwrap();
        for path in paths {
            assert_eq!(
                fs::read(restored.join(path)).unwrap(),
                fs::read(data.join(path)).unwrap()
            );
        }
        // Into a directory that is not empty: refused.
        assert!(matches!(
            restore(&out, &restored),
            Err(BackupError::NotEmpty(_))
        ));
        // A changed byte: refused before anything is written.
        let log = out
            .join(DATA)
            .join("accounts/6162/wal/00000000000000000001.wal");
        fs::write(&log, b"lug").unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        let refused = restore(&out, &elsewhere).unwrap_err().to_string();
        assert!(refused.contains("does not match the manifest"), "{refused}");
        assert!(!elsewhere.join("erasure.key").exists());
        // A manifest naming a path outside the data directory: refused.
        assert!(safe_relative("../etc/passwd").is_err());
        assert!(safe_relative("/etc/passwd").is_err());
    }
}
