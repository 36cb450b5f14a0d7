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
//! Every metric is listed in the README ("Metrics").

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::StatusCode;
use prometheus::core::Collector;
use prometheus::proto::{self, LabelPair, MetricFamily, MetricType};
use prometheus::{Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use vitrine_snapshots::metrics::{doubling, histogram, short_buckets};

use crate::routes::Endpoint;
use vitrine_engine::Account;
use vitrine_ingest::jobs::AccountJobs;

use crate::config::RateLimit;

/// What `/metrics` reads of one account when scraped: its engine's and jobs' own
/// counters, and the figures the server keeps of it.
#[derive(Debug, Clone, Copy)]
pub struct AccountFigures<'a> {
    /// Its access key (the `account` label).
    pub key: &'a str,
    /// Its engine state.
    pub engine: &'a Account,
    /// Its jobs and log.
    pub jobs: &'a AccountJobs,
    /// Bytes of product text kept for its answers.
    pub text_cache_bytes: usize,
    /// What the server measures of it.
    pub metrics: &'a AccountMetrics,
    /// Its rate limits (an endpoint with one is listed even before a refusal).
    pub rate_limits: &'a [(Endpoint, RateLimit)],
}

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

/// Metrics an account's server-side parts keep (the engine, log and jobs keep theirs).
#[derive(Debug)]
pub struct AccountMetrics {
    /// Model rebuild rounds that rebuilt something, in seconds.
    pub model_rebuild_seconds: Histogram,
    /// Requests refused by a rate limit, by [`Endpoint::index`].
    rate_limited: Vec<AtomicU64>,
    /// Entries evicted, by [`EvictionKind`].
    evictions: [AtomicU64; EvictionKind::ALL.len()],
}

/// Why per-visitor state was evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictionKind {
    /// A visitor idle past `memory.visitor_retention_days`.
    VisitorIdle,
    /// A visitor beyond the account's `max_visitors`.
    VisitorCapacity,
    /// A visitor evicted because the process was over `memory.max_rss_mb`.
    VisitorMemory,
    /// A session beyond the bound.
    Session,
    /// An order id beyond `memory.max_order_ids`.
    OrderId,
}

impl EvictionKind {
    /// Every kind, in the order of the counters.
    pub const ALL: [EvictionKind; 5] = [
        EvictionKind::VisitorIdle,
        EvictionKind::VisitorCapacity,
        EvictionKind::VisitorMemory,
        EvictionKind::Session,
        EvictionKind::OrderId,
    ];

    /// The `reason` label.
    pub fn name(self) -> &'static str {
        match self {
            EvictionKind::VisitorIdle => "visitor_idle",
            EvictionKind::VisitorCapacity => "visitor_capacity",
            EvictionKind::VisitorMemory => "visitor_memory",
            EvictionKind::Session => "session",
            EvictionKind::OrderId => "order_id",
        }
    }
}

impl Default for AccountMetrics {
    fn default() -> AccountMetrics {
        AccountMetrics {
            model_rebuild_seconds: histogram(
                "vitrine_model_rebuild_duration_seconds",
                "How long a model rebuild round took.",
                short_buckets(),
            ),
            rate_limited: Endpoint::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
            evictions: Default::default(),
        }
    }
}

impl AccountMetrics {
    /// Counts what an eviction pass dropped; visitors beyond the bound count as
    /// `memory` when the pass was for the memory budget.
    pub fn evicted(&self, evicted: &vitrine_engine::Evicted, for_memory: bool) {
        let visitors = if for_memory {
            EvictionKind::VisitorMemory
        } else {
            EvictionKind::VisitorCapacity
        };
        for (kind, count) in [
            (EvictionKind::VisitorIdle, evicted.idle_visitors),
            (visitors, evicted.visitors),
            (EvictionKind::Session, evicted.sessions),
            (EvictionKind::OrderId, evicted.order_ids),
        ] {
            if let Some(counter) = self.evictions.get(kind as usize) {
                counter.fetch_add(count as u64, Ordering::Relaxed);
            }
        }
    }

    /// Counts a request to `endpoint` refused by its rate limit.
    pub fn rate_limited(&self, endpoint: Endpoint) {
        if let Some(count) = self.rate_limited.get(endpoint.index()) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }
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

/// Families of per-account metrics, built as they are read.
#[derive(Default)]
struct Families {
    by_name: HashMap<&'static str, MetricFamily>,
}

impl Families {
    fn family(&mut self, name: &'static str, help: &str, kind: MetricType) -> &mut MetricFamily {
        self.by_name.entry(name).or_insert_with(|| {
            let mut family = MetricFamily::default();
            family.set_name(name.to_owned());
            family.set_help(help.to_owned());
            family.set_field_type(kind);
            family
        })
    }

