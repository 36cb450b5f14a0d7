//! Category, brand, image and html zones.

use super::*;

const AFFINITY_CONFIG: &str = r#"
[[accounts]]
access_key = "aff-shop"
secret_key = "aff-shop-secret"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "CAT-AFF"
  title = "Your categories"
  type = "recommender-category"
  strategy = "category_affinity"
  count = 3
  [[accounts.zones]]
  id = "BRAND-AFF"
  title = "Your brands"
  type = "recommender-brand"
  strategy = "brand_affinity"
  count = 2
"#;

#[test]
fn category_and_brand_zones_show_the_visitors_affinities_as_records() {
    let server = Server::with_config(AFFINITY_CONFIG);
    let body = |events: Value| {
        serverside_body(json!({"appId": "aff-shop", "secretKey": "aff-shop-secret",
            "visitorId": "fan", "events": events, "zones": ["CAT-AFF", "BRAND-AFF"]}))
    };
    // P00001's category and brand, from the product view.
    let resp = server.post_json(
        "/api/serverside",
        &body(json!([{"name": "product_view", "data": {"id": "P00001"}}])),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    let categories = &json["zones"]["CAT-AFF"];
    assert_eq!(categories["type"], "recommender-category");
    assert_eq!(categories["title"], "Your categories");
    let first = &categories["items"][0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["Description", "DisplayName", "Id", "Image", "Link", "Title"]
    );
    assert!(resp.body.contains(&format!(
        "{{\"Id\":{},\"Title\":{},\"DisplayName\":",
        first["Id"], first["Title"]
    )));
    assert!(first["Id"].as_str().unwrap().starts_with("cat-"));
    assert_ne!(
        first["DisplayName"], first["Id"],
        "from the category record"
    );
    assert_eq!(first["Title"], first["DisplayName"]);
    let brands = &json["zones"]["BRAND-AFF"];
    assert_eq!(brands["type"], "recommender-brand");
    assert!(
        brands["items"][0]["Id"]
            .as_str()
            .unwrap()
            .starts_with("brand-")
    );

    // Browsing another category three times puts it first.
    let other = if first["Id"] == "cat-02" {
        "cat-03"
    } else {
        "cat-02"
    };
    let page = json!({"name": "page_view", "data": {"page_type": "category_listing_page", "category_id": other}});
    for _ in 0..2 {
        server.post_json("/api/serverside", &body(json!([page.clone()])));
    }
    let resp = server.post_json(
        "/api/serverside",
        &body(json!([{"name": "page_view", "data": {"page_type": "homepage"}}])),
    );
    let json = resp.json();
    let ids: Vec<&str> = json["zones"]["CAT-AFF"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["Id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], other, "{ids:?}");
    assert_eq!(ids[1], first["Id"].as_str().unwrap());
}

// ---------------------------------------------------------------- image and html zones

const CONTENT_CONFIG: &str = r#"
[[accounts]]
access_key = "content-shop"
secret_key = "content-shop-secret"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "BANNER"
  title = "Banner"
  type = "staticimage"
  images = [{ url = "//cdn.shop.example/sale.jpg", link = "/sale", alt = "Sale now on" }]
  [[accounts.zones]]
  id = "SLIDES"
  title = "Slides"
  type = "carousel"
  images = [{ url = "//cdn.shop.example/1.jpg", link = "/one" }, { url = "//cdn.shop.example/2.jpg" }]
  [[accounts.zones]]
  id = "PICKS"
  title = "Picks & more"
  type = "html"
  strategy = "trending"
  count = 2
  template = "<h2>{{ title }}</h2><ul>{% for item in items %}<li><a href=\"{{ item.Link }}\">{{ item.Title }}</a> {{ item.DisplayPrice }}</li>{% endfor %}</ul>"
  [[accounts.zones]]
  id = "NOTICE"
  title = "Notice"
  type = "html"
  template = "<p>Free delivery over {{ '£' }}50</p>{{ items | length }}"
"#;

#[test]
fn image_carousel_and_html_zones_render_their_configured_content() {
    let server = Server::with_config(CONTENT_CONFIG);
    let resp = server.post_json(
        "/api/serverside",
        &serverside_body(
            json!({"appId": "content-shop", "secretKey": "content-shop-secret",
            "zones": ["BANNER", "SLIDES", "PICKS", "NOTICE"]}),
        ),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    let zones = &json["zones"];
    assert_eq!(zones["BANNER"]["type"], "image");
    assert_eq!(
        zones["BANNER"]["items"],
        json!([{"Image": "//cdn.shop.example/sale.jpg", "Link": "/sale", "Alt": "Sale now on"}])
    );
    assert!(zones["BANNER"].get("html").is_none());
    assert_eq!(zones["SLIDES"]["type"], "image-carousel");
    assert_eq!(zones["SLIDES"]["items"].as_array().unwrap().len(), 2);
    assert_eq!(zones["SLIDES"]["items"][1]["Link"], "");

    let picks = &zones["PICKS"];
    assert_eq!(picks["type"], "html");
    let items = picks["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    let html = picks["html"].as_str().unwrap();
    assert!(
        html.starts_with("<h2>Picks &amp; more</h2><ul><li><a href=\""),
        "{html}"
    );
    for item in items {
        let line = format!(
            "{}</a> {}</li>",
            item["Title"].as_str().unwrap(),
            item["DisplayPrice"].as_str().unwrap()
        );
        assert!(html.contains(&line), "{line} in {html}");
    }
    assert_eq!(zones["NOTICE"]["html"], "<p>Free delivery over £50</p>0");
    assert_eq!(zones["NOTICE"]["items"], json!([]));
    assert_eq!(json["errors"], json!([]));
}
