//! The cluster through NATS faults: three real `nats-server` processes, two or three
//! `vitrine` nodes, shoppers ordering on both nodes while the stream's leader (or a
//! follower, or two servers at once) is SIGKILLed and restarted. Afterwards every write
//! answered 200, and every write answered 503 "kept", is on every node; no write
//! answered 503 "nothing was recorded" is anywhere; the nodes' zones are the same.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vitrine_testkit::nats::NatsCluster;
use vitrine_testkit::records;

use super::cluster::{
    ADMIN, KEY, REPLICATED, SECRET, add_products, applied_on, category, config_with, order_event,
    plain, present_orders, settled, status, with_snapshots,
};
use crate::common::{Server, request, serverside_body, try_post, wait_for};

/// The products the shoppers order.
const PRODUCTS: [&str; 8] = ["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"];

/// The account's stream.
fn stream() -> String {
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    format!("VITRINE_{hex}")
}

/// A gauge of the account from `server`'s `/metrics`.
pub(super) fn gauge(server: &Server, name: &str) -> f64 {
    let prefix = format!("{name}{{account=\"{KEY}\"}} ");
    server
        .get("/metrics")
        .body
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

/// What `server` says of the trending zone's items (scores and facts), and its
/// metrics of the account (histograms left out): what a failed agreement shows.
fn model_lines(server: &Server) -> String {
    let path = format!("/admin/api/accounts/{KEY}/explain?zone=TR&visitor=browser");
    let auth = format!("Bearer {ADMIN}");
    let explained = request(server.addr, "GET", &path, b"", &[("authorization", &auth)]).body;
    let body = server.get("/metrics").body;
    let lines: Vec<&str> = body
        .lines()
        .filter(|line| line.contains(KEY) && !line.contains("_bucket"))
        .collect();
    format!("{explained}\n{}", lines.join("\n"))
}

/// Waits until `server`'s outbox is empty: everything it took is in the stream.
fn drained(server: &Server) {
    wait_for("the outbox drained", REPLICATED, || {
        (gauge(server, "vitrine_cluster_outbox_records") == 0.0).then_some(())
    });
}

/// What the shoppers were answered.
#[derive(Default, Debug)]
struct Outcomes {
    /// Orders answered 200.
    acked: Vec<String>,
    /// Orders answered 503 and kept (to be stored on every node).
    kept: Vec<String>,
    /// Orders answered 503 with nothing recorded, and when.
    refused: Vec<(String, Instant)>,
    /// Delta tokens answered 200 (to be applied on every node).
    deltas: Vec<String>,
    /// The longest a request waited for its answer.
    slowest: Duration,
}

impl Outcomes {
    /// Every order that must be on every node.
    fn recorded(&self) -> Vec<String> {
        self.acked.iter().chain(&self.kept).cloned().collect()
    }
}

/// A shopper on `server` (visitor `name`) viewing and ordering one product a request
/// until `stop`; what it was answered goes to `outcomes`.
fn shop(server: &Server, name: &str, stop: &AtomicBool, outcomes: &Mutex<Outcomes>) {
    for n in 0usize.. {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let order_id = format!("{name}-{n}");
        // Unequal popularity, so that the category zone has an order to agree on.
        let product = PRODUCTS[(n * n + n / 3) % PRODUCTS.len()];
        let body = serverside_body(json!({"appId": KEY, "secretKey": SECRET,
            "visitorId": format!("shopper-{name}"),
            "events": [{"name": "product_view", "data": {"id": product}},
                       {"name": "order", "data": {"orderid": order_id, "userid": name,
                        "items": [{"id": product, "qty": 1, "unitprice": 10.0}]}}]}));
        if !ordered(server, &body, order_id, outcomes) {
            return;
        }
    }
}

/// Posts the order `order_id` (in `body`) to `server` and files its answer in
/// `outcomes`; false when the server did not answer.
fn ordered(server: &Server, body: &Value, order_id: String, outcomes: &Mutex<Outcomes>) -> bool {
    let sent = Instant::now();
    let answer = try_post(server.addr, "/api/serverside", body);
    let waited = sent.elapsed();
    let mut outcomes = outcomes.lock().unwrap();
    outcomes.slowest = outcomes.slowest.max(waited);
    match answer {
        Some(resp) if resp.status == 200 => outcomes.acked.push(order_id),
        Some(resp) if resp.status == 503 && resp.body.contains("it is kept") => {
            outcomes.kept.push(order_id);
        }
        Some(resp) if resp.status == 503 && resp.body.contains("nothing was recorded") => {
            outcomes.refused.push((order_id, Instant::now()));
        }
        Some(resp) => panic!("unexpected answer: {} {}", resp.status, resp.body),
        None => return false,
    }
    true
}

/// A merchant adding a product through one node, and a shopper ordering it at once
/// through the other (where the delta may not be applied yet), the nodes taking turns,
/// until `stop`. Delta tokens answered 200 and the orders' answers go to `outcomes`.
fn add_and_order(nodes: [&Server; 2], stop: &AtomicBool, outcomes: &Mutex<Outcomes>) {
    for n in 0usize.. {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let (merchant, shopper) = (nodes[n % 2], nodes[(n + 1) % 2]);
        let id = format!("d{n}");
        let added = records::with(
            records::product(&id, "5.00 GBP"),
            json!({"Title": format!("New {id}"), "Image": "//img/d.jpg", "Categories": ["c2"]}),
        );
        let delta = json!({"AppKey": KEY, "SecretKey": SECRET, "Products": [added]});
        match try_post(merchant.addr, "/api/delta", &delta) {
            Some(resp) if resp.status == 200 => {
                let token = resp.json()["Token"].as_str().unwrap().to_owned();
                outcomes.lock().unwrap().deltas.push(token);
            }
            // Not acknowledged while the stream has no leader: nothing to hold.
            Some(resp) if resp.status == 503 => continue,
            Some(resp) => panic!("unexpected delta answer: {} {}", resp.status, resp.body),
            None => return,
        }
        let order_id = format!("new-{n}");
        let body = serverside_body(json!({"appId": KEY, "secretKey": SECRET,
            "visitorId": "shopper-new",
            "events": [{"name": "order", "data": {"orderid": order_id, "userid": "new",
                "items": [{"id": id, "qty": 1, "unitprice": 5.0}]}}]}));
        if !ordered(shopper, &body, order_id, outcomes) {
            return;
        }
    }
}

/// Which NATS server a fault kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Victim {
    /// The server leading the account's stream.
    Leader,
    /// A server holding a replica of it without leading it.
    Follower,
}

