//! Data-driven strategy tests: a small catalogue and a scripted sequence of events in,
//! the ordered product ids of a zone out.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

use vitrine_engine::Account;
use vitrine_engine::account::{ExplainRequest, Explanation, ServeRequest};
use vitrine_engine::catalogue::{
    Catalogue, CatalogueBuilder, PriceSet, Product, ProductIdx, UnixMillis, Visibility,
};
use vitrine_engine::event::{BasketLine, Event, Identity, Order, PageType, PersonalDetails};
use vitrine_engine::models::{ModelSettings, TRENDING_HALF_LIFE_MILLIS};
use vitrine_engine::recommend::Fact;
use vitrine_engine::zone::Strategy;
use vitrine_testkit::{self as testkit, money, priced};

const T0: UnixMillis = 1_800_000_000_000;

fn product(id: &str) -> Product {
    Product {
        title: id.to_uppercase(),
        prices: priced(1000, "GBP"),
        categories: testkit::names(&["c"]),
        ..testkit::product(id)
    }
}

/// a..f priced in GBP; `usd` only in USD; `b2b` only for account `acme`; `sku-b` is b's
/// SKU; a's related products and associations point at the others.
fn catalogue() -> Catalogue {
    let mut builder = CatalogueBuilder::new();
    builder.upsert_product(Product {
        related_products: vec!["SKU-B".into(), "c".into(), "usd".into(), "nope".into()],
        associated_ids: vec!["d".into(), "missing".into()],
        associated_skus: vec!["SKU-B".into()],
        ..product("a")
    });
    builder.upsert_product(Product {
        sku: Some("SKU-B".into()),
        ..product("b")
    });
    for id in ["c", "d", "e", "f"] {
        builder.upsert_product(product(id));
    }
    builder.upsert_product(Product {
        prices: PriceSet {
            prices: vec![money(500, "USD")],
            sale_prices: vec![],
        },
        ..product("usd")
    });
    builder.upsert_product(Product {
        visibility: Visibility::OnlyAccounts(vec!["acme".into()]),
        ..product("b2b")
    });
    builder.build().unwrap()
}

fn account(strategy: Strategy) -> Account {
    account_with(strategy, catalogue())
}

fn account_with(strategy: Strategy, catalogue: Catalogue) -> Account {
    testkit::account(vec![testkit::zone("Z", strategy, 10)], catalogue)
}

fn view(id: &str) -> Event {
    Event::ProductView { id: id.into() }
}

fn product_page(id: &str) -> Event {
    Event::PageView {
        page_type: PageType::ProductPage,
        product_id: Some(id.into()),
        category_id: None,
        brand_id: None,
    }
}

fn order(id: &str, items: &[&str]) -> Event {
    Event::Order(Order {
        order_id: id.into(),
        items: items
            .iter()
            .map(|i| BasketLine {
                id: (*i).into(),
                qty: 1.0,
                unit_price: 10.0,
            })
            .collect(),
        total: None,
        identity: Identity {
            user_id: Some(format!("user-{id}")),
            ..Identity::default()
        },
        details: PersonalDetails::default(),
    })
}

fn track(account: &Account, visitor: &str, events: Vec<Event>, now: UnixMillis) {
    account.serve(ServeRequest {
        search: None,
        visitor_id: Some(visitor.into()),
        session_id: None,
        currency: None,
        events: events.into(),
        zones: vec![].into(),
        now,
    });
}

/// The zone's ids for `visitor` after `events`.
fn zone(account: &Account, visitor: &str, events: Vec<Event>, currency: &str) -> Vec<String> {
    let outcome = account.serve(ServeRequest {
        search: None,
        visitor_id: Some(visitor.into()),
        session_id: None,
        currency: Some(testkit::currency(currency)),
        events: events.into(),
        zones: vec!["Z".into()].into(),
        now: T0 + 1_000,
    });
    outcome.zones[0]
        .items
        .iter()
        .map(|item| {
            outcome
                .catalogue
                .product(item.product)
                .unwrap()
                .id
                .to_string()
        })
        .collect()
}

