//! The outbox: an account's records on their way to its stream, kept until JetStream
//! has stored them.
//!
//! One task per account publishes the records in the order they were handed over,
//! pipelined (up to [`WINDOW`] acknowledgements awaited at once, in order). Each
//! message carries a `Nats-Msg-Id` made of the data directory's incarnation and the
//! record's [`OutboxId`] (the data directory's start count and the record's number),
//! so a record published again (its acknowledgement lost when a NATS server died or
//! timed out, or published again by a restart) is stored once: JetStream drops a
//! repeated id within the stream's duplicate window (two minutes).
//!
//! Durable: a record a request adds is logged locally as `Outboxed` with its id first
//! (`AccountJobs::log_and_publish`), and published only once the local log holds it
//! (`LocalLog`): a node killed before its log kept a record has published it nowhere,
//! so that no other node holds what it lost. The publisher saves the outbox mark (every id up
//! to it is stored) at most every [`MARK_EVERY`]; a restart hands the outbox the
//! logged records past the mark, first, with their ids. The local log is not cut past
//! a record not yet stored ([`Outbox::unstored_from`]).
//!
//! When a publish fails (no stream leader while JetStream elects one, a NATS server
//! gone, an acknowledgement not received within [`ACK_TIMEOUT`]), the outbox stops
//! taking new records into the pipeline, lets the publishes in flight finish, and tries
//! the failed ones again, in order, alone, every [`RETRY`] until one is stored; then the
//! pipeline opens again. No record is ever dropped: the bound ([`crate::OUTBOX`]) is
//! enforced before a write is applied ([`Outbox::admit`]).

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::{self, context::PublishAckFuture};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use tokio::sync::{mpsc, oneshot};
use vitrine_ingest::jobs::{
    Handed, Incarnation, LocalLog, OutboxFigures, OutboxId, RecordKind, ReplicationError, Reserved,
    Unstored, Wait,
};

use crate::{KIND_HEADER, ORIGIN_HEADER};

/// Acknowledgements awaited at once.
pub(crate) const WINDOW: usize = 1024;
/// How long an acknowledgement is awaited before the record is published again (to
/// the stream's leader of then: a new one after a failover).
pub(crate) const ACK_TIMEOUT: Duration = Duration::from_millis(400);
/// How long a request waits for its record to be stored ([`Wait::Answer`]): its answer
/// leaves within a second of its arrival, stored or not.
pub(crate) const ANSWER_WAIT: Duration = Duration::from_millis(900);
/// How long background work waits for its record to be stored ([`Wait::Stored`]).
pub(crate) const STORED_WAIT: Duration = Duration::from_secs(600);
/// Wait between attempts at a record that failed.
pub(crate) const RETRY: Duration = Duration::from_millis(100);
/// How long the stream must have been failing before a write that waits for it is
/// refused at once (one slow acknowledgement on a busy machine does not refuse writes).
pub(crate) const REFUSE_AFTER: Duration = Duration::from_millis(300);
/// How often the outbox mark is saved at most (when it moved).
pub(crate) const MARK_EVERY: Duration = Duration::from_secs(1);
/// How often the publisher looks again whether the local log holds a record it is to
/// publish (the log's group commit makes it so within a write and an fsync).
pub(crate) const HELD_POLL: Duration = Duration::from_millis(1);

/// A record in the outbox.
#[derive(Debug)]
struct Entry {
    id: OutboxId,
    /// Where its record is in the local log (a record a request added), and its
    /// hand-over to that log.
    reserved: Option<(Reserved, Handed)>,
    /// Whether it is being tried again after a failure.
    retry: bool,
    kind: RecordKind,
    payload: Bytes,
    handed: Instant,
    stored: Option<oneshot::Sender<()>>,
}

impl Entry {
    /// A record handed over now, nobody waiting for it yet.
    fn new(
        id: OutboxId,
        reserved: Option<(Reserved, Handed)>,
        kind: RecordKind,
        payload: Vec<u8>,
    ) -> Entry {
        Entry {
            id,
            reserved,
            retry: false,
            kind,
            payload: Bytes::from(payload),
            handed: Instant::now(),
            stored: None,
        }
    }
}

