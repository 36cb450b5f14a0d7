//! The models' pair counts through an account: an order's lines paired by their
//! distance in it, and a state snapshot's counts, written with their direction and
//! read from a snapshot written before directions were counted.

use super::tests::{T0, account, request};
use super::*;
use crate::event::Event;
use crate::state::StateEntry;

#[test]
fn pair_counts_by_direction_survive_a_state_snapshot_and_an_older_one_reads_as_undirected() {
    let account = account();
    let view = |id: &str| Event::ProductView { id: id.into() };
    // Views in one order: each pair counted in one direction only.
    for (n, visitor) in ["v1", "v2", "v3"].into_iter().enumerate() {
        let now = T0 + n as UnixMillis * 1_000;
        account.serve(request(
            visitor,
            None,
            vec![view("a"), view("b"), view("c")],
            now,
        ));
    }
    account.models.copurchase.add(
        account.models.product_keys.key("a"),
        account.models.product_keys.key("c"),
        1.0,
    );
    let sorted = |account: &Account| {
        let mut tables = [
            account.models.coview.entries(&account.models.product_keys),
            account
                .models
                .copurchase
                .entries(&account.models.product_keys),
        ];
        for table in &mut tables {
            table.sort_by(|x, y| x.product.cmp(&y.product));
            // Partners in key order, and keys are numbered as products are first met:
            // by id here, to compare accounts that met them in other orders.
            for pairs in table.iter_mut() {
                let mut by_id: Vec<_> = (0..pairs.partners.len())
                    .map(|at| {
                        (
                            pairs.partners[at].clone(),
                            pairs.reach[at],
                            pairs.forward[at],
                        )
                    })
                    .collect();
                by_id.sort_by(|x, y| x.0.partner.cmp(&y.0.partner));
                pairs.partners = by_id.iter().map(|p| p.0.clone()).collect();
                pairs.reach = by_id.iter().map(|p| p.1).collect();
                pairs.forward = by_id.iter().map(|p| p.2).collect();
            }
        }
        tables
    };
    let before = sorted(&account);
    let b = before[0]
        .iter()
        .find(|p| p.product == "b")
        .expect("b counted");
    assert_eq!(b.forward.len(), 2, "{b:?}");
    assert!(
        b.forward
            .iter()
            .zip(&b.reach)
            .any(|(f, r)| f == r && r[0] > 0.0),
        "{b:?}"
    );
    assert!(b.forward.contains(&[0.0, 0.0]), "{b:?}");

    let restored = self::account();
    let mut older = Vec::new();
    account.export_state(&mut |entry| {
        // An older snapshot wrote the pairs without their direction.
        let old = match &entry {
            StateEntry::CoViewPairsDirected(p) => Some(StateEntry::CoViewPairsByDistance(
                Box::new(crate::state::PairsByDistance {
                    product: p.product.clone(),
                    partners: p.partners.clone(),
                    reach: p.reach.clone(),
                }),
            )),
            StateEntry::CoPurchasePairsDirected(p) => Some(StateEntry::CoPurchasePairsByDistance(
                Box::new(crate::state::PairsByDistance {
                    product: p.product.clone(),
                    partners: p.partners.clone(),
                    reach: p.reach.clone(),
                }),
            )),
            StateEntry::CoViewPairsByDistance(_) | StateEntry::CoPurchasePairsByDistance(_) => {
                panic!("the pairs are written with their direction")
            }
            _ => None,
        };
        older.push(old.unwrap_or_else(|| entry.clone()));
        restored.restore_entry(entry);
    });
    assert_eq!(sorted(&restored), before);

    let from_older = self::account();
    for entry in older {
        from_older.restore_entry(entry);
    }
    let undirected = sorted(&from_older);
    for (table, was) in undirected.iter().zip(&before) {
        assert_eq!(table.len(), was.len());
        for (pairs, was) in table.iter().zip(was) {
            assert_eq!((&pairs.partners, &pairs.reach), (&was.partners, &was.reach));
            let halves: Vec<[f32; 2]> = was.reach.iter().map(|r| r.map(|c| c / 2.0)).collect();
            assert_eq!(pairs.forward, halves, "{}", pairs.product);
        }
    }
}

#[test]
fn an_orders_lines_pair_by_how_far_apart_they_are_in_it() {
    // Lines put in the basket in the order a, b, c: the neighbouring lines pair at 1,
    // a and c (two apart) at 1/2, each counted at distance 1 (every window reads it).
    let account = account();
    let order = crate::testing::order("o1", &["a", "b", "c"]);
    account.serve(request("v1", None, vec![order], T0));
    let entries = account
        .models
        .copurchase
        .entries(&account.models.product_keys);
    let pair = |product: &str, partner: &str| {
        let pairs = entries
            .iter()
            .find(|pairs| pairs.product == product)
            .expect("the product has pairs");
        let at = pairs
            .partners
            .iter()
            .position(|count| count.partner == partner)
            .expect("the pair is counted");
        (pairs.partners[at].count, pairs.reach[at])
    };
    assert_eq!(pair("a", "b"), (1.0, [1.0, 1.0]));
    assert_eq!(pair("b", "c"), (1.0, [1.0, 1.0]));
    assert_eq!(pair("a", "c"), (0.5, [0.5, 0.5]));
    assert_eq!(pair("c", "a"), (0.5, [0.5, 0.5]));
}
