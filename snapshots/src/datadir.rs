//! The data directory: created when missing and held with an exclusive lock on its
//! `LOCK` file for the life of the process, so a second server pointed at the same
//! directory refuses to start instead of corrupting it. The lock is released by the
//! operating system when the process ends, even by SIGKILL. The `LOCK` file holds the
//! process id of its holder, so that tools (`vitrine reload`, `vitrine backup`) can find
//! the server of a directory ([`holder`]).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, io_error};

/// An open, locked data directory.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    _lock: File,
}

impl DataDir {
    /// Creates `path` if needed and takes its lock.
    pub fn open(path: &Path) -> Result<DataDir> {
        fs::create_dir_all(path).map_err(io_error("creating directory", path))?;
        let lock_path = path.join("LOCK");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_error("opening", &lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Err(Error::Locked(path.to_path_buf())),
            Err(fs::TryLockError::Error(e)) => return Err(io_error("locking", &lock_path)(e)),
        }
        let mut lock = lock;
        lock.set_len(0)
            .and_then(|()| lock.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(lock, "{}", std::process::id()))
            .map_err(io_error("writing", &lock_path))?;
        Ok(DataDir {
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The process id of the process holding `path`'s lock (a server running on it), or
/// `None` when nobody holds it.
pub fn holder(path: &Path) -> Result<Option<u32>> {
    let lock_path = path.join("LOCK");
    let mut lock = match File::open(&lock_path) {
        Ok(lock) => lock,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("opening", &lock_path)(e)),
    };
    match lock.try_lock_shared() {
        // Nobody holds it (and this shared lock goes with the file).
        Ok(()) => return Ok(None),
        Err(fs::TryLockError::WouldBlock) => {}
        Err(fs::TryLockError::Error(e)) => return Err(io_error("locking", &lock_path)(e)),
    }
    let mut text = String::new();
    lock.read_to_string(&mut text)
        .map_err(io_error("reading", &lock_path))?;
    text.trim().parse().map(Some).map_err(|_| Error::Corrupt {
        path: lock_path.clone(),
        reason: format!("expected a process id, found {:?}", text.trim()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_and_locks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("nested/data");
        let first = DataDir::open(&dir).unwrap();
        assert!(dir.join("LOCK").exists());
        assert!(matches!(DataDir::open(&dir), Err(Error::Locked(_))));
        assert_eq!(holder(&dir).unwrap(), Some(std::process::id()));
        drop(first);
        assert_eq!(holder(&dir).unwrap(), None);
        DataDir::open(&dir).unwrap();
    }

    #[test]
    fn reports_the_path_when_it_cannot_create() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a-file");
        fs::write(&file, b"x").unwrap();
        let error = DataDir::open(&file.join("sub")).unwrap_err().to_string();
        assert!(error.contains("creating directory"), "{error}");
        assert!(error.contains("a-file"), "{error}");
    }
}
