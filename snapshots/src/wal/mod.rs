//! The write-ahead log: CRC32C-framed records in segment files, appended by one writer
//! thread with group commit, recovered on open up to the first bad or torn record.
//!
//! Layout (see `FORMAT.md`): segment files `<first sequence, 20 digits>.wal` in one
//! directory; each record is `length u32 | crc32c u32 | sequence u64 | kind u8 | payload`
//! (little-endian; `length` counts sequence, kind and payload; the CRC covers the same
//! bytes). Sequences start at 1 and increase by one per record across segments.
//!
//! Threads: [`Wal::append`] may be called from any thread; it hands the record to the
//! writer thread and waits for its acknowledgement. The writer takes every record
//! waiting, writes them in one go, and fsyncs once for the whole batch when the policy
//! (or one record of the batch) asks for it: many appends, one fsync. A record may be
//! handed over unencoded ([`Payload::Deferred`]): the writer encodes it just before
//! writing it, so the appending thread (a request's) does not pay for the encoding.
//!
//! Files: `format.rs` (the bytes: segment names, record framing, reading and recovery),
//! `writer.rs` (the writer thread: batches, group commit, rotation, the first failure),
//! `stats.rs` (its counters); this file is the log's API, whose appends travel to the
//! writer as a [`Request`].

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::thread;

use crate::error::{Error, Result, io_error};

mod format;
pub(crate) mod record;
mod stats;
mod writer;

pub use format::{SegmentEnd, decode_segment, read_segment_file, recover, segments};
pub use stats::WalStats;

use format::write_gap;
use record::{Append, Durability, Progress, Request};
pub use record::{
    Encode, KIND_GAP, LINGER, LINGER_MAX, MAX_PAYLOAD, Payload, RECORD_HEADER, Record, Recovery,
    SyncPolicy, WalConfig, WalError, linger,
};
use writer::{Failure, Writer};

/// Whether an append is refused when the writer's backlog is at its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backlog {
    /// Refused: an append that does not wait for its record.
    Bounded,
    /// Let in: an append that waits for its record, or one that waited for room.
    Waited,
}

/// A record's hand-over to the writer, as an append that does not wait returns it: the
/// instant (on the log's clock) just after the record was sent. [`Wal::holds`] tells
/// when the record is kept. Only an append makes one: an instant read before a record
/// is sent could be covered by a batch the writer drained before the record reached it
/// (the sender preempted in between), and would call the record kept while it is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Handed(u64);

impl Handed {
    /// The hand-over of a record known to be kept already (read back from the log).
    pub const KEPT: Handed = Handed(0);
}

