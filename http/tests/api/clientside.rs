//! The browser endpoints over HTTP: the script and its caching, the access key alone (a
//! secret refused), the serverside 400s, CORS to the configured origins, the limits per
//! client address and per visitor, crawlers untracked, escaped product text, clicks.
//! (The script itself runs in a real browser in `loadtest/tests/clientside.rs`.)

use serde_json::{Value, json};

use crate::common::{Resp, Server, request, wait_for};

const KEY: &str = "cs-shop";
const SECRET: &str = "cs-shop-secret";
const ORIGIN: &str = "http://shop.test:8080";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36";
const ADMIN: &str = "clientside-test-admin-token";

fn config(per_ip: u32, per_visitor: u32) -> String {
    format!(
        r#"
[admin]
tokens = ["{ADMIN}"]

[[accounts]]
access_key = "{KEY}"
secret_key = "{SECRET}"
default_currency = "GBP"
demo_catalogue = true
  [accounts.clientside]
  allowed_origins = ["{ORIGIN}", "https://www.shop.test"]
  per_ip = {{ per_second = 1, burst = {per_ip} }}
  per_visitor = {{ per_second = 1, burst = {per_visitor} }}
  max_zones = 3
  [[accounts.zones]]
  id = "RV"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 5
  [[accounts.zones]]
  id = "TR"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 4
"#
    )
}

fn server() -> Server {
    Server::with_config(&config(1000, 1000))
}

fn page_path() -> String {
    format!("/api/clientside/{KEY}")
}

/// A browser's POST of `body` to `path`, from `origin`, with `extra` headers.
fn browser_post(server: &Server, path: &str, body: &Value, extra: &[(&str, &str)]) -> Resp {
    let mut headers = vec![("User-Agent", BROWSER), ("Origin", ORIGIN)];
    headers.extend_from_slice(extra);
    request(
        server.addr,
        "POST",
        path,
        body.to_string().as_bytes(),
        &headers,
    )
}

fn product_page(visitor: &str, product: &str) -> Value {
    json!({
        "currentUrl": format!("http://shop.test:8080/p/{product}"),
        "visitorId": visitor,
        "events": [
            {"name": "page_view", "data": {"page_type": "product_page", "product_id": product}},
            {"name": "product_view", "data": {"id": product}}
        ],
        "zones": ["RV", "TR"]
    })
}