    fn gauge(&mut self, name: &'static str, help: &str, labels: &[(&str, &str)], value: f64) {
        let mut gauge = proto::Gauge::default();
        gauge.set_value(value);
        let mut metric = labelled(labels);
        metric.set_gauge(gauge);
        self.family(name, help, MetricType::GAUGE)
            .mut_metric()
            .push(metric);
    }

    fn counter(&mut self, name: &'static str, help: &str, labels: &[(&str, &str)], value: f64) {
        let mut counter = proto::Counter::default();
        counter.set_value(value);
        let mut metric = labelled(labels);
        metric.set_counter(counter);
        self.family(name, help, MetricType::COUNTER)
            .mut_metric()
            .push(metric);
    }

    /// A histogram kept elsewhere, under `name` with `labels`.
    fn histogram(
        &mut self,
        name: &'static str,
        help: &str,
        labels: &[(&str, &str)],
        source: &Histogram,
    ) {
        let read = source
            .collect()
            .into_iter()
            .flat_map(|mut family| family.take_metric())
            .next();
        if let Some(mut metric) = read {
            metric.set_label(labelled(labels).take_label());
            self.family(name, help, MetricType::HISTOGRAM)
                .mut_metric()
                .push(metric);
        }
    }
}

fn labelled(labels: &[(&str, &str)]) -> proto::Metric {
    let mut metric = proto::Metric::default();
    metric.set_label(
        labels
            .iter()
            .map(|(name, value)| {
                let mut pair = LabelPair::default();
                pair.set_name((*name).to_owned());
                pair.set_value((*value).to_owned());
                pair
            })
            .collect(),
    );
    metric
}

fn account_families<'a>(
    accounts: impl IntoIterator<Item = AccountFigures<'a>>,
) -> Vec<MetricFamily> {
    let mut families = Families::default();
    for entry in accounts {
        account_metrics(&mut families, &entry);
    }
    families.by_name.into_values().collect()
}

