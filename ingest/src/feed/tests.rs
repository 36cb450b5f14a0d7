//! Feed parsing, validation and building, on the vendor's example feeds and edge cases.

use super::*;
use vitrine_engine::catalogue::PriceSet;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/fixtures/vendor-examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn vendor_product_feed_loads_all_but_the_record_without_prices() {
    let (document, report) = parse(&mut fixture("ExampleProductFeed.json")).unwrap();
    let products = document.products.unwrap();
    let ids: Vec<&str> = products.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["1", "P31175"]);
    assert_eq!(
        report.products,
        Counts {
            total: 3,
            invalid: 1
        }
    );
    assert_eq!(
        report.problems,
        vec!["Products[2] (Sku \"P18316\"): Prices: required".to_owned()]
    );
    assert!(
        products[0].new_arrival,
        "newArrival is read case-insensitively"
    );
    assert!(products[0].available_from.is_some());
    assert!(products[1].available_until.is_some());
    assert!(document.categories.is_none() && document.brands.is_none());
    assert_eq!(
        report.summary(),
        "2 of 3 products valid; skipped: Products[2] (Sku \"P18316\"): Prices: required"
    );
}

#[test]
fn vendor_group_price_feed_loads_every_product() {
    let (document, report) = parse(&mut fixture("ProductFeedWithGroupPrices.json")).unwrap();
    let products = document.products.unwrap();
    assert_eq!(products.len(), 3, "{report:?}");
    assert_eq!(products[2].group_prices.len(), 2);
    assert!(
        matches!(&products[2].visibility, vitrine_engine::catalogue::Visibility::OnlyAccounts(a) if a == &["acc2"])
    );
}

#[test]
fn vendor_category_brand_and_user_feeds_load() {
    let (document, _) = parse(&mut fixture("ExampleCategoryFeed.json")).unwrap();
    let categories = document.categories.unwrap();
    assert_eq!(categories.len(), 2);
    assert_eq!(categories[0].parent_ids, ["1111"]);
    assert!(document.products.is_none());
    let (document, _) = parse(&mut fixture("ExampleBrandFeed.json")).unwrap();
    assert_eq!(document.brands.unwrap()[1].display_name, "Kilner");
    let (document, report) = parse(&mut fixture("ExampleUserFeed.json")).unwrap();
    let users = document.users.unwrap();
    assert_eq!(users.len(), 3, "{report:?}");
    assert_eq!(
        users[0].dob.map(|d| d.to_string()).as_deref(),
        Some("1996-01-17")
    );
}

