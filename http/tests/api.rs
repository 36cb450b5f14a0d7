//! The HTTP contract, tested against the real `vitrine` binary on `127.0.0.1:0`:
//! every row of the spec's Errors table, every authentication rule, every required-field
//! rule, and the success shapes of all six endpoints.

#![expect(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    reason = "a test fails loudly where its setup does not hold"
)]

#[path = "api/analytics.rs"]
mod analytics;
#[path = "api/cluster.rs"]
mod cluster;
mod common;
#[path = "api/crash.rs"]
mod crash;
#[path = "api/deltas.rs"]
mod deltas;
#[path = "api/feeds.rs"]
mod feeds;
#[path = "api/formats.rs"]
mod formats;
#[path = "api/hygiene.rs"]
mod hygiene;
#[path = "api/memory.rs"]
mod memory;
#[path = "api/openapi.rs"]
mod openapi;
#[path = "api/operations.rs"]
mod operations;
#[path = "api/plugins.rs"]
mod plugins;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{
    DEMO_KEY, DEMO_SECRET, Resp, Server, parse_response, request, serverside_body, wait_for,
};
use serde_json::{Value, json};
use vitrine_testkit::records;
use vitrine_testkit::server::READY_TIMEOUT;

const CONFIG: &str = r#"
region = "eu"
[limits]
max_body_bytes = 16384
max_delta_bytes = 65536
max_events = 5
max_zones = 3
max_tokens = 4

[[accounts]]
access_key = "shop-eu"
secret_key = "shop-eu-secret"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "HP-01"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 4
  [[accounts.zones]]
  id = "RV-01"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 5
  [[accounts.zones]]
  id = "HOME-ONLY"
  title = "Homepage only"
  type = "recommender-product"
  strategy = "trending"
  page_types = ["homepage"]

[[accounts]]
access_key = "shop-us"
secret_key = "shop-us-secret"
region = "us"
default_currency = "USD"

[[accounts]]
access_key = "shop-two"
secret_key = "shop-two-secret"
default_currency = "GBP"
"#;

fn configured() -> Server {
    Server::with_config(CONFIG)
}

fn delta_body(parts: Value) -> Value {
    let mut body = json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET});
    common::merge(&mut body, parts);
    body
}

fn product(id: &str, prices: &[&str]) -> Value {
    let extra =
        json!({"Image": format!("//img/{id}.jpg"), "Prices": prices, "Categories": ["cat-01"]});
    records::with(records::product(id, ""), extra)
}

fn submit_delta(server: &Server, parts: Value) -> String {
    let resp = server.post_json("/api/delta", &delta_body(parts));
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    assert_eq!(json.as_object().unwrap().len(), 1, "only Token in {json}");
    json["Token"]
        .as_str()
        .expect("Token is a string")
        .to_owned()
}

fn delta_status(server: &Server, tokens: &[&str]) -> Vec<Value> {
    let resp = server.post_json(
        "/api/deltastatus",
        &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": tokens}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
        .as_array()
        .expect("array of status items")
        .clone()
}

fn wait_delta(server: &Server, token: &str) -> Value {
    wait_for("delta status", Duration::from_secs(240), || {
        let item = delta_status(server, &[token]).remove(0);
        (item["Status"] != 0).then_some(item)
    })
}

fn zone_ids(resp: &Resp, zone: &str) -> Vec<String> {
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["zones"][zone]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("zone {zone} has items: {}", resp.body))
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect()
}

// ---------------------------------------------------------------- operator interface

#[test]
fn ready_line_healthz_and_clean_sigterm() {
    let mut server = Server::demo();
    let resp = server.get("/healthz");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json(), json!({"status": "ok"}));
    // SIGTERM stops it cleanly (exit status 0).
    let pid = server.child().id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = wait_for("exit after SIGTERM", Duration::from_secs(240), || {
        server.child().try_wait().unwrap()
    });
    assert!(
        exit.success(),
        "exit status {exit:?}; log: {}",
        server.log()
    );
    assert!(
        server.log().contains("SIGTERM received"),
        "{}",
        server.log()
    );
}

#[test]
fn sigint_stops_the_server_too() {
    let mut server = Server::demo();
    let pid = server.child().id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let exit = wait_for("exit after SIGINT", Duration::from_secs(240), || {
        server.child().try_wait().unwrap()
    });
    assert!(exit.success(), "exit status {exit:?}");
}

#[test]
fn help_lists_the_serve_options() {
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in ["--config", "--listen", "--data-dir"] {
        assert!(text.contains(flag), "{flag} missing from {text}");
    }
}

#[test]
fn config_errors_name_file_and_key_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        CONFIG.replace("strategy = \"recently_viewed\"", "strategy = \"mystery\""),
    )
    .unwrap();
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml: accounts[0].zones[1].strategy: unknown strategy \"mystery\""),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no ready line on error");

    let out = std::process::Command::new(common::binary())
        .args(["serve", "--config"])
        .arg(dir.path().join("missing.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.toml: cannot read the file"));
}