/// An account's outbox: the side the jobs hand records to, and its figures.
#[derive(Debug)]
pub(crate) struct Outbox {
    sender: mpsc::UnboundedSender<Entry>,
    /// Records handed over and not yet stored.
    depth: AtomicUsize,
    bound: usize,
    /// The data directory's start count: the first part of every new id.
    start: u32,
    next_number: AtomicU64,
    /// Records logged locally and not yet stored, by their lowest local log sequence.
    reserved: Mutex<BTreeSet<Reserved>>,
    /// The account directory, where the outbox mark is saved.
    dir: PathBuf,
    /// The account's local log: a record is published once it holds it.
    local: Option<LocalLog>,
    /// Since when the attempts fail (no record stored since the first failure), as a
    /// [`stamp`]; 0 while records are stored.
    failing_since: AtomicU64,
    /// Why it failed.
    reason: Mutex<String>,
    /// When the oldest record the publisher holds was handed over, as a [`stamp`] (0: it
    /// holds none).
    oldest: AtomicU64,
    base: Instant,
    retries: AtomicU64,
    /// Writes refused by [`Outbox::admit`], since the process started.
    refused: AtomicU64,
    /// The count of `refused` when the stream last started failing.
    refused_before: AtomicU64,
}

impl Outbox {
    /// A new outbox holding at most `bound` records, for the account in `dir` whose
    /// local log is `local` (none: records are published as soon as they are handed
    /// over), numbering the records of the data directory's `start`; first in it,
    /// `unstored` (records an earlier start logged and may not have published). With
    /// the receiving end for its publisher ([`Outbox::run`]).
    pub(crate) fn new(
        bound: usize,
        start: u32,
        unstored: Vec<Unstored>,
        dir: PathBuf,
        local: Option<LocalLog>,
    ) -> (Outbox, Receiver) {
        let (sender, receiver) = mpsc::unbounded_channel();
        // Somewhere in the local log (held: read back from it); it is not cut until
        // they are stored.
        let kept = |id| Reserved { logged_from: 0, id };
        let reserved = unstored.iter().map(|record| kept(record.id)).collect();
        let outbox = Outbox {
            sender,
            depth: AtomicUsize::new(unstored.len()),
            bound,
            start,
            next_number: AtomicU64::new(1),
            reserved: Mutex::new(reserved),
            dir,
            local,
            failing_since: AtomicU64::new(0),
            reason: Mutex::new(String::new()),
            oldest: AtomicU64::new(0),
            base: Instant::now(),
            retries: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            refused_before: AtomicU64::new(0),
        };
        for record in unstored {
            let entry = Entry::new(
                record.id,
                Some((kept(record.id), Handed::KEPT)),
                record.kind,
                record.payload,
            );
            let _ = outbox.sender.send(entry);
        }
        (outbox, Receiver(receiver))
    }

    fn next_id(&self) -> OutboxId {
        OutboxId {
            start: self.start,
            number: self.next_number.fetch_add(1, Ordering::AcqRel),
        }
    }

    /// Reserves an id for a record about to be logged at `logged_from` or later.
    pub(crate) fn reserve(&self, logged_from: u64) -> Reserved {
        let reserved = Reserved {
            logged_from,
            id: self.next_id(),
        };
        self.depth.fetch_add(1, Ordering::AcqRel);
        if let Ok(mut set) = self.reserved.lock() {
            set.insert(reserved);
        }
        reserved
    }

    /// Gives back a reservation whose record was not logged.
    pub(crate) fn release(&self, reserved: Reserved) {
        if let Ok(mut set) = self.reserved.lock() {
            set.remove(&reserved);
        }
        self.depth.fetch_sub(1, Ordering::AcqRel);
    }

    /// The lowest local log sequence of a logged record not yet stored.
    pub(crate) fn unstored_from(&self) -> Option<u64> {
        let set = self.reserved.lock().ok()?;
        set.first().map(|reserved| reserved.logged_from)
    }

