//! `/api/productfeed` end to end: a loopback file server, the real binary, the status
//! endpoint, and what the zones show afterwards.

use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::records;

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
    let extra = json!({"Image": "//img/x.jpg", "Categories": ["c1"], "Brand": "b1"});
    records::with(records::product(id, "10.00 GBP"), extra)
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
    wait_for("feed to finish", Duration::from_secs(240), || {
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

#[test]
fn the_catalogue_survives_a_restart_without_refetching_and_a_corrupt_snapshot_falls_back() {
    let first = json!([product("v1-a"), product("v1-b")])
        .to_string()
        .into_bytes();
    let second = json!([product("v2-a")]).to_string().into_bytes();
    let server = Server::with_config(FEED_CONFIG);
    {
        let files = FeedServer::start(vec![("first.json", first), ("second.json", second)]);
        for name in ["first.json", "second.json"] {
            let token = submit(&server, &files.url(name));
            assert_eq!(wait_done(&server, &token)["Status"], "Complete");
        }
    }
    assert_eq!(trending(&server), ["v2-a"]);
    // The feed server is gone; the restarted server maps the newest snapshot.
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(FEED_CONFIG));
    assert_eq!(trending(&server), ["v2-a"]);
    assert!(
        server.log().contains("catalogue restored"),
        "{}",
        server.log()
    );

    // Flip a byte in the newest snapshot: the previous one is served, and the log says why.
    let account_dir = crate::common::account_dir(&server.data_path(), "feed-shop");
    let mut snapshots: Vec<_> = std::fs::read_dir(&account_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "snap"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("catalogue-"))
        })
        .collect();
    snapshots.sort();
    assert_eq!(snapshots.len(), 2, "{snapshots:?}");
    let newest = snapshots.last().unwrap().clone();
    let mut bytes = std::fs::read(&newest).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x55;
    std::fs::write(&newest, bytes).unwrap();
    let server = Server::start_in(server.kill9(), Some(FEED_CONFIG));
    let mut ids = trending(&server);
    ids.sort();
    assert_eq!(ids, ["v1-a", "v1-b"]);
    let log = server.log();
    assert!(
        log.contains("skipping snapshot") && log.contains("payload checksum mismatch"),
        "{log}"
    );
}

#[test]
fn import_writes_the_snapshot_the_server_opens() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("vitrine.toml");
    std::fs::write(&config, FEED_CONFIG).unwrap();
    let feed = dir.path().join("feed.json");
    std::fs::write(&feed, vendor_fixture("ProductFeedWithGroupPrices.json")).unwrap();
    let data = dir.path().join("data");
    let import =
        |account: &str| crate::common::import(account, &config, &data, &[feed.as_os_str()]);
    let stdout = crate::common::succeeded(&import("feed-shop"));
    assert!(
        stdout.contains("imported 3 products into feed-shop"),
        "{stdout}"
    );
    assert!(
        stdout.contains("catalogue-00000000000000000001.snap"),
        "{stdout}"
    );

    let out = import("nobody");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no account has access_key \"nobody\""));

    let server = Server::start_in(dir, Some(FEED_CONFIG));
    assert!(
        server.log().contains("catalogue restored"),
        "{}",
        server.log()
    );
    // Product 1 ended in 2021 and P18316 is B2B-only (acc2): P31175 is excluded for acc1 only.
    assert_eq!(trending(&server), ["P31175"]);
}

#[test]
fn serving_continues_during_a_feed_and_never_mixes_versions() {
    let old: Vec<Value> = (0..400).map(|i| product(&format!("old-{i}"))).collect();
    let new: Vec<Value> = (0..400).map(|i| product(&format!("new-{i}"))).collect();
    let files = FeedServer::start(vec![
        ("old.json", Value::Array(old).to_string().into_bytes()),
        ("new.json", Value::Array(new).to_string().into_bytes()),
    ]);
    let server = Server::with_config(FEED_CONFIG);
    let token = submit(&server, &files.url("old.json"));
    assert_eq!(wait_done(&server, &token)["Status"], "Complete");
    let token = submit(&server, &files.url("new.json"));
    let mut seen_new = false;
    let mut answers = 0;
    while !seen_new || answers < 20 {
        let ids = trending(&server);
        answers += 1;
        assert_eq!(ids.len(), 20, "a full zone on every answer");
        let news = ids.iter().filter(|id| id.starts_with("new-")).count();
        assert!(
            news == 0 || news == ids.len(),
            "one answer mixed versions: {ids:?}"
        );
        seen_new |= news > 0;
        assert!(answers < 5_000, "the new catalogue never appeared");
    }
    assert_eq!(wait_done(&server, &token)["Status"], "Complete");
}
