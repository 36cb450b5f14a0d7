//! Every kind of segment condition, true and false, through the real server: for each
//! condition a zone whose first campaign is for the segment and whose second is for
//! everyone, and two shoppers, one who meets it and one who does not; the segment's
//! size counts the shopper exactly when serving showed it the segment's campaign.
//! Segments that read the request (device, referrer, URL) sized and previewed as
//! serving judges them.

use serde_json::{Value, json};

use crate::campaigns::{manual, put_campaigns, put_segments, shown, store};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36";

/// Products the segment's campaign shows, and those of the campaign for everyone.
const IN: [&str; 3] = ["B3", "B2", "S5"];
const OUT: [&str; 2] = ["S1", "B1"];

/// A request of a shopper: its events and other members (a missing `sessionId` starts
/// a new session).
fn req(events: Value, extra: Value) -> (Value, Value) {
    (events, extra)
}

fn plain() -> (Value, Value) {
    req(json!([]), json!({}))
}

fn details(data: Value) -> (Value, Value) {
    req(
        json!([{"name": "customer_details", "data": data}]),
        json!({}),
    )
}

fn order(id: &str, total: f64, product: &str) -> (Value, Value) {
    req(
        json!([{"name": "order", "data": {"orderid": id, "ordertotal": total, "email": format!("{id}@example.com"),
            "items": [{"id": product, "qty": 1, "unitprice": total}]}}]),
        json!({}),
    )
}

fn views(products: &[&str]) -> (Value, Value) {
    let events: Vec<Value> = products
        .iter()
        .map(|p| json!({"name": "product_view", "data": {"id": p}}))
        .collect();
    req(Value::Array(events), json!({}))
}

fn basket(product: &str, qty: u32, price: f64) -> (Value, Value) {
    req(
        json!([{"name": "set_basket", "data": {"items": [{"id": product, "qty": qty, "unitprice": price}]}}]),
        json!({}),
    )
}

fn page(page_type: &str) -> (Value, Value) {
    let mut data = json!({"page_type": page_type});
    if page_type == "product_page" {
        data["product_id"] = json!("S1");
    }
    req(json!([{"name": "page_view", "data": data}]), json!({}))
}

fn pages(n: usize) -> (Value, Value) {
    let events: Vec<Value> = (0..n)
        .map(|_| json!({"name": "page_view", "data": {"page_type": "other"}}))
        .collect();
    req(Value::Array(events), json!({}))
}

fn with(extra: Value) -> (Value, Value) {
    req(json!([]), extra)
}

/// One condition: the rule, then a shopper's requests and whether the shopper meets it.
struct Case {
    rule: Value,
    requests: Vec<(Value, Value)>,
    meets: bool,
}

fn case(rule: Value, requests: Vec<(Value, Value)>, meets: bool) -> Case {
    Case {
        rule,
        requests,
        meets,
    }
}

