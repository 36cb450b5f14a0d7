//! Campaigns through the admin API, with the real server: a store of products from a
//! delta, segments and zone lists put and read back with their ETags, a stale
//! `If-Match` refused with nothing changed, a viewer's write refused, hostile documents
//! refused with a path, a campaign skipped for too few items, schedules judged at the
//! explain's `at`. Shared by `campaign_segments`, `campaign_content` and
//! `campaign_history` (a change kept through a SIGKILL, the audit log and a restore).

use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::records;

use crate::common::{Resp, Server, request, wait_for};

pub(crate) const KEY: &str = "campaign-shop";
pub(crate) const SECRET: &str = "campaign-shop-secret";
pub(crate) const EDITOR: &str = "editor-token-0123456789abcdef";
pub(crate) const VIEWER: &str = "viewer-token-0123456789abcdef";

/// The store: zones on the home page (trending), on product pages (similar) and an
/// html zone; admin tokens of both roles; a time zone with daylight saving.
pub(crate) fn config() -> String {
    format!(
        r#"
[durability]
events_fsync = "always"
[admin]
tokens = ["{EDITOR}", {{ token = "{VIEWER}", role = "viewer", label = "read-only" }}]
[[accounts]]
access_key = "{KEY}"
secret_key = "{SECRET}"
default_currency = "GBP"
time_zone = "Europe/London"
  [[accounts.zones]]
  id = "HP-01"
  title = "For you"
  type = "recommender-product"
  strategy = "trending"
  count = 4
  [[accounts.zones]]
  id = "PP-01"
  title = "Alternatives"
  type = "recommender-product"
  strategy = "similar"
  fallback = ["trending"]
  count = 8
  [[accounts.zones]]
  id = "CAT-01"
  title = "Categories"
  type = "recommender-category"
  strategy = "category_affinity"
  count = 4
"#
    )
}

/// A product record: `price` in GBP, its category and brand, and extra fields.
pub(crate) fn product(id: &str, price: f64, category: &str, brand: &str, extra: Value) -> Value {
    let record = records::with(
        records::product(id, &format!("{price:.2} GBP")),
        json!({"Categories": [category], "Brand": brand, "Prices": [format!("{price:.2} GBP"), format!("{:.2} USD", price * 1.25)]}),
    );
    records::with(record, extra)
}

/// The catalogue of the tests: shoes and bags of two brands at known prices.
pub(crate) fn catalogue() -> Vec<Value> {
    vec![
        product("S1", 3.00, "shoes", "acme", json!({"SearchTags": ["sale"]})),
        product("S2", 40.00, "shoes", "acme", json!({"NewArrival": true})),
        product("S3", 45.00, "shoes", "zenith", json!({"OnOffer": true})),
        product("S4", 50.00, "shoes", "acme", json!({})),
        product("S5", 120.00, "shoes", "zenith", json!({})),
        product("B1", 4.50, "bags", "acme", json!({})),
        product(
            "B2",
            60.00,
            "bags",
            "zenith",
            json!({"SearchTags": ["leather"]}),
        ),
        product("B3", 80.00, "bags", "acme", json!({})),
    ]
}

/// A server with the catalogue applied and the user records of `users`.
pub(crate) fn store(users: Vec<Value>) -> Server {
    let server = Server::with_config(&config());
    load(&server, users);
    server
}

