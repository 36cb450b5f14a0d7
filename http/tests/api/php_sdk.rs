//! The vendor's PHP SDK against Vitrine, unmodified: its captured deltas and streamed
//! feeds replayed (`tests/fixtures/vendor-requests/sdk-requests.jsonl`), the rules of
//! its `/api/productdelta` and `/feed-*` form calls, a streamed feed across a crash,
//! the plugin account calls and `vitrine import-orders`.

use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::ZoneToml;

use crate::common::{DEMO_KEY, DEMO_SECRET, Resp, Server, viewed_item, wait_for};
use crate::plugins::{demo_config, fixture, zone_ids};

/// Sends one captured request as the client sent it; returns the answer.
fn replay(server: &Server, request: &Value) -> Resp {
    let path = request["path"].as_str().unwrap();
    let content_type = request["content_type"].as_str().unwrap();
    let body = request["body"].as_str().unwrap();
    crate::common::request(
        server.addr,
        "POST",
        path,
        body.as_bytes(),
        &[("Content-Type", content_type)],
    )
}

/// The status item of a feed token.
fn feed_status(server: &Server, token: &str) -> Value {
    let resp = server.post_json(
        "/api/productfeedstatus",
        &json!({"AppKey": DEMO_KEY, "Tokens": [token]}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()[0].clone()
}

/// Waits until a feed token leaves `Processing`; returns its status item.
fn feed_settled(server: &Server, token: &str) -> Value {
    wait_for(&format!("feed {token}"), Duration::from_secs(240), || {
        let item = feed_status(server, token);
        (item["Status"] != "Processing").then_some(item)
    })
}

#[test]
fn the_php_sdk_deltas_and_streamed_feeds_load_the_store() {
    let server = Server::demo();
    let mut delta_tokens = Vec::new();
    let mut feed_tokens = Vec::new();
    for request in fixture("sdk-requests.jsonl") {
        let resp = replay(&server, &request);
        assert!(
            (200..300).contains(&resp.status),
            "{} {}: {}",
            request["path"],
            resp.status,
            resp.body
        );
        match request["path"].as_str().unwrap() {
            "/api/productdelta" => {
                delta_tokens.push(resp.json()["Token"].as_str().unwrap().to_owned());
            }
            "/feed-close" => feed_tokens.push(resp.header("x-feed-token").unwrap().to_owned()),
            _ => {}
        }
    }
    assert_eq!(delta_tokens.len(), 5);
    for token in &delta_tokens {
        let status = wait_for("the SDK's deltas", Duration::from_secs(240), || {
            let resp = server.post_json(
                "/api/deltastatus",
                &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": [token]}),
            );
            let item = resp.json()[0].clone();
            (item["Status"] != 0).then_some(item)
        });
        assert_eq!(status["Status"], 1, "{status}");
    }
    let names: Vec<&str> = feed_tokens.iter().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "product-6b03e5f088f3e",
            "category-6b03e5f094bea",
            "brand-6b03e5f09cbc7",
            "user-6b03e5f0a7f46",
            "orders-6b03e5f0b933c"
        ]
    );
    for token in &feed_tokens {
        let item = feed_settled(&server, token);
        assert_eq!(item["Status"], "Complete", "{item}");
    }
    let orders = feed_status(&server, "orders-6b03e5f0b933c");
    assert!(
        orders["Detail"]
            .as_str()
            .unwrap()
            .contains("2 orders recorded"),
        "{orders}"
    );

    // The streamed product feed replaced the demo's products with the store's rows.
    let bag = viewed_item(&server, "sdk-shopper", vec![], "2001");
    assert_eq!(bag["Title"], "Vendor Bag 1");
    assert_eq!(bag["Sku"], "MB-2001");
    assert_eq!(bag["Link"], "//shop.example/vendor-bag-1.html");
    assert_eq!(bag["Description"], "Long description stripped 1");
    assert_eq!(bag["Price"], 45.0);
    assert_eq!(bag["Brand"]["Id"], "7");
    assert_eq!(
        bag["Brand"]["DisplayName"], "Acme",
        "the streamed brand feed"
    );
    assert_eq!(bag["Categories"], json!(["3", "12"]));
    // Group "1" of the list-shaped GroupPrices: shown to a customer of that group, as
    // the Magento module names it (`groupid`).
    let login = json!({"name": "customer_details", "data": {"userid": "9", "email": "bea@example.com", "groupid": "1"}});
    let grouped = viewed_item(&server, "sdk-group-1", vec![login], "2001");
    assert_eq!(grouped["Price"], 44.0, "{grouped}");
    // The order history counts for top sellers (BP-01): 2001 sold 2 units.
    wait_for(
        "the imported orders in top sellers",
        Duration::from_secs(240),
        || {
            let resp = server.serverside(json!({"zones": ["BP-01"]}));
            let ids = zone_ids(&resp, "BP-01");
            (ids.first().map(String::as_str) == Some("2001")).then_some(())
        },
    );
    // The user feed's customer 501 and their imported order: erasing them finds both.
    let erased = server.post_json(
        "/api/user/forget",
        &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "ann@example.com"}),
    );
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert!(erased.body.contains("1 user record"), "{}", erased.body);
}