/// Every write recorded (answered 200 or kept) is on both nodes, nothing refused is on
/// either (the nodes count exactly the recorded orders), and their zones agree.
fn agree(a: &Server, b: &Server, outcomes: &Outcomes) {
    drained(a);
    drained(b);
    settled(a);
    settled(b);
    holds_exactly("a", a, outcomes);
    holds_exactly("b", b, outcomes);
    zones_agree(a, b);
}

/// `server` (node `node`) holds exactly what was recorded: every delta answered 200
/// applied, and the orders answered 200 or kept counted, no other.
fn holds_exactly(node: &str, server: &Server, outcomes: &Outcomes) {
    for token in &outcomes.deltas {
        let item = status(server, token);
        assert_eq!(item["Status"], 1, "node {node}: delta {token}: {item}");
    }
    let recorded = outcomes.recorded();
    // Counted before the presence check below (which records a missing order).
    #[expect(
        clippy::cast_precision_loss,
        reason = "a few thousand orders are exact in an f64"
    )]
    let expected = recorded.len() as f64;
    assert_eq!(
        gauge(server, "vitrine_orders_known"),
        expected,
        "node {node} counts exactly the orders answered 200 or kept (a refused one is nowhere): {} refused",
        outcomes.refused.len()
    );
    let present = present_orders(server, &recorded);
    let missing: Vec<&String> = recorded.iter().filter(|o| !present.contains(o)).collect();
    assert!(missing.is_empty(), "node {node} lost {missing:?}");
}

/// The trending zone's products and their scores on `server`, by id.
fn trending_scores(server: &Server) -> std::collections::BTreeMap<String, Option<f64>> {
    let path = format!("/admin/api/accounts/{KEY}/explain?zone=TR&visitor=browser");
    let auth = format!("Bearer {ADMIN}");
    let explained = request(server.addr, "GET", &path, b"", &[("authorization", &auth)]);
    let explained: Value = serde_json::from_str(&explained.body).expect("an explanation");
    explained["items"]
        .as_array()
        .expect("the zone's items")
        .iter()
        .map(|item| {
            let id = item["id"].as_str().unwrap_or_default().to_owned();
            (id, item["score"].as_f64())
        })
        .collect()
}

