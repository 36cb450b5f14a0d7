//! `vitrine-loadtest run`: provision (or target) a store, drive it with simulated
//! shoppers in a closed or open loop, optionally during a full feed ingest and against
//! the bare-hyper baseline, and report percentiles, throughput and errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::Target;
use crate::baseline::Baseline;
use crate::drive::{Control, Pacing, Phase, Recording, Recordings, Traffic, drive};
use crate::provision::{FeedServer, FeedSubmission, Spawned, synthetic_feed};
use vitrine_benches::traffic::{Clicks, Credentials, Mix, STORE_ZONES, Shelf, ZoneMap};
use vitrine_testkit::ExperimentToml;

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
}

/// `ZONE=STRATEGY,STRATEGY` as an experiment of the spawned store.
fn experiment_spec(text: &str) -> anyhow::Result<ExperimentToml> {
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
    fn mix(&self) -> anyhow::Result<Mix> {
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

    fn pacing(&self) -> anyhow::Result<Pacing> {
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
    fn provisions(&self) -> bool {
        self.products > 0 && (self.spawn || self.provision)
    }
}

/// Percentiles of one histogram, microseconds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Percentiles {
    pub(crate) p50: u64,
    pub(crate) p90: u64,
    pub(crate) p99: u64,
    #[serde(rename = "p99.9")]
    pub(crate) p99_9: u64,
    pub(crate) max: u64,
    pub(crate) mean: f64,
}

impl Percentiles {
    pub(crate) fn of(histogram: &Histogram<u64>) -> Option<Percentiles> {
        (!histogram.is_empty()).then(|| Percentiles {
            p50: histogram.value_at_quantile(0.50),
            p90: histogram.value_at_quantile(0.90),
            p99: histogram.value_at_quantile(0.99),
            p99_9: histogram.value_at_quantile(0.999),
            max: histogram.max(),
            mean: (histogram.mean() * 10.0).round() / 10.0,
        })
    }
}

/// One measured phase.
#[derive(Debug, Serialize)]
pub(crate) struct PhaseReport {
    pub(crate) seconds: f64,
    pub(crate) requests: u64,
    pub(crate) throughput_rps: f64,
    pub(crate) round_trip_us: Option<Percentiles>,
    pub(crate) server_us: Option<Percentiles>,
    /// Open loop: how late requests left after their scheduled time (waiting for a free
    /// connection, and the dispatcher's own wake-up).
    pub(crate) schedule_lag_us: Option<Percentiles>,
    pub(crate) statuses: BTreeMap<String, u64>,
    pub(crate) connection_errors: u64,
    /// 200 answers that listed problems in `errors` (unknown zones, repeated orders).
    pub(crate) answers_with_errors: u64,
    pub(crate) mean_response_bytes: u64,
}

impl PhaseReport {
    fn of(recording: &Recording, seconds: f64, open: bool) -> PhaseReport {
        let requests = recording.requests();
        let answered: u64 = recording.statuses.values().sum();
        PhaseReport {
            seconds: (seconds * 1000.0).round() / 1000.0,
            requests,
            throughput_rps: if seconds > 0.0 {
                (requests as f64 / seconds).round()
            } else {
                0.0
            },
            round_trip_us: Percentiles::of(&recording.round_trip),
            server_us: Percentiles::of(&recording.server),
            schedule_lag_us: if open {
                Percentiles::of(&recording.lag)
            } else {
                None
            },
            statuses: recording
                .statuses
                .iter()
                .map(|(s, c)| (s.to_string(), *c))
                .collect(),
            connection_errors: recording.connection_errors,
            answers_with_errors: recording.answers_with_errors,
            mean_response_bytes: recording.response_bytes.checked_div(answered).unwrap_or(0),
        }
    }
}

/// The traffic against one server.
#[derive(Debug, Serialize)]
pub(crate) struct TargetReport {
    pub(crate) server: String,
    pub(crate) idle: PhaseReport,
    pub(crate) during_ingest: Option<PhaseReport>,
}

/// The machine the run was on.
#[derive(Debug, Serialize)]
pub(crate) struct Machine {
    pub(crate) cpu_model: String,
    pub(crate) cores: usize,
    pub(crate) os: &'static str,
}

impl Machine {
    fn read() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, model)| model.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        Machine {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            os: std::env::consts::OS,
        }
    }
}