#[test]
fn productdelta_takes_secret_numbers_and_deleteusers() {
    let server = Server::demo();
    let post = |body: Value| server.post_json("/api/productdelta", &body);
    let settle = |resp: &Resp| {
        assert_eq!(resp.status, 200, "{}", resp.body);
        let token = resp.json()["Token"].as_str().unwrap().to_owned();
        wait_for("a product delta", Duration::from_secs(240), || {
            let status = server.post_json(
                "/api/deltastatus",
                &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": [token]}),
            );
            let item = status.json()[0].clone();
            (item["Status"] != 0).then_some(item)
        })
    };
    let users = post(
        json!({"AppKey": DEMO_KEY, "Secret": DEMO_SECRET, "Format": "magentoplugin1.0.0",
        "Users": [{"UserId": "77", "Email": "gone@example.com"}], "DeleteUsers": []}),
    );
    assert_eq!(settle(&users)["Status"], 1);
    let forget = |id: &str| {
        server.post_json(
            "/api/user/forget",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": id}),
        )
    };
    // Deleting users and products that are (or are not) there, ids as numbers.
    let deleted = post(
        json!({"AppKey": DEMO_KEY, "Secret": DEMO_SECRET, "Format": "magentoplugin1.0.0",
        "Users": [], "DeleteUsers": [77, "404"], "Products": [], "DeleteProducts": [2900, 1]}),
    );
    assert_eq!(settle(&deleted)["Status"], 1, "unknown ids are no failure");
    assert_eq!(forget("77").status, 404, "user 77 was deleted");
    // Wrong secret, or the contract's field name on this path: refused.
    post(json!({"AppKey": DEMO_KEY, "Secret": "wrong-secret", "Products": []}))
        .assert_error(400, "Secret: does not match the access key");
    post(json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Products": []}))
        .assert_error(400, "Secret: required");
    post(json!({"AppKey": DEMO_KEY, "Secret": DEMO_SECRET, "DeleteProducts": [true]}))
        .assert_error(400, "DeleteProducts[0]: expected a string, got a boolean");
    // The secret never reaches the log.
    let logged =
        std::fs::read_dir(crate::common::account_dir(&server.data_path(), DEMO_KEY).join("wal"))
            .unwrap()
            .map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
            .any(|bytes| {
                bytes
                    .windows(DEMO_SECRET.len())
                    .any(|w| w == DEMO_SECRET.as_bytes())
            });
    assert!(!logged, "the secret was journaled");
}

/// A form body as PHP's `http_build_query` writes it.
fn form(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

fn stream(server: &Server, path: &str, pairs: &[(&str, &str)]) -> Resp {
    crate::common::request(
        server.addr,
        "POST",
        path,
        form(pairs).as_bytes(),
        &[("Content-Type", "application/x-www-form-urlencoded")],
    )
}

#[test]
fn streamed_feed_pieces_are_checked() {
    let config = demo_config("[feeds]\nmax_bytes = 2048", Vec::new());
    let server = Server::with_config(&config);
    let creds = [("accessKey", DEMO_KEY), ("secretKey", DEMO_SECRET)];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut pairs: Vec<(&str, &str)> = creds.to_vec();
        pairs.extend_from_slice(extra);
        pairs
    };
    stream(
        &server,
        "/feed-create",
        &[
            ("accessKey", DEMO_KEY),
            ("secretKey", "nope-nope"),
            ("feedName", "product-1a"),
            ("payLoad", "["),
        ],
    )
    .assert_error(403, "secretKey: does not match the access key");
    stream(&server, "/feed-create", &with(&[("payLoad", "[")]))
        .assert_error(400, "feedName: required");
    stream(
        &server,
        "/feed-create",
        &with(&[("feedName", "catalog-1a"), ("payLoad", "[")]),
    )
    .assert_error(400, "feedName: expected <type>-<hex>");
    stream(
        &server,
        "/feed-append",
        &with(&[("feedName", "product-ff"), ("payLoad", "{}")]),
    )
    .assert_error(404, "no open feed \"product-ff\"");
    stream(&server, "/feed-close", &with(&[("feedName", "product-ff")]))
        .assert_error(404, "no open feed");
    let garbage = crate::common::request(server.addr, "POST", "/feed-create", b"%%%&&&=", &[]);
    garbage.assert_error(400, "accessKey: required");
    // Over feeds.max_bytes: refused and dropped.
    let big = "x".repeat(1500);
    assert_eq!(
        stream(
            &server,
            "/feed-create",
            &with(&[("feedName", "product-aa"), ("payLoad", "[")])
        )
        .status,
        200
    );
    let append_big = || {
        let pairs = [
            ("accessKey", DEMO_KEY),
            ("secretKey", DEMO_SECRET),
            ("feedName", "product-aa"),
            ("payLoad", big.as_str()),
        ];
        stream(&server, "/feed-append", &pairs)
    };
    assert_eq!(append_big().status, 200);
    append_big().assert_error(413, "larger than the limit of 2048 bytes");
    stream(&server, "/feed-close", &with(&[("feedName", "product-aa")]))
        .assert_error(404, "no open feed");
    // A malformed document closes fine (2xx, the plugin moves on) and reports Error.
    assert_eq!(
        stream(
            &server,
            "/feed-create",
            &with(&[("feedName", "product-bb"), ("payLoad", "{\"Products\":[")])
        )
        .status,
        200
    );
    let closed = stream(
        &server,
        "/feed-close",
        &with(&[("feedName", "product-bb"), ("payLoad", "{oops")]),
    );
    assert_eq!(closed.status, 200, "{}", closed.body);
    let item = feed_settled(&server, "product-bb");
    assert_eq!(item["Status"], "Error", "{item}");
}

#[test]
fn a_streamed_feed_goes_on_after_a_crash_and_can_use_its_own_port() {
    let config = demo_config(
        "[feeds]\nstream_listen = \"127.0.0.1:0\"",
        vec![ZoneToml::new("PP-02", "recently_viewed", 5)],
    );
    let server = Server::with_config(&config);
    let feeds_addr = |server: &Server| -> std::net::SocketAddr {
        wait_for(
            "the feed-stream address in the log",
            Duration::from_secs(240),
            || {
                let log = server.log();
                let line = log
                    .lines()
                    .find(|l| l.contains("streamed feeds also listening on"))?;
                let after = line.split("http://").nth(1)?;
                let addr: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                    .collect();
                addr.parse().ok()
            },
        )
    };
    let row = |id: &str| {
        format!(
            r#"{{"Id":"{id}","Title":"Streamed {id}","Link":"/{id}","Image":"/{id}.jpg","Prices":["9.99 GBP"],"Categories":[],"_index":1}}"#
        )
    };
    let post_to = |addr: std::net::SocketAddr, path: &str, pairs: &[(&str, &str)]| {
        crate::common::request(
            addr,
            "POST",
            path,
            form(pairs).as_bytes(),
            &[("Content-Type", "application/x-www-form-urlencoded")],
        )
    };
    let creds = |name: &'static str, payload: &str| -> Vec<(&'static str, String)> {
        vec![
            ("accessKey", DEMO_KEY.to_owned()),
            ("secretKey", DEMO_SECRET.to_owned()),
            ("feedName", name.to_owned()),
            ("payLoad", payload.to_owned()),
        ]
    };
    let send = |addr, path: &str, pairs: Vec<(&'static str, String)>| {
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post_to(addr, path, &borrowed)
    };
    let addr = feeds_addr(&server);
    // Only the feed paths on that port.
    assert_eq!(
        crate::common::request(addr, "POST", "/api/serverside", b"{}", &[]).status,
        404
    );
    assert_eq!(
        send(
            addr,
            "/feed-create",
            creds("product-0123abc", r#"{"Version": 2, "Products":["#)
        )
        .status,
        200
    );
    assert_eq!(
        send(addr, "/feed-append", creds("product-0123abc", &row("S1"))).status,
        200
    );
    // SIGKILL between pieces: the spool is kept, the feed goes on after the restart.
    let server = Server::start_in(server.kill9(), Some(&config));
    let addr = feeds_addr(&server);
    assert_eq!(
        send(
            addr,
            "/feed-append",
            creds("product-0123abc", &format!(",{}", row("S2")))
        )
        .status,
        200
    );
    let closed = send(addr, "/feed-close", creds("product-0123abc", "]}"));
    assert_eq!(closed.status, 200, "{}", closed.body);
    let item = feed_settled(&server, "product-0123abc");
    assert_eq!(item["Status"], "Complete", "{item}");
    server.serverside(json!({"visitorId": "streamed", "events": [
        {"name": "product_view", "data": {"id": "S1"}}, {"name": "product_view", "data": {"id": "S2"}}
    ]}));
    let resp = server.serverside(json!({"visitorId": "streamed", "zones": ["PP-02"]}));
    let mut ids = zone_ids(&resp, "PP-02");
    ids.sort();
    assert_eq!(ids, ["S1", "S2"], "{}", resp.body);
}

#[test]
fn the_plugin_account_calls() {
    let server = Server::demo();
    let call = |path: &str, body: Value| server.post_json(path, &body);
    let valid = call(
        "/api/plugin/validate-account",
        json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET}),
    );
    assert_eq!(valid.status, 200);
    assert_eq!(valid.json(), json!({"IsValid": true}));
    for (key, secret) in [(DEMO_KEY, "wrong-secret"), ("nobody", DEMO_SECRET)] {
        let invalid = call(
            "/api/plugin/validate-account",
            json!({"AccessKey": key, "SecretKey": secret}),
        );
        assert_eq!(invalid.json(), json!({"IsValid": false}));
    }
    call(
        "/api/plugin/validate-account",
        json!({"SecretKey": DEMO_SECRET}),
    )
    .assert_error(400, "AccessKey: required");

    server.serverside(
        json!({"events": [{"name": "order", "data": {"orderid": "DASH-1", "email": "d@example.com",
        "items": [{"id": "P00001", "qty": 1, "unitprice": 1}]}}], "zones": ["HP-01"]}),
    );
    let dashboard = call(
        "/api/plugin/dashboard",
        json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET}),
    );
    assert_eq!(dashboard.status, 200, "{}", dashboard.body);
    let body = dashboard.json();
    assert_eq!(body["Account"]["Name"], DEMO_KEY);
    assert_eq!(body["Account"]["Region"], "eu");
    assert_eq!(body["Account"]["Currency"], "GBP");
    assert_eq!(body["Store"]["Products"], 3000);
    assert_eq!(body["Store"]["Orders"], 1);
    assert!(body["Store"]["Visitors"].as_u64().unwrap() >= 1);
    assert!(body["Store"]["RequestsToday"].as_u64().unwrap() >= 1);
    assert!(body["Store"]["ZoneImpressions"].as_u64().unwrap() >= 1);
    assert_eq!(body["NextSteps"], json!([]));
    call(
        "/api/plugin/dashboard",
        json!({"AccessKey": DEMO_KEY, "SecretKey": "wrong-secret"}),
    )
    .assert_error(400, "SecretKey: does not match the access key");

    let deleted = call(
        "/api/plugin/delete",
        json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
        "Feedback": "moving to another platform"}),
    );
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    wait_for("the uninstall in the log", Duration::from_secs(240), || {
        server
            .log()
            .contains("moving to another platform")
            .then_some(())
    });
    // The data stays.
    let after = call(
        "/api/plugin/dashboard",
        json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET}),
    );
    assert_eq!(after.json()["Store"]["Orders"], 1);
}