#[test]
fn viewed_together_ranks_by_co_views_and_keeps_the_filters() {
    let account = account(Strategy::ViewedTogether);
    for v in 0..10 {
        track(&account, &format!("v{v}"), vec![view("a"), view("b")], T0);
    }
    for v in 0..3 {
        track(&account, &format!("w{v}"), vec![view("a"), view("c")], T0);
    }
    for v in 0..20 {
        // Often viewed with a, but not priced in GBP / not visible without acme.
        track(
            &account,
            &format!("x{v}"),
            vec![view("a"), view("usd"), view("b2b")],
            T0,
        );
    }
    // Nothing before the models are rebuilt: serving reads finished lists only.
    assert!(zone(&account, "new", vec![product_page("a")], "GBP").is_empty());
    account.rebuild_models();
    assert_eq!(
        zone(&account, "new", vec![product_page("a")], "GBP"),
        ["b", "c"]
    );
    assert_eq!(
        zone(&account, "new", vec![product_page("a")], "USD"),
        ["usd"]
    );
    // The symmetric direction, and the visitor's latest view as the anchor.
    assert_eq!(zone(&account, "new2", vec![view("c")], "GBP"), ["a"]);
    // A product in the basket is left out.
    let basket = Event::SetBasket {
        items: vec![BasketLine {
            id: "b".into(),
            qty: 1.0,
            unit_price: 10.0,
        }],
    };
    assert_eq!(
        zone(&account, "buyer", vec![basket, product_page("a")], "GBP"),
        ["c"]
    );
}

/// Neighbour lists are kept in dense ids: when a catalogue with a new base (a full
/// feed, here in another order, so every dense id changes) is swapped in, the lists
/// move with it before any rebuild, and products the new base lacks drop out.
#[test]
fn viewed_together_with_context_blends_in_the_visitors_latest_views() {
    let account = |context: usize| {
        let mut spec = testkit::zone("Z", Strategy::ViewedTogether, 10);
        spec.context = context;
        let account = testkit::account(vec![spec], catalogue());
        // a and b viewed together by 3 visitors, c and d by 2, e and d by 4.
        for v in 0..3 {
            track(&account, &format!("v{v}"), vec![view("a"), view("b")], T0);
        }
        for v in 0..2 {
            track(&account, &format!("w{v}"), vec![view("c"), view("d")], T0);
        }
        for v in 0..4 {
            track(&account, &format!("x{v}"), vec![view("e"), view("d")], T0);
        }
        account.rebuild_models();
        account
    };
    let visit = vec![view("c"), product_page("a"), view("a")];
    // By default the page's product alone: a's partners.
    assert_eq!(zone(&account(0), "me", visit.clone(), "GBP"), ["b"]);
    // With one view of context, c (weighing 0.8) adds d; the page's product leads, and
    // the products the zone started from are left out.
    assert_eq!(zone(&account(1), "me", visit.clone(), "GBP"), ["b", "d"]);
    assert_eq!(zone(&account(5), "me", visit, "GBP"), ["b", "d"]);
}

/// a and n (new: nobody viewed it) in category x; b and q in y: a's `similar` list is n.
/// a viewed with b by 3 visitors and with q by one.
fn content_account(strategy: Strategy, content: f64) -> Account {
    let mut builder = CatalogueBuilder::new();
    for (id, category) in [("a", "x"), ("n", "x"), ("b", "y"), ("q", "y")] {
        builder.upsert_product(Product {
            categories: testkit::names(&[category]),
            ..product(id)
        });
    }
    let mut spec = testkit::zone("Z", strategy, 10);
    spec.content = content;
    let account = testkit::account(vec![spec], builder.build().unwrap());
    for v in 0..3 {
        track(&account, &format!("v{v}"), vec![view("a"), view("b")], T0);
    }
    track(&account, "w", vec![view("a"), view("q")], T0);
    account.rebuild_models();
    account
}

