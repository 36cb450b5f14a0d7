use rand::{Rng, SeedableRng};

use super::*;

fn setting(window: CoViewWindow, partner_damping: f32) -> ListSetting {
    directed(window, partner_damping, 0.0)
}

fn directed(window: CoViewWindow, partner_damping: f32, forward: f32) -> ListSetting {
    ListSetting {
        window,
        partner_damping,
        forward,
    }
}

#[test]
fn the_evidence_is_the_mixtures_likelihood_ratio() {
    // ∫_{½}^{1} 2 p^w (1-p)^l dp / ½^(w+l), by the midpoint rule.
    let integrated = |wins: i32, losses: i32| {
        let steps = 200_000;
        let width = 0.5 / f64::from(steps);
        let sum: f64 = (0..steps)
            .map(|i| {
                let p = 0.5 + (f64::from(i) + 0.5) * width;
                2.0 * p.powi(wins) * (1.0 - p).powi(losses) * width
            })
            .sum();
        (sum / 0.5f64.powi(wins + losses)).ln()
    };
    for (wins, losses) in [(0, 0), (1, 0), (0, 1), (5, 5), (30, 10), (10, 30), (60, 35)] {
        let got = evidence(wins as u64, losses as u64);
        let want = integrated(wins, losses);
        assert!(
            (got - want).abs() < 1e-4,
            "{wins}/{losses}: {got} vs {want}"
        );
    }
    // More wins, more evidence; a grid of 9 needs ln(8 / 0.01), of 27 ln(26 / 0.01).
    assert!(evidence(40, 10) > evidence(30, 10));
    assert!((threshold(9) - (800f64).ln()).abs() < 1e-12);
    assert!((threshold(27) - (2600f64).ln()).abs() < 1e-12);
}

#[test]
fn a_setting_no_better_than_the_active_one_rarely_passes_however_often_it_is_looked_at() {
    // A fair coin for each discordant trial, looked at after every one: the test must
    // pass in at most about α of the runs.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (runs, trials, level) = (300, 600, 0.05f64);
    let mut passed = 0;
    for _ in 0..runs {
        let (mut wins, mut losses) = (0u64, 0u64);
        for _ in 0..trials {
            if rng.random_bool(0.5) {
                wins += 1;
            } else {
                losses += 1;
            }
            if evidence(wins, losses) >= (1.0 / level).ln() {
                passed += 1;
                break;
            }
        }
    }
    assert!(passed <= runs * 7 / 100, "{passed} of {runs} passed");
}

#[test]
fn a_setting_that_wins_significantly_becomes_the_active_one_and_the_counts_start_again() {
    let models = ModelSettings::default();
    let tuner = Tuner::new(Tuning::default(), &models);
    let grid = Tuning::default().grid(&models);
    assert_eq!(grid.len(), 27);
    assert_eq!(tuner.active(), setting(CoViewWindow::Ten, 0.5));
    let better = setting(CoViewWindow::One, 0.5);
    let at = grid.iter().position(|s| *s == better).unwrap();
    let active = grid.iter().position(|s| *s == tuner.active()).unwrap();
    let mut switched = None;
    for trial in 0..400u64 {
        // The active setting hits one trial in three; `better` two in three; the
        // others never.
        let ranks: Vec<Option<usize>> = (0..grid.len())
            .map(|i| match i {
                i if i == at => (trial % 3 != 0).then_some(1),
                i if i == active => (trial % 3 == 0).then_some(0),
                _ => None,
            })
            .collect();
        if let Some(new) = tuner.record(&grid, &ranks, 1_000 + trial as i64) {
            switched = Some((trial, new));
            break;
        }
    }
    let (trial, new) = switched.expect("a switch");
    assert_eq!(new, better);
    assert_eq!(tuner.active(), better);
    assert_eq!(tuner.generation(), 1);
    let report = tuner.report();
    assert_eq!(report.switches.len(), 1);
    let switch = report.switches[0];
    assert_eq!(
        (switch.from, switch.to),
        (setting(CoViewWindow::Ten, 0.5), better)
    );
    assert!(switch.evidence >= report.threshold, "{switch:?}");
    assert!(switch.wins + switch.losses >= MIN_DISCORDANT);
    assert_eq!(switch.trials, trial + 1);
    assert!(
        report
            .settings
            .iter()
            .all(|(_, tally)| tally.scored.trials == 0)
    );
}

