//! Filling zones: filters, fallbacks, prices and search, on a small catalogue.

use super::blend::{Seeds, personalized_seeds, sorted_lazily};
use super::*;
use crate::zone::ZoneSpec;

#[test]
fn search_terms_match_ignoring_case_with_and_without_ascii() {
    assert!(contains_lowercase("Red HAT", "hat"));
    assert!(!contains_lowercase("Red cap", "hat"));
    assert!(contains_lowercase("Écharpe", "écharpe"));
    assert!(!contains_lowercase("Red", "é"));
    assert!(contains_lowercase("anything", ""));
}
use crate::catalogue::{CatalogueBuilder, GroupPrice, PriceSet, Product, Visibility};
use crate::testing::money;
use crate::zone::ZoneKind;

/// Products a..h, each with one filter-relevant trait, trending in id order.
fn catalogue() -> Catalogue {
    let gbp = |p: i64| PriceSet {
        prices: vec![money(p, "GBP")],
        sale_prices: vec![],
    };
    let base = |id: &str| Product {
        id: id.into(),
        prices: gbp(1000),
        categories: vec!["c".into()],
        ..Product::default()
    };
    let mut b = CatalogueBuilder::new();
    b.upsert_product(base("a"));
    b.upsert_product(Product {
        prices: PriceSet {
            prices: vec![money(500, "USD")],
            sale_prices: vec![],
        },
        ..base("usd-only")
    });
    b.upsert_product(Product {
        exclude_from_recommenders: true,
        ..base("excluded")
    });
    b.upsert_product(Product {
        available_until: Some(10),
        ..base("ended")
    });
    b.upsert_product(Product {
        available_from: Some(i64::MAX),
        ..base("future")
    });
    b.upsert_product(Product {
        visibility: Visibility::OnlyAccounts(vec!["acme".into()]),
        ..base("b2b-only")
    });
    b.upsert_product(Product {
        visibility: Visibility::ExceptAccounts(vec!["acme".into()]),
        ..base("not-acme")
    });
    b.upsert_product(base("in-basket"));
    b.upsert_product(base("bought"));
    b.upsert_product(Product {
        prices: PriceSet {
            prices: vec![money(1000, "GBP")],
            sale_prices: vec![money(700, "GBP")],
        },
        ..base("on-sale")
    });
    b.upsert_product(base("page"));
    b.build().unwrap()
}

/// A request in GBP on no page, with no visitor history.
fn context<'a>(
    catalogue: &'a Catalogue,
    rankings: &'a Rankings,
    neighbours: &'a Neighbours,
) -> Context<'a> {
    Context {
        catalogue,
        rankings,
        neighbours,
        prices: catalogue.prices_in(Currency::from_code("GBP").unwrap()),
        now: 1_000,
        account_id: None,
        group_id: None,
        product: None,
        category: None,
        basket: &[],
        purchased: &[],
        bought_again: &[],
        recent_views: &[],
        similar_sessions: &[],
        search: None,
    }
}

/// A zone of `strategy` with the default settings.
fn zone_of(strategy: Strategy) -> ZoneSpec {
    ZoneSpec {
        id: "z".into(),
        title: "t".into(),
        kind: ZoneKind::RecommenderProduct,
        strategy: Some(strategy),
        fallback: vec![],
        count: 20,
        page_types: vec![],
        recipe: crate::zone::ZoneRecipe {
            content: 0.0,
            sessions: 0.0,
            popularity: 0.0,
            ..crate::zone::ZoneRecipe::default()
        },
    }
}

fn ids(catalogue: &Catalogue, account: Option<&str>, currency: &str) -> Vec<String> {
    let rankings = Rankings::build(catalogue, |_| (0.0, 0));
    let neighbours = Neighbours::default();
    let ctx = Context {
        prices: catalogue.prices_in(Currency::from_code(currency).unwrap()),
        account_id: account,
        product: catalogue.idx_of("page"),
        basket: &[catalogue.idx_of("in-basket").unwrap()],
        purchased: &[catalogue.idx_of("bought").unwrap()],
        ..context(catalogue, &rankings, &neighbours)
    };
    let zone = zone_of(Strategy::Trending);
    fill_zone(&zone, &ctx)
        .into_iter()
        .map(|i| catalogue.product(i.product).unwrap().id.to_string())
        .collect()
}

