//! The vendor's own store plugins against Vitrine, unmodified: the requests they send
//! (captured in `tests/fixtures/vendor-requests/`) replayed against the real server,
//! and a case for each rule of what Vitrine accepts beyond the contract. The PHP SDK's
//! feeds, deltas and account calls are in `php_sdk.rs`.

use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ZoneToml};

use crate::common::{DEMO_KEY, DEMO_SECRET, Resp, Server, serverside_body, wait_for};

/// A configuration of the demo account (demo catalogue) with `zones` only.
pub(crate) fn demo_config(preamble: &str, zones: Vec<ZoneToml>) -> String {
    let account = zones.into_iter().fold(
        AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo),
        AccountToml::zone,
    );
    ConfigToml::new(preamble).account(account).to_toml()
}

/// The requests of one fixture file, one JSON object a line.
pub(crate) fn fixture(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/fixtures/vendor-requests/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// Ids of a zone's items in a serverside answer.
pub(crate) fn zone_ids(resp: &Resp, zone: &str) -> Vec<String> {
    resp.json()["zones"][zone]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no zone {zone} in {}", resp.body))
        .iter()
        .map(|item| item["Id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_magento_serverside_request_is_answered_with_its_zones() {
    let server = Server::demo();
    let cases = fixture("magento-serverside.jsonl");
    assert!(cases.len() >= 15);
    for case in cases {
        let name = case["case"].as_str().unwrap();
        let request = &case["request"];
        let resp = server.post_json("/api/serverside", request);
        assert_eq!(resp.status, 200, "{name}: {}", resp.body);
        let body = resp.json();
        assert_eq!(body["errors"], json!([]), "{name}");
        for zone in request["zones"].as_array().unwrap() {
            let id = zone["id"].as_str().unwrap();
            let items = body["zones"][id]["items"].as_array();
            assert!(
                items.is_some_and(|items| !items.is_empty()),
                "{name}: zone {id} has no items: {}",
                resp.body
            );
        }
    }
}

#[test]
fn plugin_shapes_read_as_their_contract_equivalents() {
    let server = Server::demo();
    // Zones as objects, no ip, a page label for currentUrl, empty strings as absent.
    let mut body = serverside_body(json!({
        "currentUrl": "magento-admin", "referer": "", "visitorId": "", "sessionId": "",
        "zones": [{"id": "HP-01", "data": {"any": "thing"}}, "PP-01"],
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
    }));
    body.as_object_mut().unwrap().remove("ip");
    let resp = server.post_json("/api/serverside", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(!zone_ids(&resp, "HP-01").is_empty());
    assert!(!resp.json()["visitorId"].as_str().unwrap().is_empty());

    // Magento page types map to the contract's: a product listing is a category page
    // (a zone shown only on category pages answers), content and account pages `other`.
    let config = demo_config(
        "",
        vec![
            ZoneToml::new("CAT", "trending", 4).on_pages(&["category_listing_page"]),
            ZoneToml::new("ANY", "trending", 4).on_pages(&["other"]),
        ],
    );
    let typed = Server::with_config(&config);
    let page = |page_type: &str, zone: &str| {
        typed.serverside(json!({
            "events": [{"name": "page_view", "data": {"page_type": page_type}}],
            "zones": [zone],
        }))
    };
    assert_eq!(
        page("product_listing_page", "CAT").json()["errors"],
        json!([])
    );
    assert_eq!(page("content_page", "ANY").json()["errors"], json!([]));
    assert_eq!(page("my_account", "ANY").json()["errors"], json!([]));
    let not_on_page = page("my_account", "CAT");
    assert_eq!(
        not_on_page.json()["errors"],
        json!(["zones[0]: zone \"CAT\" is not shown on other pages"])
    );
    // `data: []` names no page: `other`.
    let empty =
        typed.serverside(json!({"events": [{"name": "page_view", "data": []}], "zones": ["ANY"]}));
    assert_eq!(empty.json()["errors"], json!([]), "{}", empty.body);

    // A bare set_basket list with numeric strings: the basket's products leave the zones.
    let visitor = "plugin-basket";
    let before = zone_ids(
        &server.serverside(json!({"visitorId": visitor, "zones": ["HP-01"]})),
        "HP-01",
    );
    let first = before[0].clone();
    let basket = server.serverside(json!({
        "visitorId": visitor,
        "events": [{"name": "set_basket", "data": [{"id": first, "qty": "1.0000", "unitprice": "45.0000", "children": []}]}],
        "zones": ["HP-01"],
    }));
    assert_eq!(basket.status, 200, "{}", basket.body);
    assert!(
        !zone_ids(&basket, "HP-01").contains(&first),
        "{}",
        basket.body
    );
    // `[]` empties it again.
    let emptied = server.serverside(json!({
        "visitorId": visitor,
        "events": [{"name": "set_basket", "data": []}],
        "zones": ["HP-01"],
    }));
    assert!(zone_ids(&emptied, "HP-01").contains(&first));

    // Whole numbers as ids, null userid for a guest with an email.
    let numbers = server.serverside(json!({"events": [
        {"name": "customer_details", "data": {"userid": 5, "email": "guest@example.com"}},
        {"name": "product_view", "data": {"id": "P00007"}},
        {"name": "order", "data": {"orderid": 9001, "userid": null, "email": "guest@example.com",
            "ordertotal": "12.50", "items": [{"id": "P00007", "qty": 1, "unitprice": "12.50"}]}}
    ]}));
    assert_eq!(numbers.status, 200, "{}", numbers.body);
    let again = server.serverside(json!({"events": [
        {"name": "order", "data": {"orderid": "9001", "email": "guest@example.com",
            "items": [{"id": "P00007", "qty": 1, "unitprice": 1}]}}
    ]}));
    assert_eq!(
        again.json()["errors"],
        json!([
            "events[0].data.orderid: order \"9001\" was already recorded; it was not counted again"
        ]),
        "the number 9001 and the string \"9001\" are one order id"
    );
}

#[test]
fn plugin_shapes_that_are_wrong_under_both_readings_are_still_400() {
    let server = Server::demo();
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"currentUrl": "ftp://shop.example/"}),
            "currentUrl: expected an absolute http or https URL",
        ),
        (
            json!({"currentUrl": "magento admin"}),
            "currentUrl: expected an absolute http or https URL",
        ),
        (
            json!({"ip": "not-an-ip"}),
            "ip: expected an IPv4 or IPv6 address",
        ),
        (json!({"zones": [{"data": {}}]}), "zones[0].id: required"),
        (
            json!({"zones": [{"id": ""}]}),
            "zones[0].id: expected a zone id of 1 to 128 characters",
        ),
        (
            json!({"events": [{"name": "page_view", "data": {"page_type": "landing"}}]}),
            "events[0].data.page_type: unknown page type \"landing\"",
        ),
        (
            json!({"events": [{"name": "set_basket", "data": [{"id": "P1", "qty": "lots", "unitprice": 1}]}]}),
            "events[0].data[0].qty: expected a number, got the string \"lots\"",
        ),
        (
            json!({"events": [{"name": "product_view", "data": {"id": 4.5}}]}),
            "events[0].data.id: expected a string, or a number written as digits only (no fraction, no exponent)",
        ),
        (
            json!({"events": [{"name": "order_track", "data": {"orderid": "o", "email": "a@b.co", "productcount": 2, "id1": "P1", "qty1": 1, "unitprice1": 1}}]}),
            "events[0].data.id2: required",
        ),
        (
            json!({"events": [{"name": "order_track", "data": {"orderid": "o", "email": "a@b.co"}}]}),
            "events[0].data.id1: an order needs at least one line",
        ),
        (
            json!({"events": [{"name": "moto_order_track", "data": {"orderid": "o", "productcount": 1, "id1": "P1", "qty1": 1, "unitprice1": 1}}]}),
            "events[0].data.userid: one of userid, email or accid is required",
        ),
        (
            json!({"events": [{"name": "order_track", "data": {"orderid": "o", "email": "a@b.co", "productcount": 1.5}}]}),
            "events[0].data.productcount: expected a whole number",
        ),
    ];
    for (extra, expected) in cases {
        let resp = server.serverside(extra.clone());
        resp.assert_errors(400, expected);
    }
}

