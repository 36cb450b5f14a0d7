//! The WooCommerce plugin's product data, as its product watcher sends it through the
//! PHP SDK's `/api/productdelta`: variable products (several prices in one currency,
//! associated ids as numbers) and sale windows (`SalePriceStartDate`,
//! `SalePriceEndDate`, PHP's `date('c')` form), priced at the moment of each request.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::common::{DEMO_KEY, DEMO_SECRET, Server, viewed_item, wait_for};

/// Sends one product as the plugin's delta; waits until it is applied.
fn send_product(server: &Server, product: Value) {
    let resp = server.post_json(
        "/api/productdelta",
        &json!({"AppKey": DEMO_KEY, "Secret": DEMO_SECRET, "Products": [product],
            "DeleteProducts": []}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let token = resp.json()["Token"].as_str().unwrap().to_owned();
    wait_for("the delta applied", Duration::from_secs(240), || {
        let status = server.post_json(
            "/api/deltastatus",
            &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": [token]}),
        );
        (status.json()[0]["Status"] == 1).then_some(())
    });
}

/// The WooCommerce plugin's variable product: its variations' prices in one currency
/// (equal ones collapse, the lowest is the price shown) and its associated products as
/// numbers.
#[test]
fn a_woocommerce_variable_product_is_served_at_its_from_price() {
    let server = Server::demo();
    send_product(
        &server,
        json!({"Id": "1040", "Sku": "tee-var", "Title": "Variable tee", "Link": "/product/tee",
            "Image": "https://shop.example/tee.png", "Categories": ["15"],
            "Prices": ["12.00 GBP", "9.50 GBP", "9.50 GBP"], "AssociatedIds": [1041, 1042]}),
    );
    let item = viewed_item(&server, "tee-shopper", vec![], "1040");
    assert_eq!(item["DisplayPrice"], "£9.50", "{item}");
    assert!(item.get("WasPrice").is_none_or(Value::is_null), "{item}");
}

/// An instant as PHP's `date('c')` writes it: `2026-12-16T09:00:00+00:00`.
fn php_date(unix_secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix_secs)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
        .replace('Z', "+00:00")
}

fn now_millis() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The price shown, and the was-price when on sale.
fn prices(item: &Value) -> (String, Option<String>) {
    (
        item["DisplayPrice"].as_str().unwrap().to_owned(),
        item["DisplayWasPrice"].as_str().map(str::to_owned),
    )
}

#[test]
fn a_sale_price_shows_only_inside_its_window_from_the_moment_it_opens() {
    let server = Server::demo();
    let tee = |start: i64, end: i64| {
        json!({"Id": "2001", "Sku": "sale-tee", "Title": "Sale tee", "Link": "/product/sale-tee",
            "Image": "https://shop.example/sale.png", "Categories": ["15"],
            "Prices": ["20.00 GBP"], "SalePrices": ["15.00 GBP"],
            "SalePriceStartDate": php_date(start), "SalePriceEndDate": php_date(end)})
    };
    let regular = ("£20.00".to_owned(), None);
    let on_sale = ("£15.00".to_owned(), Some("£20.00".to_owned()));

    // A sale starting in 20 days is not shown now.
    let now = now_millis() / 1000;
    send_product(&server, tee(now + 20 * 86_400, now + 30 * 86_400));
    assert_eq!(
        prices(&viewed_item(&server, "early", vec![], "2001")),
        regular
    );

    // A window opening in a few seconds: every answer asked after it opened shows the
    // sale, every answer received before shows the regular price, and after it closes
    // the regular price is back, with no feed or rebuild in between.
    let start = now_millis() / 1000 + 3;
    let end = start + 8;
    send_product(&server, tee(start, end));
    let (start_ms, end_ms) = (start * 1000, end * 1000);
    let mut seen = (0, 0, 0);
    let mut round = 0;
    while now_millis() <= end_ms + 1_000 {
        round += 1;
        let asked = now_millis();
        let shown = prices(&viewed_item(
            &server,
            &format!("shopper-{round}"),
            vec![],
            "2001",
        ));
        let answered = now_millis();
        if answered < start_ms {
            assert_eq!(shown, regular, "answered before the sale opened");
            seen.0 += 1;
        } else if asked >= start_ms && answered < end_ms {
            assert_eq!(
                shown, on_sale,
                "asked inside the window at {asked}..{answered}, window {start_ms}..={end_ms}"
            );
            seen.1 += 1;
        } else if asked > end_ms {
            assert_eq!(shown, regular, "asked after the sale closed");
            seen.2 += 1;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(seen.1 > 0 && seen.2 > 0, "{seen:?}");
}

#[test]
fn a_sale_window_that_ends_before_it_starts_is_refused() {
    let server = Server::demo();
    let resp = server.post_json(
        "/api/productdelta",
        &json!({"AppKey": DEMO_KEY, "Secret": DEMO_SECRET, "Products": [{"Id": "2002",
            "Title": "Bad window", "Link": "/p", "Image": "https://shop.example/p.png",
            "Prices": ["20.00 GBP"], "SalePrices": ["15.00 GBP"],
            "SalePriceStartDate": "2026-12-20T00:00:00+00:00",
            "SalePriceEndDate": "2026-12-10T00:00:00+00:00"}], "DeleteProducts": []}),
    );
    resp.assert_error(
        400,
        "Products[0].SalePriceEndDate: is before SalePriceStartDate",
    );
    let resp = server.post_json(
        "/api/productdelta",
        &json!({"AppKey": DEMO_KEY, "Secret": DEMO_SECRET, "Products": [{"Id": "2002",
            "Title": "Bad date", "Link": "/p", "Image": "https://shop.example/p.png",
            "Prices": ["20.00 GBP"], "SalePriceStartDate": "next week"}], "DeleteProducts": []}),
    );
    resp.assert_error(400, "Products[0].SalePriceStartDate: expected a date");
}

/// A product exactly as the plugin's `get_product_data` builds it, every optional key
/// present: the fields Vitrine does not use are accepted and ignored.
#[test]
fn a_woocommerce_product_with_every_field_the_plugin_sends_is_served() {
    let server = Server::demo();
    send_product(
        &server,
        json!({
            "Id": "3001", "Title": "Hoodie", "Description": "Warm hoodie Short text",
            "Categories": ["15", "16"], "InStock": true, "Link": "//shop.example/product/hoodie/",
            "Image": "//shop.example/wp-content/uploads/hoodie.jpg", "ProductType": "variable",
            "Sku": "woo-hoodie", "AllImages": ["//shop.example/wp-content/uploads/hoodie-2.jpg"],
            "StockQty": 12, "ExcludeFromSearch": true,
            "SalePriceStartDate": "2026-01-01T00:00:00+00:00",
            "SalePriceEndDate": "2099-01-01T23:59:59+00:00",
            "SearchTags": ["winter"], "Weight": ["1.5"], "Length": ["30"], "Width": ["20"], "Height": ["5"],
            "Prices": ["45.00 GBP", "42.00 GBP", "45.00 GBP"], "SalePrices": ["40.00 GBP"],
            "AssociatedIds": [3002, 3003], "AssociatedSkus": ["woo-hoodie-blue", "woo-hoodie-red"],
            "AssociatedTitles": ["Hoodie - Blue", "Hoodie - Red"],
            "pa_color": ["blue", "red"]
        }),
    );
    let item = viewed_item(&server, "hoodie-shopper", vec![], "3001");
    assert_eq!(
        prices(&item),
        ("£40.00".to_owned(), Some("£42.00".to_owned()))
    );
}