#[test]
fn vitrine_import_orders_records_an_order_history_the_server_then_serves() {
    let dir = tempfile::tempdir().unwrap();
    let config = demo_config("", vec![ZoneToml::new("TOP", "top_sellers", 3)]);
    std::fs::write(dir.path().join("vitrine.toml"), &config).unwrap();
    let csv = dir.path().join("orders.csv");
    std::fs::write(
        &csv,
        "OrderId,UserId,Email,DateTimeStamp,ProdCode,Quantity,UnityPrice,LinePrice\
         \n9001,501,ann@example.com,2024-03-01 10:11:12,P00777,5.0000,10.0000,50.0000\
         \n9002,,bob@example.com,2024-03-02 10:11:12,P00778,1.0000,10.0000,10.0000\
         \n9003,,bob@example.com,not a date,P00779,1.0000,10.0000,10.0000",
    )
    .unwrap();
    let out = crate::common::import(
        DEMO_KEY,
        &dir.path().join("vitrine.toml"),
        &dir.path().join("data"),
        &["--orders".as_ref(), csv.as_os_str()],
    );
    let stdout = crate::common::succeeded(&out);
    assert!(
        stdout.contains("2 orders from 3 rows; 1 rows skipped: line 4: DateTimeStamp"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 orders recorded, 0 already known"),
        "{stdout}"
    );

    let server = Server::start_in(dir, Some(&config));
    wait_for(
        "the imported history in top sellers",
        Duration::from_secs(240),
        || {
            let ids = zone_ids(&server.serverside(json!({"zones": ["TOP"]})), "TOP");
            (ids.first().map(String::as_str) == Some("P00777")).then_some(())
        },
    );
    // The imported order ids are known: the store's live order with one is a duplicate.
    let live = server.serverside(
        json!({"events": [{"name": "order", "data": {"orderid": "9001",
        "email": "ann@example.com", "items": [{"id": "P00777", "qty": 1, "unitprice": 10}]}}]}),
    );
    assert!(
        live.json()["errors"][0]
            .as_str()
            .unwrap()
            .contains("already recorded")
    );
}
