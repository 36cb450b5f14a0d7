//! Self-tuning on planted shopping: sequences whose best co-view window is known.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use crate::account::AccountSettings;
use crate::account::ServeRequest;
use crate::catalogue::{Product, UnixMillis};
use crate::event::{BasketLine, Event};
use crate::models::{CoViewWindow, ModelSettings};
use crate::testing;
use crate::tuning::{Pins, Tuning, TuningReport};
use crate::zone::Strategy;

pub(super) const T0: UnixMillis = 1_800_000_000_000;

/// The replays' requests: one every 25 ms from [`T0`], the server's rebuild round (which
/// scores the trials taken) after every 100; each visitor's session id sent back, as a
/// store's client does.
#[derive(Debug)]
pub(super) struct Clock {
    now: UnixMillis,
    served: u64,
    sessions: std::collections::HashMap<String, String>,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock {
            now: T0,
            served: 0,
            sessions: std::collections::HashMap::new(),
        }
    }
}

impl Clock {
    pub(super) fn serve(&mut self, account: &crate::account::Account, visitor: &str, event: Event) {
        let served = account.serve(ServeRequest {
            search: None,
            visitor_id: Some(visitor.to_owned()),
            session_id: self.sessions.get(visitor).cloned(),
            currency: None,
            events: vec![event].into(),
            zones: Vec::new().into(),
            now: self.now,
            context: Default::default(),
        });
        self.sessions
            .insert(visitor.to_owned(), served.session_id().to_owned());
        self.now += 25;
        self.served += 1;
        if self.served.is_multiple_of(100) {
            account.rebuild_models();
        }
    }
}

/// How a replayed shopper takes a step of the visit.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Views the product's page.
    View,
    /// Puts the product in the basket from a listing (never viewing its page): the
    /// basket so far, reported whole.
    BasketLine,
    /// Buys the product on its own from a listing (a quick order, no basket sync): an
    /// order of that one line.
    OrderLine,
}

/// Visitors each taking `units` units of steps that `unit` draws, one step every 25
/// ms, with the account's lists at `models` and tuning on; what tuning knows after.
fn replay(
    models: ModelSettings,
    (tuning, step): (Tuning, Step),
    products: &[String],
    visitors: usize,
    units: usize,
    unit: impl Fn(&mut StdRng) -> Vec<String>,
) -> TuningReport {
    let account = planted_account(products, models);
    let settings = (*account.settings()).clone();
    account.replace_settings(AccountSettings { tuning, ..settings });
    let mut rng = StdRng::seed_from_u64(11);
    let mut clock = Clock::default();
    for visitor in 0..visitors {
        let visitor = format!("v{visitor}");
        let mut basket: Vec<BasketLine> = Vec::new();
        for _ in 0..units {
            for id in unit(&mut rng) {
                let event = match step {
                    Step::View => Event::ProductView {
                        id: id.as_str().into(),
                    },
                    Step::BasketLine => {
                        if !basket.iter().any(|line| line.id == id.as_str()) {
                            basket.push(testing::line(&id));
                        }
                        Event::SetBasket {
                            items: basket.clone(),
                        }
                    }
                    Step::OrderLine => {
                        testing::order(&format!("{visitor}-{}", clock.served), &[&id])
                    }
                };
                clock.serve(&account, &visitor, event);
            }
        }
    }
    account.rebuild_models();
    let report = account.model_tuning();
    assert_eq!(report.dropped, 0);
    report
}

/// An account of `products`, priced, with one `personalized` zone and its lists at
/// `models`.
pub(super) fn planted_account(
    products: &[String],
    models: ModelSettings,
) -> crate::account::Account {
    let catalogue = testing::catalogue(products.iter().map(|id| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(id)
    }));
    testing::account_with_models(
        vec![testing::zone("P", Strategy::Personalized, 10)],
        catalogue,
        models,
    )
}

pub(super) fn names(prefix: &str, n: usize) -> Vec<String> {
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
    next_step_follows_the_last_one(Step::View);
}

#[test]
fn on_shopping_put_in_the_basket_from_listings_the_co_view_lists_are_tuned_on_those_steps() {
    // The same shopping, each step a basket line put in from a listing: the steps the
    // co-view lists count are the ones they are tried on.
    next_step_follows_the_last_one(Step::BasketLine);
}

#[test]
fn on_shopping_bought_a_line_at_a_time_from_listings_the_co_view_lists_are_tuned_on_those_lines() {
    // The same shopping, each step an order of one line new to the basket: a step of
    // the visit too, counted and tried alike.
    next_step_follows_the_last_one(Step::OrderLine);
}

