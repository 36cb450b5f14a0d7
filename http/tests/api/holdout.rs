//! The store-wide holdout through the admin API, with the real server: switched on with
//! its fields checked, the held-out shoppers (by the published hash of the person)
//! shown nothing personalized in any zone while the others see the campaign list and
//! the automated zones, a shopper's linked device held with them, what personalization
//! added found by its always-valid interval, kept across a SIGKILL, and switched off.

use serde_json::{Value, json};
use vitrine_engine::experiment::holdout::held_out;

use crate::campaigns::{EDITOR, VIEWER, admin, config, load, manual, put_campaigns};
use crate::common::{Resp, Server};

fn results(server: &Server) -> Value {
    let resp = admin(server, "GET", "/holdout", VIEWER, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

fn put(server: &Server, body: &Value, headers: &[(&str, &str)]) -> Resp {
    admin(server, "PUT", "/holdout", EDITOR, Some(body), headers)
}

/// What the home page's list (HP-01) and a product page's alternatives (PP-01) show a
/// shopper, with `events` sent first.
fn zones(server: &Server, visitor: &str, events: Value) -> (Vec<String>, Vec<String>) {
    let mut events = events.as_array().cloned().unwrap_or_default();
    events.push(json!({"name": "product_view", "data": {"id": "S1"}}));
    let body = crate::common::serverside_body(json!({
        "appId": crate::campaigns::KEY, "secretKey": crate::campaigns::SECRET,
        "visitorId": visitor, "events": events, "zones": ["HP-01", "PP-01"],
    }));
    let resp = server.post_json("/api/serverside", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    let ids = |zone: &str| -> Vec<String> {
        json["zones"][zone]["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{zone} in {json}"))
            .iter()
            .map(|i| i["Id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    (ids("HP-01"), ids("PP-01"))
}

/// Whether a shopper was shown the holdout's strategy (`on_offer`: S3, the one product
/// on offer) in both zones; a shopper who is not sees the home page's list.
fn held(shown: &(Vec<String>, Vec<String>), who: &str) -> bool {
    let offer = vec!["S3".to_owned()];
    if shown.0 == offer && shown.1 == offer {
        return true;
    }
    assert_eq!(shown.0, ["B2", "B3"], "{who}: {shown:?}");
    assert_ne!(shown.1, offer, "{who}: {shown:?}");
    false
}

/// Each group's visitors, ordering visitors and revenue (a request of a visitor already
/// counted that day changes none of them).
fn figures(results: &Value) -> Vec<(Value, Value, Value)> {
    results["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("{results}"))
        .iter()
        .map(|g| {
            (
                g["visitors"].clone(),
                g["orderingVisitors"].clone(),
                g["revenue"].clone(),
            )
        })
        .collect()
}

fn problems(resp: &Resp) -> String {
    assert_eq!(resp.status, 400, "{}", resp.body);
    resp.body.clone()
}

#[test]
fn held_out_shoppers_see_nothing_personalized_and_what_personalization_adds_is_measured() {
    let server = Server::with_config(&config());
    load(&server, Vec::new());
    put_campaigns(
        &server,
        "HP-01",
        json!([manual("bags", None, &["B2", "B3"])]),
    );

    // Off until switched on; a viewer may read, not switch.
    let off = results(&server);
    assert_eq!(off["on"], false, "{off}");
    let resp = admin(
        &server,
        "PUT",
        "/holdout",
        VIEWER,
        Some(&json!({"share": 5})),
        &[],
    );
    assert_eq!(resp.status, 403, "{}", resp.body);
    // Every field checked by name; nothing changes.
    for (body, named) in [
        (json!({}), "\"share\""),
        (json!({"share": 0}), "\"share\""),
        (json!({"share": 80}), "\"share\""),
        (
            json!({"share": 10, "strategy": "personalized"}),
            "\"strategy\"",
        ),
        (json!({"share": 10, "colour": "red"}), "\"colour\""),
    ] {
        let found = problems(&put(&server, &body, &[]));
        assert!(found.contains(named), "{body}: {found}");
    }
    let resp = admin(&server, "DELETE", "/holdout", EDITOR, None, &[]);
    assert!(
        problems(&resp).contains("the holdout is off"),
        "{}",
        resp.body
    );
    assert_eq!(results(&server)["on"], false);

    // On: half the shoppers, the products on offer.
    let etag = admin(&server, "GET", "/holdout", VIEWER, None, &[])
        .header("etag")
        .unwrap()
        .to_owned();
    let resp = put(
        &server,
        &json!({"share": 50, "strategy": "on_offer"}),
        &[("if-match", &etag)],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    // A stale version is refused.
    let resp = put(&server, &json!({"share": 40}), &[("if-match", &etag)]);
    assert_eq!(resp.status, 412, "{}", resp.body);
    let on = results(&server);
    assert_eq!(
        (on["on"].as_bool(), on["share"].as_u64()),
        (Some(true), Some(50))
    );
    assert_eq!(on["strategy"], "on_offer");
    // The products on offer are picked from trending ones: S3 viewed until a held-out
    // shopper's zones show it.
    let probe = (0..)
        .map(|i| format!("probe-{i}"))
        .find(|p| held_out(50, p))
        .unwrap();
    let view = json!([{"name": "product_view", "data": {"id": "S3"}}]);
    crate::common::wait_for(
        "trending to hold the product on offer",
        std::time::Duration::from_secs(120),
        || {
            let shown = zones(&server, &probe, view.clone());
            (shown.0 == ["S3"] && shown.1 == ["S3"]).then_some(())
        },
    );

    // Who is held out is the published hash of the person, the same on every request;
    // held-out shoppers order one in ten, the others one in two.
    let mut held_count = 0;
    for i in 0..300 {
        let visitor = format!("h-{i}");
        let first = zones(&server, &visitor, json!([]));
        let is_held = held(&first, &visitor);
        assert_eq!(is_held, held_out(50, &visitor), "{visitor}: {first:?}");
        assert_eq!(
            held(&zones(&server, &visitor, json!([])), &visitor),
            is_held
        );
        held_count += usize::from(is_held);
        let rate = if is_held { 10 } else { 2 };
        if i % rate == 0 {
            let line = json!({"id": "S4", "qty": 1, "unitprice": 50});
            let order = json!([{"name": "order", "data": {"orderid": format!("o-{visitor}"),
                "userid": visitor, "ordertotal": 50, "items": [line]}}]);
            zones(&server, &visitor, order);
        }
    }
    assert!((100..200).contains(&held_count), "{held_count} of 300");

    // A shopper named on a second device is held with the person, not the device.
    let person = (0..)
        .map(|i| format!("user-{i}"))
        .find(|user| held_out(50, user) != held_out(50, "phone-1"))
        .unwrap();
    let login = json!([{"name": "customer_details", "data": {"userid": person}}]);
    let named = zones(&server, "phone-1", login);
    assert_eq!(held(&named, "phone-1"), held_out(50, &person), "{named:?}");

    let measured = results(&server);
    let groups = measured["groups"].as_array().unwrap();
    assert_eq!(groups[0]["name"], "personalized");
    assert_eq!(groups[1]["name"], "holdout");
    let visitors: u64 = groups.iter().map(|g| g["visitors"].as_u64().unwrap()).sum();
    assert_eq!(visitors, 302, "{measured}");
    for metric in ["conversion", "revenuePerVisitor"] {
        let added = &measured["added"][metric];
        assert_eq!(added["significant"], true, "{metric}: {measured}");
        assert!(added["low"].as_f64().unwrap() > 0.0, "{metric}: {measured}");
    }

    // Kept across a SIGKILL, with its figures.
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config()));
    let kept = results(&server);
    assert_eq!(kept["on"], true, "{kept}");
    assert_eq!(figures(&kept), figures(&measured), "{kept}");
    let held_visitor = (0..300)
        .map(|i| format!("h-{i}"))
        .find(|v| held_out(50, v))
        .unwrap();
    assert!(held(
        &zones(&server, &held_visitor, json!([])),
        &held_visitor
    ));

    // Switched off: everyone personalized again, the period closed, in the audit log.
    let resp = admin(&server, "DELETE", "/holdout", EDITOR, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(!held(
        &zones(&server, &held_visitor, json!([])),
        &held_visitor
    ));
    let closed = results(&server);
    assert_eq!(closed["on"], false, "{closed}");
    assert!(closed["periods"][0]["to"].is_string(), "{closed}");
    assert_eq!(figures(&closed), figures(&measured), "{closed}");
    let history = admin(&server, "GET", "/campaigns/history", VIEWER, None, &[]).json();
    let summaries = history.to_string();
    assert!(
        summaries.contains("holdout set: 50 % of shoppers see on_offer in every zone")
            && summaries.contains("holdout switched off"),
        "{summaries}"
    );
}