#[test]
fn bare_arrays_duplicates_and_reject_rules() {
    let product = |id: &str| {
        format!(
            r#"{{"Id":"{id}","Title":"t","Link":"/","Image":"/i","Prices":["1 GBP"],"Categories":[]}}"#
        )
    };
    let mut bare = format!("[{},{},{}]", product("a"), product("b"), product("a")).into_bytes();
    let (document, report) = parse(&mut bare).unwrap();
    assert_eq!(document.products.unwrap().len(), 2);
    assert_eq!(
        report.problems,
        vec!["Products[2] (id \"a\"): Id: already used by Products[0]".to_owned()]
    );

    let mut half_bad = format!(
        r#"{{"Products":[{},{{"Id":"x"}},{{"Id":"y"}}]}}"#,
        product("a")
    )
    .into_bytes();
    let error = parse(&mut half_bad).unwrap_err().to_string();
    assert!(error.starts_with("more than half of the products are invalid (2 of 3): 1 of 3 products valid; skipped: Products[1] (id \"x\"): Title: required"), "{error}");

    let error = parse(&mut br#"{"Products":[]}"#.to_vec())
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("the feed holds no products"), "{error}");
    let error = parse(&mut br#"{"Products":[{"Id":"x"}]}"#.to_vec())
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("no product record is valid"), "{error}");
    let error = parse(&mut br#"{"Version":2}"#.to_vec())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("none of Products, Categories, Brands, Users"),
        "{error}"
    );
    let error = parse(&mut br#"{"Products":"nope"}"#.to_vec())
        .unwrap_err()
        .to_string();
    assert_eq!(error, "Products: expected an array, got a string");
    let error = parse(&mut b"[{\"Id\": }]".to_vec()).unwrap_err();
    assert!(
        matches!(error, FeedError::Parse { offset, .. } if offset > 0 && offset < 12),
        "{error:?}"
    );
}

#[test]
fn report_keeps_the_first_hundred_problems_and_counts_all() {
    let good =
        r#"{"Id":"g","Title":"t","Link":"/","Image":"/i","Prices":["1 GBP"],"Categories":[]}"#;
    let mut items: Vec<String> = (0..300)
        .map(|i| good.replace("\"g\"", &format!("\"g{i}\"")))
        .collect();
    items.extend((0..150).map(|i| format!(r#"{{"Id":"b{i}"}}"#)));
    let mut bytes = format!("[{}]", items.join(",")).into_bytes();
    let (document, report) = parse(&mut bytes).unwrap();
    assert_eq!(document.products.unwrap().len(), 300);
    assert_eq!(report.products.invalid, 150);
    assert_eq!(report.problems.len(), MAX_REPORTED_RECORDS);
    assert!(report.summary().ends_with("; and 50 more"));
}

#[test]
fn build_replaces_only_the_collections_present() {
    let (document, _) = parse(&mut fixture("ExampleProductFeed.json")).unwrap();
    let first = build_new(&document).unwrap();
    assert_eq!(first.len(), 2);
    let (categories, _) = parse(&mut fixture("ExampleCategoryFeed.json")).unwrap();
    let second = build(&first, &categories).unwrap();
    assert_eq!(second.len(), 2, "products kept");
    assert_eq!(
        second.category("4822").unwrap().display_name,
        "Beds and Bedspreads"
    );
}

#[test]
fn a_product_feeds_account_prices_replace_them_all_by_id_or_sku() {
    let mut bytes = serde_json::to_vec(&serde_json::json!({
        "Products": [
            {"Id": "p1", "Sku": "SKU-1", "Title": "One", "Link": "/1", "Image": "//i/1",
                "Prices": ["10.00 GBP"], "Categories": ["c"]},
            {"Id": "p2", "Title": "Two", "Link": "/2", "Image": "//i/2", "Prices": ["20.00 GBP"], "Categories": ["c"]}
        ],
        "AccountPrices": [
            {"AccountId": "b2b-1", "Sku": "SKU-1", "Prices": ["8.00 GBP"]},
            {"AccountId": "b2b-1", "Id": "p2", "Prices": ["18.00 GBP"]},
            {"AccountId": "b2b-2", "Id": "p2", "Prices": ["17.00 GBP"], "SalePrices": ["16.00 GBP"]},
            {"AccountId": "b2b-2", "Sku": "NO-SUCH", "Prices": ["1.00 GBP"]}
        ]
    }))
    .unwrap();
    let (document, report) = parse(&mut bytes).unwrap();
    assert_eq!(
        report.account_prices,
        Counts {
            total: 4,
            invalid: 1
        }
    );
    assert!(
        report.summary().contains(
            "AccountPrices[3] (account \"b2b-2\"): Sku: no product \"NO-SUCH\" in the feed"
        ),
        "{}",
        report.summary()
    );
    let mut before = CatalogueBuilder::new();
    before.upsert_product(Product {
        id: "p2".into(),
        ..Product::default()
    });
    before.set_account_prices("old-account", "p2", PriceSet::default());
    let catalogue = build(&before.build().unwrap(), &document).unwrap();
    let minor = |account: &str, id: &str| {
        catalogue
            .account_prices(account, id)
            .and_then(|set| set.price_in(vitrine_engine::Currency::from_code("GBP").unwrap()))
            .map(|m| m.minor)
    };
    assert_eq!(minor("b2b-1", "p1"), Some(800));
    assert_eq!(minor("b2b-1", "p2"), Some(1800));
    assert_eq!(minor("b2b-2", "p2"), Some(1700));
    // The feed's account prices are all of them.
    assert!(catalogue.account_prices("old-account", "p2").is_none());
}

#[test]
fn account_prices_outside_a_product_feed_are_refused() {
    let mut bytes = br#"{"Categories": [], "AccountPrices": []}"#.to_vec();
    let error = parse(&mut bytes).unwrap_err();
    assert_eq!(
        error.to_string(),
        "AccountPrices: only in a product feed, beside Products"
    );
}
