//! Zone analytics end to end, with the real server: what a zone showed, then the
//! shopper's views, basket adds and orders (in GBP and USD), counted exactly; counts
//! that survive a SIGKILL; an erasure that removes the shopper's impressions and leaves
//! the counts; the admin API's tokens.

use serde_json::{Value, json};

use crate::common::{DEMO_KEY, DEMO_SECRET, Resp, Server, request};

const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef";

fn config() -> String {
    format!(
        r#"
[durability]
events_fsync = "always"
[admin]
tokens = ["{ADMIN_TOKEN}", "second-admin-token-0123456789"]
[[accounts]]
access_key = "{DEMO_KEY}"
secret_key = "{DEMO_SECRET}"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "TR-01"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 4
"#
    )
}

fn admin_get(server: &Server, path: &str, token: Option<&str>) -> Resp {
    let header = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = header
        .as_deref()
        .map(|h| vec![("authorization", h)])
        .unwrap_or_default();
    request(server.addr, "GET", path, b"", &headers)
}

/// The trending zone's totals.
fn totals(server: &Server) -> Value {
    let resp = admin_get(
        server,
        &format!("/admin/api/accounts/{DEMO_KEY}/analytics"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let zones = resp.json()["zones"].clone();
    let zone = zones
        .as_array()
        .unwrap()
        .iter()
        .find(|z| z["zone"] == "TR-01")
        .unwrap_or_else(|| panic!("no TR-01 in {zones}"))
        .clone();
    assert_eq!(zone["strategy"], "trending");
    assert_eq!(zone["days"].as_array().unwrap().len(), 1, "{zone}");
    zone["totals"].clone()
}

/// Asks the zone for `visitor`; the product ids shown and the session id.
fn shown(server: &Server, visitor: &str, currency: &str) -> (Vec<String>, String) {
    let resp = server.serverside(json!({
        "visitorId": visitor,
        "currency": currency,
        "zones": ["TR-01"],
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
    }));
    assert_eq!(resp.status, 200, "{}", resp.body);
    let body = resp.json();
    let items: Vec<String> = body["zones"]["TR-01"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(items.len(), 4, "{body}");
    (items, body["sessionId"].as_str().unwrap().to_owned())
}

fn events(server: &Server, visitor: &str, session: &str, currency: &str, events: Value) {
    let resp = server.serverside(json!({
        "visitorId": visitor, "sessionId": session, "currency": currency, "events": events,
    }));
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["errors"], json!([]), "{}", resp.body);
}

#[test]
fn zone_answers_views_baskets_and_orders_are_counted_and_survive_a_kill() {
    let server = Server::with_config(&config());
    let (gbp_items, session) = shown(&server, "shopper", "GBP");
    let view = |id: &str| json!({"name": "product_view", "data": {"id": id}});
    // One shown product viewed twice (credited once), one product never shown.
    let unshown = "P00999";
    assert!(!gbp_items.iter().any(|i| i == unshown));
    events(
        &server,
        "shopper",
        &session,
        "GBP",
        json!([view(&gbp_items[0]), view(&gbp_items[0]), view(unshown)]),
    );
    // Two shown products put in the basket, then the basket grows by one unshown.
    let line = |id: &str, qty: u32, price: f64| json!({"id": id, "qty": qty, "unitprice": price});
    let basket = |items: Vec<Value>| json!({"name": "set_basket", "data": {"items": items}});
    events(
        &server,
        "shopper",
        &session,
        "GBP",
        json!([basket(vec![
            line(&gbp_items[0], 2, 9.99),
            line(&gbp_items[1], 1, 3.0)
        ])]),
    );
    events(
        &server,
        "shopper",
        &session,
        "GBP",
        json!([basket(vec![
            line(&gbp_items[0], 2, 9.99),
            line(&gbp_items[1], 1, 3.0),
            line(unshown, 1, 1.0)
        ])]),
    );
    // An order of one shown and one unshown product, in GBP.
    events(
        &server,
        "shopper",
        &session,
        "GBP",
        json!([{"name": "order", "data": {"orderid": "an-1", "userid": "analytics-user",
            "items": [line(&gbp_items[0], 2, 9.99), line(unshown, 1, 1.0)]}}]),
    );
    // Another shopper orders a shown product in USD.
    let (usd_items, usd_session) = shown(&server, "usd-shopper", "USD");
    events(
        &server,
        "usd-shopper",
        &usd_session,
        "USD",
        json!([{"name": "order", "data": {"orderid": "an-2", "userid": "usd-user",
            "items": [line(&usd_items[2], 1, 5.5)]}}]),
    );

    let expected = json!({
        "answers": 2, "impressions": 8, "visitors": 2, "viewed": 1, "basketed": 2,
        "orderedLines": 2, "orderedUnits": 3, "orderingVisitors": 2,
        "revenue": [{"currency": "GBP", "amount": "19.98"}, {"currency": "USD", "amount": "5.50"}],
        "viewThroughRate": 0.125, "clicked": 0, "clickThroughRate": 0.0,
    });
    assert_eq!(totals(&server), expected);

    // The counts and the impressions are durable: after a SIGKILL and a restart the
    // totals are the same, and shown products are still credited.
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config()));
    assert_eq!(totals(&server), expected);
    events(
        &server,
        "shopper",
        &session,
        "GBP",
        json!([view(&gbp_items[3])]),
    );
    let mut after = expected.clone();
    after["viewed"] = json!(2);
    after["viewThroughRate"] = json!(0.25);
    assert_eq!(totals(&server), after);

    // Erasing the shopper leaves the counts; the impressions go with the visitor (a
    // view of a product it was shown is no longer credited).
    let resp = server.post_json(
        "/api/user/forget",
        &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "analytics-user"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(totals(&server), after);
    events(
        &server,
        "shopper",
        &session,
        "GBP",
        json!([view(&gbp_items[2])]),
    );
    assert_eq!(totals(&server), after);
}

#[test]
fn the_admin_api_opens_with_an_admin_token_only() {
    let server = Server::with_config(&config());
    let path = "/admin/api/accounts";
    let missing = admin_get(&server, path, None);
    assert_eq!(missing.status, 401, "{}", missing.body);
    assert_eq!(
        missing.header("www-authenticate"),
        Some("Bearer realm=\"vitrine-admin\"")
    );
    assert!(
        missing.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("Authorization: expected \"Bearer <admin token>\"")
    );
    for wrong in ["admin-token-0123456789abcdeX", DEMO_SECRET, DEMO_KEY, "x"] {
        let resp = admin_get(&server, path, Some(wrong));
        assert_eq!(resp.status, 403, "{wrong}: {}", resp.body);
        assert_eq!(
            resp.json()["error"],
            "Authorization: the bearer token is not an admin token of this server"
        );
    }
    // Unknown admin paths answer 404 only to an admin.
    assert_eq!(admin_get(&server, "/admin/api/nothing", None).status, 401);
    for token in [ADMIN_TOKEN, "second-admin-token-0123456789"] {
        let resp = admin_get(&server, path, Some(token));
        assert_eq!(resp.status, 200, "{}", resp.body);
        let account = &resp.json()["accounts"][0];
        assert_eq!(account["accessKey"], DEMO_KEY);
        assert_eq!(account["attributionDays"], 7);
        assert_eq!(account["zones"][0]["strategy"], "trending");
        assert!(account["products"].as_u64().unwrap() > 0);
    }
    let unknown = admin_get(&server, "/admin/api/nothing", Some(ADMIN_TOKEN));
    assert_eq!(unknown.status, 404);
    let no_account = admin_get(
        &server,
        "/admin/api/accounts/nobody/analytics",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(no_account.status, 404);
    assert_eq!(
        no_account.json()["error"],
        "no account with access key \"nobody\""
    );
    let bad = admin_get(
        &server,
        &format!("/admin/api/accounts/{DEMO_KEY}/analytics?from=yesterday"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.json()["error"],
        "from: expected a date YYYY-MM-DD, got \"yesterday\""
    );
    let unknown_param = admin_get(&server, "/admin/api/accounts?verbose=1", Some(ADMIN_TOKEN));
    assert_eq!(unknown_param.status, 400);
    assert_eq!(
        unknown_param.json()["error"],
        "verbose: unknown query parameter (this endpoint takes none)"
    );

    // Without [admin] tokens the admin API is closed (the embedded demo has one of its
    // own; a configuration file without `[admin]` has none).
    let closed = Server::with_config(include_str!("../../src/demo.toml"));
    let resp = admin_get(&closed, path, Some(ADMIN_TOKEN));
    assert_eq!(resp.status, 403);
    assert_eq!(
        resp.json()["error"],
        "the admin API is closed: no [admin] tokens are configured"
    );
}

#[test]
fn an_account_without_zone_analytics_records_no_answers() {
    let server = Server::with_config(&config().replace(
        "default_currency = \"GBP\"",
        "default_currency = \"GBP\"\nzone_analytics = false",
    ));
    shown(&server, "shopper", "GBP");
    let resp = admin_get(
        &server,
        &format!("/admin/api/accounts/{DEMO_KEY}/analytics"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["zones"], json!([]));
}

#[test]
fn a_visitors_variant_is_the_hash_of_the_experiment_and_visitor_and_survives_a_restart() {
    let experiment = "\n  [[accounts.experiments]]\n  id = \"split-test\"\n  zone = \"TR-01\"\n    \
        [[accounts.experiments.variants]]\n    name = \"A\"\n    \
        [[accounts.experiments.variants]]\n    name = \"B\"\n    strategy = \"top_sellers\"\n    \
        fallback = [\"trending\"]\n";
    let config = format!("{}{experiment}", config());
    let server = Server::with_config(&config);
    let visitors: Vec<String> = (0..40).map(|v| format!("split-visitor-{v}")).collect();
    let variant_of = |server: &Server, visitor: &str| -> String {
        let resp = admin_get(
            server,
            &format!("/admin/api/accounts/{DEMO_KEY}/explain?zone=TR-01&visitor={visitor}"),
            Some(ADMIN_TOKEN),
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()["variant"]["name"].as_str().unwrap().to_owned()
    };
    let before: Vec<String> = visitors.iter().map(|v| variant_of(&server, v)).collect();
    for (visitor, variant) in visitors.iter().zip(&before) {
        let expected =
            if vitrine_engine::experiment::bucket("split-test", visitor).is_multiple_of(2) {
                "A"
            } else {
                "B"
            };
        assert_eq!(variant, expected, "{visitor}");
        shown(&server, visitor, "GBP");
    }
    assert!(before.iter().any(|v| v == "A") && before.iter().any(|v| v == "B"));
    // Each variant's answers are counted under its name.
    let resp = admin_get(
        &server,
        &format!("/admin/api/accounts/{DEMO_KEY}/analytics"),
        Some(ADMIN_TOKEN),
    );
    for name in ["A", "B"] {
        let zone = resp.json()["zones"]
            .as_array()
            .unwrap()
            .iter()
            .find(|z| z["variant"] == name)
            .unwrap()
            .clone();
        let assigned = before.iter().filter(|v| *v == name).count() as u64;
        assert_eq!(zone["totals"]["answers"], json!(assigned), "{zone}");
        assert_eq!(zone["totals"]["visitors"], json!(assigned), "{zone}");
    }
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config));
    let after: Vec<String> = visitors.iter().map(|v| variant_of(&server, v)).collect();
    assert_eq!(before, after);
}

/// Online self-evaluation: a sampled shopper's next view is looked up in every product
/// zone just before it is applied, and the admin API and `/metrics` say how it went.
#[test]
fn a_sampled_shoppers_next_view_is_judged_and_reported() {
    let server = Server::with_config(&config());
    let sampled = |n: &usize| vitrine_engine::prequential::sampled(&format!("judged-{n}"));
    let judged = format!("judged-{}", (0..).find(sampled).expect("a sampled visitor"));
    let others: Vec<String> = (0..)
        .filter(|n| !vitrine_engine::prequential::sampled(&format!("trainer-{n}")))
        .take(5)
        .map(|n| format!("trainer-{n}"))
        .collect();
    for other in &others {
        let resp = server.serverside(json!({"visitorId": other,
            "events": [{"name": "product_view", "data": {"id": "P00007"}}]}));
        assert_eq!(resp.status, 200, "{}", resp.body);
    }
    // Once the models are rebuilt (every second), P00007 leads the trending zone.
    crate::common::wait_for(
        "P00007 trending",
        std::time::Duration::from_secs(60),
        || {
            let (ids, _) = shown(&server, "onlooker", "GBP");
            (ids.first().map(String::as_str) == Some("P00007")).then_some(())
        },
    );
    let path = format!("/admin/api/accounts/{DEMO_KEY}/predictions");
    let before = admin_get(&server, &path, Some(ADMIN_TOKEN)).json();
    assert!(
        before["zones"].as_array().is_some_and(Vec::is_empty),
        "nobody sampled yet: {before}"
    );
    let resp = server.serverside(json!({"visitorId": judged,
        "events": [{"name": "product_view", "data": {"id": "P00007"}}]}));
    assert_eq!(resp.status, 200, "{}", resp.body);

    let answer = admin_get(&server, &path, Some(ADMIN_TOKEN));
    assert_eq!(answer.status, 200, "{}", answer.body);
    let body = answer.json();
    assert_eq!(body["sampledOneIn"], 20, "{body}");
    assert_eq!(body["top"], 10, "{body}");
    let zone = &body["zones"][0];
    assert_eq!(zone["zone"], "TR-01", "{body}");
    assert_eq!(zone["trials"], 1, "{body}");
    assert_eq!(zone["hitsTotal"], 1, "{body}");
    assert_eq!(zone["mrr"], 1.0, "{body}");
    let metrics = server.get("/metrics").body;
    let line =
        format!("vitrine_zone_prediction_hits_total{{account=\"{DEMO_KEY}\",zone=\"TR-01\"}} 1");
    assert!(metrics.contains(&line), "{line} in {metrics}");
}