#[test]
fn an_order_track_is_an_order_and_a_moto_order_counts_for_the_customer_not_the_staff() {
    let server = Server::demo();
    // The shopper's own order, flattened.
    let shopper = server.serverside(json!({"visitorId": "flat-shopper", "events": [
        {"name": "order_track", "data": {"orderid": "FLAT-1", "email": "flat@example.com",
            "productcount": 2, "id1": "P00010", "qty1": "1.0000", "unitprice1": "5.00", "refid1": "3", "children1": [],
            "id2": "P00011", "qty2": 2, "unitprice2": 1, "children2": []}}
    ], "zones": ["HP-01"]}));
    assert_eq!(shopper.json()["errors"], json!([]), "{}", shopper.body);
    let bought = server.serverside(json!({"visitorId": "flat-shopper", "zones": ["HP-01"]}));
    let ids = zone_ids(&bought, "HP-01");
    assert!(!ids.contains(&"P00010".to_owned()) && !ids.contains(&"P00011".to_owned()));

    // Make two products trending, then have staff order them for customer 5.
    for n in 0..6 {
        server.serverside(json!({"visitorId": format!("fan-{n}"), "events": [
            {"name": "product_view", "data": {"id": "P00042"}},
            {"name": "product_view", "data": {"id": "P00043"}}
        ]}));
    }
    wait_for(
        "P00042 and P00043 to trend",
        Duration::from_secs(240),
        || {
            let ids = zone_ids(&server.serverside(json!({"zones": ["HP-01"]})), "HP-01");
            (ids.contains(&"P00042".to_owned()) && ids.contains(&"P00043".to_owned())).then_some(())
        },
    );
    let moto = &fixture("magento-serverside.jsonl")
        .into_iter()
        .find(|case| case["case"] == "A01-admin-moto-order")
        .unwrap()["request"];
    let staff = server.post_json("/api/serverside", moto);
    assert_eq!(staff.json()["errors"], json!([]), "{}", staff.body);
    let staff_visitor = staff.json()["visitorId"].as_str().unwrap().to_owned();
    // The staff member still sees them; the customer, once logged in, does not.
    let staff_view = server.serverside(json!({"visitorId": staff_visitor, "zones": ["HP-01"]}));
    assert!(zone_ids(&staff_view, "HP-01").contains(&"P00042".to_owned()));
    let customer = server.serverside(json!({"visitorId": "ann-phone", "events": [
        {"name": "customer_details", "data": {"userid": "5"}}
    ], "zones": ["HP-01"]}));
    let ids = zone_ids(&customer, "HP-01");
    assert!(
        !ids.contains(&"P00042".to_owned()) && !ids.contains(&"P00043".to_owned()),
        "the customer's MOTO purchases leave their zones: {ids:?}"
    );
    // The order id is recorded once.
    let twice = server.post_json("/api/serverside", moto);
    assert!(
        twice.json()["errors"][0]
            .as_str()
            .unwrap()
            .contains("already recorded")
    );
}

#[test]
fn a_searchterm_brings_matching_products_first() {
    let server = Server::demo();
    let page = json!([{"name": "page_view", "data": {"page_type": "search_results"}}]);
    let plain = server.serverside(json!({"events": page, "zones": ["SR-01"]}));
    let items = plain.json()["zones"]["SR-01"]["items"]
        .as_array()
        .unwrap()
        .clone();
    let last = items.last().unwrap();
    let (id, title) = (
        last["Id"].as_str().unwrap(),
        last["Title"].as_str().unwrap(),
    );
    assert_ne!(items[0]["Id"], last["Id"]);
    // Searched by its title (in other case), the last product comes first.
    let searched = server.serverside(json!({
        "events": page, "zones": ["SR-01"], "searchterm": title.to_uppercase(),
    }));
    assert_eq!(searched.status, 200, "{}", searched.body);
    assert_eq!(zone_ids(&searched, "SR-01")[0], id, "{}", searched.body);
    // Too long a term is refused like any free-text field.
    server
        .serverside(json!({"searchterm": "x".repeat(300)}))
        .assert_errors(400, "searchterm: must be at most 256 bytes");
}
