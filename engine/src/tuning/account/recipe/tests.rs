//! The recipe's trials: when they are taken and scored, and what they read.

use std::sync::Arc;

use super::super::tests::{Clock, T0, names, planted_account};
use crate::account::ServeRequest;
use crate::catalogue::UnixMillis;
use crate::event::Event;
use crate::models::{ModelSettings, Neighbours};
use crate::testing;

#[test]
fn recipe_trials_wait_for_the_rebuild_round_in_a_bounded_queue() {
    // Ten trials a second at most: a queue of 64 (the least of `PENDING_TRIALS`).
    let products = names("p", 300);
    let models = ModelSettings {
        tuning_trials_per_second: 10,
        ..ModelSettings::default()
    };
    let account = planted_account(&products, models);
    let judged: Vec<String> = shoppers(true).take(10).collect();
    // 200 judged requests, five a second, each bringing a product new to its visitor,
    // and no rebuild round meanwhile (a scorer starved of CPU).
    for (n, product) in products.iter().take(200).enumerate() {
        account.serve(ServeRequest {
            search: None,
            visitor_id: Some(judged[n % judged.len()].clone()),
            session_id: None,
            currency: None,
            events: vec![Event::ProductView {
                id: product.as_str().into(),
            }]
            .into(),
            zones: Vec::new().into(),
            now: T0 + UnixMillis::try_from(n).unwrap_or(0) * 200,
            context: Default::default(),
        });
    }
    let scored = |account: &crate::account::Account| {
        let report = account.recipe_tuning();
        (report.settings[0].1.scored.trials, report.dropped)
    };
    // Nothing is filled on the request path; beyond the queue's 64, trials are dropped
    // and counted.
    assert_eq!(scored(&account), (0, 136));
    // The rebuild round scores what waited.
    account.rebuild_models();
    assert_eq!(scored(&account), (64, 136));
}

/// Visitors whom self-evaluation judges (whose requests take the recipe's trials), or
/// those it does not.
pub(in crate::tuning::account) fn shoppers(judged: bool) -> impl Iterator<Item = String> {
    (0..)
        .map(|n| format!("shopper-{n}"))
        .filter(move |v| crate::prequential::sampled(v) == judged)
}

/// A visitor self-evaluation judges, and `others` it does not.
fn judged_and_not(others: usize) -> (String, Vec<String>) {
    let judged = shoppers(true).next().unwrap_or_default();
    (judged, shoppers(false).take(others).collect())
}

/// A view of the product `id`.
fn view(id: &str) -> Event {
    Event::ProductView { id: id.into() }
}

/// An account of `products` (`p0`, …) taking a recipe trial on every sampled request,
/// a sampled visitor, 30 others, and the clock after one of them viewed `p0` and the
/// lists were sorted (the published lists index the catalogue from then on: a rebuild
/// updates them).
fn sorted_once(products: usize) -> (crate::account::Account, String, Vec<String>, Clock) {
    let models = ModelSettings {
        tuning_trials_per_second: 1_000,
        ..ModelSettings::default()
    };
    let account = planted_account(&names("p", products), models);
    let (sampled, others) = judged_and_not(30);
    let mut clock = Clock::default();
    clock.serve(&account, &others[0], view("p0"));
    account.rebuild_models();
    (account, sampled, others, clock)
}

#[test]
fn a_recipe_trial_is_scored_on_the_lists_its_request_was_served_from() {
    // A sampled shopper views `p48`, then `p49`: the trial taken on the second view
    // brought `p49`, which no list held then. Before the round that scores it, other
    // shoppers view `p48` then `p49`, and a rebuild sorts that pair into the published
    // lists in place (as a rebuild running beside the requests does). The trial still
    // reads the lists it was served from, where no recipe finds `p49` (nor the popular
    // products, all alike then and first in id order).
    let (account, sampled, others, mut clock) = sorted_once(50);
    let published = account.models.neighbours.load_full();
    clock.serve(&account, &sampled, view("p48"));
    clock.serve(&account, &sampled, view("p49"));
    for other in &others {
        clock.serve(&account, other, view("p48"));
        clock.serve(&account, other, view("p49"));
    }
    account
        .models
        .rebuild_lists(&account.catalogue.load_full(), &account.catalogue);
    assert!(Arc::ptr_eq(
        &published,
        &account.models.neighbours.load_full()
    ));
    let p = |id: &str| {
        account
            .catalogue
            .load()
            .idx_of(id)
            .expect("in the catalogue")
    };
    assert!(
        Neighbours::list(&published.viewed_together, p("p48"))
            .is_some_and(|list| list.iter().any(|(idx, _)| *idx == p("p49"))),
        "the rebuild published the pair"
    );
    account.rebuild_models();
    let report = account.recipe_tuning();
    let trials: Vec<(u64, u64)> = report
        .settings
        .iter()
        .map(|(_, tally)| (tally.scored.trials, tally.scored.hits))
        .collect();
    // One trial on each of the two views.
    assert!(trials.iter().all(|(trials, _)| *trials == 2), "{report:?}");
    assert!(trials.iter().all(|(_, hits)| *hits == 0), "{report:?}");
}

