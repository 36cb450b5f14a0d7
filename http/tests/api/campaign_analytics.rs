//! Campaign analytics and experiments, with the real server: each campaign's answers,
//! views, basket adds, orders and revenue counted beside the zone's, and an experiment
//! whose variant is the zone's campaign list.

use serde_json::{Value, json};

use crate::campaigns::{
    EDITOR, KEY, SECRET, admin, config, load, manual, put_campaigns, put_segments, shown,
};
use crate::common::Server;

fn analytics(server: &Server) -> Vec<Value> {
    let resp = admin(server, "GET", "/analytics", EDITOR, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["zones"].as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], campaign: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["zone"] == "HP-01" && r["campaign"] == campaign)
        .unwrap_or_else(|| panic!("no row of campaign {campaign} in {rows:?}"))
}

/// Sends `events` in the shopper's session (none: a new one); returns the session and
/// the ids `zone` showed, when asked for.
fn send(
    server: &Server,
    visitor: &str,
    session: Option<&str>,
    events: Value,
    zone: Option<&str>,
) -> (String, Vec<String>) {
    let mut body =
        json!({"appId": KEY, "secretKey": SECRET, "visitorId": visitor, "events": events});
    if let Some(session) = session {
        body["sessionId"] = json!(session);
    }
    if let Some(zone) = zone {
        body["zones"] = json!([zone]);
    }
    let resp = server.post_json("/api/serverside", &crate::common::serverside_body(body));
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    let ids = zone
        .map(|z| {
            json["zones"][z]["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["Id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (json["sessionId"].as_str().unwrap().to_owned(), ids)
}

#[test]
fn each_campaign_counts_its_answers_views_baskets_orders_and_revenue() {
    let server = Server::with_config(&config());
    load(&server, Vec::new());
    assert_eq!(
        put_segments(
            &server,
            json!([{"id": "members", "rule": {"loggedIn": true}}])
        )
        .status,
        200
    );
    put_campaigns(
        &server,
        "HP-01",
        json!([
            manual("members", Some("members"), &["B2", "B3"]),
            manual("everyone", None, &["S4", "S2"])
        ]),
    );
    // A member is shown the members' campaign twice; a guest the other once, then
    // views, puts in the basket and orders one of its products.
    let login = json!([{"name": "customer_details", "data": {"email": "m@example.com"}}]);
    assert_eq!(
        shown(&server, "member", "HP-01", login, json!({})),
        ["B2", "B3"]
    );
    assert_eq!(
        shown(&server, "member", "HP-01", json!([]), json!({})),
        ["B2", "B3"]
    );
    let (session, ids) = send(&server, "guest", None, json!([]), Some("HP-01"));
    assert_eq!(ids, ["S4", "S2"]);
    let session = Some(session.as_str());
    let view = json!([{"name": "product_view", "data": {"id": "S4"}}]);
    send(&server, "guest", session, view, None);
    let line = json!({"id": "S4", "qty": 1, "unitprice": 50});
    let basket = json!([{"name": "set_basket", "data": {"items": [line]}}]);
    send(&server, "guest", session, basket, None);
    let order = json!([{"name": "order", "data": {"orderid": "o-1", "email": "g@example.com",
        "ordertotal": 50, "items": [line]}}]);
    send(&server, "guest", session, order, None);
    let rows = analytics(&server);
    let members = &row(&rows, "members")["totals"];
    assert_eq!(members["answers"], 2, "{members}");
    assert_eq!(members["impressions"], 4);
    assert_eq!(members["viewed"], 0);
    let everyone = &row(&rows, "everyone")["totals"];
    assert_eq!(everyone["answers"], 1, "{everyone}");
    assert_eq!(everyone["viewed"], 1);
    assert_eq!(everyone["basketed"], 1);
    assert_eq!(everyone["orderedLines"], 1);
    assert_eq!(
        everyone["revenue"],
        json!([{"currency": "GBP", "amount": "50.00"}])
    );
    assert_eq!(row(&rows, "everyone")["variant"], "");
}

#[test]
fn an_experiments_variant_may_be_the_campaign_list() {
    let experiment = "\n  [[accounts.experiments]]\n  id = \"list-test\"\n  zone = \"HP-01\"\n    \
        [[accounts.experiments.variants]]\n    name = \"automated\"\n    \
        [[accounts.experiments.variants]]\n    name = \"campaigns\"\n    campaigns = true\n";
    let server = Server::with_config(&format!("{}{experiment}", config()));
    load(&server, Vec::new());
    put_campaigns(&server, "HP-01", json!([manual("list", None, &["B1"])]));
    let mut seen = std::collections::BTreeMap::new();
    for v in 0..30 {
        let visitor = format!("split-{v}");
        let explain = admin(
            &server,
            "GET",
            &format!("/explain?zone=HP-01&visitor={visitor}"),
            EDITOR,
            None,
            &[],
        )
        .json();
        let variant = explain["variant"]["name"].as_str().unwrap().to_owned();
        let ids = shown(&server, &visitor, "HP-01", json!([]), json!({}));
        if variant == "campaigns" {
            assert_eq!(ids, ["B1"], "{visitor}");
            assert_eq!(explain["campaigns"]["shown"], "list");
        } else {
            assert!(explain["campaigns"].is_null(), "{explain}");
        }
        *seen.entry(variant).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 2, "both variants drawn: {seen:?}");
    // The experiment's results compare its two variants by their own names.
    let results = admin(&server, "GET", "/experiments", EDITOR, None, &[]);
    assert_eq!(results.status, 200, "{}", results.body);
    assert!(results.body.contains("\"campaigns\""), "{}", results.body);
}
