//! The per-account families of `/metrics`, built from each account's counters as they
//! are read: the engine's (visitors, catalogue, evictions, zone predictions), the
//! jobs' (log, deltas, feeds, snapshots) and the cluster's outbox.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use prometheus::Histogram;
use prometheus::core::Collector;
use prometheus::proto::{self, LabelPair, MetricFamily, MetricType};

use super::figures::{AccountFigures, EvictionKind};
use crate::routes::Endpoint;

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

pub(super) fn account_families<'a>(
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
        "vitrine_model_changes_pending",
        "1 while interactions counted or a catalogue version wait for a models round (or one is running), 0 once a round has published them.",
        &account,
        f64::from(u8::from(engine.models_pending())),
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
    let zones = engine.zone_cache();
    f.counter(
        "vitrine_zone_cache_hits_total",
        "Product zones filled from the zone cache (the same for every visitor of the page).",
        &account,
        zones.hits as f64,
    );
    f.counter(
        "vitrine_zone_cache_misses_total",
        "Product zones the zone cache could have filled and did not hold: filled for the request (and kept, within the bound).",
        &account,
        zones.misses as f64,
    );
    f.gauge(
        "vitrine_zone_cache_bytes",
        "Bytes the zone cache holds (bounded by memory.zone_cache_mib).",
        &account,
        zones.bytes as f64,
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
    f.gauge(
        "vitrine_wal_writer_priority_raised",
        "1 when the log writer thread runs at the highest scheduling priority (granted to root or with CAP_SYS_NICE), else 0.",
        &account,
        f64::from(u8::from(wal.priority_raised.load(Ordering::Relaxed))),
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
        f.counter(
            "vitrine_cluster_refused_total",
            "Writes refused with nothing recorded because the cluster was not storing records or the outbox was at its bound.",
            &account,
            outbox.refused as f64,
        );
    }
    if let Some(scrubs) = jobs.scrubs_pending() {
        f.gauge(
            "vitrine_cluster_scrubs_pending",
            "Erasure scrubs of the cluster's storage this node started and has not finished (each tried again until done).",
            &account,
            scrubs as f64,
        );
    }
    f.histogram(
        "vitrine_wal_fsync_duration_seconds",
        "How long an fsync of the write-ahead log took.",
        &account,
        &wal.sync_seconds,
    );
    let metrics = jobs.metrics();
    // The decided deltas read before the pending ones: a delta leaves the pending count
    // before it is counted decided, so none is in both.
    let decided = [
        ("applied", metrics.deltas_applied.load(Ordering::Acquire)),
        ("failed", metrics.deltas_failed.load(Ordering::Acquire)),
    ];
    f.gauge(
        "vitrine_deltas_pending",
        "Deltas accepted and not yet applied.",
        &account,
        jobs.deltas_pending() as f64,
    );
    let deltas = "Deltas decided since the process started, by outcome (applied: Status 1, failed: Status 2).";
    for (outcome, count) in decided {
        f.counter(
            "vitrine_deltas_total",
            deltas,
            &[("account", key), ("outcome", outcome)],
            count as f64,
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
    zone_predictions(f, key, engine);
}

/// How well each product zone predicts what sampled shoppers do next
/// (`vitrine_engine::prequential`).
#[expect(
    clippy::cast_precision_loss,
    reason = "counts far below 2^53 are exact in an f64, as the format carries them"
)]
fn zone_predictions(f: &mut Families, key: &str, engine: &vitrine_engine::Account) {
    for zone in engine.zone_predictions() {
        let labels = [("account", key), ("zone", zone.zone.as_str())];
        for (name, help, value) in [
            (
                "vitrine_zone_prediction_hit_rate",
                "Share of the products sampled shoppers viewed, basketed or ordered next that the zone would have shown in its top 10 just before (the last 10,000 trials).",
                zone.hit_rate,
            ),
            (
                "vitrine_zone_prediction_mrr",
                "Mean reciprocal rank of those products in the zone's top 10 (the last 10,000 trials).",
                zone.mrr,
            ),
        ] {
            f.gauge(name, help, &labels, value);
        }
        for (name, help, count) in [
            (
                "vitrine_zone_prediction_trials_total",
                "Products sampled shoppers brought next that the zone was judged on.",
                zone.trials_total,
            ),
            (
                "vitrine_zone_prediction_hits_total",
                "Of those, the products the zone would have shown in its top 10.",
                zone.hits_total,
            ),
        ] {
            f.counter(name, help, &labels, count as f64);
        }
    }
}
