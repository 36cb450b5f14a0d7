//! `vitrine-loadtest run` end to end: against a spawned `vitrine` provisioned with the
//! synthetic feed (closed loop with the baseline, open loop during a feed ingest), and
//! against a stub server that stalls once, where the open loop must charge the stall to
//! every request it delayed.
//!
//! The server is the workspace's `vitrine` binary, built next to this crate's binary by
//! `cargo test --workspace`.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

fn loadtest() -> &'static str {
    env!("CARGO_BIN_EXE_vitrine-loadtest")
}

fn run(args: &[&str], json: &Path) -> Value {
    let output = Command::new(loadtest())
        .arg("run")
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "vitrine-loadtest run failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("round trip:"), "{stdout}");
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// A short closed loop against a spawned store of `products` products over
/// `connections` connections (1 s of warm-up, 2 s measured, 300 visitors), then `more`.
fn short_run<'a>(products: &'a str, connections: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--spawn",
        "--products",
        products,
        "--connections",
        connections,
        "--warmup",
        "1",
        "--seconds",
        "2",
        "--visitors",
        "300",
    ];
    args.extend_from_slice(more);
    args
}

/// A phase's report holds more than `at_least` requests, every one answered 200.
fn all_answered(idle: &Value, at_least: u64) {
    let requests = idle["requests"].as_u64().unwrap();
    assert!(requests > at_least, "{idle}");
    assert_eq!(
        idle["statuses"]["200"].as_u64().unwrap(),
        requests,
        "{idle}"
    );
}

fn assert_ordered_percentiles(p: &Value) {
    let keys = ["p50", "p90", "p99", "p99.9", "max"];
    let values: Vec<u64> = keys.iter().map(|k| p[k].as_u64().unwrap()).collect();
    assert!(values[0] > 0, "{p}");
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{p}");
}

#[test]
fn closed_loop_against_a_spawned_store_and_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        &short_run("2000", "4", &["--baseline"]),
        &dir.path().join("closed.json"),
    );
    // Every setting, the commit and the machine are repeated; the secret is not.
    let settings = &report["settings"];
    assert_eq!(settings["products"], 2000);
    assert_eq!(settings["connections"], 4);
    assert_eq!(settings["visitors"], 300);
    assert_eq!(settings["browse"], "3-8");
    assert!(settings["rate"].is_null());
    assert!(settings.get("secret_key").is_none());
    assert_eq!(report["mode"], "closed loop");
    assert_eq!(report["catalogue_products"], 2000);
    assert!(report["provision_seconds"].as_f64().unwrap() > 0.0);
    let commit = report["git_commit"].as_str().unwrap();
    assert!(commit == "unknown" || commit.len() == 40, "{commit}");
    assert!(!report["machine"]["cpu_model"].as_str().unwrap().is_empty());
    assert!(report["machine"]["cores"].as_u64().unwrap() >= 1);

    let idle = &report["vitrine"]["idle"];
    all_answered(idle, 50);
    assert_eq!(idle["connection_errors"], 0);
    assert_eq!(idle["answers_with_errors"], 0, "{idle}");
    assert!(
        idle["mean_response_bytes"].as_u64().unwrap() > 1000,
        "{idle}"
    );
    assert_ordered_percentiles(&idle["round_trip_us"]);
    assert_ordered_percentiles(&idle["server_us"]);
    // The server's own time is part of the round trip.
    assert!(
        idle["server_us"]["p50"].as_u64().unwrap()
            <= idle["round_trip_us"]["p50"].as_u64().unwrap(),
        "{idle}"
    );
    assert!(idle["schedule_lag_us"].is_null());
    assert!(report["vitrine"]["during_ingest"].is_null());

    let baseline = &report["baseline"]["idle"];
    let baseline_requests = baseline["requests"].as_u64().unwrap();
    assert!(baseline_requests > 50, "{baseline}");
    assert_eq!(
        baseline["statuses"]["200"].as_u64().unwrap(),
        baseline_requests
    );
    assert!(
        baseline["server_us"].is_null(),
        "the bare server reports no time"
    );
    // The fixed answer is as large as Vitrine's mean answer.
    assert_eq!(baseline["mean_response_bytes"], idle["mean_response_bytes"]);
    let ratio = report["throughput_vs_baseline"].as_f64().unwrap();
    let expected =
        idle["throughput_rps"].as_f64().unwrap() / baseline["throughput_rps"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 0.002, "{ratio} vs {expected}");
    // Without --client-spin the generator's threads sleep between answers.
    assert_eq!(settings["client_spin"], false);
    assert!(report["client_spin_turns_per_second"].is_null());
}