#[test]
fn a_recipe_trial_ranks_only_the_products_new_to_the_visitor() {
    // Other shoppers buy `a0`..`a11` together, twenty times, and `a0` with `t` twice.
    // A sampled shopper buys `a0`..`a11`, then views `t`: the trial brought `t`. The
    // configured recipe (purchases at a quarter) ranks the eleven other `a`s above `t`
    // (each paired with the shopper's purchases twenty times), but those were bought
    // already and can never be what a request brings: among the products new to the
    // shopper, `t` comes first, and the trial is a hit.
    let mut products: Vec<String> = names("a", 12);
    products.push("t".to_owned());
    products.extend(names("p", 30));
    let models = ModelSettings {
        tuning_trials_per_second: 1_000,
        purchase_partner_damping: 0.0,
        ..ModelSettings::default()
    };
    let account = planted_account(&products, models);
    let (sampled, others) = judged_and_not(22);
    let group = names("a", 12);
    let mut clock = Clock::default();
    for (n, other) in others.iter().enumerate() {
        let ids = if n < 20 {
            group.clone()
        } else {
            vec!["a0".to_owned(), "t".to_owned()]
        };
        clock.serve(&account, other, testing::order(&format!("o{n}"), &ids));
    }
    clock.serve(&account, &sampled, testing::order("o100", &group));
    account.rebuild_models();
    let configured = |account: &crate::account::Account| {
        let report = account.recipe_tuning();
        let active = report.active.expect("a recipe");
        assert_eq!(active.purchases, 0.25, "{report:?}");
        report
            .settings
            .iter()
            .find(|(recipe, _)| *recipe == active)
            .map(|(_, tally)| (tally.scored.trials, tally.scored.hits))
            .expect("the active recipe is tried")
    };
    let (trials, hits) = configured(&account);
    clock.serve(&account, &sampled, Event::ProductView { id: "t".into() });
    account.rebuild_models();
    assert_eq!(configured(&account), (trials + 1, hits + 1));
}

#[test]
fn a_recipe_trial_reads_the_sessions_as_of_the_lists_it_reads() {
    // Other shoppers view `p48` then `p49` after the lists were last sorted: their
    // sessions hold the pair, the lists do not. A sampled shopper then views `p48`,
    // then `p49`: the trial on the second view brought `p49`, which the sessions as
    // recorded would find (beside `p48`) but the sessions as of the lists do not, so
    // no recipe, with the session part or without, is a hit. After a rebuild, the
    // same on `p46` and `p47` is a hit for the recipes that blend the sessions.
    let (account, sampled, others, mut clock) = sorted_once(50 + 30 * 12);
    for other in &others {
        clock.serve(&account, other, view("p48"));
        clock.serve(&account, other, view("p49"));
    }
    clock.serve(&account, &sampled, view("p48"));
    clock.serve(&account, &sampled, view("p49"));
    let tallies = |account: &crate::account::Account| -> Vec<(f64, u64, u64)> {
        account
            .recipe_tuning()
            .settings
            .iter()
            .map(|(recipe, tally)| (recipe.sessions, tally.scored.trials, tally.scored.hits))
            .collect()
    };
    account.rebuild_models();
    let first = tallies(&account);
    assert!(first.iter().any(|(sessions, _, _)| *sessions > 0.0));
    assert!(
        first
            .iter()
            .all(|(_, trials, hits)| *trials == 2 && *hits == 0),
        "{first:?}"
    );
    // Sorted since: other shoppers view `p46`, twelve products of their own, then
    // `p47` (too far apart for a co-view pair; their sessions hold both), and the
    // lists are sorted. The sampled shopper views `p46`, then `p47`: among the recipes
    // without popularity (which would find `p47`, now among the most viewed), those
    // that blend the sessions are hit more often than those that do not.
    for (n, other) in others.iter().enumerate() {
        clock.serve(&account, other, view("p46"));
        for filler in 0..12 {
            clock.serve(&account, other, view(&format!("p{}", 50 + n * 12 + filler)));
        }
        clock.serve(&account, other, view("p47"));
    }
    account.rebuild_models();
    clock.serve(&account, &sampled, view("p46"));
    clock.serve(&account, &sampled, view("p47"));
    account.rebuild_models();
    let second = account.recipe_tuning();
    let hits = |sessions: bool| {
        second
            .settings
            .iter()
            .filter(move |(recipe, _)| {
                recipe.popularity == 0.0 && (recipe.sessions > 0.0) == sessions
            })
            .map(|(_, tally)| tally.scored.hits)
    };
    let without = hits(false).max().expect("recipes without the sessions");
    let with = hits(true).min().expect("recipes with the sessions");
    assert!(with > without, "{second:?}");
}
