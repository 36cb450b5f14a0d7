//! An account's upload area, as one SFTP session sees it: a flat directory `/` where
//! feed files (`*.json`) are written, and nothing is read, removed or renamed.
//!
//! A file being written is a `.part` file in `sftp/` under the account's directory,
//! named by the session; it never becomes a feed until the client closes it. At close
//! it is synced, moved into the account's feeds and journaled as a feed job whose token
//! is the file's name (`PureClarityFeed-2026112614305.json`; a name whose token is
//! taken already gets `~2`, `~3`, …), and the feed runner applies it like any feed:
//! its type is read from its contents (`Products` with their `AccountPrices`,
//! `Categories`, `Brands`, `Users`). A session that ends with files still open (the
//! client stopped, the connection dropped) removes them: partial uploads are never
//! applied, and neither are leftovers found at start. Writes beyond `feeds.max_bytes`
//! fail, and the file is dropped.
//!
//! Paths are read inside the area only: `..` never climbs above `/` (a path naming a
//! file through it is refused), and there are no subdirectories. Listing `/` and
//! `stat` show the uploads completed lately (the last [`RECENT_UPLOADS`]), so that
//! clients that check a file's size after writing it find it.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dashmap::DashMap;
use russh_sftp::protocol::{
    Attrs, File, FileAttributes, Handle, Name, OpenFlags, Status, StatusCode,
};
use russh_sftp::server::StatusReply;

use crate::clock::now_millis;
use crate::state::{AccountEntry, AppState, account_dir};

/// Completed uploads an area lists, per account (the oldest is forgotten first).
pub const RECENT_UPLOADS: usize = 50;
/// Files one session may have open for writing at once.
pub const MAX_OPEN_UPLOADS: usize = 8;
/// Longest file name accepted.
pub const MAX_NAME_LEN: usize = 128;

/// An upload completed lately.
#[derive(Debug, Clone)]
struct Completed {
    name: String,
    size: u64,
    /// Unix seconds.
    at: u32,
}

/// The areas of every account: their completed uploads.
#[derive(Debug, Default)]
pub struct Areas {
    recent: DashMap<String, VecDeque<Completed>>,
}