#[expect(
    clippy::cast_precision_loss,
    reason = "counts far below 2^53 are exact in an f64, as the format carries them"
)]
fn account_metrics(f: &mut Families, entry: &AccountFigures<'_>) {
    let key = entry.key;
    let account = [("account", key)];
    let engine = entry.engine;
    let jobs = entry.jobs;
    let catalogue = engine.catalogue();
    f.gauge(
        "vitrine_visitors",
        "Visitors with state in memory.",
        &account,
        engine.visitor_count() as f64,
    );
    f.gauge(
        "vitrine_sessions",
        "Live sessions.",
        &account,
        engine.session_count() as f64,
    );
    f.gauge(
        "vitrine_orders_known",
        "Order ids remembered (a repeated one is not counted twice).",
        &account,
        engine.order_count() as f64,
    );
    f.gauge(
        "vitrine_products",
        "Products in the catalogue served.",
        &account,
        catalogue.len() as f64,
    );
    f.gauge(
        "vitrine_overlay_changes",
        "Changes held in the delta overlay (products changed and account-price entries) until the next compaction.",
        &account,
        catalogue.overlay_size() as f64,
    );
    f.gauge(
        "vitrine_text_cache_bytes",
        "Bytes of pre-rendered product text kept for answers.",
        &account,
        entry.text_cache_bytes as f64,
    );
    let wal = jobs.wal_stats();
    f.gauge(
        "vitrine_wal_bytes",
        "Bytes of the write-ahead log's segment files on disk.",
        &account,
        jobs.wal_disk_bytes() as f64,
    );
    f.counter(
        "vitrine_wal_records_total",
        "Records appended to the write-ahead log.",
        &account,
        wal.records.load(Ordering::Relaxed) as f64,
    );
    f.counter(
        "vitrine_wal_written_bytes_total",
        "Bytes appended to the write-ahead log.",
        &account,
        wal.bytes.load(Ordering::Relaxed) as f64,
    );
    f.counter(
        "vitrine_wal_fsyncs_total",
        "fsyncs of the write-ahead log.",
        &account,
        wal.syncs.load(Ordering::Relaxed) as f64,
    );
    f.counter(
        "vitrine_wal_window_waits_total",
        "Answers that waited for an fsync because the log writer was behind the interval window.",
        &account,
        wal.window_waits.load(Ordering::Relaxed) as f64,
    );
    if let Some(outbox) = jobs.outbox() {
        f.gauge(
            "vitrine_cluster_outbox_records",
            "Records taken by this node and not yet stored by the cluster's stream (kept and retried in order).",
            &account,
            outbox.records as f64,
        );
        f.gauge(
            "vitrine_cluster_outbox_oldest_seconds",
            "How long the oldest record not yet stored by the cluster's stream has waited (0 when none waits).",
            &account,
            outbox.oldest_seconds,
        );
        f.counter(
            "vitrine_cluster_publish_retries_total",
            "Records published to the cluster's stream again after a failed attempt.",
            &account,
            outbox.retries as f64,
        );
    }
    f.histogram(
        "vitrine_wal_fsync_duration_seconds",
        "How long an fsync of the write-ahead log took.",
        &account,
        &wal.sync_seconds,
    );
    let metrics = jobs.metrics();
    f.gauge(
        "vitrine_deltas_pending",
        "Deltas accepted and not yet applied.",
        &account,
        jobs.deltas_pending() as f64,
    );
    let deltas = "Deltas decided since the process started, by outcome (applied: Status 1, failed: Status 2).";
    for (outcome, count) in [
        ("applied", &metrics.deltas_applied),
        ("failed", &metrics.deltas_failed),
    ] {
        f.counter(
            "vitrine_deltas_total",
            deltas,
            &[("account", key), ("outcome", outcome)],
            count.load(Ordering::Relaxed) as f64,
        );
    }
    let feeds = "Feed runs (full feeds, streamed feeds, order histories) since the process started, by outcome.";
    for (outcome, count) in [
        ("complete", &metrics.feeds_complete),
        ("failed", &metrics.feeds_failed),
    ] {
        f.counter(
            "vitrine_feed_runs_total",
            feeds,
            &[("account", key), ("outcome", outcome)],
            count.load(Ordering::Relaxed) as f64,
        );
    }
    let stages = "How long each stage of a feed run took (download; parse and validation; build, snapshot and swap).";
    for (stage, histogram) in [
        ("download", &metrics.feed_download_seconds),
        ("parse", &metrics.feed_parse_seconds),
        ("build", &metrics.feed_build_seconds),
    ] {
        f.histogram(
            "vitrine_feed_stage_duration_seconds",
            stages,
            &[("account", key), ("stage", stage)],
            histogram,
        );
    }
    for (kind, seconds, bytes) in [
        (
            "catalogue",
            &metrics.catalogue_snapshot_seconds,
            &metrics.catalogue_snapshot_bytes,
        ),
        (
            "state",
            &metrics.state_snapshot_seconds,
            &metrics.state_snapshot_bytes,
        ),
    ] {
        let labels = [("account", key), ("kind", kind)];
        f.histogram(
            "vitrine_snapshot_write_duration_seconds",
            "How long writing a snapshot took, by kind (catalogue: feeds and compactions; state: visitors, sessions, orders, model counters).",
            &labels,
            seconds,
        );
        f.gauge(
            "vitrine_snapshot_bytes",
            "Size of the last snapshot written, by kind.",
            &labels,
            bytes.load(Ordering::Relaxed) as f64,
        );
    }
    f.histogram(
        "vitrine_model_rebuild_duration_seconds",
        "How long a model rebuild round that had something to do took.",
        &account,
        &entry.metrics.model_rebuild_seconds,
    );
    for (endpoint, count) in Endpoint::ALL.iter().zip(&entry.metrics.rate_limited) {
        let count = count.load(Ordering::Relaxed);
        if count > 0 || entry.rate_limits.iter().any(|(e, _)| e == endpoint) {
            f.counter(
                "vitrine_rate_limited_total",
                "Requests refused (429) by the account's rate limit of the endpoint.",
                &[("account", key), ("endpoint", endpoint.name())],
                count as f64,
            );
        }
    }
    let inline = engine.evicted_inline();
    for (kind, count) in EvictionKind::ALL.iter().zip(&entry.metrics.evictions) {
        // Requests that evict inline count as the background pass would.
        let by_requests = match kind {
            EvictionKind::VisitorCapacity => inline.visitors,
            EvictionKind::Session => inline.sessions,
            EvictionKind::VisitorIdle | EvictionKind::VisitorMemory | EvictionKind::OrderId => 0,
        };
        f.counter(
            "vitrine_evictions_total",
            "Per-visitor state evicted to stay within the memory bounds, by reason (visitor_idle: past the retention; visitor_capacity: over max_visitors; visitor_memory: over memory.max_rss_mb; session; order_id).",
            &[("account", key), ("reason", kind.name())],
            (count.load(Ordering::Relaxed) + by_requests as u64) as f64,
        );
    }
    f.counter(
        "vitrine_evicted_inline_total",
        "Visitors and sessions evicted by requests that found the account more than 1 % over max_visitors (the background pass was late); also in vitrine_evictions_total.",
        &account,
        (inline.visitors + inline.sessions) as f64,
    );
    let activity = engine.activity(crate::clock::now_millis());
    f.counter(
        "vitrine_zone_items_shown_total",
        "Items shown in zones by /api/serverside answers.",
        &account,
        activity.items_shown as f64,
    );
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