#[test]
fn content_blends_the_products_like_the_seeds_with_their_pairs() {
    // a's pairs: b 3 / (√4 · √3) = 0.87, q 1 / (√4 · √1) = 0.5. With content 0.8, n (first
    // of a's similar list) adds 0.8 × a's strongest pair: 0.69, between the two (all
    // three times a's weight as a seed). Without, personalized shows products like the
    // latest views after its pairs (its fallback).
    let page = vec![product_page("a"), view("a")];
    let personal = |content| content_account(Strategy::Personalized, content);
    assert_eq!(
        zone(&personal(0.0), "me", page.clone(), "GBP"),
        ["b", "q", "n"]
    );
    assert_eq!(
        zone(&personal(0.8), "me", page.clone(), "GBP"),
        ["b", "n", "q"]
    );
    // explain gives the same score and says why.
    let account = personal(0.8);
    track(&account, "me", page, T0);
    let e = explain(&account, Some("me"), None);
    let items = explained(&e);
    assert_eq!(items[1].0, "n");
    assert_eq!(items[1].2, ["similar to a"]);
    let scores: Vec<f64> = e
        .items
        .iter()
        .map(|i| i.score.unwrap_or_default())
        .collect();
    assert!(scores[0] > scores[1] && scores[1] > scores[2], "{scores:?}");
}

#[test]
fn bought_together_with_context_blends_in_the_visitors_purchases() {
    let account = |context: usize| {
        let mut spec = testkit::zone("Z", Strategy::BoughtTogether, 10);
        spec.context = context;
        let account = testkit::account(vec![spec], catalogue());
        // a bought with b in 3 orders, c with d in 2.
        for (pair, times) in [(["a", "b"], 3), (["c", "d"], 2)] {
            for o in 0..times {
                let id = format!("{}{}{o}", pair[0], pair[1]);
                track(&account, &id, vec![order(&id, &pair)], T0);
            }
        }
        account.rebuild_models();
        // The shopper bought c before.
        track(&account, "me", vec![order("mine", &["c"])], T0);
        account
    };
    // On a's page: a's partners alone by default; with context, c's partner too (at
    // half weight, as a purchase), after a's.
    let page = vec![product_page("a")];
    assert_eq!(zone(&account(0), "me", page.clone(), "GBP"), ["b"]);
    assert_eq!(zone(&account(3), "me", page, "GBP"), ["b", "d"]);
}

#[test]
fn viewed_together_follows_a_new_base_without_a_rebuild() {
    let account = account(Strategy::ViewedTogether);
    for v in 0..5 {
        track(&account, &format!("v{v}"), vec![view("a"), view("b")], T0);
        track(&account, &format!("w{v}"), vec![view("a"), view("c")], T0);
    }
    track(&account, "w9", vec![view("a"), view("c")], T0);
    account.rebuild_models();
    assert_eq!(
        zone(&account, "new", vec![product_page("a")], "GBP"),
        ["c", "b"]
    );
    let mut builder = CatalogueBuilder::new();
    for id in ["f", "e", "c", "a"] {
        builder.upsert_product(product(id));
    }
    account.writer().swap_catalogue(builder.build().unwrap());
    assert_eq!(zone(&account, "new", vec![product_page("a")], "GBP"), ["c"]);
    assert_eq!(zone(&account, "new", vec![product_page("c")], "GBP"), ["a"]);
}