    /// Refuses a write when the outbox is full, or, for one that waits for its answer,
    /// while the stream has been failing to store records for [`REFUSE_AFTER`].
    pub(crate) fn admit(&self, wait: Wait) -> Result<(), ReplicationError> {
        let depth = self.depth.load(Ordering::Acquire);
        if depth >= self.bound {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(ReplicationError::QueueFull(depth));
        }
        if wait == Wait::Answer && self.failing_for() >= Some(REFUSE_AFTER) {
            self.refused.fetch_add(1, Ordering::Relaxed);
            let reason = self.reason.lock().map(|r| r.clone()).unwrap_or_default();
            return Err(ReplicationError::Unavailable(reason));
        }
        Ok(())
    }

    /// Hands a record over; with a receiver for its "stored" unless `wait` is
    /// [`Wait::No`]. Never refused for the bound or a failing stream (the write may
    /// already be applied): callers ask [`Outbox::admit`] before they apply anything.
    pub(crate) fn push(
        &self,
        kind: RecordKind,
        payload: Vec<u8>,
        wait: Wait,
    ) -> Result<Option<oneshot::Receiver<()>>, ReplicationError> {
        self.depth.fetch_add(1, Ordering::AcqRel);
        self.send(self.next_id(), None, kind, payload, wait)
    }

    /// [`Outbox::push`] of a record logged under `reserved`, published once the local
    /// log holds its hand-over.
    pub(crate) fn push_reserved(
        &self,
        reserved: Reserved,
        handed: Handed,
        kind: RecordKind,
        payload: Vec<u8>,
        wait: Wait,
    ) -> Result<Option<oneshot::Receiver<()>>, ReplicationError> {
        self.send(reserved.id, Some((reserved, handed)), kind, payload, wait)
    }

    fn send(
        &self,
        id: OutboxId,
        reserved: Option<(Reserved, Handed)>,
        kind: RecordKind,
        payload: Vec<u8>,
        wait: Wait,
    ) -> Result<Option<oneshot::Receiver<()>>, ReplicationError> {
        let mut entry = Entry::new(id, reserved, kind, payload);
        let answer = (wait != Wait::No).then(|| {
            let (stored, answer) = oneshot::channel();
            entry.stored = Some(stored);
            answer
        });
        if self.sender.send(entry).is_err() {
            self.depth.fetch_sub(1, Ordering::AcqRel);
            return Err(ReplicationError::Stopped("publisher"));
        }
        Ok(answer)
    }

