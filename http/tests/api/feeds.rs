//! `/api/productfeed` end to end: a loopback file server, the real binary, the status
//! endpoint, and what the zones show afterwards.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{FeedServer, Server, serverside_body, vendor_fixture, wait_for};

const FEED_CONFIG: &str = r#"
[feeds]
allow_private_addresses = true
fetch_timeout_secs = 2
max_bytes = 65536

[[accounts]]
access_key = "feed-shop"
secret_key = "feed-shop-secret"
default_currency = "GBP"
  [[accounts.zones]]
  id = "HP-01"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 20
"#;

fn product(id: &str) -> Value {
    json!({"Id": id, "Title": format!("Product {id}"), "Link": format!("/p/{id}"), "Image": "//img/x.jpg",
        "Prices": ["10.00 GBP"], "Categories": ["c1"], "Brand": "b1"})
}

fn submit(server: &Server, url: &str) -> String {
    let resp = server.post_json(
        "/api/productfeed",
        &json!({"appKey": "feed-shop", "secretKey": "feed-shop-secret", "url": url}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.header("x-feed-token").unwrap().to_owned()
}

fn wait_done(server: &Server, token: &str) -> Value {
    wait_for("feed to finish", Duration::from_secs(30), || {
        let resp = server.post_json(
            "/api/productfeedstatus",
            &json!({"AppKey": "feed-shop", "Tokens": [token]}),
        );
        let item = resp.json()[0].clone();
        (item["Status"] != "Processing").then_some(item)
    })
}

fn trending(server: &Server) -> Vec<String> {
    let body = serverside_body(
        json!({"appId": "feed-shop", "secretKey": "feed-shop-secret", "zones": ["HP-01"]}),
    );
    let resp = server.post_json("/api/serverside", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["zones"]["HP-01"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn vendor_product_feed_completes_reports_the_skipped_record_and_serves() {
    let files = FeedServer::start(vec![(
        "products.json",
        vendor_fixture("ExampleProductFeed.json"),
    )]);
    let server = Server::with_config(FEED_CONFIG);
    assert!(trending(&server).is_empty());
    let token = submit(&server, &files.url("products.json"));
    let status = wait_done(&server, &token);
    assert_eq!(status["Status"], "Complete", "{status}");
    assert!(status.get("Error").is_none());
    let detail = status["Detail"].as_str().unwrap();
    assert_eq!(
        detail,
        "2 of 3 products valid; skipped: Products[2] (Sku \"P18316\"): Prices: required"
    );
    // P31175 ended in 2021 (EndDate): only product 1 is live.
    assert_eq!(trending(&server), ["1"]);
}

#[test]
fn a_feed_with_products_categories_and_brands_fills_brand_objects() {
    let feed = json!({"Version": 2, "Products": [product("a"), product("b")],
        "Brands": [{"Id": "b1", "DisplayName": "Brand One", "Image": "//img/b1.png", "Link": "/brand/b1"}],
        "Categories": [{"Id": "c1", "DisplayName": "Cat One"}]});
    let files = FeedServer::start(vec![("full.json", feed.to_string().into_bytes())]);
    let server = Server::with_config(FEED_CONFIG);
    let token = submit(&server, &files.url("redirect-full.json"));
    let status = wait_done(&server, &token);
    assert_eq!(status, json!({"Token": token, "Status": "Complete"}));
    let body = serverside_body(
        json!({"appId": "feed-shop", "secretKey": "feed-shop-secret", "zones": ["HP-01"]}),
    );
    let item =
        server.post_json("/api/serverside", &body).json()["zones"]["HP-01"]["items"][0].clone();
    assert_eq!(
        item["Brand"],
        json!({"Id": "b1", "DisplayName": "Brand One", "Image": "//img/b1.png", "Link": "/brand/b1"})
    );
}

#[test]
fn failed_feeds_report_why_and_leave_the_catalogue_alone() {
    let good = json!([product("keep-1"), product("keep-2")])
        .to_string()
        .into_bytes();
    let half_bad = json!([product("x1"), {"Id": "x2"}, {"Id": "x3"}])
        .to_string()
        .into_bytes();
    let files = FeedServer::start(vec![
        ("good.json", good),
        ("half-bad.json", half_bad),
        ("garbage.json", b"[{\"Id\": \"a\",, }]".to_vec()),
        ("big.json", vec![b' '; 100_000]),
        ("empty.json", b"[]".to_vec()),
    ]);
    let server = Server::with_config(FEED_CONFIG);
    let token = submit(&server, &files.url("good.json"));
    assert_eq!(wait_done(&server, &token)["Status"], "Complete");
    let before = trending(&server);
    assert_eq!(before, ["keep-1", "keep-2"]);

    let cases = [
        ("missing.json", "the feed URL answered HTTP 404"),
        ("garbage.json", "the feed is not valid JSON"),
        (
            "half-bad.json",
            "more than half of the products are invalid (2 of 3)",
        ),
        (
            "big.json",
            "the feed is larger than the limit of 65536 bytes",
        ),
        ("stall.json", "the download did not finish within 2 s"),
        ("empty.json", "the feed holds no products"),
    ];
    for (name, expected) in cases {
        let token = submit(&server, &files.url(name));
        let status = wait_done(&server, &token);
        assert_eq!(status["Status"], "Error", "{name}: {status}");
        let error = status["Error"].as_str().unwrap();
        assert!(
            error.starts_with(expected),
            "{name}: {error:?} does not start with {expected:?}"
        );
        assert_eq!(trending(&server), before, "{name} changed the catalogue");
    }
    let garbage = {
        let token = submit(&server, &files.url("garbage.json"));
        wait_done(&server, &token)["Error"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(garbage.contains("at byte "), "{garbage}");
}

#[test]
fn a_queued_feed_still_runs_after_a_crash() {
    let feed = json!([product("after-restart")]).to_string().into_bytes();
    let files = FeedServer::start(vec![("products.json", feed)]);
    let server = Server::with_config(FEED_CONFIG);
    let token = submit(&server, &files.url("delay-products.json"));
    let server = Server::start_in(server.kill9(), Some(FEED_CONFIG));
    let status = wait_done(&server, &token);
    assert_eq!(status["Status"], "Complete", "{status}");
    assert_eq!(trending(&server), ["after-restart"]);
}
