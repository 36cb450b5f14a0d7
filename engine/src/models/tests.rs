//! Pair counts, space-saving, rebuilt lists and decay.

use super::*;

#[test]
fn pairs_are_symmetric_ordered_and_bounded() {
    let keys = ProductKeys::default();
    let counts = CoCounts::default();
    let add = |a: &str, b: &str, weight: f32| counts.add(keys.key(a), keys.key(b), weight);
    for _ in 0..3 {
        add("a", "b", 1.0);
    }
    add("a", "c", 1.0);
    add("a", "a", 5.0);
    let lists = counts.neighbours(&keys);
    assert_eq!(lists["a"], ["b", "c"]);
    assert_eq!(lists["b"], ["a"]);
    assert!(!lists["a"].contains(&"a".to_owned()));

    for i in 0..(MAX_PARTNERS * 2) {
        add("hub", &format!("p{i:03}"), 1.0);
    }
    add("hub", "strong", 10.0);
    let kept = counts.pairs.get(&keys.key("hub")).map(|e| e.keys.len());
    assert_eq!(kept, Some(MAX_PARTNERS));
    // The strong partner leads; every other place went to a partner that came into
    // the full list (p256 on) and is sure of its one pairing, no more.
    let lists = counts.weighted_lists(&keys);
    let hub = &lists["hub"];
    assert_eq!(hub.len(), NEIGHBOURS);
    assert_eq!(hub[0].0, "strong");
    for (partner, _) in hub.iter().skip(1) {
        assert!(partner.as_str() >= "p256", "{partner} was evicted");
    }
    let damped = |count: f32, partner_total: f32| {
        count / partner_total.sqrt() / (MAX_PARTNERS as f32 * 2.0 + 10.0).sqrt()
    };
    assert!((hub[0].1 - damped(10.0, 10.0)).abs() < 1e-6, "{hub:?}");
    assert!((hub[1].1 - damped(1.0, 1.0)).abs() < 1e-6, "{hub:?}");
    for i in 0..(NEIGHBOURS * 2) {
        add("other", &format!("q{i:03}"), 1.0);
    }
    assert_eq!(counts.neighbours(&keys)["other"].len(), NEIGHBOURS);
}

#[test]
fn an_accounts_model_settings_bound_partners_and_lists() {
    let keys = ProductKeys::default();
    let counts = CoCounts::default();
    counts.configure(ModelSettings {
        partners: 16,
        neighbours: 4,
        ..ModelSettings::default()
    });
    for i in 0..40u32 {
        // Later partners are stronger: each counted i + 1 times.
        for _ in 0..=i {
            counts.add(keys.key("hub"), keys.key(&format!("p{i:02}")), 1.0);
        }
    }
    let entry = counts.pairs.get(&keys.key("hub")).map(|e| e.keys.len());
    assert_eq!(entry, Some(16));
    let lists = counts.neighbours(&keys);
    assert_eq!(lists["hub"], ["p39", "p38", "p37", "p36"]);
}

#[test]
fn a_decaying_score_does_not_depend_on_the_order_of_additions() {
    let hour = 3_600_000;
    let additions = [
        (1.0, 10 * hour),
        (2.0, 11 * hour),
        (1.0, 13 * hour),
        (3.0, 12 * hour),
    ];
    let mut in_order = Decaying::default();
    let mut sorted = additions;
    sorted.sort_by_key(|&(_, at)| at);
    for (amount, at) in sorted {
        in_order.add(amount, at);
    }
    let mut reversed = Decaying::default();
    for (amount, at) in sorted.iter().rev() {
        reversed.add(*amount, *at);
    }
    let mut shuffled = Decaying::default();
    for (amount, at) in additions {
        shuffled.add(amount, at);
    }
    for other in [reversed, shuffled] {
        assert_eq!(other.at(), in_order.at());
        let (a, b) = (other.value_at(14 * hour), in_order.value_at(14 * hour));
        assert!((a - b).abs() < 1e-12 * b, "{a} vs {b}");
    }
    // A late addition counts at its own time, not as a fresh one.
    let mut late = Decaying::default();
    late.add(1.0, 13 * hour);
    late.add(1.0, 13 * hour - TRENDING_HALF_LIFE_MILLIS);
    assert!((late.value_at(13 * hour) - 1.5).abs() < 1e-12);
}

