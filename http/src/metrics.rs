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

use crate::error::Endpoint;
use crate::state::{AccountEntry, AppState};

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
    pub fn render(&self, state: &AppState) -> Vec<u8> {
        let mut families = self.registry.gather();
        families.extend(account_families(state));
        families.sort_by(|a, b| a.name().cmp(b.name()));
        let mut text = Vec::new();
        if let Err(error) = prometheus::TextEncoder::new().encode(&families, &mut text) {
            tracing::error!(%error, "encoding the metrics failed");
        }
        text
    }
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

fn account_families(state: &AppState) -> Vec<MetricFamily> {
    let mut families = Families::default();
    for entry in state.accounts() {
        account_metrics(&mut families, &entry);
    }
    families.by_name.into_values().collect()
}

#[expect(
    clippy::cast_precision_loss,
    reason = "counts far below 2^53 are exact in an f64, as the format carries them"
)]
fn account_metrics(f: &mut Families, entry: &AccountEntry) {
    let key = entry.config.access_key.as_str();
    let account = [("account", key)];
    let engine = &entry.account;
    let jobs = &entry.jobs;
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
        entry.product_texts.kept_bytes() as f64,
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
        if count > 0 || entry.config.rate_limits.iter().any(|(e, _)| e == endpoint) {
            f.counter(
                "vitrine_rate_limited_total",
                "Requests refused (429) by the account's rate limit of the endpoint.",
                &[("account", key), ("endpoint", endpoint.name())],
                count as f64,
            );
        }
    }
    for (kind, count) in EvictionKind::ALL.iter().zip(&entry.metrics.evictions) {
        f.counter(
            "vitrine_evictions_total",
            "Per-visitor state evicted to stay within the memory bounds, by reason (visitor_idle: past the retention; visitor_capacity: over max_visitors; visitor_memory: over memory.max_rss_mb; session; order_id).",
            &[("account", key), ("reason", kind.name())],
            count.load(Ordering::Relaxed) as f64,
        );
    }
    let activity = engine.activity(crate::server::now_millis());
    f.counter(
        "vitrine_zone_items_shown_total",
        "Items shown in zones by /api/serverside answers.",
        &account,
        activity.items_shown as f64,
    );
}
