//! The command line of `vitrine-loadtest run`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use serde::Serialize;
use vitrine_benches::traffic::{Mix, STORE_ZONES};
use vitrine_testkit::ExperimentToml;

use crate::drive::Pacing;
use crate::target::Target;
/// Settings of `vitrine-loadtest run`.
#[derive(Debug, Clone, clap::Args, Serialize)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub(crate) target: Target,
    /// Start a `vitrine` of our own (in a temporary directory, on a free loopback port)
    /// instead of using --server, and provision it with the synthetic catalogue.
    #[arg(long)]
    pub(crate) spawn: bool,
    /// The `vitrine` binary to spawn (default: the one next to this tool).
    #[arg(long)]
    pub(crate) vitrine: Option<PathBuf>,
    /// Products of the synthetic catalogue submitted as a full feed through the public
    /// API from the harness's own loopback feed server (with --spawn or --provision).
    /// 0 with --spawn keeps the demo catalogue.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) products: usize,
    /// Submit the synthetic catalogue to --server too (the server must allow feeds from
    /// private addresses).
    #[arg(long)]
    pub(crate) provision: bool,
    /// Browse the synthetic catalogue (--products, --feed-seed) without submitting it:
    /// it was submitted before (e.g. by an earlier --provision run).
    #[arg(long, conflicts_with_all = ["spawn", "provision", "product_ids"])]
    pub(crate) browse_synthetic: bool,
    /// Product ids to browse when the harness did not provision the catalogue, one per
    /// line (default: the embedded demo's, P00001...).
    #[arg(long)]
    pub(crate) product_ids: Option<PathBuf>,
    /// Seed of the synthetic catalogue.
    #[arg(long, default_value_t = 42)]
    pub(crate) feed_seed: u64,
    /// Open loop: requests per second, scheduled at a constant rate (latency from the
    /// scheduled time). Without it: closed loop, as fast as --connections allow.
    #[arg(long)]
    pub(crate) rate: Option<f64>,
    /// Keep-alive connections (closed loop: each sends back to back; open loop: the pool
    /// that carries the scheduled requests).
    #[arg(long, default_value_t = 32)]
    pub(crate) connections: usize,
    /// Seconds of warm-up, not recorded.
    #[arg(long, default_value_t = 3)]
    pub(crate) warmup: u64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10)]
    pub(crate) seconds: u64,
    /// After the measured seconds, submit the synthetic feed again and record a second
    /// phase until its ingest is Complete.
    #[arg(long)]
    pub(crate) ingest_during: bool,
    /// Run the same traffic against a bare hyper server in the harness afterwards and
    /// report Vitrine's throughput as a fraction of it.
    #[arg(long)]
    pub(crate) baseline: bool,
    /// Size of the baseline's fixed answer (default: the mean size of Vitrine's answers
    /// in this run).
    #[arg(long)]
    pub(crate) baseline_bytes: Option<usize>,
    /// Microseconds of CPU the baseline spends on each request before it answers (a
    /// busy loop), to see what the HTTP stack costs a server that works per request.
    #[arg(long, default_value_t = 0)]
    pub(crate) baseline_work_us: u64,
    /// Visitors (a session picks one at random; they come back).
    #[arg(long, default_value_t = 50_000)]
    pub(crate) visitors: u64,
    /// Products viewed per session, MIN-MAX.
    #[arg(long, default_value = "3-8")]
    pub(crate) browse: String,
    /// Share of product views near the previous product (viewed together).
    #[arg(long, default_value_t = 0.4)]
    pub(crate) related_share: f64,
    /// Share of sessions that set a basket.
    #[arg(long, default_value_t = 0.3)]
    pub(crate) basket_share: f64,
    /// Share of basket sessions that order.
    #[arg(long, default_value_t = 0.35)]
    pub(crate) order_share: f64,
    /// Share of sessions that send customer details.
    #[arg(long, default_value_t = 0.1)]
    pub(crate) details_share: f64,
    /// Share of sessions in USD (the rest use the account's default currency).
    #[arg(long, default_value_t = 0.2)]
    pub(crate) usd_share: f64,
    /// Share of identified shoppers that are B2B (account id, `trade` group).
    #[arg(long, default_value_t = 0.1)]
    pub(crate) b2b_share: f64,
    /// Zipf exponent of product popularity.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) zipf: f64,
    /// Zones per page type, `page_type=ZONE+ZONE;...` (default: the demo's zone ids,
    /// homepage=HP-01;category_listing_page=CP-01;search_results=SR-01;
    /// product_page=PP-01+PP-02;basket_page=BP-01;order_complete_page=OC-01).
    #[arg(long)]
    pub(crate) zones: Option<String>,
    /// Seed of the shoppers.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Pin the spawned server (and the bare baseline) to these CPUs, e.g. `0`
    /// (with --spawn).
    #[arg(long, value_name = "LIST", requires = "spawn")]
    pub(crate) server_cpus: Option<String>,
    /// Pin the load generator to these CPUs, e.g. `1`.
    #[arg(long, value_name = "LIST")]
    pub(crate) client_cpus: Option<String>,
    /// Keep the load generator's threads awake (a task per thread yields in a loop), so
    /// that an answer finds its reader running and the server's write wakes no thread:
    /// the ratio to the bare server without the host's cost of a cross-core wake-up.
    /// Give the generator CPUs of its own (--client-cpus).
    #[arg(long)]
    pub(crate) client_spin: bool,
    /// Shoppers click on what they are shown: per strategy, the share of product views
    /// that go to a product of a zone it filled in the previous answer, e.g.
    /// `personalized=0.3,trending=0.1` (with --spawn: the spawned store's zones).
    #[arg(long, value_name = "STRATEGY=SHARE,...", requires = "spawn")]
    pub(crate) prefer: Option<String>,
    /// An A/B test on a zone of the spawned store, `ZONE=STRATEGY,STRATEGY[,...]`: its
    /// variants A, B, ... with equal weights, A the control; its results (from the
    /// admin API) are reported at the end. Repeatable.
    #[arg(long, value_name = "ZONE=STRATEGY,...", requires = "spawn")]
    pub(crate) experiment: Vec<String>,
    /// Closed loop: each connection runs this many sessions and stops (no warm-up; the
    /// measured time is the whole run), so that a seed gives the same shoppers.
    #[arg(long)]
    pub(crate) sessions: Option<u64>,
    /// With several --server URLs (nodes of a cluster): the zone of the `recently_viewed`
    /// strategy that the replication-lag probe reads (default: the spawned store's).
    #[arg(long, default_value = "PP-02")]
    pub(crate) lag_zone: String,
    /// The spawned store does not record zone analytics (`zone_analytics = false`): to
    /// measure what recording impressions costs.
    #[arg(long, requires = "spawn", conflicts_with = "experiment")]
    pub(crate) no_zone_analytics: bool,
    /// The spawned store's `cpu_layout`: `shared` (every thread on every CPU it has) or
    /// `split` (with two or more, background threads on the last CPU).
    #[arg(
        long,
        value_name = "LAYOUT",
        default_value = "shared",
        requires = "spawn"
    )]
    pub(crate) cpu_layout: String,
    /// Send the shoppers' requests as the browser script does (`POST
    /// /api/clientside/<key>` from a store origin, no secret key) instead of as a
    /// store's server (`/api/serverside`). A server not spawned by the harness must allow
    /// the origin `https://shop.example` (`clientside.allowed_origins`).
    #[arg(long)]
    pub(crate) clientside: bool,
}