#[test]
fn a_frequent_partner_is_kept_through_a_stream_of_rare_ones() {
    let keys = ProductKeys::default();
    let counts = CoCounts::default();
    let add = |a: &str, b: &str| counts.add(keys.key(a), keys.key(b), 1.0);
    // A full list of partners seen twice each.
    for i in 0..MAX_PARTNERS {
        add("hub", &format!("old{i}"));
        add("hub", &format!("old{i}"));
    }
    // Then "steady" once in every three pairings, each other one new. Dropping the
    // weakest partner for a newcomer that starts from its own count would drop
    // "steady" (weakest at 1) at each newcomer; counted from the weakest's count,
    // it stays and leads.
    for round in 0..100 {
        add("hub", "steady");
        add("hub", &format!("new{round}a"));
        add("hub", &format!("new{round}b"));
    }
    let lists = counts.neighbours(&keys);
    assert_eq!(lists["hub"][0], "steady");
}

/// Counts keeping `partners` partners and as many neighbours, weights undamped (a
/// list's weights are its sure counts).
fn undamped(partners: usize) -> CoCounts {
    CoCounts::configured(ModelSettings {
        partners,
        neighbours: partners,
        partner_damping: 0.0,
        seed_damping: 0.0,
        ..ModelSettings::default()
    })
}

/// `product`'s weighted list read undamped from up to 16 partners at `window` and
/// weight of direction `forward`.
fn undamped_list(
    counts: &CoCounts,
    keys: &ProductKeys,
    product: &str,
    window: CoViewWindow,
    forward: f32,
) -> Vec<(String, f32)> {
    counts.configure(ModelSettings {
        partners: 16,
        neighbours: 16,
        partner_damping: 0.0,
        seed_damping: 0.0,
        co_view_window: window,
        co_view_forward: forward,
        ..ModelSettings::default()
    });
    counts
        .weighted_lists(keys)
        .remove(product)
        .unwrap_or_default()
}

#[test]
fn a_newcomer_that_inherited_a_count_does_not_rank_with_pairs_seen_often() {
    let keys = ProductKeys::default();
    let counts = undamped(8);
    let add = |a: &str, b: &str| counts.add(keys.key(a), keys.key(b), 1.0);
    // A full list of partners each seen three times, the first one five times.
    for i in 0..8 {
        for _ in 0..3 {
            add("hub", &format!("old{i}"));
        }
    }
    add("hub", "old0");
    add("hub", "old0");
    // A product seen once takes the weakest place ("old1", the first of the
    // partners seen three times) and inherits its count (3 + 1): counted as it is,
    // it would lead the pairs seen three times. What is sure of its count is what
    // it gained since it came in, and no more than the partner's own total (1);
    // the pairs counted since the list had room keep their whole counts.
    add("hub", "once");
    let lists = counts.weighted_lists(&keys);
    let mut expected = vec![("old0".to_owned(), 5.0)];
    expected.extend((2..8).map(|i| (format!("old{i}"), 3.0)));
    expected.push(("once".to_owned(), 1.0));
    assert_eq!(lists["hub"], expected);

    // Seen twice more, "once" is sure of those (3: its count 6 less the 3 it
    // inherited) and ranks with the pairs seen three times.
    add("hub", "once");
    add("hub", "once");
    let lists = counts.weighted_lists(&keys);
    assert_eq!(lists["hub"].get(1), Some(&("old2".to_owned(), 3.0)));
    assert_eq!(lists["hub"].last(), Some(&("once".to_owned(), 3.0)));
}

#[test]
fn a_snapshot_written_before_inherited_counts_reads_as_it_did() {
    let keys = ProductKeys::default();
    let counts = undamped(3);
    let pairs = |list: &[(&str, f32)]| -> Vec<(String, f32)> {
        list.iter().map(|(id, c)| ((*id).to_owned(), *c)).collect()
    };
    for (id, total) in [("a", 9.0), ("b", 9.0), ("c", 9.0), ("d", 9.0)] {
        counts.restore_counts(&keys, id, &pairs(&[("z", total)]));
    }
    // A full list: each count is read above the weakest (2), as lists were then.
    counts.restore_counts(&keys, "full", &pairs(&[("a", 6.0), ("b", 2.0), ("c", 3.0)]));
    // A list with room: every count is sure.
    counts.restore_counts(&keys, "room", &pairs(&[("a", 6.0), ("d", 2.0)]));
    let lists = counts.weighted_lists(&keys);
    assert_eq!(
        lists["full"],
        [("a".to_owned(), 4.0), ("c".to_owned(), 1.0)]
    );
    assert_eq!(
        lists["room"],
        [("a".to_owned(), 6.0), ("d".to_owned(), 2.0)]
    );
}