#[test]
fn a_setting_as_good_as_the_active_one_does_not_replace_it() {
    let models = ModelSettings::default();
    let tuner = Tuner::new(Tuning::default(), &models);
    let grid = Tuning::default().grid(&models);
    for trial in 0..2_000u64 {
        // Every setting hits the same trials.
        let ranks: Vec<Option<usize>> =
            grid.iter().map(|_| (trial % 2 == 0).then_some(0)).collect();
        assert_eq!(tuner.record(&grid, &ranks, trial as i64), None);
    }
    let report = tuner.report();
    assert!(
        report
            .settings
            .iter()
            .all(|(_, t)| t.scored.trials == 2_000 && t.scored.hits == 1_000)
    );
}

#[test]
fn pinned_values_narrow_the_grid_and_tuning_off_leaves_nothing_to_tune() {
    let models = ModelSettings {
        co_view_window: CoViewWindow::Three,
        ..ModelSettings::default()
    };
    let pinned = Tuning::Auto(Pins {
        co_view_window: Some(CoViewWindow::Three),
        partner_damping: None,
        ..Pins::default()
    });
    let grid = pinned.grid(&models);
    assert_eq!(grid.len(), PARTNER_DAMPINGS.len() * FORWARD_WEIGHTS.len());
    assert!(grid.iter().all(|s| s.window == CoViewWindow::Three));
    let both = Tuning::Auto(Pins {
        co_view_window: Some(CoViewWindow::Three),
        partner_damping: Some(0.5),
        ..Pins::default()
    });
    assert_eq!(
        both.grid(&models),
        FORWARD_WEIGHTS.map(|f| directed(CoViewWindow::Three, 0.5, f))
    );
    let all = Tuning::Auto(Pins {
        co_view_window: Some(CoViewWindow::Three),
        partner_damping: Some(0.5),
        co_view_forward: Some(0.0),
        ..Pins::default()
    });
    assert_eq!(all.grid(&models), [setting(CoViewWindow::Three, 0.5)]);
    // A pinned weight on direction other than the grid's: the configured setting
    // (the weight configured with the pin) and every other value at it.
    let forward_pinned = Tuning::Auto(Pins {
        co_view_forward: Some(0.7),
        ..Pins::default()
    });
    let configured_forward = ModelSettings {
        co_view_forward: 0.7,
        ..models
    };
    let grid = forward_pinned.grid(&configured_forward);
    assert_eq!(grid.len(), CoViewWindow::ALL.len() * PARTNER_DAMPINGS.len());
    assert!(grid.iter().all(|s| s.forward == 0.7));
    let off = Tuner::new(Tuning::Off, &models);
    assert_eq!(off.due(1_000_000), None);
    assert!(!off.report().tuning);
    assert_eq!(off.active(), setting(CoViewWindow::Three, 0.5));
    // Nor is a setting chosen before restored once tuning is off.
    assert!(!off.restore(setting(CoViewWindow::One, 0.5)));
    assert_eq!(off.active(), setting(CoViewWindow::Three, 0.5));
}

#[test]
fn trials_are_bounded_per_second_a_seconds_worth_at_once() {
    let tuner = Tuner::new(Tuning::default(), &ModelSettings::default());
    let rate = TRIALS_PER_SECOND as usize;
    let due = (0..rate * 2)
        .filter(|_| tuner.due(10_000).is_some())
        .count();
    assert_eq!(due, rate);
    // One more every 1/rate of a second.
    let step = 1_000 / i64::from(TRIALS_PER_SECOND);
    assert!(tuner.due(10_000 + step - 1).is_none());
    assert!(tuner.due(10_000 + step).is_some());
    assert!(tuner.due(10_000 + step).is_none());
    // A quiet second fills the bucket again, never beyond a second's worth.
    let later = 20_000;
    let due = (0..rate * 2).filter(|_| tuner.due(later).is_some()).count();
    assert_eq!(due, rate);
}

#[test]
fn a_reload_keeps_a_tuned_setting_the_new_grid_has_and_drops_one_it_has_not() {
    let models = ModelSettings::default();
    let tuner = Tuner::new(Tuning::default(), &models);
    assert!(tuner.restore(setting(CoViewWindow::One, 0.25)));
    assert_eq!(
        tuner.reconfigure(Tuning::default(), &models),
        setting(CoViewWindow::One, 0.25)
    );
    let pinned = Tuning::Auto(Pins {
        co_view_window: Some(CoViewWindow::Ten),
        partner_damping: None,
        ..Pins::default()
    });
    assert_eq!(
        tuner.reconfigure(pinned, &models),
        setting(CoViewWindow::Ten, 0.5)
    );
}

