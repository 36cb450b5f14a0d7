//! Operating the server: `/metrics` in the Prometheus text format (checked by
//! Prometheus's own `promtool` and read back by a parser), its own socket
//! (`metrics_listen`), JSON logs, and configuration reloads (`vitrine reload`,
//! `vitrine check-config`).

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::records;

use vitrine_testkit::{AccountToml, ConfigToml, ZoneToml};

use crate::common::{DEMO_KEY, DEMO_SECRET, Resp, Server, request, wait_for};

/// The samples of a scrape.
fn scrape(resp: &Resp) -> prometheus_parse::Scrape {
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
fn value(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
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
fn promtool_accepts(text: &str) {
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
    assert_eq!(
        value(&metrics, "vitrine_overlay_changes", &account),
        Some(1.0)
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
    .account(AccountToml::new(DEMO_KEY, DEMO_SECRET, true))
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

/// A configuration of accounts `(key, secret, zone count)`, each with the demo catalogue
/// and a `recently_viewed` zone `RV` and a `trending` zone `TOP` of `count` items.
fn accounts_config(preamble: &str, accounts: &[(&str, &str, usize)]) -> String {
    accounts
        .iter()
        .fold(ConfigToml::new(preamble), |config, (key, secret, count)| {
            config.account(
                AccountToml::new(key, secret, true)
                    .zone(ZoneToml::new("RV", "recently_viewed", 5))
                    .zone(ZoneToml::new("TOP", "trending", *count)),
            )
        })
        .to_toml()
}

/// `vitrine` with `args`: (exit code, stdout, stderr).
fn vitrine(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(crate::common::binary())
        .args(args)
        .env_remove("VITRINE_DATA_DIR")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A serverside request for `key`/`secret`: the visitor views `viewed` and asks for
/// zones RV and TOP.
fn visit(server: &Server, key: &str, secret: &str, visitor: &str, viewed: &[&str]) -> Resp {
    let events: Vec<Value> = viewed
        .iter()
        .map(|id| json!({"name": "product_view", "data": {"id": id}}))
        .collect();
    server.serverside(
        json!({"appId": key, "secretKey": secret, "visitorId": visitor,
        "events": events, "zones": ["RV", "TOP"]}),
    )
}

fn items(resp: &Resp, zone: &str) -> Vec<String> {
    resp.json()["zones"][zone]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{zone} in {}", resp.body))
        .iter()
        .map(|item| item["Id"].as_str().unwrap().to_owned())
        .collect()
}

/// One request on an open connection, and its whole response.
fn exchange(stream: &mut std::net::TcpStream, body: &str) -> Resp {
    crate::common::pipeline(stream, &crate::common::serverside_request(body), 1).remove(0)
}

#[test]
fn a_reload_puts_a_new_configuration_in_force_without_dropping_connections_or_state() {
    let before = accounts_config("", &[("shop-a", "secret-a", 2), ("shop-b", "secret-b", 2)]);
    let server = Server::with_config(&before);
    let config_path = server.dir().join("vitrine.toml");
    let data = server.data_path();
    let data_arg = data.to_str().unwrap();
    // A connection opened before the reload, kept alive across it.
    let mut kept = std::net::TcpStream::connect(server.addr).unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = crate::common::serverside_body(json!({"appId": "shop-a",
        "secretKey": "secret-a", "visitorId": "kept", "zones": ["TOP"]}))
    .to_string();
    assert_eq!(exchange(&mut kept, &body).status, 200);
    let first = visit(
        &server,
        "shop-a",
        "secret-a",
        "shopper",
        &["P00001", "P00002"],
    );
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(items(&first, "TOP").len(), 2);

    // shop-a: secret rotated and its trending zone longer; shop-b removed; shop-c added.
    let after = accounts_config("", &[("shop-a", "rotated-a", 4), ("shop-c", "secret-c", 3)]);
    std::fs::write(&config_path, &after).unwrap();
    let (code, out, err) = vitrine(&["check-config", config_path.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert_eq!(out.trim(), format!("{}: ok", config_path.display()));
    let (code, out, err) = vitrine(&["reload", "--data-dir", data_arg]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.trim(),
        "configuration reloaded; accounts added: shop-c; changed: shop-a; removed: shop-b"
    );

    let old_secret = visit(&server, "shop-a", "secret-a", "shopper", &[]);
    assert_eq!(old_secret.status, 403, "{}", old_secret.body);
    let again = visit(&server, "shop-a", "rotated-a", "shopper", &[]);
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(items(&again, "TOP").len(), 4);
    // The shopper's history survived the reload.
    assert_eq!(items(&again, "RV"), ["P00002", "P00001"]);
    let gone = visit(&server, "shop-b", "secret-b", "shopper", &[]);
    assert_eq!(gone.status, 403, "{}", gone.body);
    let added = visit(&server, "shop-c", "secret-c", "shopper", &["P00003"]);
    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(items(&added, "TOP").len(), 3);
    // The connection from before the reload is still served (with the new secret).
    let rotated_body = body.replace("secret-a", "rotated-a");
    let on_kept = exchange(&mut kept, &rotated_body);
    assert_eq!(on_kept.status, 200, "{}", on_kept.body);
    assert_eq!(items(&on_kept, "TOP").len(), 4);

    // An invalid configuration is refused with the message `vitrine serve` would print,
    // and the one in force stays.
    let invalid = after.replace("count = 4", "count = 0");
    assert_ne!(invalid, after);
    std::fs::write(&config_path, &invalid).unwrap();
    let (code, _, check_err) = vitrine(&["check-config", config_path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        check_err.contains("must be between 1 and 100, got 0"),
        "{check_err}"
    );
    let (code, out, err) = vitrine(&["reload", "--data-dir", data_arg]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err, check_err);
    let still = visit(&server, "shop-a", "rotated-a", "shopper", &[]);
    assert_eq!(items(&still, "TOP").len(), 4);

    // A setting only a restart can change is refused too.
    let moved = accounts_config(
        "[durability]\nevents_fsync = \"always\"",
        &[("shop-a", "rotated-a", 4), ("shop-c", "secret-c", 3)],
    );
    std::fs::write(&config_path, &moved).unwrap();
    let (code, _, err) = vitrine(&["reload", "--data-dir", data_arg]);
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "error: only a restart can change durability.events_fsync"
    );
    assert!(
        server.log().contains("configuration reload refused"),
        "{}",
        server.log()
    );
    let served = visit(&server, "shop-c", "secret-c", "shopper", &[]);
    assert_eq!(served.status, 200, "{}", served.body);
}

#[test]
fn reload_says_when_no_server_runs_on_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = vitrine(&["reload", "--data-dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("no server is running on"), "{err}");
}

#[test]
fn rate_limits_answer_429_with_retry_after_in_each_endpoints_shape() {
    let limited = AccountToml::new("limited", "limited-secret", true)
        .zone(ZoneToml::new("TOP", "trending", 2));
    let config = ConfigToml::new("")
        .account(limited)
        .account(AccountToml::new("free", "free-secret", true).zone(ZoneToml::new("TOP", "trending", 2)))
        .to_toml()
        .replace(
            "access_key = \"limited\"",
            "access_key = \"limited\"\nrate_limits.serverside = { per_second = 1, burst = 2 }\nrate_limits.deltastatus = { per_second = 1, burst = 1 }",
        );
    let server = Server::with_config(&config);
    let serve = |key: &str, secret: &str| {
        server.serverside(json!({"appId": key, "secretKey": secret, "zones": ["TOP"]}))
    };
    // The bucket starts full: two at once, then a refusal (well within the second the
    // next token takes).
    assert_eq!(serve("limited", "limited-secret").status, 200);
    assert_eq!(serve("limited", "limited-secret").status, 200);
    let refused = (0..50)
        .map(|_| serve("limited", "limited-secret"))
        .find(|resp| resp.status != 200)
        .expect("a request beyond the burst is refused");
    assert_eq!(refused.status, 429, "{}", refused.body);
    let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    assert_eq!(
        refused.json(),
        json!({"errors": [format!("rate limit of 1 requests per second on /api/serverside exceeded for this account; retry after {retry} s")]})
    );
    // Another account, and another endpoint of the same account, are not limited by it.
    assert_eq!(serve("free", "free-secret").status, 200);
    let status = |key: &str, secret: &str| {
        server.post_json(
            "/api/deltastatus",
            &json!({"AppKey": key, "SecretKey": secret, "Tokens": ["t"]}),
        )
    };
    assert_eq!(status("limited", "limited-secret").status, 200);
    let second = status("limited", "limited-secret");
    assert_eq!(second.status, 429, "{}", second.body);
    assert!(
        second.json()["Error"]
            .as_str()
            .unwrap()
            .contains("/api/deltastatus")
    );
    assert!(second.header("retry-after").is_some());
    // A wrong secret is refused as before, not counted against the limit.
    assert_eq!(serve("limited", "wrong-secret").status, 403);
    // The bucket refills.
    wait_for(
        "the rate limit to let a request through",
        Duration::from_secs(60),
        || (serve("limited", "limited-secret").status == 200).then_some(()),
    );
    let metrics = scrape(&server.get("/metrics"));
    assert!(
        value(
            &metrics,
            "vitrine_rate_limited_total",
            &[("account", "limited"), ("endpoint", "/api/serverside")]
        )
        .unwrap()
            >= 1.0
    );
    assert_eq!(
        value(
            &metrics,
            "vitrine_rate_limited_total",
            &[("account", "limited"), ("endpoint", "/api/deltastatus")]
        ),
        Some(1.0)
    );
}

#[test]
fn a_rate_limit_naming_no_endpoint_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let config = ConfigToml::new("")
        .account(AccountToml::new("shop", "shop-secret", true))
        .to_toml()
        .replace(
            "access_key = \"shop\"",
            "access_key = \"shop\"\nrate_limits.servreside = { per_second = 5 }",
        );
    std::fs::write(&path, config).unwrap();
    let (code, _, err) = vitrine(&["check-config", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("accounts[0].rate_limits.servreside: unknown endpoint; expected one of serverside, productfeed,"),
        "{err}"
    );
}

#[test]
fn connections_beyond_the_cap_wait_until_one_closes() {
    use std::io::Read;
    let config = ConfigToml::new("[limits]\nmax_connections = 2")
        .account(
            AccountToml::new(DEMO_KEY, DEMO_SECRET, true).zone(ZoneToml::new("TOP", "trending", 2)),
        )
        .to_toml();
    let server = Server::with_config(&config);
    let body = crate::common::serverside_body(json!({"zones": ["TOP"]})).to_string();
    let open = || {
        let stream = std::net::TcpStream::connect(server.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        stream
    };
    let mut first = open();
    let mut second = open();
    assert_eq!(exchange(&mut first, &body).status, 200);
    assert_eq!(exchange(&mut second, &body).status, 200);
    // A third connection is accepted by the kernel but not served while two are open.
    let mut third = open();
    std::io::Write::write_all(
        &mut third,
        format!(
            "POST /api/serverside HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    wait_for(
        "the connection cap in the log",
        Duration::from_secs(120),
        || {
            server
                .log()
                .contains("connection limit reached")
                .then_some(())
        },
    );
    third.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let early = third.read(&mut byte);
    assert!(
        matches!(&early, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the third connection was answered while two were open: {early:?}"
    );
    third.set_nonblocking(false).unwrap();
    // The open ones go on being served; once one closes, the third is served.
    assert_eq!(exchange(&mut first, &body).status, 200);
    drop(second);
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let answer = loop {
        if let Some((response, _)) = vitrine_testkit::client::parse_response(&raw) {
            break Resp::from(response);
        }
        let n = third.read(&mut buf).unwrap();
        assert!(n > 0, "the third connection closed");
        raw.extend_from_slice(&buf[..n]);
    };
    assert_eq!(answer.status, 200, "{}", answer.body);
}

/// An order event with id `order_id`.
fn order_event(order_id: &str) -> Value {
    json!({"name": "order", "data": {"orderid": order_id, "email": "buyer@example.com",
        "items": [{"id": "P00003", "qty": 1, "unitprice": 10.5}]}})
}

#[test]
fn a_backup_taken_under_load_restores_every_delta_and_order_acknowledged_before_it() {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    // Compactions every 20 changes: snapshots are written and the log cut while the
    // backup copies.
    let config = ConfigToml::new("[deltas]\ncompact_after_changes = 20")
        .account(
            AccountToml::new(DEMO_KEY, DEMO_SECRET, true).zone(ZoneToml::new("TOP", "trending", 2)),
        )
        .to_toml();
    let server = Server::with_config(&config);
    let deltas: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let orders: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let backup_dir = tempfile::tempdir().unwrap();
    let out = backup_dir.path().join("backup");
    let (acked_deltas, acked_orders) = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let delta = server.post_json(
                    "/api/delta",
                    &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
                        "Products": [records::product(&format!("B-{i}"), "9.99 GBP")]}),
                );
                assert_eq!(delta.status, 200, "{}", delta.body);
                let token = delta.json()["Token"].as_str().unwrap().to_owned();
                deltas.lock().unwrap().push(token);
                let order_id = format!("order-{i}");
                let served = server.serverside(json!({"visitorId": format!("buyer-{i}"),
                    "events": [order_event(&order_id)]}));
                assert_eq!(served.status, 200, "{}", served.body);
                orders.lock().unwrap().push(order_id);
            }
        });
        // Enough load, and a compaction already (a catalogue snapshot to copy and a log
        // cut behind it; more follow while the backup copies).
        wait_for(
            "deltas and a compaction before the backup",
            Duration::from_secs(240),
            || {
                let compacted = server.log().contains("overlay compacted");
                (compacted && deltas.lock().unwrap().len() >= 40).then_some(())
            },
        );
        // Everything acknowledged up to here must be in the backup.
        let acked = (
            deltas.lock().unwrap().clone(),
            orders.lock().unwrap().clone(),
        );
        let (code, out_text, err) = vitrine(&[
            "backup",
            "--data-dir",
            server.data_path().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out_text}{err}");
        assert!(out_text.starts_with("backed up "), "{out_text}");
        // The load goes on for a while after the backup, then stops.
        let after = deltas.lock().unwrap().len() + 10;
        wait_for("deltas after the backup", Duration::from_secs(240), || {
            (deltas.lock().unwrap().len() >= after).then_some(())
        });
        stop.store(true, Ordering::Relaxed);
        acked
    });
    assert!(
        server.log().contains("logs flushed on request"),
        "{}",
        server.log()
    );
    drop(server);

    // Restored into a new directory, a server has all of it.
    let dir = tempfile::tempdir().unwrap();
    let restored = dir.path().join("data");
    let (code, out_text, err) = vitrine(&[
        "restore",
        out.to_str().unwrap(),
        "--data-dir",
        restored.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out_text}{err}");
    assert!(out_text.starts_with("restored "), "{out_text}");
    let server = Server::start_in(dir, Some(&config));
    // In chunks within `max_tokens` (a slow machine acknowledges many before the backup).
    for tokens in acked_deltas.chunks(500) {
        let statuses = server.post_json(
            "/api/deltastatus",
            &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": tokens}),
        );
        assert_eq!(statuses.status, 200, "{}", statuses.body);
        for status in statuses.json().as_array().unwrap() {
            assert_eq!(status["Status"], 1, "{status}");
        }
    }
    for order_id in &acked_orders {
        let again = server.serverside(json!({"events": [order_event(order_id)]}));
        let errors = again.json()["errors"].clone();
        assert_eq!(
            errors,
            json!([format!(
                "events[0].data.orderid: order {order_id:?} was already recorded; it was not counted again"
            )]),
            "order {order_id} is missing from the restored server"
        );
    }
    // A backup into a directory that holds something is refused.
    let (code, _, err) = vitrine(&[
        "restore",
        out.to_str().unwrap(),
        "--data-dir",
        server.data_path().to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("exists and is not empty"), "{err}");
}

#[test]
fn a_log_writer_behind_answers_503_with_retry_after_before_applying_anything() {
    // A backlog of one record: the writer lingers a millisecond after each batch, so a
    // burst of requests on one connection finds it behind (as a slow disk would).
    let config =
        ConfigToml::new("[limits]\nmax_log_backlog = 1\n[durability]\nevents_fsync = \"never\"")
            .account(
                AccountToml::new(DEMO_KEY, DEMO_SECRET, true)
                    .zone(ZoneToml::new("TOP", "trending", 2)),
            )
            .to_toml();
    let server = Server::with_config(&config);
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let burst: Vec<u8> = (0..200)
        .flat_map(|i| {
            let body = crate::common::serverside_body(json!({"visitorId": format!("burst-{i}"),
                "events": [{"name": "product_view", "data": {"id": "P00001"}}]}))
            .to_string();
            crate::common::serverside_request(&body)
        })
        .collect();
    let answers = crate::common::pipeline(&mut stream, &burst, 200);
    let refused: Vec<&Resp> = answers.iter().filter(|r| r.status == 503).collect();
    println!("{} of 200 refused", refused.len());
    assert!(
        !refused.is_empty(),
        "no request found the log writer behind"
    );
    assert!(answers.iter().all(|r| r.status == 200 || r.status == 503));
    let first = refused[0];
    assert_eq!(first.header("retry-after"), Some("1"));
    let message = first.json()["errors"][0].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("the events could not be logged: the log writer is behind: "),
        "{message}"
    );
    // A refused request applied nothing: its visitor was never recorded.
    let metrics = server.get("/metrics").body;
    let served: f64 = metrics
        .lines()
        .find(|l| l.starts_with("vitrine_visitors{"))
        .and_then(|l| l.rsplit_once(' ')?.1.parse().ok())
        .unwrap();
    assert_eq!(
        served as usize,
        answers.iter().filter(|r| r.status == 200).count()
    );
}