fn next_step_follows_the_last_one(step: Step) {
    // A product of 300 is followed by one of 20 popular ones (its own), and rare
    // products (a pool of 20,000) come before and after: the popular product is what a
    // shopper views next, but a longer window pairs the product with more rare ones,
    // whose small totals weigh them above the popular product (damped by its large
    // total) in its list. At the damping this store pinned (0.75), only the window of
    // 1 keeps the popular product in its top 10.
    let (anchors, popular, rare) = (300, 20, 20_000);
    let mut products = names("a", anchors);
    products.extend(names("s", popular));
    products.extend(names("r", rare));
    let pinned = Tuning::Auto(Pins {
        co_view_window: None,
        partner_damping: Some(0.75),
        ..Pins::default()
    });
    let models = ModelSettings {
        partner_damping: 0.75,
        ..ModelSettings::default()
    };
    let report = replay(models, (pinned, step), &products, 2_000, 3, |rng| {
        let anchor = rng.random_range(0..anchors);
        let mut unit = vec![
            format!("r{}", rng.random_range(0..rare)),
            format!("a{anchor}"),
            format!("s{}", anchor % popular),
        ];
        unit.extend((0..3).map(|_| format!("r{}", rng.random_range(0..rare))));
        unit
    });
    assert_eq!(
        report.active.window,
        CoViewWindow::One,
        "{}",
        summary(&report)
    );
    assert_eq!(
        report.active.partner_damping,
        0.75,
        "pinned: {}",
        summary(&report)
    );
    assert_eq!(
        report.settings.len(),
        CoViewWindow::ALL.len() * crate::tuning::FORWARD_WEIGHTS.len()
    );
}

#[test]
fn on_shopping_whose_next_step_is_what_follows_a_product_not_what_precedes_it_tuning_reads_pairs_by_direction()
 {
    // Each of 60 anchors is reached from one of its own 12 predecessors (720 rare
    // products) and followed by one of 2 very popular products. Read either way, an
    // anchor's list ranks its 12 predecessors above its successor at the damping this
    // store pinned (0.75: the successor's large total damps it), so the successor, the
    // product viewed next, is never in the top 10; read by direction (1), the
    // predecessors count nothing and the successor comes first. Half the weight on
    // direction is not enough (a predecessor's half count still outweighs 1.5 times the
    // successor's).
    let (anchors, predecessors, popular) = (60, 12, 2);
    let mut products = names("a", anchors);
    products.extend(names("p", anchors * predecessors));
    products.extend(names("s", popular));
    let pinned = Tuning::Auto(Pins {
        partner_damping: Some(0.75),
        ..Pins::default()
    });
    let models = ModelSettings {
        partner_damping: 0.75,
        ..ModelSettings::default()
    };
    let report = replay(models, (pinned, Step::View), &products, 1_500, 3, |rng| {
        let anchor = rng.random_range(0..anchors);
        let predecessor = anchor * predecessors + rng.random_range(0..predecessors);
        vec![
            format!("p{predecessor}"),
            format!("a{anchor}"),
            format!("s{}", anchor % popular),
        ]
    });
    assert_eq!(report.active.forward, 1.0, "{}", summary(&report));
    assert_eq!(report.active.partner_damping, 0.75, "pinned");
    // Every window read either way hits less than read by direction.
    let hits = |window: CoViewWindow, forward: f32| {
        report
            .settings
            .iter()
            .find(|(s, _)| s.window == window && s.forward == forward)
            .map(|(_, tally)| tally.scored.hits)
    };
    for window in CoViewWindow::ALL {
        assert!(
            hits(window, 0.0) < hits(window, 1.0),
            "{window:?}: {}",
            summary(&report)
        );
    }
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
    let report = replay(
        start,
        (Tuning::default(), Step::View),
        &products,
        2_000,
        4,
        |rng| {
            let link = rng.random_range(0..chain);
            let mut unit = vec![format!("c{link}")];
            unit.extend(fillers.choose_multiple(rng, 4).cloned());
            unit.push(format!("c{}", (link + 1) % chain));
            unit
        },
    );
    assert_eq!(
        report.active.window,
        CoViewWindow::Ten,
        "{}",
        summary(&report)
    );
}