#[test]
fn list_weights_are_damped_by_totals_and_keep_the_order_by_count() {
    let keys = ProductKeys::default();
    let settings = |partner_damping, seed_damping| ModelSettings {
        partner_damping,
        seed_damping,
        ..ModelSettings::default()
    };
    let counts = CoCounts::configured(settings(0.5, 0.5));
    let add = |a: &str, b: &str, n: usize| {
        for _ in 0..n {
            counts.add(keys.key(a), keys.key(b), 1.0);
        }
    };
    // "popular" is paired 4 times with "a" and 96 times elsewhere; "niche" twice
    // with "a" only.
    add("a", "popular", 4);
    add("popular", "elsewhere", 96);
    add("a", "niche", 2);
    let lists = counts.weighted_lists(&keys);
    let a = &lists["a"];
    // Ordered by count (a zone about "a" shows its strongest pair first) ...
    assert_eq!(a[0].0, "popular");
    assert_eq!(a[1].0, "niche");
    // ... weighed by count / partner total^0.5 / own total^0.5 (a's total: 6).
    let expected = |count: f32, partner_total: f32| count / partner_total.sqrt() / 6f32.sqrt();
    assert!((a[0].1 - expected(4.0, 100.0)).abs() < 1e-6, "{a:?}");
    assert!((a[1].1 - expected(2.0, 2.0)).abs() < 1e-6, "{a:?}");
    assert!(
        a[1].1 > a[0].1,
        "in a blend the niche pair weighs more: {a:?}"
    );

    // Without damping the weights are the counts.
    counts.configure(settings(0.0, 0.0));
    let lists = counts.weighted_lists(&keys);
    assert_eq!(
        lists["a"],
        [("popular".to_owned(), 4.0), ("niche".to_owned(), 2.0)]
    );
}

#[test]
fn a_restored_snapshot_gives_the_same_weighted_lists() {
    let keys = ProductKeys::default();
    let settings = ModelSettings {
        partners: 8,
        neighbours: 6,
        ..ModelSettings::default()
    };
    let counts = CoCounts::configured(settings);
    // Enough partners, at uneven weights, for lists to fill and evict.
    for i in 0..200u32 {
        let a = format!("p{}", i % 7);
        let b = format!("p{}", (i * 13 + 5) % 23);
        counts.add(
            keys.key(&a),
            keys.key(&b),
            1.0 / f32::from(1 + (i % 4) as u8),
        );
        // Views in order too, so that pairs have a direction to restore.
        let c = format!("p{}", (i * 5 + 3) % 19);
        let reach = reach_of(1 + (i % 3) as usize, 0.5);
        counts.add_all(keys.key(&a), &[(keys.key(&c), 0.5, reach)]);
    }
    // The total a weight divides by is the sum of the kept counts (space-saving
    // hands the weakest count on), so a state snapshot, which stores the counts,
    // restores it.
    for entry in counts.pairs.iter() {
        let sum: f32 = entry.counts.iter().sum();
        assert!((entry.total - sum).abs() < 1e-3, "{} vs {sum}", entry.total);
    }
    let restored = CoCounts::configured(settings);
    let entries = counts.entries(&keys);
    // The snapshot keeps what counts inherited (lists filled and evicted).
    assert!(
        entries
            .iter()
            .any(|pairs| pairs.partners.iter().any(|pair| pair.inherited > 0.0)),
        "no count inherited anything"
    );
    for pairs in entries {
        restored.restore(
            &keys,
            &pairs.product,
            &pairs.partners,
            Some(&pairs.reach),
            Some(&pairs.forward),
        );
    }
    // The same at every window and weight of direction (the counts by distance and
    // direction are restored too).
    for (window, forward) in CoViewWindow::ALL
        .into_iter()
        .flat_map(|window| [0.0, 0.5, 1.0].map(|forward| (window, forward)))
    {
        let at = ModelSettings {
            co_view_window: window,
            co_view_forward: forward,
            ..settings
        };
        counts.configure(at);
        restored.configure(at);
        let (live, again) = (counts.weighted_lists(&keys), restored.weighted_lists(&keys));
        assert_eq!(live.len(), again.len());
        for (product, list) in &live {
            let other = &again[product];
            assert_eq!(
                list.len(),
                other.len(),
                "{product} at {window:?}, {forward}"
            );
            for ((a, x), (b, y)) in list.iter().zip(other) {
                assert_eq!(a, b, "{product} at {window:?}, {forward}");
                assert!(
                    (x - y).abs() < 1e-4,
                    "{product} at {window:?}, {forward}: {x} vs {y}"
                );
            }
        }
    }
}

