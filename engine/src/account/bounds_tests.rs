//! The account's bounds: visitors evicted inline when the background pass falls
//! behind, idle and least recently seen first with the aggregates kept, and made-up
//! product ids that do not grow the counters.

use super::tests::{T0, account, order, request};
use super::*;
use crate::event::Event;

/// The visitor bound holds with no background pass at all: a request that finds the
/// account more than 1 % over it evicts the least recently seen, inline.
#[test]
fn the_visitor_bound_holds_without_the_background_pass() {
    let account = account();
    let settings = (*account.settings.load_full()).clone();
    account.replace_settings(AccountSettings {
        max_visitors: Some(100),
        ..settings
    });
    let view = |id: &str| Event::ProductView { id: id.into() };
    let mut most = 0;
    for i in 0..1_000i64 {
        account.serve(request(
            &format!("n{i:04}"),
            None,
            vec![view("a")],
            T0 + i * 1_000,
        ));
        most = most
            .max(account.visitor_count())
            .max(account.session_count());
    }
    assert!(most <= 101, "{most} visitors or sessions held, over 101");
    let inline = account.evicted_inline();
    assert!(
        inline.visitors >= 899 && inline.sessions >= 899,
        "{inline:?}"
    );
    // The most recent visitors are the ones kept.
    assert!(account.visitor("n0999").is_some());
    assert!(account.visitor("n0000").is_none());
}

#[test]
fn eviction_drops_idle_then_least_recently_seen_visitors_and_keeps_aggregates() {
    let account = account();
    let view = |id: &str| Event::ProductView { id: id.into() };
    // 200 visitors, visitor i seen at T0 + i seconds, each with a session and an order.
    for i in 0..200i64 {
        let visitor = format!("v{i:03}");
        let now = T0 + i * 1_000;
        account.serve(request(&visitor, None, vec![view("a")], now));
        account.serve(request(
            &visitor,
            None,
            vec![order(
                &format!("o{i:03}"),
                &format!("{visitor}@example.com"),
            )],
            now,
        ));
    }
    let aggregates = |account: &Account| {
        let counter = account
            .models
            .counters
            .get("a")
            .map(|c| (c.units, c.popularity.rank_key()));
        (
            counter,
            account.models.counters.len(),
            account.models.coview.len(),
        )
    };
    let before = aggregates(&account);
    assert_eq!(before.0.map(|(units, _)| units), Some(200));
    assert_eq!(account.visitor_count(), 200);
    let bounds = MemoryBounds {
        max_visitors: 100,
        // Visitors not seen in the last 150 s (of 200) are idle.
        visitor_idle_millis: 150_000,
        max_sessions: 20,
        max_order_ids: 50,
    };
    let now = T0 + 200_000;
    assert!(account.over_bounds(&bounds));
    let evicted = account.evict(&bounds, now);
    // Visitors last seen before T0 + 50 s were idle; of the 150 left, the 51 least
    // recently seen go, down to 99 % of the bound.
    assert_eq!(evicted.idle_visitors, 50, "{evicted:?}");
    assert_eq!(evicted.visitors, 51, "{evicted:?}");
    assert_eq!(account.visitor_count(), 99);
    assert!(account.session_count() <= 20);
    assert!(account.order_count() <= 50);
    assert!(!account.over_bounds(&bounds));
    // The most recently seen are kept with their history; the least recent are gone.
    let kept = account.visitor("v199").expect("the latest visitor is kept");
    assert_eq!(kept.recent_views.len(), 1);
    assert!(account.visitor("v000").is_none());
    assert!(account.visitor("v100").is_none());
    assert!(account.visitor("v101").is_some());
    // Newest order ids are remembered, the oldest forgotten.
    assert!(account.has_order("o199"));
    assert!(!account.has_order("o000"));
    // The evicted visitors' identity links go with the next sweep.
    assert_eq!(account.identity_count(), 200);
    assert_eq!(account.unlink_missing_visitors(), 101);
    assert_eq!(account.identity_count(), 99);
    // Aggregates are untouched.
    assert_eq!(aggregates(&account), before);
    // Nothing is over the bounds: another pass drops nothing.
    assert_eq!(account.evict(&bounds, now), Evicted::default());
}

#[test]
fn made_up_product_ids_do_not_grow_the_counters_without_bound() {
    let account = account();
    let made_up = crate::models::UNCATALOGUED_KEYS + 5_000;
    let events: Vec<Event> = (0..made_up)
        .map(|i| Event::ProductView {
            id: format!("no-such-product-{i}").into(),
        })
        .chain(["a", "b", "c"].map(|id| Event::ProductView { id: id.into() }))
        .collect();
    account.serve(request("bot", None, events, T0));
    // Made-up ids while the keys are fewer than the catalogue's products plus the
    // allowance, then the catalogue's own: at most twice the catalogue plus it.
    let room = crate::models::UNCATALOGUED_KEYS + 2 * 3;
    assert!(
        account.models.product_keys.len() <= room,
        "{}",
        account.models.product_keys.len()
    );
    assert!(
        account.models.counters.len() <= room,
        "{}",
        account.models.counters.len()
    );
    // The catalogue's products are still counted once the room is used up.
    assert!(account.models.counters.get("c").is_some());
    assert_eq!(
        account
            .visitor("bot")
            .unwrap()
            .recent_views
            .back()
            .map(compact_str::CompactString::as_str),
        Some("c")
    );
}