/// Visitors each placing `orders` orders whose lines `order` draws (given the visitor
/// and the order's number for them), each line put in the basket in turn and then the whole
/// ordered, one request every 25 ms, the account's lists at `models` and tuned as
/// `tuning` says; what self-tuning of the co-purchase lists knows after, and of the
/// co-view lists.
fn replay_orders(
    (models, tuning): (ModelSettings, Tuning),
    (visitors, orders): (usize, usize),
    products: &[String],
    order: impl Fn(&mut StdRng, usize, usize) -> Vec<String>,
) -> (TuningReport, TuningReport) {
    let account = planted_account(products, models);
    let settings = (*account.settings()).clone();
    account.replace_settings(AccountSettings { tuning, ..settings });
    let mut rng = StdRng::seed_from_u64(5);
    let mut clock = Clock::default();
    let mut placed = 0u64;
    for n in 0..visitors {
        let visitor = format!("v{n}");
        for number in 0..orders {
            let ids = order(&mut rng, n, number);
            let lines: Vec<BasketLine> = ids.iter().map(|id| testing::line(id)).collect();
            let mut events: Vec<Event> = (1..=lines.len())
                .map(|n| Event::SetBasket {
                    items: lines[..n].to_vec(),
                })
                .collect();
            placed += 1;
            events.push(testing::order(&format!("o{placed}"), &ids));
            for event in events {
                clock.serve(&account, &visitor, event);
            }
        }
    }
    account.rebuild_models();
    (account.purchase_model_tuning(), account.model_tuning())
}

#[test]
fn on_orders_whose_next_product_is_a_popular_partner_the_co_purchase_lists_stop_damping_it() {
    // Each order puts an anchor (one of 300) in the basket, then three rare products (a
    // pool of 20,000), then the anchor's partner, one of 5 popular products. The
    // partner is what a shopper puts in the basket next, but its large total damps it
    // below the rare products an anchor was bought with once: at the default damping
    // (0.5) the partner leaves the anchor's top 10; less damping keeps it.
    let (anchors, popular, rare) = (300, 5, 20_000);
    let mut products = names("a", anchors);
    products.extend(names("s", popular));
    products.extend(names("r", rare));
    let defaults = (ModelSettings::default(), Tuning::default());
    let (report, views) = replay_orders(defaults, (2_000, 3), &products, |rng, _, _| {
        let anchor = rng.random_range(0..anchors);
        let mut order = vec![format!("a{anchor}")];
        order.extend((0..3).map(|_| format!("r{}", rng.random_range(0..rare))));
        order.push(format!("s{}", anchor % popular));
        order
    });
    assert_eq!(report.dropped, 0);
    assert!(
        report.active.partner_damping <= 0.25 && !report.switches.is_empty(),
        "{}",
        summary(&report)
    );
    // The basket lines, put in without a view of their pages, are the steps the
    // co-view lists are tried on too.
    assert!(views.settings.iter().all(|(_, t)| t.scored.trials > 0));
}

/// A shopper's orders following a chain of 40 products: each order ends with the
/// successor of the one the shopper's order before ended with, after two rare products
/// (a pool of 20,000). A product and its successor are never in one order: only a
/// window reaching the purchases before an order pairs them.
fn chained_orders(models: ModelSettings, tuning: Tuning) -> TuningReport {
    let (chain, rare) = (40, 20_000);
    let mut products = names("c", chain);
    products.extend(names("r", rare));
    let (report, _) = replay_orders(
        (models, tuning),
        (1_500, 4),
        &products,
        |rng, visitor, number| {
            let mut order: Vec<String> = (0..2)
                .map(|_| format!("r{}", rng.random_range(0..rare)))
                .collect();
            order.push(format!("c{}", (visitor * 7 + number) % chain));
            order
        },
    );
    report
}

#[test]
fn on_orders_whose_next_product_follows_the_last_order_the_co_purchase_window_widens() {
    let report = chained_orders(ModelSettings::default(), Tuning::default());
    assert_ne!(
        report.active.window,
        CoViewWindow::One,
        "{}",
        summary(&report)
    );
    // The co-view lists' pins leave the co-purchase lists tuning.
    let co_view_pinned = Tuning::Auto(Pins {
        co_view_window: Some(CoViewWindow::One),
        partner_damping: Some(0.5),
        ..Pins::default()
    });
    let models = ModelSettings {
        co_view_window: CoViewWindow::One,
        ..ModelSettings::default()
    };
    let report = chained_orders(models, co_view_pinned);
    assert_ne!(
        report.active.window,
        CoViewWindow::One,
        "{}",
        summary(&report)
    );
}