#[test]
fn each_window_reads_the_pairs_within_its_distance() {
    let keys = ProductKeys::default();
    let counts = undamped(16);
    // A visitor views a, b, c, d, e: "e" pairs with d at distance 1, c at 2, b at 3
    // and a at 4 (weights 1, 1/2, 1/3, 1/4), as tracking counts a view.
    let key = |id: &str| keys.key(id);
    let earlier: Vec<(u32, f32, crate::models::Reach)> = ["d", "c", "b", "a"]
        .iter()
        .enumerate()
        .map(|(before, id)| {
            let weight = 1.0 / (before as f32 + 1.0);
            (key(id), weight, crate::models::reach_of(before + 1, weight))
        })
        .collect();
    counts.add_all(key("e"), &earlier);
    let list_of_e = |window| undamped_list(&counts, &keys, "e", window, 0.0);
    let names = |list: &[(String, f32)]| list.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(names(&list_of_e(CoViewWindow::One)), ["d"]);
    assert_eq!(names(&list_of_e(CoViewWindow::Three)), ["d", "c", "b"]);
    let ten = list_of_e(CoViewWindow::Ten);
    assert_eq!(names(&ten), ["d", "c", "b", "a"]);
    let weights: Vec<f32> = ten.iter().map(|(_, w)| *w).collect();
    for (got, want) in weights.iter().zip([1.0, 0.5, 1.0 / 3.0, 0.25]) {
        assert!((got - want).abs() < 1e-6, "{weights:?}");
    }
    // The partners' lists read the same pairs from their side.
    counts.configure(ModelSettings {
        co_view_window: CoViewWindow::One,
        ..ModelSettings::default()
    });
    let lists = counts.neighbours(&keys);
    assert_eq!(lists["d"], ["e"]);
    assert!(lists.get("a").is_none_or(Vec::is_empty), "{lists:?}");
}

#[test]
fn popularity_halves_every_half_life() {
    let mut counter = Decaying::default();
    counter.add(8.0, 0);
    assert_eq!(counter.value_at(TRENDING_HALF_LIFE_MILLIS), 4.0);
    counter.add(1.0, TRENDING_HALF_LIFE_MILLIS);
    assert_eq!(counter.value_at(TRENDING_HALF_LIFE_MILLIS * 2), 2.5);
    // An older addition counts as of its own time: halved once by now.
    counter.add(1.0, 0);
    assert_eq!(counter.value_at(TRENDING_HALF_LIFE_MILLIS), 5.5);
}

