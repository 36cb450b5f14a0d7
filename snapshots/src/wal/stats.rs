//! The writer's counters, for benchmarks and `/metrics`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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
    /// Answers that waited for an fsync because the writer was behind the `interval`
    /// window ([`super::Wal::keep_window`]).
    pub window_waits: AtomicU64,
    /// Records covered by those fsyncs.
    pub synced_records: AtomicU64,
    /// Whether the writer thread runs at the highest scheduling priority (it asks for
    /// it; granted to root or with `CAP_SYS_NICE`).
    pub priority_raised: std::sync::atomic::AtomicBool,
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
            window_waits: AtomicU64::new(0),
            synced_records: AtomicU64::new(0),
            priority_raised: std::sync::atomic::AtomicBool::new(false),
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
    pub(super) fn record_sync(&self, records: u64, took: Duration) {
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
