//! The zone cache through the server: with `memory.zone_cache_mib` set, zones that are
//! the same for every visitor of a page are reused (its hits and misses in `/metrics`),
//! answers are the same as without it (the default), and a basket still takes its
//! products out of a cached zone.

use serde_json::{Value, json};
use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ZoneToml};

use std::time::Duration;

use crate::common::{DEMO_KEY, DEMO_SECRET, Server, request, serverside_body, wait_for};

/// The browser origin the account allows.
const ORIGIN: &str = "https://shop.example";

/// The demo account with a trending zone, a category zone and a similar zone.
fn config(memory: &str) -> String {
    let account = AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo)
        .clientside("allowed_origins", &format!("[{ORIGIN:?}]"))
        .zone(ZoneToml::new("TR", "trending", 6))
        .zone(ZoneToml::new("CT", "category_top", 6).fallback(&["trending"]))
        .zone(ZoneToml::new("SIM", "similar", 4).fallback(&["trending"]));
    ConfigToml::new(memory).account(account).to_toml()
}

/// The zones of one request (the visitor and session ids left out).
fn zones(server: &Server, visitor: &str, events: Value) -> Value {
    let body = serverside_body(
        json!({"visitorId": visitor, "sessionId": format!("{visitor}-s"),
        "events": events, "zones": ["TR", "CT", "SIM"]}),
    );
    let resp = server.post_json("/api/serverside", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["zones"].clone()
}

/// The zones and their built-in cards of one browser request.
fn browser_zones(server: &Server, visitor: &str, events: Value) -> (Value, Value) {
    let body = json!({"currentUrl": "https://shop.example/", "visitorId": visitor,
        "sessionId": format!("{visitor}-s"), "events": events, "zones": ["TR", "CT", "SIM"]});
    let resp = request(
        server.addr,
        "POST",
        &format!("/api/clientside/{DEMO_KEY}"),
        body.to_string().as_bytes(),
        &[
            ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0"),
            ("Origin", ORIGIN),
        ],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let answer = resp.json();
    (answer["zones"].clone(), answer["html"].clone())
}

fn counter(server: &Server, name: &str) -> f64 {
    let scrape = super::operations::scrape(&server.get("/metrics"));
    super::operations::value(&scrape, name, &[("account", DEMO_KEY)]).unwrap_or(f64::NAN)
}

/// Waits until `server` has published in a models round everything it was sent, so
/// that two servers sent the same requests rank alike.
fn settled(server: &Server) {
    wait_for(
        "a models round to take in what was sent",
        Duration::from_secs(240),
        || (counter(server, "vitrine_model_changes_pending") == 0.0).then_some(()),
    );
}

#[test]
fn zones_the_same_for_every_visitor_are_reused_and_answer_as_without_the_cache() {
    let cached = Server::with_config(&config("[memory]\nzone_cache_mib = 32\n"));
    // Off by default.
    let plain = Server::with_config(&config(""));
    // What moves the rankings: sent to both servers alike, then taken in by a models
    // round on each before the answers are compared (each server runs its rounds on
    // its own clock).
    let writes = [
        json!([{"name": "page_view", "data": {"page_type": "product_page", "product_id": "P00002"}},
               {"name": "product_view", "data": {"id": "P00002"}}]),
        json!([{"name": "page_view", "data": {"page_type": "product_page", "product_id": "P00002"}},
               {"name": "set_basket", "data": {"items": [{"id": "P00001", "qty": 1, "unitprice": 10.0}]}}]),
    ];
    // Pages whose requests move no product zone's list.
    let pages = [
        json!([{"name": "page_view", "data": {"page_type": "homepage"}}]),
        json!([{"name": "page_view", "data": {"page_type": "product_page", "product_id": "P00002"}}]),
        json!([{"name": "page_view", "data": {"page_type": "category_listing_page", "category_id": "cat-01"}}]),
    ];
    for round in 0..3 {
        for (n, events) in writes.iter().enumerate() {
            for server in [&cached, &plain] {
                zones(server, &format!("writer-{round}-{n}"), events.clone());
            }
        }
        settled(&cached);
        settled(&plain);
        for (n, events) in pages.iter().enumerate() {
            let visitor = format!("visitor-{round}-{n}");
            assert_eq!(
                zones(&cached, &visitor, events.clone()),
                zones(&plain, &visitor, events.clone()),
                "round {round}, page {n}"
            );
            // And through the browser endpoint, the built-in cards too.
            let visitor = format!("browser-{round}-{n}");
            let (a, b) = (
                browser_zones(&cached, &visitor, events.clone()),
                browser_zones(&plain, &visitor, events.clone()),
            );
            assert!(
                a.1["TR"]
                    .as_str()
                    .is_some_and(|h| h.contains("data-pc-item")),
                "{}",
                a.1
            );
            assert_eq!(a, b, "round {round}, page {n} through the browser");
        }
    }
    // The basket's product is not shown, though the cached zone holds it.
    let basket = zones(&cached, "visitor-basket", writes[1].clone());
    let ids: Vec<&str> = basket["TR"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item["Id"].as_str())
        .collect();
    assert!(!ids.contains(&"P00001"), "{ids:?}");

    assert!(counter(&cached, "vitrine_zone_cache_hits_total") >= 10.0);
    assert!(counter(&cached, "vitrine_zone_cache_misses_total") >= 3.0);
    assert!(counter(&cached, "vitrine_zone_cache_bytes") > 0.0);
    assert_eq!(counter(&plain, "vitrine_zone_cache_hits_total"), 0.0);
    assert_eq!(counter(&plain, "vitrine_zone_cache_misses_total"), 0.0);
}

#[test]
fn a_zone_cache_bound_out_of_range_is_refused_naming_the_key() {
    let refused = vitrine_testkit::TestServer::start_in(
        std::path::Path::new(crate::common::binary()),
        tempfile::tempdir().expect("a data directory"),
        Some(&config("[memory]\nzone_cache_mib = 100000\n")),
    );
    let Err(error) = refused else {
        panic!("the server started with a zone cache of 100000 MiB per account");
    };
    assert!(
        error.to_string().contains("memory.zone_cache_mib"),
        "{error}"
    );
}