/// Applies the catalogue (and `users`) by a delta, waiting until it is in force.
pub(crate) fn load(server: &Server, users: Vec<Value>) {
    let body = json!({"AppKey": KEY, "SecretKey": SECRET, "Products": catalogue(), "Users": users});
    let resp = server.post_json("/api/delta", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let token = resp.json()["Token"].as_str().unwrap().to_owned();
    wait_for("the catalogue's delta", Duration::from_secs(240), || {
        let resp = server.post_json(
            "/api/deltastatus",
            &json!({"AppKey": KEY, "SecretKey": SECRET, "Tokens": [token]}),
        );
        let status = resp.json()[0]["Status"].as_i64().unwrap_or(0);
        (status != 0).then_some(status)
    });
}

/// An admin request with `token`, a JSON body and extra headers.
pub(crate) fn admin(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> Resp {
    let auth = format!("Bearer {token}");
    let mut all = vec![("authorization", auth.as_str())];
    all.extend_from_slice(headers);
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    if body.is_some() {
        all.push(("content-type", "application/json"));
    }
    request(
        server.addr,
        method,
        &format!("/admin/api/accounts/{KEY}{path}"),
        &bytes,
        &all,
    )
}

/// Puts the segments (no `If-Match`); the answer.
pub(crate) fn put_segments(server: &Server, segments: Value) -> Resp {
    admin(
        server,
        "PUT",
        "/segments",
        EDITOR,
        Some(&json!({"segments": segments})),
        &[],
    )
}

/// Puts a zone's campaign list (no `If-Match`), expecting a 200.
pub(crate) fn put_campaigns(server: &Server, zone: &str, campaigns: Value) -> Value {
    let resp = admin(
        server,
        "PUT",
        &format!("/zones/{zone}/campaigns"),
        EDITOR,
        Some(&json!({"campaigns": campaigns})),
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

/// The ids a zone shows `visitor` for a request with `events` and `extra` members.
pub(crate) fn shown(
    server: &Server,
    visitor: &str,
    zone: &str,
    events: Value,
    extra: Value,
) -> Vec<String> {
    let mut body = json!({
        "appId": KEY, "secretKey": SECRET, "visitorId": visitor,
        "events": events, "zones": [zone],
    });
    crate::common::merge(&mut body, extra);
    let body = crate::common::serverside_body(body);
    let resp = server.post_json("/api/serverside", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    json["zones"][zone]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("zone {zone} in {json}"))
        .iter()
        .map(|i| i["Id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A campaign showing exactly `products` (manual source), for the segment if given.
pub(crate) fn manual(id: &str, segment: Option<&str>, products: &[&str]) -> Value {
    let mut campaign = json!({
        "id": id,
        "content": {"type": "custom", "source": {"manual": {"products": products}}},
    });
    if let Some(segment) = segment {
        campaign["segment"] = json!(segment);
    }
    campaign
}

fn etag(resp: &Resp) -> String {
    resp.header("etag")
        .unwrap_or_else(|| panic!("no ETag: {resp:?}"))
        .to_owned()
}

#[test]
fn lists_carry_etags_and_a_stale_if_match_changes_nothing() {
    let server = store(Vec::new());
    // A zone never changed shows its configuration as one automated campaign.
    let resp = admin(&server, "GET", "/zones/HP-01/campaigns", VIEWER, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["source"], "configuration");
    assert_eq!(
        resp.json()["campaigns"][0]["content"]["strategy"],
        "trending"
    );
    assert_eq!(resp.json()["timeZone"], "Europe/London");
    let first = etag(&resp);
    assert_eq!(first, "\"0\"");

    let body = json!({"campaigns": [manual("bags", None, &["B2", "B3"])]});
    let put = admin(
        &server,
        "PUT",
        "/zones/HP-01/campaigns",
        EDITOR,
        Some(&body),
        &[("if-match", &first)],
    );
    assert_eq!(put.status, 200, "{}", put.body);
    let second = etag(&put);
    assert_ne!(second, first);
    assert_eq!(
        shown(&server, "v1", "HP-01", json!([]), json!({})),
        ["B2", "B3"]
    );

    // A second editor still holding the first version is refused, and nothing changes.
    let stale = json!({"campaigns": [manual("shoes", None, &["S4"])]});
    let refused = admin(
        &server,
        "PUT",
        "/zones/HP-01/campaigns",
        EDITOR,
        Some(&stale),
        &[("if-match", &first)],
    );
    assert_eq!(refused.status, 412, "{}", refused.body);
    assert!(
        refused.json()["error"]
            .as_str()
            .unwrap()
            .contains("changed since version 0"),
        "{}",
        refused.body
    );
    assert_eq!(
        shown(&server, "v1", "HP-01", json!([]), json!({})),
        ["B2", "B3"]
    );
    let read = admin(&server, "GET", "/zones/HP-01/campaigns", EDITOR, None, &[]);
    assert_eq!(etag(&read), second);
    assert_eq!(read.json()["source"], "live");
    assert_eq!(
        read.json()["status"][0],
        json!({"id": "bags", "status": "live", "next": null})
    );

    // Segments have their own ETag: a change there leaves the zone's alone.
    let segments = put_segments(
        &server,
        json!([{"id": "buyers", "rule": {"orders": {"min": 1}}}]),
    );
    assert_eq!(segments.status, 200, "{}", segments.body);
    let read = admin(&server, "GET", "/zones/HP-01/campaigns", EDITOR, None, &[]);
    assert_eq!(etag(&read), second);
    let good = admin(
        &server,
        "PUT",
        "/zones/HP-01/campaigns",
        EDITOR,
        Some(&stale),
        &[("if-match", &second)],
    );
    assert_eq!(good.status, 200, "{}", good.body);
    assert_eq!(shown(&server, "v1", "HP-01", json!([]), json!({})), ["S4"]);

    // The list removed (with a stale ETag first): the zone is its configuration again.
    let third = etag(&good);
    let stale_remove = admin(
        &server,
        "DELETE",
        "/zones/HP-01/campaigns",
        EDITOR,
        None,
        &[("if-match", &second)],
    );
    assert_eq!(stale_remove.status, 412, "{}", stale_remove.body);
    let removed = admin(
        &server,
        "DELETE",
        "/zones/HP-01/campaigns",
        EDITOR,
        None,
        &[("if-match", &third)],
    );
    assert_eq!(removed.status, 200, "{}", removed.body);
    let read = admin(&server, "GET", "/zones/HP-01/campaigns", EDITOR, None, &[]);
    assert_eq!(read.json()["source"], "configuration", "{}", read.body);
    assert_eq!(etag(&read), etag(&removed));
    assert_ne!(shown(&server, "v1", "HP-01", json!([]), json!({})), ["S4"]);
}

#[test]
fn a_viewer_reads_but_may_not_write() {
    let server = store(Vec::new());
    for (method, path, body) in [
        ("PUT", "/segments", json!({"segments": []})),
        ("PUT", "/zones/HP-01/campaigns", json!({"campaigns": []})),
        ("POST", "/campaigns/restore", json!({"version": 1})),
    ] {
        let resp = admin(&server, method, path, VIEWER, Some(&body), &[]);
        assert_eq!(resp.status, 403, "{method} {path}: {}", resp.body);
        assert!(
            resp.json()["error"].as_str().unwrap().contains("viewer"),
            "{}",
            resp.body
        );
    }
    let history = admin(&server, "GET", "/campaigns/history", VIEWER, None, &[]);
    assert_eq!(history.status, 200);
    assert_eq!(history.json()["versions"], json!([]), "nothing was changed");
    // Any other method is refused on the admin API.
    let delete = admin(&server, "DELETE", "/segments", EDITOR, None, &[]);
    assert_eq!(delete.status, 405, "{}", delete.body);
    let patch = admin(
        &server,
        "PATCH",
        "/zones/HP-01/campaigns",
        EDITOR,
        None,
        &[],
    );
    assert_eq!(patch.status, 405, "{}", patch.body);
    let remove = admin(
        &server,
        "DELETE",
        "/zones/HP-01/campaigns",
        VIEWER,
        None,
        &[],
    );
    assert_eq!(remove.status, 403, "{}", remove.body);
    let patch = admin(
        &server,
        "PATCH",
        "/zones/HP-01/campaigns",
        EDITOR,
        None,
        &[],
    );
    assert_eq!(patch.status, 405, "{}", patch.body);
    let remove = admin(
        &server,
        "DELETE",
        "/zones/HP-01/campaigns",
        VIEWER,
        None,
        &[],
    );
    assert_eq!(remove.status, 403, "{}", remove.body);
}

#[test]
fn hostile_documents_are_refused_with_a_path_and_change_nothing() {
    let server = store(Vec::new());
    let before = put_segments(&server, json!([{"id": "new", "rule": {"visitor": "new"}}]));
    assert_eq!(before.status, 200, "{}", before.body);
    let mut deep = json!({"visitor": "new"});
    for _ in 0..20 {
        deep = json!({"not": deep});
    }
    let many: Vec<Value> = (0..10_000).map(|_| json!({"visitor": "new"})).collect();
    let cases: Vec<(Value, &str)> = vec![
        (json!([{"id": "d", "rule": deep}]), "nested at most 8 deep"),
        (
            json!([{"id": "m", "rule": {"any": many}}]),
            "at most 100 conditions",
        ),
        (
            json!([{"id": "h", "rule": {"orders": {"min": 1e300}}}]),
            "segments[0].rule.orders.min",
        ),
        (
            json!([{"id": "k", "rule": {"moonPhase": "full"}}]),
            "unknown condition kind \"moonPhase\"",
        ),
        (
            json!([{"id": "two", "rule": {"visitor": "new", "orders": {"min": 1}}}]),
            "exactly one key",
        ),
        (
            json!([{"id": "bad id", "rule": {"visitor": "new"}}]),
            "segments[0].id",
        ),
        (
            json!([{"id": "x", "rule": {"pageType": ["product_page", "moon"]}}]),
            "segments[0].rule.pageType[1]",
        ),
        (
            json!([{"id": "x", "rule": {"sessions": {"min": 5, "max": 2}}}]),
            "segments[0].rule.sessions.min",
        ),
    ];
    for (segments, needle) in cases {
        let resp = put_segments(&server, segments);
        assert_eq!(resp.status, 400, "{needle}: {}", resp.body);
        let errors = resp.json()["errors"].clone();
        assert!(
            errors.as_array().unwrap().iter().any(|e| {
                let text = format!(
                    "{}: {}",
                    e["path"].as_str().unwrap(),
                    e["message"].as_str().unwrap()
                );
                text.contains(needle)
            }),
            "{needle} in {errors}"
        );
    }
    let bad_lists = vec![
        (
            json!([{"id": "c", "schedule": {"start": "tomorrow"}, "content": {"type": "automated", "strategy": "trending"}}]),
            "campaigns[0].schedule.start",
        ),
        (
            json!([{"id": "c", "content": {"type": "automated", "strategy": "trending", "count": 100000}}]),
            "campaigns[0].content.count",
        ),
        (
            json!([{"id": "c", "content": {"type": "hologram"}}]),
            "campaigns[0].content.type",
        ),
        (
            json!([{"id": "c", "segment": "nobody", "content": {"type": "automated", "strategy": "trending"}}]),
            "campaigns[0].segment",
        ),
        (
            json!([{"id": "c", "content": {"type": "custom", "source": {"strategy": "trending"}, "filters": [{"price": {"min": "cheap"}}]}}]),
            "campaigns[0].content.filters[0].price.min",
        ),
        (
            json!([{"id": "c", "content": {"type": "custom", "source": {"strategy": "trending"}, "filters": [{"price": {"min": -5}}]}}]),
            "campaigns[0].content.filters[0].price.min: a price is never negative",
        ),
        (
            json!([{"id": "c", "content": {"type": "custom", "source": {"strategy": "category_affinity"}}}]),
            "campaigns[0].content.source.strategy",
        ),
        (
            json!([{"id": "c", "content": {"type": "html", "template": "{% if %}"}}]),
            "campaigns[0].content.template",
        ),
        (
            json!([{"id": "c", "content": {"type": "automated", "strategy": "trending"}}, {"id": "c", "content": {"type": "automated", "strategy": "trending"}}]),
            "campaigns[1].id",
        ),
    ];
    for (list, needle) in bad_lists {
        let resp = admin(
            &server,
            "PUT",
            "/zones/HP-01/campaigns",
            EDITOR,
            Some(&json!({"campaigns": list})),
            &[],
        );
        assert_eq!(resp.status, 400, "{needle}: {}", resp.body);
        assert!(resp.body.contains(needle), "{needle} in {}", resp.body);
    }
    // Not JSON at all; a zone of another kind; an unknown zone.
    let raw = request(
        server.addr,
        "PUT",
        &format!("/admin/api/accounts/{KEY}/segments"),
        b"{not json",
        &[("authorization", &format!("Bearer {EDITOR}"))],
    );
    assert_eq!(raw.status, 400, "{}", raw.body);
    let category = admin(
        &server,
        "PUT",
        "/zones/CAT-01/campaigns",
        EDITOR,
        Some(&json!({"campaigns": []})),
        &[],
    );
    assert_eq!(category.status, 400, "{}", category.body);
    let unknown = admin(
        &server,
        "PUT",
        "/zones/NOPE/campaigns",
        EDITOR,
        Some(&json!({"campaigns": []})),
        &[],
    );
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    // Nothing changed: one version (the first PUT), the zone still configured.
    let history = admin(&server, "GET", "/campaigns/history", EDITOR, None, &[]);
    assert_eq!(
        history.json()["versions"].as_array().unwrap().len(),
        1,
        "{}",
        history.body
    );
    let zone = admin(&server, "GET", "/zones/HP-01/campaigns", EDITOR, None, &[]);
    assert_eq!(zone.json()["source"], "configuration");
}

#[test]
fn unknown_ids_are_warnings_and_a_campaign_short_of_items_gives_way() {
    let server = store(Vec::new());
    let list = json!([
        {"id": "future", "minItems": 2, "content": {"type": "custom", "source": {"manual": {"products": ["S4", "NOT-YET"]}}}},
        manual("fallback", None, &["B3"]),
    ]);
    let answer = put_campaigns(&server, "HP-01", list);
    // The warnings of the part changed, with the request's paths.
    assert_eq!(
        answer["warnings"],
        json!([
            "campaigns[0].content.source.manual.products[1]: no product \"NOT-YET\" in the catalogue"
        ]),
        "{answer}"
    );
    // Judged as serving judges: a segment's category compares without case, a filter's
    // exactly; another zone's list says nothing of HP-01's unknown product.
    let resp = put_segments(
        &server,
        json!([{"id": "hats", "rule": {"any": [{"boughtCategory": ["SHOES"]}, {"basketCategory": ["HATS"]}]}}]),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.json()["warnings"],
        json!(["segments[0].rule.any[1].basketCategory[0]: no category \"HATS\" in the catalogue"])
    );
    let other = put_campaigns(
        &server,
        "PP-01",
        json!([{"id": "f", "content": {"type": "custom", "source": {"manual": {"categories": ["shoes"]}},
            "filters": [{"categoryIn": ["SHOES"]}]}}]),
    );
    assert_eq!(
        other["warnings"],
        json!([
            "campaigns[0].content.filters[0].categoryIn[0]: no category \"SHOES\" in the catalogue"
        ]),
        "{other}"
    );
    // Only S4 exists: one item, two wanted, so the next campaign is shown.
    assert_eq!(shown(&server, "v", "HP-01", json!([]), json!({})), ["B3"]);
    let explain = admin(
        &server,
        "GET",
        "/explain?zone=HP-01&visitor=v",
        EDITOR,
        None,
        &[],
    );
    let campaigns = &explain.json()["campaigns"];
    assert_eq!(campaigns["shown"], "fallback", "{campaigns}");
    assert_eq!(
        campaigns["list"][0]["skipped"],
        "too few items: 1, at least 2 wanted"
    );
    // The feed brings the product later: the first campaign is shown.
    let body = json!({"AppKey": KEY, "SecretKey": SECRET, "Products": [product("NOT-YET", 20.0, "bags", "acme", json!({}))]});
    assert_eq!(server.post_json("/api/delta", &body).status, 200);
    wait_for("the new product shown", Duration::from_secs(240), || {
        let ids = shown(&server, "v", "HP-01", json!([]), json!({}));
        (ids == ["S4", "NOT-YET"]).then_some(())
    });
}

#[test]
fn schedules_are_judged_at_the_instant_in_the_accounts_time_zone() {
    let server = store(Vec::new());
    let list = json!([
        {"id": "weekend", "schedule": {"start": "2026-03-27T00:00:00Z", "end": "2026-04-01T00:00:00Z", "days": ["sat", "sun", "mon"], "hours": [9]},
         "content": {"type": "custom", "source": {"manual": {"categories": ["bags"]}}}},
        manual("always", None, &["S4"]),
    ]);
    put_campaigns(&server, "HP-01", list);
    let at = |instant: &str| -> Value {
        let resp = admin(
            &server,
            "GET",
            &format!("/explain?zone=HP-01&at={instant}"),
            EDITOR,
            None,
            &[],
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()["campaigns"].clone()
    };
    // Saturday 28 March 2026, 9:00 in London is 09:00Z (winter time).
    assert_eq!(at("2026-03-28T09:00:00Z")["shown"], "weekend");
    assert_eq!(at("2026-03-28T09:59:59Z")["shown"], "weekend");
    let outside = at("2026-03-28T10:00:00Z");
    assert_eq!(outside["shown"], "always");
    assert_eq!(
        outside["list"][0]["skipped"],
        "its schedule does not run at this hour"
    );
    // The clocks go forward on Sunday 29 March at 01:00Z: 9:00 in London is 08:00Z.
    assert_eq!(at("2026-03-29T08:00:00Z")["shown"], "weekend");
    assert_eq!(at("2026-03-29T09:00:00Z")["shown"], "always");
    assert_eq!(at("2026-03-30T08:30:00Z")["shown"], "weekend");
    // Tuesday is not a day of it; the end is not part of the window.
    assert_eq!(
        at("2026-03-31T08:30:00Z")["list"][0]["skipped"],
        "its schedule does not run on this day of the week"
    );
    assert_eq!(
        at("2026-03-26T23:59:59Z")["list"][0]["skipped"],
        "its schedule has not started"
    );
    let edge = json!([
        {"id": "window", "schedule": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-02T00:00:00Z"},
         "content": {"type": "custom", "source": {"manual": {"products": ["B2"]}}}},
        manual("always", None, &["S4"]),
    ]);
    put_campaigns(&server, "HP-01", edge);
    assert_eq!(at("2026-11-30T23:59:59Z")["shown"], "always");
    assert_eq!(at("2026-12-01T00:00:00Z")["shown"], "window");
    assert_eq!(at("2026-12-01T23:59:59Z")["shown"], "window");
    assert_eq!(
        at("2026-12-02T00:00:00Z")["list"][0]["skipped"],
        "its schedule has ended"
    );
}
