//! Vitrine nodes on a real NATS JetStream cluster: three `nats-server` processes on
//! loopback ports with their own storage directories (`vitrine_testkit::nats`), and
//! two or three `vitrine` nodes serving the same account: writes served by the other
//! node, catching up, NATS servers and nodes killed under writes, a node joining under
//! load. Nodes SIGKILLed in a loop under writes are in `cluster_kills.rs`; full feeds in a cluster in `cluster_feeds.rs`; erasure and joining after
//! the stream was trimmed in `cluster_trim.rs`; NATS faults in `cluster_faults.rs`.

use std::time::Duration;

use crate::common::{self, Server, serverside_body, wait_for};
use serde_json::{Value, json};
use vitrine_testkit::nats::NatsCluster;
use vitrine_testkit::records;

pub(super) const KEY: &str = "cluster-shop";
pub(super) const SECRET: &str = "cluster-shop-secret";
/// How long a write through one node may take to show on another (a loaded machine).
/// The admin API's token on every node.
pub(super) const ADMIN: &str = "cluster-admin-token-0123456789";

pub(super) const REPLICATED: Duration = Duration::from_secs(120);

pub(super) fn config(nats: &NatsCluster, node: &str) -> String {
    config_with(nats, node, "")
}

/// `config` with the account's snapshots stored in the object store every second (and
/// the stream trimmed behind them).
pub(super) fn with_snapshots(config: String) -> String {
    config.replace(
        "replicas = 3\n",
        "replicas = 3\nsnapshot_interval_secs = 1\n",
    )
}

/// [`config`] with more `[durability]` lines.
pub(super) fn config_with(nats: &NatsCluster, node: &str, durability: &str) -> String {
    let servers: Vec<String> = nats.urls().iter().map(|u| format!("{u:?}")).collect();
    format!(
        r#"
[durability]
state_snapshot_interval_secs = 1
{durability}

[admin]
tokens = ["{ADMIN}"]

[cluster]
servers = [{servers}]
node = "{node}"
replicas = 3

[[accounts]]
access_key = "{KEY}"
secret_key = "{SECRET}"
default_currency = "GBP"
  [[accounts.zones]]
  id = "CAT"
  title = "Top of the category"
  type = "recommender-product"
  strategy = "category_top"
  count = 50
  [[accounts.zones]]
  id = "RV"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 20
  [[accounts.zones]]
  id = "TR"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 20
"#,
        servers = servers.join(", ")
    )
}

pub(super) fn product(id: &str) -> Value {
    let extra =
        json!({"Title": format!("Product {id}"), "Image": "//img/x.jpg", "Categories": ["c1"]});
    records::with(records::product(id, "10.00 GBP"), extra)
}

