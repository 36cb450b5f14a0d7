//! Feeds streamed by the vendor's store plugins: `feed-create`, `feed-append` … and
//! `feed-close` posts, each carrying the next piece of one feed named
//! `<type>-<hex>` (`product`, `category`, `brand`, `user`, `orders`). Each open feed is
//! spooled to `streams/<name>.part` in the account's directory as it arrives (each piece
//! fsynced before its answer, bounded by the feed size limit); at close the spool
//! becomes `feeds/<name>.stream` and a feed job with the feed's name as its token, run by
//! the feed runner like a downloaded feed. A feed left open longer than the idle limit
//! is removed ([`AccountJobs::expire_streams`]). Open spools survive a restart. A feed
//! uploaded whole by SFTP joins the same path at its close
//! ([`AccountJobs::submit_uploaded_feed`]).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use vitrine_engine::catalogue::UnixMillis;

pub(super) mod spool;

pub use spool::{StreamError, StreamKind};

use super::status::{FeedJob, FeedStatus};
use super::{AccountJobs, SubmitError};

impl AccountJobs {
    /// Opens the streamed feed `name` with its first piece (a feed of that name still
    /// open starts over).
    pub fn stream_create(
        &self,
        name: &str,
        piece: &[u8],
        limit: u64,
    ) -> Result<StreamKind, StreamError> {
        let kind = StreamKind::of_name(name).ok_or_else(|| StreamError::BadName(name.into()))?;
        let mut open = self.shared.streams.open.lock();
        let path = self.spool_path(name);
        check_size(name, piece.len() as u64, limit)?;
        let mut file =
            File::create(&path).map_err(vitrine_snapshots::Error::io("creating", &path))?;
        write_synced(&mut file, piece, &path)?;
        open.insert(name.to_owned(), piece.len() as u64);
        Ok(kind)
    }

    /// Adds the next piece to the open feed `name`.
    pub fn stream_append(&self, name: &str, piece: &[u8], limit: u64) -> Result<(), StreamError> {
        let mut open = self.shared.streams.open.lock();
        self.append_piece(&mut open, name, piece, limit)
    }

    /// Adds the last piece (if any) to the open feed `name`, closes it and journals its
    /// job, whose token is the feed's name; the caller hands the token to the feed
    /// runner. Returns quickly: the feed is checked and applied by the runner.
    pub fn stream_close(
        &self,
        name: &str,
        piece: Option<&[u8]>,
        limit: u64,
        now: UnixMillis,
    ) -> Result<String, StreamError> {
        let mut open = self.shared.streams.open.lock();
        self.append_piece(&mut open, name, piece.unwrap_or_default(), limit)?;
        let spooled = self.spool_path(name);
        let closed = self.move_into_feeds(name, &spooled)?;
        open.remove(name);
        drop(open);
        self.journal_streamed(name, &closed, now)
    }

    /// A feed uploaded whole (by SFTP) as the file `uploaded` named `name`, fsynced by
    /// the caller: moved into the account's feeds and journaled as a job, like a closed
    /// streamed feed (its kind is read from its contents); returns its token. The token
    /// is the name, or the name with `~2`, `~3`, … when a job has that token already,
    /// chosen and journaled under one hold of the feed table's naming lock: uploads of
    /// one name closed at the same moment each get a token of their own. `uploaded` must
    /// be on the data directory's file system.
    pub fn submit_uploaded_feed(
        &self,
        name: &str,
        uploaded: &Path,
        now: UnixMillis,
    ) -> Result<String, StreamError> {
        let _naming = self.shared.feeds.naming.lock();
        let token = if self.feed_job(name).is_none() {
            name.to_owned()
        } else {
            (2_u64..)
                .map(|n| format!("{name}~{n}"))
                .find(|token| self.feed_job(token).is_none())
                .unwrap_or_else(|| name.to_owned())
        };
        let closed = self.move_into_feeds(&token, uploaded)?;
        self.journal_streamed(&token, &closed, now)
    }

