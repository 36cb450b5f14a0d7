//! The writer thread: takes every request waiting, writes the records in one go,
//! fsyncs once for the batch when the policy (or a request) asks for it (under
//! `always` and `interval`, every batch: group commit), lets the next records gather
//! for [`linger`], starts a new segment when the current one is full; after a failed
//! write or sync it takes nothing more.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use super::format::{encode, segment_name, segments, sync_dir};
use super::record::{
    Append, Durability, Progress, Request, SyncPolicy, WalConfig, WalError, linger,
};
use super::stats::WalStats;
use crate::error::{Result, io_error};

/// Each request's outcome: the sequence it took (or the next, for a sync or rotation).
type Outcomes = Vec<std::result::Result<u64, WalError>>;

/// A failed operation on `path`.
fn io(action: &'static str, path: &Path, error: &std::io::Error) -> WalError {
    WalError::Io {
        action,
        path: path.to_owned(),
        reason: error.to_string(),
    }
}

pub(super) struct Writer {
    dir: PathBuf,
    segment_bytes: u64,
    policy: SyncPolicy,
    /// The current segment, written a whole batch at a time (from `scratch`: no buffer
    /// of its own to copy the batch into).
    file: File,
    path: PathBuf,
    written: u64,
    next: u64,
    unsynced: u64,
    /// Every record handed over before this instant ([`Progress::now`]) is written.
    written_as_of: u64,
    /// Published after each fsync: how far, in time, the log is on disk.
    progress: Arc<Progress>,

    /// `next`, published after each batch is written.
    pub(super) shared_next: Arc<AtomicU64>,
    /// Set by the first failed write or sync: the file's tail is then unknown, so every
    /// later append is refused (by the writer, and up front by [`Wal::send`]) rather
    /// than risk a gap in the sequence.
    pub(super) failed: Arc<Failure>,
    /// The encoded records of a batch, kept from one batch to the next (up to
    /// [`SCRATCH_KEPT`]) so that a batch does not grow a fresh buffer from nothing.
    scratch: Vec<u8>,
}

/// The most of a batch's buffer kept for the next batch: what a burst grew beyond it is
/// given back.
const SCRATCH_KEPT: usize = 1 << 20;

/// The most appends a batch's list keeps room for from one batch to the next.
const BATCH_KEPT: usize = 4096;