/// `--client-spin`: the generator keeps its threads awake (tasks that yield in a loop,
/// their turns counted), and both servers still get every shopper's request answered.
#[test]
fn a_generator_kept_awake_drives_both_servers() {
    let dir = tempfile::tempdir().unwrap();
    // One CPU for the generator: its one worker spins, the server keeps the rest.
    let args = short_run(
        "500",
        "4",
        &["--baseline", "--client-spin", "--client-cpus", "0"],
    );
    let report = run(&args, &dir.path().join("spin.json"));
    assert_eq!(report["settings"]["client_spin"], true);
    let turns = report["client_spin_turns_per_second"].as_f64().unwrap();
    assert!(turns > 0.0, "the spinners never turned: {turns}");
    for target in ["vitrine", "baseline"] {
        let idle = &report[target]["idle"];
        all_answered(idle, 20);
        assert_eq!(idle["connection_errors"], 0, "{target}: {idle}");
    }
}

/// `--clientside`: the shoppers' requests go to the browser endpoint, as the script
/// sends them (a store origin, a browser's user agent, no secret key), and each is
/// answered 200 with the zones' HTML.
#[test]
fn the_browser_endpoint_answers_the_harness_shoppers() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        &short_run("2000", "2", &["--clientside"]),
        &dir.path().join("clientside.json"),
    );
    let idle = &report["vitrine"]["idle"];
    all_answered(idle, 50);
    assert_eq!(idle["answers_with_errors"], 0, "{idle}");
    // The zones' HTML comes with their items.
    assert!(
        idle["mean_response_bytes"].as_u64().unwrap() > 4000,
        "{idle}"
    );
}

#[test]
fn open_loop_during_a_feed_ingest_reports_both_phases() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        &[
            "--spawn",
            "--products",
            "3000",
            "--rate",
            "200",
            "--connections",
            "8",
            "--warmup",
            "1",
            "--seconds",
            "2",
            "--ingest-during",
            // The homepage asks for a zone the store does not have: 200 with errors.
            "--zones",
            "homepage=NO-SUCH-ZONE",
        ],
        &dir.path().join("open.json"),
    );
    assert_eq!(report["mode"], "open loop");
    assert_eq!(report["settings"]["rate"], 200.0);
    let idle = &report["vitrine"]["idle"];
    let requests = idle["requests"].as_u64().unwrap();
    // The schedule is kept: 200/s for 2 s.
    assert!((360..=440).contains(&requests), "{idle}");
    assert_eq!(
        idle["statuses"]["200"].as_u64().unwrap(),
        requests,
        "{idle}"
    );
    let with_errors = idle["answers_with_errors"].as_u64().unwrap();
    assert!(with_errors > 0 && with_errors < requests, "{idle}");
    assert_ordered_percentiles(&idle["round_trip_us"]);
    assert_ordered_percentiles(&idle["schedule_lag_us"]);
    let ingest = &report["vitrine"]["during_ingest"];
    assert!(ingest["seconds"].as_f64().unwrap() > 0.0, "{ingest}");
    assert!(ingest["requests"].as_u64().unwrap() > 0, "{ingest}");
    assert_eq!(ingest["connection_errors"], 0);
    assert_ordered_percentiles(&ingest["round_trip_us"]);
}

/// A keep-alive HTTP/1.1 server that answers every request with a small JSON body, and
/// holds the answer to request number `stall_at` for `stall`.
fn stub_server(stall_at: u64, stall: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let count = Arc::clone(&count);
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    if count.fetch_add(1, Ordering::SeqCst) + 1 == stall_at {
                        std::thread::sleep(stall);
                    }
                    let answer = br#"{"visitorId":"v","sessionId":"s","errors":[],"zones":{}}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nserver-timing: app;dur=0.050\r\ncontent-length: {}\r\n\r\n",
                        answer.len()
                    );
                    if writer.write_all(head.as_bytes()).is_err()
                        || writer.write_all(answer).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