impl Areas {
    /// The areas of `state`'s accounts: each one's directory made, and the partial
    /// uploads an earlier run left removed.
    pub fn open(state: &AppState) -> Areas {
        for entry in state.accounts() {
            let dir = area_dir(state.data_dir(), &entry.config.access_key);
            if let Err(error) = std::fs::create_dir_all(&dir) {
                tracing::error!(dir = %dir.display(), %error, "cannot create the SFTP upload area");
                continue;
            }
            let Ok(files) = std::fs::read_dir(&dir) else {
                continue;
            };
            for file in files.flatten() {
                let path = file.path();
                if path.extension().is_some_and(|e| e == "part") {
                    tracing::warn!(file = %path.display(), "removing an SFTP upload that was never completed");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Areas::default()
    }

    fn record(&self, account: &str, completed: Completed) {
        let mut recent = self.recent.entry(account.to_owned()).or_default();
        recent.retain(|c| c.name != completed.name);
        if recent.len() >= RECENT_UPLOADS {
            recent.pop_front();
        }
        recent.push_back(completed);
    }

    fn find(&self, account: &str, name: &str) -> Option<Completed> {
        self.recent
            .get(account)
            .and_then(|recent| recent.iter().find(|c| c.name == name).cloned())
    }

    fn list(&self, account: &str) -> Vec<Completed> {
        self.recent
            .get(account)
            .map(|recent| recent.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Where an account's uploads are written.
pub fn area_dir(data_dir: &Path, access_key: &str) -> PathBuf {
    account_dir(data_dir, access_key).join("sftp")
}

/// A file being uploaded.
#[derive(Debug)]
struct Upload {
    name: String,
    part: PathBuf,
    file: Arc<std::fs::File>,
    /// The end of the furthest write.
    size: u64,
}

/// One SFTP session's view of its account's area.
#[derive(Debug)]
pub struct Area {
    state: Arc<AppState>,
    areas: Arc<Areas>,
    entry: Arc<AccountEntry>,
    peer: SocketAddr,
    dir: PathBuf,
    /// A random name for this session's `.part` files.
    session: u64,
    uploads: HashMap<String, Upload>,
    /// Open directory handles: whether each was listed already.
    listings: HashMap<String, bool>,
    next_handle: u64,
}

/// What a path names inside the area.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// The area itself.
    Root,
    /// A file of the area.
    File(String),
}

fn denied(message: &str) -> StatusReply {
    StatusCode::PermissionDenied.with_message(message)
}

fn failure(message: impl Into<String>) -> StatusReply {
    StatusCode::Failure.with_message(message)
}

/// What a path's `..` may do above the area's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AboveRoot {
    /// Stay at `/` (as a chroot would for `realpath`).
    Clamp,
    /// Refuse the path.
    Refuse,
}

/// The target of `path` (absolute, or relative to `/`); a `..` above `/` does as
/// `above_root` says.
fn target(path: &str, above_root: AboveRoot) -> Result<Target, StatusReply> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if above_root == AboveRoot::Clamp => {
                parts.pop();
            }
            ".." => return Err(denied("outside your upload area")),
            other => parts.push(other),
        }
    }
    match parts.as_slice() {
        [] => Ok(Target::Root),
        [name] => Ok(Target::File((*name).to_owned())),
        _ => Err(StatusCode::NoSuchFile.with_message("the upload area has no directories")),
    }
}

/// Whether `name` is a feed file name this area accepts.
fn valid_name(name: &str) -> bool {
    name.len() <= MAX_NAME_LEN
        && name.ends_with(".json")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn file_attrs(size: u64, at: u32) -> FileAttributes {
    FileAttributes {
        size: Some(size),
        permissions: Some(0o100_644),
        atime: Some(at),
        mtime: Some(at),
        ..FileAttributes::default()
    }
}

fn dir_attrs() -> FileAttributes {
    FileAttributes {
        size: Some(0),
        permissions: Some(0o040_755),
        ..FileAttributes::default()
    }
}

fn unix_seconds() -> u32 {
    u32::try_from(now_millis() / 1000).unwrap_or(u32::MAX)
}

fn ok(id: u32) -> Status {
    Status {
        id,
        status_code: StatusCode::Ok,
        error_message: "Ok".to_owned(),
        language_tag: "en-US".to_owned(),
    }
}

impl Area {
    /// The area of `entry`'s account for a session from `peer`, on the server's `state`
    /// and what the `areas` hold.
    pub fn new(
        state: Arc<AppState>,
        areas: Arc<Areas>,
        entry: Arc<AccountEntry>,
        peer: SocketAddr,
    ) -> Area {
        let dir = area_dir(state.data_dir(), &entry.config.access_key);
        Area {
            state,
            areas,
            entry,
            peer,
            dir,
            session: rand::random(),
            uploads: HashMap::new(),
            listings: HashMap::new(),
            next_handle: 0,
        }
    }

    fn account(&self) -> &str {
        &self.entry.config.access_key
    }

    fn handle(&mut self, kind: char) -> String {
        self.next_handle += 1;
        format!("{kind}{}", self.next_handle)
    }

    fn attrs_of(&self, path: &str) -> Result<FileAttributes, StatusReply> {
        match target(path, AboveRoot::Clamp)? {
            Target::Root => Ok(dir_attrs()),
            Target::File(name) => self
                .areas
                .find(self.account(), &name)
                .map(|c| file_attrs(c.size, c.at))
                .ok_or_else(|| StatusCode::NoSuchFile.with_message("no such upload")),
        }
    }

    /// Drops an upload's partial file.
    fn discard(upload: &Upload) {
        let _ = std::fs::remove_file(&upload.part);
    }

    /// Syncs a closed upload and submits it as a feed; returns its token.
    async fn submit(&self, upload: Upload) -> Result<String, StatusReply> {
        let entry = Arc::clone(&self.entry);
        let part = upload.part.clone();
        let name = upload.name.clone();
        let file = Arc::clone(&upload.file);
        let submitted = tokio::task::spawn_blocking(move || {
            file.sync_all()
                .map_err(|e| format!("the upload could not be saved: {e}"))?;
            // Its token is chosen and journaled by ingest, under one hold of its lock.
            entry
                .jobs
                .submit_uploaded_feed(&name, &part, now_millis())
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|result| result);
        match submitted {
            Ok(token) => Ok(token),
            Err(message) => {
                Area::discard(&upload);
                tracing::error!(account = %self.account(), file = %upload.name, %message, "an SFTP upload could not be submitted");
                Err(failure(message))
            }
        }
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        for upload in self.uploads.values() {
            Area::discard(upload);
            tracing::warn!(
                account = %self.entry.config.access_key,
                peer = %self.peer,
                file = %upload.name,
                bytes = upload.size,
                "an SFTP upload ended before its file was closed; it was not applied"
            );
        }
    }
}

impl russh_sftp::server::Handler for Area {
    type Error = StatusReply;

    fn unimplemented(&self) -> Self::Error {
        StatusCode::OpUnsupported.with_message("not available on this server: uploads only")
    }

    async fn realpath(&mut self, id: u32, path: String) -> Result<Name, Self::Error> {
        let resolved = match target(&path, AboveRoot::Clamp)? {
            Target::Root => "/".to_owned(),
            Target::File(name) => format!("/{name}"),
        };
        Ok(Name {
            id,
            files: vec![File::new(resolved, FileAttributes::default())],
        })
    }

    async fn stat(&mut self, id: u32, path: String) -> Result<Attrs, Self::Error> {
        Ok(Attrs {
            id,
            attrs: self.attrs_of(&path)?,
        })
    }

    async fn lstat(&mut self, id: u32, path: String) -> Result<Attrs, Self::Error> {
        self.stat(id, path).await
    }

    async fn fstat(&mut self, id: u32, handle: String) -> Result<Attrs, Self::Error> {
        if let Some(upload) = self.uploads.get(&handle) {
            return Ok(Attrs {
                id,
                attrs: file_attrs(upload.size, unix_seconds()),
            });
        }
        if self.listings.contains_key(&handle) {
            return Ok(Attrs {
                id,
                attrs: dir_attrs(),
            });
        }
        Err(failure("no such handle"))
    }

    async fn opendir(&mut self, id: u32, path: String) -> Result<Handle, Self::Error> {
        if target(&path, AboveRoot::Clamp)? != Target::Root {
            return Err(StatusCode::NoSuchFile.with_message("the upload area has no directories"));
        }
        let handle = self.handle('d');
        self.listings.insert(handle.clone(), false);
        Ok(Handle { id, handle })
    }

    async fn readdir(&mut self, id: u32, handle: String) -> Result<Name, Self::Error> {
        let Some(listed) = self.listings.get_mut(&handle) else {
            return Err(failure("no such handle"));
        };
        if *listed {
            return Err(StatusCode::Eof.into());
        }
        *listed = true;
        let files = self
            .areas
            .list(&self.entry.config.access_key)
            .into_iter()
            .map(|c| File::new(c.name, file_attrs(c.size, c.at)))
            .collect();
        Ok(Name { id, files })
    }

    async fn open(
        &mut self,
        id: u32,
        filename: String,
        pflags: OpenFlags,
        _attrs: FileAttributes,
    ) -> Result<Handle, Self::Error> {
        if !pflags.contains(OpenFlags::WRITE) || pflags.contains(OpenFlags::READ) {
            return Err(denied("files here can be written, not read: uploads only"));
        }
        let Target::File(name) = target(&filename, AboveRoot::Refuse)? else {
            return Err(denied("not a file"));
        };
        if !valid_name(&name) {
            return Err(denied(
                "only feed files can be uploaded: a name of letters, digits, '.', '_' and '-' ending in .json",
            ));
        }
        if self.uploads.len() >= MAX_OPEN_UPLOADS {
            return Err(failure(format!(
                "at most {MAX_OPEN_UPLOADS} files may be open at once"
            )));
        }
        let handle = self.handle('u');
        let part = self
            .dir
            .join(format!(".{:016x}-{handle}.part", self.session));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&part)
            .map_err(|e| failure(format!("the upload could not be started: {e}")))?;
        self.uploads.insert(
            handle.clone(),
            Upload {
                name,
                part,
                file: Arc::new(file),
                size: 0,
            },
        );
        Ok(Handle { id, handle })
    }

    async fn write(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<Status, Self::Error> {
        let limit = self.state.config().feeds.max_bytes;
        let Some(upload) = self.uploads.get_mut(&handle) else {
            return Err(failure("no such handle"));
        };
        let end = offset.saturating_add(data.len() as u64);
        if end > limit {
            if let Some(upload) = self.uploads.remove(&handle) {
                Area::discard(&upload);
                tracing::warn!(account = %self.entry.config.access_key, file = %upload.name, limit, "an SFTP upload passed feeds.max_bytes; it was dropped");
            }
            return Err(failure(format!(
                "the feed is larger than the limit of {limit} bytes (feeds.max_bytes); it was dropped"
            )));
        }
        let file = Arc::clone(&upload.file);
        let written = tokio::task::spawn_blocking(move || {
            use std::os::unix::fs::FileExt;
            file.write_all_at(&data, offset)
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|r| r);
        if let Err(error) = written {
            return Err(failure(format!("the upload could not be written: {error}")));
        }
        upload.size = upload.size.max(end);
        Ok(ok(id))
    }

    async fn close(&mut self, id: u32, handle: String) -> Result<Status, Self::Error> {
        if self.listings.remove(&handle).is_some() {
            return Ok(ok(id));
        }
        let Some(upload) = self.uploads.remove(&handle) else {
            return Err(failure("no such handle"));
        };
        let (name, size) = (upload.name.clone(), upload.size);
        let token = self.submit(upload).await?;
        self.areas.record(
            &self.entry.config.access_key,
            Completed {
                name: name.clone(),
                size,
                at: unix_seconds(),
            },
        );
        tracing::info!(account = %self.entry.config.access_key, peer = %self.peer, file = %name, bytes = size, %token, "SFTP upload complete; processing the feed");
        self.state.run_feed(&self.entry, token);
        Ok(ok(id))
    }

    async fn setstat(
        &mut self,
        id: u32,
        path: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        // Clients set times and modes after an upload: accepted, and nothing to keep.
        target(&path, AboveRoot::Refuse)?;
        Ok(ok(id))
    }

    async fn fsetstat(
        &mut self,
        id: u32,
        _handle: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        Ok(ok(id))
    }

    async fn remove(&mut self, _id: u32, _filename: String) -> Result<Status, Self::Error> {
        Err(denied("uploaded feeds cannot be removed"))
    }

    async fn rename(
        &mut self,
        _id: u32,
        _oldpath: String,
        _newpath: String,
    ) -> Result<Status, Self::Error> {
        Err(denied(
            "uploaded feeds cannot be renamed: upload under the final name",
        ))
    }

    async fn mkdir(
        &mut self,
        _id: u32,
        _path: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        Err(denied("the upload area has no directories"))
    }

    async fn rmdir(&mut self, _id: u32, _path: String) -> Result<Status, Self::Error> {
        Err(denied("the upload area has no directories"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_area() {
        assert_eq!(target("/", AboveRoot::Refuse), Ok(Target::Root));
        assert_eq!(target(".", AboveRoot::Refuse), Ok(Target::Root));
        assert_eq!(
            target("/./feed.json", AboveRoot::Refuse),
            Ok(Target::File("feed.json".into()))
        );
        assert_eq!(
            target("feed.json", AboveRoot::Refuse),
            Ok(Target::File("feed.json".into()))
        );
        assert!(target("../feed.json", AboveRoot::Refuse).is_err());
        assert!(target("/a/../../etc/passwd", AboveRoot::Refuse).is_err());
        assert!(target("/etc/passwd", AboveRoot::Refuse).is_err());
        // realpath keeps a climb at the root, as a chroot does.
        assert_eq!(target("/../..", AboveRoot::Clamp), Ok(Target::Root));
        assert_eq!(
            target("../x.json", AboveRoot::Clamp),
            Ok(Target::File("x.json".into()))
        );
    }

    #[test]
    fn only_feed_file_names_are_accepted() {
        assert!(valid_name("PureClarityFeed-2026112614305.json"));
        assert!(valid_name("products_v2.json"));
        for bad in [
            ".hidden.json",
            "feed.csv",
            "feed.json.part",
            "a b.json",
            "x\u{0}.json",
            "",
            &format!("{}.json", "a".repeat(MAX_NAME_LEN)),
        ] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
