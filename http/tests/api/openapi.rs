//! `GET /openapi.json` against the server's real answers: every README example and
//! every class of error, on every endpoint, is validated (with the `jsonschema` crate)
//! against the schema the document gives for its path, method, status and content
//! type, and every status answered is one the document lists.

use serde_json::{Value, json};
use vitrine_testkit::{DEMO_KEY, DEMO_SECRET, records};

use crate::common::{Resp, Server, request, serverside_body, wait_for};

const CONFIG: &str = r#"
[feeds]
allow_private_addresses = true

[[accounts]]
access_key = "demo-access-key"
secret_key = "demo-secret-key"
default_currency = "GBP"
demo_catalogue = true
rate_limits.plugin_dashboard = { per_second = 1, burst = 1 }
  [[accounts.zones]]
  id = "TOP"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 3
  [[accounts.zones]]
  id = "CAT-AFF"
  title = "Your categories"
  type = "recommender-category"
  strategy = "category_affinity"
  count = 3
  [[accounts.zones]]
  id = "BRANDS"
  title = "Your brands"
  type = "recommender-brand"
  strategy = "brand_affinity"
  count = 3
  [[accounts.zones]]
  id = "BANNER"
  title = "Banner"
  type = "staticimage"
  images = [{ url = "//cdn.shop.example/sale.jpg", link = "/sale", alt = "Sale" }]
  [[accounts.zones]]
  id = "PICKS"
  title = "Picks"
  type = "html"
  strategy = "trending"
  count = 2
  template = "<ul>{% for item in items %}<li>{{ item.Title }}</li>{% endfor %}</ul>"
"#;

/// The document, from the server itself.
pub(crate) fn document(server: &Server) -> Value {
    let resp = server.get("/openapi.json");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let doc = resp.json();
    assert_eq!(doc["openapi"], "3.1.0");
    doc
}

/// Checks an answer of `method path` against the document: its status is listed, and
/// its body matches the schema of its content type.
pub(crate) fn conforms(doc: &Value, method: &str, path: &str, resp: &Resp) {
    let status = resp.status.to_string();
    let operation = &doc["paths"][path][method];
    assert!(
        operation.is_object(),
        "{method} {path} is not in the document"
    );
    let answer = &operation["responses"][&status];
    assert!(
        answer.is_object(),
        "{method} {path} answered {status}, which the document does not list: {}",
        resp.body
    );
    let content_type = resp.header("content-type").unwrap_or("");
    let content = &answer["content"][content_type];
    assert!(
        content.is_object(),
        "{method} {path} {status} answered {content_type}, which the document does not list"
    );
    for (header, spec) in answer["headers"].as_object().into_iter().flatten() {
        if spec["required"] == true || header == "Retry-After" {
            assert!(
                resp.header(&header.to_ascii_lowercase()).is_some(),
                "{method} {path} {status}: no {header}"
            );
        }
    }
    // A JSON pointer token, percent-encoded for a URI fragment.
    let pointer = |part: &str| {
        part.replace('~', "~0")
            .replace('/', "~1")
            .replace('%', "%25")
            .replace(' ', "%20")
            .replace('{', "%7B")
            .replace('}', "%7D")
    };
    let reference = format!(
        "urn:vitrine:openapi#/paths/{}/{method}/responses/{status}/content/{}/schema",
        pointer(path),
        pointer(content_type)
    );
    let resource =
        jsonschema::Resource::from_contents(doc.clone()).expect("the document is a resource");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_resource("urn:vitrine:openapi", resource)
        .build(&json!({"$ref": reference}))
        .unwrap_or_else(|e| panic!("{method} {path} {status}: the schema does not build: {e}"));
    let instance: Value = if content_type.starts_with("application/json") {
        serde_json::from_str(&resp.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", resp.body))
    } else {
        Value::String(resp.body.clone())
    };
    let problems: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        problems.is_empty(),
        "{method} {path} {status} does not match the document: {problems:?}\n{}",
        resp.body
    );
}

