//! Authentication: credential field names per endpoint, wrong keys and secrets, regions.

use super::*;

#[test]
fn serverside_403_for_an_unknown_access_key_or_wrong_secret() {
    let server = Server::demo();
    server
        .serverside(json!({"appId": "who-is-this"}))
        .assert_errors(403, "appId: unknown access key");
    server
        .serverside(json!({"secretKey": "wrong-secret"}))
        .assert_errors(403, "secretKey: does not match the access key");
}

#[test]
fn forget_403_for_an_unknown_access_key_or_wrong_secret() {
    let server = Server::demo();
    server
        .post_json(
            "/api/user/forget",
            &json!({"AccessKey": "nobody", "SecretKey": DEMO_SECRET, "Identifier": "a@b.c"}),
        )
        .assert_error(403, "AccessKey: unknown access key");
    server
        .post_json(
            "/api/user/forget",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": "wrong", "Identifier": "a@b.c"}),
        )
        .assert_error(403, "SecretKey: does not match the access key");
}

#[test]
fn feed_delta_and_status_endpoints_answer_400_for_bad_credentials() {
    let server = Server::demo();
    let cases = [
        (
            "/api/productfeed",
            json!({"appKey": "nobody", "secretKey": DEMO_SECRET, "url": "https://shop.example/f.json"}),
            "appKey: unknown access key",
        ),
        (
            "/api/productfeed",
            json!({"appKey": DEMO_KEY, "secretKey": "wrong", "url": "https://shop.example/f.json"}),
            "secretKey: does not match",
        ),
        (
            "/api/delta",
            json!({"AppKey": "nobody", "SecretKey": DEMO_SECRET, "DeleteProducts": ["x"]}),
            "AppKey: unknown access key",
        ),
        (
            "/api/delta",
            json!({"AppKey": DEMO_KEY, "SecretKey": "wrong", "DeleteProducts": ["x"]}),
            "SecretKey: does not match",
        ),
        (
            "/api/deltastatus",
            json!({"AppKey": "nobody", "SecretKey": DEMO_SECRET, "Tokens": ["t"]}),
            "AppKey: unknown access key",
        ),
        (
            "/api/deltastatus",
            json!({"AppKey": DEMO_KEY, "SecretKey": "wrong", "Tokens": ["t"]}),
            "SecretKey: does not match",
        ),
        (
            "/api/productfeedstatus",
            json!({"AppKey": "nobody", "Tokens": ["t"]}),
            "AppKey: unknown access key",
        ),
    ];
    for (path, body, expected) in cases {
        server.post_json(path, &body).assert_error(400, expected);
    }
}

#[test]
fn credential_field_names_are_exact_per_endpoint() {
    let server = Server::demo();
    // The names of another endpoint do not authenticate.
    server
        .post_json(
            "/api/serverside",
            &serverside_body(json!({"appId": null, "AppKey": DEMO_KEY})),
        )
        .assert_errors(400, "appId: required");
    let cases = [
        (
            "/api/productfeed",
            json!({"AppKey": DEMO_KEY, "secretKey": DEMO_SECRET, "url": "https://s.example/f"}),
            "appKey: required",
        ),
        (
            "/api/productfeed",
            json!({"appKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "url": "https://s.example/f"}),
            "secretKey: required",
        ),
        (
            "/api/delta",
            json!({"appKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "DeleteProducts": ["x"]}),
            "AppKey: required",
        ),
        (
            "/api/delta",
            json!({"AppKey": DEMO_KEY, "secretKey": DEMO_SECRET, "DeleteProducts": ["x"]}),
            "SecretKey: required",
        ),
        (
            "/api/deltastatus",
            json!({"AppKey": DEMO_KEY, "Tokens": ["t"]}),
            "SecretKey: required",
        ),
        (
            "/api/productfeedstatus",
            json!({"appKey": DEMO_KEY, "Tokens": ["t"]}),
            "AppKey: required",
        ),
        (
            "/api/user/forget",
            json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "x"}),
            "AccessKey: required",
        ),
        (
            "/api/user/forget",
            json!({"AccessKey": DEMO_KEY, "Identifier": "x"}),
            "SecretKey: required",
        ),
    ];
    for (path, body, expected) in cases {
        server.post_json(path, &body).assert_error(400, expected);
    }
}

#[test]
fn productfeedstatus_needs_no_secret_key() {
    let server = Server::demo();
    let resp = server.post_json(
        "/api/productfeedstatus",
        &json!({"AppKey": DEMO_KEY, "Tokens": ["feed_unknown"]}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
}

#[test]
fn accounts_of_another_region_are_refused_naming_the_region() {
    let server = configured();
    server
        .post_json(
            "/api/serverside",
            &serverside_body(json!({"appId": "shop-us", "secretKey": "shop-us-secret"})),
        )
        .assert_errors(
            403,
            "the account belongs to region us; this server serves region eu",
        );
    server
        .post_json(
            "/api/delta",
            &json!({"AppKey": "shop-us", "SecretKey": "shop-us-secret", "DeleteProducts": ["x"]}),
        )
        .assert_error(400, "region us");
    server
        .post_json(
            "/api/user/forget",
            &json!({"AccessKey": "shop-us", "SecretKey": "shop-us-secret", "Identifier": "x"}),
        )
        .assert_error(403, "region us");
}
