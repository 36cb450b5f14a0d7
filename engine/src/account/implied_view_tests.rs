//! A product put in the basket that the shopper has not viewed lately counts as
//! viewed ([`Account::imply_view`]).

use super::tests::{T0, request};
use super::*;
use crate::catalogue::Product;
use crate::event::{BasketLine, Event, Identity, Order, PersonalDetails};
use crate::models::PairCount;
use crate::testing;
use crate::zone::Strategy;

fn grocer() -> Account {
    let products = ["a", "b", "c", "d"].map(|id| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(id)
    });
    let zone = testing::zone("RV", Strategy::RecentlyViewed, 5);
    testing::account(vec![zone], testing::catalogue(products))
}

fn line(id: &str) -> BasketLine {
    BasketLine {
        id: id.into(),
        qty: 1.0,
        unit_price: 1.0,
    }
}

fn basket(ids: &[&str]) -> Event {
    Event::SetBasket {
        items: ids.iter().map(|id| line(id)).collect(),
    }
}

fn view(id: &str) -> Event {
    Event::ProductView { id: id.into() }
}

/// The co-view pairs of `product`: partner, count, and what of it went forward.
fn coview_pairs(account: &Account, product: &str) -> Vec<(String, f32, f32)> {
    let entries = account.coview.entries(&account.product_keys);
    let Some(entry) = entries.iter().find(|e| e.product == product) else {
        return Vec::new();
    };
    let mut pairs: Vec<(String, f32, f32)> = entry
        .partners
        .iter()
        .zip(&entry.forward)
        .map(|(PairCount { partner, count, .. }, forward)| (partner.clone(), *count, forward[1]))
        .collect();
    pairs.sort_by(|x, y| x.0.cmp(&y.0));
    pairs
}

/// The visitor's recent views, oldest first.
fn recent_views(account: &Account, visitor: &str) -> Vec<String> {
    let visitor = account.visitor(visitor).expect("a tracked visitor");
    visitor
        .recent_views
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn products_put_in_the_basket_without_a_view_are_paired_in_the_order_they_were_added() {
    let account = grocer();
    // A quick add of a, then b, then c, then an order with d (never in the basket: an
    // order's lines are paired as bought together, not viewed).
    account.serve(request("v", None, vec![basket(&["a"])], T0));
    account.serve(request("v", None, vec![basket(&["a", "b"])], T0 + 1));
    account.serve(request("v", None, vec![basket(&["a", "b", "c"])], T0 + 2));
    let order = Event::Order(Order {
        order_id: "o1".into(),
        items: vec![line("a"), line("b"), line("c"), line("d")],
        total: None,
        identity: Identity::default(),
        details: PersonalDetails::default(),
    });
    account.serve(request("v", None, vec![order], T0 + 3));
    // b: after a (distance 1), before c (distance 1); as the view sequence a, b, c
    // counts them.
    assert_eq!(
        coview_pairs(&account, "b"),
        vec![("a".into(), 1.0, 0.0), ("c".into(), 1.0, 1.0)]
    );
    assert_eq!(
        coview_pairs(&account, "c"),
        vec![("a".into(), 0.5, 0.0), ("b".into(), 1.0, 0.0)]
    );
    assert!(coview_pairs(&account, "d").is_empty());
    // They are the shopper's recent views, in that order.
    assert_eq!(recent_views(&account, "v"), ["a", "b", "c"]);
}

#[test]
fn a_product_viewed_then_put_in_the_basket_is_counted_once() {
    let account = grocer();
    for (n, id) in ["a", "b"].into_iter().enumerate() {
        let now = T0 + i64::try_from(n).unwrap_or(0);
        account.serve(request("v", None, vec![view(id)], now));
    }
    // Both viewed before: nothing more is paired.
    account.serve(request("v", None, vec![basket(&["a", "b"])], T0 + 5));
    assert_eq!(coview_pairs(&account, "a"), vec![("b".into(), 1.0, 1.0)]);
    assert_eq!(recent_views(&account, "v"), ["a", "b"]);
}
