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
//! (or one record of the batch) asks for it: many appends, one fsync.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::{Error, Result, io_error};

/// Bytes before the payload: length, crc, sequence, kind.
pub const RECORD_HEADER: usize = 4 + 4 + 8 + 1;
/// Largest payload accepted (a sanity bound for recovery, too).
pub const MAX_PAYLOAD: usize = 256 << 20;
/// Under `interval` and `never`, how long the writer lets records gather after a batch
/// before it writes the next: under load one write (and one wake-up) covers every
/// record of that time instead of one each. Appends that wait for their outcome do not
/// wait for it.
pub const LINGER: Duration = Duration::from_millis(1);

/// When appended records reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync before an append returns.
    Always,
    /// An append returns once written; an fsync follows at most this long after.
    Interval(Duration),
    /// The operating system decides.
    Never,
}

/// Settings of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalConfig {
    /// Directory of the segment files.
    pub dir: PathBuf,
    /// A new segment is started once the current one reaches this size.
    pub segment_bytes: u64,
    /// Sync policy for ordinary appends.
    pub policy: SyncPolicy,
    /// The lowest sequence the next record may take: the position of the newest
    /// snapshot. A log that ends before it (its tail lost, or wholly covered) goes on
    /// there after a [`KIND_GAP`] record, so that no new record takes a sequence a
    /// snapshot already covers; the records it has are kept for the consumers that
    /// replay from an older position.
    pub first_sequence: u64,
}

/// Kind of the record that opens a segment continuing the log after a gap: its
/// payload is the sequence the log had reached before (u64, little-endian); the
/// sequences in between were never written. Reserved: callers' kinds start at 1.
pub const KIND_GAP: u8 = 0;

/// One record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its position in the log.
    pub sequence: u64,
    /// What the payload is (the caller's code).
    pub kind: u8,
    /// The bytes.
    pub payload: Vec<u8>,
}

/// What recovery found and did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Every intact record, in order.
    pub records: Vec<Record>,
    /// Where the log was cut, and why, when a bad or torn record was found.
    pub truncated: Option<String>,
    /// Segment files removed because they came after the cut.
    pub removed_segments: usize,
    /// When the log ended before `first_sequence`: (where it ended, where it goes on).
    /// Nothing was removed; a [`KIND_GAP`] record marks the jump.
    pub resumed: Option<(u64, u64)>,
    /// The sequence the next record takes.
    pub next_sequence: u64,
}

/// Counters of the writer, for benchmarks and metrics.
#[derive(Debug)]
pub struct WalStats {
    /// Records appended.
    pub records: AtomicU64,
    /// Bytes written (records with their headers).
    pub bytes: AtomicU64,
    /// Records handed to the writer and not yet written.
    pub waiting: AtomicU64,
    /// fsyncs done.
    pub syncs: AtomicU64,
    /// Records covered by those fsyncs.
    pub synced_records: AtomicU64,
    /// How long each fsync took, in seconds.
    pub sync_seconds: prometheus::Histogram,
    /// Records per fsync, as a histogram (`None` until the first fsync).
    batches: Mutex<Option<hdrhistogram::Histogram<u64>>>,
}

impl Default for WalStats {
    fn default() -> WalStats {
        WalStats {
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            synced_records: AtomicU64::new(0),
            sync_seconds: crate::metrics::histogram(
                "vitrine_wal_fsync_duration_seconds",
                "How long an fsync of the write-ahead log took.",
                crate::metrics::short_buckets(),
            ),
            batches: Mutex::new(None),
        }
    }
}

impl WalStats {
    fn record_sync(&self, records: u64, took: Duration) {
        self.sync_seconds.observe(took.as_secs_f64());
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.synced_records.fetch_add(records, Ordering::Relaxed);
        if let Ok(mut batches) = self.batches.lock() {
            if batches.is_none() {
                *batches = hdrhistogram::Histogram::new(3).ok();
            }
            if let Some(histogram) = batches.as_mut() {
                histogram.saturating_record(records);
            }
        }
    }