#[test]
fn bought_together_ranks_by_co_purchases_and_b2b_products_only_for_their_account() {
    let account = account(Strategy::BoughtTogether);
    for o in 0..3 {
        track(
            &account,
            &format!("o{o}"),
            vec![order(&format!("ac{o}"), &["a", "c"])],
            T0,
        );
    }
    track(&account, "o9", vec![order("ab", &["a", "b", "b2b"])], T0);
    // A duplicate order id counts nothing.
    for _ in 0..5 {
        track(&account, "dup", vec![order("ab", &["a", "b"])], T0);
    }
    account.rebuild_models();
    assert_eq!(
        zone(&account, "new", vec![product_page("a")], "GBP"),
        ["c", "b"]
    );
    let acme = Event::CustomerDetails {
        identity: Identity {
            account_id: Some("acme".into()),
            ..Identity::default()
        },
        details: PersonalDetails::default(),
    };
    assert_eq!(
        zone(&account, "acme-buyer", vec![acme, product_page("a")], "GBP"),
        ["c", "b", "b2b"]
    );
    // Products the visitor bought already are left out.
    assert_eq!(zone(&account, "o0", vec![product_page("a")], "GBP"), ["b"]);
}

#[test]
fn complete_the_look_follows_related_skus_in_order() {
    let account = account(Strategy::CompleteTheLook);
    // SKU-B is b, "c" has no SKU so its id stands in, usd is not priced in GBP,
    // "nope" names nothing.
    assert_eq!(
        zone(&account, "v", vec![product_page("a")], "GBP"),
        ["b", "c"]
    );
    assert!(zone(&account, "v", vec![product_page("b")], "GBP").is_empty());
}

#[test]
fn associated_follows_associated_ids_then_skus() {
    let account = account(Strategy::Associated);
    assert_eq!(
        zone(&account, "v", vec![product_page("a")], "GBP"),
        ["d", "b"]
    );
}

#[test]
fn trending_decays_with_time() {
    let account = account(Strategy::Trending);
    let days = |n: i64| T0 - n * TRENDING_HALF_LIFE_MILLIS;
    // e was popular three half-lives ago (5 views → 0.625 now); f has one view now.
    for v in 0..5 {
        track(&account, &format!("old{v}"), vec![view("e")], days(3));
    }
    track(&account, "now", vec![view("f")], T0);
    account.rebuild_models();
    let ids = zone(&account, "fresh", vec![], "GBP");
    assert_eq!(&ids[..2], ["f", "e"]);
    // Without the recent view, e's old popularity still leads.
    let account2 = self::account(Strategy::Trending);
    for v in 0..5 {
        track(&account2, &format!("old{v}"), vec![view("e")], days(3));
    }
    account2.rebuild_models();
    assert_eq!(zone(&account2, "fresh", vec![], "GBP")[0], "e");
}

#[test]
fn personalized_blends_the_neighbours_of_the_visitors_history() {
    let account = account(Strategy::Personalized);
    for v in 0..4 {
        track(&account, &format!("v{v}"), vec![view("a"), view("b")], T0);
    }
    for v in 0..3 {
        track(&account, &format!("w{v}"), vec![view("d"), view("e")], T0);
        track(
            &account,
            &format!("w{v}"),
            vec![order(&format!("df{v}"), &["d", "f"])],
            T0,
        );
    }
    account.rebuild_models();
    // Viewed d (latest, weight 1) and a (weight 1/2): e (viewed with d by 3 visitors:
    // 3) and f (bought with d in 3 orders: 3) come before b (viewed with a by 4: 4 × 1/2
    // = 2); then products similar to the latest views (c shares their category).
    // Viewed products are left out.
    assert_eq!(
        zone(&account, "me", vec![view("a"), view("d")], "GBP"),
        ["e", "f", "b", "c"]
    );
    // A visitor without history gets nothing from this strategy alone.
    assert!(zone(&account, "nobody", vec![], "GBP").is_empty());
}

