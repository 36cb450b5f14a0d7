//! Requests between applying their events and handing them to the log, counted, so
//! that a state snapshot is saved only once the log holds everything it includes.
//!
//! Events are applied before they are logged. A state snapshot exported while a
//! request is between the two, or while the log's writer has not yet written what was
//! handed to it, includes events the log may lose in a crash: in a cluster, the node
//! would restart with events it never published, held by it alone. So a snapshot,
//! once exported, waits for every request that began applying before the export ended
//! to hand its record ([`Applying::wait_for_earlier`]), then for the log to make
//! everything handed durable, and only then is saved.
//!
//! Two counters, the current one chosen by an epoch's parity: a request counts itself
//! in the current one while it applies and hands; the snapshot moves the epoch on, so
//! that later requests count in the other, and waits for the one it left to empty.
//! Requests never wait.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The requests applying events, by epoch parity.
#[derive(Debug, Default)]
pub(crate) struct Applying {
    epoch: AtomicU64,
    inside: [AtomicUsize; 2],
    /// Snapshots waiting for earlier requests now (what a test watches).
    waiting: AtomicUsize,
    /// One waiting snapshot at a time: a second one moving the epoch on again would
    /// send new requests to the counter the first waits on, which might then never
    /// empty under steady traffic.
    one_at_a_time: parking_lot::Mutex<()>,
}

/// A request counted as applying until dropped (once its record is handed to the log).
#[derive(Debug)]
#[must_use = "counted only while alive"]
pub(crate) struct Entered<'a> {
    slot: &'a AtomicUsize,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.slot.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Applying {
    /// Counts a request that is about to apply events.
    pub(crate) fn enter(&self) -> Entered<'_> {
        loop {
            let epoch = self.epoch.load(Ordering::SeqCst);
            let slot = self.slot(epoch);
            slot.fetch_add(1, Ordering::SeqCst);
            // Counted in the epoch it read: a snapshot that moved it on meanwhile may
            // have found this counter empty already.
            if self.epoch.load(Ordering::SeqCst) == epoch {
                return Entered { slot };
            }
            slot.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Waits until every request counted before this call has handed its record
    /// (callers, a state snapshot and a cluster's snapshot set, take turns).
    pub(crate) fn wait_for_earlier(&self) {
        let _turn = self.one_at_a_time.lock();
        let epoch = self.epoch.fetch_add(1, Ordering::SeqCst);
        let slot = self.slot(epoch);
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while slot.load(Ordering::SeqCst) != 0 {
            std::thread::sleep(Duration::from_micros(50));
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    /// The counter of an epoch.
    fn slot(&self, epoch: u64) -> &AtomicUsize {
        let [even, odd] = &self.inside;
        if epoch.is_multiple_of(2) { even } else { odd }
    }

    /// Snapshots waiting for earlier requests now.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    fn wait_until(what: &str, condition: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !condition() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_snapshot_waits_for_requests_before_it_and_not_for_later_ones() {
        let applying = Applying::default();
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let earlier = applying.enter();
            scope.spawn(|| {
                applying.wait_for_earlier();
                done.store(true, Ordering::SeqCst);
            });
            wait_until("the snapshot waiting", || applying.waiting() == 1);
            // A request that starts now does not hold the snapshot up.
            let later = applying.enter();
            // The earlier one does, for as long as it is applying.
            for _ in 0..100 {
                assert!(!done.load(Ordering::SeqCst));
                std::thread::yield_now();
            }
            drop(earlier);
            wait_until("the snapshot done", || done.load(Ordering::SeqCst));
            drop(later);
        });
        // With nobody applying, nothing to wait for.
        applying.wait_for_earlier();
        assert_eq!(applying.waiting(), 0);
    }

    #[test]
    fn two_snapshots_at_once_each_wait_only_for_requests_before_them() {
        let applying = Applying::default();
        let done = [AtomicBool::new(false), AtomicBool::new(false)];
        std::thread::scope(|scope| {
            let earlier = applying.enter();
            for flag in &done {
                let applying = &applying;
                scope.spawn(move || {
                    applying.wait_for_earlier();
                    flag.store(true, Ordering::SeqCst);
                });
            }
            wait_until("a snapshot waiting", || applying.waiting() == 1);
            // Requests come and go while they wait: the second snapshot, which moves the
            // epoch only once the first is done, does not send them to the counter the
            // first waits on.
            for _ in 0..100 {
                drop(applying.enter());
            }
            let during = applying.enter();
            drop(earlier);
            wait_until("the first snapshot done", || {
                done.iter().any(|d| d.load(Ordering::SeqCst))
            });
            drop(during);
            wait_until("both snapshots done", || {
                done.iter().all(|d| d.load(Ordering::SeqCst))
            });
        });
    }
}
