//! `similar_sessions` and `personalized`'s session part through an account: sessions
//! sharing products with the shopper's current one give theirs, the most similar
//! first; the sessions survive a state snapshot, and an erased shopper's are gone.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

#[expect(
    dead_code,
    reason = "the helpers shared with the strategy tests, not all read here"
)]
mod common;

use common::*;
use vitrine_engine::Account;
use vitrine_engine::catalogue::{Catalogue, Product};
use vitrine_engine::recommend::Fact;
use vitrine_engine::zone::{Strategy, ZoneSpec};
use vitrine_testkit::{self as testkit, priced};

/// a..f, and 30 fillers `y0`..`y29`, priced in GBP.
fn shop() -> Catalogue {
    let ids = ["a", "b", "c", "d", "e", "f"]
        .map(String::from)
        .into_iter()
        .chain((0..30).map(|n| format!("y{n}")));
    testkit::catalogue(ids.map(|id| Product {
        prices: priced(1000, "GBP"),
        ..testkit::product(&id)
    }))
}

fn account_of(spec: ZoneSpec) -> Account {
    testkit::account(vec![spec], shop())
}

/// One session: `views` in one request.
fn session(account: &Account, visitor: &str, views: &[&str]) {
    track(
        account,
        visitor,
        views.iter().map(|id| view(id)).collect(),
        T0,
    );
}

#[test]
fn similar_sessions_ranks_the_products_of_the_sessions_most_like_the_shoppers() {
    let account = account_of(testkit::zone("Z", Strategy::SimilarSessions, 10));
    // The shopper's session will be a then b: b weighs 1, a 0.9.
    session(&account, "v1", &["a", "b", "c"]); // similarity 1.9
    session(&account, "v2", &["b", "d"]); // 1.0
    session(&account, "v3", &["a", "e"]); // 0.9
    session(&account, "v4", &["f", "y1"]); // shares nothing
    assert_eq!(
        zone(&account, "shopper", vec![view("a"), view("b")], "GBP"),
        ["c", "d", "e"]
    );
    // The shopper's latest views count, whichever session they were in (a client that
    // sends no session id starts one a request).
    track(&account, "split", vec![view("a")], T0);
    assert_eq!(
        zone(&account, "split", vec![view("b")], "GBP"),
        ["c", "d", "e"]
    );
    // Another session of the same product sums its similarity: e now 1.9 + 0.9.
    session(&account, "v5", &["b", "a", "e"]);
    assert_eq!(
        zone(&account, "shopper2", vec![view("a"), view("b")], "GBP"),
        ["e", "c", "d"]
    );
    // A session of no shared product finds nothing: the zone is empty (no fallback).
    assert!(zone(&account, "shopper3", vec![view("y9")], "GBP").is_empty());
    // Its explanation gives the summed similarity.
    let explanation = explain(&account, Some("shopper2"), None);
    let facts: Vec<&Fact> = explanation
        .items
        .iter()
        .flat_map(|item| item.facts.iter())
        .collect();
    assert!(
        facts.iter().any(
            |f| matches!(f, Fact::InSimilarSessions { score, .. } if (score - 2.8).abs() < 1e-5)
        ),
        "{facts:?}"
    );
}

#[test]
fn sessions_of_baskets_and_orders_find_a_shoppers_next_product_without_views() {
    let account = account_of(testkit::zone("Z", Strategy::SimilarSessions, 10));
    // A grocery's shoppers: baskets and orders, no product views.
    for n in 0..3 {
        let basket = basket(&["a", "b"]);
        track(
            &account,
            &format!("o{n}"),
            vec![basket, order(&format!("o{n}"), &["a", "b", "c"])],
            T0,
        );
    }
    let basket = basket(&["a", "b"]);
    assert_eq!(zone(&account, "shopper", vec![basket], "GBP"), ["c"]);
}

#[test]
fn personalized_blends_in_the_products_of_similar_sessions_by_its_sessions_weight() {
    let spec = |sessions: f64| {
        let mut spec = testkit::zone("Z", Strategy::Personalized, 10);
        spec.recipe.sessions = sessions;
        spec
    };
    let fill = |account: &Account| {
        // Five sessions go from a and b, through ten fillers, to d: too far for a
        // co-view pair (10 views), not for a session. Five more pair a with c.
        for n in 0..5 {
            let fillers: Vec<String> = (0..10).map(|k| format!("y{}", (n * 3 + k) % 30)).collect();
            let mut views = vec!["a", "b"];
            views.extend(fillers.iter().map(String::as_str));
            views.push("d");
            session(account, &format!("long{n}"), &views);
            session(account, &format!("short{n}"), &["a", "c"]);
        }
        account.rebuild_models();
    };
    let without = account_of(spec(0.0));
    fill(&without);
    let shown = zone(&without, "shopper", vec![view("a"), view("b")], "GBP");
    assert!(shown.contains(&"c".to_owned()), "{shown:?}");
    assert!(!shown.contains(&"d".to_owned()), "{shown:?}");
    // Weighed in, d (in the sessions most like the shopper's) comes first.
    let with = account_of(spec(2.0));
    fill(&with);
    let shown = zone(&with, "shopper", vec![view("a"), view("b")], "GBP");
    assert_eq!(shown.first().map(String::as_str), Some("d"), "{shown:?}");
}

#[test]
fn sessions_survive_a_state_snapshot_and_an_erased_shoppers_are_gone() {
    let account = account_of(testkit::zone("Z", Strategy::SimilarSessions, 10));
    session(&account, "v1", &["a", "b", "c"]);
    session(&account, "v2", &["b", "d"]);
    let mut entries = Vec::new();
    account.export_state(&mut |entry| entries.push(entry));
    let restored = account_of(testkit::zone("Z", Strategy::SimilarSessions, 10));
    for entry in entries {
        restored.restore_entry(entry);
    }
    let asked = || vec![view("a"), view("b")];
    assert_eq!(zone(&account, "shopper", asked(), "GBP"), ["c", "d"]);
    assert_eq!(zone(&restored, "shopper", asked(), "GBP"), ["c", "d"]);
    // Erasing v1 forgets its session: c is no longer found.
    restored.forget("v1");
    assert_eq!(zone(&restored, "shopper2", asked(), "GBP"), ["d"]);
}