fn cases() -> Vec<Case> {
    let (iphone, desktop) = (IPHONE, DESKTOP);
    vec![
        case(
            json!({"visitor": "returning"}),
            vec![plain(), plain()],
            true,
        ),
        case(json!({"visitor": "returning"}), vec![plain()], false),
        case(json!({"visitor": "new"}), vec![plain()], true),
        case(json!({"visitor": "new"}), vec![plain(), plain()], false),
        case(
            json!({"sessions": {"min": 2}}),
            vec![plain(), plain()],
            true,
        ),
        case(json!({"sessions": {"min": 2}}), vec![plain()], false),
        case(
            json!({"daysSinceFirstSeen": {"max": 0}}),
            vec![plain()],
            true,
        ),
        case(
            json!({"daysSinceFirstSeen": {"min": 1}}),
            vec![plain()],
            false,
        ),
        case(
            json!({"sessionPageViews": {"min": 2}}),
            vec![pages(2)],
            true,
        ),
        case(
            json!({"sessionPageViews": {"min": 2}}),
            vec![pages(1)],
            false,
        ),
        case(
            json!({"loggedIn": true}),
            vec![details(json!({"email": "a@example.com"}))],
            true,
        ),
        case(json!({"loggedIn": true}), vec![plain()], false),
        case(
            json!({"b2bAccount": ["acc-9"]}),
            vec![details(json!({"accid": "acc-9"}))],
            true,
        ),
        case(
            json!({"b2bAccount": ["acc-9"]}),
            vec![details(json!({"accid": "acc-1"}))],
            false,
        ),
        case(
            json!({"userGroup": ["vip"]}),
            vec![details(json!({"userid": "u-gold"}))],
            true,
        ),
        case(
            json!({"userGroup": ["vip"]}),
            vec![details(json!({"userid": "u-x", "group_id": "vip"}))],
            true,
        ),
        case(
            json!({"userGroup": ["vip"]}),
            vec![details(json!({"userid": "u-gb"}))],
            false,
        ),
        case(
            json!({"userField": {"field": "Country", "in": ["gb"]}}),
            vec![details(json!({"userid": "u-gb"}))],
            true,
        ),
        case(
            json!({"userField": {"field": "Country", "in": ["gb"]}}),
            vec![details(json!({"userid": "u-fr"}))],
            false,
        ),
        case(
            json!({"age": {"min": 30}}),
            vec![details(json!({"userid": "u-gb"}))],
            true,
        ),
        case(
            json!({"age": {"min": 30}}),
            vec![details(json!({"userid": "u-fr"}))],
            false,
        ),
        case(
            json!({"orders": {"min": 1}}),
            vec![order("o-orders", 20.0, "S4")],
            true,
        ),
        case(json!({"orders": {"min": 1}}), vec![plain()], false),
        case(
            json!({"revenue": {"min": 50}}),
            vec![order("o-rev1", 60.0, "S4")],
            true,
        ),
        case(
            json!({"revenue": {"min": 50}}),
            vec![order("o-rev2", 20.0, "S4")],
            false,
        ),
        case(
            json!({"revenue": {"min": 50, "days": 30}}),
            vec![order("o-rev3", 60.0, "S4")],
            true,
        ),
        case(
            json!({"revenue": {"min": 50, "days": 30}}),
            vec![plain()],
            false,
        ),
        case(
            json!({"daysSinceLastOrder": {"max": 0}}),
            vec![order("o-last", 20.0, "S4")],
            true,
        ),
        case(
            json!({"daysSinceLastOrder": {"max": 0}}),
            vec![plain()],
            false,
        ),
        case(
            json!({"boughtCategory": ["bags"]}),
            vec![order("o-cat1", 80.0, "B3")],
            true,
        ),
        case(
            json!({"boughtCategory": ["bags"]}),
            vec![order("o-cat2", 50.0, "S4")],
            false,
        ),
        case(
            json!({"boughtBrand": ["zenith"]}),
            vec![order("o-brand1", 60.0, "B2")],
            true,
        ),
        case(
            json!({"boughtBrand": ["zenith"]}),
            vec![order("o-brand2", 50.0, "S4")],
            false,
        ),
        case(
            json!({"categoryAffinity": {"category": "shoes", "minViews": 2}}),
            vec![views(&["S2", "S4"])],
            true,
        ),
        case(
            json!({"categoryAffinity": {"category": "shoes", "minViews": 2}}),
            vec![views(&["S2"])],
            false,
        ),
        case(
            json!({"brandAffinity": {"brand": "zenith"}}),
            vec![views(&["S3"])],
            true,
        ),
        case(
            json!({"brandAffinity": {"brand": "zenith"}}),
            vec![views(&["S4"])],
            false,
        ),
        case(
            json!({"basketValue": {"min": 100}}),
            vec![basket("B3", 2, 80.0)],
            true,
        ),
        case(
            json!({"basketValue": {"min": 100}}),
            vec![basket("B1", 1, 4.5)],
            false,
        ),
        case(
            json!({"basketCategory": ["bags"]}),
            vec![basket("B1", 1, 4.5)],
            true,
        ),
        case(
            json!({"basketCategory": ["bags"]}),
            vec![basket("S4", 1, 50.0)],
            false,
        ),
        case(
            json!({"pageType": ["product_page"]}),
            vec![page("product_page")],
            true,
        ),
        case(
            json!({"pageType": ["product_page"]}),
            vec![page("homepage")],
            false,
        ),
        case(
            json!({"device": ["mobile"]}),
            vec![with(json!({"userAgent": iphone}))],
            true,
        ),
        case(
            json!({"device": ["mobile"]}),
            vec![with(json!({"userAgent": desktop}))],
            false,
        ),
        case(
            json!({"referrerHost": ["google.com"]}),
            vec![with(
                json!({"referer": "https://www.google.com/search?q=bags"}),
            )],
            true,
        ),
        case(
            json!({"referrerHost": ["google.com"]}),
            vec![with(json!({"referer": "https://notgoogle.com/"}))],
            false,
        ),
        case(
            json!({"utm": {"parameter": "source", "in": ["newsletter"]}}),
            vec![with(
                json!({"currentUrl": "https://shop.example/?utm_source=Newsletter"}),
            )],
            true,
        ),
        case(
            json!({"utm": {"parameter": "source", "in": ["newsletter"]}}),
            vec![with(
                json!({"currentUrl": "https://shop.example/?utm_medium=newsletter"}),
            )],
            false,
        ),
        case(
            json!({"currency": ["USD"]}),
            vec![with(json!({"currency": "USD"}))],
            true,
        ),
        case(
            json!({"currency": ["USD"]}),
            vec![with(json!({"currency": "GBP"}))],
            false,
        ),
        case(
            json!({"all": [{"loggedIn": true}, {"currency": ["GBP"]}]}),
            vec![details(json!({"email": "b@example.com"}))],
            true,
        ),
        case(
            json!({"all": [{"loggedIn": true}, {"currency": ["GBP"]}]}),
            vec![plain()],
            false,
        ),
        case(
            json!({"any": [{"currency": ["USD"]}, {"loggedIn": true}]}),
            vec![details(json!({"email": "c@example.com"}))],
            true,
        ),
        case(
            json!({"any": [{"currency": ["USD"]}, {"loggedIn": true}]}),
            vec![plain()],
            false,
        ),
        case(json!({"not": {"loggedIn": true}}), vec![plain()], true),
        case(
            json!({"not": {"loggedIn": true}}),
            vec![details(json!({"email": "d@example.com"}))],
            false,
        ),
    ]
}