#[test]
fn environment_overrides_the_listen_address() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(common::binary())
        .args(["serve", "--data-dir"])
        .arg(dir.path().join("data"))
        .env("VITRINE_LISTEN", "127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr = vitrine_testkit::server::read_ready_line(&mut child, READY_TIMEOUT).unwrap();
    assert_ne!(addr.port(), 7480);
    assert_eq!(request(addr, "GET", "/healthz", b"", &[]).status, 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_locked_data_directory_refuses_a_second_server() {
    let server = Server::demo();
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(server.data_path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use by another process"));
}

#[test]
fn unknown_path_is_404_and_wrong_method_is_405_with_json_bodies() {
    let server = Server::demo();
    let resp = server.post("/api/nothing", "{}");
    resp.assert_error(404, "no endpoint at /api/nothing");
    let resp = server.get("/api/delta");
    resp.assert_error(405, "method GET is not allowed on /api/delta; use POST");
    assert_eq!(resp.header("allow"), Some("POST"));
    // The serverside shape holds for its routing errors too.
    server.get("/api/serverside").assert_errors(405, "use POST");
    let resp = server.post("/healthz", "");
    assert_eq!(resp.status, 405);
    assert_eq!(resp.header("allow"), Some("GET"));
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = Server::demo();
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = serverside_body(json!({"zones": ["HP-01"]})).to_string();
    let one = format!(
        "POST /api/serverside HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(format!("{one}{one}").as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let mut seen = 0;
    while seen < 2 {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed after {seen} responses");
        raw.extend_from_slice(&buf[..n]);
        seen = 0;
        let mut offset = 0;
        while raw[offset..].windows(4).any(|w| w == b"\r\n\r\n") {
            let head_end = offset
                + raw[offset..]
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .unwrap();
            let head = String::from_utf8_lossy(&raw[offset..head_end]).to_ascii_lowercase();
            let len: usize = head
                .split("content-length:")
                .nth(1)
                .unwrap()
                .split("\r\n")
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            if raw.len() < head_end + 4 + len {
                break;
            }
            let (resp, used) = parse_response(&raw[offset..]);
            assert_eq!(resp.status, 200);
            offset += used;
            seen += 1;
        }
    }
}

// ---------------------------------------------------------------- /api/serverside

#[test]
fn serverside_200_carries_ids_errors_and_zones() {
    let server = Server::demo();
    let resp = server.serverside(json!({
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
        "zones": ["HP-01"]
    }));
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let json = resp.json();
    // Fields in the contract's order.
    let positions: Vec<usize> = ["\"visitorId\"", "\"sessionId\"", "\"errors\"", "\"zones\""]
        .iter()
        .map(|k| resp.body.find(k).unwrap_or_else(|| panic!("{k} missing")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{}", resp.body);
    assert_eq!(json.as_object().unwrap().len(), 4);
    assert_eq!(json["visitorId"].as_str().unwrap().len(), 32);
    assert_eq!(json["sessionId"].as_str().unwrap().len(), 32);
    assert_eq!(json["errors"], json!([]));
    let zone = &json["zones"]["HP-01"];
    assert_eq!(zone["title"], "Trending now");
    assert_eq!(zone["type"], "recommender-product");
    let items = zone["items"].as_array().unwrap();
    assert_eq!(items.len(), 8);
    for field in [
        "Id",
        "Sku",
        "Title",
        "Description",
        "Link",
        "Image",
        "AllImages",
        "Price",
        "DisplayPrice",
        "CurrencySymbol",
        "Categories",
        "Brand",
        "SearchTags",
        "OnOffer",
        "NewArrival",
    ] {
        assert!(
            items.iter().all(|i| i.get(field).is_some()),
            "{field} missing in {zone}"
        );
    }
    assert!(server.log().contains("account ready"));
}

#[test]
fn every_demo_zone_returns_items_at_once() {
    let server = Server::demo();
    let zones = [
        "HP-01", "PP-01", "PP-02", "BP-01", "OC-01", "CP-01", "SR-01",
    ];
    let resp = server.serverside(json!({
        "events": [{"name": "page_view", "data": {"page_type": "product_page", "product_id": "P00010"}}],
        "zones": zones
    }));
    for zone in zones {
        assert!(
            !zone_ids(&resp, zone).is_empty(),
            "{zone} is empty: {}",
            resp.body
        );
    }
}

#[test]
fn sale_items_carry_was_price_saving_and_display_strings() {
    let server = Server::demo();
    let resp = server.serverside(json!({"zones": ["SR-01"]}));
    let json = resp.json();
    let sale = json["zones"]["SR-01"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i.get("WasPrice").is_some())
        .cloned()
        .expect("an item on sale");
    let price = sale["Price"].as_f64().unwrap();
    let was = sale["WasPrice"].as_f64().unwrap();
    let saving = sale["SavingPrice"].as_f64().unwrap();
    assert!(price < was);
    assert!((was - price - saving).abs() < 0.005);
    assert_eq!(sale["DisplayPrice"], format!("£{price:.2}"));
    assert_eq!(sale["DisplayWasPrice"], format!("£{was:.2}"));
    assert_eq!(sale["SavingDisplayPrice"], format!("£{saving:.2}"));
    assert_eq!(sale["CurrencySymbol"], "£");
    let percent = ((was - price) / was * 100.0).round();
    assert_eq!(sale["SavingPercent"], format!("{percent}%"));
    assert_eq!(sale["OnOffer"], true);
}

#[test]
fn visitor_id_is_kept_and_session_is_kept_while_active() {
    let server = Server::demo();
    let first = server.serverside(json!({})).json();
    let visitor = first["visitorId"].as_str().unwrap();
    let session = first["sessionId"].as_str().unwrap();
    let second = server
        .serverside(json!({"visitorId": visitor, "sessionId": session}))
        .json();
    assert_eq!(second["visitorId"], visitor);
    assert_eq!(second["sessionId"], session);
    // A session id the server never issued (or one that expired) is replaced.
    let third = server
        .serverside(json!({"visitorId": visitor, "sessionId": "made-up-session"}))
        .json();
    assert_eq!(third["visitorId"], visitor);
    assert_ne!(third["sessionId"], "made-up-session");
    // An empty id counts as absent.
    let fourth = server.serverside(json!({"visitorId": ""})).json();
    assert_eq!(fourth["visitorId"].as_str().unwrap().len(), 32);
}

#[test]
fn duplicate_order_ids_and_unknown_zones_are_reported_in_a_200() {
    let server = Server::demo();
    let order = json!({"name": "order", "data": {"orderid": "ORD-1", "email": "a@example.com",
        "items": [{"id": "P00003", "qty": 1, "unitprice": 10.5}]}});
    let resp = server.serverside(json!({"events": [order.clone()], "zones": ["HP-01"]}));
    assert_eq!(resp.json()["errors"], json!([]));
    let resp = server.serverside(json!({"events": [order], "zones": ["HP-01", "NOPE-9"]}));
    assert_eq!(resp.status, 200);
    let json = resp.json();
    assert_eq!(
        json["errors"],
        json!([
            "events[0].data.orderid: order \"ORD-1\" was already recorded; it was not counted again",
            "zones[1]: unknown zone \"NOPE-9\""
        ])
    );
    assert!(json["zones"].get("HP-01").is_some());
    assert!(json["zones"].get("NOPE-9").is_none());
}

#[test]
fn events_are_applied_before_zones_are_filled() {
    let server = configured();
    let body = |extra: Value| {
        let mut b = serverside_body(json!({"appId": "shop-eu", "secretKey": "shop-eu-secret"}));
        common::merge(&mut b, extra);
        b
    };
    let resp = server.post_json("/api/serverside", &body(json!({
        "visitorId": "visitor-rv",
        "events": [{"name": "product_view", "data": {"id": "P00020"}}, {"name": "product_view", "data": {"id": "P00021"}}],
        "zones": ["RV-01"]
    })));
    // The page's own product (the last viewed) is left out; the earlier one shows.
    assert_eq!(zone_ids(&resp, "RV-01"), ["P00020"]);
    let resp = server.post_json(
        "/api/serverside",
        &body(json!({
            "visitorId": "visitor-rv",
            "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
            "zones": ["RV-01", "HOME-ONLY"]
        })),
    );
    assert_eq!(zone_ids(&resp, "RV-01"), ["P00021", "P00020"]);
    assert!(!zone_ids(&resp, "HOME-ONLY").is_empty());
    // A zone restricted to other page types is reported, not filled.
    let resp = server.post_json(
        "/api/serverside",
        &body(json!({
            "events": [{"name": "page_view", "data": {"page_type": "basket_page"}}],
            "zones": ["HOME-ONLY"]
        })),
    );
    assert_eq!(
        resp.json()["errors"],
        json!(["zones[0]: zone \"HOME-ONLY\" is not shown on basket_page pages"])
    );
}

#[test]
fn currency_filters_products_to_those_priced_in_it() {
    let server = Server::demo();
    // P90001 is priced only in USD, P90002 only in GBP; both made the most popular.
    let token = submit_delta(
        &server,
        json!({"Products": [product("P90001", &["5.00 USD"]), product("P90002", &["5.00 GBP"])]}),
    );
    assert_eq!(wait_delta(&server, &token)["Status"], 1);
    let views: Vec<Value> = (0..5)
        .flat_map(|_| {
            [
                json!({"name": "product_view", "data": {"id": "P90001"}}),
                json!({"name": "product_view", "data": {"id": "P90002"}}),
            ]
        })
        .collect();
    server.serverside(json!({"events": views}));
    // Rankings refresh at most once a second.
    let usd = wait_for(
        "trending to include P90001",
        Duration::from_secs(240),
        || {
            let ids = zone_ids(
                &server.serverside(json!({"currency": "USD", "zones": ["HP-01"]})),
                "HP-01",
            );
            ids.contains(&"P90001".to_owned()).then_some(ids)
        },
    );
    assert!(!usd.contains(&"P90002".to_owned()));
    let resp = server.serverside(json!({"currency": "USD", "zones": ["HP-01"]}));
    assert!(
        resp.json()["zones"]["HP-01"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["CurrencySymbol"] == "$")
    );
    let gbp = zone_ids(&server.serverside(json!({"zones": ["HP-01"]})), "HP-01");
    assert!(
        gbp.contains(&"P90002".to_owned()) && !gbp.contains(&"P90001".to_owned()),
        "{gbp:?}"
    );
}

#[test]
fn serverside_400_lists_every_problem_with_its_path() {
    let server = Server::demo();
    let resp = server.post_json("/api/serverside", &json!({
        "appId": DEMO_KEY, "secretKey": DEMO_SECRET,
        "currentUrl": "not a url", "userAgent": 5, "ip": "300.1.1.1",
        "currency": "gbp", "visitorId": "x".repeat(129), "sessionId": "has space",
        "events": [
            {"name": "page_view", "data": {"page_type": "landing"}},
            {"name": "order", "data": {"orderid": "1", "items": [{"id": "A", "qty": "two", "unitprice": 1}], "dob": "01/02/1990"}},
            {"name": "teleport"},
            "not an object"
        ],
        "zones": [7]
    }));
    let errors = resp.assert_errors(400, "currentUrl: expected an absolute http or https URL");
    for expected in [
        "userAgent: expected a string, got a number",
        "ip: expected an IPv4 or IPv6 address, got \"300.1.1.1\"",
        "currency: expected a three-letter upper-case ISO 4217 code such as GBP, got \"gbp\"",
        "visitorId: must be at most 128 characters, got 129",
        "sessionId: must be printable ASCII without spaces",
        "events[0].data.page_type: unknown page type \"landing\"",
        "events[1].data.items[0].qty: expected a number",
        "events[1].data.userid: one of userid, email or accid is required",
        "events[1].data.dob: expected a date as YYYY-MM-DD, got \"01/02/1990\"",
        "events[2].name: unknown event \"teleport\"",
        "events[3]: expected an object, got a string",
        "zones[0]: expected a string, got a number",
    ] {
        assert!(
            errors
                .iter()
                .any(|e| e == expected || e.starts_with(expected)),
            "missing {expected:?} in {errors:#?}"
        );
    }
}

#[test]
fn serverside_400_records_nothing() {
    let server = Server::demo();
    let bad = server.serverside(json!({
        "visitorId": "v-atomic",
        "events": [
            {"name": "order", "data": {"orderid": "ATOMIC-1", "userid": "u", "items": [{"id": "P00001", "qty": 1, "unitprice": 1}]}},
            {"name": "product_view", "data": {}}
        ]
    }));
    bad.assert_errors(400, "events[1].data.id: required");
    // The order of the rejected request was not recorded: sending it now is not a duplicate.
    let ok = server.serverside(json!({"events": [
        {"name": "order", "data": {"orderid": "ATOMIC-1", "userid": "u", "items": [{"id": "P00001", "qty": 1, "unitprice": 1}]}}
    ]}));
    assert_eq!(ok.json()["errors"], json!([]));
}

#[test]
fn serverside_required_fields_are_each_reported() {
    let server = Server::demo();
    // `ip` may be absent (the vendor's plugins leave it out of back-office calls).
    for field in ["appId", "secretKey", "currentUrl", "userAgent"] {
        let mut body = serverside_body(json!({}));
        body.as_object_mut().unwrap().remove(field);
        server
            .post_json("/api/serverside", &body)
            .assert_errors(400, &format!("{field}: required"));
    }
    let missing_all = server.post("/api/serverside", "{}");
    let errors = missing_all.assert_errors(400, "appId: required");
    assert_eq!(errors.len(), 4, "{errors:?}");
}

#[test]
fn serverside_event_data_rules() {
    let server = Server::demo();
    let cases: Vec<(Value, &str)> = vec![
        (json!({"data": {}}), "events[0].name: required"),
        (json!({"name": 3}), "events[0].name: expected a string"),
        (
            json!({"name": "page_view"}),
            "events[0].data: required for page_view",
        ),
        (
            json!({"name": "page_view", "data": {}}),
            "events[0].data.page_type: required",
        ),
        (
            json!({"name": "page_view", "data": [1]}),
            "events[0].data: expected an object",
        ),
        (
            json!({"name": "product_view", "data": {}}),
            "events[0].data.id: required",
        ),
        (
            json!({"name": "product_view", "data": {"id": ""}}),
            "events[0].data.id: must not be empty",
        ),
        (
            json!({"name": "product_view", "data": {"id": "x".repeat(300)}}),
            "events[0].data.id: must be at most 256 bytes",
        ),
        (
            json!({"name": "product_rate", "data": {"id": "P1"}}),
            "events[0].data.rating: required",
        ),
        (
            json!({"name": "product_rate", "data": {"id": "P1", "rating": "five"}}),
            "events[0].data.rating: expected a number",
        ),
        (
            json!({"name": "product_rate", "data": {"rating": 5}}),
            "events[0].data.id: required",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{}]}}),
            "events[0].data.items[0].id: required",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{"id": "P1", "unitprice": 1}]}}),
            "events[0].data.items[0].qty: required",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{"id": "P1", "qty": 1}]}}),
            "events[0].data.items[0].unitprice: required",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{"id": "P1", "qty": 0, "unitprice": 1}]}}),
            "events[0].data.items[0].qty: must be greater than 0",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{"id": "P1", "qty": 1, "unitprice": -1}]}}),
            "events[0].data.items[0].unitprice: must not be negative",
        ),
        (
            json!({"name": "set_basket", "data": {"items": "P1"}}),
            "events[0].data.items: expected an array",
        ),
        (
            json!({"name": "order", "data": {"items": [], "userid": "u"}}),
            "events[0].data.orderid: required",
        ),
        (
            json!({"name": "order", "data": {"orderid": "o", "userid": "u"}}),
            "events[0].data.items: required",
        ),
        (
            json!({"name": "order", "data": {"orderid": "o", "items": [{"id": "P1", "qty": 1, "unitprice": 1}]}}),
            "events[0].data.userid: one of userid, email or accid is required",
        ),
        (
            json!({"name": "order", "data": {"orderid": "o", "email": "nope", "items": [{"id": "P1", "qty": 1, "unitprice": 1}]}}),
            "events[0].data.email: \"nope\" is not an email address",
        ),
        (
            json!({"name": "order", "data": {"orderid": "o", "accid": "a", "dob": "1990-13-01", "items": [{"id": "P1", "qty": 1, "unitprice": 1}]}}),
            "events[0].data.dob: expected a date as YYYY-MM-DD",
        ),
        (
            json!({"name": "customer_details", "data": {"firstname": "Ann"}}),
            "events[0].data.userid: one of userid, email or accid is required",
        ),
        (
            json!({"name": "customer_details"}),
            "events[0].data: required for customer_details",
        ),
    ];
    for (event, expected) in cases {
        let resp = server.serverside(json!({"events": [event.clone()]}));
        resp.assert_errors(400, expected);
    }
    // set_basket without data clears the basket; page_view with only page_type is enough.
    let ok = server.serverside(json!({"events": [{"name": "set_basket"}, {"name": "page_view", "data": {"page_type": "other"}},
        {"name": "customer_details", "data": {"accid": "trade-account-1"}}]}));
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[test]
fn serverside_limits_on_events_zones_and_size() {
    let server = configured();
    let body = |extra: Value| {
        let mut b = serverside_body(json!({"appId": "shop-eu", "secretKey": "shop-eu-secret"}));
        common::merge(&mut b, extra);
        b
    };
    let six = vec![json!({"name": "page_view", "data": {"page_type": "homepage"}}); 6];
    server
        .post_json("/api/serverside", &body(json!({"events": six})))
        .assert_errors(400, "events: at most 5 events per request, got 6");
    server
        .post_json(
            "/api/serverside",
            &body(json!({"zones": ["a", "b", "c", "d"]})),
        )
        .assert_errors(400, "zones: at most 3 zones per request, got 4");
    let big = body(json!({"userAgent": "x".repeat(20_000)})).to_string();
    server
        .post("/api/serverside", &big)
        .assert_errors(413, "larger than the limit of 16384 bytes");
    // Without Content-Length (chunked), the limit holds while streaming.
    let chunked = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    let resp = request(
        server.addr,
        "POST",
        "/api/serverside",
        chunked.as_bytes(),
        &[("Transfer-Encoding", "chunked")],
    );
    resp.assert_errors(413, "larger than the limit");
}