    /// Records per fsync at a quantile (0.5: the median), or 0 before any fsync.
    pub fn records_per_sync_at(&self, quantile: f64) -> u64 {
        self.batches
            .lock()
            .ok()
            .and_then(|b| b.as_ref().map(|h| h.value_at_quantile(quantile)))
            .unwrap_or(0)
    }
}

struct Append {
    kind: u8,
    payload: Vec<u8>,
    force_sync: bool,
    /// Not a record: close the current segment (fsynced) and start the next one.
    rotate: bool,
    /// Not a record: fsync what is written (with `force_sync`).
    sync_only: bool,
    /// Where the outcome goes; `None` for appends that do not wait for it.
    reply: Option<mpsc::Sender<Result<u64, String>>>,
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
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn segment_name(first_sequence: u64) -> String {
    format!("{first_sequence:020}.wal")
}

/// Segment files of `dir` as (first sequence, path), in order.
pub fn segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(io_error("reading directory", dir)(e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(first) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".wal"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        found.push((first, entry.path()));
    }
    found.sort();
    Ok(found)
}

/// Appends one record to `out`: length, CRC32C, then the body (sequence, kind,
/// payload), the checksum taken over the body's parts in turn (no copy of it).
fn encode(sequence: u64, kind: u8, payload: &[u8], out: &mut Vec<u8>) {
    let mut head = [0u8; 9];
    let (number, kind_byte) = head.split_at_mut(8);
    number.copy_from_slice(&sequence.to_le_bytes());
    kind_byte.copy_from_slice(&[kind]);
    let body_len = head.len() + payload.len();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&head), payload);
    out.reserve(8 + body_len);
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
}

/// Where a segment ends early and why: (byte offset, reason).
pub type SegmentEnd = (usize, String);

/// Reads the records of a segment's bytes whose first record has sequence `first`;
/// for inspection and fuzzing.
pub fn decode_segment(bytes: &[u8], first: u64) -> (Vec<Record>, Option<SegmentEnd>) {
    read_segment(bytes, first)
}

/// Reads one segment file without changing it (for inspection and tests): its intact
/// records, and where and why it ends early, if it does.
pub fn read_segment_file(path: &Path) -> Result<(Vec<Record>, Option<SegmentEnd>)> {
    let bytes = fs::read(path).map_err(io_error("reading", path))?;
    let first = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1);
    Ok(read_segment(&bytes, first))
}

/// Starts the segment `first` with a [`KIND_GAP`] record saying the log had reached
/// `ended`, fsynced with its directory.
fn write_gap(dir: &Path, ended: u64, first: u64) -> Result<()> {
    fs::create_dir_all(dir).map_err(io_error("creating", dir))?;
    let path = dir.join(segment_name(first));
    let mut bytes = Vec::new();
    encode(first, KIND_GAP, &ended.to_le_bytes(), &mut bytes);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .map_err(io_error("creating", &path))?;
    file.write_all(&bytes).map_err(io_error("writing", &path))?;
    file.sync_all().map_err(io_error("syncing", &path))?;
    sync_dir(dir)
}

/// Reads the records of one segment; returns them and, if the segment ends in a bad or
/// torn record, its offset and the reason.
fn read_segment(bytes: &[u8], expected: u64) -> (Vec<Record>, Option<(usize, String)>) {
    let mut records = Vec::new();
    let mut offset = 0;
    let mut sequence = expected;
    while offset < bytes.len() {
        let le_u32 = |at: usize| -> Option<u32> {
            let field: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
            Some(u32::from_le_bytes(field))
        };
        let (Some(len), Some(crc)) = (le_u32(offset), le_u32(offset + 4)) else {
            return (records, Some((offset, "torn record header".to_owned())));
        };
        let len = len as usize;
        if !(9..=MAX_PAYLOAD + 9).contains(&len) {
            return (
                records,
                Some((offset, format!("implausible record length {len}"))),
            );
        }
        let Some(body) = bytes.get(offset + 8..offset + 8 + len) else {
            return (
                records,
                Some((offset, "torn record (file ends inside it)".to_owned())),
            );
        };
        if crc32c::crc32c(body) != crc {
            return (
                records,
                Some((offset, "record checksum mismatch".to_owned())),
            );
        }
        let mut seq_bytes = [0u8; 8];
        seq_bytes.copy_from_slice(body.get(0..8).unwrap_or(&[0; 8]));
        let found = u64::from_le_bytes(seq_bytes);
        if found != sequence {
            return (
                records,
                Some((
                    offset,
                    format!("sequence {found} where {sequence} was expected"),
                )),
            );
        }
        records.push(Record {
            sequence: found,
            kind: body.get(8).copied().unwrap_or_default(),
            payload: body.get(9..).unwrap_or_default().to_vec(),
        });
        sequence += 1;
        offset += 8 + len;
    }
    (records, None)
}