#[test]
fn every_condition_kind_is_met_and_missed() {
    let users = vec![
        json!({"UserId": "u-gb", "Country": "GB", "DOB": "1980-01-01"}),
        json!({"UserId": "u-fr", "Country": "FR", "DOB": "2010-06-01"}),
        json!({"UserId": "u-gold", "GroupId": "vip"}),
    ];
    let server = store(users);
    let zone = json!([
        manual("segment", Some("s"), &IN),
        manual("everyone", None, &OUT)
    ]);
    let mut kinds = std::collections::BTreeSet::new();
    for (n, case) in cases().into_iter().enumerate() {
        let resp = put_segments(&server, json!([{"id": "s", "rule": case.rule}]));
        assert_eq!(resp.status, 200, "{}: {}", case.rule, resp.body);
        put_campaigns(&server, "HP-01", zone.clone());
        let visitor = format!("shopper-{n}");
        let before = draft_size(&server, &case.rule);
        let (last, earlier) = case.requests.split_last().unwrap();
        for (events, extra) in earlier {
            shown(&server, &visitor, "HP-01", events.clone(), extra.clone());
        }
        let ids = shown(&server, &visitor, "HP-01", last.0.clone(), last.1.clone());
        let expected: &[&str] = if case.meets { &IN } else { &OUT };
        assert!(
            !ids.is_empty() && ids.iter().all(|id| expected.contains(&id.as_str())),
            "{} for a shopper who {} it: {ids:?}",
            case.rule,
            if case.meets { "meets" } else { "misses" }
        );
        // The segment's size counts the shopper as serving judged its latest request.
        assert_eq!(
            draft_size(&server, &case.rule) - before,
            i64::from(case.meets),
            "the size of {} after a shopper who {} it",
            case.rule,
            if case.meets { "meets" } else { "misses" }
        );
        if let Some(kind) = case.rule.as_object().and_then(|o| o.keys().next().cloned()) {
            kinds.insert((kind, case.meets));
        }
    }
    // Every kind the document has, each both ways.
    for kind in vitrine_ingest::campaigns::KINDS {
        for meets in [true, false] {
            assert!(
                kinds.contains(&(kind.to_owned(), meets)),
                "{kind} {meets} is tested"
            );
        }
    }
}