    /// Renames a complete feed body to `feeds/<token>.stream` and syncs the directory.
    fn move_into_feeds(&self, token: &str, from: &Path) -> Result<PathBuf, StreamError> {
        let feeds = self.shared.dir.join("feeds");
        let closed = feeds.join(format!("{token}.stream"));
        fs::rename(from, &closed)
            .map_err(vitrine_snapshots::Error::io("moving into place", &closed))?;
        File::open(&feeds)
            .and_then(|d| d.sync_all())
            .map_err(vitrine_snapshots::Error::io("syncing directory", &feeds))?;
        Ok(closed)
    }

    /// Journals the feed job of a complete body at `closed` and announces it.
    fn journal_streamed(
        &self,
        name: &str,
        closed: &Path,
        now: UnixMillis,
    ) -> Result<String, StreamError> {
        let job = FeedJob {
            token: name.to_owned(),
            url: String::new(),
            streamed: true,
            submitted_at: now,
            status: FeedStatus::Processing,
            stream_sequence: 0,
            shared_body: None,
        };
        self.journal_feed(job.clone())?;
        self.announce_feed(&job, Some(closed))
            .map_err(|error| match error {
                SubmitError::Journal(error) => StreamError::Journal(error),
                other => StreamError::Replication(other.to_string()),
            })?;
        Ok(name.to_owned())
    }

    /// Removes the open feeds whose last piece came more than `idle` ago; returns
    /// their names.
    pub fn expire_streams(&self, idle: Duration) -> Vec<String> {
        let mut open = self.shared.streams.open.lock();
        let now = SystemTime::now();
        let mut expired = Vec::new();
        open.retain(|name, _| {
            let path = self.spool_path(name);
            let modified = fs::metadata(&path).and_then(|m| m.modified());
            let stale = modified
                .map(|at| now.duration_since(at).unwrap_or_default() >= idle)
                .unwrap_or(true);
            if stale {
                let _ = fs::remove_file(&path);
                expired.push(name.clone());
            }
            !stale
        });
        expired
    }

    /// The names of the feeds open now.
    pub fn open_streams(&self) -> Vec<String> {
        let mut names: Vec<String> = self.shared.streams.open.lock().keys().cloned().collect();
        names.sort();
        names
    }

    /// The closed feed `token` as it arrived, for the feed runner.
    pub fn streamed_feed_path(&self, token: &str) -> PathBuf {
        self.shared
            .dir
            .join("feeds")
            .join(format!("{token}.stream"))
    }

    fn append_piece(
        &self,
        open: &mut HashMap<String, u64>,
        name: &str,
        piece: &[u8],
        limit: u64,
    ) -> Result<(), StreamError> {
        let Some(bytes) = open.get(name).copied() else {
            return Err(StreamError::Unknown(name.into()));
        };
        let path = self.spool_path(name);
        let total = bytes + piece.len() as u64;
        if let Err(error) = check_size(name, total, limit) {
            open.remove(name);
            let _ = fs::remove_file(&path);
            return Err(error);
        }
        let mut file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(vitrine_snapshots::Error::io("opening", &path))?;
        write_synced(&mut file, piece, &path)?;
        open.insert(name.to_owned(), total);
        Ok(())
    }

    fn spool_path(&self, name: &str) -> PathBuf {
        self.shared.dir.join("streams").join(format!("{name}.part"))
    }
}

fn check_size(name: &str, bytes: u64, limit: u64) -> Result<(), StreamError> {
    if bytes > limit {
        return Err(StreamError::TooLarge {
            name: name.to_owned(),
            limit,
        });
    }
    Ok(())
}

fn write_synced(file: &mut File, bytes: &[u8], path: &Path) -> Result<(), StreamError> {
    file.write_all(bytes)
        .map_err(vitrine_snapshots::Error::io("writing", path))?;
    file.sync_data()
        .map_err(vitrine_snapshots::Error::io("syncing", path))?;
    Ok(())
}