fn zone_ids(answer: &Value, zone: &str) -> Vec<String> {
    answer["zones"][zone]["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i["Id"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// What the serverside call sees of a visitor: its recently viewed products.
fn recently_viewed(server: &Server, visitor: &str) -> Vec<String> {
    let resp = server.post_json(
        "/api/serverside",
        &json!({"appId": KEY, "secretKey": SECRET, "currentUrl": "https://shop.test/",
                "userAgent": BROWSER, "ip": "198.51.100.1", "visitorId": visitor, "zones": ["RV"]}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    zone_ids(&resp.json(), "RV")
}

#[test]
fn the_script_is_served_with_its_cache_headers_and_revalidated() {
    let server = server();
    let resp = server.get(&format!("/{KEY}/cs.js"));
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(resp.header("cache-control"), Some("public, max-age=300"));
    assert!(
        resp.body
            .contains(&format!(r#"("{KEY}", "//{}/", false)"#, server.addr))
    );
    assert!(resp.body.contains("PureClarityObject"));
    let etag = resp.header("etag").unwrap().to_owned();
    let again = request(
        server.addr,
        "GET",
        &format!("/{KEY}/cs.js"),
        b"",
        &[("If-None-Match", &etag)],
    );
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let unknown = server.get("/no-such-key/cs.js");
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(
        unknown.body.starts_with(
            "/* vitrine: no account of this server has the access key \"no-such-key\""
        ),
        "{}",
        unknown.body
    );
}

#[test]
fn a_page_request_tracks_like_serverside_and_answers_zone_html() {
    let server = server();
    let resp = browser_post(
        &server,
        &page_path(),
        &product_page("shopper-1", "P00042"),
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.header("access-control-allow-origin"), Some(ORIGIN));
    let answer = resp.json();
    assert_eq!(answer["visitorId"], "shopper-1");
    assert!(answer["sessionId"].as_str().is_some_and(|s| !s.is_empty()));
    let trending = zone_ids(&answer, "TR");
    assert_eq!(trending.len(), 4);
    let html = answer["html"]["TR"].as_str().unwrap();
    for id in &trending {
        assert!(html.contains(&format!(r#"data-pc-item="{id}""#)), "{html}");
    }
    // The serverside call sees what the browser sent.
    assert_eq!(recently_viewed(&server, "shopper-1"), ["P00042"]);
}

#[test]
fn a_secret_key_in_a_browser_request_is_refused_and_nothing_is_recorded() {
    let server = server();
    for field in ["secretKey", "SecretKey", "secret"] {
        let mut body = product_page("leaky", "P00042");
        body[field] = json!(SECRET);
        let resp = browser_post(&server, &page_path(), &body, &[]);
        resp.assert_errors(
            400,
            &format!("{field}: a secret key must never be sent from a browser"),
        );
    }
    assert!(recently_viewed(&server, "leaky").is_empty());
    let unknown = browser_post(
        &server,
        "/api/clientside/nope",
        &product_page("v", "P1"),
        &[],
    );
    unknown.assert_errors(403, "appId: unknown access key");
}

#[test]
fn browser_requests_get_the_serverside_400s_with_their_paths() {
    let server = server();
    let cases = [
        (json!({"events": []}), "currentUrl: required"),
        (
            json!({"currentUrl": "not a url"}),
            "currentUrl: expected an absolute http or https URL",
        ),
        (
            json!({"currentUrl": "https://shop.test/", "events": [{"name": "page_vue", "data": {}}]}),
            "events[0].name: unknown event \"page_vue\"",
        ),
        (
            json!({"currentUrl": "https://shop.test/", "events": [{"name": "product_view", "data": {}}]}),
            "events[0].data.id: required",
        ),
        (
            json!({"currentUrl": "https://shop.test/", "zones": ["A", "B", "C", "D"]}),
            "zones: at most 3 zones per request, got 4",
        ),
        (
            json!({"currentUrl": "https://shop.test/", "tracking": "no"}),
            "tracking: expected a boolean",
        ),
    ];
    for (body, needle) in cases {
        let resp = browser_post(&server, &page_path(), &body, &[]);
        resp.assert_errors(400, needle);
        // Errors carry the CORS headers too, so that the page's script can read them.
        assert_eq!(resp.header("access-control-allow-origin"), Some(ORIGIN));
    }
    let not_json = request(
        server.addr,
        "POST",
        &page_path(),
        b"{not json",
        &[("User-Agent", BROWSER), ("Origin", ORIGIN)],
    );
    not_json.assert_errors(400, "body: invalid JSON");
}

#[test]
fn only_the_accounts_origins_pass_cors() {
    let server = server();
    let preflight = |origin: &str| {
        request(
            server.addr,
            "OPTIONS",
            &page_path(),
            b"",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                ("Access-Control-Request-Headers", "content-type"),
            ],
        )
    };
    let allowed = preflight("https://www.shop.test");
    assert_eq!(allowed.status, 204);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("https://www.shop.test")
    );
    assert_eq!(allowed.header("access-control-allow-methods"), Some("POST"));
    assert!(
        allowed
            .header("access-control-allow-headers")
            .is_some_and(|h| h.to_ascii_lowercase().contains("content-type"))
    );
    let refused = preflight("https://evil.example");
    assert_eq!(refused.status, 403);
    assert_eq!(refused.header("access-control-allow-origin"), None);
    // A POST from another origin is refused before anything is recorded.
    let evil = request(
        server.addr,
        "POST",
        &page_path(),
        product_page("elsewhere-2", "P00042").to_string().as_bytes(),
        &[("User-Agent", BROWSER), ("Origin", "https://evil.example")],
    );
    evil.assert_errors(
        403,
        "Origin: \"https://evil.example\" is not one of the account's clientside.allowed_origins",
    );
    assert_eq!(evil.header("access-control-allow-origin"), None);
    assert!(recently_viewed(&server, "elsewhere-2").is_empty());
}

#[test]
fn limits_per_client_address_and_per_visitor_answer_429_with_retry_after() {
    let server = Server::with_config(&config(3, 2));
    let from = |ip: &str, visitor: &str| {
        browser_post(
            &server,
            &page_path(),
            &product_page(visitor, "P00042"),
            &[("X-Forwarded-For", ip)],
        )
    };
    // Per client address: three at once, then 429.
    for n in 0..3 {
        assert_eq!(from("203.0.113.1", &format!("a{n}")).status, 200);
    }
    let limited = from("203.0.113.1", "a3");
    limited.assert_errors(429, "per client address exceeded");
    assert!(
        limited
            .header("retry-after")
            .is_some_and(|s| s.parse::<u32>().unwrap() >= 1)
    );
    // Another address is not limited by the first one's requests.
    assert_eq!(from("203.0.113.2", "b0").status, 200);
    // Per visitor: two at once from different addresses, then 429.
    assert_eq!(from("203.0.113.3", "same").status, 200);
    assert_eq!(from("203.0.113.4", "same").status, 200);
    let limited = from("203.0.113.5", "same");
    limited.assert_errors(429, "per visitor exceeded");
    assert!(limited.header("retry-after").is_some());
}

#[test]
fn crawlers_and_pages_without_consent_get_zones_untracked() {
    let server = server();
    let crawler = request(
        server.addr,
        "POST",
        &page_path(),
        product_page("crawler-1", "P00042").to_string().as_bytes(),
        &[
            (
                "User-Agent",
                "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            ),
            ("Origin", ORIGIN),
        ],
    );
    assert_eq!(crawler.status, 200, "{}", crawler.body);
    let answer = crawler.json();
    assert_eq!(zone_ids(&answer, "TR").len(), 4);
    assert_eq!(answer["visitorId"], "");
    assert!(recently_viewed(&server, "crawler-1").is_empty());
    let mut body = product_page("no-consent", "P00042");
    body["tracking"] = json!(false);
    let resp = browser_post(&server, &page_path(), &body, &[]);
    assert_eq!(resp.status, 200);
    assert_eq!(zone_ids(&resp.json(), "TR").len(), 4);
    assert!(recently_viewed(&server, "no-consent").is_empty());
}

#[test]
fn product_text_is_escaped_in_the_zone_html() {
    let server = server();
    let delta = json!({"AppKey": KEY, "SecretKey": SECRET, "Products": [{
        "Id": "XSS-1", "Sku": "XSS-1", "Title": "<script>alert('x')</script> Lamp",
        "Link": "javascript:alert(1)", "Image": "https://img.example/lamp.png",
        "Prices": ["10.00 GBP"], "Categories": ["c1"]
    }]});
    let resp = server.post_json("/api/delta", &delta);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let token = resp.json()["Token"].as_str().unwrap().to_owned();
    wait_for(
        "the delta to apply",
        std::time::Duration::from_secs(60),
        || {
            let status = server.post_json(
                "/api/deltastatus",
                &json!({"AppKey": KEY, "SecretKey": SECRET, "Tokens": [token]}),
            );
            (status.json()[0]["Status"] == 1).then_some(())
        },
    );
    // Viewed, so the recently viewed zone shows it.
    let resp = browser_post(
        &server,
        &page_path(),
        &product_page("escaper", "XSS-1"),
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    // The next page's recently viewed zone shows it.
    let resp = browser_post(
        &server,
        &page_path(),
        &product_page("escaper", "P00042"),
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let answer = resp.json();
    assert_eq!(
        answer["zones"]["RV"]["items"][0]["Title"],
        "<script>alert('x')</script> Lamp"
    );
    let html = answer["html"]["RV"].as_str().unwrap();
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains("&lt;script&gt;"), "{html}");
    assert!(!html.contains("javascript:"), "{html}");
}

#[test]
fn clicks_are_counted_for_the_zone_and_reach_the_admin_api() {
    let server = server();
    let resp = browser_post(
        &server,
        &page_path(),
        &product_page("clicker", "P00042"),
        &[],
    );
    assert_eq!(resp.status, 200);
    let item = zone_ids(&resp.json(), "TR")[0].clone();
    let click = |body: Value| browser_post(&server, &format!("{}/click", page_path()), &body, &[]);
    let counted = click(json!({"visitorId": "clicker", "zone": "TR", "product": item}));
    assert_eq!(counted.status, 204, "{}", counted.body);
    assert_eq!(counted.header("access-control-allow-origin"), Some(ORIGIN));
    click(json!({"zone": "TR"})).assert_errors(400, "visitorId: required");
    click(json!({"visitorId": "clicker", "zone": "NOPE"}))
        .assert_errors(400, "zone: unknown zone \"NOPE\"");
    let analytics = request(
        server.addr,
        "GET",
        &format!("/admin/api/accounts/{KEY}/analytics"),
        b"",
        &[("Authorization", &format!("Bearer {ADMIN}"))],
    );
    assert_eq!(analytics.status, 200, "{}", analytics.body);
    let zones = analytics.json()["zones"].clone();
    let trending = zones
        .as_array()
        .unwrap()
        .iter()
        .find(|z| z["zone"] == "TR")
        .unwrap()
        .clone();
    assert_eq!(trending["totals"]["clicked"], 1, "{trending}");
    assert!(trending["totals"]["clickThroughRate"].as_f64().unwrap() > 0.0);
}

/// The browser endpoint reads a page's fields by the serverside rules: every field of
/// every event of the fuzzing seeds (the contract's body and the Magento module's),
/// removed, retyped or made too long, gets the same status and the same messages from
/// both endpoints (the browser's `ip` and `userAgent` come from the connection, so the
/// serverside bodies carry the same ones).
#[test]
fn every_serverside_400_is_the_browser_endpoints_400() {
    let server = Server::demo();
    let seeds = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fuzz/corpus/serverside"
    ))
    .unwrap()
    .map(|entry| {
        serde_json::from_slice::<Value>(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap()
    });
    let mut compared = 0;
    let mut refused = 0;
    for (s, seed) in seeds.enumerate() {
        let mut variants = Vec::new();
        let events = seed["events"].as_array().cloned().unwrap_or_default();
        for (e, event) in events.iter().enumerate() {
            let Some(data) = event["data"].as_object() else {
                continue;
            };
            for key in data.keys() {
                for replacement in [
                    None,
                    Some(json!([])),
                    Some(json!("x".repeat(300))),
                    Some(json!(-1)),
                ] {
                    let mut variant = seed.clone();
                    let target = variant["events"][e]["data"].as_object_mut().unwrap();
                    match replacement {
                        None => {
                            target.remove(key);
                        }
                        Some(value) => {
                            target.insert(key.clone(), value);
                        }
                    }
                    variants.push(variant);
                }
            }
        }
        // And the page's own fields.
        for key in [
            "currentUrl",
            "referer",
            "sessionId",
            "currency",
            "events",
            "zones",
        ] {
            for replacement in [None, Some(json!(7)), Some(json!("x y".repeat(3000)))] {
                let mut variant = seed.clone();
                let object = variant.as_object_mut().unwrap();
                match replacement {
                    None => {
                        object.remove(key);
                    }
                    Some(value) => {
                        object.insert(key.to_owned(), value);
                    }
                }
                variants.push(variant);
            }
        }
        variants.push(seed.clone());
        for (v, mut body) in variants.into_iter().enumerate() {
            // Distinct visitors and orders, so that one variant's events do not change
            // what the next is answered.
            body["visitorId"] = json!(format!("same-rules-{s}-{v}"));
            body["ip"] = json!("127.0.0.1");
            body["userAgent"] = json!(BROWSER);
            body["appId"] = json!(crate::common::DEMO_KEY);
            body["secretKey"] = json!(crate::common::DEMO_SECRET);
            let serverside = server.post_json("/api/serverside", &body);
            let object = body.as_object_mut().unwrap();
            for field in ["appId", "secretKey", "ip", "userAgent"] {
                object.remove(field);
            }
            object.insert(
                "visitorId".to_owned(),
                json!(format!("same-rules-browser-{s}-{v}")),
            );
            // A client address each (the demo's limits per address are a browser's).
            let client = format!("10.{s}.{}.{}", v / 250, v % 250);
            let browser = request(
                server.addr,
                "POST",
                "/api/clientside/demo-access-key",
                body.to_string().as_bytes(),
                &[("User-Agent", BROWSER), ("X-Forwarded-For", &client)],
            );
            assert_eq!(
                browser.status, serverside.status,
                "{body}\n{}\n{}",
                serverside.body, browser.body
            );
            if serverside.status == 400 {
                assert_eq!(
                    browser.json()["errors"],
                    serverside.json()["errors"],
                    "{body}"
                );
                refused += 1;
            }
            compared += 1;
        }
    }
    assert!(
        compared > 100 && refused > 50,
        "{compared} bodies, {refused} refused"
    );
}