#[test]
fn open_loop_charges_a_stall_to_every_request_it_delayed() {
    // 200 requests/s on one connection; request 100 (0.5 s in) is held for 400 ms, so
    // about 80 scheduled requests wait behind it. Measured from their scheduled times,
    // a tenth of all requests are late by 100 ms or more; measured from when they were
    // actually sent, only one would be.
    let server = stub_server(100, Duration::from_millis(400));
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        &[
            "--server",
            &server,
            "--rate",
            "200",
            "--connections",
            "1",
            "--warmup",
            "0",
            "--seconds",
            "2",
        ],
        &dir.path().join("stall.json"),
    );
    let idle = &report["vitrine"]["idle"];
    let requests = idle["requests"].as_u64().unwrap();
    assert!((360..=440).contains(&requests), "{idle}");
    let round_trip = &idle["round_trip_us"];
    assert!(round_trip["max"].as_u64().unwrap() >= 380_000, "{idle}");
    assert!(round_trip["p90"].as_u64().unwrap() >= 100_000, "{idle}");
    assert!(
        idle["schedule_lag_us"]["p90"].as_u64().unwrap() >= 80_000,
        "{idle}"
    );
    // The stub's own Server-Timing is read as is.
    assert_eq!(idle["server_us"]["p50"], 50, "{idle}");
}

/// The experiment results of a run with clicking shoppers: the variants' entries.
fn experiment_run(dir: &Path, name: &str, prefer: &str, experiment: &str) -> Vec<Value> {
    let report = run(
        &[
            "--spawn",
            "--products",
            "2000",
            "--connections",
            "4",
            "--sessions",
            "300",
            "--seed",
            "1",
            "--prefer",
            prefer,
            "--experiment",
            experiment,
        ],
        &dir.join(format!("{name}.json")),
    );
    let experiments = report["experiments"]["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 1, "{report}");
    assert_eq!(experiments[0]["zone"], "PP-01");
    experiments[0]["variants"].as_array().unwrap().clone()
}

#[test]
fn an_experiment_finds_a_planted_effect_and_an_a_a_test_finds_none() {
    let dir = tempfile::tempdir().unwrap();
    // Shoppers click on trending's products five times as often as on viewed_together's:
    // B (trending) must win on view-through, significantly.
    let variants = experiment_run(
        dir.path(),
        "planted",
        "viewed_together=0.1,trending=0.5",
        "PP-01=viewed_together,trending",
    );
    assert_eq!(variants[0]["name"], "A");
    assert_eq!(variants[0]["control"], true);
    assert_eq!(variants[1]["strategy"], "trending");
    // The split is even: 1,200 sessions over about 50,000 visitors, half each.
    let visitors = |v: &Value| v["counts"]["visitors"].as_f64().unwrap();
    let share = visitors(&variants[1]) / (visitors(&variants[0]) + visitors(&variants[1]));
    assert!((0.4..0.6).contains(&share), "{variants:?}");
    let view_through = &variants[1]["againstControl"]["viewThrough"];
    assert_eq!(view_through["significant"], true, "{variants:?}");
    assert!(view_through["relative"].as_f64().unwrap() > 0.0);
    assert!(view_through["low"].as_f64().unwrap() > 0.0);
    assert!(
        variants[1]["verdicts"][0]
            .as_str()
            .unwrap()
            .contains("% view-through, 95 % CI [+"),
        "{variants:?}"
    );

    // The same strategy in both arms: no metric differs beyond chance. Each metric is
    // "significant" at 5 % for one sample in twenty of a correct split, and this run's
    // sample is all but fixed (one seed), so a model change that moves a few clicks can
    // put an A/A run at p = 0.047; a biased split gives p-values far below 1 % at this
    // traffic. So: no metric below 1 %.
    let variants = experiment_run(
        dir.path(),
        "a-a",
        "viewed_together=0.3",
        "PP-01=viewed_together,viewed_together",
    );
    for metric in ["viewThrough", "conversion", "revenuePerVisitor"] {
        let comparison = &variants[1]["againstControl"][metric];
        let p_value = comparison["pValue"].as_f64().unwrap();
        assert!(p_value > 0.01, "{metric}: p = {p_value}: {variants:?}");
    }
}