#[test]
fn every_answer_matches_the_openapi_document() {
    let server = Server::with_config(CONFIG);
    let doc = document(&server);
    let check = |method: &str, path: &str, resp: Resp| {
        conforms(&doc, method, path, &resp);
        resp
    };
    let post = |path: &str, body: Value| check("post", path, server.post_json(path, &body));

    // /api/serverside: every zone type, a notice, and each error class.
    let events = json!([
        {"name": "page_view", "data": {"page_type": "category_listing_page", "category_id": "cat-01"}},
        {"name": "product_view", "data": {"id": "P00001"}},
        {"name": "order", "data": {"orderid": "ORD-1", "email": "a@example.com",
            "items": [{"id": "P00003", "qty": 1, "unitprice": 10.5}]}}
    ]);
    let served = post(
        "/api/serverside",
        serverside_body(
            json!({"events": events, "zones": ["TOP", "CAT-AFF", "BRANDS", "BANNER", "PICKS", "NOPE"]}),
        ),
    );
    assert_eq!(served.status, 200, "{}", served.body);
    let zones = served.json()["zones"].clone();
    assert!(zones["TOP"]["items"].as_array().unwrap().len() == 3);
    assert!(!zones["CAT-AFF"]["items"].as_array().unwrap().is_empty());
    assert!(zones["PICKS"]["html"].is_string());
    let repeat = post(
        "/api/serverside",
        serverside_body(json!({"events": [events[2].clone()], "zones": ["TOP"]})),
    );
    assert_eq!(repeat.json()["errors"].as_array().unwrap().len(), 1);
    assert_eq!(
        post("/api/serverside", serverside_body(json!({"visitorId": 7}))).status,
        400
    );
    assert_eq!(
        post(
            "/api/serverside",
            serverside_body(json!({"secretKey": "wrong-secret"}))
        )
        .status,
        403
    );
    let not_json = check(
        "post",
        "/api/serverside",
        request(server.addr, "POST", "/api/serverside", b"{", &[]),
    );
    assert_eq!(not_json.status, 400);
    let big = "x".repeat(1_100_000);
    let too_large = check(
        "post",
        "/api/serverside",
        request(server.addr, "POST", "/api/serverside", big.as_bytes(), &[]),
    );
    assert_eq!(too_large.status, 413);

    // Feeds (on loopback: the download is refused, and the feed fails).
    let feed = post(
        "/api/productfeed",
        json!({"appKey": DEMO_KEY, "secretKey": DEMO_SECRET, "url": "http://127.0.0.1:9/feed.json"}),
    );
    assert_eq!(feed.status, 200, "{}", feed.body);
    let token = feed.header("x-feed-token").unwrap().to_owned();
    assert_eq!(
        post(
            "/api/productfeed",
            json!({"appKey": DEMO_KEY, "secretKey": DEMO_SECRET, "url": "ftp://x"})
        )
        .status,
        400
    );
    let statuses = wait_for(
        "the feed's outcome",
        std::time::Duration::from_secs(240),
        || {
            let resp = post(
                "/api/productfeedstatus",
                json!({"AppKey": DEMO_KEY, "Tokens": [token.clone(), "nope"]}),
            );
            (resp.json()[0]["Status"] != "Processing").then_some(resp)
        },
    );
    assert_eq!(statuses.json()[1]["Status"], "Error");
    assert_eq!(
        post(
            "/api/productfeedstatus",
            json!({"AppKey": DEMO_KEY, "Tokens": []})
        )
        .status,
        400
    );

    // Deltas.
    let delta = post(
        "/api/delta",
        json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Products": [records::product("D-1", "9.99 GBP")]}),
    );
    assert_eq!(delta.status, 200, "{}", delta.body);
    let failing = post(
        "/api/delta",
        json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "DeleteAccountPrices": [{"AccountId": "acc", "Id": "nope"}]}),
    );
    assert_eq!(failing.status, 200, "{}", failing.body);
    let tokens = [
        delta.json()["Token"].clone(),
        failing.json()["Token"].clone(),
        json!("dlt_unknown"),
    ];
    let decided = wait_for(
        "the deltas' statuses",
        std::time::Duration::from_secs(240),
        || {
            let resp = post(
                "/api/deltastatus",
                json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": tokens}),
            );
            resp.json()
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["Status"] != 0)
                .then_some(resp)
        },
    );
    assert_eq!(decided.json()[1]["Status"], 2);
    assert_eq!(
        post(
            "/api/delta",
            json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET})
        )
        .status,
        400
    );
    assert_eq!(
        post(
            "/api/delta",
            json!({"AppKey": DEMO_KEY, "SecretKey": "wrong-secret", "DeleteProducts": ["x"]})
        )
        .status,
        400
    );
    let sdk = post(
        "/api/productdelta",
        json!({"AppKey": DEMO_KEY, "Secret": DEMO_SECRET, "DeleteProducts": [17], "Format": "json"}),
    );
    assert_eq!(sdk.status, 200, "{}", sdk.body);

    // Erasure.
    let erased = post(
        "/api/user/forget",
        json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "a@example.com"}),
    );
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(post("/api/user/forget", json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "nobody@example.com"})).status, 404);
    assert_eq!(
        post(
            "/api/user/forget",
            json!({"AccessKey": DEMO_KEY, "SecretKey": "wrong-secret", "Identifier": "x"})
        )
        .status,
        403
    );

    // Streamed feeds (form bodies).
    let form = |path: &str, pairs: &[(&str, &str)]| {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        check(
            "post",
            path,
            request(
                server.addr,
                "POST",
                path,
                body.as_bytes(),
                &[("Content-Type", "application/x-www-form-urlencoded")],
            ),
        )
    };
    let creds = [("accessKey", DEMO_KEY), ("secretKey", DEMO_SECRET)];
    let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        creds.iter().copied().chain(extra.iter().copied()).collect()
    };
    assert_eq!(
        form(
            "/feed-create",
            &with(&[("feedName", "brand-ab12"), ("payLoad", "{\"Brands\":[")])
        )
        .status,
        200
    );
    assert_eq!(
        form(
            "/feed-append",
            &with(&[("feedName", "brand-ab12"), ("payLoad", "]}")])
        )
        .status,
        200
    );
    assert_eq!(
        form("/feed-close", &with(&[("feedName", "brand-ab12")])).status,
        200
    );
    assert_eq!(
        form(
            "/feed-append",
            &with(&[("feedName", "brand-ab12"), ("payLoad", "x")])
        )
        .status,
        404
    );
    assert_eq!(
        form("/feed-create", &with(&[("feedName", "nonsense")])).status,
        400
    );
    assert_eq!(
        form(
            "/feed-create",
            &[
                ("accessKey", DEMO_KEY),
                ("secretKey", "wrong-secret"),
                ("feedName", "brand-ab13"),
                ("payLoad", "{}")
            ]
        )
        .status,
        403
    );

    // Plugin account calls, a rate limit among them.
    let plugin = json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET});
    assert_eq!(
        post("/api/plugin/validate-account", plugin.clone()).json()["IsValid"],
        true
    );
    assert_eq!(
        post(
            "/api/plugin/validate-account",
            json!({"AccessKey": "x", "SecretKey": "y"})
        )
        .json()["IsValid"],
        false
    );
    assert_eq!(post("/api/plugin/validate-account", json!({})).status, 400);
    assert_eq!(post("/api/plugin/dashboard", plugin.clone()).status, 200);
    let limited = (0..20)
        .map(|_| post("/api/plugin/dashboard", plugin.clone()))
        .find(|r| r.status != 200)
        .expect("the dashboard's rate limit");
    assert_eq!(limited.status, 429);
    assert_eq!(
        post(
            "/api/plugin/delete",
            json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Feedback": "bye"})
        )
        .status,
        200
    );

    assert_eq!(
        post(
            "/api/plugin/feedback",
            json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
                "Feedback": "Reason Chosen: other | Additional Comments: none", "Platform": "WooCommerce"})
        )
        .status,
        200
    );
    assert_eq!(
        post(
            "/api/next-steps/complete",
            json!({"appkey": DEMO_KEY, "id": "step-1"})
        )
        .status,
        200
    );
    assert_eq!(
        post("/api/next-steps/complete", json!({"appkey": DEMO_KEY})).status,
        400
    );
    for path in [
        "/api/plugin/signuprequest",
        "/api/plugin/signupstatus",
        "/api/plugin/add-store",
    ] {
        assert_eq!(post(path, json!({"Id": "a1b2c3d4e5"})).status, 400);
    }

    // Operations.
    assert_eq!(check("get", "/healthz", server.get("/healthz")).status, 200);
    assert_eq!(check("get", "/metrics", server.get("/metrics")).status, 200);
    assert_eq!(
        check("get", "/openapi.json", server.get("/openapi.json")).status,
        200
    );
}

