//! Bounded memory under a flood: a million new visitor ids through `/api/serverside`
//! (as a bot that invents ids, or a crawler without cookies, sends them) keep the
//! account's visitors at its bound and the process's memory under a stated limit,
//! while known visitors keep their history.

use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, DEMO_KEY, DEMO_SECRET, ZoneToml};

use crate::common::{Resp, Server, request};

/// New visitor ids sent.
const FLOOD: usize = 1_000_000;
/// The account's `max_visitors`.
const BOUND: usize = 10_000;
/// The resident memory the server must stay under throughout, in bytes.
const RSS_LIMIT: f64 = 256.0 * 1024.0 * 1024.0;
/// Connections the flood is sent on, each with this many requests in flight.
const CONNECTIONS: usize = 4;
const PIPELINE: usize = 64;

fn body(visitor: &str, events: &serde_json::Value) -> String {
    json!({"appId": DEMO_KEY, "secretKey": DEMO_SECRET, "currentUrl": "https://shop.example/",
        "userAgent": "flood", "ip": "203.0.113.9", "visitorId": visitor, "events": events})
    .to_string()
}

fn post(body: &str) -> Vec<u8> {
    crate::common::serverside_request(body)
}

/// Sends `requests` pipelined (`PIPELINE` in flight) on one connection; every answer
/// must be a 200.
fn send_all(addr: std::net::SocketAddr, requests: impl Iterator<Item = Vec<u8>>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut requests = requests.peekable();
    while requests.peek().is_some() {
        let batch: Vec<Vec<u8>> = requests.by_ref().take(PIPELINE).collect();
        let bytes: Vec<u8> = batch.concat();
        for response in crate::common::pipeline(&mut stream, &bytes, batch.len()) {
            assert_eq!(response.status, 200, "{}", response.body);
        }
    }
}

/// A value of the scrape, by metric name and account label (no other labels).
fn metric(server: &Server, name: &str) -> f64 {
    let resp = server.get("/metrics");
    assert_eq!(resp.status, 200);
    resp.body
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (key, value) = line.rsplit_once(' ')?;
            let matches = key == name || key == format!("{name}{{account=\"{DEMO_KEY}\"}}");
            matches.then(|| value.parse().ok()).flatten()
        })
        .unwrap_or_else(|| panic!("{name} is not in the scrape"))
}

/// The account's `vitrine_evictions_total` for `reason`.
fn evictions(server: &Server, reason: &str) -> f64 {
    server
        .get("/metrics")
        .body
        .lines()
        .find(|l| l.starts_with("vitrine_evictions_total") && l.contains(&format!("\"{reason}\"")))
        .and_then(|l| l.rsplit_once(' ')?.1.parse().ok())
        .unwrap_or_else(|| panic!("no evictions for {reason} in the scrape"))
}

