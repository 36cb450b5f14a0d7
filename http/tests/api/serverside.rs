//! `/api/serverside`: the 200 shapes, events applied before zones, currencies, and
//! every 400 with its path.

use super::*;

#[test]
fn serverside_200_carries_ids_errors_and_zones() {
    let server = Server::demo();
    let resp = server.serverside(json!({
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
        "zones": ["HP-01"]
    }));
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let json = resp.json();
    // Fields in the contract's order.
    let positions: Vec<usize> = ["\"visitorId\"", "\"sessionId\"", "\"errors\"", "\"zones\""]
        .iter()
        .map(|k| resp.body.find(k).unwrap_or_else(|| panic!("{k} missing")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{}", resp.body);
    assert_eq!(json.as_object().unwrap().len(), 4);
    assert_eq!(json["visitorId"].as_str().unwrap().len(), 32);
    assert_eq!(json["sessionId"].as_str().unwrap().len(), 32);
    assert_eq!(json["errors"], json!([]));
    let zone = &json["zones"]["HP-01"];
    assert_eq!(zone["title"], "Trending now");
    assert_eq!(zone["type"], "recommender-product");
    let items = zone["items"].as_array().unwrap();
    assert_eq!(items.len(), 8);
    for field in [
        "Id",
        "Sku",
        "Title",
        "Description",
        "Link",
        "Image",
        "AllImages",
        "Price",
        "DisplayPrice",
        "CurrencySymbol",
        "Categories",
        "Brand",
        "SearchTags",
        "OnOffer",
        "NewArrival",
    ] {
        assert!(
            items.iter().all(|i| i.get(field).is_some()),
            "{field} missing in {zone}"
        );
    }
    assert!(server.log().contains("account ready"));
}

#[test]
fn every_demo_zone_returns_items_at_once() {
    let server = Server::demo();
    let zones = [
        "HP-01", "PP-01", "PP-02", "BP-01", "OC-01", "CP-01", "SR-01",
    ];
    let resp = server.serverside(json!({
        "events": [{"name": "page_view", "data": {"page_type": "product_page", "product_id": "P00010"}}],
        "zones": zones
    }));
    for zone in zones {
        assert!(
            !zone_ids(&resp, zone).is_empty(),
            "{zone} is empty: {}",
            resp.body
        );
    }
}

#[test]
fn sale_items_carry_was_price_saving_and_display_strings() {
    let server = Server::demo();
    let resp = server.serverside(json!({"zones": ["SR-01"]}));
    let json = resp.json();
    let sale = json["zones"]["SR-01"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i.get("WasPrice").is_some())
        .cloned()
        .expect("an item on sale");
    let price = sale["Price"].as_f64().unwrap();
    let was = sale["WasPrice"].as_f64().unwrap();
    let saving = sale["SavingPrice"].as_f64().unwrap();
    assert!(price < was);
    assert!((was - price - saving).abs() < 0.005);
    assert_eq!(sale["DisplayPrice"], format!("£{price:.2}"));
    assert_eq!(sale["DisplayWasPrice"], format!("£{was:.2}"));
    assert_eq!(sale["SavingDisplayPrice"], format!("£{saving:.2}"));
    assert_eq!(sale["CurrencySymbol"], "£");
    let percent = ((was - price) / was * 100.0).round();
    assert_eq!(sale["SavingPercent"], format!("{percent}%"));
    assert_eq!(sale["OnOffer"], true);
}

#[test]
fn visitor_id_is_kept_and_session_is_kept_while_active() {
    let server = Server::demo();
    let first = server.serverside(json!({})).json();
    let visitor = first["visitorId"].as_str().unwrap();
    let session = first["sessionId"].as_str().unwrap();
    let second = server
        .serverside(json!({"visitorId": visitor, "sessionId": session}))
        .json();
    assert_eq!(second["visitorId"], visitor);
    assert_eq!(second["sessionId"], session);
    // A session id the server never issued (or one that expired) is replaced.
    let third = server
        .serverside(json!({"visitorId": visitor, "sessionId": "made-up-session"}))
        .json();
    assert_eq!(third["visitorId"], visitor);
    assert_ne!(third["sessionId"], "made-up-session");
    // An empty id counts as absent.
    let fourth = server.serverside(json!({"visitorId": ""})).json();
    assert_eq!(fourth["visitorId"].as_str().unwrap().len(), 32);
}

#[test]
fn duplicate_order_ids_and_unknown_zones_are_reported_in_a_200() {
    let server = Server::demo();
    let order = json!({"name": "order", "data": {"orderid": "ORD-1", "email": "a@example.com",
        "items": [{"id": "P00003", "qty": 1, "unitprice": 10.5}]}});
    let resp = server.serverside(json!({"events": [order.clone()], "zones": ["HP-01"]}));
    assert_eq!(resp.json()["errors"], json!([]));
    let resp = server.serverside(json!({"events": [order], "zones": ["HP-01", "NOPE-9"]}));
    assert_eq!(resp.status, 200);
    let json = resp.json();
    assert_eq!(
        json["errors"],
        json!([
            "events[0].data.orderid: order \"ORD-1\" was already recorded; it was not counted again",
            "zones[1]: unknown zone \"NOPE-9\""
        ])
    );
    assert!(json["zones"].get("HP-01").is_some());
    assert!(json["zones"].get("NOPE-9").is_none());
}

#[test]
fn events_are_applied_before_zones_are_filled() {
    let server = configured();
    let body = |extra: Value| {
        let mut b = serverside_body(json!({"appId": "shop-eu", "secretKey": "shop-eu-secret"}));
        common::merge(&mut b, extra);
        b
    };
    let resp = server.post_json("/api/serverside", &body(json!({
        "visitorId": "visitor-rv",
        "events": [{"name": "product_view", "data": {"id": "P00020"}}, {"name": "product_view", "data": {"id": "P00021"}}],
        "zones": ["RV-01"]
    })));
    // The page's own product (the last viewed) is left out; the earlier one shows.
    assert_eq!(zone_ids(&resp, "RV-01"), ["P00020"]);
    let resp = server.post_json(
        "/api/serverside",
        &body(json!({
            "visitorId": "visitor-rv",
            "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
            "zones": ["RV-01", "HOME-ONLY"]
        })),
    );
    assert_eq!(zone_ids(&resp, "RV-01"), ["P00021", "P00020"]);
    assert!(!zone_ids(&resp, "HOME-ONLY").is_empty());
    // A zone restricted to other page types is reported, not filled.
    let resp = server.post_json(
        "/api/serverside",
        &body(json!({
            "events": [{"name": "page_view", "data": {"page_type": "basket_page"}}],
            "zones": ["HOME-ONLY"]
        })),
    );
    assert_eq!(
        resp.json()["errors"],
        json!(["zones[0]: zone \"HOME-ONLY\" is not shown on basket_page pages"])
    );
}

#[test]
fn currency_filters_products_to_those_priced_in_it() {
    let server = Server::demo();
    // P90001 is priced only in USD, P90002 only in GBP; both made the most popular.
    let token = submit_delta(
        &server,
        json!({"Products": [product("P90001", &["5.00 USD"]), product("P90002", &["5.00 GBP"])]}),
    );
    assert_eq!(wait_delta(&server, &token)["Status"], 1);
    let views: Vec<Value> = (0..5)
        .flat_map(|_| {
            [
                json!({"name": "product_view", "data": {"id": "P90001"}}),
                json!({"name": "product_view", "data": {"id": "P90002"}}),
            ]
        })
        .collect();
    server.serverside(json!({"events": views}));
    // Rankings refresh at most once a second.
    let usd = wait_for(
        "trending to include P90001",
        Duration::from_secs(240),
        || {
            let ids = zone_ids(
                &server.serverside(json!({"currency": "USD", "zones": ["HP-01"]})),
                "HP-01",
            );
            ids.contains(&"P90001".to_owned()).then_some(ids)
        },
    );
    assert!(!usd.contains(&"P90002".to_owned()));
    let resp = server.serverside(json!({"currency": "USD", "zones": ["HP-01"]}));
    assert!(
        resp.json()["zones"]["HP-01"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["CurrencySymbol"] == "$")
    );
    let gbp = zone_ids(&server.serverside(json!({"zones": ["HP-01"]})), "HP-01");
    assert!(
        gbp.contains(&"P90002".to_owned()) && !gbp.contains(&"P90001".to_owned()),
        "{gbp:?}"
    );
}

#[test]
fn serverside_400_lists_every_problem_with_its_path() {
    let server = Server::demo();
    let resp = server.post_json("/api/serverside", &json!({
        "appId": DEMO_KEY, "secretKey": DEMO_SECRET,
        "currentUrl": "not a url", "userAgent": 5, "ip": "300.1.1.1",
        "currency": "gbp", "visitorId": "x".repeat(129), "sessionId": "has space",
        "events": [
            {"name": "page_view", "data": {"page_type": "landing"}},
            {"name": "order", "data": {"orderid": "1", "items": [{"id": "A", "qty": "two", "unitprice": 1}], "dob": "01/02/1990"}},
            {"name": "teleport"},
            "not an object"
        ],
        "zones": [7]
    }));
    let errors = resp.assert_errors(400, "currentUrl: expected an absolute http or https URL");
    for expected in [
        "userAgent: expected a string, got a number",
        "ip: expected an IPv4 or IPv6 address, got \"300.1.1.1\"",
        "currency: expected a three-letter upper-case ISO 4217 code such as GBP, got \"gbp\"",
        "visitorId: must be at most 128 characters, got 129",
        "sessionId: must be printable ASCII without spaces",
        "events[0].data.page_type: unknown page type \"landing\"",
        "events[1].data.items[0].qty: expected a number",
        "events[1].data.userid: one of userid, email or accid is required",
        "events[1].data.dob: expected a date as YYYY-MM-DD, got \"01/02/1990\"",
        "events[2].name: unknown event \"teleport\"",
        "events[3]: expected an object, got a string",
        "zones[0]: expected a string, got a number",
    ] {
        assert!(
            errors
                .iter()
                .any(|e| e == expected || e.starts_with(expected)),
            "missing {expected:?} in {errors:#?}"
        );
    }
}

#[test]
fn serverside_400_records_nothing() {
    let server = Server::demo();
    let bad = server.serverside(json!({
        "visitorId": "v-atomic",
        "events": [
            {"name": "order", "data": {"orderid": "ATOMIC-1", "userid": "u", "items": [{"id": "P00001", "qty": 1, "unitprice": 1}]}},
            {"name": "product_view", "data": {}}
        ]
    }));
    bad.assert_errors(400, "events[1].data.id: required");
    // The order of the rejected request was not recorded: sending it now is not a duplicate.
    let ok = server.serverside(json!({"events": [
        {"name": "order", "data": {"orderid": "ATOMIC-1", "userid": "u", "items": [{"id": "P00001", "qty": 1, "unitprice": 1}]}}
    ]}));
    assert_eq!(ok.json()["errors"], json!([]));
}

#[test]
fn serverside_required_fields_are_each_reported() {
    let server = Server::demo();
    // `ip` may be absent (the vendor's plugins leave it out of back-office calls).
    for field in ["appId", "secretKey", "currentUrl", "userAgent"] {
        let mut body = serverside_body(json!({}));
        body.as_object_mut().unwrap().remove(field);
        server
            .post_json("/api/serverside", &body)
            .assert_errors(400, &format!("{field}: required"));
    }
    let missing_all = server.post("/api/serverside", "{}");
    let errors = missing_all.assert_errors(400, "appId: required");
    assert_eq!(errors.len(), 4, "{errors:?}");
}

#[test]
fn serverside_event_data_rules() {
    let server = Server::demo();
    let cases: Vec<(Value, &str)> = vec![
        (json!({"data": {}}), "events[0].name: required"),
        (json!({"name": 3}), "events[0].name: expected a string"),
        (
            json!({"name": "page_view"}),
            "events[0].data: required for page_view",
        ),
        (
            json!({"name": "page_view", "data": {}}),
            "events[0].data.page_type: required",
        ),
        (
            json!({"name": "page_view", "data": [1]}),
            "events[0].data: expected an object",
        ),
        (
            json!({"name": "product_view", "data": {}}),
            "events[0].data.id: required",
        ),
        (
            json!({"name": "product_view", "data": {"id": ""}}),
            "events[0].data.id: must not be empty",
        ),
        (
            json!({"name": "product_view", "data": {"id": "x".repeat(300)}}),
            "events[0].data.id: must be at most 256 bytes",
        ),
        (
            json!({"name": "product_rate", "data": {"id": "P1"}}),
            "events[0].data.rating: required",
        ),
        (
            json!({"name": "product_rate", "data": {"id": "P1", "rating": "five"}}),
            "events[0].data.rating: expected a number",
        ),
        (
            json!({"name": "product_rate", "data": {"rating": 5}}),
            "events[0].data.id: required",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{}]}}),
            "events[0].data.items[0].id: required",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{"id": "P1", "unitprice": 1}]}}),
            "events[0].data.items[0].qty: required",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{"id": "P1", "qty": 1}]}}),
            "events[0].data.items[0].unitprice: required",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{"id": "P1", "qty": 0, "unitprice": 1}]}}),
            "events[0].data.items[0].qty: must be greater than 0",
        ),
        (
            json!({"name": "set_basket", "data": {"items": [{"id": "P1", "qty": 1, "unitprice": -1}]}}),
            "events[0].data.items[0].unitprice: must not be negative",
        ),
        (
            json!({"name": "set_basket", "data": {"items": "P1"}}),
            "events[0].data.items: expected an array",
        ),
        (
            json!({"name": "order", "data": {"items": [], "userid": "u"}}),
            "events[0].data.orderid: required",
        ),
        (
            json!({"name": "order", "data": {"orderid": "o", "userid": "u"}}),
            "events[0].data.items: required",
        ),
        (
            json!({"name": "order", "data": {"orderid": "o", "items": [{"id": "P1", "qty": 1, "unitprice": 1}]}}),
            "events[0].data.userid: one of userid, email or accid is required",
        ),
        (
            json!({"name": "order", "data": {"orderid": "o", "email": "nope", "items": [{"id": "P1", "qty": 1, "unitprice": 1}]}}),
            "events[0].data.email: \"nope\" is not an email address",
        ),
        (
            json!({"name": "order", "data": {"orderid": "o", "accid": "a", "dob": "1990-13-01", "items": [{"id": "P1", "qty": 1, "unitprice": 1}]}}),
            "events[0].data.dob: expected a date as YYYY-MM-DD",
        ),
        (
            json!({"name": "customer_details", "data": {"firstname": "Ann"}}),
            "events[0].data.userid: one of userid, email or accid is required",
        ),
        (
            json!({"name": "customer_details"}),
            "events[0].data: required for customer_details",
        ),
    ];
    for (event, expected) in cases {
        let resp = server.serverside(json!({"events": [event.clone()]}));
        resp.assert_errors(400, expected);
    }
    // set_basket without data clears the basket; page_view with only page_type is enough.
    let ok = server.serverside(json!({"events": [{"name": "set_basket"}, {"name": "page_view", "data": {"page_type": "other"}},
        {"name": "customer_details", "data": {"accid": "trade-account-1"}}]}));
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[test]
fn serverside_limits_on_events_zones_and_size() {
    let server = configured();
    let body = |extra: Value| {
        let mut b = serverside_body(json!({"appId": "shop-eu", "secretKey": "shop-eu-secret"}));
        common::merge(&mut b, extra);
        b
    };
    let six = vec![json!({"name": "page_view", "data": {"page_type": "homepage"}}); 6];
    server
        .post_json("/api/serverside", &body(json!({"events": six})))
        .assert_errors(400, "events: at most 5 events per request, got 6");
    server
        .post_json(
            "/api/serverside",
            &body(json!({"zones": ["a", "b", "c", "d"]})),
        )
        .assert_errors(400, "zones: at most 3 zones per request, got 4");
    let big = body(json!({"userAgent": "x".repeat(20_000)})).to_string();
    server
        .post("/api/serverside", &big)
        .assert_errors(413, "larger than the limit of 16384 bytes");
    // Without Content-Length (chunked), the limit holds while streaming.
    let chunked = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    let resp = request(
        server.addr,
        "POST",
        "/api/serverside",
        chunked.as_bytes(),
        &[("Transfer-Encoding", "chunked")],
    );
    resp.assert_errors(413, "larger than the limit");
}

