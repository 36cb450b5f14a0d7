//! Explaining a zone: the evidence of each strategy family, the filters that removed
//! candidates, and that the explanation is exactly what serving gives.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

mod common;

use common::*;
use vitrine_engine::catalogue::{CatalogueBuilder, PriceSet, Product, Visibility};
use vitrine_engine::zone::Strategy;
use vitrine_testkit::{self as testkit, money};

#[test]
fn explain_gives_the_evidence_of_each_strategy_family() {
    // Co-views and co-purchases: a-b viewed by 3 visitors, a and d bought together twice
    // (in the order history: purchases, not steps of a visit).
    let co = |strategy: Strategy| {
        let account = account(strategy);
        for v in 0..3 {
            track(&account, &format!("v{v}"), vec![view("a"), view("b")], T0);
        }
        for o in 0..2 {
            let id = format!("ad{o}");
            track(
                &account,
                &id,
                vec![customer_order(&id, &id, &["a", "d"])],
                T0,
            );
        }
        account.rebuild_models();
        account
    };
    // A pair's strength: its count damped by both products' totals (3 / (√3 · √3)).
    let e = explain(&co(Strategy::ViewedTogether), None, Some("a"));
    let score = e.items[0].score.unwrap_or_default();
    assert!((score - 1.0).abs() < 1e-6, "{score}");
    assert_eq!(
        explained(&e)[0],
        (
            "b".into(),
            Strategy::ViewedTogether,
            vec!["viewed with a 1.00 x1".into()]
        )
    );
    assert!(!e.visitor_known);
    // A co-purchase pair's strength is damped by the partner's total only (2 / √2): the
    // co-purchase lists' seed damping is 0 by default.
    let e = explain(&co(Strategy::BoughtTogether), None, Some("a"));
    assert_eq!(
        explained(&e)[0],
        (
            "d".into(),
            Strategy::BoughtTogether,
            vec!["bought with a 1.41 x1".into()]
        )
    );
    // personalized: the visitor's latest view a (weight 1, and the long-term part's 2)
    // gives d from a's co-purchases (undamped by a's own total, above), then b.
    let personal = co(Strategy::Personalized);
    track(&personal, "me", vec![view("a")], T0);
    let e = explain(&personal, Some("me"), None);
    assert!(e.visitor_known);
    let items = explained(&e);
    assert_eq!(items[0].2, ["bought with a 1.41 x3"]);
    assert_eq!(items[1].2, ["viewed with a 1.00 x3"]);
    // Products similar to the latest views come after, with the product they resemble.
    assert!(
        items[2..]
            .iter()
            .all(|(_, _, facts)| facts == &["similar to a"]),
        "{items:?}"
    );
    // basket_cross_sell: the basket's co-purchases.
    let cross_sell = co(Strategy::BasketCrossSell);
    let basket = basket(&["a"]);
    track(&cross_sell, "shopper", vec![basket], T0);
    let items = explained(&explain(&cross_sell, Some("shopper"), None));
    assert_eq!(items[0].2, ["bought with a 1.41 x1"]);
    // Popularity: trending gives the rank, top sellers the units.
    let items = explained(&explain(&co(Strategy::Trending), None, None));
    assert_eq!(items[0].2, ["rank 0"]);
    let items = explained(&explain(&co(Strategy::TopSellers), None, None));
    assert_eq!(items[0].2, ["2 sold"]);
    // Content: similar products and the product's own lists.
    let items = explained(&explain(&account(Strategy::Similar), None, Some("a")));
    assert!(
        items.iter().all(|(_, _, f)| f == &["similar to a"]),
        "{items:?}"
    );
    let items = explained(&explain(
        &account(Strategy::CompleteTheLook),
        None,
        Some("a"),
    ));
    assert_eq!(
        items[0],
        (
            "b".into(),
            Strategy::CompleteTheLook,
            vec!["listed by a".into()]
        )
    );
    // The visitor's own views.
    let recent = account(Strategy::RecentlyViewed);
    track(&recent, "me", vec![view("c"), view("e")], T0);
    let items = explained(&explain(&recent, Some("me"), None));
    assert_eq!(items[0].2, ["viewed 0"]);
    assert_eq!(items[1].2, ["viewed 1"]);
}

