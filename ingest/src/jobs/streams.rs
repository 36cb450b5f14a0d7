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

use parking_lot::Mutex;
use vitrine_engine::catalogue::UnixMillis;

use super::status::{FeedJob, FeedStatus};
use super::{AccountJobs, SubmitError, io};

/// What a streamed feed holds, from the prefix of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// `product-…`: a JSON document with `Products`.
    Product,
    /// `category-…`: `Categories`.
    Category,
    /// `brand-…`: `Brands`.
    Brand,
    /// `user-…`: `Users`.
    User,
    /// `orders-…`: the order history as CSV.
    Orders,
}

impl StreamKind {
    /// The kind of a feed name `<type>-<hex>` (1 to 40 lower-case hex digits).
    pub fn of_name(name: &str) -> Option<StreamKind> {
        let (kind, id) = name.split_once('-')?;
        let id_ok = !id.is_empty()
            && id.len() <= 40
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !id_ok {
            return None;
        }
        match kind {
            "product" => Some(StreamKind::Product),
            "category" => Some(StreamKind::Category),
            "brand" => Some(StreamKind::Brand),
            "user" => Some(StreamKind::User),
            "orders" => Some(StreamKind::Orders),
            _ => None,
        }
    }
}

/// Why a piece of a streamed feed was refused.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The name is not `<type>-<hex>`.
    #[error(
        "feedName: expected <type>-<hex> with type product, category, brand, user or orders, got {0:?}"
    )]
    BadName(String),
    /// No feed of that name is open (never created, closed already, or expired).
    #[error("feedName: no open feed {0:?}; start it with feed-create")]
    Unknown(String),
    /// The feed would grow past the size limit; it is dropped.
    #[error("the feed {name:?} is larger than the limit of {limit} bytes; it was dropped")]
    TooLarge {
        /// The feed.
        name: String,
        /// `feeds.max_bytes`.
        limit: u64,
    },
    /// The spool or the job could not be written.
    #[error("the feed could not be saved: {0}")]
    Journal(#[from] vitrine_snapshots::Error),
    /// In a cluster: the replicated log did not store the submission.
    #[error("{0}")]
    Replication(String),
}

/// The open feeds of an account: name → bytes so far. Locked for a whole piece, so
/// pieces of one feed are written in the order they are taken.
#[derive(Debug, Default)]
pub(super) struct Streams {
    open: Mutex<HashMap<String, u64>>,
}

impl Streams {
    /// The spools left open by an earlier run, so that their feeds can go on.
    pub(super) fn load(dir: &Path) -> Result<Streams, vitrine_snapshots::Error> {
        let spool = dir.join("streams");
        fs::create_dir_all(&spool).map_err(io("creating directory", &spool))?;
        let mut open = HashMap::new();
        for entry in fs::read_dir(&spool).map_err(io("reading directory", &spool))? {
            let path = entry.map_err(io("reading directory", &spool))?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".part"))
                .filter(|n| StreamKind::of_name(n).is_some());
            if let Some(name) = name {
                let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                open.insert(name.to_owned(), bytes);
            }
        }
        Ok(Streams {
            open: Mutex::new(open),
        })
    }
}

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
        let mut file = File::create(&path).map_err(io("creating", &path))?;
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
        fs::rename(from, &closed).map_err(io("moving into place", &closed))?;
        File::open(&feeds)
            .and_then(|d| d.sync_all())
            .map_err(io("syncing directory", &feeds))?;
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
            .map_err(io("opening", &path))?;
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
    file.write_all(bytes).map_err(io("writing", path))?;
    file.sync_data().map_err(io("syncing", path))?;
    Ok(())
}