/// What `--json` writes.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) settings: RunArgs,
    pub(crate) mode: &'static str,
    pub(crate) git_commit: &'static str,
    pub(crate) machine: Machine,
    pub(crate) started_unix_secs: u64,
    pub(crate) catalogue_products: usize,
    /// Seconds from submitting the synthetic feed to its `Complete`, when provisioned.
    pub(crate) provision_seconds: Option<f64>,
    /// All the traffic (with several --server URLs: against every node together).
    pub(crate) vitrine: TargetReport,
    /// With several --server URLs: the traffic against each node (a visitor's requests
    /// all go to one node).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) nodes: Vec<TargetReport>,
    /// With several --server URLs: a view through one node until the next shows it.
    pub(crate) replication_lag: Option<crate::lag::LagReport>,
    pub(crate) baseline: Option<TargetReport>,
    /// Closed loop with --baseline: Vitrine's requests/s over the baseline's.
    pub(crate) throughput_vs_baseline: Option<f64>,
    /// With --experiment: the spawned store's experiment results (its admin API's
    /// answer).
    pub(crate) experiments: Option<serde_json::Value>,
}

/// The commit this tool was built from (by `build.rs`).
const GIT_COMMIT: &str = env!("VITRINE_GIT_COMMIT");

pub(crate) fn run(args: RunArgs) -> anyhow::Result<()> {
    let mix = args.mix()?;
    let pacing = args.pacing()?;
    let zones = ZoneMap::parse(args.zones.as_deref())?;
    if args.ingest_during && !args.provisions() {
        bail!(
            "--ingest-during needs the synthetic catalogue: use --spawn or --provision with --products above 0"
        );
    }
    if args.spawn && args.provision {
        bail!("--provision is for --server; --spawn provisions its server itself");
    }
    if args.sessions.is_some() && matches!(pacing, Pacing::Open { .. }) {
        bail!("--sessions is for the closed loop (without --rate)");
    }
    if args.sessions == Some(0) {
        bail!("--sessions must be at least 1");
    }
    if args.sessions.is_some() && args.ingest_during {
        bail!("--ingest-during runs for a time; it does not go with --sessions");
    }
    let experiments = args
        .experiment
        .iter()
        .map(|text| experiment_spec(text))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let started_unix_secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (feed, products, categories) = if args.provisions() || args.browse_synthetic {
        eprintln!("generating a feed of {} products", args.products);
        let (feed, products, categories) = synthetic_feed(args.products, args.feed_seed);
        (args.provisions().then_some(feed), products, categories)
    } else if let Some(path) = &args.product_ids {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading --product-ids {}", path.display()))?;
        let ids = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        (None, ids, Vec::new())
    } else {
        let products = (0..vitrine_engine::demo::DEMO_PRODUCTS)
            .map(vitrine_engine::demo::product_id)
            .collect();
        let categories = (0..vitrine_engine::demo::DEMO_CATEGORIES)
            .map(vitrine_engine::demo::category_id)
            .collect();
        (None, products, categories)
    };
    let catalogue_products = products.len();
    let probe_products: Vec<String> = products.iter().take(1000).cloned().collect();
    let shelf = Shelf::new(products, categories, mix.zipf)?;
    let clicks = match &args.prefer {
        Some(prefer) => Some(Clicks::new(prefer, &experiments, &shelf)?),
        None => None,
    };
    let server_cpus = args
        .server_cpus
        .as_deref()
        .map(crate::cpus::parse)
        .transpose()?;
    let client_cpus = args
        .client_cpus
        .as_deref()
        .map(crate::cpus::parse)
        .transpose()?;
    // A child starts with the affinity of the thread that starts it: `vitrine` then
    // sizes its runtime to the CPUs it has, as under `taskset`.
    if let Some(cpus) = &server_cpus {
        crate::cpus::pin_current_thread(cpus)?;
    }
    let spawned = if args.spawn {
        eprintln!("starting vitrine");
        Some(Spawned::start(
            args.vitrine.as_deref(),
            args.products == 0,
            &experiments,
            !args.no_zone_analytics,
        )?)
    } else {
        None
    };
    if server_cpus.is_some() {
        eprintln!(
            "vitrine pinned to CPUs {}",
            args.server_cpus.as_deref().unwrap_or("")
        );
    }
    // Threads started from here on (the generator's runtime, its dispatcher) inherit it.
    if let Some(cpus) = &client_cpus {
        crate::cpus::pin_current_thread(cpus)?;
        eprintln!(
            "load generator pinned to CPUs {}",
            args.client_cpus.as_deref().unwrap_or("")
        );
    }
    // With several --server URLs, the first is the one provisioned (a cluster builds a
    // feed once for every node).
    let authorities = match &spawned {
        Some(server) => vec![server.addr.to_string()],
        None => args
            .target
            .server
            .split(',')
            .map(|url| crate::authority(url.trim()))
            .collect::<anyhow::Result<Vec<_>>>()?,
    };
    let authority = authorities[0].clone();
    let probe = (authorities.len() > 1).then(|| crate::lag::Probe {
        authorities: authorities.clone(),
        access_key: args.target.access_key.clone(),
        secret_key: args.target.secret_key.clone(),
        zone: args.lag_zone.clone(),
        products: probe_products,
        run: started_unix_secs,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(async {
        let feed_server = match &feed {
            Some(feed) => Some(FeedServer::start((**feed).clone())?),
            None => None,
        };
        let ingest = feed_server.as_ref().map(|f| FeedSubmission {
            authority: authority.clone(),
            access_key: args.target.access_key.clone(),
            secret_key: args.target.secret_key.clone(),
            url: f.url.clone(),
        });
        let provision_seconds = match &ingest {
            Some(ingest) => {
                eprintln!("submitting the feed of {catalogue_products} products");
                let took = ingest.run().await.context("provisioning the catalogue")?;
                eprintln!("catalogue Complete after {:.1} s", took.as_secs_f64());
                Some((took.as_secs_f64() * 1000.0).round() / 1000.0)
            }
            None => None,
        };
        let traffic = Arc::new(Traffic {
            shelf,
            mix,
            zones,
            credentials: Credentials::new(&args.target.access_key, &args.target.secret_key),
            seed: args.seed,
            run: started_unix_secs,
            clicks,
            sessions: args.sessions,
        });
        let ingest_during = ingest.filter(|_| args.ingest_during);
        let vitrine = measure(
            &traffic,
            &authorities,
            pacing,
            &args,
            ingest_during.as_ref(),
            probe,
            "vitrine",
        )
        .await;
        let vitrine = match vitrine {
            Ok(report) => report,
            Err(error) => {
                if let Some(server) = &spawned {
                    eprintln!("the server's log:\n{}", server.log());
                }
                return Err(error);
            }
        };
        let experiment_results = match &spawned {
            Some(server) if !experiments.is_empty() => Some(server.experiment_results()?),
            _ => None,
        };
        if let Some(server) = spawned {
            server.stop();
        }
        drop(feed_server);
        let baseline = if args.baseline {
            let bytes = args
                .baseline_bytes
                .unwrap_or(vitrine.total.idle.mean_response_bytes as usize);
            let server = Baseline::start(bytes, server_cpus)?;
            // The same shoppers with the same seed: the same requests.
            let report = measure(
                &traffic,
                &[server.addr.to_string()],
                pacing,
                &args,
                None,
                None,
                "baseline",
            )
            .await;
            drop(server);
            Some(report?.total)
        } else {
            None
        };
        let throughput_vs_baseline = match (&baseline, pacing) {
            (Some(base), Pacing::Closed { .. }) if base.idle.throughput_rps > 0.0 => Some(
                (vitrine.total.idle.throughput_rps / base.idle.throughput_rps * 1000.0).round()
                    / 1000.0,
            ),
            _ => None,
        };
        anyhow::Ok(Report {
            mode: match pacing {
                Pacing::Closed { .. } => "closed loop",
                Pacing::Open { .. } => "open loop",
            },
            settings: args.clone(),
            git_commit: GIT_COMMIT,
            machine: Machine::read(),
            started_unix_secs,
            catalogue_products,
            provision_seconds,
            vitrine: vitrine.total,
            nodes: vitrine.nodes,
            replication_lag: vitrine.lag,
            baseline,
            throughput_vs_baseline,
            experiments: experiment_results,
        })
    })?;
    print_report(&report);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
        println!("report written to {}", path.display());
    }
    Ok(())
}

/// What [`measure`] measured.
struct Measured {
    /// Against every server together.
    total: TargetReport,
    /// Against each server, when there are several.
    nodes: Vec<TargetReport>,
    /// With a probe: the replication lag.
    lag: Option<crate::lag::LagReport>,
}

/// Warm-up, the measured seconds, then (with `ingest`) a phase until a full feed is
/// `Complete`; with several servers, a visitor's requests go to one of them, and
/// `probe` measures the replication lag meanwhile.
async fn measure(
    traffic: &Arc<Traffic>,
    authorities: &[String],
    pacing: Pacing,
    args: &RunArgs,
    ingest: Option<&FeedSubmission>,
    probe: Option<crate::lag::Probe>,
    label: &'static str,
) -> anyhow::Result<Measured> {
    let control = Arc::new(Control::default());
    let progress = tokio::spawn(progress(Arc::clone(&control), label));
    let driver = tokio::spawn(drive(
        Arc::clone(traffic),
        authorities.to_vec(),
        Arc::clone(&control),
        pacing,
    ));
    let prober = probe.map(|probe| tokio::spawn(crate::lag::probe(probe, Arc::clone(&control))));
    let mut driver = Some(driver);
    let idle_started;
    let mut finished = None;
    if args.sessions.is_some() {
        // Every request is measured; the run ends when each connection's sessions do.
        control.set_phase(Phase::Idle);
        idle_started = Instant::now();
        if let Some(driver) = driver.take() {
            finished = Some(driver.await);
        }
    } else {
        tokio::time::sleep(Duration::from_secs(args.warmup)).await;
        control.set_phase(Phase::Idle);
        idle_started = Instant::now();
        tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    }
    let idle_seconds = idle_started.elapsed().as_secs_f64();
    let mut ingest_outcome = None;
    if let Some(ingest) = ingest {
        control.set_phase(Phase::Ingest);
        let started = Instant::now();
        let outcome = ingest.run().await;
        ingest_outcome = Some(outcome.map(|_| started.elapsed().as_secs_f64()));
    }
    control.set_phase(Phase::Done);
    let recordings = match (finished, driver) {
        (Some(recordings), _) => recordings,
        (None, Some(driver)) => driver.await,
        (None, None) => bail!("the load task was not started"),
    };
    progress.abort();
    let lag = match prober {
        Some(prober) => Some(prober.await.context("the replication-lag probe")?),
        None => None,
    };
    let recordings = recordings.context("load task")??;
    let open = matches!(pacing, Pacing::Open { .. });
    let ingest_seconds = match ingest_outcome {
        Some(outcome) => Some(outcome.context("the feed ingest during the load")?),
        None => None,
    };
    let report = |server: String, recordings: &Recordings| TargetReport {
        server,
        idle: PhaseReport::of(&recordings.idle, idle_seconds, open),
        during_ingest: ingest_seconds
            .map(|seconds| PhaseReport::of(&recordings.ingest, seconds, open)),
    };
    let mut all = Recordings::new();
    for recorded in &recordings {
        all.merge(recorded);
    }
    let servers: Vec<String> = authorities.iter().map(|a| format!("http://{a}")).collect();
    let nodes = if recordings.len() > 1 {
        servers
            .iter()
            .zip(&recordings)
            .map(|(server, recorded)| report(server.clone(), recorded))
            .collect()
    } else {
        Vec::new()
    };
    Ok(Measured {
        total: report(servers.join(","), &all),
        nodes,
        lag,
    })
}

/// The live progress line (on a terminal): phase, requests, rate and mean round trip
/// of the last second, errors.
async fn progress(control: Arc<Control>, label: &'static str) {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let mut interval = tokio::time::interval(Duration::from_secs(1));
    let (mut requests, mut sum) = (0u64, 0u64);
    loop {
        interval.tick().await;
        let now_requests = control.requests.load(Ordering::Relaxed);
        let now_sum = control.round_trip_sum_us.load(Ordering::Relaxed);
        let (delta, delta_sum) = (now_requests - requests, now_sum - sum);
        (requests, sum) = (now_requests, now_sum);
        let phase = match control.phase() {
            Phase::Warmup => "warm-up",
            Phase::Idle => "measuring",
            Phase::Ingest => "measuring during the feed ingest",
            Phase::Done => "finishing",
        };
        bar.set_message(format!(
            "{label} {phase}: {now_requests} requests, {delta} req/s, mean round trip {:.2} ms, {} errors",
            delta_sum.checked_div(delta).unwrap_or(0) as f64 / 1000.0,
            control.errors.load(Ordering::Relaxed)
        ));
        bar.tick();
    }
}

fn print_report(report: &Report) {
    let settings = &report.settings;
    match settings.rate {
        None if settings.sessions.is_some() => println!(
            "{}: {} connections, {} sessions each, every request measured",
            report.mode,
            settings.connections,
            settings.sessions.unwrap_or(0)
        ),
        None => println!(
            "{}: {} connections, warm-up {} s, {} s measured",
            report.mode, settings.connections, settings.warmup, settings.seconds
        ),
        Some(rate) => println!(
            "{}: {rate} requests/s over up to {} connections, warm-up {} s, {} s measured",
            report.mode, settings.connections, settings.warmup, settings.seconds
        ),
    }
    println!(
        "catalogue: {} products{}; commit {}; {} ({} cores)",
        report.catalogue_products,
        report
            .provision_seconds
            .map(|s| format!(" (feed submitted, Complete after {s:.1} s)"))
            .unwrap_or_default(),
        report.git_commit,
        report.machine.cpu_model,
        report.machine.cores
    );
    print_target("vitrine", &report.vitrine);
    for (i, node) in report.nodes.iter().enumerate() {
        print_target(&format!("node {}", i + 1), node);
    }
    if let Some(lag) = &report.replication_lag {
        match &lag.lag_us {
            Some(p) => println!(
                "replication lag (a view through one node until the next shows it): {} samples, p50 {} us, p99 {} us, max {} us; {} not seen within 10 s, {} failed",
                lag.samples, p.p50, p.p99, p.max, lag.timeouts, lag.errors
            ),
            None => println!(
                "replication lag: no sample ({} not seen within 10 s, {} failed)",
                lag.timeouts, lag.errors
            ),
        }
    }
    if let Some(baseline) = &report.baseline {
        print_target("baseline (bare hyper)", baseline);
    }
    if let Some(ratio) = report.throughput_vs_baseline {
        println!(
            "vitrine throughput / baseline throughput: {:.1} %",
            ratio * 100.0
        );
    }
    let experiments = report
        .experiments
        .as_ref()
        .and_then(|e| e["experiments"].as_array());
    for experiment in experiments.into_iter().flatten() {
        println!("experiment {} on {}:", experiment["id"], experiment["zone"]);
        for variant in experiment["variants"].as_array().into_iter().flatten() {
            let counts = &variant["counts"];
            println!(
                "  {} ({}): {} visitors, {} impressions, {} viewed, {} ordering visitors",
                variant["name"].as_str().unwrap_or("?"),
                variant["strategy"].as_str().unwrap_or("?"),
                counts["visitors"],
                counts["impressions"],
                counts["viewed"],
                counts["orderingVisitors"]
            );
            for verdict in variant["verdicts"].as_array().into_iter().flatten() {
                println!("    {}", verdict.as_str().unwrap_or(""));
            }
        }
    }
}

fn print_target(label: &str, target: &TargetReport) {
    println!("{label} at {}", target.server);
    print_phase("idle", &target.idle);
    if let Some(phase) = &target.during_ingest {
        print_phase("during feed ingest", phase);
    }
}

fn print_phase(label: &str, phase: &PhaseReport) {
    let line = |p: &Option<Percentiles>| match p {
        Some(p) => format!(
            "p50 {} us, p90 {} us, p99 {} us, p99.9 {} us, max {} us",
            p.p50, p.p90, p.p99, p.p99_9, p.max
        ),
        None => "none".to_owned(),
    };
    println!(
        "  {label}: {} requests in {:.1} s, {} requests/s, {} bytes per answer",
        phase.requests, phase.seconds, phase.throughput_rps, phase.mean_response_bytes
    );
    println!("    round trip:  {}", line(&phase.round_trip_us));
    println!("    server time: {}", line(&phase.server_us));
    if phase.schedule_lag_us.is_some() {
        println!("    send lag:    {}", line(&phase.schedule_lag_us));
    }
    let statuses: Vec<String> = phase
        .statuses
        .iter()
        .map(|(s, c)| format!("{s}: {c}"))
        .collect();
    println!(
        "    statuses: {}; connection errors: {}; 200s with errors: {}",
        if statuses.is_empty() {
            "none".to_owned()
        } else {
            statuses.join(", ")
        },
        phase.connection_errors,
        phase.answers_with_errors
    );
}