#[test]
fn serverside_rejects_bodies_that_are_not_json_objects() {
    let server = Server::demo();
    server
        .post("/api/serverside", "{nope")
        .assert_errors(400, "body: invalid JSON");
    server
        .post("/api/serverside", "")
        .assert_errors(400, "body: invalid JSON");
    server
        .post("/api/serverside", "[1,2]")
        .assert_errors(400, "body: expected an object, got an array");
}

// ---------------------------------------------------------------- authentication

#[test]
fn serverside_403_for_an_unknown_access_key_or_wrong_secret() {
    let server = Server::demo();
    server
        .serverside(json!({"appId": "who-is-this"}))
        .assert_errors(403, "appId: unknown access key");
    server
        .serverside(json!({"secretKey": "wrong-secret"}))
        .assert_errors(403, "secretKey: does not match the access key");
}

#[test]
fn forget_403_for_an_unknown_access_key_or_wrong_secret() {
    let server = Server::demo();
    server
        .post_json(
            "/api/user/forget",
            &json!({"AccessKey": "nobody", "SecretKey": DEMO_SECRET, "Identifier": "a@b.c"}),
        )
        .assert_error(403, "AccessKey: unknown access key");
    server
        .post_json(
            "/api/user/forget",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": "wrong", "Identifier": "a@b.c"}),
        )
        .assert_error(403, "SecretKey: does not match the access key");
}