/// Whether two nodes' scores are the same counts: equal up to the rounding of their
/// sums, which the nodes add in different orders (a node applies its own events first).
/// One event counted twice, or missing, moves a score by far more.
fn same_scores(
    a: &std::collections::BTreeMap<String, Option<f64>>,
    b: &std::collections::BTreeMap<String, Option<f64>>,
) -> bool {
    let same = |x: &Option<f64>, y: &Option<f64>| match (x, y) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-5 * x.abs().max(y.abs()).max(1.0),
        (None, None) => true,
        _ => false,
    };
    a.len() == b.len()
        && a.iter()
            .all(|(id, x)| b.get(id).is_some_and(|y| same(x, y)))
}

/// The nodes' zones agree (rankings are rebuilt every second on each node): the same
/// trending scores, and the same products in the category zone. Two products with the
/// same counts may be listed in either order: their scores differ only in rounding.
fn zones_agree(a: &Server, b: &Server) {
    let mut last = String::new();
    let deadline = Instant::now() + REPLICATED;
    loop {
        let scores = [trending_scores(a), trending_scores(b)];
        let mut listed = [category(a), category(b)];
        for list in &mut listed {
            list.sort();
        }
        if same_scores(&scores[0], &scores[1]) && listed[0] == listed[1] {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the nodes' zones still differ after {REPLICATED:?} (trending scores and category products on the first node, then the second): {scores:?} {listed:?}, before: {last}\n{}\n{}",
            model_lines(a),
            model_lines(b)
        );
        last = format!("{scores:?} {listed:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Shoppers on both nodes; the `victim` NATS server SIGKILLed once 200 orders are in,
/// restarted once 200 more are answered (and at least 12 s later, past JetStream's
/// election); then everything is checked. Returns the nodes, the NATS servers and what
/// the shoppers were answered.
fn kill_under_orders(
    durability: &str,
    snapshots: bool,
    victim: Victim,
) -> (Server, Server, NatsCluster, Outcomes) {
    let mut nats = NatsCluster::start(3).expect("a NATS cluster");
    let config = |node: &str| {
        let config = config_with(&nats, node, durability);
        if snapshots {
            with_snapshots(config)
        } else {
            config
        }
    };
    let a = Server::with_config(&config("a"));
    let b = Server::with_config(&config("b"));
    let token = add_products(&a, &PRODUCTS);
    applied_on(&b, &token);

    let outcomes = Mutex::new(Outcomes::default());
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for (name, server) in [("a", &a), ("b", &b)] {
            let (stop, outcomes) = (&stop, &outcomes);
            scope.spawn(move || shop(server, name, stop, outcomes));
        }
        scope.spawn(|| add_and_order([&a, &b], &stop, &outcomes));
        let answered = || {
            let outcomes = outcomes.lock().unwrap();
            outcomes.acked.len() + outcomes.kept.len() + outcomes.refused.len()
        };
        wait_for("orders before the fault", REPLICATED, || {
            (answered() >= 200).then_some(())
        });
        let leader = wait_for("the stream's leader", REPLICATED, || {
            nats.stream_leader(&stream())
        });
        let killed = match victim {
            Victim::Leader => leader,
            Victim::Follower => (leader + 1) % 3,
        };
        let before = answered();
        let at = Instant::now();
        nats.kill9(killed);
        wait_for("orders answered through the fault", REPLICATED, || {
            (answered() >= before + 200 && at.elapsed() >= Duration::from_secs(12)).then_some(())
        });
        nats.restart(killed).expect("the NATS server restarts");
        let restarted = answered();
        wait_for("orders after the restart", REPLICATED, || {
            (answered() >= restarted + 50).then_some(())
        });
        stop.store(true, Ordering::Release);
        let outcomes = outcomes.lock().unwrap();
        let refused: Vec<u128> = outcomes
            .refused
            .iter()
            .map(|(_, when)| when.saturating_duration_since(at).as_millis())
            .collect();
        eprintln!(
            "{victim:?} killed ({durability:?}): {} answered 200, {} kept, {} refused (from {:?} to {:?} ms after the kill); slowest answer {:?}",
            outcomes.acked.len(),
            outcomes.kept.len(),
            refused.len(),
            refused.first(),
            refused.last(),
            outcomes.slowest
        );
    });
    let outcomes = outcomes.into_inner().unwrap();
    agree(&a, &b, &outcomes);
    (a, b, nats, outcomes)
}

#[test]
fn the_stream_leader_killed_under_interval_loses_no_order_answered_200_and_a_joining_node_agrees() {
    let (_a, b, nats, outcomes) = kill_under_orders("", true, Victim::Leader);
    // Under `interval` the outbox takes the records while JetStream elects a leader.
    assert!(
        outcomes.kept.is_empty() && outcomes.refused.is_empty(),
        "nothing refused under interval: {outcomes:?}"
    );
    // A node joining after the NATS server's kill and restart holds everything.
    let c = Server::with_config(&with_snapshots(config_with(&nats, "c", "")));
    let recorded = outcomes.recorded();
    let present = present_orders(&c, &recorded);
    assert_eq!(
        present.len(),
        recorded.len(),
        "the joining node holds every order"
    );
    zones_agree(&c, &b);
}

#[test]
fn the_stream_leader_killed_under_always_records_every_write_everywhere_or_nowhere() {
    let (_a, _b, _nats, outcomes) =
        kill_under_orders("events_fsync = \"always\"\n", false, Victim::Leader);
    assert!(!outcomes.acked.is_empty(), "{outcomes:?}");
}

#[test]
fn a_follower_killed_under_always_records_every_write_everywhere_or_nowhere() {
    let (_a, _b, _nats, outcomes) =
        kill_under_orders("events_fsync = \"always\"\n", false, Victim::Follower);
    assert!(!outcomes.acked.is_empty(), "{outcomes:?}");
}

#[test]
fn a_node_joining_after_a_follower_kill_and_a_quorum_loss_holds_exactly_what_the_others_hold() {
    let always = "events_fsync = \"always\"\n";
    let (a, b, mut nats, outcomes) = kill_under_orders(always, true, Victim::Follower);
    // Two of the three NATS servers SIGKILLed and restarted: the cluster loses its
    // quorum, then recovers it.
    nats.kill9(1);
    nats.kill9(2);
    nats.restart(1).expect("a NATS server restarts");
    nats.restart(2).expect("a NATS server restarts");
    agree(&a, &b, &outcomes);
    // A node joining with an empty data directory, from the cluster's snapshot set,
    // holds exactly what A and B hold.
    let c = Server::with_config(&with_snapshots(config_with(&nats, "c", always)));
    settled(&c);
    holds_exactly("c", &c, &outcomes);
    zones_agree(&c, &b);
}

/// One order through `server`: its status and body.
fn order(server: &Server, visitor: &str, order_id: &str) -> (u16, String) {
    let body = serverside_body(json!({"appId": KEY, "secretKey": SECRET,
        "visitorId": visitor, "events": [order_event(order_id)]}));
    let resp = try_post(server.addr, "/api/serverside", &body).expect("an answer");
    (resp.status, resp.body)
}

/// A shop page: one page view and a zone.
fn page(server: &Server) -> (u16, String) {
    let body = serverside_body(json!({"appId": KEY, "secretKey": SECRET,
        "visitorId": "browser", "zones": ["TR"],
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}]}));
    let resp = try_post(server.addr, "/api/serverside", &body).expect("an answer");
    (resp.status, resp.body)
}

