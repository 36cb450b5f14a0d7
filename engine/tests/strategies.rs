//! Data-driven strategy tests: a small catalogue and a scripted sequence of events in,
//! the ordered product ids of a zone out.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

mod common;

use common::*;
use vitrine_engine::Account;
use vitrine_engine::account::ServeRequest;
use vitrine_engine::catalogue::{Catalogue, CatalogueBuilder, Product};
use vitrine_engine::event::{Event, Identity, PageType, PersonalDetails};
use vitrine_engine::models::{ModelSettings, TRENDING_HALF_LIFE_MILLIS};
use vitrine_engine::zone::{Strategy, ZoneSpec};
use vitrine_testkit::{self as testkit};

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
    let basket = basket(&["b"]);
    assert_eq!(
        zone(&account, "buyer", vec![basket, product_page("a")], "GBP"),
        ["c"]
    );
}

/// A basket line put in from elsewhere than its product's page (a listing, a zone) is
/// a step of the visit: it pairs with the views before it as a view would. One put in
/// from its own page was paired when viewed, and is not paired again.
#[test]
fn a_basket_line_put_in_without_a_view_pairs_as_a_view_once() {
    let account = account(Strategy::ViewedTogether);
    // a then b, b put in the basket from its own page: a–b counted once each time; a
    // then c viewed; d put in the basket from a's page, never viewed: paired with a
    // all the same.
    let visits = [
        ("page", 2, vec![view("a"), view("b"), basket(&["b"])]),
        ("view", 3, vec![view("a"), view("c")]),
        ("list", 4, vec![view("a"), basket(&["d"])]),
    ];
    for (name, visitors, events) in visits {
        for v in 0..visitors {
            track(&account, &format!("{name}{v}"), events.clone(), T0);
        }
    }
    account.rebuild_models();
    assert_eq!(
        zone(&account, "new", vec![product_page("a")], "GBP"),
        ["d", "c", "b"]
    );
    // ... and it is the visitor's latest step: the zone's anchor on a page without one.
    track(&account, "list9", vec![view("a"), basket(&["d"])], T0);
    assert_eq!(zone(&account, "list9", vec![], "GBP"), ["a"]);
}

/// An order line new to the basket (bought from a listing, or put in last before
/// checkout without a basket sync) is a step of the visit as a basket line is; one
/// bought from its own page, or put in the basket before, is not paired again.
#[test]
fn an_order_line_new_to_the_basket_pairs_as_a_view_once() {
    let account = account(Strategy::ViewedTogether);
    // a viewed, b put in the basket from a listing, then ordered with e, which was
    // never in the basket: b pairs with a (1) when put in, e with b (1) and a (1/2)
    // when ordered, and b not again. f is bought from its own page: paired once, when
    // viewed. c is viewed after a.
    for v in 0..5 {
        let events = vec![
            view("a"),
            basket(&["b"]),
            order(&format!("list{v}"), &["b", "e"]),
        ];
        track(&account, &format!("list{v}"), events, T0);
    }
    for v in 0..3 {
        track(
            &account,
            &format!("view{v}"),
            vec![view("a"), view("c")],
            T0,
        );
    }
    for v in 0..2 {
        let events = vec![view("a"), view("f"), order(&format!("page{v}"), &["f"])];
        track(&account, &format!("page{v}"), events, T0);
    }
    account.rebuild_models();
    // a's list: b 5, c 3, e 5 × 1/2, f 2 (4 were it paired again when bought).
    assert_eq!(
        zone(&account, "new", vec![product_page("a")], "GBP"),
        ["b", "c", "e", "f"]
    );
    // e's list: b, the line before it, 5; a 5 × 1/2.
    assert_eq!(
        zone(&account, "new", vec![product_page("e")], "GBP"),
        ["b", "a"]
    );
}

/// Neighbour lists are kept in dense ids: when a catalogue with a new base (a full
/// feed, here in another order, so every dense id changes) is swapped in, the lists
/// move with it before any rebuild, and products the new base lacks drop out.
#[test]
fn viewed_together_with_context_blends_in_the_visitors_latest_views() {
    let account = |context: usize| {
        let mut spec = testkit::zone("Z", Strategy::ViewedTogether, 10);
        spec.recipe.context = context;
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
    spec.recipe.content = content;
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
        spec.recipe.context = context;
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
        identity: Box::new(Identity {
            account_id: Some("acme".into()),
            ..Identity::default()
        }),
        details: Box::new(PersonalDetails::default()),
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
            &format!("o{v}"),
            vec![order(&format!("df{v}"), &["d", "f"])],
            T0,
        );
    }
    account.rebuild_models();
    // Viewed d (latest, weighing 2 with the long-term part) and a (1.8): f first
    // (bought with d in 3 orders, a co-purchase list not damped by d's own total, and
    // viewed with it: an order's lines new to the basket are steps of the visit); then
    // b (viewed with a by 4: 4 / √(4 · 4) = 1, times 1.8) before e (viewed with d by 3,
    // d's co-view total 6 with f's: 3 / √(6 · 3) = 0.71, times 2); then products
    // similar to the latest views (c shares their category). Viewed products are left
    // out.
    assert_eq!(
        zone(&account, "me", vec![view("a"), view("d")], "GBP"),
        ["f", "b", "e", "c"]
    );
    // A visitor without history gets nothing from this strategy alone.
    assert!(zone(&account, "nobody", vec![], "GBP").is_empty());
}