#[test]
fn the_co_purchase_lists_are_pinned_by_their_own_settings_only() {
    // The co-purchase lists as configured: a window of 1 (the order's own lines).
    let models = ModelSettings {
        co_view_window: CoViewWindow::One,
        ..ModelSettings::default()
    };
    let grid = Tuning::default()
        .for_purchases()
        .grid_of(&models, &PURCHASE_PARTNER_DAMPINGS);
    assert_eq!(
        grid.len(),
        CoViewWindow::ALL.len() * PURCHASE_PARTNER_DAMPINGS.len() * FORWARD_WEIGHTS.len()
    );
    assert!(grid.contains(&setting(CoViewWindow::Ten, 0.0)));
    // The co-view lists' pins leave the co-purchase lists' grid whole.
    let co_view_pinned = Tuning::Auto(Pins {
        co_view_window: Some(CoViewWindow::Three),
        partner_damping: Some(0.25),
        ..Pins::default()
    })
    .for_purchases();
    assert_eq!(
        co_view_pinned.grid_of(&models, &PURCHASE_PARTNER_DAMPINGS),
        grid
    );
    // Their own damping and weight on direction pinned: the configured setting first,
    // then every window at them.
    let damping_pinned = Tuning::Auto(Pins {
        purchase_partner_damping: Some(0.25),
        co_purchase_forward: Some(1.0),
        ..Pins::default()
    })
    .for_purchases();
    assert_eq!(
        damping_pinned.grid_of(&models, &PURCHASE_PARTNER_DAMPINGS),
        vec![
            setting(CoViewWindow::One, 0.5),
            directed(CoViewWindow::One, 0.25, 1.0),
            directed(CoViewWindow::Three, 0.25, 1.0),
            directed(CoViewWindow::Ten, 0.25, 1.0),
        ]
    );
    // Their own window pinned: every damping at it.
    let window_pinned = Tuning::Auto(Pins {
        co_purchase_window: Some(CoViewWindow::Ten),
        ..Pins::default()
    })
    .for_purchases();
    let grid = window_pinned.grid_of(&models, &PURCHASE_PARTNER_DAMPINGS);
    assert!(grid.contains(&setting(CoViewWindow::Ten, 0.0)));
    assert_eq!(
        grid.iter()
            .filter(|s| s.window == CoViewWindow::Ten)
            .count(),
        PURCHASE_PARTNER_DAMPINGS.len() * FORWARD_WEIGHTS.len()
    );
    assert!(
        grid.iter()
            .all(|s| s.window == CoViewWindow::Ten || *s == setting(CoViewWindow::One, 0.5))
    );
    assert_eq!(Tuning::Off.for_purchases().grid(&models).len(), 1);
}

#[test]
fn an_anchored_board_follows_the_setting_that_beats_the_first_and_goes_back_when_its_edge_fades() {
    let mut board = Board::anchored(vec![1u8, 2, 3]);
    // Early on, setting 2 (index 1) hits where the first misses.
    let mut switched = None;
    for trial in 0..300i64 {
        let ranks = [None, Some(0), (trial % 2 == 0).then_some(0)];
        if let Some(switch) = board.record(&ranks, trial) {
            switched = Some((trial, switch));
            break;
        }
    }
    let (at, switch) = switched.expect("a switch");
    assert_eq!((switch.from, switch.to), (1, 2), "after {at} trials");
    assert_eq!(board.active(), Some(2));
    // Later the first hits where it misses, long enough for its edge to fade: the
    // first is active again, without a second threshold to pass.
    let mut back = None;
    for trial in 0..5_000i64 {
        if let Some(switch) = board.record(&[Some(0), None, None], 1_000 + trial) {
            back = Some(switch);
            break;
        }
    }
    let back = back.expect("back to the first");
    assert_eq!((back.from, back.to), (2, 1));
    assert_eq!(board.active(), Some(1));
    // The trials never started again: the early wins are still counted.
    assert!(
        board.tallies[1].wins >= MIN_DISCORDANT,
        "{:?}",
        board.tallies[1]
    );
    assert!(board.tallies[1].losses > 0);
}