#[test]
fn personalized_starts_from_as_many_views_as_its_history_says() {
    let account = |history: usize| {
        let mut spec = testkit::zone("Z", Strategy::Personalized, 2);
        spec.history = history;
        spec.long_term = 0.0;
        // Weights by count (no damping), so that the sums below are plain.
        let models = ModelSettings {
            partner_damping: 0.0,
            seed_damping: 0.0,
            ..ModelSettings::default()
        };
        let account = testkit::account_with_models(vec![spec], catalogue(), models);
        // a and b viewed together by 8 visitors, d and e by 3.
        for v in 0..8 {
            track(&account, &format!("v{v}"), vec![view("a"), view("b")], T0);
        }
        for v in 0..3 {
            track(&account, &format!("w{v}"), vec![view("d"), view("e")], T0);
        }
        account.rebuild_models();
        account
    };
    // Latest view d (weight 1), a before it (recency 0.8): b scores 8 × 0.8 = 6.4, e 3.
    assert_eq!(
        zone(&account(10), "me", vec![view("a"), view("d")], "GBP"),
        ["b", "e"]
    );
    // From the latest view only: e first, b not reached through co-views.
    assert_eq!(
        zone(&account(1), "me", vec![view("a"), view("d")], "GBP")[0],
        "e"
    );
}

#[test]
fn personalized_starts_from_the_basket_and_the_latest_purchases() {
    let account = account(Strategy::Personalized);
    // c bought with d in 5 orders, a with b in 3, e with f in 2.
    for (pair, times) in [(["c", "d"], 5), (["a", "b"], 3), (["e", "f"], 2)] {
        for o in 0..times {
            let id = format!("{}{}{o}", pair[0], pair[1]);
            track(&account, &id, vec![order(&id, &pair)], T0);
        }
    }
    track(&account, "me", vec![order("me-1", &["c"])], T0);
    track(&account, "me", vec![order("me-2", &["a"])], T0);
    account.rebuild_models();
    // No views: the latest purchase a weighs 1/2, c before it 1/4, so b (3 × 1/2) comes
    // before d (5 × 1/4).
    assert_eq!(zone(&account, "me", vec![], "GBP"), ["b", "d"]);
    // A basket alone is a history too.
    let basket = Event::SetBasket {
        items: vec![BasketLine {
            id: "e".into(),
            qty: 1.0,
            unit_price: 10.0,
        }],
    };
    assert_eq!(zone(&account, "browser", vec![basket], "GBP"), ["f"]);
}

#[test]
fn basket_cross_sell_follows_co_purchases_then_related_products() {
    let account = account(Strategy::BasketCrossSell);
    for o in 0..2 {
        track(
            &account,
            &format!("o{o}"),
            vec![order(&format!("ad{o}"), &["a", "d"])],
            T0,
        );
    }
    track(&account, "o9", vec![order("ae", &["a", "e"])], T0);
    account.rebuild_models();
    let basket = Event::SetBasket {
        items: vec![BasketLine {
            id: "a".into(),
            qty: 1.0,
            unit_price: 10.0,
        }],
    };
    // Bought with a: d (twice), e; then a's related products b and c.
    assert_eq!(
        zone(&account, "shopper", vec![basket], "GBP"),
        ["d", "e", "b", "c"]
    );
    assert!(zone(&account, "empty-basket", vec![], "GBP").is_empty());
}

/// The category or brand ids of the zone for `visitor` after `events`.
fn names(account: &Account, visitor: &str, events: Vec<Event>) -> Vec<String> {
    let outcome = account.serve(ServeRequest {
        search: None,
        visitor_id: Some(visitor.into()),
        session_id: None,
        currency: None,
        events: events.into(),
        zones: vec!["Z".into()].into(),
        now: T0 + 1_000,
    });
    outcome.zones[0].names.clone()
}

fn branded() -> Catalogue {
    let mut builder = CatalogueBuilder::new();
    for (id, category, brand) in [
        ("p1", "shoes", "nike"),
        ("p2", "hats", "acme"),
        ("p3", "bags", "acme"),
        ("p4", "belts", "zed"),
    ] {
        builder.upsert_product(Product {
            categories: vec![category.into()],
            brand: Some(brand.into()),
            ..product(id)
        });
    }
    builder.build().unwrap()
}