#[test]
fn a_quorum_loss_under_interval_keeps_every_order_in_the_outbox_until_the_cluster_stores_it() {
    let mut nats = NatsCluster::start(3).expect("a NATS cluster");
    let a = Server::with_config(&config_with(&nats, "a", ""));
    let b = Server::with_config(&config_with(&nats, "b", ""));
    let token = add_products(&a, &["p1"]);
    applied_on(&b, &token);

    nats.kill9(1);
    nats.kill9(2);
    let mut acked = Vec::new();
    // Answered on credit: the outbox holds them until the cluster has a quorum again.
    wait_for("orders held in the outbox", REPLICATED, || {
        let order_id = format!("q-{}", acked.len());
        let (status, body) = order(&a, "quorum-shopper", &order_id);
        assert_eq!(status, 200, "{body}");
        acked.push(order_id);
        (acked.len() >= 50 && gauge(&a, "vitrine_cluster_outbox_records") >= 1.0).then_some(())
    });
    assert!(gauge(&a, "vitrine_cluster_outbox_oldest_seconds") > 0.0);
    let (status, body) = page(&a);
    assert_eq!(status, 200, "{body}");

    nats.restart(1).expect("a NATS server restarts");
    nats.restart(2).expect("a NATS server restarts");
    let outcomes = Outcomes {
        acked,
        ..Outcomes::default()
    };
    agree(&a, &b, &outcomes);
    let metrics = a.get("/metrics").body;
    assert!(
        metrics.contains(&format!(
            "vitrine_cluster_publish_retries_total{{account=\"{KEY}\"}}"
        )),
        "{metrics}"
    );
}

