//! `GET /metrics`: the server's metrics in the Prometheus text format.
//!
//! Two kinds, encoded together by the `prometheus` crate's text encoder:
//! - **Per request**, kept in a registry: requests by endpoint and status, and their
//!   durations by endpoint (recorded by `server::handle` after each answer), plus the
//!   process's own (resident memory, CPU, open files: the crate's process collector).
//! - **Per account**, read when scraped: the engine's, the log's and the jobs' own
//!   counters and histograms (kept unregistered where the work happens, see
//!   `vitrine_snapshots::metrics`), each labelled with its account. Nothing is copied
//!   on the request path for them.
//!
//! Every metric is listed, with its type and labels, in `docs/metrics.md`.

use std::time::Duration;

use http::StatusCode;
use prometheus::{Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use vitrine_snapshots::metrics::doubling;

use crate::routes::Endpoint;

mod accounts;
mod figures;
use accounts::account_families;
pub use figures::{AccountFigures, AccountMetrics, EvictionKind};

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The server's registry and its per-request metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    /// `requests` of each endpoint with status 200, resolved once.
    ok: Vec<prometheus::IntCounter>,
    /// Durations of each endpoint, resolved once.
    durations: Vec<Histogram>,
    /// When these metrics started counting.
    started: std::time::Instant,
    /// The serverside durations at the last [`Metrics::live`] call.
    last_live: parking_lot::Mutex<Option<LiveSample>>,
}

/// Serverside durations at one moment: when, how many, and each bucket's cumulative
/// count.
#[derive(Debug, Clone)]
struct LiveSample {
    at: std::time::Instant,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

/// Serverside calls over a recent window: since the previous [`Metrics::live`] call (or
/// since the start, the first time).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveWindow {
    /// The window's length in seconds.
    pub seconds: f64,
    /// Calls answered in it.
    pub requests: u64,
    /// Calls per second.
    pub per_second: f64,
    /// Latency percentiles (p50, p90, p99) in seconds, from the histogram's buckets
    /// (linear within a bucket); `None` without calls.
    pub percentiles: Option<(f64, f64, f64)>,
}