fn category_page(category: &str) -> Event {
    Event::PageView {
        page_type: PageType::CategoryListingPage,
        product_id: None,
        category_id: Some(category.into()),
        brand_id: None,
    }
}

#[test]
fn category_affinity_puts_the_visitors_categories_first_then_popular_ones() {
    let account = account_with(Strategy::CategoryAffinity, branded());
    // Crowd: bags most popular, then belts.
    for v in 0..5 {
        track(&account, &format!("c{v}"), vec![view("p3")], T0);
    }
    for v in 0..3 {
        track(&account, &format!("d{v}"), vec![view("p4")], T0);
    }
    account.rebuild_models();
    // This visitor browsed hats twice and shoes once.
    track(
        &account,
        "me",
        vec![view("p2"), view("p1"), category_page("hats")],
        T0,
    );
    assert_eq!(
        names(&account, "me", vec![]),
        ["hats", "shoes", "bags", "belts"]
    );
    // On the hats page, hats itself is left out; unknown categories never show.
    assert_eq!(
        names(&account, "me", vec![category_page("hats")]),
        ["shoes", "bags", "belts"]
    );
    // A visitor with no known category of their own sees the popular ones; what "me"
    // browsed joins them at the next rebuild.
    track(
        &account,
        "ghost",
        vec![category_page("no-such-category")],
        T0,
    );
    assert_eq!(names(&account, "ghost", vec![]), ["bags", "belts"]);
    account.rebuild_models();
    let mut all = names(&account, "ghost", vec![]);
    assert_eq!(all[0], "bags");
    all.sort();
    assert_eq!(all, ["bags", "belts", "hats", "shoes"]);
}

#[test]
fn brand_affinity_puts_the_visitors_brands_first_then_popular_ones() {
    let account = account_with(Strategy::BrandAffinity, branded());
    for v in 0..4 {
        track(&account, &format!("z{v}"), vec![view("p4")], T0);
    }
    account.rebuild_models();
    track(&account, "me", vec![view("p1")], T0);
    assert_eq!(names(&account, "me", vec![]), ["nike", "zed"]);
}

fn login(email: &str) -> Event {
    Event::CustomerDetails {
        identity: Identity {
            email: Some(email.into()),
            ..Identity::default()
        },
        details: PersonalDetails::default(),
    }
}

#[test]
fn a_shopper_logging_in_on_a_second_device_gets_the_same_history() {
    let account = account(Strategy::RecentlyViewed);
    track(
        &account,
        "laptop",
        vec![view("a"), view("b"), login("Ann@Example.com")],
        T0,
    );
    track(&account, "phone", vec![view("c")], T0);
    // Before logging in, the phone knows only its own view.
    assert_eq!(zone(&account, "phone", vec![], "GBP"), ["c"]);
    // Logged in with the same email (any case): the laptop's views follow its own.
    assert_eq!(
        zone(&account, "phone", vec![login("ann@example.com")], "GBP"),
        ["c", "b", "a"]
    );
    // And the laptop sees the phone's.
    assert_eq!(zone(&account, "laptop", vec![], "GBP"), ["b", "a", "c"]);
    // A shared B2B account id links nobody's history.
    let acme = |visitor: &str| {
        track(
            &account,
            visitor,
            vec![Event::CustomerDetails {
                identity: Identity {
                    account_id: Some("acme".into()),
                    ..Identity::default()
                },
                details: PersonalDetails::default(),
            }],
            T0,
        )
    };
    track(&account, "colleague-1", vec![view("d")], T0);
    acme("colleague-1");
    acme("colleague-2");
    assert!(zone(&account, "colleague-2", vec![], "GBP").is_empty());
}

// ---------------------------------------------------------------- explain

fn explain(account: &Account, visitor: Option<&str>, product: Option<&str>) -> Explanation {
    account
        .explain(&ExplainRequest {
            zone: "Z".into(),
            visitor_id: visitor.map(Into::into),
            product: product.map(Into::into),
            currency: None,
            now: T0 + 1_000,
        })
        .unwrap()
}

