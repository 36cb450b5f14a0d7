//! A state snapshot holds an order whole or not at all, whatever orders are applied
//! while it is exported: a node restored from it that replays every order (skipping
//! the ids it holds) counts each exactly once.

use super::tests::{T0, account, request};
use crate::event::{BasketLine, Event, Order};
use crate::state::{StateEntry, Tracked};

fn order(id: &str) -> Event {
    Event::Order(Box::new(Order {
        order_id: id.into(),
        items: vec![BasketLine {
            id: "a".into(),
            qty: 2.0,
            unit_price: 1.0,
        }],
        total: None,
        identity: Default::default(),
        details: Default::default(),
    }))
}

/// An order served on `account`: what a replay applies again.
fn place(account: &super::Account, visitor: &str, id: &str, at: i64) -> Tracked {
    let at = T0 + at;
    account
        .serve(request(visitor, None, vec![order(id)], at))
        .served
        .tracked
        .clone()
}

fn counted(account: &super::Account) -> (u64, String) {
    let counter = account.models.counters.get("a").expect("a counter for a");
    (counter.units, format!("{:?}", counter.popularity))
}

#[test]
fn an_order_applied_during_an_export_is_in_the_snapshot_whole_or_not_at_all() {
    let source = account();
    let mut placed: Vec<Tracked> = (0..3)
        .map(|n| place(&source, &format!("v{n}"), &format!("before-{n}"), n))
        .collect();
    let restored = account();
    let mut during_visitors = None;
    let mut during_ids = false;
    let mut after_cut = false;
    source.export_state(&mut |entry| {
        match &entry {
            // While the visitors are copied: an order of a visitor copied already.
            StateEntry::Visitor { id, .. } if during_visitors.is_none() => {
                placed.push(place(&source, id, "during-visitors", 10));
                during_visitors = Some(id.clone());
            }
            // While the order ids are copied, before the cut: a visitor new since the
            // visitors were copied.
            StateEntry::Order(_) if !during_ids => {
                placed.push(place(&source, "w", "during-ids", 11));
                during_ids = true;
            }
            // After the cut (the sessions are copied last).
            StateEntry::Session { .. } if !after_cut => {
                placed.push(place(&source, "v0", "after-cut", 12));
                after_cut = true;
            }
            _ => {}
        }
        restored.restore_entry(entry);
    });
    let during_visitors = during_visitors.expect("visitors exported");
    assert!(during_ids && after_cut, "order ids and sessions exported");
    assert!(restored.has_order("during-visitors"));
    assert!(restored.has_order("during-ids"));
    assert!(!restored.has_order("after-cut"));
    // Its visitor, copied before the order, is copied again with it.
    let orders =
        |account: &super::Account, visitor: &str| account.visitor(visitor).map(|v| v.orders.len());
    assert_eq!(orders(&restored, &during_visitors), Some(2));
    // A visitor new since the visitors' copy is copied at the cut.
    assert_eq!(orders(&restored, "w"), Some(1));
    // Every order replayed: those the snapshot holds are skipped, the rest counted once.
    for tracked in &placed {
        restored.replay(tracked);
    }
    assert_eq!(restored.order_count(), source.order_count());
    assert_eq!(counted(&restored), counted(&source));
    assert_eq!(counted(&source).0, 12, "six orders of two units");
    for visitor in ["v0", "v1", "v2", "w"] {
        assert_eq!(
            orders(&restored, visitor),
            orders(&source, visitor),
            "{visitor}"
        );
    }
}

#[test]
fn many_visitors_ordering_during_an_export_are_copied_again_before_the_cut_and_each_order_counted_once()
 {
    let source = account();
    let visitors: Vec<String> = (0..100).map(|n| format!("v{n}")).collect();
    let mut placed: Vec<Tracked> = visitors
        .iter()
        .enumerate()
        .map(|(n, v)| place(&source, v, &format!("before-{n}"), n as i64))
        .collect();
    let restored = account();
    let mut ordered = false;
    source.export_state(&mut |entry| {
        // On the first visitor copied, every visitor orders: more than the cut copies
        // again, so rounds copy them while orders go on.
        if matches!(entry, StateEntry::Visitor { .. }) && !ordered {
            ordered = true;
            for (n, v) in visitors.iter().enumerate() {
                placed.push(place(&source, v, &format!("during-{n}"), 200 + n as i64));
            }
        }
        restored.restore_entry(entry);
    });
    for tracked in &placed {
        restored.replay(tracked);
    }
    assert_eq!(restored.order_count(), 200);
    assert_eq!(counted(&restored), counted(&source));
    for v in &visitors {
        assert_eq!(restored.visitor(v).map(|v| v.orders.len()), Some(2), "{v}");
    }
}
