//! Operating the server: `/metrics` in the Prometheus text format (checked by
//! Prometheus's own `promtool` and read back by a parser), its own socket
//! (`metrics_listen`) and JSON logs. Configuration reloads, rate limits and the
//! connection cap are in `reload.rs`; backups and the log's backpressure in
//! `backup.rs`.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::records;

use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml};

use crate::common::{DEMO_KEY, DEMO_SECRET, Resp, Server, request, wait_for};

/// The samples of a scrape.
pub(crate) fn scrape(resp: &Resp) -> prometheus_parse::Scrape {
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    prometheus_parse::Scrape::parse(resp.body.lines().map(|l| Ok(l.to_owned())))
        .expect("the metrics parse")
}

/// The value of the sample `name` whose labels include `labels` (a counter or gauge),
/// or the count of a histogram.
pub(crate) fn value(
    scrape: &prometheus_parse::Scrape,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => *v,
            prometheus_parse::Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            prometheus_parse::Value::Summary(_) => f64::NAN,
        })
}

/// Runs Prometheus's `promtool check metrics` on a scrape: a format error fails it
/// (lint warnings, such as a counter without `_total`, are printed, not fatal).
pub(crate) fn promtool_accepts(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; .ci/run installs it)");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), text.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !said.contains("error while linting") && !said.contains("parse error"),
        "promtool: {said}"
    );
    // Lint problems are reported one per line as `name: problem`; none is expected.
    assert!(out.status.success(), "promtool: {said}");
}

#[test]
fn metrics_count_requests_and_report_each_accounts_state() {
    let server = Server::demo();
    for visitor in ["m-1", "m-2", "m-3"] {
        let resp = server.serverside(json!({"visitorId": visitor, "events": [
            {"name": "product_view", "data": {"id": "P00001"}}], "zones": ["PP-01"]}));
        assert_eq!(resp.status, 200, "{}", resp.body);
    }
    let bad = server.serverside(json!({"visitorId": 7}));
    assert_eq!(bad.status, 400, "{}", bad.body);
    let denied = server.serverside(json!({"secretKey": "wrong"}));
    assert_eq!(denied.status, 403, "{}", denied.body);
    let delta = server.post_json(
        "/api/delta",
        &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
            "Products": [records::product("METRIC-1", "9.99 GBP")]}),
    );
    assert_eq!(delta.status, 200, "{}", delta.body);
    let account = [("account", DEMO_KEY)];
    // The delta is applied by the account's worker: wait for it to be counted.
    let metrics = wait_for(
        "the applied delta in /metrics",
        Duration::from_secs(240),
        || {
            let metrics = scrape(&server.get("/metrics"));
            let applied = value(
                &metrics,
                "vitrine_deltas_total",
                &[("account", DEMO_KEY), ("outcome", "applied")],
            );
            (applied == Some(1.0)).then_some(metrics)
        },
    );
    let served = |status: &str| {
        value(
            &metrics,
            "vitrine_http_requests_total",
            &[("endpoint", "/api/serverside"), ("status", status)],
        )
    };
    assert_eq!(served("200"), Some(3.0));
    assert_eq!(served("400"), Some(1.0));
    assert_eq!(served("403"), Some(1.0));
    assert_eq!(
        value(
            &metrics,
            "vitrine_http_request_duration_seconds_count",
            &[("endpoint", "/api/serverside")]
        )
        .or_else(|| value(
            &metrics,
            "vitrine_http_request_duration_seconds",
            &[("endpoint", "/api/serverside")]
        )),
        Some(5.0)
    );
    assert_eq!(value(&metrics, "vitrine_visitors", &account), Some(3.0));
    assert!(value(&metrics, "vitrine_products", &account).unwrap() > 1000.0);
    // The delta is in the overlay, unless a periodic compaction (a loaded machine
    // can take the demo past its interval) folded it into a new catalogue snapshot.
    let overlay = value(&metrics, "vitrine_overlay_changes", &account);
    let compacted = value(
        &metrics,
        "vitrine_snapshot_write_duration_seconds_count",
        &[("account", DEMO_KEY), ("kind", "catalogue")],
    )
    .unwrap_or(0.0);
    assert!(
        overlay == Some(1.0) || (overlay == Some(0.0) && compacted >= 1.0),
        "overlay {overlay:?}, catalogue snapshots {compacted}"
    );
    assert_eq!(
        value(
            &metrics,
            "vitrine_deltas_total",
            &[("account", DEMO_KEY), ("outcome", "failed")]
        ),
        Some(0.0)
    );
    assert_eq!(
        value(&metrics, "vitrine_deltas_pending", &account),
        Some(0.0)
    );
    // Three logged requests and a delta, each a record of the log.
    assert!(value(&metrics, "vitrine_wal_records_total", &account).unwrap() >= 4.0);
    assert!(value(&metrics, "vitrine_wal_bytes", &account).unwrap() > 0.0);
    // The delta was fsynced before its 200.
    assert!(value(&metrics, "vitrine_wal_fsyncs_total", &account).unwrap() >= 1.0);
    assert!(value(&metrics, "process_resident_memory_bytes", &[]).unwrap() > 1e6);
    for family in [
        "vitrine_wal_fsync_duration_seconds",
        "vitrine_model_rebuild_duration_seconds",
        "vitrine_snapshot_write_duration_seconds",
        "vitrine_feed_stage_duration_seconds",
        "vitrine_feed_runs_total",
        "vitrine_snapshot_bytes",
        "vitrine_sessions",
        "vitrine_orders_known",
        "vitrine_model_changes_pending",
    ] {
        assert!(
            metrics.docs.contains_key(family),
            "{family} is not described in the scrape"
        );
    }
    promtool_accepts(&server.get("/metrics").body);
}

