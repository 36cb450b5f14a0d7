//! The data directory: created when missing and held with an exclusive lock on its
//! `LOCK` file for the life of the process, so a second server pointed at the same
//! directory refuses to start instead of corrupting it. The lock is released by the
//! operating system when the process ends, even by SIGKILL.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::{Error, Result, io_error};

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
        drop(first);
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
