//! What the merchandiser's console reads beside the campaign endpoints, with the real
//! server: the catalogue search its pickers use (best matches first, every bad
//! parameter named, a viewer may search), and the preview of a zone with a draft list
//! for made-up shoppers (the campaign shown, why the others were skipped, the browser
//! script's cards), which publishes nothing.

use serde_json::{Value, json};

use crate::campaigns::{EDITOR, VIEWER, admin, store};
use crate::common::Resp;

fn found(server: &crate::common::Server, query: &str, token: &str) -> Value {
    let resp = admin(
        server,
        "GET",
        &format!("/catalogue?{query}"),
        token,
        None,
        &[],
    );
    assert_eq!(resp.status, 200, "{query}: {}", resp.body);
    resp.json()
}

fn ids(answer: &Value) -> Vec<&str> {
    answer["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect()
}

#[test]
fn the_catalogue_search_finds_products_categories_and_brands_best_first() {
    let server = store(Vec::new());
    // An id, case aside, is the best match; ids that begin with the text come next.
    let s2 = found(&server, "q=s2", EDITOR);
    assert_eq!(ids(&s2), ["S2"], "{s2}");
    assert_eq!(s2["total"], 1);
    let shoes = found(&server, "q=S&limit=3", VIEWER);
    assert_eq!(ids(&shoes), ["S1", "S2", "S3"], "{shoes}");
    assert_eq!(
        shoes["total"], 5,
        "every product whose id begins with S: {shoes}"
    );
    let first = &shoes["found"][0];
    assert_eq!(first["title"], "Product S1", "{shoes}");
    // Categories and brands, by the ids products name.
    let bags = found(&server, "q=ba&kind=categories", EDITOR);
    assert_eq!(ids(&bags), ["bags"], "{bags}");
    assert_eq!(bags["kind"], "categories");
    let brands = found(&server, "q=zen&kind=brands", EDITOR);
    assert_eq!(ids(&brands), ["zenith"], "{brands}");
    assert_eq!(found(&server, "q=nothing-like-it", EDITOR)["total"], 0);

    // Every bad parameter is named.
    for (query, named) in [
        ("", "q: required"),
        ("q=%20", "q: required"),
        (
            "q=a&kind=shoes",
            "kind: expected one of products, categories, brands",
        ),
        ("q=a&limit=0", "limit: expected 1 to 100"),
        ("q=a&limit=101", "limit: expected 1 to 100"),
        ("q=a&limit=x", "limit: expected 1 to 100"),
        ("q=a&page=2", "page: unknown query parameter"),
        ("q=a&q=b", "q: given twice"),
    ] {
        let resp = admin(
            &server,
            "GET",
            &format!("/catalogue?{query}"),
            EDITOR,
            None,
            &[],
        );
        assert_eq!(resp.status, 400, "{query}: {}", resp.body);
        assert!(resp.body.contains(named), "{query}: {}", resp.body);
    }
    let long = "x".repeat(201);
    let resp = admin(
        &server,
        "GET",
        &format!("/catalogue?q={long}"),
        EDITOR,
        None,
        &[],
    );
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(
        resp.body.contains("q: at most 200 characters"),
        "{}",
        resp.body
    );
}

fn preview(server: &crate::common::Server, zone: &str, body: &Value, token: &str) -> Resp {
    admin(
        server,
        "POST",
        &format!("/zones/{zone}/preview"),
        token,
        Some(body),
        &[],
    )
}

#[test]
fn a_draft_list_is_previewed_for_made_up_shoppers_and_nothing_changes() {
    let server = store(Vec::new());
    let draft = json!({
        "segments": [{"id": "returning", "rule": {"visitor": "returning"}}],
        "campaigns": [
            {"id": "welcome-back", "segment": "returning",
             "content": {"type": "custom", "source": {"manual": {"products": ["S2", "S3"]}},
                         "pins": [{"product": "B3", "place": 1}]}},
            {"id": "everyone", "content": {"type": "custom",
             "source": {"manual": {"categories": ["bags"]}},
             "filters": [{"price": {"max": 70}}]}},
        ],
    });
    let as_shopper = |returning: bool| {
        let mut body = draft.clone();
        body["shopper"] = json!({"returning": returning});
        body["pageType"] = json!("homepage");
        let resp = preview(&server, "HP-01", &body, VIEWER);
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    };
    // A returning shopper is in the draft segment: the first campaign, its pin first.
    let returning = as_shopper(true);
    assert_eq!(returning["draft"], true, "{returning}");
    assert_eq!(returning["madeUp"], true, "{returning}");
    assert_eq!(
        returning["campaigns"]["shown"], "welcome-back",
        "{returning}"
    );
    let items: Vec<&str> = returning["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(items, ["B3", "S2", "S3"], "{returning}");
    assert_eq!(
        returning["items"][0]["placedBy"]["kind"], "pin",
        "{returning}"
    );
    // The cards are the browser script's: one per item, in order.
    let html = returning["html"].as_str().unwrap();
    assert!(
        html.starts_with("<div class=\"vitrine-zone\" data-vitrine-zone=\"HP-01\">"),
        "{html}"
    );
    let cards: Vec<&str> = html
        .split("data-pc-item=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert_eq!(cards, ["B3", "S2", "S3"], "{html}");
    // A new shopper is not: the first campaign is skipped, with why, and the second
    // shows the bags under 70.
    let new = as_shopper(false);
    assert_eq!(new["campaigns"]["shown"], "everyone", "{new}");
    assert_eq!(
        new["campaigns"]["list"][0]["skipped"], "the shopper is not in its segment",
        "{new}"
    );
    let mut bags: Vec<&str> = new["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    bags.sort_unstable();
    assert_eq!(bags, ["B1", "B2"], "{new}");

    // Nothing was published: the zone is still filled as configured, and there are no
    // segments.
    let live = admin(&server, "GET", "/zones/HP-01/campaigns", EDITOR, None, &[]);
    assert_eq!(live.json()["source"], "configuration", "{}", live.body);
    let segments = admin(&server, "GET", "/segments", EDITOR, None, &[]);
    assert_eq!(segments.json()["segments"], json!([]), "{}", segments.body);
    // Without a draft, the live zone (no campaigns) for a visitor.
    let live = preview(
        &server,
        "HP-01",
        &json!({"shopper": {"visitor": "nobody-yet"}}),
        EDITOR,
    );
    assert_eq!(live.status, 200, "{}", live.body);
    let live = live.json();
    assert_eq!(
        (live["draft"].clone(), live["campaigns"].clone()),
        (json!(false), Value::Null),
        "{live}"
    );
    assert_eq!(live["strategy"], "trending", "{live}");
}

#[test]
fn a_preview_names_every_problem_of_its_body() {
    let server = store(Vec::new());
    let resp = preview(
        &server,
        "HP-01",
        &json!({
            "colour": "red",
            "pageType": "landing",
            "currency": "XYZ",
            "at": "tomorrow",
            "shopper": {"visitor": "v", "returning": true},
            "campaigns": [{"id": "x", "content": {"type": "custom",
                "source": {"manual": {"products": ["S1"]}}, "filters": [{"price": {"min": "cheap"}}]}}],
        }),
        EDITOR,
    );
    assert_eq!(resp.status, 400, "{}", resp.body);
    let body = resp.json();
    let paths: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for path in [
        "colour",
        "pageType",
        "currency",
        "at",
        "shopper",
        "campaigns[0].content.filters[0].price.min",
    ] {
        assert!(paths.contains(&path), "{path} not named: {body}");
    }
    let resp = preview(&server, "NOPE", &json!({}), EDITOR);
    assert_eq!(resp.status, 404, "{}", resp.body);
    let resp = preview(&server, "HP-01", &json!([1]), EDITOR);
    assert_eq!(resp.status, 400, "{}", resp.body);
    // A preview is a read: a GET is the wrong method.
    let resp = admin(&server, "GET", "/zones/HP-01/preview", EDITOR, None, &[]);
    assert_ne!(resp.status, 200, "{}", resp.body);
}

#[test]
fn the_visitors_seen_last_are_listed_to_preview_as() {
    let server = store(Vec::new());
    for (visitor, events) in [
        ("visitor-1", json!([])),
        (
            "visitor-2",
            json!([{"name": "product_view", "data": {"id": "S1"}}]),
        ),
        (
            "visitor-3",
            json!([{"name": "product_view", "data": {"id": "S2"}},
                             {"name": "product_view", "data": {"id": "S3"}}]),
        ),
    ] {
        crate::campaigns::shown(&server, visitor, "HP-01", events, json!({}));
    }
    let resp = admin(
        &server,
        "GET",
        "/visitors/recent?limit=2",
        VIEWER,
        None,
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let body = resp.json();
    let listed: Vec<(&str, u64)> = body["visitors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["visitorId"].as_str().unwrap(),
                v["viewed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed, [("visitor-3", 2), ("visitor-2", 1)], "{body}");
    assert_eq!(body["visitors"][0]["sessions"], 1, "{body}");
    // Shown as one of them: their history is read.
    let resp = preview(
        &server,
        "HP-01",
        &json!({"shopper": {"visitor": "visitor-3"}}),
        VIEWER,
    );
    let shown = resp.json();
    assert_eq!(shown["visitorKnown"], true, "{shown}");
    assert_eq!(
        shown["history"]["recentViews"],
        json!(["S3", "S2"]),
        "{shown}"
    );
    for bad in ["limit=0", "limit=201", "limit=few", "since=1"] {
        let resp = admin(
            &server,
            "GET",
            &format!("/visitors/recent?{bad}"),
            EDITOR,
            None,
            &[],
        );
        assert_eq!(resp.status, 400, "{bad}: {}", resp.body);
    }
}

#[test]
fn a_shadow_test_counts_a_draft_that_holds_the_next_product_as_the_winner() {
    let server = store(Vec::new());
    // The live list never shows what the planted shoppers view; the draft shows S2
    // and S3.
    crate::campaigns::put_campaigns(
        &server,
        "HP-01",
        json!([crate::campaigns::manual("live", None, &["B1"])]),
    );
    let draft = json!({"campaigns": [crate::campaigns::manual("draft", None, &["S2", "S3"])]});
    let resp = admin(
        &server,
        "POST",
        "/zones/HP-01/shadow",
        VIEWER,
        Some(&draft),
        &[],
    );
    assert_eq!(
        resp.status, 403,
        "a viewer may not start one: {}",
        resp.body
    );
    let resp = admin(
        &server,
        "POST",
        "/zones/HP-01/shadow",
        EDITOR,
        Some(&draft),
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["trials"], 0, "{}", resp.body);
    assert_eq!(resp.json()["campaigns"], json!(["draft"]), "{}", resp.body);
    // Three sampled shoppers each view S1, then S2: two trials each. S1 is in
    // neither list; S2 is first in the draft's.
    let sampled: Vec<String> = (0..)
        .map(|n| format!("planted-{n}"))
        .filter(|v| vitrine_engine::prequential::sampled(v))
        .take(3)
        .collect();
    for visitor in &sampled {
        for product in ["S1", "S2"] {
            let shown = crate::campaigns::shown(
                &server,
                visitor,
                "HP-01",
                json!([{"name": "product_view", "data": {"id": product}}]),
                json!({}),
            );
            // Shoppers still see the live list.
            assert_eq!(shown, ["B1"], "{visitor} {product}");
        }
    }
    let resp = admin(&server, "GET", "/zones/HP-01/shadow", VIEWER, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let figures = resp.json();
    assert_eq!(figures["trials"], 6, "{figures}");
    assert_eq!(figures["live"]["hits"], 0, "{figures}");
    assert_eq!(figures["draft"]["hits"], 3, "{figures}");
    assert_eq!(figures["draft"]["mrr"], 0.5, "{figures}");
    let hit_rate = &figures["difference"]["hitRate"];
    assert_eq!(hit_rate["estimate"], 0.5, "{figures}");
    // Six differences, three of 0 and three of 1: standard deviation sqrt(0.3), and
    // Student's t with 5 degrees of freedom (2.5706): 0.5 ± 0.5748, cut at 1.
    let (low, high) = (
        hit_rate["low"].as_f64().unwrap(),
        hit_rate["high"].as_f64().unwrap(),
    );
    assert!(
        (low + 0.0748).abs() < 1e-3 && (high - 1.0).abs() < 1e-12,
        "{figures}"
    );
    // Stopped, it is gone; nothing was published.
    let resp = admin(&server, "DELETE", "/zones/HP-01/shadow", EDITOR, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let resp = admin(&server, "GET", "/zones/HP-01/shadow", EDITOR, None, &[]);
    assert_eq!(resp.status, 404, "{}", resp.body);
    let live = admin(&server, "GET", "/zones/HP-01/campaigns", EDITOR, None, &[]);
    assert_eq!(live.json()["campaigns"][0]["id"], "live", "{}", live.body);
    // A draft is required, and read as a PUT reads it.
    for (body, path) in [
        (json!({}), "campaigns"),
        (json!({"campaigns": [{"id": "x"}]}), "campaigns[0].content"),
        (json!({"campaigns": [], "colour": 1}), "colour"),
    ] {
        let resp = admin(
            &server,
            "POST",
            "/zones/HP-01/shadow",
            EDITOR,
            Some(&body),
            &[],
        );
        assert_eq!(resp.status, 400, "{body}: {}", resp.body);
        assert!(
            resp.body.contains(&format!("\"path\":\"{path}")),
            "{body}: {}",
            resp.body
        );
    }
}