#[test]
fn feed_delta_and_status_endpoints_answer_400_for_bad_credentials() {
    let server = Server::demo();
    let cases = [
        (
            "/api/productfeed",
            json!({"appKey": "nobody", "secretKey": DEMO_SECRET, "url": "https://shop.example/f.json"}),
            "appKey: unknown access key",
        ),
        (
            "/api/productfeed",
            json!({"appKey": DEMO_KEY, "secretKey": "wrong", "url": "https://shop.example/f.json"}),
            "secretKey: does not match",
        ),
        (
            "/api/delta",
            json!({"AppKey": "nobody", "SecretKey": DEMO_SECRET, "DeleteProducts": ["x"]}),
            "AppKey: unknown access key",
        ),
        (
            "/api/delta",
            json!({"AppKey": DEMO_KEY, "SecretKey": "wrong", "DeleteProducts": ["x"]}),
            "SecretKey: does not match",
        ),
        (
            "/api/deltastatus",
            json!({"AppKey": "nobody", "SecretKey": DEMO_SECRET, "Tokens": ["t"]}),
            "AppKey: unknown access key",
        ),
        (
            "/api/deltastatus",
            json!({"AppKey": DEMO_KEY, "SecretKey": "wrong", "Tokens": ["t"]}),
            "SecretKey: does not match",
        ),
        (
            "/api/productfeedstatus",
            json!({"AppKey": "nobody", "Tokens": ["t"]}),
            "AppKey: unknown access key",
        ),
    ];
    for (path, body, expected) in cases {
        server.post_json(path, &body).assert_error(400, expected);
    }
}