#[test]
fn personalized_seeds_weigh_recent_steps_by_recency_share_the_long_term_weight_and_weigh_purchases()
{
    let catalogue = catalogue();
    let rankings = Rankings::build(&catalogue, |_| (0.0, 0));
    let neighbours = Neighbours::default();
    let views: Vec<ProductIdx> = (0..60).collect();
    let purchased: Vec<ProductIdx> = vec![7, 8];
    let ctx = Context {
        purchased: &purchased,
        recent_views: &views,
        similar_sessions: &[],
        ..context(&catalogue, &rankings, &neighbours)
    };
    let mut zone = zone_of(Strategy::Personalized);
    zone.recipe = crate::zone::ZoneRecipe {
        history: 3,
        recency: 0.5,
        long_term: 0.0,
        purchases: 0.5,
        ..zone.recipe
    };
    let close = |a: &Seeds, b: &[(ProductIdx, f64)]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.0 == y.0 && (x.1 - y.1).abs() < 1e-12)
    };
    // Without the long-term part: the latest 3 views 1, 1/2, 1/4; the purchases
    // half that from the latest bought.
    let seeds = personalized_seeds(&zone, &ctx);
    let expected = [(0, 1.0), (1, 0.5), (2, 0.25), (8, 0.5), (7, 0.25)];
    assert!(close(&seeds, &expected), "{seeds:?}");
    // With it: the latest 50 views share 5 (0.1 each) on top; the 2 purchases
    // share half of it.
    zone.recipe.long_term = 5.0;
    let seeds = personalized_seeds(&zone, &ctx);
    assert_eq!(seeds.len(), 50 + 2);
    assert!((seeds[0].1 - 1.1).abs() < 1e-12, "{seeds:?}");
    assert!((seeds[2].1 - 0.35).abs() < 1e-12, "{seeds:?}");
    assert!((seeds[49].1 - 0.1).abs() < 1e-12, "{seeds:?}");
    assert_eq!(seeds[49].0, 49);
    assert!((seeds[50].1 - (0.5 + 1.25)).abs() < 1e-12, "{seeds:?}");
    assert!((seeds[51].1 - (0.25 + 1.25)).abs() < 1e-12, "{seeds:?}");
    let total: f64 = seeds.iter().map(|s| s.1).sum();
    assert!((total - (1.75 + 5.0 + 0.75 + 2.5)).abs() < 1e-9, "{total}");
    // The purchases at their own weight: 1 from the latest bought, or left out.
    zone.recipe.long_term = 0.0;
    zone.recipe.purchases = 1.0;
    let seeds = personalized_seeds(&zone, &ctx);
    let expected = [(0, 1.0), (1, 0.5), (2, 0.25), (8, 1.0), (7, 0.5)];
    assert!(close(&seeds, &expected), "{seeds:?}");
    zone.recipe.purchases = 0.0;
    let seeds = personalized_seeds(&zone, &ctx);
    assert!(close(&seeds, &expected[..3]), "{seeds:?}");
    // By default a quarter.
    zone.recipe.purchases = crate::zone::DEFAULT_PURCHASES;
    let seeds = personalized_seeds(&zone, &ctx);
    let expected = [(0, 1.0), (1, 0.5), (2, 0.25), (8, 0.25), (7, 0.125)];
    assert!(close(&seeds, &expected), "{seeds:?}");
}

#[test]
fn a_lazy_sort_gives_what_a_full_sort_gives() {
    // Pseudo-random values with many ties, sorted by value, then index.
    let items: Vec<(u32, u32)> = (0..200u32).map(|i| (i * 7919 % 13, i)).collect();
    let order = |a: &(u32, u32), b: &(u32, u32)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
    let mut full = items.clone();
    full.sort_by(order);
    for step in [0, 1, 3, 32, 199, 200, 500] {
        let lazy: Vec<(u32, u32)> = sorted_lazily(items.clone(), order, step).collect();
        assert_eq!(lazy, full, "step {step}");
    }
    let first: Vec<(u32, u32)> = sorted_lazily(items, order, 32).take(5).collect();
    assert_eq!(first, full[..5]);
    assert_eq!(sorted_lazily(Vec::<u32>::new(), u32::cmp, 4).next(), None);
}

#[test]
fn every_recommender_filter_applies() {
    let catalogue = catalogue();
    assert_eq!(ids(&catalogue, None, "GBP"), ["a", "not-acme", "on-sale"]);
    assert_eq!(
        ids(&catalogue, Some("acme"), "GBP"),
        ["a", "b2b-only", "on-sale"]
    );
    assert_eq!(ids(&catalogue, None, "USD"), ["usd-only"]);
}