fn id_of(explanation: &Explanation, idx: ProductIdx) -> String {
    explanation.catalogue.product(idx).unwrap().id.to_string()
}

/// The explained items as (id, strategy, facts with ids for indexes).
fn explained(e: &Explanation) -> Vec<(String, Strategy, Vec<String>)> {
    e.items
        .iter()
        .map(|item| {
            let facts = item
                .facts
                .iter()
                .map(|fact| match fact {
                    Fact::ViewedWith {
                        with,
                        strength,
                        weight,
                    } => {
                        format!("viewed with {} {strength:.2} x{weight}", id_of(e, *with))
                    }
                    Fact::BoughtWith {
                        with,
                        strength,
                        weight,
                    } => {
                        format!("bought with {} {strength:.2} x{weight}", id_of(e, *with))
                    }
                    Fact::SimilarTo(with) => format!("similar to {}", id_of(e, *with)),
                    Fact::ListedBy(by) => format!("listed by {}", id_of(e, *by)),
                    Fact::Popularity { rank, .. } => format!("rank {rank}"),
                    Fact::UnitsSold(units) => format!("{units} sold"),
                    Fact::RecentlyViewed(at) => format!("viewed {at}"),
                    other => format!("{other:?}"),
                })
                .collect();
            (id_of(e, item.item.product), item.strategy, facts)
        })
        .collect()
}

#[test]
fn explain_gives_the_evidence_of_each_strategy_family() {
    // Co-views and co-purchases: a-b viewed by 3 visitors, a and d bought together twice.
    let co = |strategy: Strategy| {
        let account = account(strategy);
        for v in 0..3 {
            track(&account, &format!("v{v}"), vec![view("a"), view("b")], T0);
        }
        for o in 0..2 {
            let id = format!("ad{o}");
            track(&account, &id, vec![order(&id, &["a", "d"])], T0);
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
    let e = explain(&co(Strategy::BoughtTogether), None, Some("a"));
    assert_eq!(
        explained(&e)[0],
        (
            "d".into(),
            Strategy::BoughtTogether,
            vec!["bought with a 1.00 x1".into()]
        )
    );
    // personalized: the visitor's latest view a (weight 1, and the long-term part's 2)
    // gives b; d comes from a's co-purchases.
    let personal = co(Strategy::Personalized);
    track(&personal, "me", vec![view("a")], T0);
    let e = explain(&personal, Some("me"), None);
    assert!(e.visitor_known);
    let items = explained(&e);
    assert_eq!(items[0].2, ["viewed with a 1.00 x3"]);
    assert_eq!(items[1].2, ["bought with a 1.00 x3"]);
    // Products similar to the latest views come after, with the product they resemble.
    assert!(
        items[2..]
            .iter()
            .all(|(_, _, facts)| facts == &["similar to a"]),
        "{items:?}"
    );
    // basket_cross_sell: the basket's co-purchases.
    let cross_sell = co(Strategy::BasketCrossSell);
    let basket = Event::SetBasket {
        items: vec![BasketLine {
            id: "a".into(),
            qty: 1.0,
            unit_price: 10.0,
        }],
    };
    track(&cross_sell, "shopper", vec![basket], T0);
    let items = explained(&explain(&cross_sell, Some("shopper"), None));
    assert_eq!(items[0].2, ["bought with a 1.00 x1"]);
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
    let basket = Event::SetBasket {
        items: vec![BasketLine {
            id: "c".into(),
            qty: 1.0,
            unit_price: 10.0,
        }],
    };
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
        spec.context = 3;
        spec.content = 0.5;
        zones.push((
            format!("{} with context and content", strategy.name()),
            spec,
        ));
    }
    let mut spec = testkit::zone("Z", Strategy::Personalized, 10);
    spec.content = 0.5;
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
            ) || e.spec.context > 0;
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
