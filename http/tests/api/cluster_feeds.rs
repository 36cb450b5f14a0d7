//! Full feeds in a cluster: a feed is built once, by the node that claims it, served by
//! every node, and taken over by another node when its builder dies.

use crate::common::{self, FeedServer, Server, wait_for};
use serde_json::{Value, json};
use vitrine_testkit::nats::NatsCluster;

use super::cluster::{
    KEY, REPLICATED, SECRET, add_products, applied_on, category, config_with, product, settled,
    status,
};

/// `[feeds]` for the feed tests: feeds from the loopback file server, a stalled
/// download waited for long enough to be killed in.
const FEEDS: &str = "
[feeds]
allow_private_addresses = true
fetch_timeout_secs = 300
";

/// A full feed of `ids` (every one in category c1).
fn full_feed(ids: &[String]) -> Vec<u8> {
    let products: Vec<Value> = ids.iter().map(|id| product(id)).collect();
    json!({"Version": 2, "Products": products})
        .to_string()
        .into_bytes()
}

fn submit_feed(server: &Server, url: &str) -> String {
    let body = json!({"appKey": KEY, "secretKey": SECRET, "url": url});
    let resp = server.post_json("/api/productfeed", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.header("x-feed-token").unwrap().to_owned()
}

/// The feed's status on `server` once it is no longer processing (a node that has not
/// read the submission from the stream yet does not know the token).
fn feed_done(server: &Server, token: &str) -> Value {
    wait_for("the feed finished", REPLICATED, || {
        let body = json!({"AppKey": KEY, "SecretKey": SECRET, "Tokens": [token]});
        let item = server.post_json("/api/productfeedstatus", &body).json()[0].clone();
        (item["Status"] != "Processing" && item["Error"] != "unknown token").then_some(item)
    })
}

/// Streams a full feed of `ids` to `server` through the plugins' form endpoints, in
/// two pieces; its token.
fn stream_feed(server: &Server, name: &str, ids: &[String]) -> String {
    let body = String::from_utf8(full_feed(ids)).unwrap();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut token = String::new();
    for (path, piece) in [
        ("/feed-create", Some(first)),
        ("/feed-append", Some(rest)),
        ("/feed-close", None),
    ] {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("accessKey", KEY);
        form.append_pair("secretKey", SECRET);
        form.append_pair("feedName", name);
        if let Some(piece) = piece {
            form.append_pair("payLoad", piece);
        }
        let resp = common::request(
            server.addr,
            "POST",
            path,
            form.finish().as_bytes(),
            &[("Content-Type", "application/x-www-form-urlencoded")],
        );
        assert_eq!(resp.status, 200, "{path}: {}", resp.body);
        if let Some(feed) = resp.header("x-feed-token") {
            token = feed.to_owned();
        }
    }
    token
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

/// [`wait_for`] within [`REPLICATED`], failing with what `nodes` logged of feeds.
fn wait_or_show_logs<T>(
    what: &str,
    nodes: [&Server; 2],
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = std::time::Instant::now() + REPLICATED;
    loop {
        if let Some(value) = check() {
            return value;
        }
        if std::time::Instant::now() >= deadline {
            let logs: Vec<String> = nodes
                .iter()
                .map(|node| {
                    let log = node.log();
                    let lines: Vec<&str> = log.lines().filter(|l| l.contains("feed")).collect();
                    lines[lines.len().saturating_sub(30)..].join("\n")
                })
                .collect();
            panic!(
                "timed out after {REPLICATED:?} waiting for {what}; node a logged:\n{}\nnode b logged:\n{}",
                logs[0], logs[1]
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Lines of a node's log saying it built a feed for the cluster.
fn builds(server: &Server) -> usize {
    server
        .log()
        .matches("building the feed for the cluster")
        .count()
}

#[test]
fn a_feed_is_built_once_served_by_every_node_and_taken_over_when_its_builder_dies() {
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    let first: Vec<String> = (0..30).map(|i| format!("f{i}")).collect();
    let streamed: Vec<String> = (0..12).map(|i| format!("s{i}")).collect();
    let second: Vec<String> = (0..25).map(|i| format!("g{i}")).collect();
    let files = FeedServer::start(vec![
        ("first.json", full_feed(&first)),
        ("second.json", full_feed(&second)),
    ]);
    let config = |node: &str| config_with(&nats, node, FEEDS);
    let a = Server::with_config(&config("a"));
    let b = Server::with_config(&config("b"));
    let token = add_products(&a, &["p0", "p1"]);
    applied_on(&b, &token);

    // A feed through A: downloaded and built by one node, swapped in on both.
    let feed = submit_feed(&a, &files.url("first.json"));
    for server in [&a, &b] {
        let done = feed_done(server, &feed);
        assert_eq!(done["Status"], "Complete", "{done}");
        assert_eq!(sorted(category(server)), sorted(first.clone()));
    }
    assert_eq!(files.hits("first.json"), 1, "downloaded once");
    assert_eq!(builds(&a) + builds(&b), 1, "built once");

    // A feed streamed to B: its body is shared, whichever node builds it.
    let feed = stream_feed(&b, "product-ab12", &streamed);
    for server in [&a, &b] {
        let done = feed_done(server, &feed);
        assert_eq!(done["Status"], "Complete", "{done}");
        assert_eq!(sorted(category(server)), sorted(streamed.clone()));
    }
    assert_eq!(builds(&a) + builds(&b), 2, "built once");

    // A feed whose first download never ends: the node building it is killed, the
    // other takes the job over once the claim lapses, and downloads it again.
    // Counted before the submission: a node may claim the feed and say so before the
    // submission's answer is read.
    let before = (builds(&a), builds(&b));
    let feed = submit_feed(&b, &files.url("once-stall-second.json"));
    let builder_is_a = wait_or_show_logs("a node building the feed", [&a, &b], || {
        if builds(&a) > before.0 {
            Some(true)
        } else {
            (builds(&b) > before.1).then_some(false)
        }
    });
    wait_for("the stalled download", REPLICATED, || {
        (files.hits("once-stall-second.json") == 1).then_some(())
    });
    let (builder, survivor) = if builder_is_a { (a, b) } else { (b, a) };
    // A delta accepted while the feed is being built is applied on top of it.
    let late = add_products(&survivor, &["late"]);
    applied_on(&survivor, &late);
    let kept = builder.kill9();
    let done = feed_done(&survivor, &feed);
    assert_eq!(done["Status"], "Complete", "{done}");
    assert_eq!(
        files.hits("once-stall-second.json"),
        2,
        "taken over and downloaded again"
    );
    let mut expected = second.clone();
    expected.push("late".to_owned());
    let expected = sorted(expected);
    assert_eq!(sorted(category(&survivor)), expected);

    // The killed node comes back and catches up: the feed done, the same catalogue.
    let builder = Server::start_in(kept, Some(&config(if builder_is_a { "a" } else { "b" })));
    let done = feed_done(&builder, &feed);
    assert_eq!(done["Status"], "Complete", "{done}");
    settled(&builder);
    assert_eq!(sorted(category(&builder)), expected);
    assert_eq!(status(&builder, &late)["Status"], 1);
}