/// An open log.
pub struct Wal {
    sender: RwLock<Option<mpsc::Sender<Append>>>,
    worker: Mutex<Option<thread::JoinHandle<()>>>,
    dir: PathBuf,
    stats: Arc<WalStats>,
    /// The sequence the next record will get: every record before it is written.
    next: Arc<AtomicU64>,
    /// The writer's first failure, once there was one: later appends are refused here.
    failed: Arc<Failure>,
    policy: SyncPolicy,
    /// The writer thread, woken by appends that wait for their outcome (it lingers
    /// between batches under `interval` and `never`).
    writer_thread: thread::Thread,
    /// Records that may wait for the writer before an append that does not wait for its
    /// outcome is refused ([`Wal::set_max_backlog`]; unbounded by default).
    max_backlog: AtomicU64,
    /// How far the log is on disk.
    progress: Arc<Progress>,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Wal {
    /// Recovers the log in `config.dir` and starts its writer after the last intact
    /// record.
    pub fn open(config: WalConfig) -> Result<(Wal, Recovery)> {
        let mut recovery = recover(&config.dir)?;
        // After the last intact record (a gap record included), or 1 for a new log.
        let mut next = recovery.next_sequence.max(1);
        if next < config.first_sequence {
            // The log ends before a snapshot's position (its unsynced tail was lost, or
            // a snapshot covers all of it): go on at that position after a gap record.
            // Every record is kept: a consumer with an older position still replays
            // from its own, and no sequence a snapshot covers is taken again.
            write_gap(&config.dir, next, config.first_sequence)?;
            recovery.resumed = Some((next, config.first_sequence));
            next = config.first_sequence + 1;
        }
        recovery.next_sequence = next;
        let stats = Arc::new(WalStats::default());
        let (sender, receiver) = mpsc::channel::<Append>();
        let progress = Arc::new(Progress::new());
        let mut writer = Writer::start(&config, next, Arc::clone(&progress))?;
        let shared_next = Arc::clone(&writer.shared_next);
        let failed = Arc::clone(&writer.failed);
        let worker_stats = Arc::clone(&stats);
        let worker = thread::Builder::new()
            .name("wal-writer".to_owned())
            .spawn(move || {
                crate::threads::place_current_thread(crate::threads::Role::Background);
                // Serving does not keep the writer from the core: on a saturated core the
                // writer's wake-ups come before the serving threads' turns. Granted where
                // the process may raise a thread's priority (root, or `CAP_SYS_NICE`);
                // elsewhere it keeps the default, and `/metrics` says so.
                let raised = thread_priority::set_current_thread_priority(
                    thread_priority::ThreadPriority::Max,
                )
                .is_ok();
                worker_stats
                    .priority_raised
                    .store(raised, Ordering::Relaxed);
                writer.run(&receiver, &worker_stats)
            })
            .map_err(io_error("starting the writer for", &config.dir))?;
        let writer_thread = worker.thread().clone();
        let wal = Wal {
            sender: RwLock::new(Some(sender)),
            worker: Mutex::new(Some(worker)),
            dir: config.dir.clone(),
            stats,
            next: shared_next,
            failed,
            policy: config.policy,
            writer_thread,
            max_backlog: AtomicU64::new(u64::MAX),
            progress,
        };
        Ok((wal, recovery))
    }

    /// Appends a record under the log's policy; returns its sequence.
    pub fn append(&self, kind: u8, payload: impl Into<Payload>) -> Result<u64> {
        self.submit(record(kind, payload, Durability::Policy)?)
    }

    /// Appends a record under the log's policy and returns as soon as the policy
    /// allows: with `always` once it is fsynced, otherwise once it is handed to the
    /// writer (written next, in order; `interval` fsyncs it within the interval). A log
    /// that failed earlier refuses it.
    pub fn append_under_policy(&self, kind: u8, payload: impl Into<Payload>) -> Result<Handed> {
        if self.policy == SyncPolicy::Always {
            return self.append(kind, payload).map(|_| Handed::KEPT);
        }
        self.append_unwaited(kind, payload)
    }

    /// Hands a record to the writer and returns without waiting, whatever the policy
    /// (written next, in order, and fsynced with what follows it): for records whose
    /// loss in a crash costs nothing acknowledged. A log that failed earlier refuses it.
    pub fn append_unwaited(&self, kind: u8, payload: impl Into<Payload>) -> Result<Handed> {
        self.send_append(Append {
            request: record(kind, payload, Durability::Policy)?,
            reply: None,
        })?;
        Ok(self.handed())
    }

    /// [`Wal::append_under_policy`] for a record that must be logged whatever the load
    /// (one applied from a replicated log, whose refusal would stop the replication):
    /// while the backlog is at its bound it waits for the writer to drain it, instead
    /// of being refused. A log that failed earlier refuses it.
    pub fn append_under_policy_waiting(&self, kind: u8, payload: Vec<u8>) -> Result<Handed> {
        if self.policy == SyncPolicy::Always {
            return self.append(kind, payload).map(|_| Handed::KEPT);
        }
        let request = record(kind, payload, Durability::Policy)?;
        // At a bound of 0 it goes through once nothing waits.
        while self.backlog_room().is_err() && self.stats.waiting.load(Ordering::Relaxed) > 0 {
            if let Some(failure) = self.failed.get() {
                return Err(Error::Wal(WalError::Stopped(Box::new(failure))));
            }
            self.writer_thread.unpark();
            thread::sleep(LINGER);
        }
        self.send(
            Append {
                request,
                reply: None,
            },
            Backlog::Waited,
        )?;
        Ok(self.handed())
    }

    /// Appends a record and returns only once it is fsynced, whatever the policy.
    pub fn append_durable(&self, kind: u8, payload: Vec<u8>) -> Result<u64> {
        self.submit(record(kind, payload, Durability::Synced)?)
    }

    /// Waits until every record written so far is fsynced; returns the sequence the
    /// next record will take (every record before it is then durable).
    pub fn sync(&self) -> Result<u64> {
        self.submit(Request::Sync)
    }

    /// Closes the current segment (fsynced) and starts a new one at the next sequence,
    /// unless the current one is empty; returns that sequence. Every segment before it
    /// is then sealed: no record is ever added to it again.
    pub fn rotate(&self) -> Result<u64> {
        self.submit(Request::Rotate)
    }

    /// The hand-over of a record sent to the writer just now: the instant is read after
    /// the send, so that every batch the writer drains after it holds the record.
    fn handed(&self) -> Handed {
        Handed(self.progress.now())
    }

    /// Whether the record of `handed` (and every one handed over before it) is kept as
    /// the policy keeps records: fsynced under `always` and `interval`, written to its
    /// file (safe from the process's death, not the machine's) under `never`. A clock
    /// read and an atomic load; false for good once the log has failed.
    pub fn holds(&self, handed: Handed) -> bool {
        if self.failed.get().is_some() {
            return false;
        }
        let Handed(at) = handed;
        let durable = self.progress.durable_as_of.load(Ordering::Acquire) >= at;
        match self.policy {
            SyncPolicy::Never => {
                durable || self.progress.written_as_of.load(Ordering::Acquire) >= at
            }
            SyncPolicy::Always | SyncPolicy::Interval(_) => durable,
        }
    }

    /// Whether the log has failed (it refuses every record from then on).
    pub fn has_failed(&self) -> bool {
        self.failed.get().is_some()
    }

    /// The sequence the next record will get; every record before it is written (not
    /// necessarily fsynced).
    pub fn next_sequence(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Hands `request` to the writer and waits for its outcome.
    fn submit(&self, request: Request) -> Result<u64> {
        let (reply, answer) = mpsc::channel();
        self.send_append(Append {
            request,
            reply: Some(reply),
        })?;
        answer
            .recv()
            .map_err(|_| Error::Wal(WalError::WriterStopped))?
            .map_err(Error::Wal)
    }

    /// Bounds the records waiting for the writer: beyond `limit`, an append that does
    /// not wait for its outcome ([`Wal::append_under_policy`] under `interval` and
    /// `never`) is refused with [`Error::Backlog`] instead of queueing behind a slow
    /// disk. Appends that wait (deltas, `always`) are bounded by their callers.
    pub fn set_max_backlog(&self, limit: u64) {
        self.max_backlog.store(limit, Ordering::Relaxed);
    }

    /// Whether an answer acknowledging records appended under `interval` must wait:
    /// some record handed to the writer more than the interval ago is not on disk yet
    /// (the writer is behind, e.g. starved of CPU). Always false under `always` and
    /// `never`. A clock read and an atomic load.
    pub fn behind_window(&self) -> bool {
        match self.policy {
            SyncPolicy::Interval(every) => self.progress.durable_age() > every,
            SyncPolicy::Always | SyncPolicy::Never => false,
        }
    }

    /// Blocks until the log is within its `interval` window again (an fsync covering
    /// everything handed over so far): called before an answer that acknowledges
    /// records appended under `interval` goes out, so that the answer never comes
    /// before the records the window promises are on disk. Returns at once when the
    /// log is within the window.
    pub fn keep_window(&self) -> Result<()> {
        if !self.behind_window() {
            return Ok(());
        }
        self.stats.window_waits.fetch_add(1, Ordering::Relaxed);
        self.sync().map(|_| ())
    }

    /// Fails with [`Error::Backlog`] when an append that does not wait would be refused
    /// now.
    pub fn check_backlog(&self) -> Result<()> {
        if self.policy == SyncPolicy::Always {
            return Ok(());
        }
        self.backlog_room()
    }

    /// [`Error::Backlog`] when the records waiting for the writer are at the bound.
    fn backlog_room(&self) -> Result<()> {
        let waiting = self.stats.waiting.load(Ordering::Relaxed);
        let limit = self.max_backlog.load(Ordering::Relaxed);
        if waiting >= limit {
            return Err(Error::Backlog { waiting, limit });
        }
        Ok(())
    }

    /// Hands `append` to the writer. Every request after a failed write is refused
    /// here, and one that does not wait while the backlog is at its bound.
    fn send_append(&self, append: Append) -> Result<()> {
        let backlog = if append.reply.is_none() {
            Backlog::Bounded
        } else {
            Backlog::Waited
        };
        self.send(append, backlog)
    }

    /// [`Wal::send_append`], refused at the backlog's bound when it is `Bounded`.
    fn send(&self, append: Append, backlog: Backlog) -> Result<()> {
        if let Some(failure) = self.failed.get() {
            return Err(Error::Wal(WalError::Stopped(Box::new(failure))));
        }
        let waits = append.reply.is_some();
        if backlog == Backlog::Bounded {
            self.backlog_room()?;
        }
        self.stats.waiting.fetch_add(1, Ordering::Relaxed);
        let sent = match self.sender.read() {
            Ok(guard) => guard.as_ref().is_some_and(|s| s.send(append).is_ok()),
            Err(_) => false,
        };
        if !sent {
            self.stats.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(Error::Wal(WalError::Closed));
        }
        if waits {
            self.writer_thread.unpark();
        }
        Ok(())
    }

    /// Deletes segments whose records all come before `sequence` (a snapshot covers
    /// them); returns how many were deleted. The current segment is never deleted.
    pub fn remove_before(&self, sequence: u64) -> Result<usize> {
        let segments = segments(&self.dir)?;
        let mut removed = 0;
        for pair in segments.windows(2) {
            let (Some((_, path)), Some((next_first, _))) = (pair.first(), pair.get(1)) else {
                continue;
            };
            if *next_first <= sequence {
                fs::remove_file(path).map_err(io_error("removing", path))?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Bytes of the segment files on disk now (what a backup of the log copies, and
    /// what the next cut may free).
    pub fn disk_bytes(&self) -> u64 {
        segments(&self.dir).map_or(0, |segments| {
            segments
                .iter()
                .filter_map(|(_, path)| fs::metadata(path).ok())
                .map(|meta| meta.len())
                .sum()
        })
    }

    /// The writer's counters.
    pub fn stats(&self) -> &WalStats {
        &self.stats
    }

    /// Stops the writer after it has written (and synced) everything appended.
    pub fn close(&self) {
        if let Ok(mut sender) = self.sender.write() {
            sender.take();
        }
        self.writer_thread.unpark();
        if let Ok(mut worker) = self.worker.lock()
            && let Some(worker) = worker.take()
        {
            let _ = worker.join();
        }
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.close();
    }
}

/// The request of a record; one whose bytes are given is refused here when it is over
/// [`MAX_PAYLOAD`] (one the writer encodes, by the writer).
fn record(kind: u8, payload: impl Into<Payload>, durability: Durability) -> Result<Request> {
    let payload = payload.into();
    if let Payload::Bytes(bytes) = &payload
        && bytes.len() > MAX_PAYLOAD
    {
        return Err(Error::Wal(WalError::TooLarge { size: bytes.len() }));
    }
    Ok(Request::Record {
        kind,
        payload,
        durability,
    })
}

#[cfg(test)]
mod tests;