#[test]
fn the_document_lists_every_endpoint_the_server_routes() {
    let server = Server::demo();
    let doc = document(&server);
    let listed: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    use vitrine_http::routes::Endpoint;
    for endpoint in Endpoint::ALL {
        if matches!(endpoint, Endpoint::Unrouted | Endpoint::Admin) {
            continue;
        }
        let method = endpoint.method().as_str().to_ascii_lowercase();
        assert!(
            doc["paths"][endpoint.name()][&method].is_object(),
            "{} {} is not in the document ({listed:?})",
            method,
            endpoint.name()
        );
    }
    // `/admin` routes a path per admin endpoint.
    for path in ADMIN_PATHS {
        assert!(
            doc["paths"][path]["get"].is_object(),
            "{path} is not in the document"
        );
    }
    for (path, method) in ADMIN_WRITES {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} is not in the document"
        );
    }
    let write_only = ADMIN_WRITES
        .iter()
        .filter(|(path, _)| !ADMIN_PATHS.contains(path))
        .map(|(path, _)| *path)
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(
        listed.len(),
        Endpoint::ALL.len() - 2 + ADMIN_PATHS.len() + write_only.len(),
        "{listed:?}"
    );
}

/// The admin API's changes, as the document gives them.
const ADMIN_WRITES: [(&str, &str); 20] = [
    (
        "/admin/api/accounts/{accessKey}/zones/{zone}/backtest",
        "post",
    ),
    ("/admin/api/accounts/{accessKey}/holdout", "put"),
    ("/admin/api/accounts/{accessKey}/holdout", "delete"),
    ("/admin/api/accounts/{accessKey}/experiments/{id}", "put"),
    ("/admin/api/accounts/{accessKey}/experiments/{id}", "delete"),
    (
        "/admin/api/accounts/{accessKey}/experiments/{id}/start",
        "post",
    ),
    (
        "/admin/api/accounts/{accessKey}/experiments/{id}/stop",
        "post",
    ),
    (
        "/admin/api/accounts/{accessKey}/experiments/{id}/end",
        "post",
    ),
    ("/admin/api/accounts/{accessKey}/zones/{zone}/draft", "put"),
    (
        "/admin/api/accounts/{accessKey}/zones/{zone}/draft",
        "delete",
    ),
    ("/admin/api/accounts/{accessKey}/segments/draft", "put"),
    ("/admin/api/accounts/{accessKey}/segments/draft", "delete"),
    ("/admin/api/accounts/{accessKey}/segments", "put"),
    (
        "/admin/api/accounts/{accessKey}/zones/{zone}/campaigns",
        "put",
    ),
    (
        "/admin/api/accounts/{accessKey}/zones/{zone}/campaigns",
        "delete",
    ),
    ("/admin/api/accounts/{accessKey}/campaigns/restore", "post"),
    ("/admin/api/accounts/{accessKey}/segments/size", "post"),
    (
        "/admin/api/accounts/{accessKey}/zones/{zone}/preview",
        "post",
    ),
    (
        "/admin/api/accounts/{accessKey}/zones/{zone}/shadow",
        "post",
    ),
    (
        "/admin/api/accounts/{accessKey}/zones/{zone}/shadow",
        "delete",
    ),
];

