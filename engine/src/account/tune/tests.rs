//! Self-tuning on planted shopping: sequences whose best co-view window is known.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use crate::account::ServeRequest;
use crate::catalogue::{Product, UnixMillis};
use crate::event::Event;
use crate::models::{CoViewWindow, ModelSettings};
use crate::testing;
use crate::tuning::TuningReport;
use crate::zone::Strategy;

const T0: UnixMillis = 1_800_000_000_000;

/// Visitors each viewing `units` units that `unit` draws, one view every 25 ms, with
/// the account's lists at `models` and tuning on; what tuning knows after.
fn replay(
    models: ModelSettings,
    products: &[String],
    visitors: usize,
    units: usize,
    unit: impl Fn(&mut StdRng) -> Vec<String>,
) -> TuningReport {
    let catalogue = testing::catalogue(products.iter().map(|id| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(id)
    }));
    let account = testing::account_with_models(
        vec![testing::zone("P", Strategy::Personalized, 10)],
        catalogue,
        models,
    );
    let mut rng = StdRng::seed_from_u64(11);
    let mut now = T0;
    let mut served = 0u64;
    for visitor in 0..visitors {
        let visitor = format!("v{visitor}");
        for _ in 0..units {
            for id in unit(&mut rng) {
                account.serve(ServeRequest {
                    search: None,
                    visitor_id: Some(visitor.clone()),
                    session_id: None,
                    currency: None,
                    events: vec![Event::ProductView {
                        id: id.as_str().into(),
                    }]
                    .into(),
                    zones: Vec::new().into(),
                    now,
                });
                now += 25;
                served += 1;
                if served.is_multiple_of(100) {
                    // The server's rebuild round, which scores the trials taken.
                    account.rebuild_models();
                }
            }
        }
    }
    account.rebuild_models();
    let report = account.model_tuning();
    assert_eq!(report.dropped, 0);
    report
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn summary(report: &TuningReport) -> String {
    let mut out = format!(
        "active {:?}; switches {:?}\n",
        report.active, report.switches
    );
    for (setting, tally) in &report.settings {
        out += &format!("  {setting:?}: {tally:?}\n");
    }
    out
}

#[test]
fn on_shopping_whose_next_step_follows_the_last_view_tuning_picks_a_window_of_1() {
    // A walk: each product is followed by one of its 6 successors, drawn at random.
    // Pairs further apart add products the walk may reach later, not next: the lists
    // of the shortest window rank the next step best.
    let size = 300;
    let products = names("p", size);
    let mut rng = StdRng::seed_from_u64(3);
    let successors: Vec<Vec<usize>> = (0..size)
        .map(|_| (0..6).map(|_| rng.random_range(0..size)).collect())
        .collect();
    let report = replay(ModelSettings::default(), &products, 1_500, 1, |rng| {
        let mut at = rng.random_range(0..size);
        let mut walk = vec![format!("p{at}")];
        for _ in 0..19 {
            at = *successors[at].choose(rng).unwrap_or(&0);
            walk.push(format!("p{at}"));
        }
        walk
    });
    assert_eq!(
        report.active.window,
        CoViewWindow::One,
        "{}",
        summary(&report)
    );
}

#[test]
fn on_shopping_whose_next_step_follows_a_view_5_steps_back_tuning_picks_a_window_of_10() {
    // A chain of products, each 5 views after the one before, with 4 views of common
    // products between: only a window reaching 5 views back sees the chain.
    let chain = 40;
    let common = 200;
    let mut products = names("c", chain);
    products.extend(names("n", common));
    let fillers = names("n", common);
    let start = ModelSettings {
        co_view_window: CoViewWindow::One,
        ..ModelSettings::default()
    };
    let report = replay(start, &products, 2_000, 4, |rng| {
        let link = rng.random_range(0..chain);
        let mut unit = vec![format!("c{link}")];
        unit.extend(fillers.choose_multiple(rng, 4).cloned());
        unit.push(format!("c{}", (link + 1) % chain));
        unit
    });
    assert_eq!(
        report.active.window,
        CoViewWindow::Ten,
        "{}",
        summary(&report)
    );
}
