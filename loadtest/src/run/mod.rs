//! `vitrine-loadtest run`: provision (or target) a store, drive it with simulated
//! shoppers in a closed or open loop, optionally during a full feed ingest and against
//! the bare-hyper baseline, and report percentiles, throughput and errors.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};

use crate::baseline::Baseline;
use crate::drive::{Control, Pacing, Phase, Recordings, Traffic, TrafficEndpoint, drive};
use crate::provision::{FeedServer, FeedSubmission, Spawned, synthetic_feed};
use vitrine_benches::traffic::{Clicks, Credentials, Shelf, StoreOptions, ZoneMap};
use vitrine_snapshots::threads::Layout;
use vitrine_testkit::CatalogueStart;

mod args;
mod counters;
mod report;
mod spin;

pub(crate) use args::RunArgs;
pub(crate) use report::{Machine, PhaseReport, Report, TargetReport};

use args::experiment_spec;
use report::print_report;

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
        let options = StoreOptions {
            catalogue: if args.products == 0 {
                CatalogueStart::Demo
            } else {
                CatalogueStart::Empty
            },
            experiments: &experiments,
            zone_analytics: !args.no_zone_analytics,
            cpu_layout: match args.cpu_layout.as_str() {
                "shared" => Layout::Shared,
                "split" => Layout::Split,
                other => bail!("--cpu-layout: expected shared or split, got {other:?}"),
            },
            ..StoreOptions::default()
        };
        Some(Spawned::start(args.vitrine.as_deref(), &options)?)
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
            .map(|url| crate::target::authority(url.trim()))
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
    let spinners = args.client_spin.then(|| spin::Spinners::start(&runtime));
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
            credentials: if args.clientside {
                Credentials::browser()
            } else {
                Credentials::new(&args.target.access_key, &args.target.secret_key)
            },
            seed: args.seed,
            run: started_unix_secs,
            clicks,
            sessions: args.sessions,
            endpoint: if args.clientside {
                TrafficEndpoint::Clientside {
                    access_key: args.target.access_key.clone(),
                }
            } else {
                TrafficEndpoint::Serverside
            },
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
            let server = Baseline::start(bytes, args.baseline_work_us, server_cpus)?;
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
            client_spin_turns_per_second: spinners.as_ref().map(spin::Spinners::turns_per_second),
        })
    })?;
    drop(spinners);
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
    let mut counted_before = None;
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
        counted_before = Some(counters::Counters::read(authorities).await);
        control.set_phase(Phase::Idle);
        idle_started = Instant::now();
        tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    }
    let idle_seconds = idle_started.elapsed().as_secs_f64();
    let counted_after = match counted_before {
        Some(_) => Some(counters::Counters::read(authorities).await),
        None => None,
    };
    let counted = counted_before.zip(counted_after);
    let window_waits_per_second =
        counted.and_then(|(before, after)| before.window_waits_per_second(&after, idle_seconds));
    let zone_cache_hit_ratio =
        counted.and_then(|(before, after)| before.zone_cache_hit_ratio(&after));
    let fsyncs_per_second =
        counted.and_then(|(before, after)| before.fsyncs_per_second(&after, idle_seconds));
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
    let ingest_seconds = match ingest_outcome {
        Some(outcome) => Some(outcome.context("the feed ingest during the load")?),
        None => None,
    };
    let report = |server: String, recordings: &Recordings| TargetReport {
        server,
        idle: PhaseReport::of(&recordings.idle, idle_seconds, pacing),
        during_ingest: ingest_seconds
            .map(|seconds| PhaseReport::of(&recordings.ingest, seconds, pacing)),
        window_waits_per_second: None,
        zone_cache_hit_ratio: None,
        fsyncs_per_second: None,
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
        total: TargetReport {
            window_waits_per_second,
            zone_cache_hit_ratio,
            fsyncs_per_second,
            ..report(servers.join(","), &all)
        },
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