#[test]
fn credential_field_names_are_exact_per_endpoint() {
    let server = Server::demo();
    // The names of another endpoint do not authenticate.
    server
        .post_json(
            "/api/serverside",
            &serverside_body(json!({"appId": null, "AppKey": DEMO_KEY})),
        )
        .assert_errors(400, "appId: required");
    let cases = [
        (
            "/api/productfeed",
            json!({"AppKey": DEMO_KEY, "secretKey": DEMO_SECRET, "url": "https://s.example/f"}),
            "appKey: required",
        ),
        (
            "/api/productfeed",
            json!({"appKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "url": "https://s.example/f"}),
            "secretKey: required",
        ),
        (
            "/api/delta",
            json!({"appKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "DeleteProducts": ["x"]}),
            "AppKey: required",
        ),
        (
            "/api/delta",
            json!({"AppKey": DEMO_KEY, "secretKey": DEMO_SECRET, "DeleteProducts": ["x"]}),
            "SecretKey: required",
        ),
        (
            "/api/deltastatus",
            json!({"AppKey": DEMO_KEY, "Tokens": ["t"]}),
            "SecretKey: required",
        ),
        (
            "/api/productfeedstatus",
            json!({"appKey": DEMO_KEY, "Tokens": ["t"]}),
            "AppKey: required",
        ),
        (
            "/api/user/forget",
            json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "x"}),
            "AccessKey: required",
        ),
        (
            "/api/user/forget",
            json!({"AccessKey": DEMO_KEY, "Identifier": "x"}),
            "SecretKey: required",
        ),
    ];
    for (path, body, expected) in cases {
        server.post_json(path, &body).assert_error(400, expected);
    }
}

#[test]
fn productfeedstatus_needs_no_secret_key() {
    let server = Server::demo();
    let resp = server.post_json(
        "/api/productfeedstatus",
        &json!({"AppKey": DEMO_KEY, "Tokens": ["feed_unknown"]}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
}

#[test]
fn accounts_of_another_region_are_refused_naming_the_region() {
    let server = configured();
    server
        .post_json(
            "/api/serverside",
            &serverside_body(json!({"appId": "shop-us", "secretKey": "shop-us-secret"})),
        )
        .assert_errors(
            403,
            "the account belongs to region us; this server serves region eu",
        );
    server
        .post_json(
            "/api/delta",
            &json!({"AppKey": "shop-us", "SecretKey": "shop-us-secret", "DeleteProducts": ["x"]}),
        )
        .assert_error(400, "region us");
    server
        .post_json(
            "/api/user/forget",
            &json!({"AccessKey": "shop-us", "SecretKey": "shop-us-secret", "Identifier": "x"}),
        )
        .assert_error(403, "region us");
}

// ---------------------------------------------------------------- /api/productfeed and status

#[test]
fn productfeed_200_is_text_with_a_token_and_status_reports_it() {
    let server = Server::demo();
    let resp = server.post_json(
        "/api/productfeed",
        &json!({"appKey": DEMO_KEY, "secretKey": DEMO_SECRET, "url": "https://shop.example/feed.json"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    let token = resp
        .header("x-feed-token")
        .expect("X-Feed-Token")
        .to_owned();
    assert!(resp.body.contains(&token));
    let status = server.post_json(
        "/api/productfeedstatus",
        &json!({"AppKey": DEMO_KEY, "Tokens": [token.clone(), "feed_unknown"]}),
    );
    assert_eq!(status.status, 200);
    let statuses = status.json();
    // The feed's host does not resolve here, so its job may already have failed by the
    // time status is asked: either way the token is known.
    let first = &statuses[0];
    assert_eq!(first["Token"], json!(token));
    match first["Status"].as_str() {
        Some("Processing") => assert!(first.get("Error").is_none(), "{first}"),
        Some("Error") => assert_ne!(first["Error"], json!("unknown token"), "{first}"),
        _ => panic!("unexpected status {first}"),
    }
    assert_eq!(
        statuses[1],
        json!({"Token": "feed_unknown", "Status": "Error", "Error": "unknown token"})
    );
}

#[test]
fn feed_tokens_are_invisible_to_other_accounts() {
    let server = configured();
    let resp = server.post_json(
        "/api/productfeed",
        &json!({"appKey": "shop-eu", "secretKey": "shop-eu-secret", "url": "https://shop.example/feed.json"}),
    );
    let token = resp.header("x-feed-token").unwrap().to_owned();
    let other = server.post_json(
        "/api/productfeedstatus",
        &json!({"AppKey": "shop-two", "Tokens": [token]}),
    );
    assert_eq!(other.json()[0]["Status"], "Error");
    assert_eq!(other.json()[0]["Error"], "unknown token");
}

#[test]
fn productfeed_400_for_validation_errors() {
    let server = Server::demo();
    let body = |url: Value| json!({"appKey": DEMO_KEY, "secretKey": DEMO_SECRET, "url": url});
    server
        .post_json(
            "/api/productfeed",
            &json!({"appKey": DEMO_KEY, "secretKey": DEMO_SECRET}),
        )
        .assert_error(400, "url: required");
    server
        .post_json("/api/productfeed", &body(json!(42)))
        .assert_error(400, "url: expected a string");
    server
        .post_json("/api/productfeed", &body(json!("ftp://shop.example/f")))
        .assert_error(400, "url: scheme \"ftp\" is not allowed");
    server
        .post_json("/api/productfeed", &body(json!("shop.example/feed.json")))
        .assert_error(400, "url:");
    server
        .post_json(
            "/api/productfeed",
            &body(json!("http://127.0.0.1:8080/feed.json")),
        )
        .assert_error(400, "feeds.allow_private_addresses");
    server
        .post("/api/productfeed", "nope")
        .assert_error(400, "body: invalid JSON");
}

#[test]
fn productfeed_500_when_the_submission_cannot_be_saved() {
    let server = Server::demo();
    let feeds = common_account_dir(&server, DEMO_KEY).join("feeds");
    std::fs::remove_dir_all(&feeds).unwrap();
    std::fs::write(&feeds, b"in the way").unwrap();
    let resp = server.post_json(
        "/api/productfeed",
        &json!({"appKey": DEMO_KEY, "secretKey": DEMO_SECRET, "url": "https://shop.example/feed.json"}),
    );
    resp.assert_error(500, "could not be saved");
}

#[test]
fn productfeedstatus_400_for_validation_errors() {
    let server = configured();
    let post = |body: Value| server.post_json("/api/productfeedstatus", &body);
    post(json!({"AppKey": "shop-eu"})).assert_error(400, "Tokens: required");
    post(json!({"AppKey": "shop-eu", "Tokens": "t"}))
        .assert_error(400, "Tokens: expected an array");
    post(json!({"AppKey": "shop-eu", "Tokens": []}))
        .assert_error(400, "Tokens: must hold at least one token");
    post(json!({"AppKey": "shop-eu", "Tokens": [1]}))
        .assert_error(400, "Tokens[0]: expected a string");
    post(json!({"AppKey": "shop-eu", "Tokens": ["a", "b", "c", "d", "e"]}))
        .assert_error(400, "Tokens: at most 4 tokens per request, got 5");
}

fn common_account_dir(server: &Server, key: &str) -> std::path::PathBuf {
    common::account_dir(&server.data_path(), key)
}

// ---------------------------------------------------------------- /api/delta and status

#[test]
fn delta_token_status_and_visibility_in_zones() {
    let server = Server::demo();
    let trending = zone_ids(&server.serverside(json!({"zones": ["HP-01"]})), "HP-01");
    let gone = trending[0].clone();
    let token = submit_delta(&server, json!({"DeleteProducts": [gone.clone()]}));
    assert!(token.starts_with("dlt_"));
    assert_eq!(
        wait_delta(&server, &token),
        json!({"Token": token, "Status": 1})
    );
    let after = zone_ids(&server.serverside(json!({"zones": ["HP-01"]})), "HP-01");
    assert!(!after.contains(&gone), "{gone} still shown: {after:?}");
}

#[test]
fn delta_account_prices_show_for_that_accid() {
    let server = Server::demo();
    let token = submit_delta(
        &server,
        json!({
            "Products": [product("B2B-1", &["100.00 GBP"])],
            "AccountPrices": [{"AccountId": "acme", "Id": "B2B-1", "Prices": ["80.00 GBP"], "SalePrices": ["75.00 GBP"]}]
        }),
    );
    assert_eq!(wait_delta(&server, &token)["Status"], 1);
    // Make B2B-1 the most popular product so trending-backed zones show it.
    let views: Vec<Value> = (0..20)
        .map(|_| json!({"name": "product_view", "data": {"id": "B2B-1"}}))
        .collect();
    server.serverside(json!({"events": views}));
    let plain = wait_for("B2B-1 in a zone", Duration::from_secs(240), || {
        let resp = server.serverside(json!({"zones": ["HP-01"]})).json();
        resp["zones"]["HP-01"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["Id"] == "B2B-1")
            .cloned()
    });
    assert_eq!(plain["Price"], 100.0);
    let resp = server.serverside(json!({"visitorId": "acme-buyer", "events": [{"name": "customer_details", "data": {"accid": "acme"}}], "zones": ["HP-01"]}));
    let item = resp.json()["zones"]["HP-01"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["Id"] == "B2B-1")
        .cloned()
        .unwrap();
    assert_eq!(item["Price"], 75.0);
    assert_eq!(item["WasPrice"], 80.0);
    assert_eq!(item["DisplayPrice"], "£75.00");
}

#[test]
fn delta_referencing_unknown_products_fails_with_status_2_and_changes_nothing() {
    let server = Server::demo();
    let token = submit_delta(
        &server,
        json!({
            "DeleteProducts": ["P00005"],
            "SetCategoryOnProducts": [{"Category": "cat-02", "Products": ["P00006", "GHOST-1", "GHOST-2"]}]
        }),
    );
    let status = wait_delta(&server, &token);
    assert_eq!(
        status,
        json!({"Token": token, "Status": 2, "Reason": "unknown product ids in SetCategoryOnProducts: GHOST-1, GHOST-2"})
    );
    // P00005 was not deleted: the delta is all or nothing.
    let resp = server.serverside(json!({"events": [{"name": "page_view", "data": {"page_type": "product_page", "product_id": "P00006"}}, {"name": "product_view", "data": {"id": "P00005"}}], "zones": ["PP-02"]}));
    assert_eq!(resp.status, 200);
    let token2 = submit_delta(
        &server,
        json!({"DeleteAccountPrices": [{"AccountId": "a", "Id": "P00005"}]}),
    );
    assert_eq!(
        wait_delta(&server, &token2)["Status"],
        1,
        "P00005 still exists"
    );
}

#[test]
fn deltastatus_answers_in_request_order_and_hides_other_accounts_tokens() {
    let server = configured();
    let mine = server.post_json(
        "/api/delta",
        &json!({"AppKey": "shop-eu", "SecretKey": "shop-eu-secret", "DeleteProducts": ["nope"]}),
    );
    let token = mine.json()["Token"].as_str().unwrap().to_owned();
    let resp = server.post_json(
        "/api/deltastatus",
        &json!({"AppKey": "shop-two", "SecretKey": "shop-two-secret", "Tokens": [token.clone()]}),
    );
    assert_eq!(
        resp.json(),
        json!([{"Token": token, "Status": 2, "Reason": "unknown token"}])
    );
    let resp = wait_for("applied", Duration::from_secs(240), || {
        let r = server.post_json(
            "/api/deltastatus",
            &json!({"AppKey": "shop-eu", "SecretKey": "shop-eu-secret", "Tokens": ["x-1", token.clone(), "x-2"]}),
        );
        (r.json()[1]["Status"] == 1).then_some(r)
    });
    let items = resp.json();
    let tokens: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["Token"].as_str().unwrap())
        .collect();
    assert_eq!(tokens, ["x-1", token.as_str(), "x-2"]);
}

#[test]
fn deltastatus_400_for_validation_errors() {
    let server = Server::demo();
    let post = |body: Value| server.post_json("/api/deltastatus", &body);
    post(json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET}))
        .assert_error(400, "Tokens: required");
    post(json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": [""]}))
        .assert_error(400, "Tokens[0]: must not be empty");
    post(json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": {}}))
        .assert_error(400, "Tokens: expected an array");
}

#[test]
fn delta_400_names_the_path_and_queues_nothing() {
    let server = Server::demo();
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "a delta must carry at least one of Products"),
        (json!({"Products": {}}), "Products: expected an array"),
        (
            json!({"Products": [{"Title": "t"}]}),
            "Products[0].Id: required",
        ),
        (
            json!({"Products": [json!({"Id": "p", "Link": "/", "Image": "/i", "Prices": ["1 GBP"], "Categories": []})]}),
            "Products[0].Title: required",
        ),
        (
            json!({"Products": [json!({"Id": "p", "Title": "t", "Image": "/i", "Prices": ["1 GBP"], "Categories": []})]}),
            "Products[0].Link: required",
        ),
        (
            json!({"Products": [json!({"Id": "p", "Title": "t", "Link": "/", "Prices": ["1 GBP"], "Categories": []})]}),
            "Products[0].Image: required",
        ),
        (
            json!({"Products": [json!({"Id": "p", "Title": "t", "Link": "/", "Image": "/i", "Categories": []})]}),
            "Products[0].Prices: required",
        ),
        (
            json!({"Products": [json!({"Id": "p", "Title": "t", "Link": "/", "Image": "/i", "Prices": ["1 GBP"]})]}),
            "Products[0].Categories: required",
        ),
        (
            json!({"Products": [json!({"Id": "p", "Title": "t", "Link": "/", "Image": "/i", "Prices": ["1,00 GBP"], "Categories": []})]}),
            "Products[0].Prices[0]: amount \"1,00\"",
        ),
        (
            json!({"Products": [json!({"Id": "p", "Title": "t", "Link": "/", "Image": "/i", "Prices": ["1 GBP"], "Categories": "", "SearchTags": ""})]}),
            "Products[0].Categories: expected an array, got an empty string",
        ),
        (
            json!({"Products": [json!({"Id": "p", "Title": "t", "Link": "/", "Image": "/i", "Prices": ["1 GBP"], "Categories": [], "AccountInclusions": ["a"], "AccountExclusions": ["b"]})]}),
            "Products[0].AccountInclusions: AccountInclusions and AccountExclusions are mutually exclusive",
        ),
        (
            json!({"Products": [product("dup", &["1 GBP"]), product("dup", &["1 GBP"])]}),
            "Products: product ids sent twice: dup",
        ),
        (
            json!({"DeleteProducts": [1.5]}),
            "DeleteProducts[0]: expected a string",
        ),
        (
            json!({"SetCategoryOnProducts": [{"Products": ["a"]}]}),
            "SetCategoryOnProducts[0].Category: required",
        ),
        (
            json!({"RemoveCategoryFromProducts": [{"Category": "c"}]}),
            "RemoveCategoryFromProducts[0].Products: required",
        ),
        (
            json!({"AccountPrices": [{"Id": "p", "Prices": ["1 GBP"]}]}),
            "AccountPrices[0].AccountId: required",
        ),
        (
            json!({"AccountPrices": [{"AccountId": "a", "Prices": ["1 GBP"]}]}),
            "AccountPrices[0].Id: required",
        ),
        (
            json!({"AccountPrices": [{"AccountId": "a", "Id": "p"}]}),
            "AccountPrices[0].Prices: required",
        ),
        (
            json!({"DeleteAccountPrices": [{"AccountId": "a"}]}),
            "DeleteAccountPrices[0].Id: required",
        ),
        (
            json!({"Users": [{"Email": "a@example.com"}]}),
            "Users[0].UserId: required",
        ),
        (
            json!({"Users": [{"UserId": "u", "DOB": "1990/01/01"}]}),
            "Users[0].DOB: expected a date as YYYY-MM-DD",
        ),
    ];
    for (parts, expected) in cases {
        server
            .post_json("/api/delta", &delta_body(parts))
            .assert_error(400, expected);
    }
    // Nothing was logged.
    assert_eq!(wal_bytes(&common_account_dir(&server, DEMO_KEY)), 0);
}

#[test]
fn delta_413_beyond_the_size_limit() {
    let server = configured();
    let big: Vec<Value> = (0..2000)
        .map(|i| product(&format!("BIG-{i}"), &["1 GBP"]))
        .collect();
    let body =
        json!({"AppKey": "shop-eu", "SecretKey": "shop-eu-secret", "Products": big}).to_string();
    assert!(body.len() > 65536);
    server
        .post("/api/delta", &body)
        .assert_error(413, "larger than the limit of 65536 bytes");
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    request(
        server.addr,
        "POST",
        "/api/delta",
        chunked.as_bytes(),
        &[("Transfer-Encoding", "chunked")],
    )
    .assert_error(413, "larger than the limit");
    // The same body under the demo's 8 MiB default is accepted.
    let demo = Server::demo();
    let body = body
        .replace("shop-eu-secret", DEMO_SECRET)
        .replace("shop-eu", DEMO_KEY);
    assert_eq!(demo.post("/api/delta", &body).status, 200);
}

#[test]
fn delta_500_when_the_delta_cannot_be_saved() {
    let server = Server::with_config(&format!(
        "{}\n[durability]\nwal_segment_bytes = 4096\n",
        CONFIG
            .replace("shop-eu-secret", DEMO_SECRET)
            .replace("\"shop-eu\"", &format!("{DEMO_KEY:?}"))
            .replace("max_delta_bytes = 65536", "max_delta_bytes = 8388608")
    ));
    let big: Vec<Value> = (0..40)
        .map(|i| product(&format!("BIG-{i}"), &["1 GBP"]))
        .collect();
    let visitor = "after-the-500";
    server.serverside(json!({"visitorId": visitor,
        "events": [{"name": "product_view", "data": {"id": "BIG-1"}}]}));
    let token = submit_delta(&server, json!({ "Products": big }));
    assert_eq!(wait_delta(&server, &token)["Status"], 1);
    // The segment is full: the next delta needs a new segment file, in a log directory
    // that is no longer there.
    let dir = common_account_dir(&server, DEMO_KEY);
    std::fs::rename(dir.join("wal"), dir.join("wal.moved")).unwrap();
    std::fs::write(dir.join("wal"), b"in the way").unwrap();
    server
        .post_json(
            "/api/delta",
            &delta_body(json!({"DeleteProducts": ["BIG-1"]})),
        )
        .assert_error(500, "could not be saved");
    // Events cannot be logged either: a 500 rather than a 200 that a crash would undo.
    server
        .serverside(json!({"visitorId": visitor,
            "events": [{"name": "product_view", "data": {"id": "BIG-2"}}]}))
        .assert_errors(500, "the events could not be logged");
    // Nothing of the delta was applied: BIG-1 is still recommended (zones alone log
    // nothing and are still served).
    let resp = server.serverside(json!({"visitorId": visitor, "zones": ["RV-01"]}));
    assert!(
        zone_ids(&resp, "RV-01").contains(&"BIG-1".to_owned()),
        "{}",
        resp.body
    );
}

/// Bytes in the account's write-ahead log segments.
fn wal_bytes(account_dir: &std::path::Path) -> u64 {
    std::fs::read_dir(account_dir.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

#[test]
fn acknowledged_deltas_survive_sigkill_with_their_statuses() {
    let server = Server::demo();
    let t1 = submit_delta(
        &server,
        json!({"Products": [product("KEEP-1", &["9.99 GBP"])]}),
    );
    let t2 = submit_delta(
        &server,
        json!({"SetCategoryOnProducts": [{"Category": "c", "Products": ["NOPE"]}]}),
    );
    let server = Server::start_in(server.kill9(), None);
    let items = delta_status(&server, &[&t1, &t2]);
    assert_eq!(items[0]["Status"], 1);
    assert_eq!(items[1]["Status"], 2);
    // KEEP-1 is in the catalogue: it can be given account prices.
    let t3 = submit_delta(
        &server,
        json!({"AccountPrices": [{"AccountId": "a", "Id": "KEEP-1", "Prices": ["1 GBP"]}]}),
    );
    assert_eq!(wait_delta(&server, &t3)["Status"], 1);
    // The log holds the deltas but no credentials.
    let dir = common_account_dir(&server, DEMO_KEY).join("wal");
    let mut logged = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        logged.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let logged = String::from_utf8_lossy(&logged);
    assert!(logged.contains("KEEP-1") && logged.contains(&t1));
    assert!(!logged.contains(DEMO_SECRET), "secret on disk: {logged}");
}

// ---------------------------------------------------------------- /api/user/forget

#[test]
fn forget_erases_the_visitor_and_answers_text() {
    let server = Server::demo();
    let visitor = "visitor-to-forget";
    server.serverside(json!({"visitorId": visitor, "events": [
        {"name": "product_view", "data": {"id": "P00101"}},
        {"name": "customer_details", "data": {"email": "Jane.Doe@Example.com", "userid": "user-77"}}
    ]}));
    let recently = || {
        zone_ids(
            &server.serverside(json!({"visitorId": visitor, "zones": ["PP-02"]})),
            "PP-02",
        )
    };
    assert_eq!(recently().first().map(String::as_str), Some("P00101"));
    let resp = server.post_json(
        "/api/user/forget",
        &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "jane.doe@example.COM"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(resp.body.contains("1 visitor"), "{}", resp.body);
    // The history is gone: the visitor now sees what a brand-new visitor sees (the view
    // still counts in the aggregate trending counters, as erasure keeps aggregates).
    // (Compared until the two agree: the erasure's flush re-ranks the catalogue it
    // writes, so rankings may change between two requests.)
    wait_for(
        "the erased visitor to see what a new one sees",
        Duration::from_secs(240),
        || {
            let fresh = zone_ids(
                &server.serverside(json!({"visitorId": "brand-new", "zones": ["PP-02"]})),
                "PP-02",
            );
            (recently() == fresh).then_some(())
        },
    );
    // Everything tied to it is gone: the user id matches nothing any more.
    server
        .post_json(
            "/api/user/forget",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "user-77"}),
        )
        .assert_error(
            404,
            "Identifier: no email, user id, account id or visitor id",
        );
}

#[test]
fn forget_matches_user_records_from_deltas_and_visitor_ids() {
    let server = Server::demo();
    let token = submit_delta(
        &server,
        json!({"Users": [{"UserId": "crm-9", "Email": "crm@example.com"}]}),
    );
    assert_eq!(wait_delta(&server, &token)["Status"], 1);
    let forget = |id: &str| {
        server.post_json(
            "/api/user/forget",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": id}),
        )
    };
    assert_eq!(forget("CRM@example.com").status, 200);
    forget("crm-9").assert_error(404, "no email");
    server.serverside(json!({"visitorId": "anon-visitor-1"}));
    assert_eq!(forget("anon-visitor-1").status, 200);
}

#[test]
fn forget_400_and_404() {
    let server = Server::demo();
    let post = |body: Value| server.post_json("/api/user/forget", &body);
    post(json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET}))
        .assert_error(400, "Identifier: required");
    post(json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": ""}))
        .assert_error(400, "Identifier: must not be empty");
    post(json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": 12}))
        .assert_error(400, "Identifier: expected a string");
    server
        .post("/api/user/forget", "[]")
        .assert_error(400, "body: expected an object");
    post(json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "nobody@example.com"}))
        .assert_error(404, "Identifier: no email, user id, account id or visitor id of this account matches");
}

// ---------------------------------------------------------------- README

/// Every `curl` example of the README, replayed against the demo (with `$ADMIN_TOKEN`
/// one of its admin tokens): the status it documents (`# → NNN`) and a JSON body where
/// the endpoint answers JSON.
#[test]
fn readme_examples_give_the_documented_answers() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let admin_token = "readme-example-admin-token";
    let server = Server::with_config(&format!(
        "{}\n[admin]\ntokens = [\"{admin_token}\"]\n",
        include_str!("../src/demo.toml")
    ));
    let mut replayed = Vec::new();
    for block in readme.split("```sh").skip(1) {
        let block = block.split("```").next().unwrap();
        if !block.contains("curl ") {
            continue;
        }
        let command = block
            .replace("\\\n", " ")
            .replace("$ADMIN_TOKEN", admin_token);
        let expected: u16 = command
            .split("# → ")
            .nth(1)
            .and_then(|s| s.trim().get(..3))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("example without `# → STATUS`: {block}"));
        let url = command
            .split_whitespace()
            .map(|w| w.trim_matches('"'))
            .find(|w| w.starts_with("http://127.0.0.1:7480"))
            .unwrap();
        let path = url.trim_start_matches("http://127.0.0.1:7480");
        let body = command
            .split(" -d '")
            .nth(1)
            .map(|rest| rest.split('\'').next().unwrap().to_owned());
        let headers: Vec<(&str, &str)> = command
            .split(" -H \"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next()?.split_once(": "))
            .collect();
        let resp = match &body {
            Some(body) => request(server.addr, "POST", path, body.as_bytes(), &headers),
            None => request(server.addr, "GET", path, b"", &headers),
        };
        assert_eq!(
            resp.status, expected,
            "README example for {path}: {}",
            resp.body
        );
        if resp.header("content-type") == Some("application/json") {
            resp.json();
        }
        replayed.push(path.to_owned());
    }
    for endpoint in [
        "/api/serverside",
        "/api/productfeed",
        "/api/productfeedstatus",
        "/api/delta",
        "/api/deltastatus",
        "/api/user/forget",
        "/healthz",
    ] {
        assert!(
            replayed.iter().any(|p| p == endpoint),
            "no README example for {endpoint}"
        );
    }
}

// ---------------------------------------------------------------- category and brand zones

const AFFINITY_CONFIG: &str = r#"
[[accounts]]
access_key = "aff-shop"
secret_key = "aff-shop-secret"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "CAT-AFF"
  title = "Your categories"
  type = "recommender-category"
  strategy = "category_affinity"
  count = 3
  [[accounts.zones]]
  id = "BRAND-AFF"
  title = "Your brands"
  type = "recommender-brand"
  strategy = "brand_affinity"
  count = 2
"#;

#[test]
fn category_and_brand_zones_show_the_visitors_affinities_as_records() {
    let server = Server::with_config(AFFINITY_CONFIG);
    let body = |events: Value| {
        serverside_body(json!({"appId": "aff-shop", "secretKey": "aff-shop-secret",
            "visitorId": "fan", "events": events, "zones": ["CAT-AFF", "BRAND-AFF"]}))
    };
    // P00001's category and brand, from the product view.
    let resp = server.post_json(
        "/api/serverside",
        &body(json!([{"name": "product_view", "data": {"id": "P00001"}}])),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    let categories = &json["zones"]["CAT-AFF"];
    assert_eq!(categories["type"], "recommender-category");
    assert_eq!(categories["title"], "Your categories");
    let first = &categories["items"][0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["Description", "DisplayName", "Id", "Image", "Link", "Title"]
    );
    assert!(resp.body.contains(&format!(
        "{{\"Id\":{},\"Title\":{},\"DisplayName\":",
        first["Id"], first["Title"]
    )));
    assert!(first["Id"].as_str().unwrap().starts_with("cat-"));
    assert_ne!(
        first["DisplayName"], first["Id"],
        "from the category record"
    );
    assert_eq!(first["Title"], first["DisplayName"]);
    let brands = &json["zones"]["BRAND-AFF"];
    assert_eq!(brands["type"], "recommender-brand");
    assert!(
        brands["items"][0]["Id"]
            .as_str()
            .unwrap()
            .starts_with("brand-")
    );

    // Browsing another category three times puts it first.
    let other = if first["Id"] == "cat-02" {
        "cat-03"
    } else {
        "cat-02"
    };
    let page = json!({"name": "page_view", "data": {"page_type": "category_listing_page", "category_id": other}});
    for _ in 0..2 {
        server.post_json("/api/serverside", &body(json!([page.clone()])));
    }
    let resp = server.post_json(
        "/api/serverside",
        &body(json!([{"name": "page_view", "data": {"page_type": "homepage"}}])),
    );
    let json = resp.json();
    let ids: Vec<&str> = json["zones"]["CAT-AFF"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["Id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], other, "{ids:?}");
    assert_eq!(ids[1], first["Id"].as_str().unwrap());
}

// ---------------------------------------------------------------- image and html zones

const CONTENT_CONFIG: &str = r#"
[[accounts]]
access_key = "content-shop"
secret_key = "content-shop-secret"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "BANNER"
  title = "Banner"
  type = "staticimage"
  images = [{ url = "//cdn.shop.example/sale.jpg", link = "/sale", alt = "Sale now on" }]
  [[accounts.zones]]
  id = "SLIDES"
  title = "Slides"
  type = "carousel"
  images = [{ url = "//cdn.shop.example/1.jpg", link = "/one" }, { url = "//cdn.shop.example/2.jpg" }]
  [[accounts.zones]]
  id = "PICKS"
  title = "Picks & more"
  type = "html"
  strategy = "trending"
  count = 2
  template = "<h2>{{ title }}</h2><ul>{% for item in items %}<li><a href=\"{{ item.Link }}\">{{ item.Title }}</a> {{ item.DisplayPrice }}</li>{% endfor %}</ul>"
  [[accounts.zones]]
  id = "NOTICE"
  title = "Notice"
  type = "html"
  template = "<p>Free delivery over {{ '£' }}50</p>{{ items | length }}"
"#;

#[test]
fn image_carousel_and_html_zones_render_their_configured_content() {
    let server = Server::with_config(CONTENT_CONFIG);
    let resp = server.post_json(
        "/api/serverside",
        &serverside_body(
            json!({"appId": "content-shop", "secretKey": "content-shop-secret",
            "zones": ["BANNER", "SLIDES", "PICKS", "NOTICE"]}),
        ),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    let zones = &json["zones"];
    assert_eq!(zones["BANNER"]["type"], "image");
    assert_eq!(
        zones["BANNER"]["items"],
        json!([{"Image": "//cdn.shop.example/sale.jpg", "Link": "/sale", "Alt": "Sale now on"}])
    );
    assert!(zones["BANNER"].get("html").is_none());
    assert_eq!(zones["SLIDES"]["type"], "image-carousel");
    assert_eq!(zones["SLIDES"]["items"].as_array().unwrap().len(), 2);
    assert_eq!(zones["SLIDES"]["items"][1]["Link"], "");

    let picks = &zones["PICKS"];
    assert_eq!(picks["type"], "html");
    let items = picks["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    let html = picks["html"].as_str().unwrap();
    assert!(
        html.starts_with("<h2>Picks &amp; more</h2><ul><li><a href=\""),
        "{html}"
    );
    for item in items {
        let line = format!(
            "{}</a> {}</li>",
            item["Title"].as_str().unwrap(),
            item["DisplayPrice"].as_str().unwrap()
        );
        assert!(html.contains(&line), "{line} in {html}");
    }
    assert_eq!(zones["NOTICE"]["html"], "<p>Free delivery over £50</p>0");
    assert_eq!(zones["NOTICE"]["items"], json!([]));
    assert_eq!(json["errors"], json!([]));
}