/// Posts a delta adding `ids`; its token.
pub(super) fn add_products(server: &Server, ids: &[&str]) -> String {
    let products: Vec<Value> = ids.iter().map(|id| product(id)).collect();
    let body = json!({"AppKey": KEY, "SecretKey": SECRET, "Products": products});
    let resp = server.post_json("/api/delta", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["Token"].as_str().unwrap().to_owned()
}

pub(super) fn status(server: &Server, token: &str) -> Value {
    let body = json!({"AppKey": KEY, "SecretKey": SECRET, "Tokens": [token]});
    let resp = server.post_json("/api/deltastatus", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()[0].clone()
}

/// Waits until `server` reports the delta `token` applied.
pub(super) fn applied_on(server: &Server, token: &str) {
    let item = wait_for("the delta applied", REPLICATED, || {
        let item = status(server, token);
        (item["Status"] == 1).then_some(item)
    });
    assert_eq!(item["Status"], 1, "{item}");
}

pub(super) fn serverside(server: &Server, visitor: &str, events: Value, zones: &[&str]) -> Value {
    let body = serverside_body(json!({"appId": KEY, "secretKey": SECRET,
        "visitorId": visitor, "events": events, "zones": zones}));
    let resp = server.post_json("/api/serverside", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

pub(super) fn ids(resp: &Value, zone: &str) -> Vec<String> {
    resp["zones"][zone]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{zone} in {resp}"))
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect()
}

pub(super) fn views(server: &Server, visitor: &str, products: &[&str]) {
    let events: Vec<Value> = products
        .iter()
        .map(|id| json!({"name": "product_view", "data": {"id": id}}))
        .collect();
    serverside(server, visitor, Value::Array(events), &[]);
}

/// What `visitor` sees in a zone of `server` (a page view that changes nothing).
pub(super) fn zone(server: &Server, visitor: &str, zone: &str) -> Vec<String> {
    let events = json!([{"name": "page_view", "data": {"page_type": "homepage"}}]);
    ids(&serverside(server, visitor, events, &[zone]), zone)
}

pub(super) fn category(server: &Server) -> Vec<String> {
    let events = json!([{"name": "page_view", "data": {"page_type": "category_listing_page", "category_id": "c1"}}]);
    ids(&serverside(server, "browser", events, &["CAT"]), "CAT")
}

#[test]
fn writes_through_one_node_are_served_by_the_other() {
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    let a = Server::with_config(&config(&nats, "a"));
    let b = Server::with_config(&config(&nats, "b"));

    // A delta through A: applied on B (B answers for A's token) and served there.
    let token = add_products(&a, &["p1", "p2", "p3"]);
    applied_on(&b, &token);
    applied_on(&a, &token);
    let mut listed = category(&b);
    listed.sort();
    assert_eq!(listed, ["p1", "p2", "p3"]);

    // A visitor's views through A are in B's recently viewed.
    views(&a, "v1", &["p1", "p2"]);
    let seen = wait_for("A's views on B", REPLICATED, || {
        let seen = zone(&b, "v1", "RV");
        (seen.len() == 2).then_some(seen)
    });
    assert_eq!(seen, ["p2", "p1"]);

    // A's events move B's trending: p3, viewed by many visitors through A, leads.
    for visitor in 0..6 {
        views(&a, &format!("t{visitor}"), &["p3"]);
    }
    let top = wait_for("A's views moving B's trending", REPLICATED, || {
        let top = zone(&b, "someone", "TR");
        (top.first().map(String::as_str) == Some("p3")).then_some(top)
    });
    assert_eq!(top.first().map(String::as_str), Some("p3"));

    // And the other way round: B's writes on A.
    let token = add_products(&b, &["p4"]);
    applied_on(&a, &token);
    views(&b, "v2", &["p4"]);
    wait_for("B's views on A", REPLICATED, || {
        (zone(&a, "v2", "RV") == ["p4"]).then_some(())
    });
}

#[test]
fn a_node_restarted_with_an_empty_data_directory_catches_up_from_the_stream() {
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    let a = Server::with_config(&config(&nats, "a"));
    let b = Server::with_config(&config(&nats, "b"));

    let first = add_products(&a, &["p1", "p2"]);
    applied_on(&a, &first);
    views(&a, "v1", &["p1"]);
    views(&b, "v2", &["p2"]);
    wait_for("v2's view on A", REPLICATED, || {
        (zone(&a, "v2", "RV") == ["p2"]).then_some(())
    });

    // SIGKILL A; while it is down, B takes more writes.
    drop(a.kill9());
    let second = add_products(&b, &["p3"]);
    applied_on(&b, &second);
    views(&b, "v1", &["p3"]);
    // Events are published without waiting (`events_fsync = "interval"`): in the stream
    // once B's next delta is.
    settled(&b);

    // A starts again with a new, empty data directory: its ready line comes once it has
    // caught up, and it serves everything, its own earlier writes included.
    let a = Server::with_config(&config(&nats, "a"));
    for token in [&first, &second] {
        assert_eq!(status(&a, token)["Status"], 1, "{token} on the new A");
    }
    let mut listed = category(&a);
    listed.sort();
    assert_eq!(listed, ["p1", "p2", "p3"]);
    assert_eq!(zone(&a, "v1", "RV"), ["p3", "p1"]);
    assert_eq!(zone(&a, "v1", "RV"), zone(&b, "v1", "RV"));

    // A SIGKILL with the data directory kept: A resumes the stream where its files end
    // and applies nothing twice.
    views(&b, "v3", &["p1"]);
    let kept = a.kill9();
    let third = add_products(&b, &["p5"]);
    applied_on(&b, &third);
    let a = Server::start_in(kept, Some(&config(&nats, "a")));
    assert_eq!(status(&a, &third)["Status"], 1);
    assert_eq!(zone(&a, "v1", "RV"), ["p3", "p1"]);
    assert_eq!(zone(&a, "v3", "RV"), ["p1"]);
}

#[test]
fn a_nats_server_killed_under_writes_loses_nothing_acknowledged() {
    let mut nats = NatsCluster::start(3).expect("a NATS cluster");
    let a = Server::with_config(&config(&nats, "a"));
    let b = Server::with_config(&config(&nats, "b"));

    let mut tokens = Vec::new();
    let mut round = 0;
    // Acknowledged or refused (503 while the client moves to another server and
    // JetStream elects new leaders), never acknowledged and lost.
    let mut write = |tokens: &mut Vec<(String, String)>| {
        let id = format!("q{round}");
        round += 1;
        let body = json!({"AppKey": KEY, "SecretKey": SECRET, "Products": [product(&id)]});
        let resp = a.post_json("/api/delta", &body);
        if resp.status == 200 {
            tokens.push((id, resp.json()["Token"].as_str().unwrap().to_owned()));
        } else {
            assert_eq!(resp.status, 503, "{}", resp.body);
        }
    };
    for _ in 0..10 {
        write(&mut tokens);
    }
    assert_eq!(
        tokens.len(),
        10,
        "every write acknowledged with three servers"
    );
    nats.kill9(0);
    // Writes keep being acknowledged by the two servers left (a quorum of three).
    wait_for(
        "ten writes acknowledged after a NATS server died",
        REPLICATED,
        || {
            write(&mut tokens);
            (tokens.len() >= 20).then_some(())
        },
    );
    for (_, token) in &tokens {
        applied_on(&b, token);
    }
    let listed = category(&b);
    for (id, _) in &tokens {
        assert!(listed.contains(id), "{id} in {listed:?}");
    }
    nats.restart(0).expect("the NATS server rejoins");
    let token = add_products(&a, &["after"]);
    applied_on(&b, &token);
}

pub(super) fn order_event(order_id: &str) -> Value {
    json!({"name": "order", "data": {"orderid": order_id, "userid": "cluster-user",
        "items": [{"id": "p1", "qty": 1, "unitprice": 10.0}]}})
}

/// Order ids of `ids` that `server` holds (each expected there: a missing one is
/// recorded by the check).
pub(super) fn present_orders(server: &Server, ids: &[String]) -> Vec<String> {
    common::present_orders(ids, order_event, |events| {
        serverside(server, "checker", Value::Array(events), &[])
    })
}

/// Waits until `server` has applied everything published before now: a delta through it
/// comes back from the stream after every earlier message.
/// (Through a node's one ordered publish queue, so also after everything it took
/// before; the marker is in no category.) Right after NATS servers restart, the stream
/// may have no leader yet: a marker answered 503 is sent again until one is answered
/// 200.
pub(super) fn settled(server: &Server) {
    let marker = records::with(
        records::product("marker", "1.00 GBP"),
        json!({"Title": "Marker", "Image": "//img/m.jpg"}),
    );
    let body = json!({"AppKey": KEY, "SecretKey": SECRET, "Products": [marker]});
    let token = wait_for("a marker delta answered 200", REPLICATED, || {
        let resp = server.post_json("/api/delta", &body);
        assert!(
            resp.status == 200 || resp.status == 503,
            "{} {}",
            resp.status,
            resp.body
        );
        (resp.status == 200).then(|| resp.json()["Token"].as_str().unwrap().to_owned())
    });
    applied_on(server, &token);
}

/// Everything acknowledged is on `server`: every delta applied, every order recorded.
pub(super) fn holds_everything(server: &Server, orders: &[String], deltas: &[String], what: &str) {
    for token in deltas {
        assert_eq!(status(server, token)["Status"], 1, "{what}: delta {token}");
    }
    let present = present_orders(server, orders);
    let missing: Vec<&String> = orders.iter().filter(|o| !present.contains(o)).collect();
    assert!(
        missing.is_empty(),
        "{what}: acknowledged orders lost: {missing:?}"
    );
}

#[test]
fn a_node_joining_under_load_is_ready_caught_up_and_serves_the_same_zones() {
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    let a = Server::with_config(&config(&nats, "a"));
    let b = Server::with_config(&config(&nats, "b"));
    let catalogue: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
    let ids: Vec<&str> = catalogue.iter().map(String::as_str).collect();
    let token = add_products(&a, &ids);
    applied_on(&b, &token);

    // Shoppers on A and on B (each sticks to one) keep viewing while C starts.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let c = std::thread::scope(|scope| {
        for (node, server) in [("a", &a), ("b", &b)] {
            let stop = &stop;
            let catalogue = &catalogue;
            scope.spawn(move || {
                let mut n = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let visitor = format!("{node}-shopper-{}", n % 8);
                    let seen = [
                        catalogue[(n * 7) % 20].as_str(),
                        catalogue[(n * 3 + 1) % 20].as_str(),
                    ];
                    views(server, &visitor, &seen);
                    n += 1;
                }
            });
        }
        // Some load before C asks to join.
        wait_for("shoppers under way", REPLICATED, || {
            (!zone(&b, "a-shopper-7", "RV").is_empty()).then_some(())
        });
        let c = Server::with_config(&config(&nats, "c"));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        c
    });
    assert!(
        c.log().contains("caught up with the cluster"),
        "{}",
        c.log()
    );

    settled(&b);
    settled(&c);
    for node in ["a", "b"] {
        for shopper in 0..8 {
            let visitor = format!("{node}-shopper-{shopper}");
            assert_eq!(
                zone(&c, &visitor, "RV"),
                zone(&b, &visitor, "RV"),
                "{visitor}"
            );
        }
    }
    // Trending comes from models each node rebuilds on its own clock: once both have
    // rebuilt after the load, they agree.
    wait_for("the same trending list on B and C", REPLICATED, || {
        let on_b = zone(&b, "someone", "TR");
        (!on_b.is_empty() && on_b == zone(&c, "someone", "TR")).then_some(())
    });
    let (mut on_b, mut on_c) = (category(&b), category(&c));
    on_b.sort();
    on_c.sort();
    assert_eq!(on_c, on_b);
}

/// Waits up to `limit` for `done`, checked every 50 ms; on timeout, fails with both
/// nodes' logs.
pub(super) fn wait_for_logged(
    what: &str,
    limit: Duration,
    (a, b): (&Server, &Server),
    mut done: impl FnMut() -> bool,
) {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}\nA's log:\n{}\nB's log:\n{}",
            plain(&a.log()),
            plain(&b.log())
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A log's text without its colours.
pub(super) fn plain(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