#[test]
fn explain_names_the_filter_that_removed_each_candidate_and_records_nothing() {
    let mut builder = CatalogueBuilder::new();
    for id in ["a", "c", "d", "e"] {
        builder.upsert_product(product(id));
    }
    builder.upsert_product(Product {
        exclude_from_recommenders: true,
        ..product("excluded")
    });
    builder.upsert_product(Product {
        available_until: Some(10),
        ..product("ended")
    });
    builder.upsert_product(Product {
        visibility: Visibility::OnlyAccounts(vec!["acme".into()]),
        ..product("b2b")
    });
    builder.upsert_product(Product {
        prices: PriceSet {
            prices: vec![money(500, "USD")],
            sale_prices: vec![],
        },
        ..product("usd")
    });
    let mut spec = testkit::zone("Z", Strategy::Trending, 20);
    spec.fallback = vec![Strategy::Similar];
    let account = testkit::account(vec![spec], builder.build().unwrap());
    let basket = basket(&["c"]);
    // An order empties the basket: the basket comes after it.
    track(&account, "me", vec![order("me-1", &["d"])], T0);
    track(&account, "me", vec![basket], T0);
    let (visitors, sessions) = (account.visitor_count(), account.session_count());
    let e = explain(&account, Some("me"), Some("a"));
    let reasons: Vec<(String, &str)> = e
        .rejected
        .iter()
        .map(|(idx, _, why)| (id_of(&e, *idx), why.reason()))
        .collect();
    for (id, reason) in [
        ("a", "the page's own product"),
        ("c", "already in the basket"),
        ("d", "already bought"),
        ("excluded", "excluded from recommenders"),
        ("ended", "outside its start and end dates"),
        ("b2b", "not visible to the visitor's B2B account"),
        ("usd", "no price in the request's currency"),
    ] {
        assert!(
            reasons.contains(&(id.to_owned(), reason)),
            "{id}: {reasons:?}"
        );
    }
    assert_eq!(
        explained(&e)
            .iter()
            .map(|i| i.0.as_str())
            .collect::<Vec<_>>(),
        ["e"]
    );
    // Explaining for a visitor nobody has seen creates nothing.
    explain(&account, Some("stranger"), None);
    assert_eq!(account.visitor_count(), visitors);
    assert_eq!(account.session_count(), sessions);
}

/// Explaining a zone is filling it with a trace that keeps what each strategy recorded:
/// for every product strategy (and the blends with `context` and `content`), the
/// explained items are the served items in the served order, the scores of the
/// strategies ranked by a score (popularity, units sold, blends) never rise down the list
/// (they are the keys it was ranked by; a single product's pair list keeps the order of
/// the counts space-saving is sure of, its score is the damped pair weight), and every
/// item has the facts it was found from.
#[test]
fn explain_gives_exactly_what_serving_gives_with_the_scores_it_ranked_by() {
    let mut zones: Vec<(String, vitrine_engine::zone::ZoneSpec)> = Strategy::AVAILABLE
        .iter()
        .filter(|(_, s)| s.kind() == vitrine_engine::zone::ZoneKind::RecommenderProduct)
        .map(|(name, s)| ((*name).to_owned(), testkit::zone("Z", *s, 10)))
        .collect();
    for strategy in [Strategy::ViewedTogether, Strategy::BoughtTogether] {
        let mut spec = testkit::zone("Z", strategy, 10);
        spec.recipe.context = 3;
        spec.recipe.content = 0.5;
        zones.push((
            format!("{} with context and content", strategy.name()),
            spec,
        ));
    }
    let mut spec = testkit::zone("Z", Strategy::Personalized, 10);
    spec.recipe.content = 0.5;
    zones.push(("personalized with content".to_owned(), spec));
    for (name, spec) in zones {
        let account = testkit::account(vec![spec], catalogue());
        for v in 0..4 {
            let visitor = format!("v{v}");
            track(
                &account,
                &visitor,
                vec![view("a"), view("b"), view("c")],
                T0,
            );
            track(&account, &visitor, vec![view("d"), view("e")], T0);
            track(&account, &visitor, vec![order(&visitor, &["a", "f"])], T0);
        }
        track(&account, "me", vec![view("e"), view("c")], T0);
        account.rebuild_models();
        for page in [None, Some("a"), Some("d")] {
            let events = page.map(product_page).into_iter().collect();
            let served = zone(&account, "me", events, "GBP");
            let e = explain(&account, Some("me"), page);
            let explained: Vec<String> = e
                .items
                .iter()
                .map(|item| id_of(&e, item.item.product))
                .collect();
            assert_eq!(explained, served, "{name} on {page:?}");
            let main = e.spec.strategy.unwrap();
            let ranked_by_score = matches!(
                main,
                Strategy::Trending
                    | Strategy::TopSellers
                    | Strategy::Personalized
                    | Strategy::BasketCrossSell
            ) || e.spec.recipe.context > 0;
            let scores: Vec<f64> = e
                .items
                .iter()
                .filter(|item| ranked_by_score && item.strategy == main)
                .filter_map(|item| item.score)
                .collect();
            assert!(
                scores.windows(2).all(|w| w[0] >= w[1]),
                "{name} on {page:?}: scores {scores:?}"
            );
            for item in &e.items {
                assert!(
                    !item.facts.is_empty() || item.strategy == Strategy::Associated,
                    "{name} on {page:?}: {} without facts",
                    id_of(&e, item.item.product)
                );
            }
        }
    }
}