fn recently_viewed(server: &Server, visitor: &str) -> Vec<String> {
    let resp: Resp = server.post(
        "/api/serverside",
        &json!({"appId": DEMO_KEY, "secretKey": DEMO_SECRET, "currentUrl": "https://shop.example/",
            "userAgent": "a", "ip": "203.0.113.9", "visitorId": visitor, "zones": ["RV"]})
        .to_string(),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["zones"]["RV"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["Id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_million_new_visitor_ids_keep_visitors_at_the_bound_and_known_ones_keep_their_history() {
    let config = ConfigToml::new("")
        .account(
            AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo).zone(ZoneToml::new(
                "RV",
                "recently_viewed",
                5,
            )),
        )
        .to_toml()
        .replace(
            "demo_catalogue = true",
            &format!("demo_catalogue = true\nmax_visitors = {BOUND}"),
        );
    let server = Server::with_config(&config);
    // Known visitors with a history.
    let known: Vec<String> = (0..50).map(|i| format!("known-{i}")).collect();
    for (i, visitor) in known.iter().enumerate() {
        let views = json!([
            {"name": "product_view", "data": {"id": format!("P{:05}", i + 1)}},
            {"name": "product_view", "data": {"id": format!("P{:05}", i + 101)}}
        ]);
        let resp = request(
            server.addr,
            "POST",
            "/api/serverside",
            body(visitor, &views).as_bytes(),
            &[],
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
    }

    // Sampled while the flood runs: the most visitors and the most memory seen.
    let done = Arc::new(AtomicBool::new(false));
    let most_visitors = Arc::new(AtomicU64::new(0));
    let most_rss = Arc::new(AtomicU64::new(0));
    let addr = server.addr;
    let no_events = json!([]);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let visitors = metric(&server, "vitrine_visitors") as u64;
                let rss = metric(&server, "process_resident_memory_bytes") as u64;
                most_visitors.fetch_max(visitors, Ordering::Relaxed);
                most_rss.fetch_max(rss, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let flooders: Vec<_> = (0..CONNECTIONS)
            .map(|c| {
                let no_events = &no_events;
                let known = &known;
                scope.spawn(move || {
                    let share = FLOOD / CONNECTIONS;
                    let requests = (0..share).flat_map(move |i| {
                        let mut batch = vec![post(&body(&format!("flood-{c}-{i}"), no_events))];
                        // The known visitors come back after every quarter of the bound
                        // of new visitors (across the connections).
                        if c == 0 && i % (BOUND / (4 * CONNECTIONS)) == 0 {
                            batch.extend(known.iter().map(|v| post(&body(v, no_events))));
                        }
                        batch
                    });
                    send_all(addr, requests);
                })
            })
            .collect();
        for flooder in flooders {
            flooder.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
    });

    // The eviction pass after the last requests runs within 50 ms of them (on a loaded
    // machine, later): waited for.
    let visitors = crate::common::wait_for(
        "visitors back within the bound",
        Duration::from_secs(60),
        || {
            let visitors = metric(&server, "vitrine_visitors");
            (visitors <= BOUND as f64).then_some(visitors)
        },
    );
    let most = most_visitors.load(Ordering::Relaxed) as f64;
    let rss = most_rss.load(Ordering::Relaxed) as f64;
    println!(
        "flood of {FLOOD}: visitors at the end {visitors}, at most {most} (bound {BOUND}); \
         resident memory at most {:.1} MiB (limit {:.0} MiB)",
        rss / 1048576.0,
        RSS_LIMIT / 1048576.0
    );
    assert!(visitors <= BOUND as f64, "{visitors} visitors at the end");
    // Eviction runs as soon as the bound is passed (checked every 50 ms): the count
    // passes it by at most what arrives meanwhile.
    assert!(most <= BOUND as f64 * 1.2, "{most} visitors at one point");
    assert!(rss < RSS_LIMIT, "{rss} bytes resident");
    let evicted = evictions(&server, "visitor_capacity");
    assert!(evicted >= (FLOOD - BOUND) as f64, "{evicted} evicted");
    for (i, visitor) in known.iter().enumerate() {
        assert_eq!(
            recently_viewed(&server, visitor),
            [format!("P{:05}", i + 101), format!("P{:05}", i + 1)],
            "{visitor} lost its history"
        );
    }
}

#[test]
fn over_the_memory_budget_the_least_recently_seen_visitors_go_a_tenth_at_a_time() {
    // A budget no process meets: the server evicts down to its floor of 1,000.
    let config = ConfigToml::new("[memory]\nmax_rss_mb = 1")
        .account(
            AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo).zone(ZoneToml::new(
                "RV",
                "recently_viewed",
                5,
            )),
        )
        .to_toml();
    let server = Server::with_config(&config);
    let requests = (0..3_000).map(|i| post(&body(&format!("v-{i}"), &json!([]))));
    send_all(server.addr, requests);
    crate::common::wait_for(
        "the visitors evicted down to the floor",
        Duration::from_secs(240),
        || (metric(&server, "vitrine_visitors") <= 1_000.0).then_some(()),
    );
    let evicted = evictions(&server, "visitor_memory");
    assert!(evicted >= 2_000.0, "{evicted}");
    assert!(
        server.log().contains("resident memory over the budget"),
        "{}",
        server.log()
    );
}