/// `ZONE=STRATEGY,STRATEGY` as an experiment of the spawned store.
pub(super) fn experiment_spec(text: &str) -> anyhow::Result<ExperimentToml> {
    let (zone, strategies) = text
        .split_once('=')
        .with_context(|| format!("--experiment: {text:?} is not ZONE=STRATEGY,STRATEGY"))?;
    let zone = zone.trim();
    if !STORE_ZONES.iter().any(|(id, ..)| *id == zone) {
        let ids: Vec<&str> = STORE_ZONES.iter().map(|(id, ..)| *id).collect();
        bail!(
            "--experiment: no zone {zone:?} in the spawned store; its zones: {}",
            ids.join(", ")
        );
    }
    let strategies: Vec<&str> = strategies.split(',').map(str::trim).collect();
    if !(2..=8).contains(&strategies.len()) || strategies.iter().any(|s| s.is_empty()) {
        bail!("--experiment: {text:?}: expected 2 to 8 strategies");
    }
    Ok(ExperimentToml {
        id: format!("harness-{}", zone.to_ascii_lowercase()),
        zone: zone.to_owned(),
        variants: strategies
            .iter()
            .zip('A'..='H')
            .map(|(strategy, name)| (name.to_string(), (*strategy).to_owned()))
            .collect(),
    })
}

impl RunArgs {
    pub(super) fn mix(&self) -> anyhow::Result<Mix> {
        let (min, max) = self
            .browse
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
            .with_context(|| format!("--browse must be MIN-MAX, got {:?}", self.browse))?;
        let mix = Mix {
            visitors: self.visitors,
            browse_min: min,
            browse_max: max,
            related: self.related_share,
            basket: self.basket_share,
            order: self.order_share,
            details: self.details_share,
            second_currency: self.usd_share,
            b2b: self.b2b_share,
            zipf: self.zipf,
        };
        mix.check()?;
        Ok(mix)
    }

    pub(super) fn pacing(&self) -> anyhow::Result<Pacing> {
        if self.connections == 0 || self.seconds == 0 {
            bail!("--connections and --seconds must be at least 1");
        }
        Ok(match self.rate {
            None => Pacing::Closed {
                connections: self.connections,
            },
            Some(rate) if rate.is_finite() && rate > 0.0 && rate <= 10_000_000.0 => Pacing::Open {
                rate,
                connections: self.connections,
            },
            Some(rate) => bail!("--rate must be above 0 and at most 10000000, got {rate}"),
        })
    }

    /// Whether the harness submits the synthetic catalogue.
    pub(super) fn provisions(&self) -> bool {
        self.products > 0 && (self.spawn || self.provision)
    }
}
