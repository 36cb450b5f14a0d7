//! `buy_again` through an account: what it shows, what other zones leave out, and what
//! a state snapshot and an erasure do to it.

use super::*;
use crate::catalogue::Product;
use crate::event::{BasketLine, Event, Identity, Order, PersonalDetails};
use crate::testing;
use crate::zone::Strategy;

const T0: UnixMillis = 1_800_000_000_000;
const DAY: UnixMillis = 86_400_000;

fn account() -> Account {
    let products = ["milk", "bread", "tea", "eggs", "jam"].map(|id| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(id)
    });
    let mut again = testing::zone("BA", Strategy::BuyAgain, 10);
    again.fallback = vec![Strategy::Trending];
    let zones = vec![
        again,
        testing::zone("BA-ONLY", Strategy::BuyAgain, 10),
        testing::zone("TR", Strategy::Trending, 10),
    ];
    testing::account(zones, testing::catalogue(products))
}

fn lines(products: &[&str]) -> Vec<BasketLine> {
    products
        .iter()
        .map(|id| BasketLine {
            id: (*id).into(),
            qty: 1.0,
            unit_price: 1.0,
        })
        .collect()
}

fn order(id: &str, user: Option<&str>, products: &[&str]) -> Event {
    Event::Order(Box::new(Order {
        order_id: id.into(),
        items: lines(products),
        total: None,
        identity: Identity {
            user_id: user.map(Into::into),
            ..Identity::default()
        },
        details: PersonalDetails::default(),
    }))
}

fn serve(
    account: &Account,
    visitor: &str,
    events: Vec<Event>,
    now: UnixMillis,
) -> Vec<Vec<String>> {
    let outcome = account.serve(ServeRequest {
        search: None,
        visitor_id: Some(visitor.into()),
        session_id: None,
        currency: None,
        events: events.into(),
        zones: vec!["BA".into(), "BA-ONLY".into(), "TR".into()].into(),
        now,
        context: Default::default(),
    });
    let catalogue = account.catalogue();
    outcome
        .zones
        .iter()
        .map(|zone| {
            zone.items
                .iter()
                .filter_map(|i| catalogue.product(i.product).map(|p| p.id.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn buy_again_shows_the_products_bought_in_most_orders_then_the_latest_and_others_leave_them_out() {
    let account = account();
    serve(
        &account,
        "v",
        vec![order("o1", None, &["milk", "bread"])],
        T0,
    );
    serve(
        &account,
        "v",
        vec![order("o2", None, &["tea", "milk"])],
        T0 + DAY,
    );
    serve(
        &account,
        "v",
        vec![order("o3", None, &["eggs"])],
        T0 + 2 * DAY,
    );
    let zones = serve(&account, "v", vec![], T0 + 3 * DAY);
    // milk in two orders, then eggs (latest), tea, bread; trending fills after them.
    assert_eq!(zones[1], vec!["milk", "eggs", "tea", "bread"]);
    assert_eq!(zones[0][..4], zones[1][..]);
    assert_eq!(zones[0][4..], vec!["jam"], "the fallback fills the rest");
    // Every other zone leaves the bought products out.
    assert_eq!(zones[2], vec!["jam"]);
    // A product in the basket is not shown again.
    let basket = Event::SetBasket {
        items: lines(&["milk"]),
    };
    let zones = serve(&account, "v", vec![basket], T0 + 3 * DAY);
    assert_eq!(zones[1], vec!["eggs", "tea", "bread"]);
    // A new visitor has bought nothing: only the fallback.
    let zones = serve(&account, "new", vec![], T0 + 3 * DAY);
    assert!(zones[1].is_empty());
    assert_eq!(zones[0].len(), 5);
}

#[test]
fn buy_again_adds_up_the_orders_of_the_same_shopper_on_other_devices() {
    let account = account();
    serve(
        &account,
        "phone",
        vec![order("o1", Some("u-1"), &["tea"])],
        T0,
    );
    serve(
        &account,
        "laptop",
        vec![order("o2", Some("u-1"), &["tea", "jam"])],
        T0 + DAY,
    );
    serve(
        &account,
        "laptop",
        vec![order("o3", Some("u-1"), &["jam"])],
        T0 + 2 * DAY,
    );
    serve(
        &account,
        "phone",
        vec![order("o4", Some("u-1"), &["tea", "eggs"])],
        T0 + 3 * DAY,
    );
    // On the phone: tea in three orders (two here, one on the laptop), jam in two.
    let zones = serve(&account, "phone", vec![], T0 + 4 * DAY);
    assert_eq!(zones[1], vec!["tea", "jam", "eggs"]);
}

#[test]
fn repurchases_survive_a_state_snapshot_and_go_with_an_erasure() {
    let account = account();
    serve(
        &account,
        "v",
        vec![order("o1", Some("u-9"), &["bread", "tea"])],
        T0,
    );
    serve(
        &account,
        "v",
        vec![order("o2", Some("u-9"), &["tea"])],
        T0 + DAY,
    );
    let before = serve(&account, "v", vec![], T0 + 2 * DAY);
    assert_eq!(before[1], vec!["tea", "bread"]);

    let restored = self::account();
    let mut entries = Vec::new();
    account.export_state(&mut |entry| entries.push(entry));
    assert!(entries.iter().any(
        |e| matches!(e, crate::state::StateEntry::Repurchases { visitor, .. } if visitor == "v")
    ));
    // Restored in reverse order: the repurchases before the visitor's own entry.
    for entry in entries.into_iter().rev() {
        restored.restore_entry(entry);
    }
    assert_eq!(serve(&restored, "v", vec![], T0 + 2 * DAY)[1], before[1]);

    restored.forget("u-9");
    let mut left = Vec::new();
    restored.export_state(&mut |entry| left.push(entry));
    assert!(
        !left
            .iter()
            .any(|e| matches!(e, crate::state::StateEntry::Repurchases { .. }))
    );
    assert!(serve(&restored, "v", vec![], T0 + 3 * DAY)[1].is_empty());
}