impl Writer {
    pub(super) fn start(config: &WalConfig, next: u64, progress: Arc<Progress>) -> Result<Writer> {
        // Continue the last segment if there is one, else start a new one.
        let (path, written) = match segments(&config.dir)?.last() {
            Some((_, path)) => (
                path.clone(),
                fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            ),
            None => (config.dir.join(segment_name(next)), 0),
        };
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_error("opening", &path))?;
        file.seek(SeekFrom::End(0))
            .map_err(io_error("seeking", &path))?;
        sync_dir(&config.dir)?;
        Ok(Writer {
            dir: config.dir.clone(),
            segment_bytes: config.segment_bytes.max(1024),
            policy: config.policy,
            file,
            path,
            written,
            next,
            unsynced: 0,
            written_as_of: 0,
            progress,
            shared_next: Arc::new(AtomicU64::new(next)),
            failed: Arc::new(Failure::default()),
            scratch: Vec::new(),
        })
    }

    pub(super) fn run(&mut self, receiver: &mpsc::Receiver<Append>, stats: &WalStats) {
        /// The longest the writer sleeps when idle before it marks what it has written
        /// (and, when nothing is left to fsync, kept) as of then.
        const IDLE_MARK: Duration = Duration::from_millis(50);
        // Under `interval` the writer syncs at half the interval, so that an fsync's own
        // time and a late wake-up rarely make an answer wait ([`Wal::keep_window`]).
        let tick = match self.policy {
            SyncPolicy::Interval(every) => (every / 2).max(Duration::from_millis(1)),
            SyncPolicy::Always | SyncPolicy::Never => Duration::from_secs(3600),
        };
        let linger = linger(self.policy);
        let mut batch: Vec<Append> = Vec::new();
        let mut synced_idle = Instant::now();
        loop {
            // Woken at least every `IDLE_MARK` when idle, whatever the policy: an append
            // reads its hand-over just after sending, so the writer may have written
            // the record (and found the queue empty) before that instant; the next
            // idle mark covers it.
            let first = match receiver.recv_timeout(tick.min(IDLE_MARK)) {
                Ok(first) => first,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // Nothing handed over before `now` is left to write once the queue
                    // reads empty after it.
                    let now = self.progress.now();
                    match receiver.try_recv() {
                        Ok(first) => first,
                        Err(mpsc::TryRecvError::Empty) => {
                            self.written_as_of = now;
                            self.progress.written_at(now);
                            if self.unsynced > 0 {
                                // Under `interval` every tick; otherwise once a tick.
                                if synced_idle.elapsed() >= tick {
                                    let _ = self.sync(stats);
                                    synced_idle = Instant::now();
                                }
                            } else if self.failed.get().is_none() {
                                self.progress.durable_at(now);
                            }
                            continue;
                        }
                        Err(mpsc::TryRecvError::Disconnected) => break,
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            batch.push(first);
            // The instant before the read that found the queue empty: every append
            // handed over before it is in this batch or an earlier one.
            let drained_at = loop {
                let now = self.progress.now();
                match receiver.try_recv() {
                    Ok(more) => batch.push(more),
                    Err(_) => break now,
                }
            };
            let outcome = self.write_batch(&batch, drained_at, stats);
            stats
                .waiting
                .fetch_sub(batch.len() as u64, Ordering::Relaxed);
            for (append, result) in batch.drain(..).zip(outcome) {
                if let Some(reply) = &append.reply {
                    let _ = reply.send(result);
                }
            }
            batch.shrink_to(BATCH_KEPT);
            if self.policy != SyncPolicy::Always {
                // Let the next records gather instead of waking for each one; an append
                // that waits for its outcome (or closing the log) unparks at once.
                thread::park_timeout(linger);
            }
        }
        if self.unsynced > 0 || self.policy != SyncPolicy::Never {
            let _ = self.sync(stats);
        }
    }

    fn write_batch(&mut self, batch: &[Append], drained_at: u64, stats: &WalStats) -> Outcomes {
        if let Some(failure) = self.failed.get() {
            let refused = WalError::Stopped(Box::new(failure));
            return batch.iter().map(|_| Err(refused.clone())).collect();
        }
        let outcome = self.try_write_batch(batch, drained_at, stats);
        if let Some(Err(error)) = outcome.first() {
            self.failed.set(error.clone());
        }
        outcome
    }

    fn try_write_batch(&mut self, batch: &[Append], drained_at: u64, stats: &WalStats) -> Outcomes {
        // Always left empty below, so it starts empty.
        let mut bytes = std::mem::take(&mut self.scratch);
        let outcomes = self.encode_and_write(batch, drained_at, stats, &mut bytes);
        bytes.clear();
        bytes.shrink_to(SCRATCH_KEPT);
        self.scratch = bytes;
        outcomes
    }

    /// [`Writer::try_write_batch`], the records encoded into `bytes`.
    fn encode_and_write(
        &mut self,
        batch: &[Append],
        drained_at: u64,
        stats: &WalStats,
        bytes: &mut Vec<u8>,
    ) -> Outcomes {
        let mut sequences = Vec::with_capacity(batch.len());
        let mut records = 0u64;
        let mut must_sync = self.policy == SyncPolicy::Always;
        for append in batch {
            let (kind, payload) = match &append.request {
                Request::Sync => {
                    must_sync = true;
                    sequences.push(self.next);
                    continue;
                }
                Request::Rotate => {
                    must_sync = true;
                    if self.written + bytes.len() as u64 > 0
                        && let Err(e) = self.write_and_rotate(bytes, stats)
                    {
                        return batch.iter().map(|_| Err(e.clone())).collect();
                    }
                    sequences.push(self.next);
                    continue;
                }
                Request::Record {
                    kind,
                    payload,
                    durability,
                } => {
                    must_sync |= *durability == Durability::Synced;
                    (*kind, payload)
                }
            };
            if self.written + bytes.len() as u64 >= self.segment_bytes
                && self.written + (bytes.len() as u64) > 0
                && let Err(e) = self.write_and_rotate(bytes, stats)
            {
                return batch.iter().map(|_| Err(e.clone())).collect();
            }
            let payload = match payload.bytes() {
                Ok(payload) => payload,
                Err(e) => return batch.iter().map(|_| Err(e.clone())).collect(),
            };
            encode(self.next, kind, &payload, bytes);
            sequences.push(self.next);
            self.next += 1;
            records += 1;
        }
        let written = self.file.write_all(bytes);
        if let Err(e) = written {
            let failed = io("writing", &self.path, &e);
            return batch.iter().map(|_| Err(failed.clone())).collect();
        }
        self.written += bytes.len() as u64;
        self.unsynced += records;
        self.written_as_of = drained_at;
        self.progress.written_at(drained_at);
        self.shared_next.store(self.next, Ordering::Release);
        stats.records.fetch_add(records, Ordering::Relaxed);
        stats.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        // Group commit under `interval` too: a batch written is fsynced at once, and
        // the records handed over meanwhile make the next batch. The writer is then
        // behind its window only when one fsync (or its own wait for the CPU) takes
        // longer than the window, not whenever a timer fires late.
        let must_sync = must_sync || matches!(self.policy, SyncPolicy::Interval(_));
        if must_sync && let Err(e) = self.sync(stats) {
            return batch.iter().map(|_| Err(e.clone())).collect();
        }
        sequences.into_iter().map(Ok).collect()
    }

    fn sync(&mut self, stats: &WalStats) -> Result<(), WalError> {
        let started = Instant::now();
        self.file
            .sync_data()
            .map_err(|e| io("syncing", &self.path, &e))?;
        stats.record_sync(self.unsynced, started.elapsed());
        self.unsynced = 0;
        self.progress.durable_at(self.written_as_of);
        Ok(())
    }

    /// Writes the records gathered in `bytes` to the current segment, then starts the
    /// next one; `bytes` is emptied once written.
    fn write_and_rotate(&mut self, bytes: &mut Vec<u8>, stats: &WalStats) -> Result<(), WalError> {
        self.file
            .write_all(bytes)
            .map_err(|e| io("writing", &self.path, &e))?;
        bytes.clear();
        self.rotate(stats)
    }

    fn rotate(&mut self, stats: &WalStats) -> Result<(), WalError> {
        self.sync(stats)?;
        let path = self.dir.join(segment_name(self.next));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io("creating", &path, &e))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("syncing directory", &self.dir, &e))?;
        self.file = file;
        self.path = path;
        self.written = 0;
        Ok(())
    }
}

/// The log's first failure, once there was one. The flag keeps the lock off the path of
/// every append.
#[derive(Debug, Default)]
pub(super) struct Failure {
    flag: AtomicBool,
    error: Mutex<Option<WalError>>,
}

impl Failure {
    pub(super) fn get(&self) -> Option<WalError> {
        if !self.flag.load(Ordering::Acquire) {
            return None;
        }
        self.error.lock().ok().and_then(|e| e.clone())
    }

    fn set(&self, error: WalError) {
        if let Ok(mut slot) = self.error.lock()
            && slot.is_none()
        {
            *slot = Some(error);
        }
        self.flag.store(true, Ordering::Release);
    }
}