/// The visitors in memory a draft rule matches now.
fn draft_size(server: &crate::common::Server, rule: &Value) -> i64 {
    let resp = crate::campaigns::admin(
        server,
        "POST",
        "/segments/size",
        crate::campaigns::VIEWER,
        Some(&json!({"rule": rule})),
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["matching"].as_i64().unwrap()
}

#[test]
fn a_segments_size_counts_the_visitors_in_memory() {
    let server = store(Vec::new());
    for n in 0..3 {
        shown(
            &server,
            &format!("buyer-{n}"),
            "HP-01",
            order(&format!("o-size-{n}"), 30.0, "S4").0,
            json!({}),
        );
    }
    shown(&server, "browser", "HP-01", json!([]), json!({}));
    let resp = put_segments(
        &server,
        json!([{"id": "buyers", "rule": {"orders": {"min": 1}}}]),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let size = crate::campaigns::admin(
        &server,
        "GET",
        "/segments/buyers/size",
        crate::campaigns::VIEWER,
        None,
        &[],
    );
    assert_eq!(size.status, 200, "{}", size.body);
    assert_eq!(size.json()["matching"], 3, "{}", size.body);
    assert_eq!(size.json()["activeLast24h"], 3, "{}", size.body);
    assert_eq!(size.json()["visitors"], 4, "{}", size.body);
    let draft = crate::campaigns::admin(
        &server,
        "POST",
        "/segments/size",
        crate::campaigns::VIEWER,
        Some(&json!({"rule": {"not": {"orders": {"min": 1}}}})),
        &[],
    );
    assert_eq!(draft.status, 200, "{}", draft.body);
    assert_eq!(draft.json()["matching"], 1, "{}", draft.body);
}

#[test]
fn a_request_dependent_audience_is_sized_previewed_and_explained_as_served() {
    let server = store(Vec::new());
    let agent = |ua: &str| json!({"userAgent": ua});
    // Six returning phone shoppers, two returning desktop shoppers, three new phone
    // shoppers (a request without `sessionId` starts a session).
    for n in 0..6 {
        let id = format!("phone-{n}");
        shown(&server, &id, "HP-01", json!([]), agent(DESKTOP));
        shown(&server, &id, "HP-01", json!([]), agent(IPHONE));
    }
    for n in 0..2 {
        let id = format!("desk-{n}");
        shown(&server, &id, "HP-01", json!([]), agent(DESKTOP));
        shown(&server, &id, "HP-01", json!([]), agent(DESKTOP));
    }
    for n in 0..3 {
        shown(
            &server,
            &format!("new-{n}"),
            "HP-01",
            json!([]),
            agent(IPHONE),
        );
    }
    let rule = json!({"all": [{"visitor": "returning"}, {"device": ["mobile"]}]});
    assert_eq!(draft_size(&server, &rule), 6);
    let from_ads = json!({"utm": {"parameter": "source", "in": ["newsletter"]}});
    assert_eq!(draft_size(&server, &from_ads), 0);
    shown(
        &server,
        "desk-0",
        "HP-01",
        json!([]),
        json!({"userAgent": DESKTOP, "currentUrl": "https://shop.example/?utm_source=newsletter"}),
    );
    assert_eq!(draft_size(&server, &from_ads), 1);

    let resp = put_segments(&server, json!([{"id": "phones", "rule": rule}]));
    assert_eq!(resp.status, 200, "{}", resp.body);
    put_campaigns(
        &server,
        "HP-01",
        json!([
            manual("phones", Some("phones"), &IN),
            manual("everyone", None, &OUT)
        ]),
    );
    let preview = |body: Value| {
        crate::campaigns::admin(
            &server,
            "POST",
            "/zones/HP-01/preview",
            crate::campaigns::VIEWER,
            Some(&body),
            &[],
        )
    };
    let shown_in = |resp: &crate::common::Resp| -> (String, Value) {
        assert_eq!(resp.status, 200, "{}", resp.body);
        let answer = resp.json();
        (
            answer["campaigns"]["shown"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
            answer["request"].clone(),
        )
    };
    // A made-up returning shopper on a phone sees the campaign; on a desktop, not.
    let (campaign, request) = shown_in(&preview(
        json!({"shopper": {"returning": true}, "device": "mobile"}),
    ));
    assert_eq!(campaign, "phones");
    assert_eq!(request["device"], "mobile");
    let (campaign, _) = shown_in(&preview(
        json!({"shopper": {"returning": true}, "userAgent": DESKTOP}),
    ));
    assert_eq!(campaign, "everyone");
    // A visitor of the account is previewed as its latest request, unless told.
    let (campaign, request) = shown_in(&preview(json!({"shopper": {"visitor": "phone-0"}})));
    assert_eq!(
        (campaign.as_str(), &request["device"]),
        ("phones", &json!("mobile"))
    );
    let (campaign, _) = shown_in(&preview(
        json!({"shopper": {"visitor": "phone-0"}, "device": "desktop"}),
    ));
    assert_eq!(campaign, "everyone");
    let (_, request) = shown_in(&preview(json!({
        "shopper": {"visitor": "desk-1"}, "device": "tablet",
        "referrer": "https://www.Google.com/search", "url": "https://shop.example/?utm_source=ads&utm_medium=cpc",
    })));
    assert_eq!(
        request,
        json!({"device": "tablet", "referrerHost": "www.google.com", "utm": {"source": "ads", "medium": "cpc"}})
    );
    // Explain takes the same request, and the page's category.
    let explain = |query: &str| {
        crate::campaigns::admin(
            &server,
            "GET",
            &format!("/explain?zone=HP-01&{query}"),
            crate::campaigns::VIEWER,
            None,
            &[],
        )
    };
    let (campaign, _) = shown_in(&explain("visitor=desk-1&category=shoes"));
    assert_eq!(campaign, "everyone");
    let (campaign, _) = shown_in(&explain("visitor=desk-1&device=mobile&category=shoes"));
    assert_eq!(campaign, "phones");
    // Bad values are named, and change nothing.
    let bad = explain("visitor=desk-1&device=phone");
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(
        bad.json()["error"],
        "device: expected one of mobile, tablet, desktop, got \"phone\""
    );
    let bad = preview(json!({"referrer": "not a url", "url": 3}));
    assert_eq!(bad.status, 400, "{}", bad.body);
    let errors = bad.json()["errors"].to_string();
    assert!(
        errors.contains("referrer") && errors.contains("absolute URL"),
        "{errors}"
    );
    assert!(
        errors.contains("url") && errors.contains("expected a string"),
        "{errors}"
    );
    assert_eq!(draft_size(&server, &rule), 6);
}