#[test]
fn prices_prefer_account_then_group_then_product_and_show_sales() {
    let mut b = CatalogueBuilder::new();
    b.upsert_product(Product {
        id: "p".into(),
        prices: PriceSet {
            prices: vec![money(1000, "GBP")],
            sale_prices: vec![money(800, "GBP")],
        },
        group_prices: vec![GroupPrice {
            group: "trade".into(),
            prices: PriceSet {
                prices: vec![money(900, "GBP")],
                sale_prices: vec![],
            },
        }],
        ..Product::default()
    });
    b.set_account_prices(
        "acme",
        "p",
        PriceSet {
            prices: vec![money(700, "GBP")],
            sale_prices: vec![],
        },
    );
    let catalogue = b.build().unwrap();
    let rankings = Rankings::default();
    let neighbours = Neighbours::default();
    let price = |account: Option<&str>, group: Option<&str>| {
        let ctx = Context {
            catalogue: &catalogue,
            rankings: &rankings,
            neighbours: &neighbours,
            prices: catalogue.prices_in(Currency::from_code("GBP").unwrap()),
            now: 0,
            account_id: account,
            group_id: group,
            product: None,
            category: None,
            basket: &[],
            purchased: &[],
            bought_again: &[],
            recent_views: &[],
            similar_sessions: &[],
            search: None,
        };
        item_price(0, catalogue.product(0).unwrap(), &ctx).unwrap()
    };
    assert_eq!(
        price(None, None),
        ItemPrice {
            price: money(800, "GBP"),
            was: Some(money(1000, "GBP"))
        }
    );
    assert_eq!(price(None, None).saving_percent().as_deref(), Some("20%"));
    assert_eq!(
        price(None, Some("trade")),
        ItemPrice {
            price: money(900, "GBP"),
            was: None
        }
    );
    assert_eq!(
        price(Some("acme"), Some("trade")),
        ItemPrice {
            price: money(700, "GBP"),
            was: None
        }
    );
    assert_eq!(price(Some("other"), None).price, money(800, "GBP"));
}

#[test]
fn sale_prices_apply_only_inside_their_window_and_account_prices_keep_theirs() {
    let (start, end) = (1_000_000, 2_000_000);
    let mut b = CatalogueBuilder::new();
    b.upsert_product(Product {
        id: "p".into(),
        prices: PriceSet {
            prices: vec![money(1000, "GBP")],
            sale_prices: vec![money(800, "GBP")],
        },
        group_prices: vec![GroupPrice {
            group: "trade".into(),
            prices: PriceSet {
                prices: vec![money(900, "GBP")],
                sale_prices: vec![money(850, "GBP")],
            },
        }],
        sale_from: Some(start),
        sale_until: Some(end),
        ..Product::default()
    });
    b.set_account_prices(
        "acme",
        "p",
        PriceSet {
            prices: vec![money(700, "GBP")],
            sale_prices: vec![money(650, "GBP")],
        },
    );
    let catalogue = b.build().unwrap();
    let rankings = Rankings::default();
    let neighbours = Neighbours::default();
    let price = |now, account: Option<&str>, group: Option<&str>| {
        let ctx = Context {
            catalogue: &catalogue,
            rankings: &rankings,
            neighbours: &neighbours,
            prices: catalogue.prices_in(Currency::from_code("GBP").unwrap()),
            now,
            account_id: account,
            group_id: group,
            product: None,
            category: None,
            basket: &[],
            purchased: &[],
            bought_again: &[],
            recent_views: &[],
            similar_sessions: &[],
            search: None,
        };
        let product = catalogue.product(0).unwrap();
        let (price, shared) = priced(0, product, &ctx).unwrap();
        // The product's own price depends on the time: never a shared rendering.
        assert!(!shared);
        (price.price.minor, price.was.map(|w| w.minor))
    };
    for (now, own, group) in [
        (start - 1, (1000, None), (900, None)),
        (start, (800, Some(1000)), (850, Some(900))),
        (end, (800, Some(1000)), (850, Some(900))),
        (end + 1, (1000, None), (900, None)),
    ] {
        assert_eq!(price(now, None, None), own, "at {now}");
        assert_eq!(price(now, None, Some("trade")), group, "at {now}");
        // Account prices are records of their own: their sale always applies.
        assert_eq!(price(now, Some("acme"), None), (650, Some(700)), "at {now}");
    }
}