/// The admin API's paths, as the document gives them.
pub(crate) const ADMIN_PATHS: [&str; 21] = [
    "/admin/api/live",
    "/admin/api/accounts",
    "/admin/api/accounts/{accessKey}/analytics",
    "/admin/api/accounts/{accessKey}/experiments",
    "/admin/api/accounts/{accessKey}/explain",
    "/admin/api/accounts/{accessKey}/predictions",
    "/admin/api/accounts/{accessKey}/models",
    "/admin/api/accounts/{accessKey}/segments",
    "/admin/api/accounts/{accessKey}/segments/{segment}/size",
    "/admin/api/accounts/{accessKey}/zones/{zone}/campaigns",
    "/admin/api/accounts/{accessKey}/campaigns/history",
    "/admin/api/accounts/{accessKey}/campaigns/history/{version}",
    "/admin/api/accounts/{accessKey}/catalogue",
    "/admin/api/accounts/{accessKey}/visitors/recent",
    "/admin/api/accounts/{accessKey}/zones/{zone}/shadow",
    "/admin/api/accounts/{accessKey}/drafts",
    "/admin/api/accounts/{accessKey}/zones/{zone}/draft",
    "/admin/api/accounts/{accessKey}/segments/draft",
    "/admin/api/accounts/{accessKey}/campaigns/restore",
    "/admin/api/campaigns/vocabulary",
    "/admin/api/accounts/{accessKey}/holdout",
];
