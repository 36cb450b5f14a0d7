//! Configuration in force: reloads (`vitrine reload`, `vitrine check-config`) that keep
//! connections and state, per-endpoint rate limits answering 429 in each endpoint's
//! shape, and the cap on connections.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ZoneToml};

use crate::common::{DEMO_KEY, DEMO_SECRET, Resp, Server, wait_for};

use crate::operations::{scrape, value};

/// A configuration of accounts `(key, secret, zone count)`, each with the demo catalogue
/// and a `recently_viewed` zone `RV` and a `trending` zone `TOP` of `count` items.
fn accounts_config(preamble: &str, accounts: &[(&str, &str, usize)]) -> String {
    accounts
        .iter()
        .fold(ConfigToml::new(preamble), |config, (key, secret, count)| {
            config.account(
                AccountToml::new(key, secret, CatalogueStart::Demo)
                    .zone(ZoneToml::new("RV", "recently_viewed", 5))
                    .zone(ZoneToml::new("TOP", "trending", *count)),
            )
        })
        .to_toml()
}

/// `vitrine` with `args`: (exit code, stdout, stderr).
pub(crate) fn vitrine(args: &[&str]) -> (i32, String, String) {
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
    // So is where the threads run.
    let split = accounts_config(
        "cpu_layout = \"split\"",
        &[("shop-a", "rotated-a", 4), ("shop-c", "secret-c", 3)],
    );
    std::fs::write(&config_path, &split).unwrap();
    let (code, _, err) = vitrine(&["reload", "--data-dir", data_arg]);
    assert_eq!(code, 1);
    assert_eq!(err.trim(), "error: only a restart can change cpu_layout");
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
    let limited = AccountToml::new("limited", "limited-secret", CatalogueStart::Demo)
        .zone(ZoneToml::new("TOP", "trending", 2));
    let config = ConfigToml::new("")
        .account(limited)
        .account(AccountToml::new("free", "free-secret", CatalogueStart::Demo).zone(ZoneToml::new("TOP", "trending", 2)))
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
        .account(AccountToml::new(
            "shop",
            "shop-secret",
            CatalogueStart::Demo,
        ))
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
            AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo)
                .zone(ZoneToml::new("TOP", "trending", 2)),
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