/// Space-saving's replacement in place gives what removing the weakest partner and
/// inserting the newcomer gives, with full lists and a stream of new partners.
#[test]
fn a_replacement_in_place_counts_as_a_removal_and_an_insertion() {
    let mut fast = partners::Partners::default();
    let mut sequence = crate::demo::Sequence::new(5);
    let capacity = 16;
    // The reference: the same counts kept by removals and insertions.
    let mut reference: Vec<(u32, f32, f32, Reach, Reach)> = Vec::new();
    for _ in 0..5_000 {
        let to = (sequence.next_u64() % 60) as u32;
        let weight = 1.0 / (1 + sequence.next_u64() % 4) as f32;
        let reach = [weight, 0.0];
        let (direction, forward) = if sequence.next_u64().is_multiple_of(3) {
            (partners::Direction::Forward, reach)
        } else {
            (partners::Direction::Backward, [0.0; 2])
        };
        fast.add(to, weight, reach, direction, capacity);
        match reference.binary_search_by_key(&to, |e| e.0) {
            Ok(at) => {
                reference[at].1 += weight;
                reference[at].3[0] += weight;
                reference[at].4[0] += forward[0];
            }
            Err(mut at) => {
                let mut inherited = 0.0;
                if reference.len() >= capacity {
                    let (weakest, count) = reference
                        .iter()
                        .enumerate()
                        .min_by(|a, b| a.1.1.total_cmp(&b.1.1))
                        .map(|(at, e)| (at, e.1))
                        .unwrap();
                    reference.remove(weakest);
                    inherited = count;
                    if weakest < at {
                        at -= 1;
                    }
                }
                reference.insert(at, (to, inherited + weight, inherited, reach, forward));
            }
        }
        let kept: Vec<(u32, f32, f32, Reach, Reach)> = (0..fast.keys.len())
            .map(|at| {
                (
                    fast.keys[at],
                    fast.counts[at],
                    fast.kept[at].inherited,
                    fast.kept[at].reach,
                    fast.kept[at].forward,
                )
            })
            .collect();
        assert_eq!(kept, reference);
        let reach_total: f32 = reference.iter().map(|e| e.3[0]).sum();
        assert!((fast.reach_total[0] - reach_total).abs() < 1e-2);
    }
}

#[test]
fn a_key_read_by_index_is_the_ids_key_and_a_new_base_is_indexed_afresh() {
    let keys = ProductKeys::default();
    let first =
        crate::testing::catalogue([crate::testing::product("a"), crate::testing::product("b")]);
    let (a, b) = (first.idx_of("a").unwrap(), first.idx_of("b").unwrap());
    let key_b = keys.key("b");
    assert_eq!(keys.indexed(&first).key(b, "b"), key_b);
    // Once found, the index alone gives the key.
    assert_eq!(keys.indexed(&first).key(b, "not read"), key_b);
    let key_a = keys.indexed(&first).key(a, "a");
    assert_eq!(keys.existing("a"), Some(key_a));
    assert_eq!(keys.len(), 2);
    // Another base numbers its products afresh: "c" takes an index "a" or "b" had.
    let second =
        crate::testing::catalogue([crate::testing::product("c"), crate::testing::product("d")]);
    let c = second.idx_of("c").unwrap();
    let key_c = keys.indexed(&second).key(c, "c");
    assert_eq!(keys.existing("c"), Some(key_c));
    assert!(key_c != key_a && key_c != key_b);
    // A clone of a version shares its base.
    assert_eq!(keys.indexed(&second.clone()).key(c, "not read"), key_c);
}

#[test]
fn an_index_read_by_key_is_the_catalogues_own_through_deletes_re_adds_and_a_new_base() {
    use crate::testing::product;
    let keys = ProductKeys::default();
    let first = crate::testing::catalogue([product("a"), product("b")]);
    let (key_a, key_b) = (keys.key("a"), keys.key("b"));
    let indexes = keys.idx_by_key(&first);
    assert_eq!(indexes.idx(&first, key_b, "b"), first.idx_of("b"));
    // Once found, the key alone gives the index.
    assert_eq!(indexes.idx(&first, key_b, "not read"), first.idx_of("b"));
    assert_eq!(indexes.idx(&first, key_a, "a"), first.idx_of("a"));
    // A later version of the base: "a" removed has no index, even by key; added again
    // it has the one the catalogue gives it.
    let mut edit = first.edit();
    assert!(edit.remove_product("a"));
    let second = edit.finish();
    let indexes = keys.idx_by_key(&second);
    assert_eq!(indexes.idx(&second, key_a, "a"), None);
    let mut edit = second.edit();
    edit.upsert_product(product("a")).unwrap();
    let third = edit.finish();
    assert!(third.idx_of("a").is_some());
    assert_eq!(
        keys.idx_by_key(&third).idx(&third, key_a, "a"),
        third.idx_of("a")
    );
    // A key handed out after the map was made is looked up by id.
    let key_c = keys.key("c");
    let mut edit = third.edit();
    edit.upsert_product(product("c")).unwrap();
    let fourth = edit.finish();
    assert_eq!(indexes.idx(&fourth, key_c, "c"), fourth.idx_of("c"));
    assert_eq!(
        keys.idx_by_key(&fourth).idx(&fourth, key_c, "c"),
        fourth.idx_of("c")
    );
    // Another base numbers its products afresh: nothing found in the first is read.
    let other = crate::testing::catalogue([product("c"), product("b"), product("a")]);
    let indexes = keys.idx_by_key(&other);
    for (key, id) in [(key_a, "a"), (key_b, "b"), (key_c, "c")] {
        assert_eq!(indexes.idx(&other, key, "not read"), None, "{id}");
        assert_eq!(indexes.idx(&other, key, id), other.idx_of(id), "{id}");
    }
}