#[test]
fn a_pinned_co_purchase_window_damping_and_direction_stay_whatever_the_orders_say() {
    // The orders above, on which a wider window wins, with the co-purchase lists'
    // window pinned at 1 as configured: only the damping may move.
    let models = ModelSettings {
        co_purchase_window: CoViewWindow::One,
        ..ModelSettings::default()
    };
    let window_pinned = Tuning::Auto(Pins {
        co_purchase_window: Some(CoViewWindow::One),
        ..Pins::default()
    });
    let report = chained_orders(models, window_pinned);
    assert_eq!(
        report.active.window,
        CoViewWindow::One,
        "{}",
        summary(&report)
    );
    assert!(
        report
            .settings
            .iter()
            .all(|(s, _)| s.window == CoViewWindow::One)
    );
    // All three pinned: one setting, no trial can move it.
    let models = ModelSettings {
        co_purchase_window: CoViewWindow::One,
        purchase_partner_damping: 0.75,
        co_purchase_forward: 0.5,
        ..ModelSettings::default()
    };
    let all_pinned = Tuning::Auto(Pins {
        co_purchase_window: Some(CoViewWindow::One),
        purchase_partner_damping: Some(0.75),
        co_purchase_forward: Some(0.5),
        ..Pins::default()
    });
    let report = chained_orders(models, all_pinned);
    assert_eq!(report.settings.len(), 1, "{}", summary(&report));
    assert_eq!(
        (
            report.active.window,
            report.active.partner_damping,
            report.active.forward
        ),
        (CoViewWindow::One, 0.75, 0.5)
    );
    assert!(report.switches.is_empty());
}

#[test]
fn where_popularity_predicts_what_the_history_does_not_personalized_gains_popularity_weight() {
    // Each shopper views three rare products (a pool of 5,000: their pairs are noise),
    // then one of 20 popular ones, the first far more often than the last. The
    // visitor's history says nothing of the popular product; popularity does. The
    // guard: `personalized` (no popularity in its recipe as configured) loses to
    // `trending`, and self-tuning moves its recipe to one that blends popularity in.
    let (rare, popular) = (5_000, 20);
    let mut products = names("r", rare);
    products.extend(names("s", popular));
    let models = ModelSettings {
        tuning_trials_per_second: 1_000,
        ..ModelSettings::default()
    };
    let account = planted_account(&products, models);
    assert_eq!(
        account.recipe_tuning().active.map(|r| r.popularity),
        Some(0.0)
    );
    let mut rng = StdRng::seed_from_u64(3);
    let mut clock = Clock::default();
    for n in 0..2_000 {
        let visitor = format!("v{n}");
        let mut views: Vec<String> = (0..3)
            .map(|_| format!("r{}", rng.random_range(0..rare)))
            .collect();
        // Popularity falling as 1/rank: s0 the most viewed.
        let weights: Vec<f64> = (1..=popular).map(|rank| 1.0 / rank as f64).collect();
        let draw = rng.random_range(0.0..weights.iter().sum::<f64>());
        let mut seen = 0.0;
        let pick = weights
            .iter()
            .position(|w| {
                seen += w;
                seen > draw
            })
            .unwrap_or(0);
        views.push(format!("s{pick}"));
        for id in views {
            clock.serve(&account, &visitor, Event::ProductView { id: id.into() });
        }
    }
    // The trials are scored off the request path, on the rebuild round: the last ones
    // too.
    account.rebuild_models();
    let report = account.recipe_tuning();
    assert_eq!(report.dropped, 0, "{report:?}");
    let active = report.active.expect("a recipe");
    assert!(
        active.popularity > 0.0 && !report.switches.is_empty(),
        "{report:?}"
    );
    // The zone is filled with it from then on.
    let settings = account.settings();
    assert_eq!(settings.zones[0].recipe.popularity, active.popularity);
    assert!(account.tuning_generation() > 0);
}

/// The co-purchase lists read at their own seed damping (0 by default), the co-view
/// lists at theirs.
#[test]
fn the_co_purchase_lists_read_at_their_own_seed_damping() {
    let models = ModelSettings {
        seed_damping: 0.5,
        purchase_seed_damping: 0.25,
        ..ModelSettings::default()
    };
    let account = planted_account(&[], models);
    assert_eq!(account.models.coview.dampings().1, 0.5);
    assert_eq!(account.models.copurchase.dampings().1, 0.25);
    assert_eq!(ModelSettings::default().purchase_seed_damping, 0.0);
    // A reload reads them at a new one.
    let models = ModelSettings {
        purchase_seed_damping: 0.75,
        ..models
    };
    let mut settings = AccountSettings::clone(&account.settings.load());
    settings.models = models;
    account.reconfigure_lists(crate::tuning::Lists::CoPurchase, &settings);
    assert_eq!(account.models.copurchase.dampings().1, 0.75);
}
