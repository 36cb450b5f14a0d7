//! What campaigns show, through the real server: filters that leave exactly the eligible
//! products (applied while the zone is filled, so never a short zone), pins at their
//! places, boosts and buries that reorder, image and html content, and explain naming
//! the rule that placed each item.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::campaigns::{EDITOR, admin, put_campaigns, shown, store};

const EVERYTHING: [&str; 8] = ["S1", "S2", "S3", "S4", "S5", "B1", "B2", "B3"];

fn custom(source: Value, filters: Value, extra: Value) -> Value {
    let mut content =
        json!({"type": "custom", "source": source, "filters": filters, "maxItems": 8});
    crate::common::merge(&mut content, extra);
    json!([{"id": "c", "minItems": 0, "content": content}])
}

fn all_products() -> Value {
    json!({"manual": {"categories": ["shoes", "bags"]}})
}

fn set(ids: &[String]) -> BTreeSet<String> {
    ids.iter().cloned().collect()
}

fn expected(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

fn product_page(product: &str) -> Value {
    json!([{"name": "page_view", "data": {"page_type": "product_page", "product_id": product}}])
}

#[test]
fn filters_leave_exactly_the_eligible_products() {
    let server = store(Vec::new());
    let home = json!([]);
    let cases: Vec<(Value, Value, Vec<&str>)> = vec![
        (
            json!([{"price": {"min": 5}}]),
            home.clone(),
            vec!["S2", "S3", "S4", "S5", "B2", "B3"],
        ),
        (
            json!([{"price": {"min": 40, "max": 60}}]),
            home.clone(),
            vec!["S2", "S3", "S4", "B2"],
        ),
        (
            json!([{"brandIn": ["acme"]}]),
            home.clone(),
            vec!["S1", "S2", "S4", "B1", "B3"],
        ),
        (
            json!([{"brandNotIn": ["acme"]}]),
            home.clone(),
            vec!["S3", "S5", "B2"],
        ),
        (
            json!([{"categoryIn": ["bags"]}]),
            home.clone(),
            vec!["B1", "B2", "B3"],
        ),
        (
            json!([{"categoryNotIn": ["bags"]}]),
            home.clone(),
            vec!["S1", "S2", "S3", "S4", "S5"],
        ),
        (json!([{"onOffer": true}]), home.clone(), vec!["S3"]),
        (json!([{"newArrival": true}]), home.clone(), vec!["S2"]),
        (
            json!([{"productNotIn": ["S1", "B3", "NOT-THERE"]}]),
            home.clone(),
            vec!["S2", "S3", "S4", "S5", "B1", "B2"],
        ),
        (
            json!([{"searchTag": ["leather", "sale"]}]),
            home.clone(),
            vec!["S1", "B2"],
        ),
        (
            json!([{"sameBrand": true}]),
            product_page("S4"),
            vec!["S1", "S2", "B1", "B3"],
        ),
        (
            json!([{"sameCategory": true}]),
            product_page("S4"),
            vec!["S1", "S2", "S3", "S5"],
        ),
        (
            json!([{"priceWithin": 20}]),
            product_page("S4"),
            vec!["S2", "S3", "B2"],
        ),
        // "Never recommend products under £5": and four more, as a merchandiser stacks them.
        (
            json!([{"price": {"min": 5}}, {"categoryIn": ["shoes"]}, {"brandIn": ["acme"]}, {"newArrival": false}, {"onOffer": false}]),
            home.clone(),
            vec!["S4"],
        ),
        // On a page without a product, product-relative filters hold for nothing.
        (json!([{"sameBrand": true}]), home.clone(), vec![]),
    ];
    for (n, (filters, events, wanted)) in cases.into_iter().enumerate() {
        put_campaigns(
            &server,
            "HP-01",
            custom(all_products(), filters.clone(), json!({})),
        );
        let ids = shown(&server, &format!("f{n}"), "HP-01", events, json!({}));
        assert_eq!(set(&ids), expected(&wanted), "{filters}");
    }
    // The prices compared are the shopper's, in the request's currency.
    put_campaigns(
        &server,
        "HP-01",
        custom(all_products(), json!([{"price": {"max": 5}}]), json!({})),
    );
    assert_eq!(
        set(&shown(&server, "gbp", "HP-01", json!([]), json!({}))),
        expected(&["S1", "B1"])
    );
    assert_eq!(
        set(&shown(
            &server,
            "usd",
            "HP-01",
            json!([]),
            json!({"currency": "USD"})
        )),
        expected(&["S1"])
    );
    let _ = EVERYTHING;
}

#[test]
fn a_filter_never_leaves_the_zone_short_while_eligible_products_remain() {
    let server = store(Vec::new());
    // Trending lists every product; two zenith products wanted of it.
    let list = custom(
        json!({"strategy": "trending"}),
        json!([{"brandIn": ["zenith"]}]),
        json!({"maxItems": 2}),
    );
    put_campaigns(&server, "HP-01", list);
    // Trending ranks a new catalogue on the models' next round.
    let ids = crate::common::wait_for(
        "trending ranked",
        std::time::Duration::from_secs(120),
        || {
            let ids = shown(&server, "short", "HP-01", json!([]), json!({}));
            (!ids.is_empty()).then_some(ids)
        },
    );
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(
        ids.iter()
            .all(|id| ["S3", "S5", "B2"].contains(&id.as_str())),
        "{ids:?}"
    );
}

#[test]
fn pins_take_their_places_when_eligible() {
    let server = store(Vec::new());
    let list = custom(
        json!({"manual": {"products": ["S2", "S3", "S4", "S5", "S1"]}}),
        json!([]),
        json!({"maxItems": 4, "pins": [{"product": "B3", "place": 1}, {"product": "B1", "place": 3}]}),
    );
    put_campaigns(&server, "HP-01", list);
    let ids = shown(&server, "pinned", "HP-01", json!([]), json!({}));
    assert_eq!(ids, ["B3", "S2", "B1", "S3"]);
    // A pinned product in the shopper's basket is not eligible: the others move up.
    let basket = json!([{"name": "set_basket", "data": {"items": [{"id": "B3", "qty": 1, "unitprice": 80}]}}]);
    let ids = shown(&server, "basket", "HP-01", basket, json!({}));
    assert_eq!(ids, ["S2", "S3", "B1", "S4"]);
    let explain = admin(
        &server,
        "GET",
        "/explain?zone=HP-01&visitor=pinned",
        EDITOR,
        None,
        &[],
    );
    let items = explain.json()["items"].clone();
    assert_eq!(items[0]["placedBy"]["kind"], "pin", "{items}");
    assert_eq!(items[0]["placedBy"]["place"], 1);
    assert_eq!(items[1]["placedBy"]["kind"], "source");
}

#[test]
fn boosts_and_buries_reorder() {
    let server = store(Vec::new());
    let source = json!({"manual": {"products": ["S2", "S3", "S4", "S5"]}});
    put_campaigns(
        &server,
        "HP-01",
        custom(source.clone(), json!([]), json!({})),
    );
    assert_eq!(
        shown(&server, "plain", "HP-01", json!([]), json!({})),
        ["S2", "S3", "S4", "S5"]
    );
    let boosted = json!({"boosts": [{"filter": {"brandIn": ["zenith"]}, "factor": 10}]});
    put_campaigns(&server, "HP-01", custom(source.clone(), json!([]), boosted));
    assert_eq!(
        shown(&server, "boost", "HP-01", json!([]), json!({})),
        ["S3", "S5", "S2", "S4"]
    );
    let buried = json!({"boosts": [{"filter": {"newArrival": true}, "factor": 0.01}]});
    put_campaigns(&server, "HP-01", custom(source, json!([]), buried));
    assert_eq!(
        shown(&server, "bury", "HP-01", json!([]), json!({})),
        ["S3", "S4", "S5", "S2"]
    );
    let explain = admin(
        &server,
        "GET",
        "/explain?zone=HP-01&visitor=bury",
        EDITOR,
        None,
        &[],
    );
    let items = explain.json()["items"].clone();
    assert_eq!(items[3]["id"], "S2");
    assert_eq!(items[3]["placedBy"]["boosts"][0]["factor"], 0.01, "{items}");
    assert_eq!(items[3]["placedBy"]["boosts"][0]["filter"], "newArrival");
}

#[test]
fn alternatives_within_a_price_band_same_brand_first() {
    let server = store(Vec::new());
    // "On a product page, show alternatives within 20 % of its price, same brand first."
    let list = json!([{
        "id": "alternatives",
        "content": {"type": "custom", "source": {"manual": {"categories": ["shoes", "bags"]}},
            "filters": [{"priceWithin": 20}],
            "boosts": [{"filter": {"sameBrand": true}, "factor": 100}],
            "maxItems": 4}
    }]);
    put_campaigns(&server, "PP-01", list);
    let ids = shown(&server, "alt", "PP-01", product_page("S4"), json!({}));
    // Within £40–£60 of S4's £50: S2 (acme) first, then S3 and B2 (zenith).
    assert_eq!(ids.first().map(String::as_str), Some("S2"), "{ids:?}");
    assert_eq!(set(&ids), expected(&["S2", "S3", "B2"]));
}

#[test]
fn image_and_html_content_set_the_zones_type() {
    let server = store(Vec::new());
    let list = json!([
        {"id": "banner", "segment": null, "content": {"type": "image", "images": [
            {"url": "https://cdn.example/a.jpg", "link": "/sale", "alt": "Sale"},
            {"url": "https://cdn.example/b.jpg", "link": "/new", "alt": "New"}]}},
    ]);
    put_campaigns(&server, "HP-01", list);
    let body = crate::common::serverside_body(json!({
        "appId": crate::campaigns::KEY, "secretKey": crate::campaigns::SECRET,
        "visitorId": "img", "events": [], "zones": ["HP-01"],
    }));
    let resp = server.post_json("/api/serverside", &body).json();
    assert_eq!(resp["zones"]["HP-01"]["type"], "image-carousel", "{resp}");
    assert_eq!(
        resp["zones"]["HP-01"]["items"][1]["Image"],
        "https://cdn.example/b.jpg"
    );
    let html = json!([{"id": "html", "content": {"type": "html",
        "template": "<ul>{% for item in items %}<li>{{ item.Id }}</li>{% endfor %}</ul>",
        "strategy": "trending", "count": 2}}]);
    put_campaigns(&server, "HP-01", html);
    let resp = crate::common::wait_for(
        "trending ranked",
        std::time::Duration::from_secs(120),
        || {
            let resp = server.post_json("/api/serverside", &body).json();
            (!resp["zones"]["HP-01"]["items"].as_array()?.is_empty()).then_some(resp)
        },
    );
    let zone = &resp["zones"]["HP-01"];
    assert_eq!(zone["type"], "html", "{resp}");
    assert_eq!(zone["items"].as_array().unwrap().len(), 2);
    assert!(
        zone["html"].as_str().unwrap().starts_with("<ul><li>"),
        "{zone}"
    );
}

/// A template that writes catalogue text into elements and attributes.
const HOSTILE_TEMPLATE: &str = r#"{% for item in items %}<a href="{{ item.Link }}" title="{{ item.Title }}">{{ item.Title }}</a><p>{{ item.Description }}</p>{% for tag in item.SearchTags %}<i>{{ tag }}</i>{% endfor %}{% endfor %}"#;

#[test]
fn html_content_escapes_catalogue_text_as_a_configured_html_zone_does() {
    // The store's zones and one configured html zone with the template, and one product
    // (so that trending shows it); a campaign on that zone with the same template must
    // render exactly the same text.
    let config = format!(
        "{}\n  [[accounts.zones]]\n  id = \"HT-01\"\n  title = \"Picks\"\n  type = \"html\"\n  strategy = \"trending\"\n  count = 1\n  template = {HOSTILE_TEMPLATE:?}\n",
        crate::campaigns::config()
    );
    let server = crate::common::Server::with_config(&config);
    let hostile = crate::campaigns::product(
        "H1",
        9.0,
        "shoes",
        "acme",
        json!({
            "Title": "Tee <b>\"Bold\"</b> & Co <script>alert(1)</script>",
            "Description": "</p><img src=x onerror=alert(1)>",
            "Link": "/p/h1\" onmouseover=\"alert(1)",
            "SearchTags": ["<svg/onload=alert(1)>"],
        }),
    );
    let resp = server.post_json(
        "/api/delta",
        &json!({"AppKey": crate::campaigns::KEY, "SecretKey": crate::campaigns::SECRET, "Products": [hostile]}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let body = crate::common::serverside_body(json!({
        "appId": crate::campaigns::KEY, "secretKey": crate::campaigns::SECRET,
        "visitorId": "esc", "events": [], "zones": ["HT-01"],
    }));
    let html_of = |label: &str| -> String {
        crate::common::wait_for(label, std::time::Duration::from_secs(120), || {
            let resp = server.post_json("/api/serverside", &body).json();
            let zone = &resp["zones"]["HT-01"];
            (zone["items"].as_array()?.len() == 1)
                .then(|| zone["html"].as_str().unwrap().to_owned())
        })
    };
    let configured = html_of("the configured zone ranks H1");
    for raw in ["<b>", "<script", "<img", "<svg", "\" onmouseover"] {
        assert!(!configured.contains(raw), "{raw} in {configured}");
    }
    assert!(configured.contains("&lt;script&gt;"), "{configured}");
    assert!(configured.contains("&amp; Co"), "{configured}");

    // The campaign's template is the zone's in a wrapper, so that its answer is known
    // to be the campaign's.
    let list = json!([{"id": "html", "content": {"type": "html",
        "template": format!("<div>{HOSTILE_TEMPLATE}</div>"), "strategy": "trending", "count": 1}}]);
    put_campaigns(&server, "HT-01", list);
    let by_campaign = crate::common::wait_for(
        "the campaign renders",
        std::time::Duration::from_secs(120),
        || {
            let resp = server.post_json("/api/serverside", &body).json();
            let zone = &resp["zones"]["HT-01"];
            let errors = resp["errors"].as_array()?;
            assert!(errors.is_empty(), "{resp}");
            let html = zone["html"].as_str()?;
            (zone["items"].as_array()?.len() == 1 && html.starts_with("<div>"))
                .then(|| html.to_owned())
        },
    );
    assert_eq!(by_campaign, format!("<div>{configured}</div>"));
}

#[test]
fn a_campaign_sets_the_zones_title_while_it_is_shown() {
    let server = store(Vec::new());
    let list = json!([
        {"id": "picks", "title": "Our <picks>", "segment": null, "content": {"type": "custom", "source": {"manual": {"products": ["S2"]}}}},
    ]);
    put_campaigns(&server, "HP-01", list);
    let body = crate::common::serverside_body(json!({
        "appId": crate::campaigns::KEY, "secretKey": crate::campaigns::SECRET,
        "visitorId": "titled", "events": [], "zones": ["HP-01", "PP-01"],
    }));
    let resp = server.post_json("/api/serverside", &body).json();
    assert_eq!(resp["zones"]["HP-01"]["title"], "Our <picks>", "{resp}");
    // A zone whose campaign has no title keeps its configured one.
    assert_eq!(resp["zones"]["PP-01"]["title"], "Alternatives", "{resp}");
    let resp = admin(
        &server,
        "PUT",
        "/zones/HP-01/campaigns",
        EDITOR,
        Some(
            &json!({"campaigns": [{"id": "x", "title": "a\u{7}b", "content": {"type": "automated", "strategy": "trending"}}]}),
        ),
        &[],
    );
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(resp.body.contains("campaigns[0].title"), "{}", resp.body);
    // The pickers' search shows a product by sight: price now, availability, categories.
    let found = admin(&server, "GET", "/catalogue?q=S2", EDITOR, None, &[]).json();
    let s2 = &found["found"][0];
    assert_eq!(s2["id"], "S2", "{found}");
    assert_eq!(s2["price"], "£40.00", "{found}");
    assert_eq!(s2["available"], true, "{found}");
    assert_eq!(s2["categories"], json!(["shoes"]), "{found}");
    assert_eq!(s2["brand"], "acme", "{found}");
}
