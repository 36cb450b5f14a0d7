//! Duration histograms the crates record into and the server's `/metrics` reports.
//!
//! The crates that do the work (this one's log writer, the ingest jobs, the server's
//! model rebuilds) keep their own unregistered [`prometheus::Histogram`]s; the server
//! reads them when it is scraped and labels each with its account, so that no crate
//! below the server knows a registry or an account label.

use prometheus::{Histogram, HistogramOpts};

/// Upper bounds of buckets for short operations (an fsync, a model rebuild, a state
/// snapshot): 50 µs doubling to about 26 s.
pub fn short_buckets() -> Vec<f64> {
    doubling(0.000_05, 20)
}

/// Upper bounds of buckets for long operations (a feed download, parse or build):
/// 1 ms doubling to about 35 minutes.
pub fn long_buckets() -> Vec<f64> {
    doubling(0.001, 22)
}

/// `count` bucket bounds from `first` seconds, each twice the one before.
pub fn doubling(first: f64, count: i32) -> Vec<f64> {
    (0..count).map(|i| first * 2f64.powi(i)).collect()
}

/// A histogram of durations in seconds named `name`, not registered anywhere.
#[expect(
    clippy::expect_used,
    reason = "the options are the program's own: a valid name, help and increasing buckets"
)]
pub fn histogram(name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
        .expect("valid histogram options")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_increase_and_a_histogram_counts_what_it_is_given() {
        for buckets in [short_buckets(), long_buckets()] {
            assert!(buckets.windows(2).all(|w| w[0] < w[1]));
        }
        let h = histogram("vitrine_test_seconds", "test", short_buckets());
        h.observe(0.001);
        h.observe(2.0);
        assert_eq!(h.get_sample_count(), 2);
        assert!((h.get_sample_sum() - 2.001).abs() < 1e-9);
    }
}
