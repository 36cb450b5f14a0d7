//! `/api/delta` and `/api/deltastatus` on the demo store: tokens, statuses, account prices,
//! all-or-nothing application and request order.

use super::*;

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