#[test]
fn metrics_can_have_their_own_socket_and_logs_can_be_json() {
    let config = ConfigToml::new(
        "metrics_listen = \"127.0.0.1:0\"\n[feeds]\nallow_private_addresses = true",
    )
    .account(AccountToml::new(
        DEMO_KEY,
        DEMO_SECRET,
        CatalogueStart::Demo,
    ))
    .to_toml();
    let server = Server::with_env(&config, &[("VITRINE_LOG_FORMAT", "json")]);
    let metrics_addr = wait_for(
        "the metrics address in the log",
        Duration::from_secs(240),
        || {
            server.log().lines().find_map(|line| {
                let entry: Value = serde_json::from_str(line).ok()?;
                let message = entry["message"].as_str()?;
                message
                    .strip_prefix("metrics listening on http://")?
                    .strip_suffix("/metrics")?
                    .parse::<std::net::SocketAddr>()
                    .ok()
            })
        },
    );
    // Not on the main socket any more, and only /metrics and /healthz on its own.
    assert_eq!(server.get("/metrics").status, 404);
    let metrics = scrape(&request(metrics_addr, "GET", "/metrics", b"", &[]));
    assert!(value(&metrics, "vitrine_visitors", &[("account", DEMO_KEY)]).is_some());
    assert_eq!(
        request(metrics_addr, "GET", "/healthz", b"", &[]).status,
        200
    );
    let elsewhere = request(metrics_addr, "POST", "/api/serverside", b"{}", &[]);
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.body);
    // A delta that fails and a feed submission: their lines carry account and token.
    let delta = server.post_json(
        "/api/delta",
        &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
            "DeleteAccountPrices": [{"AccountId": "acc", "Id": "no-such-product"}]}),
    );
    assert_eq!(delta.status, 200, "{}", delta.body);
    let delta_token = delta.json()["Token"].as_str().unwrap().to_owned();
    let feed = server.post_json(
        "/api/productfeed",
        &json!({"appKey": DEMO_KEY, "secretKey": DEMO_SECRET, "url": "http://127.0.0.1:9/f.json"}),
    );
    assert_eq!(feed.status, 200, "{}", feed.body);
    let feed_token = feed.header("x-feed-token").unwrap().to_owned();
    let logged = |message: &str, token: &str| {
        server
            .log()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["message"] == message && e["token"] == token)
    };
    let failed = wait_for(
        "the failed delta in the log",
        Duration::from_secs(240),
        || logged("delta failed", &delta_token),
    );
    assert_eq!(failed["account"], DEMO_KEY);
    assert_eq!(failed["level"], "WARN");
    assert!(
        failed["reason"]
            .as_str()
            .unwrap()
            .contains("no-such-product"),
        "{failed}"
    );
    let submitted = logged("feed submitted", &feed_token).expect("the feed submission in the log");
    assert_eq!(submitted["account"], DEMO_KEY);
    // Every line of the log is a JSON object with a level and a message; the account's
    // lines carry the account as a field.
    let log = server.log();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let entry: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a log line is not JSON ({e}): {line}"));
        assert!(
            entry["level"].is_string() && entry["message"].is_string(),
            "{line}"
        );
    }
    assert!(
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|e| e["message"] == "account ready" && e["account"] == DEMO_KEY),
        "{log}"
    );
}

/// The log writer asks for the highest scheduling priority: `/metrics` says whether it
/// got it, and root always does.
#[test]
fn the_log_writers_priority_is_reported() {
    let server = Server::demo();
    let scraped = scrape(&server.get("/metrics"));
    let raised = value(
        &scraped,
        "vitrine_wal_writer_priority_raised",
        &[("account", DEMO_KEY)],
    )
    .expect("the gauge");
    assert!(raised == 0.0 || raised == 1.0, "{raised}");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0");
    if root {
        // Set by the writer thread as it starts.
        wait_for(
            "the writer's priority raised, as root",
            Duration::from_secs(30),
            || {
                let scrape = scrape(&server.get("/metrics"));
                let raised = value(
                    &scrape,
                    "vitrine_wal_writer_priority_raised",
                    &[("account", DEMO_KEY)],
                );
                (raised == Some(1.0)).then_some(())
            },
        );
    }
}