/// An account with one `personalized` zone of `count` products, as `configure` sets
/// it, whose pairs weigh by count (no damping), so that the sums a test works out are
/// plain.
fn undamped_personalized(count: usize, configure: impl FnOnce(&mut ZoneSpec)) -> Account {
    let mut spec = testkit::zone("Z", Strategy::Personalized, count);
    configure(&mut spec);
    let models = ModelSettings {
        partner_damping: 0.0,
        seed_damping: 0.0,
        ..ModelSettings::default()
    };
    testkit::account_with_models(vec![spec], catalogue(), models)
}

#[test]
fn personalized_starts_from_as_many_views_as_its_history_says() {
    let account = |history: usize| {
        let account = undamped_personalized(2, |spec| {
            spec.recipe.history = history;
            spec.recipe.long_term = 0.0;
        });
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
fn personalized_blends_popularity_in_proportion_to_it() {
    let account = undamped_personalized(5, |spec| {
        spec.recipe.history = 1;
        spec.recipe.long_term = 0.0;
        spec.recipe.sessions = 0.0;
        spec.recipe.popularity = 0.5;
    });
    // a viewed with b by 8 visitors, with c by 2; d and e viewed alone by 16 each, f
    // by 2. Views: d, e 16; a 10; b 8; c, f 2.
    for v in 0..8 {
        track(&account, &format!("ab{v}"), vec![view("a"), view("b")], T0);
    }
    for v in 0..2 {
        track(&account, &format!("ac{v}"), vec![view("a"), view("c")], T0);
        track(&account, &format!("f{v}"), vec![view("f")], T0);
    }
    for v in 0..16 {
        track(&account, &format!("d{v}"), vec![view("d")], T0);
        track(&account, &format!("e{v}"), vec![view("e")], T0);
    }
    account.rebuild_models();
    // From a: b scores 8 and c 2 (the best pair: 8). Popularity adds 0.5 × 8 times a
    // product's views over the most viewed's (16): b 2, c 0.5, d and e 4 each, f 0.5.
    // So b 10, d 4, e 4 (a tie, by id), c 2.5, f 0.5: the popular products no pair
    // scored come between the others in their place.
    assert_eq!(
        zone(&account, "me", vec![view("a")], "GBP"),
        ["b", "d", "e", "c", "f"]
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
    // The shopper's orders as the store's order history reports them: purchases, not
    // steps of a visit (an order line new to the basket is one).
    track(
        &account,
        "me",
        vec![customer_order("me", "me-1", &["c"])],
        T0,
    );
    track(
        &account,
        "me",
        vec![customer_order("me", "me-2", &["a"])],
        T0,
    );
    account.rebuild_models();
    // No views: the latest purchase a weighs 0.5 (a quarter, and a quarter of the
    // long-term part), c before it 0.45; the co-purchase lists are damped by the
    // partner's total only, so d (5 / √5 × 0.45 = 1.01) comes before b (3 / √3 × 0.5 =
    // 0.87).
    assert_eq!(
        zone(&account, "customer:user:me", vec![], "GBP"),
        ["d", "b"]
    );
    // A basket alone is a history too: e's pair f, then (e put in the basket without
    // a view of its page is a step of the visit, as a view is) the products like e.
    let basket = basket(&["e"]);
    assert_eq!(
        zone(&account, "browser", vec![basket], "GBP"),
        ["f", "a", "b", "c", "d"]
    );
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
    let basket = basket(&["a"]);
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
        context: Default::default(),
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
        identity: Box::new(Identity {
            email: Some(email.into()),
            ..Identity::default()
        }),
        details: Box::new(PersonalDetails::default()),
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
                identity: Box::new(Identity {
                    account_id: Some("acme".into()),
                    ..Identity::default()
                }),
                details: Box::new(PersonalDetails::default()),
            }],
            T0,
        )
    };
    track(&account, "colleague-1", vec![view("d")], T0);
    acme("colleague-1");
    acme("colleague-2");
    assert!(zone(&account, "colleague-2", vec![], "GBP").is_empty());
}