impl Metrics {
    /// A registry with the request metrics and the process collector.
    #[expect(
        clippy::expect_used,
        reason = "the metrics are the program's own: valid names, labels and buckets, registered once in a new registry"
    )]
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "vitrine_http_requests_total",
                "HTTP requests answered, by endpoint and status code.",
            ),
            &["endpoint", "status"],
        )
        .expect("valid counter");
        let durations = HistogramVec::new(
            HistogramOpts::new(
                "vitrine_http_request_duration_seconds",
                "Time from a request's head to its answer, by endpoint.",
            )
            .buckets(doubling(0.000_01, 22)),
            &["endpoint"],
        )
        .expect("valid histogram");
        registry
            .register(Box::new(requests.clone()))
            .expect("registered once");
        registry
            .register(Box::new(durations.clone()))
            .expect("registered once");
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("registered once");
        let ok = Endpoint::ALL
            .iter()
            .map(|e| requests.with_label_values(&[e.name(), StatusCode::OK.as_str()]))
            .collect();
        let durations = Endpoint::ALL
            .iter()
            .map(|e| durations.with_label_values(&[e.name()]))
            .collect();
        Metrics {
            registry,
            requests,
            ok,
            durations,
            started: std::time::Instant::now(),
            last_live: parking_lot::Mutex::new(None),
        }
    }

    /// Serverside calls since the previous call of this (or since the start).
    pub fn live(&self) -> LiveWindow {
        let now = std::time::Instant::now();
        let sample = match self.durations.get(Endpoint::Serverside.index()) {
            Some(histogram) => {
                let proto = prometheus::core::Metric::metric(histogram);
                let buckets = proto
                    .get_histogram()
                    .get_bucket()
                    .iter()
                    .map(|b| (b.upper_bound(), b.cumulative_count()))
                    .collect();
                LiveSample {
                    at: now,
                    count: histogram.get_sample_count(),
                    buckets,
                }
            }
            None => LiveSample {
                at: now,
                count: 0,
                buckets: Vec::new(),
            },
        };
        let previous = self.last_live.lock().replace(sample.clone());
        let (since, count_before, buckets_before) = match previous {
            Some(p) => (p.at, p.count, p.buckets),
            None => (self.started, 0, Vec::new()),
        };
        let seconds = now.duration_since(since).as_secs_f64().max(1e-3);
        let requests = sample.count.saturating_sub(count_before);
        let window: Vec<(f64, u64)> = sample
            .buckets
            .iter()
            .enumerate()
            .map(|(i, (upper, count))| {
                let before = buckets_before.get(i).map_or(0, |(_, c)| *c);
                (*upper, count.saturating_sub(before))
            })
            .collect();
        LiveWindow {
            seconds,
            requests,
            per_second: requests as f64 / seconds,
            percentiles: (requests > 0).then(|| {
                (
                    quantile(&window, requests, 0.5),
                    quantile(&window, requests, 0.9),
                    quantile(&window, requests, 0.99),
                )
            }),
        }
    }

    /// Counts one answered request.
    pub fn observe(&self, endpoint: Endpoint, status: StatusCode, took: Duration) {
        let index = endpoint.index();
        match self.ok.get(index) {
            Some(counter) if status == StatusCode::OK => counter.inc(),
            _ => self
                .requests
                .with_label_values(&[endpoint.name(), status.as_str()])
                .inc(),
        }
        if let Some(histogram) = self.durations.get(index) {
            histogram.observe(took.as_secs_f64());
        }
    }

    /// Every metric, in the text format.
    pub fn render<'a>(&self, accounts: impl IntoIterator<Item = AccountFigures<'a>>) -> Vec<u8> {
        let mut families = self.registry.gather();
        families.extend(account_families(accounts));
        families.sort_by(|a, b| a.name().cmp(b.name()));
        let mut text = Vec::new();
        if let Err(error) = prometheus::TextEncoder::new().encode(&families, &mut text) {
            tracing::error!(%error, "encoding the metrics failed");
        }
        text
    }
}

/// The `q` quantile of `total` observations in cumulative buckets (upper bound, count),
/// linear within its bucket; beyond the last bucket, its bound.
fn quantile(buckets: &[(f64, u64)], total: u64, q: f64) -> f64 {
    let rank = q * total as f64;
    let mut lower = 0.0;
    let mut below = 0u64;
    for (upper, cumulative) in buckets {
        if *cumulative as f64 >= rank {
            let inside = cumulative.saturating_sub(below) as f64;
            let into = if inside > 0.0 {
                (rank - below as f64) / inside
            } else {
                0.0
            };
            return lower + (upper - lower) * into.clamp(0.0, 1.0);
        }
        lower = *upper;
        below = *cumulative;
    }
    lower
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_within_a_bucket() {
        // 10 observations up to 1 ms, 10 more up to 2 ms.
        let buckets = [(0.001, 10), (0.002, 20), (0.004, 20)];
        assert!((quantile(&buckets, 20, 0.5) - 0.001).abs() < 1e-12);
        assert!((quantile(&buckets, 20, 0.75) - 0.0015).abs() < 1e-12);
        assert!((quantile(&buckets, 20, 0.25) - 0.0005).abs() < 1e-12);
    }

    #[test]
    fn the_live_window_counts_calls_since_the_previous_look() {
        let metrics = Metrics::new();
        for _ in 0..4 {
            metrics.observe(
                Endpoint::Serverside,
                StatusCode::OK,
                Duration::from_micros(300),
            );
        }
        let first = metrics.live();
        assert_eq!(first.requests, 4);
        let (p50, _, p99) = first.percentiles.unwrap();
        assert!(p50 > 0.0 && p99 <= 0.001, "{first:?}");
        metrics.observe(
            Endpoint::Serverside,
            StatusCode::OK,
            Duration::from_millis(5),
        );
        let second = metrics.live();
        assert_eq!(second.requests, 1);
        assert!(second.percentiles.unwrap().0 > 0.002, "{second:?}");
        assert_eq!(metrics.live().requests, 0);
    }
}
