use super::*;

/// Views `products` in `session` of `visitor`, one a second from `at`.
fn visit(index: &SessionIndex, (session, visitor): (u64, u64), products: &[u32], at: UnixMillis) {
    for (n, product) in products.iter().enumerate() {
        index.view(session, visitor, *product, at + n as UnixMillis * 1_000);
    }
}

#[test]
fn sessions_sharing_products_with_the_current_one_score_theirs_by_their_similarity() {
    let index = SessionIndex::new(100);
    // Current session (visitor 9): 1 then 2; 2 weighs 1, 1 weighs 0.9.
    visit(&index, (101, 1), &[1, 2, 3], 0); // shares 1 and 2: 1.9
    visit(&index, (102, 2), &[2, 4], 0); // shares 2: 1.0
    visit(&index, (103, 3), &[1, 5], 0); // shares 1: 0.9
    visit(&index, (104, 4), &[7, 8], 0); // shares nothing
    visit(&index, (105, 9), &[2, 6], 0); // the visitor's own other session
    visit(&index, (200, 9), &[1, 2], 10_000);
    let got = index.neighbourhood(&[2, 1], 9, 10, AsOf::Now);
    assert_eq!(got.len(), 3, "{got:?}");
    let want = [(3, 1.9), (4, 1.0), (5, 0.9)];
    for ((key, score), (want_key, want_score)) in got.iter().zip(want) {
        assert_eq!(*key, want_key, "{got:?}");
        assert!((score - want_score).abs() < 1e-6, "{got:?}");
    }
    // A product two sessions hold sums their similarities; `limit` cuts the list.
    visit(&index, (106, 5), &[2, 3], 0);
    let got = index.neighbourhood(&[2, 1], 9, 1, AsOf::Now);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, 3);
    assert!((got[0].1 - 2.9).abs() < 1e-6, "{got:?}");
    // No products, or products no session holds, have no neighbourhood.
    assert!(index.neighbourhood(&[], 9, 10, AsOf::Now).is_empty());
    assert!(index.neighbourhood(&[777], 9, 10, AsOf::Now).is_empty());
}

#[test]
fn memory_is_bounded_by_the_sessions_kept_and_the_sessions_per_product() {
    let index = SessionIndex::new(1_000);
    // 3,000 sessions each of product 1 and its own product.
    for n in 0..3_000u64 {
        visit(&index, (1_000 + n, n), &[1, 10_000 + n as u32], 0);
    }
    assert_eq!(index.len(), 1_000);
    {
        let inner = index.inner.read();
        assert_eq!(inner.slots.len(), 1_000);
        assert_eq!(
            inner.by_product.get(&1).map(|r| r.slots.len()),
            Some(SESSIONS_PER_PRODUCT)
        );
    }
    // The oldest were reused: their products' entries are stale and score nothing.
    visit(&index, (9, 99_999), &[10_000, 1], 10_000);
    let got = index.neighbourhood(&[1, 10_000], 99_999, 2_000, AsOf::Now);
    assert!(got.iter().all(|(key, _)| *key >= 10_000 + 2_000), "{got:?}");
    // At most the sampled sessions give products (each gives one here), and only
    // the nearest of those.
    assert_eq!(got.len(), NEIGHBOUR_SESSIONS.min(SAMPLED_SESSIONS));
    // The newest sessions first: the sample is the latest sessions of product 1.
    assert!(
        got.iter().all(|(key, _)| *key >= 10_000 + 3_000 - 500),
        "{got:?}"
    );
    // A session keeps its latest products, distinct.
    let long: Vec<u32> = (0..SESSION_ITEMS as u32 + 5).chain([20, 21]).collect();
    visit(&index, (5, 5), &long, 0);
    let items = index.items_of(5);
    assert_eq!(items.len(), SESSION_ITEMS);
    assert_eq!(items.last(), Some(&21));
    assert_eq!(items.first(), Some(&5));
}

#[test]
fn an_erased_visitors_sessions_are_forgotten() {
    let index = SessionIndex::new(100);
    visit(&index, (1, 1), &[1, 2], 0);
    visit(&index, (2, 2), &[1, 3], 0);
    visit(&index, (3, 3), &[1], 0);
    assert_eq!(index.neighbourhood(&[1], 3, 10, AsOf::Now).len(), 2);
    index.erase_visitor(1);
    assert!(index.items_of(1).is_empty());
    assert_eq!(index.len(), 2);
    let got = index.neighbourhood(&[1], 3, 10, AsOf::Now);
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [3]);
}

#[test]
fn a_snapshots_sessions_restore_the_same_neighbourhoods() {
    let index = SessionIndex::new(5);
    for n in 0..8u64 {
        visit(&index, (100 + n, n), &[1, 2 + n as u32, 50], n as i64);
    }
    let names = |key: u32| Some(format!("p{key}"));
    let stored = index.entries(names);
    assert_eq!(stored.len(), 5);
    let restored = SessionIndex::new(5);
    for session in &stored {
        restored.restore(session, |id| id[1..].parse().unwrap_or(u32::MAX));
    }
    assert_eq!(restored.entries(names), stored);
    for n in 3..8u64 {
        let latest = [50, 2 + n as u32, 1];
        assert_eq!(
            restored.neighbourhood(&latest, n, 10, AsOf::Now),
            index.neighbourhood(&latest, n, 10, AsOf::Now)
        );
    }
    // Fewer sessions kept: the latest stay.
    restored.set_capacity(2);
    assert_eq!(restored.len(), 2);
    assert_eq!(restored.entries(names), stored[3..]);
    // Nothing kept at a capacity of 0.
    let off = SessionIndex::new(0);
    visit(&off, (1, 1), &[1, 2], 0);
    assert!(off.is_empty());
}

