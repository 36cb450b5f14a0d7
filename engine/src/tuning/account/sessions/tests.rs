//! The neighbourhood's trials on planted shopping whose best setting is known.

use super::super::recipe::tests::shoppers;
use super::super::tests::{Clock, names, planted_account};
use crate::event::Event;
use crate::models::{ModelSettings, SessionSetting};

/// A view of the product `id`.
fn view(id: &str) -> Event {
    Event::ProductView { id: id.into() }
}

#[test]
fn where_the_closest_sessions_predict_and_looser_ones_mislead_fewer_neighbours_are_chosen() {
    // Thirty groups of products: `a`, `b`, the next one `t`, and twelve decoys. In each,
    // 30 shoppers view a, b then t (as close as a session can be to a shopper who
    // viewed a then b: 1 for b, 0.9 for a), and 80 view b then the decoys (1 each).
    // Then a judged shopper views a, b and t. At 100 neighbours (or 200) the 70 loose
    // sessions (or 80) put the twelve decoys above t (30 × 1.9 = 57), out of the top
    // 10; at 50, the 30 close ones and 20 loose ones put t first.
    let products = names("p", 30 * 20);
    let models = ModelSettings {
        tuning_trials_per_second: 1_000,
        ..ModelSettings::default()
    };
    let account = planted_account(&products, models);
    assert_eq!(account.session_tuning().active, SessionSetting::default());
    assert!(account.session_tuning().tuning);
    let mut judged = shoppers(true);
    let mut others = shoppers(false);
    let mut clock = Clock::default();
    for group in 0..30 {
        let p = |n: usize| format!("p{}", group * 20 + n);
        for _ in 0..30 {
            let shopper = others.next().unwrap_or_default();
            for n in [0, 1, 2] {
                clock.serve(&account, &shopper, view(&p(n)));
            }
        }
        for _ in 0..80 {
            let shopper = others.next().unwrap_or_default();
            for n in std::iter::once(1).chain(3..15) {
                clock.serve(&account, &shopper, view(&p(n)));
            }
        }
        let shopper = judged.next().unwrap_or_default();
        for n in [0, 1, 2] {
            clock.serve(&account, &shopper, view(&p(n)));
        }
    }
    account.rebuild_models();
    let report = account.session_tuning();
    let summary = format!("{report:#?}");
    assert_eq!(report.active.neighbours, 50, "{summary}");
    let switch = report.switches.last().expect("a switch");
    assert_eq!(switch.from, SessionSetting::default(), "{summary}");
    assert!(switch.wins > switch.losses, "{summary}");
    // The index reads at the setting chosen.
    assert_eq!(account.models.similar_sessions.setting(), report.active);
}

#[test]
fn without_tuning_or_a_zone_that_reads_sessions_no_trial_is_taken() {
    let products = names("p", 20);
    let off = crate::testing::account_with_models(
        vec![crate::testing::zone(
            "T",
            crate::zone::Strategy::Trending,
            10,
        )],
        crate::testing::catalogue(products.iter().map(|id| crate::testing::product(id))),
        ModelSettings::default(),
    );
    let report = off.session_tuning();
    assert!(!report.tuning);
    let mut clock = Clock::default();
    let shopper = shoppers(true).next().unwrap_or_default();
    for product in &products {
        clock.serve(&off, &shopper, view(product));
    }
    off.rebuild_models();
    assert!(
        off.session_tuning()
            .settings
            .iter()
            .all(|(_, tally)| tally.scored.trials == 0)
    );
}
