//! What an account's jobs count and time, for the server's `/metrics`: deltas applied
//! and failed, feed runs and the time of each stage, snapshot writes and their sizes.
//! Kept here unregistered; the server reads them when scraped and labels them with the
//! account (see `vitrine_snapshots::metrics`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus::Histogram;
use vitrine_snapshots::metrics::{histogram, long_buckets, short_buckets};

/// An account's job counters and durations.
#[derive(Debug)]
pub struct JobsMetrics {
    /// Deltas applied (Status 1) since the process started.
    pub deltas_applied: AtomicU64,
    /// Deltas refused by the worker (Status 2) since the process started.
    pub deltas_failed: AtomicU64,
    /// Feed runs that ended `Complete`.
    pub feeds_complete: AtomicU64,
    /// Feed runs that ended `Failed`.
    pub feeds_failed: AtomicU64,
    /// Feed downloads, in seconds.
    pub feed_download_seconds: Histogram,
    /// Feed parses and validations, in seconds.
    pub feed_parse_seconds: Histogram,
    /// Feed builds, from the parsed feed to the new catalogue served (snapshot written).
    pub feed_build_seconds: Histogram,
    /// Catalogue snapshot writes (feeds and compactions), in seconds.
    pub catalogue_snapshot_seconds: Histogram,
    /// State snapshot writes, in seconds.
    pub state_snapshot_seconds: Histogram,
    /// Size of the last catalogue snapshot written, in bytes.
    pub catalogue_snapshot_bytes: AtomicU64,
    /// Size of the last state snapshot written, in bytes.
    pub state_snapshot_bytes: AtomicU64,
}

impl Default for JobsMetrics {
    fn default() -> JobsMetrics {
        let stage = |name: &str| {
            histogram(
                "vitrine_feed_stage_duration_seconds",
                &format!("How long the {name} stage of a feed run took."),
                long_buckets(),
            )
        };
        let snapshot = |kind: &str| {
            histogram(
                "vitrine_snapshot_write_duration_seconds",
                &format!("How long writing a {kind} snapshot took."),
                short_buckets(),
            )
        };
        JobsMetrics {
            deltas_applied: AtomicU64::new(0),
            deltas_failed: AtomicU64::new(0),
            feeds_complete: AtomicU64::new(0),
            feeds_failed: AtomicU64::new(0),
            feed_download_seconds: stage("download"),
            feed_parse_seconds: stage("parse"),
            feed_build_seconds: stage("build"),
            catalogue_snapshot_seconds: snapshot("catalogue"),
            state_snapshot_seconds: snapshot("state"),
            catalogue_snapshot_bytes: AtomicU64::new(0),
            state_snapshot_bytes: AtomicU64::new(0),
        }
    }
}

impl JobsMetrics {
    pub(crate) fn snapshot_written(&self, kind: SnapshotKind, took: Duration, bytes: u64) {
        let (seconds, size) = match kind {
            SnapshotKind::Catalogue => (
                &self.catalogue_snapshot_seconds,
                &self.catalogue_snapshot_bytes,
            ),
            SnapshotKind::State => (&self.state_snapshot_seconds, &self.state_snapshot_bytes),
        };
        seconds.observe(took.as_secs_f64());
        size.store(bytes, Ordering::Relaxed);
    }
}

/// Which snapshot was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SnapshotKind {
    Catalogue,
    State,
}