#[test]
fn a_neighbourhood_read_as_of_a_tick_leaves_out_what_was_added_later() {
    let index = SessionIndex::new(100);
    assert!(
        index
            .neighbourhood(&[1], 9, 10, AsOf::Tick(index.tick()))
            .is_empty(),
        "nothing added by an empty index's tick"
    );
    visit(&index, (101, 1), &[1, 2], 0);
    visit(&index, (102, 2), &[3], 0);
    let then = index.tick();
    // Later: session 101 gains 4, session 102 gains 1 (so it shares a product with
    // the shopper only from now on), and 2 is viewed again in 101.
    visit(&index, (101, 1), &[4, 2], 10_000);
    visit(&index, (102, 2), &[1], 10_000);
    let now = index.neighbourhood(&[1], 9, 10, AsOf::Now);
    let keys: Vec<u32> = now.iter().map(|(key, _)| *key).collect();
    assert_eq!(keys, vec![2, 3, 4], "{now:?}");
    let earlier = index.neighbourhood(&[1], 9, 10, AsOf::Tick(then));
    assert_eq!(
        earlier,
        vec![(2, 1.0)],
        "the sessions as they were at {then}"
    );
    assert_eq!(
        index.neighbourhood(&[1], 9, 10, AsOf::Tick(index.tick())),
        now,
        "as of the latest tick is now"
    );
}

#[test]
fn ticks_compare_across_their_wrap() {
    assert!(AsOf::Tick(5).holds(u32::MAX - 2));
    assert!(AsOf::Tick(5).holds(5));
    assert!(!AsOf::Tick(5).holds(6));
    assert!(!AsOf::Tick(u32::MAX - 2).holds(5));
}

/// An index where the sessions closest to a shopper who viewed 2 then 1 (20 that
/// hold both, and 500) are outnumbered by looser ones (80 that hold 2 only, and 600).
fn close_and_loose() -> SessionIndex {
    let index = SessionIndex::new(1_000);
    for n in 0..20u64 {
        visit(&index, (1_000 + n, 1_000 + n), &[2, 1, 500], 0);
    }
    for n in 0..80u64 {
        visit(&index, (2_000 + n, 2_000 + n), &[2, 600], 0);
    }
    index
}

#[test]
fn the_setting_decides_how_many_neighbours_score_and_how_many_latest_products_compare() {
    let index = close_and_loose();
    let top = |index: &SessionIndex| index.neighbourhood(&[1, 2], 9, 1, AsOf::Now)[0].0;
    // By default the 100 nearest score: 80 loose ones (0.9 each) outweigh 20 close ones
    // (1.9 each).
    assert_eq!(index.setting(), SessionSetting::default());
    assert_eq!(top(&index), 600);
    // The 25 nearest: the 20 close ones and 5 loose ones.
    index.configure(SessionSetting {
        neighbours: 25,
        steps: SESSION_STEPS,
    });
    assert_eq!(top(&index), 500);
    // The latest product alone: the loose sessions do not hold it.
    index.configure(SessionSetting {
        neighbours: 100,
        steps: 1,
    });
    let got = index.neighbourhood(&[1, 2], 9, 10, AsOf::Now);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, 500);
    assert!((got[0].1 - 20.0).abs() < 1e-4, "{got:?}");
    // Kept across a change of capacity.
    index.set_capacity(500);
    assert_eq!(index.setting().steps, 1);
}

#[test]
fn neighbourhoods_under_several_settings_are_each_as_the_index_reads_at_that_setting() {
    let index = close_and_loose();
    // Some sessions of a second shopper's kind, and a shopper with a longer history.
    for n in 0..300u64 {
        let items: Vec<u32> = (0..8).map(|k| ((n * 7 + k * 13) % 40) as u32).collect();
        visit(&index, (5_000 + n, 5_000 + n), &items, 0);
    }
    let latest = [1, 2, 3, 5, 8, 13, 21, 34, 4, 9, 16];
    let settings = [
        SessionSetting {
            neighbours: 100,
            steps: 10,
        },
        SessionSetting {
            neighbours: 25,
            steps: 5,
        },
        SessionSetting {
            neighbours: 50,
            steps: 10,
        },
        SessionSetting {
            neighbours: 25,
            steps: 10,
        },
        SessionSetting {
            neighbours: 100,
            steps: 5,
        },
    ];
    let tick = index.tick();
    visit(&index, (9_000, 9_000), &[1, 2, 3, 700], 0);
    let together = index.neighbourhoods(&latest, 9, 30, AsOf::Tick(tick), &settings);
    assert_eq!(together.len(), settings.len());
    for (setting, got) in settings.iter().zip(&together) {
        index.configure(*setting);
        assert_eq!(
            *got,
            index.neighbourhood(&latest, 9, 30, AsOf::Tick(tick)),
            "{setting:?}"
        );
        assert!(!got.is_empty());
        assert!(got.iter().all(|(key, _)| *key != 700), "as of the tick");
    }
    assert_ne!(together[0], together[1]);
}