#[test]
fn a_quorum_loss_under_always_refuses_orders_with_nothing_applied_and_still_answers_shop_pages() {
    let mut nats = NatsCluster::start(3).expect("a NATS cluster");
    let always = "events_fsync = \"always\"\n";
    let a = Server::with_config(&config_with(&nats, "a", always));
    let b = Server::with_config(&config_with(&nats, "b", always));
    let token = add_products(&a, &["p1"]);
    applied_on(&b, &token);
    let mut outcomes = Outcomes::default();
    let (status, body) = order(&a, "quorum-shopper", "before");
    assert_eq!(status, 200, "{body}");
    outcomes.acked.push("before".to_owned());

    nats.kill9(1);
    nats.kill9(2);
    // The first orders may be taken before the outbox knows the cluster fails (kept);
    // once it knows, an order is refused at once, with nothing applied.
    let mut n = 0;
    wait_for("an order refused with nothing recorded", REPLICATED, || {
        n += 1;
        let order_id = format!("q-{n}");
        let (status, body) = order(&a, "quorum-shopper", &order_id);
        match status {
            200 => outcomes.acked.push(order_id),
            503 if body.contains("it is kept") => outcomes.kept.push(order_id),
            503 if body.contains("nothing was recorded") => {
                outcomes.refused.push((order_id, Instant::now()));
                return Some(());
            }
            _ => panic!("unexpected answer: {status} {body}"),
        }
        None
    });
    // More orders refused while the cluster stays down.
    for extra in 0..5 {
        let order_id = format!("q-refused-{extra}");
        let (status, body) = order(&a, "quorum-shopper", &order_id);
        assert!(
            status == 503 && body.contains("nothing was recorded"),
            "{status} {body}"
        );
        outcomes.refused.push((order_id, Instant::now()));
    }
    // Shop pages go on: a request that only views a page does not wait for the cluster.
    let (status, body) = page(&a);
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert!(answer["zones"]["TR"].is_object(), "{answer}");

    nats.restart(1).expect("a NATS server restarts");
    nats.restart(2).expect("a NATS server restarts");
    agree(&a, &b, &outcomes);
    // Refusals are counted, and the cluster's stop and recovery logged once each with the
    // count refused between, not an error line per refused request.
    let refused = outcomes.refused.len();
    let counted = gauge(&a, "vitrine_cluster_refused_total");
    assert!(
        counted >= refused as f64,
        "{counted} counted, {refused} refused"
    );
    let log = plain(&a.log());
    assert!(!log.contains("request failed"), "{log}");
    assert!(log.contains("the cluster stopped storing records"), "{log}");
    let logged: usize = log
        .lines()
        .filter(|line| line.contains("the cluster stores records again"))
        .filter_map(|line| {
            line.split("refused=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum();
    assert!(
        logged >= refused,
        "{logged} logged as refused, {refused} refused: {log}"
    );
}

#[test]
fn orders_answered_during_a_quorum_loss_reach_the_other_node_after_their_node_is_sigkilled() {
    let mut nats = NatsCluster::start(3).expect("a NATS cluster");
    let config = config_with(&nats, "a", "");
    let a = Server::with_config(&config);
    let b = Server::with_config(&config_with(&nats, "b", ""));
    let token = add_products(&a, &["p1"]);
    applied_on(&b, &token);

    nats.kill9(1);
    nats.kill9(2);
    let orders: Vec<String> = (0..30).map(|n| format!("kept-{n}")).collect();
    for order_id in &orders {
        let (status, body) = order(&a, "quorum-shopper", order_id);
        assert_eq!(status, 200, "{body}");
    }
    assert!(gauge(&a, "vitrine_cluster_outbox_records") >= 30.0);
    // Past the `interval` window: two fsyncs after the last answer.
    let fsyncs = gauge(&a, "vitrine_wal_fsyncs_total");
    wait_for("two fsyncs", REPLICATED, || {
        (gauge(&a, "vitrine_wal_fsyncs_total") >= fsyncs + 2.0).then_some(())
    });
    let dir = a.kill9();
    nats.restart(1).expect("a NATS server restarts");
    nats.restart(2).expect("a NATS server restarts");

    // Restarted, the node publishes again what its log holds past its outbox mark.
    let a = Server::start_in(dir, Some(&config));
    assert!(
        a.log().contains("published again"),
        "the restart says it publishes the kept records again: {}",
        a.log()
    );
    let outcomes = Outcomes {
        acked: orders,
        ..Outcomes::default()
    };
    agree(&a, &b, &outcomes);
}

#[test]
fn an_empty_node_refuses_to_start_when_the_snapshot_sets_exist_but_cannot_be_read() {
    let mut nats = NatsCluster::start(3).expect("a NATS cluster");
    let a = Server::with_config(&with_snapshots(config_with(&nats, "a", "")));
    add_products(&a, &["p1"]);
    wait_for("a snapshot set stored", REPLICATED, || {
        plain(&a.log())
            .contains("cluster snapshot stored")
            .then_some(())
    });
    // No quorum: the object store exists, and nothing of it can be read.
    nats.kill9(1);
    nats.kill9(2);
    let config = config_with(&nats, "c", "")
        .replace("replicas = 3\n", "replicas = 3\njoin_timeout_secs = 3\n");
    let refused = vitrine_testkit::TestServer::start_in(
        std::path::Path::new(crate::common::binary()),
        tempfile::tempdir().expect("a data directory"),
        Some(&config),
    );
    let Err(error) = refused else {
        panic!("C started without the snapshot sets it could not read");
    };
    let error = plain(&error.to_string());
    assert!(
        error.contains("could not be read") && error.contains("do not delete anything"),
        "{error}"
    );
    assert!(
        !error.contains("start the node with an empty data directory"),
        "{error}"
    );
}

/// Orders taken by A under `interval` while two of the three NATS servers are down for
/// five times the stream's duplicate window (1 s here): the outbox keeps trying them
/// until the quorum is back, and one whose attempt was stored without its
/// acknowledgement is stored again once the window has passed. Every node counts each
/// order once (orders are known by id), a node joining afterwards from the whole stream
/// too.
#[test]
fn orders_retried_past_the_duplicate_window_are_counted_once_on_every_node() {
    let mut nats = NatsCluster::start(3).expect("a NATS cluster");
    let urls = config_with(&nats, "x", "");
    let config = |node: &str| {
        urls.replace("node = \"x\"", &format!("node = {node:?}"))
            .replace(
                "replicas = 3\n",
                "replicas = 3\nduplicate_window_secs = 1\n",
            )
    };
    let a = Server::with_config(&config("a"));
    let b = Server::with_config(&config("b"));
    let token = add_products(&a, &PRODUCTS);
    applied_on(&b, &token);
    let outcomes = Mutex::new(Outcomes::default());
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (stop, outcomes, a) = (&stop, &outcomes, &a);
        scope.spawn(move || shop(a, "a", stop, outcomes));
        let answered = || outcomes.lock().unwrap().acked.len();
        wait_for("orders before the fault", REPLICATED, || {
            (answered() >= 100).then_some(())
        });
        let leader = wait_for("the stream's leader", REPLICATED, || {
            nats.stream_leader(&stream())
        });
        let (one, two) = ((leader + 1) % 3, (leader + 2) % 3);
        nats.kill9(one);
        nats.kill9(two);
        let at = Instant::now();
        wait_for("orders kept through the quorum loss", REPLICATED, || {
            (at.elapsed() >= Duration::from_secs(5)).then_some(())
        });
        nats.restart(one).expect("a NATS server restarts");
        nats.restart(two).expect("a NATS server restarts");
        let back = answered();
        wait_for("orders after the quorum is back", REPLICATED, || {
            (answered() >= back + 100).then_some(())
        });
        stop.store(true, Ordering::Release);
    });
    let outcomes = outcomes.into_inner().unwrap();
    assert!(
        outcomes.kept.is_empty() && outcomes.refused.is_empty(),
        "nothing refused under interval: {outcomes:?}"
    );
    agree(&a, &b, &outcomes);
    let c = Server::with_config(&config("c"));
    settled(&c);
    holds_exactly("c", &c, &outcomes);
}
