//! Sessions, clicks and request bodies.

use super::shopper::session_id;
use super::*;
use serde_json::Value;

fn mix() -> Mix {
    Mix {
        visitors: 1000,
        browse_min: 3,
        browse_max: 8,
        related: 0.4,
        basket: 0.5,
        order: 0.5,
        details: 0.3,
        second_currency: 0.2,
        b2b: 0.3,
        zipf: 1.0,
    }
}

fn shelf() -> Shelf {
    Shelf::new(
        (0..500).map(|i| format!("P{i:05}")).collect(),
        (0..20).map(|c| format!("c{c}")).collect(),
        1.0,
    )
    .unwrap()
}

#[test]
fn clicking_shoppers_view_what_the_preferred_zone_showed() {
    let shelf = shelf();
    let credentials = Credentials::new("k", "s");
    let zones = ZoneMap::default();
    let mix = Mix {
        basket: 1.0,
        order: 1.0,
        ..mix()
    };
    // Every product view goes to a product PP-01 (viewed_together) showed.
    let clicks = Clicks::new("viewed_together=1", &[], &shelf).unwrap();
    assert!(Clicks::new("nope=1", &[], &shelf).is_err());
    assert!(Clicks::new("trending=2", &[], &shelf).is_err());
    let answer = br#"{"visitorId":"v","sessionId":"s","errors":[],"zones":{"PP-01":{"items":[{"Id":"P00400"},{"Id":"P00401"}]},"PP-02":{"items":[{"Id":"P00007"}]}}}"#;
    let mut shopper = Shopper::new(3, 1, 0);
    let mut viewed = Vec::new();
    let mut basket = None;
    for _ in 0..40 {
        let body = shopper.next_request(&shelf, &mix, &zones, &credentials, Some(&clicks));
        let request: Value = serde_json::from_slice(&body).unwrap();
        for event in request["events"].as_array().unwrap() {
            match event["name"].as_str().unwrap() {
                "product_view" => viewed.push(event["data"]["id"].as_str().unwrap().to_owned()),
                "set_basket" if basket.is_none() => basket = Some(event["data"]["items"].clone()),
                _ => {}
            }
        }
        shopper.observe(answer, Some(&clicks));
    }
    // The first view of a session follows a landing page's answer: all clicks.
    assert!(!viewed.is_empty());
    assert!(
        viewed.iter().all(|id| id == "P00400" || id == "P00401"),
        "{viewed:?}"
    );
    // The basket holds products the session viewed.
    let basket = basket.unwrap();
    for line in basket.as_array().unwrap() {
        assert!(
            viewed.contains(&line["id"].as_str().unwrap().to_owned()),
            "{basket}"
        );
    }
}

#[test]
fn sessions_land_browse_3_to_8_products_and_order_with_unique_ids() {
    let (shelf, mix, zones) = (shelf(), mix(), ZoneMap::default());
    let credentials = Credentials::new("key", "secret \"quoted\"");
    let mut shopper = Shopper::new(1, 99, 3);
    let mut order_ids = std::collections::HashSet::new();
    let mut sessions = 0;
    let mut views_in_session = 0;
    let mut kinds = std::collections::HashSet::new();
    for _ in 0..5000 {
        let new_session = shopper.plan.is_empty();
        let body = shopper.next_request(&shelf, &mix, &zones, &credentials, None);
        let request: Value = serde_json::from_slice(&body).expect("valid JSON");
        assert_eq!(request["secretKey"], "secret \"quoted\"");
        let events = request["events"].as_array().unwrap();
        let page_type = events[0]["data"]["page_type"].as_str().unwrap();
        if new_session {
            if sessions > 0 {
                assert!((3..=8).contains(&views_in_session), "{views_in_session}");
            }
            sessions += 1;
            views_in_session = 0;
            assert!(["homepage", "category_listing_page", "search_results"].contains(&page_type));
            assert!(request.get("sessionId").is_none());
            shopper.observe(br#"{"visitorId":"x","sessionId":"s-1","errors":[]}"#, None);
        } else {
            assert_eq!(request["sessionId"], "s-1");
        }
        let zones_asked: Vec<&str> = request["zones"]
            .as_array()
            .unwrap()
            .iter()
            .map(|z| z.as_str().unwrap())
            .collect();
        for event in events {
            kinds.insert(event["name"].as_str().unwrap().to_owned());
        }
        match page_type {
            "product_page" => {
                views_in_session += 1;
                assert_eq!(events[1]["name"], "product_view");
                assert_eq!(events[0]["data"]["product_id"], events[1]["data"]["id"]);
                assert_eq!(zones_asked, ["PP-01", "PP-02"]);
            }
            "order_complete_page" => {
                let order = &events[1]["data"];
                assert!(order_ids.insert(order["orderid"].as_str().unwrap().to_owned()));
                assert!(order["email"].is_string() && order["userid"].is_string());
                assert_eq!(zones_asked, ["OC-01"]);
            }
            "basket_page" => assert_eq!(events[1]["name"], "set_basket"),
            _ => {}
        }
    }
    assert!(sessions > 300, "{sessions}");
    assert!(order_ids.len() > 50, "{}", order_ids.len());
    for kind in [
        "page_view",
        "product_view",
        "set_basket",
        "order",
        "customer_details",
    ] {
        assert!(kinds.contains(kind), "{kind} never sent");
    }
}

#[test]
fn popularity_is_skewed_towards_the_first_products() {
    let shelf = shelf();
    let mut rng = SmallRng::seed_from_u64(5);
    let draws: Vec<usize> = (0..20_000).map(|_| shelf.popular(&mut rng)).collect();
    let top10 = draws.iter().filter(|&&p| p < 10).count();
    let last10 = draws.iter().filter(|&&p| p >= 490).count();
    assert!(top10 > 20 * last10.max(1), "{top10} vs {last10}");
    assert!(draws.iter().all(|&p| p < 500));
}

#[test]
fn zone_map_overrides_named_page_types_and_rejects_unknown_ones() {
    let map = ZoneMap::parse(Some("product_page=A+B;homepage=H")).unwrap();
    assert_eq!(map.product_page, ["A", "B"]);
    assert_eq!(map.homepage, ["H"]);
    assert_eq!(map.basket_page, ["BP-01"]);
    let error = ZoneMap::parse(Some("landing=X")).unwrap_err().to_string();
    assert!(error.contains("unknown page type \"landing\""), "{error}");
}

#[test]
fn session_ids_are_read_from_the_answer_head_only_when_plain() {
    assert_eq!(
        session_id(br#"{"visitorId":"v","sessionId":"abc_-9","errors":[]}"#),
        Some("abc_-9")
    );
    assert_eq!(session_id(br#"{"sessionId":"a\"b"}"#), None);
    assert_eq!(session_id(br#"{"errors":["x"]}"#), None);
}
