//! What a run reports: percentiles per phase, throughput, errors, the machine, and
//! the printed table.

use std::collections::BTreeMap;

use serde::Serialize;

use super::args::RunArgs;
use crate::drive::{Pacing, Recording};
use crate::percentiles::Percentiles;

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
    /// The figures of one phase's `recording` over `seconds`, paced by `pacing` (an
    /// open loop also reports how late requests left).
    pub(super) fn of(recording: &Recording, seconds: f64, pacing: Pacing) -> PhaseReport {
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
            schedule_lag_us: if matches!(pacing, Pacing::Open { .. }) {
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
    /// Answers per second that waited for an fsync during the measured seconds because
    /// the log writer was behind its `interval` window (`None`: a server without the
    /// counter, such as the bare baseline).
    pub(crate) window_waits_per_second: Option<f64>,
    /// The zone cache's hits over its hits and misses during the measured seconds.
    pub(crate) zone_cache_hit_ratio: Option<f64>,
    /// The log's fsyncs per second during the measured seconds, and those slower than
    /// 6.4 ms (most of the default 10 ms window by themselves).
    pub(crate) fsyncs_per_second: Option<(f64, f64)>,
}

/// The machine the run was on.
#[derive(Debug, Serialize)]
pub(crate) struct Machine {
    pub(crate) cpu_model: String,
    pub(crate) cores: usize,
    pub(crate) os: &'static str,
}

impl Machine {
    pub(super) fn read() -> Machine {
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
    /// With --client-spin: the spinning tasks' turns a second over the run.
    pub(crate) client_spin_turns_per_second: Option<f64>,
}

pub(super) fn print_report(report: &Report) {
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
    if let Some(turns) = report.client_spin_turns_per_second {
        println!("load generator kept awake (--client-spin): {turns:.0} turns/s");
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

pub(super) fn print_target(label: &str, target: &TargetReport) {
    println!("{label} at {}", target.server);
    print_phase("idle", &target.idle);
    if let Some(waits) = target.window_waits_per_second {
        println!("    log window waits: {waits} per second");
    }
    if let Some((fsyncs, slow)) = target.fsyncs_per_second {
        println!("    log fsyncs: {fsyncs} per second, {slow} per second slower than 6.4 ms");
    }
    if let Some(ratio) = target.zone_cache_hit_ratio {
        println!(
            "    zone cache: {:.1} % of cacheable zones hit",
            ratio * 100.0
        );
    }
    if let Some(phase) = &target.during_ingest {
        print_phase("during feed ingest", phase);
    }
}

pub(super) fn print_phase(label: &str, phase: &PhaseReport) {
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
