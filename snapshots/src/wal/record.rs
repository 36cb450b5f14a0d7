//! What the log's parts share: a record and its limits, the sync policy and the
//! log's settings, what an append asks of the writer and when it is answered, how far
//! the log is on disk ([`Progress`]), and the log's errors ([`WalError`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Bytes before the payload: length, crc, sequence, kind.
pub const RECORD_HEADER: usize = 4 + 4 + 8 + 1;

/// Largest payload accepted (a sanity bound for recovery, too).
pub const MAX_PAYLOAD: usize = 256 << 20;

/// Under `interval` and `never`, how long the writer lets records gather after a batch
/// before it writes the next: under load one write (and one wake-up) covers every
/// record of that time instead of one each. Appends that wait for their outcome do not
/// wait for it.
pub const LINGER: Duration = Duration::from_millis(1);

/// The longest the writer lets records gather under `interval` ([`linger`]).
pub const LINGER_MAX: Duration = Duration::from_millis(5);

/// How long the writer lets records gather after a batch under `policy`: [`LINGER`]
/// under `never`, and under `interval` half the window, at most [`LINGER_MAX`] (under
/// `always` it does not linger: every append waits for its batch). Each batch is fsynced
/// as soon as it is written, so a record reaches the disk at most about half the
/// window plus one write and fsync after it was handed over, and under load the writer
/// fsyncs a couple of hundred times a second rather than once a millisecond: each
/// fsync of a growing file costs the core that serves about 200 µs of kernel time on
/// a virtual machine's disk (`benches/README.md`).
pub fn linger(policy: SyncPolicy) -> Duration {
    match policy {
        SyncPolicy::Interval(every) => (every / 2).min(LINGER_MAX),
        SyncPolicy::Always | SyncPolicy::Never => LINGER,
    }
}

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

/// Why the log refused or failed an append (inside [`Error::Wal`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalError {
    /// The record is larger than [`MAX_PAYLOAD`].
    #[error("record of {size} bytes is over the limit of {MAX_PAYLOAD}")]
    TooLarge {
        /// Its payload's size.
        size: usize,
    },
    /// The log was closed (the server is stopping).
    #[error("the log is closed")]
    Closed,
    /// The writer thread stopped before answering.
    #[error("the log writer stopped")]
    WriterStopped,
    /// Writing, syncing or creating a segment failed (what, where, the system's
    /// reason).
    #[error("{action} {path}: {reason}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// An earlier write or sync failed: the file's tail is unknown, so the log takes
    /// nothing more rather than risk a gap in the sequence.
    #[error("the log stopped taking records after an earlier failure: {0}")]
    Stopped(Box<WalError>),
    /// The caller's record could not be made (its encoder's reason).
    #[error("{0}")]
    Unencodable(String),
}

/// A record that the writer encodes itself, on its own thread, just before writing it:
/// the caller's thread hands over what it holds and does not pay for the encoding.
pub trait Encode: Send + std::fmt::Debug {
    /// The record's payload.
    fn encode(&self) -> Result<Vec<u8>, WalError>;
}

/// An appended record's payload: its bytes, or a record the writer encodes
/// ([`Encode`]).
#[derive(Debug)]
pub enum Payload {
    /// The payload's bytes, at most [`MAX_PAYLOAD`].
    Bytes(Vec<u8>),
    /// Encoded by the writer, just before it writes the record. A record that cannot be
    /// encoded (or is over [`MAX_PAYLOAD`]) fails the log as a failed write does: no
    /// record handed over after it is written.
    Deferred(Box<dyn Encode>),
}

impl From<Vec<u8>> for Payload {
    fn from(bytes: Vec<u8>) -> Payload {
        Payload::Bytes(bytes)
    }
}

impl Payload {
    /// The payload's bytes, encoded now when the writer was to encode them.
    pub fn into_bytes(self) -> Result<Vec<u8>, WalError> {
        match self {
            Payload::Bytes(bytes) => Ok(bytes),
            deferred => deferred.bytes().map(std::borrow::Cow::into_owned),
        }
    }

    /// The payload's bytes: as given, or encoded now.
    pub(super) fn bytes(&self) -> Result<std::borrow::Cow<'_, [u8]>, WalError> {
        let bytes = match self {
            Payload::Bytes(bytes) => std::borrow::Cow::Borrowed(bytes.as_slice()),
            Payload::Deferred(record) => std::borrow::Cow::Owned(record.encode()?),
        };
        if bytes.len() > MAX_PAYLOAD {
            return Err(WalError::TooLarge { size: bytes.len() });
        }
        Ok(bytes)
    }
}

/// What an append asks of the writer.
#[derive(Debug)]
pub(super) enum Request {
    /// Write a record; with [`Durability::Synced`], fsync before answering whatever
    /// the policy.
    Record {
        /// The caller's kind.
        kind: u8,
        /// Its payload.
        payload: Payload,
        /// When the answer may come.
        durability: Durability,
    },
    /// Fsync what is written.
    Sync,
    /// Close the current segment (fsynced) and start the next one.
    Rotate,
}

/// When a record's append is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Durability {
    /// As the log's [`SyncPolicy`] says.
    Policy,
    /// Once fsynced.
    Synced,
}

/// A request on its way to the writer, with where its outcome goes (`None` for
/// appends that do not wait for it).
#[derive(Debug)]
pub(super) struct Append {
    pub(super) request: Request,
    pub(super) reply: Option<mpsc::Sender<std::result::Result<u64, WalError>>>,
}

/// How far the log is on disk, in time: every record handed to the writer before
/// `durable_as_of` (nanoseconds after `epoch`) is fsynced, every one handed before
/// `written_as_of` written to its file. Written by the writer after each write and
/// fsync (and when it finds nothing pending), read by [`Wal::behind_window`] and
/// [`Wal::holds`].
#[derive(Debug)]
pub(super) struct Progress {
    pub(super) epoch: Instant,
    pub(super) durable_as_of: AtomicU64,
    pub(super) written_as_of: AtomicU64,
}

impl Progress {
    pub(super) fn new() -> Progress {
        Progress {
            epoch: Instant::now(),
            durable_as_of: AtomicU64::new(0),
            written_as_of: AtomicU64::new(0),
        }
    }

    /// Everything handed over before `at` (from [`Progress::now`]) is written.
    pub(super) fn written_at(&self, at: u64) {
        self.written_as_of.fetch_max(at, Ordering::AcqRel);
    }

    /// Now, in nanoseconds after the epoch.
    pub(super) fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Everything handed over before `at` (from [`Progress::now`]) is durable.
    pub(super) fn durable_at(&self, at: u64) {
        self.durable_as_of.fetch_max(at, Ordering::AcqRel);
    }

    /// How long ago the newest instant is before which everything is durable.
    pub(super) fn durable_age(&self) -> Duration {
        Duration::from_nanos(
            self.now()
                .saturating_sub(self.durable_as_of.load(Ordering::Acquire)),
        )
    }
}