/// Views always in one order (a lesson after the one before it): the counts by
/// direction are exact, and the lists read with the direction's full weight keep only
/// what came next, while either way they keep both neighbours.
#[test]
fn pairs_counted_in_order_rank_what_comes_next_when_direction_decides() {
    let keys = ProductKeys::default();
    let counts = undamped(16);
    let key = |id: &str| keys.key(id);
    // Seven visitors view a, b, c, d in order; three view d, c (against the order).
    let view = |path: &[&str]| {
        for (at, id) in path.iter().enumerate() {
            let earlier: Vec<(u32, f32, Reach)> = path[..at]
                .iter()
                .rev()
                .enumerate()
                .map(|(before, earlier)| {
                    let weight = 1.0 / (before as f32 + 1.0);
                    (key(earlier), weight, reach_of(before + 1, weight))
                })
                .collect();
            counts.add_all(key(id), &earlier);
        }
    };
    for _ in 0..7 {
        view(&["a", "b", "c", "d"]);
    }
    for _ in 0..3 {
        view(&["d", "c"]);
    }
    let pair = |product: &str, partner: &str| {
        let entry = counts.pairs.get(&key(product)).expect("counted");
        let at = entry.keys.binary_search(&key(partner)).expect("paired");
        (
            entry.counts[at],
            entry.kept[at].reach,
            entry.kept[at].forward,
        )
    };
    // b: a came before it 7 times at distance 1, c after it 7 times at distance 1.
    assert_eq!(pair("b", "a"), (7.0, [7.0, 7.0], [0.0, 0.0]));
    assert_eq!(pair("b", "c"), (7.0, [7.0, 7.0], [7.0, 7.0]));
    // a: b after it at distance 1, c at 2 (weight ½), d at 3 (weight ⅓).
    assert_eq!(pair("a", "c"), (3.5, [0.0, 3.5], [0.0, 3.5]));
    let (count, reach, forward) = pair("a", "d");
    assert!((count - 7.0 / 3.0).abs() < 1e-5 && reach[0] == 0.0 && forward == reach);
    // c and d: 7 times d after c, 3 times c after d, always at distance 1.
    assert_eq!(pair("c", "d"), (10.0, [10.0, 10.0], [7.0, 7.0]));
    assert_eq!(pair("d", "c"), (10.0, [10.0, 10.0], [3.0, 3.0]));

    let list = |product: &str, window: CoViewWindow, forward: f32| {
        undamped_list(&counts, &keys, product, window, forward)
    };
    let names = |list: &[(String, f32)]| list.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    // Either way b's neighbours tie (ties by id); with direction deciding, only c.
    assert_eq!(names(&list("b", CoViewWindow::One, 0.0)), ["a", "c"]);
    assert_eq!(list("b", CoViewWindow::One, 1.0), [("c".to_owned(), 14.0)]);
    // Half the weight on direction: c (all forward) 7 × (½ + 1), a (none) 7 × ½.
    assert_eq!(
        list("b", CoViewWindow::One, 0.5),
        [("c".to_owned(), 10.5), ("a".to_owned(), 3.5)]
    );
    // The longest window reads each pair's direction within 3 views: from c, d came
    // next 7 of 10 times, b before it always.
    let ten = list("c", CoViewWindow::Ten, 1.0);
    assert_eq!(names(&ten), ["d"]);
    assert!((ten[0].1 - 10.0 * 2.0 * 0.7).abs() < 1e-4, "{ten:?}");
}
