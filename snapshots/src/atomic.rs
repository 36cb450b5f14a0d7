//! Crash-safe whole-file writes: after [`atomic_write`] returns, the file holds the new
//! bytes and survives power loss; if the process dies before, the old file (or none)
//! is there, never a mix.
//!
//! Steps: write `NAME.tmp`, fsync it, rename it over `NAME`, fsync the directory so the
//! rename itself is durable.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::error::{Result, io_error};

/// Writes `bytes` to `dir/name` atomically and durably.
pub fn atomic_write(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let target = dir.join(name);
    let temp = dir.join(format!("{name}.tmp"));
    {
        let mut file = File::create(&temp).map_err(io_error("creating", &temp))?;
        file.write_all(bytes).map_err(io_error("writing", &temp))?;
        file.sync_all().map_err(io_error("syncing", &temp))?;
    }
    fs::rename(&temp, &target).map_err(io_error("renaming into place", &target))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error("syncing directory", dir))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        atomic_write(tmp.path(), "state", b"first version, long").unwrap();
        atomic_write(tmp.path(), "state", b"second").unwrap();
        assert_eq!(fs::read(tmp.path().join("state")).unwrap(), b"second");
        assert!(!tmp.path().join("state.tmp").exists());
    }

    #[test]
    fn names_the_path_on_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("missing");
        let error = atomic_write(&missing, "state", b"x")
            .unwrap_err()
            .to_string();
        assert!(error.contains("missing"), "{error}");
    }
}