    /// The figures for `/metrics`.
    pub(crate) fn figures(&self) -> OutboxFigures {
        let oldest = age(self.base, self.oldest.load(Ordering::Acquire));
        OutboxFigures {
            records: self.depth.load(Ordering::Acquire),
            oldest_seconds: oldest.unwrap_or_default().as_secs_f64(),
            retries: self.retries.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    /// Notes the oldest of the records held (the first kept one, the first in flight).
    fn note_oldest(&self, kept: Option<Instant>, in_flight: Option<Instant>) {
        let oldest = match (kept, in_flight) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let stamped = oldest.map_or(0, |handed| stamp(self.base, handed));
        self.oldest.store(stamped, Ordering::Release);
    }

    fn stored(&self, entry: Entry) {
        if let Some((reserved, _)) = entry.reserved
            && let Ok(mut set) = self.reserved.lock()
        {
            set.remove(&reserved);
        }
        self.depth.fetch_sub(1, Ordering::AcqRel);
        if let Some(stored) = entry.stored {
            let _ = stored.send(());
        }
    }

    /// Waits until the local log holds `entry`'s record (fsynced under `always` and
    /// `interval`, written under `never`): a record leaves the node only once a crash
    /// can no longer take it from this node. False when the log failed before it held
    /// the record: it is then never published.
    async fn held(&self, entry: &Entry) -> bool {
        let (Some(local), Some((_, handed))) = (&self.local, entry.reserved) else {
            return true;
        };
        while !local.holds(handed) {
            if local.has_failed() {
                return false;
            }
            tokio::time::sleep(HELD_POLL).await;
        }
        true
    }

    /// Drops a record its local log failed to keep: it is published nowhere (its writer
    /// was answered already, or is told the publisher stopped).
    fn discard(&self, entry: Entry) {
        tracing::error!(id = %entry.id, "the local log failed before it kept a record: the record is not published");
        if let Some((reserved, _)) = entry.reserved
            && let Ok(mut set) = self.reserved.lock()
        {
            set.remove(&reserved);
        }
        self.depth.fetch_sub(1, Ordering::AcqRel);
    }

    fn failed(&self, reason: &str) {
        if let Ok(mut kept) = self.reason.lock() {
            reason.clone_into(&mut kept);
        }
        let now = stamp(self.base, Instant::now());
        let first = self
            .failing_since
            .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if first {
            self.refused_before
                .store(self.refused.load(Ordering::Relaxed), Ordering::Relaxed);
            tracing::warn!(%reason, "the cluster stopped storing records; the outbox keeps them and tries again, and writes that wait for the cluster are refused until it stores again");
        }
    }

    /// How long the stream has been failing (`None`: it stores records).
    fn failing_for(&self) -> Option<Duration> {
        age(self.base, self.failing_since.load(Ordering::Acquire))
    }

    fn recovered(&self) {
        let since = self.failing_since.swap(0, Ordering::AcqRel);
        if let Some(failed_for) = age(self.base, since) {
            let refused = self
                .refused
                .load(Ordering::Relaxed)
                .saturating_sub(self.refused_before.load(Ordering::Relaxed));
            tracing::warn!(
                seconds = format!("{:.1}", failed_for.as_secs_f64()),
                refused,
                "the cluster stores records again; the outbox goes on"
            );
        }
    }

    /// Publishes the records handed over, in order, until the outbox's sender is gone
    /// and every record is stored.
    pub(crate) async fn run(
        &self,
        jetstream: jetstream::Context,
        subject: String,
        incarnation: Incarnation,
        Receiver(mut receiver): Receiver,
    ) {
        let publish = Publish {
            jetstream,
            subject,
            origin: format!("{incarnation:016x}"),
        };
        let mut mark = Mark::default();
        // Records that failed, oldest first: tried again before any new one.
        let mut again: VecDeque<Entry> = VecDeque::new();
        let mut in_flight = FuturesOrdered::new();
        // When each record in flight was handed over, in flight order.
        let mut handed: VecDeque<Instant> = VecDeque::new();
        let mut open = true;
        loop {
            // The kept records go first, in order: while the stream fails, the oldest
            // alone every RETRY until it is stored; then all of them, pipelined.
            let failing = self.failing_for().is_some();
            let resend = if !failing {
                WINDOW.saturating_sub(in_flight.len())
            } else if in_flight.is_empty() && !again.is_empty() {
                tokio::time::sleep(RETRY).await;
                self.retries.fetch_add(1, Ordering::Relaxed);
                1
            } else {
                0
            };
            for _ in 0..resend {
                let Some(mut entry) = again.pop_front() else {
                    break;
                };
                match publish.send(&entry).await {
                    Ok(ack) => {
                        entry.retry = true;
                        mark.retrying += 1;
                        handed.push_back(entry.handed);
                        in_flight.push_back(acknowledged(entry, ack));
                    }
                    Err(reason) => {
                        self.failed(&reason);
                        again.push_front(entry);
                        break;
                    }
                }
            }
            if in_flight.is_empty() {
                if !again.is_empty() {
                    continue;
                }
                if !open {
                    return;
                }
            }
            self.note_oldest(again.front().map(|e| e.handed), handed.front().copied());
            let taking = open && again.is_empty() && in_flight.len() < WINDOW;
            if mark.due() {
                mark.save(&self.dir);
            }
            let save_at = mark.save_at();
            tokio::select! {
                biased;
                Some((mut entry, outcome)) = in_flight.next() => {
                    handed.pop_front();
                    if entry.retry {
                        entry.retry = false;
                        mark.retrying -= 1;
                    }
                    match outcome {
                        Ok(()) => {
                            self.recovered();
                            mark.stored(entry.id, again.len());
                            self.stored(entry);
                        }
                        Err(reason) => {
                            self.failed(&reason);
                            again.push_back(entry);
                        }
                    }
                    self.note_oldest(again.front().map(|e| e.handed), handed.front().copied());
                }
                () = tokio::time::sleep_until(save_at.unwrap_or_else(tokio::time::Instant::now)), if save_at.is_some() => {
                    mark.save(&self.dir);
                }
                received = receiver.recv(), if taking => {
                    let Some(entry) = received else {
                        open = false;
                        continue;
                    };
                    if !self.held(&entry).await {
                        self.discard(entry);
                        continue;
                    }
                    match publish.send(&entry).await {
                        Ok(ack) => {
                            handed.push_back(entry.handed);
                            in_flight.push_back(acknowledged(entry, ack));
                        }
                        Err(reason) => {
                            self.failed(&reason);
                            again.push_back(entry);
                        }
                    }
                }
            }
        }
    }
}

/// An instant kept in an atomic: microseconds from `base` to `at`, plus one (0 is
/// "none").
fn stamp(base: Instant, at: Instant) -> u64 {
    let micros = at.saturating_duration_since(base).as_micros();
    u64::try_from(micros).unwrap_or(u64::MAX - 1) + 1
}

/// How long ago a [`stamp`] was (`None` for 0).
fn age(base: Instant, stamped: u64) -> Option<Duration> {
    let since = Duration::from_micros(stamped.checked_sub(1)?);
    Some(base.elapsed().saturating_sub(since))
}

/// Which records the publisher knows to be stored, and the mark it saved.
#[derive(Debug, Default)]
struct Mark {
    /// The highest id stored.
    highest: Option<OutboxId>,
    /// Records in flight that failed before.
    retrying: usize,
    /// Every id up to it is stored.
    through: Option<OutboxId>,
    /// The mark saved last, and when.
    saved: Option<OutboxId>,
    saved_at: Option<tokio::time::Instant>,
}

impl Mark {
    /// Notes `id` stored, with `kept` failed records still to be stored. In order
    /// unless a failed record is still to be stored: with none kept and none of them in
    /// flight, every id up to the highest is stored.
    fn stored(&mut self, id: OutboxId, kept: usize) {
        self.highest = self.highest.max(Some(id));
        if kept == 0 && self.retrying == 0 {
            self.through = self.highest;
        }
    }

    /// When the moved mark is to be saved (`None`: it has not moved).
    fn save_at(&self) -> Option<tokio::time::Instant> {
        if self.through <= self.saved {
            return None;
        }
        Some(
            self.saved_at
                .map_or_else(tokio::time::Instant::now, |at| at + MARK_EVERY),
        )
    }

    fn due(&self) -> bool {
        self.save_at()
            .is_some_and(|at| at <= tokio::time::Instant::now())
    }

    /// Saves the mark in the background (a failure is logged; the older mark only
    /// makes a restart publish more again, which the message ids make harmless).
    fn save(&mut self, dir: &std::path::Path) {
        let Some(through) = self.through else {
            return;
        };
        self.saved = Some(through);
        self.saved_at = Some(tokio::time::Instant::now());
        let dir = dir.to_path_buf();
        tokio::task::spawn_blocking(move || {
            if let Err(error) = vitrine_ingest::jobs::save_outbox_mark(&dir, through) {
                tracing::warn!(%error, "the outbox mark could not be saved");
            }
        });
    }
}

/// The publisher's end of an outbox.
#[derive(Debug)]
pub(crate) struct Receiver(mpsc::UnboundedReceiver<Entry>);

/// What publishing a record needs.
struct Publish {
    jetstream: jetstream::Context,
    subject: String,
    origin: String,
}

impl Publish {
    /// Sends `entry` to the stream; the acknowledgement is awaited apart.
    async fn send(&self, entry: &Entry) -> Result<PublishAckFuture, String> {
        let mut headers = HeaderMap::new();
        headers.insert(KIND_HEADER, entry.kind.code().to_string().as_str());
        headers.insert(ORIGIN_HEADER, self.origin.as_str());
        let id = format!("{}-{}", self.origin, entry.id);
        headers.insert(async_nats::header::NATS_MESSAGE_ID, id.as_str());
        self.jetstream
            .publish_with_headers(self.subject.clone(), headers, entry.payload.clone())
            .await
            .map_err(|e| e.to_string())
    }
}

/// Awaits a record's acknowledgement (within [`ACK_TIMEOUT`]: the publishing context's
/// timeout, see `Cluster::join`).
async fn acknowledged(entry: Entry, ack: PublishAckFuture) -> (Entry, Result<(), String>) {
    let outcome = ack.await.map(|_| ()).map_err(|error| error.to_string());
    (entry, outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(number: u64) -> OutboxId {
        OutboxId { start: 2, number }
    }

    #[test]
    fn the_mark_moves_only_past_records_all_stored() {
        let mut mark = Mark::default();
        mark.stored(id(1), 0);
        mark.stored(id(2), 0);
        assert_eq!(mark.through, Some(id(2)));
        // 3 failed and is kept: 4 stored does not move the mark past 3.
        mark.stored(id(4), 1);
        assert_eq!(mark.through, Some(id(2)));
        // 3 tried again while 5 is stored: still not.
        mark.retrying = 1;
        mark.stored(id(5), 0);
        assert_eq!(mark.through, Some(id(2)));
        // 3 stored, nothing kept or retried: everything through 5 is stored.
        mark.retrying = 0;
        mark.stored(id(3), 0);
        assert_eq!(mark.through, Some(id(5)));
    }

    #[test]
    fn a_moved_mark_is_due_at_once_then_at_most_once_a_second() {
        let mut mark = Mark::default();
        assert_eq!(mark.save_at(), None);
        mark.stored(id(1), 0);
        assert!(mark.save_at().is_some());
        mark.saved = mark.through;
        mark.saved_at = Some(tokio::time::Instant::now());
        assert_eq!(mark.save_at(), None);
        mark.stored(id(2), 0);
        let at = mark.save_at().expect("due again");
        assert!(at > tokio::time::Instant::now());
    }

    #[tokio::test]
    async fn reserved_records_hold_the_log_until_stored_or_released() {
        let dir = std::env::temp_dir();
        let (outbox, _receiver) = Outbox::new(4, 2, Vec::new(), dir, None);
        let first = outbox.reserve(10);
        let second = outbox.reserve(7);
        assert_eq!(outbox.unstored_from(), Some(7));
        assert_eq!(outbox.figures().records, 2);
        outbox.release(second);
        assert_eq!(outbox.unstored_from(), Some(10));
        outbox.release(first);
        assert_eq!(outbox.unstored_from(), None);
        // At the bound, a write is refused before it is applied.
        let held: Vec<Reserved> = (0..4).map(|n| outbox.reserve(n)).collect();
        assert_eq!(outbox.admit(Wait::No), Err(ReplicationError::QueueFull(4)));
        for reserved in held {
            outbox.release(reserved);
        }
        assert_eq!(outbox.admit(Wait::Answer), Ok(()));
    }

    #[test]
    fn a_failing_stream_refuses_waiting_writes_only_once_it_has_failed_for_a_while() {
        let (mut outbox, _receiver) = Outbox::new(4, 1, Vec::new(), std::env::temp_dir(), None);
        // The outbox's clock started ten seconds ago.
        outbox.base = Instant::now()
            .checked_sub(Duration::from_secs(10))
            .expect("an instant ten seconds back");
        outbox.failed("no stream found");
        // Failing since just now: one slow acknowledgement does not refuse writes.
        outbox
            .failing_since
            .store(stamp(outbox.base, Instant::now()), Ordering::Release);
        assert_eq!(outbox.admit(Wait::Answer), Ok(()));
        // Failing for ten seconds: refused, naming the reason; a write that does not
        // wait is still taken.
        outbox.failing_since.store(1, Ordering::Release);
        assert_eq!(
            outbox.admit(Wait::Answer),
            Err(ReplicationError::Unavailable("no stream found".to_owned()))
        );
        assert_eq!(outbox.admit(Wait::No), Ok(()));
        outbox.recovered();
        assert_eq!(outbox.admit(Wait::Answer), Ok(()));
    }
}
