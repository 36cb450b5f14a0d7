//! `/api/productfeed` and `/api/productfeedstatus`: tokens, visibility, every 400 and the
//! 500 of a submission that cannot be saved.

use super::*;

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