#[test]
fn serverside_rejects_bodies_that_are_not_json_objects() {
    let server = Server::demo();
    server
        .post("/api/serverside", "{nope")
        .assert_errors(400, "body: invalid JSON");
    server
        .post("/api/serverside", "")
        .assert_errors(400, "body: invalid JSON");
    server
        .post("/api/serverside", "[1,2]")
        .assert_errors(400, "body: expected an object, got an array");
}

/// Ids may be JSON numbers only as integer literals: a number with a fraction or an
/// exponent is a 400 naming the field, whatever value it stands for (`1e-400` is 0,
/// `1E+2` is 100), and nothing is recorded.
#[test]
fn ids_written_as_numbers_must_be_integer_literals() {
    let server = Server::demo();
    for (events, field) in [
        (
            r#"[{"name": "product_view", "data": {"id": 1E+2}}]"#,
            "events[0].data.id",
        ),
        (
            r#"[{"name": "customer_details", "data": {"userid": "u-1", "accid": 1e-400}}]"#,
            "events[0].data.accid",
        ),
        (
            r#"[{"name": "order", "data": {"orderid": 7.0, "userid": "u-1", "items": [{"id": "P00001", "qty": 1, "unitprice": 1}]}}]"#,
            "events[0].data.orderid",
        ),
    ] {
        let body = format!(
            r#"{{"appId": "{DEMO_KEY}", "secretKey": "{DEMO_SECRET}", "currentUrl": "https://shop.example/",
                "userAgent": "test", "ip": "198.51.100.1", "visitorId": "numbers", "events": {events}}}"#
        );
        let resp = server.post("/api/serverside", &body);
        resp.assert_errors(
            400,
            &format!("{field}: expected a string, or a number written as digits only"),
        );
    }
    // A plain integer is an id, as the plugins send them.
    let resp = server.serverside(json!({"visitorId": "numbers",
        "events": [{"name": "product_view", "data": {"id": 1}}]}));
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["errors"], json!([]));
    // The delta's account price as well.
    let resp = server.post(
        "/api/delta",
        &format!(
            r#"{{"AppKey": "{DEMO_KEY}", "SecretKey": "{DEMO_SECRET}",
                "AccountPrices": [{{"AccountId": 1e-400, "Id": "P00001", "Prices": ["1.00 GBP"]}}]}}"#
        ),
    );
    resp.assert_error(
        400,
        "AccountPrices[0].AccountId: expected a string, or a number written as digits only",
    );
}