/// Reads every segment of `dir` in order, cuts the log at the first bad or torn record
/// (truncating that segment, removing later ones) and returns what is left.
pub fn recover(dir: &Path) -> Result<Recovery> {
    fs::create_dir_all(dir).map_err(io_error("creating directory", dir))?;
    let mut recovery = Recovery::default();
    let segments = segments(dir)?;
    let mut expected: Option<u64> = None;
    let mut cut = false;
    for (first, path) in segments {
        if cut {
            fs::remove_file(&path).map_err(io_error("removing", &path))?;
            recovery.removed_segments += 1;
            continue;
        }
        let expected_here = expected.unwrap_or(first);
        let mut bytes = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(io_error("reading", &path))?;
        let (records, bad) = read_segment(&bytes, first);
        // A segment may start later than expected only after a gap record that names
        // exactly where the log had ended: a lost segment in between is still a cut.
        let gap = records
            .first()
            .is_some_and(|r| r.kind == KIND_GAP && r.payload == expected_here.to_le_bytes());
        if first != expected_here && !(first > expected_here && gap) {
            recovery.truncated = Some(format!(
                "{} starts at sequence {first}, {expected_here} was expected",
                path.display()
            ));
            fs::remove_file(&path).map_err(io_error("removing", &path))?;
            recovery.removed_segments += 1;
            cut = true;
            continue;
        }
        expected = Some(first + records.len() as u64);
        recovery
            .records
            .extend(records.into_iter().filter(|r| r.kind != KIND_GAP));
        if let Some((offset, reason)) = bad {
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(io_error("opening", &path))?;
            file.set_len(offset as u64)
                .map_err(io_error("truncating", &path))?;
            file.sync_all().map_err(io_error("syncing", &path))?;
            recovery.truncated = Some(format!(
                "{} at byte {offset}: {reason}; cut there",
                path.display()
            ));
            cut = true;
        }
    }
    recovery.next_sequence = expected.unwrap_or(0);
    Ok(recovery)
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
        let mut writer = Writer::start(&config, next)?;
        let shared_next = Arc::clone(&writer.shared_next);
        let failed = Arc::clone(&writer.failed);
        let worker_stats = Arc::clone(&stats);
        let worker = thread::Builder::new()
            .name("wal-writer".to_owned())
            .spawn(move || writer.run(&receiver, &worker_stats))
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
        };
        Ok((wal, recovery))
    }

    /// Appends a record under the log's policy; returns its sequence.
    pub fn append(&self, kind: u8, payload: Vec<u8>) -> Result<u64> {
        self.submit(kind, payload, false, false)
    }

    /// Appends a record under the log's policy and returns as soon as the policy
    /// allows: with `always` once it is fsynced, otherwise once it is handed to the
    /// writer (written next, in order; `interval` fsyncs it within the interval). A log
    /// that failed earlier refuses it.
    pub fn append_under_policy(&self, kind: u8, payload: Vec<u8>) -> Result<()> {
        if self.policy == SyncPolicy::Always {
            return self.append(kind, payload).map(|_| ());
        }
        self.send(kind, payload, false, false, None)
    }

    /// Hands a record to the writer and returns without waiting, whatever the policy
    /// (written next, in order, and fsynced with what follows it): for records whose
    /// loss in a crash costs nothing acknowledged. A log that failed earlier refuses it.
    pub fn append_unwaited(&self, kind: u8, payload: Vec<u8>) -> Result<()> {
        self.send(kind, payload, false, false, None)
    }

    /// Appends a record and returns only once it is fsynced, whatever the policy.
    pub fn append_durable(&self, kind: u8, payload: Vec<u8>) -> Result<u64> {
        self.submit(kind, payload, true, false)
    }

    /// Waits until every record written so far is fsynced; returns the sequence the
    /// next record will take (every record before it is then durable).
    pub fn sync(&self) -> Result<u64> {
        let (reply, answer) = mpsc::channel();
        self.send_append(Append {
            kind: KIND_GAP,
            payload: Vec::new(),
            force_sync: true,
            rotate: false,
            sync_only: true,
            reply: Some(reply),
        })?;
        answer
            .recv()
            .map_err(|_| Error::Wal("the log writer stopped".to_owned()))?
            .map_err(Error::Wal)
    }

    /// Closes the current segment (fsynced) and starts a new one at the next sequence,
    /// unless the current one is empty; returns that sequence. Every segment before it
    /// is then sealed: no record is ever added to it again.
    pub fn rotate(&self) -> Result<u64> {
        self.submit(0, Vec::new(), true, true)
    }

    /// The sequence the next record will get; every record before it is written (not
    /// necessarily fsynced).
    pub fn next_sequence(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    fn submit(&self, kind: u8, payload: Vec<u8>, force_sync: bool, rotate: bool) -> Result<u64> {
        let (reply, answer) = mpsc::channel();
        self.send(kind, payload, force_sync, rotate, Some(reply))?;
        answer
            .recv()
            .map_err(|_| Error::Wal("the log writer stopped".to_owned()))?
            .map_err(Error::Wal)
    }

    /// Hands a record to the writer; the outcome goes to `reply`, if any. Records over
    /// [`MAX_PAYLOAD`] and every record after a failed write are refused here.
    fn send(
        &self,
        kind: u8,
        payload: Vec<u8>,
        force_sync: bool,
        rotate: bool,
        reply: Option<mpsc::Sender<Result<u64, String>>>,
    ) -> Result<()> {
        if payload.len() > MAX_PAYLOAD {
            return Err(Error::Wal(format!(
                "record of {} bytes is over the limit of {MAX_PAYLOAD}",
                payload.len()
            )));
        }
        self.send_append(Append {
            kind,
            payload,
            force_sync,
            rotate,
            sync_only: false,
            reply,
        })
    }

    /// Bounds the records waiting for the writer: beyond `limit`, an append that does
    /// not wait for its outcome ([`Wal::append_under_policy`] under `interval` and
    /// `never`) is refused with [`Error::Backlog`] instead of queueing behind a slow
    /// disk. Appends that wait (deltas, `always`) are bounded by their callers.
    pub fn set_max_backlog(&self, limit: u64) {
        self.max_backlog.store(limit, Ordering::Relaxed);
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

    fn send_append(&self, append: Append) -> Result<()> {
        if let Some(failure) = self.failed.get() {
            return Err(Error::Wal(refusal(&failure)));
        }
        let waits = append.reply.is_some();
        if !waits {
            self.backlog_room()?;
        }
        self.stats.waiting.fetch_add(1, Ordering::Relaxed);
        let sent = match self.sender.read() {
            Ok(guard) => guard.as_ref().is_some_and(|s| s.send(append).is_ok()),
            Err(_) => false,
        };
        if !sent {
            self.stats.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(Error::Wal("the log is closed".to_owned()));
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

struct Writer {
    dir: PathBuf,
    segment_bytes: u64,
    policy: SyncPolicy,
    file: BufWriter<File>,
    path: PathBuf,
    written: u64,
    next: u64,
    unsynced: u64,
    last_sync: Instant,

    /// `next`, published after each batch is written.
    shared_next: Arc<AtomicU64>,
    /// Set by the first failed write or sync: the file's tail is then unknown, so every
    /// later append is refused (by the writer, and up front by [`Wal::send`]) rather
    /// than risk a gap in the sequence.
    failed: Arc<Failure>,
}

impl Writer {
    fn start(config: &WalConfig, next: u64) -> Result<Writer> {
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
            file: BufWriter::with_capacity(1 << 20, file),
            path,
            written,
            next,
            unsynced: 0,
            last_sync: Instant::now(),
            shared_next: Arc::new(AtomicU64::new(next)),
            failed: Arc::new(Failure::default()),
        })
    }

    fn run(&mut self, receiver: &mpsc::Receiver<Append>, stats: &WalStats) {
        let tick = match self.policy {
            SyncPolicy::Interval(every) => every,
            SyncPolicy::Always | SyncPolicy::Never => Duration::from_secs(3600),
        };
        loop {
            let first = match receiver.recv_timeout(tick) {
                Ok(first) => first,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.unsynced > 0 {
                        let _ = self.sync(stats);
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let mut batch = vec![first];
            while let Ok(more) = receiver.try_recv() {
                batch.push(more);
            }
            let outcome = self.write_batch(&batch, stats);
            stats
                .waiting
                .fetch_sub(batch.len() as u64, Ordering::Relaxed);
            for (append, result) in batch.into_iter().zip(outcome) {
                if let Some(reply) = &append.reply {
                    let _ = reply.send(result);
                }
            }
            if self.policy != SyncPolicy::Always {
                // Let the next records gather instead of waking for each one; an append
                // that waits for its outcome (or closing the log) unparks at once.
                thread::park_timeout(LINGER);
            }
        }
        if self.unsynced > 0 || self.policy != SyncPolicy::Never {
            let _ = self.sync(stats);
        }
    }

    fn write_batch(&mut self, batch: &[Append], stats: &WalStats) -> Vec<Result<u64, String>> {
        if let Some(failure) = self.failed.get() {
            let message = refusal(&failure);
            return batch.iter().map(|_| Err(message.clone())).collect();
        }
        let outcome = self.try_write_batch(batch, stats);
        if let Some(Err(error)) = outcome.first() {
            self.failed.set(error.clone());
        }
        outcome
    }

    fn try_write_batch(&mut self, batch: &[Append], stats: &WalStats) -> Vec<Result<u64, String>> {
        let mut sequences = Vec::with_capacity(batch.len());
        let mut bytes = Vec::new();
        let mut records = 0u64;
        for append in batch {
            if append.sync_only {
                sequences.push(self.next);
                continue;
            }
            if append.rotate {
                if self.written + bytes.len() as u64 > 0
                    && let Err(e) = self.write_and_rotate(&mut bytes, stats)
                {
                    return batch.iter().map(|_| Err(e.clone())).collect();
                }
                sequences.push(self.next);
                continue;
            }
            if self.written + bytes.len() as u64 >= self.segment_bytes
                && self.written + (bytes.len() as u64) > 0
                && let Err(e) = self.write_and_rotate(&mut bytes, stats)
            {
                return batch.iter().map(|_| Err(e.clone())).collect();
            }
            encode(self.next, append.kind, &append.payload, &mut bytes);
            sequences.push(self.next);
            self.next += 1;
            records += 1;
        }
        let written = self.file.write_all(&bytes).and_then(|()| self.file.flush());
        if let Err(e) = written {
            let message = format!("writing {}: {e}", self.path.display());
            return batch.iter().map(|_| Err(message.clone())).collect();
        }
        self.written += bytes.len() as u64;
        self.unsynced += records;
        self.shared_next.store(self.next, Ordering::Release);
        stats.records.fetch_add(records, Ordering::Relaxed);
        stats.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        let must_sync = batch.iter().any(|a| a.force_sync)
            || self.policy == SyncPolicy::Always
            || matches!(self.policy, SyncPolicy::Interval(every) if self.last_sync.elapsed() >= every);
        if must_sync && let Err(e) = self.sync(stats) {
            return batch.iter().map(|_| Err(e.clone())).collect();
        }
        sequences.into_iter().map(Ok).collect()
    }

    fn sync(&mut self, stats: &WalStats) -> Result<(), String> {
        self.file.flush().map_err(|e| e.to_string())?;
        let started = Instant::now();
        self.file
            .get_ref()
            .sync_data()
            .map_err(|e| format!("syncing {}: {e}", self.path.display()))?;
        stats.record_sync(self.unsynced, started.elapsed());
        self.unsynced = 0;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Writes the records gathered in `bytes` to the current segment, then starts the
    /// next one; `bytes` is emptied once written.
    fn write_and_rotate(&mut self, bytes: &mut Vec<u8>, stats: &WalStats) -> Result<(), String> {
        self.file.write_all(bytes).map_err(|e| e.to_string())?;
        bytes.clear();
        self.rotate(stats)
    }

    fn rotate(&mut self, stats: &WalStats) -> Result<(), String> {
        self.sync(stats)?;
        let path = self.dir.join(segment_name(self.next));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("creating {}: {e}", path.display()))?;
        sync_dir(&self.dir).map_err(|e| e.to_string())?;
        self.file = BufWriter::with_capacity(1 << 20, file);
        self.path = path;
        self.written = 0;
        Ok(())
    }
}

/// The log's first failure, once there was one. The flag keeps the lock off the path of
/// every append.
#[derive(Debug, Default)]
struct Failure {
    flag: AtomicBool,
    message: Mutex<Option<String>>,
}

impl Failure {
    fn get(&self) -> Option<String> {
        if !self.flag.load(Ordering::Acquire) {
            return None;
        }
        self.message.lock().ok().and_then(|m| m.clone())
    }

    fn set(&self, message: String) {
        if let Ok(mut slot) = self.message.lock()
            && slot.is_none()
        {
            *slot = Some(message);
        }
        self.flag.store(true, Ordering::Release);
    }
}

fn refusal(failure: &str) -> String {
    format!("the log stopped taking records after an earlier failure: {failure}")
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error("syncing directory", dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, policy: SyncPolicy) -> WalConfig {
        WalConfig {
            dir: dir.join("wal"),
            segment_bytes: 4096,
            policy,
            first_sequence: 1,
        }
    }

    fn payloads(recovery: &Recovery) -> Vec<Vec<u8>> {
        recovery.records.iter().map(|r| r.payload.clone()).collect()
    }

    #[test]
    fn appends_survive_reopening_across_segments() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (wal, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
            assert!(recovery.records.is_empty());
            for i in 0..200u32 {
                let seq = wal
                    .append(7, format!("record {i:03} {}", "x".repeat(50)).into_bytes())
                    .unwrap();
                assert_eq!(seq, u64::from(i) + 1);
            }
        }
        assert!(
            segments(&tmp.path().join("wal")).unwrap().len() > 2,
            "rotated into several segments"
        );
        let (wal, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        assert_eq!(recovery.records.len(), 200);
        assert_eq!(recovery.truncated, None);
        assert!(recovery.records.iter().all(|r| r.kind == 7));
        assert_eq!(wal.append(1, b"next".to_vec()).unwrap(), 201);
    }

    #[test]
    fn a_torn_tail_is_cut_and_earlier_records_kept() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
            for i in 0..5u8 {
                wal.append(1, vec![i; 10]).unwrap();
            }
        }
        let (_, path) = segments(&tmp.path().join("wal")).unwrap().pop().unwrap();
        let len = fs::metadata(&path).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 4)
            .unwrap();
        let (wal, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        assert_eq!(
            payloads(&recovery),
            (0..4u8).map(|i| vec![i; 10]).collect::<Vec<_>>()
        );
        assert!(
            recovery
                .truncated
                .as_deref()
                .unwrap()
                .contains("torn record"),
            "{:?}",
            recovery.truncated
        );
        assert_eq!(
            wal.append(1, b"after".to_vec()).unwrap(),
            5,
            "the cut record's sequence is reused"
        );
        drop(wal);
        let (_, again) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        assert_eq!(again.records.len(), 5);
        assert_eq!(again.records.last().unwrap().payload, b"after");
    }

    #[test]
    fn a_bad_crc_cuts_the_log_there_and_drops_later_segments() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
            for i in 0..150u32 {
                wal.append(2, format!("{i:04}{}", "y".repeat(60)).into_bytes())
                    .unwrap();
            }
        }
        let dir = tmp.path().join("wal");
        let all = segments(&dir).unwrap();
        assert!(all.len() >= 3);
        let (first_of_second, second) = all.get(1).cloned().unwrap();
        let mut bytes = fs::read(&second).unwrap();
        let at = RECORD_HEADER + 20;
        bytes[at] ^= 0xff;
        fs::write(&second, bytes).unwrap();
        let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        assert_eq!(
            recovery.records.len() as u64,
            first_of_second - 1,
            "everything before the bad record"
        );
        assert!(
            recovery
                .truncated
                .as_deref()
                .unwrap()
                .contains("checksum mismatch")
        );
        assert_eq!(recovery.removed_segments, all.len() - 2);
        let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
        assert_eq!(
            kept,
            (1..first_of_second).collect::<Vec<_>>(),
            "a prefix, never garbage"
        );
    }

    #[test]
    fn empty_and_partial_segments_recover() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("wal");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(segment_name(1)), b"").unwrap();
        let (wal, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        assert!(recovery.records.is_empty() && recovery.truncated.is_none());
        assert_eq!(wal.append(3, b"one".to_vec()).unwrap(), 1);
        drop(wal);
        // A partial header at the end (3 bytes of a length).
        let (_, path) = segments(&dir).unwrap().pop().unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&[9, 0, 0]).unwrap();
        drop(file);
        let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        assert_eq!(payloads(&recovery), vec![b"one".to_vec()]);
        assert!(
            recovery
                .truncated
                .as_deref()
                .unwrap()
                .contains("torn record header")
        );
    }

    #[test]
    fn a_log_behind_the_snapshot_position_goes_on_there_and_keeps_its_records() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
            for i in 0..3u8 {
                wal.append(1, vec![i]).unwrap();
            }
        }
        let covered = WalConfig {
            first_sequence: 10,
            ..config(tmp.path(), SyncPolicy::Always)
        };
        let (wal, recovery) = Wal::open(covered).unwrap();
        assert_eq!(payloads(&recovery), [[0], [1], [2]], "nothing is deleted");
        assert_eq!(recovery.resumed, Some((4, 10)));
        assert_eq!(recovery.next_sequence, 11, "10 is the gap record");
        assert_eq!(wal.append(1, b"eleven".to_vec()).unwrap(), 11);
        drop(wal);
        // Reopened, the gap is part of the log: nothing is cut, nothing resumed.
        let (wal, recovery) = Wal::open(WalConfig {
            first_sequence: 5,
            ..config(tmp.path(), SyncPolicy::Always)
        })
        .unwrap();
        assert_eq!(
            payloads(&recovery),
            [
                b"\x00".to_vec(),
                b"\x01".to_vec(),
                b"\x02".to_vec(),
                b"eleven".to_vec()
            ]
        );
        let sequences: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
        assert_eq!(sequences, [1, 2, 3, 11]);
        assert_eq!(
            (recovery.truncated.as_deref(), recovery.resumed),
            (None, None)
        );
        assert_eq!(wal.append(1, b"twelve".to_vec()).unwrap(), 12);
        // `sync` returns the next sequence once everything before it is on disk.
        assert_eq!(wal.sync().unwrap(), 13);
    }

    #[test]
    fn a_segment_lost_before_a_gap_is_still_a_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let small = || WalConfig {
            segment_bytes: 1024,
            ..config(tmp.path(), SyncPolicy::Always)
        };
        {
            let (wal, _) = Wal::open(small()).unwrap();
            for i in 0..40u8 {
                wal.append(1, vec![i; 100]).unwrap();
            }
        }
        {
            let (wal, recovery) = Wal::open(WalConfig {
                first_sequence: 100,
                ..small()
            })
            .unwrap();
            assert_eq!(recovery.resumed, Some((41, 100)));
            wal.append(1, b"after".to_vec()).unwrap();
        }
        let dir = tmp.path().join("wal");
        let all = segments(&dir).unwrap();
        assert!(all.len() >= 4, "{all:?}");
        // Lose a segment in the middle: the gap record names an end that no longer
        // matches, so recovery cuts there instead of accepting the hole.
        fs::remove_file(&all[1].1).unwrap();
        let recovery = recover(&dir).unwrap();
        assert!(recovery.truncated.is_some(), "{recovery:?}");
        assert!(recovery.records.iter().all(|r| r.sequence < all[1].0));
    }

    #[test]
    fn group_commit_shares_fsyncs_between_concurrent_writers() {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(WalConfig {
            segment_bytes: 64 << 20,
            ..config(tmp.path(), SyncPolicy::Always)
        })
        .unwrap();
        let wal = Arc::new(wal);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let wal = Arc::clone(&wal);
                thread::spawn(move || {
                    for i in 0..50 {
                        wal.append(1, format!("{t}-{i}").into_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = wal.stats();
        assert_eq!(stats.records.load(Ordering::Relaxed), 400);
        assert_eq!(
            stats.synced_records.load(Ordering::Relaxed),
            400,
            "always: every record synced before its ack"
        );
        assert!(stats.syncs.load(Ordering::Relaxed) <= 400);
        assert!(
            stats.records_per_sync_at(1.0) > 1,
            "some fsync covered several records"
        );
    }

    #[test]
    fn interval_policy_syncs_within_the_interval_without_further_appends() {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(config(
            tmp.path(),
            SyncPolicy::Interval(Duration::from_millis(20)),
        ))
        .unwrap();
        wal.append(1, b"a".to_vec()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while wal.stats().synced_records.load(Ordering::Relaxed) < 1 {
            assert!(Instant::now() < deadline, "never synced");
            thread::sleep(Duration::from_millis(5));
        }
        wal.append_durable(1, b"b".to_vec()).unwrap();
        assert_eq!(
            wal.stats().synced_records.load(Ordering::Relaxed),
            2,
            "a durable append is synced before it returns"
        );
    }

    #[test]
    fn remove_before_keeps_segments_with_later_records() {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
        for _ in 0..150 {
            wal.append(1, vec![0; 60]).unwrap();
        }
        let before = segments(&tmp.path().join("wal")).unwrap();
        let (second_first, _) = before.get(1).cloned().unwrap();
        assert_eq!(wal.remove_before(second_first).unwrap(), 1);
        assert_eq!(
            wal.remove_before(u64::MAX).unwrap(),
            before.len() - 2,
            "the current segment stays"
        );
        drop(wal);
        let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
        assert_eq!(recovery.records.last().unwrap().sequence, 150);
    }

    #[test]
    fn appends_beyond_the_backlog_are_refused_and_the_rest_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
        wal.set_max_backlog(3);
        // The writer lingers after each batch, so appends made in a tight loop pile up
        // behind it: some are refused, none waits.
        let mut accepted = 0u64;
        let mut refused = 0u64;
        for i in 0..10_000u32 {
            match wal.append_under_policy(1, i.to_le_bytes().to_vec()) {
                Ok(()) => accepted += 1,
                Err(Error::Backlog { waiting, limit }) => {
                    assert_eq!(limit, 3);
                    assert!(waiting >= 3);
                    refused += 1;
                }
                Err(other) => panic!("{other}"),
            }
        }
        assert!(refused > 0, "no append was refused");
        // Appends that wait for their outcome are not refused, and everything accepted
        // is in the log.
        wal.append_durable(1, b"durable".to_vec()).unwrap();
        let next = wal.sync().unwrap();
        assert_eq!(next, 1 + accepted + 1);
        assert_eq!(wal.stats().waiting.load(Ordering::Relaxed), 0);
        drop(wal);
        let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
        assert_eq!(recovery.next_sequence, 1 + accepted + 1);
    }
}
