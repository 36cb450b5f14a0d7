use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};

use super::*;
use crate::analytics::Spread;

/// The mixture's ratio at `d`, computed here from the formula.
fn by_hand(d: f64, v: f64, pooled: f64) -> f64 {
    [100.0, 1_000.0, 10_000.0, 100_000.0]
        .iter()
        .map(|n: &f64| {
            let t2 = 2.0 * pooled / n;
            (v / (v + t2)).sqrt() * (t2 * d * d / (2.0 * v * (v + t2))).exp()
        })
        .sum::<f64>()
        / 4.0
}

#[test]
fn the_ratio_and_the_interval_match_a_hand_computation() {
    // 1,000 visitors each; 100 against 130 conversions. Pooled p = 0.115, pooled
    // variance 0.101775 × 0.002 = 0.00020355; Welch 0.09/1000 + 0.1131/1000 =
    // 0.0002031: V = 0.00020355.
    let c = compare(
        &Sample::proportion(100, 1000),
        &Sample::proportion(130, 1000),
    )
    .unwrap();
    let (v, pooled) = (0.00020355, 0.101775);
    assert!((c.difference - 0.03).abs() < 1e-12);
    assert!(
        (c.p_value - 1.0 / by_hand(0.03, v, pooled)).abs() < 1e-9,
        "{c:?}"
    );
    // The interval's ends are where the ratio reaches 1/α = 20.
    let half = (c.interval.1 - c.interval.0) / 2.0;
    assert!((by_hand(half, v, pooled) - 20.0).abs() < 1e-6, "{c:?}");
    // A fixed-horizon test calls this significant (p = 0.035); the always-valid one,
    // which pays for being read at any time, does not yet.
    assert!(!c.significant() && c.p_value > ALPHA, "{c:?}");
    // Ten times the visitors, the same rates: it does.
    let c = compare(
        &Sample::proportion(1000, 10_000),
        &Sample::proportion(1300, 10_000),
    )
    .unwrap();
    assert!(c.significant() && c.p_value < ALPHA, "{c:?}");
    let (relative, (low, high)) = c.relative().unwrap();
    assert!((relative - 0.3).abs() < 1e-9 && low > 0.0 && high > relative);
    // A large difference in a small store shows early: 200 visitors each, 11 % against
    // 46 %.
    let small = compare(&Sample::proportion(22, 200), &Sample::proportion(92, 200)).unwrap();
    assert!(small.significant(), "{small:?}");
    // Too few visitors, or nothing converting at all: nothing concluded; nothing
    // converting in the control: no relative figure.
    assert!(compare(&Sample::proportion(10, 99), &Sample::proportion(20, 99)).is_none());
    assert!(compare(&Sample::proportion(0, 500), &Sample::proportion(0, 500)).is_none());
    let from_nothing = compare(&Sample::proportion(0, 500), &Sample::proportion(5, 500)).unwrap();
    assert!(from_nothing.relative().is_none() && (from_nothing.difference - 0.01).abs() < 1e-12);
}

/// One simulated visitor of a store: converts with `conversion`, spending a lognormal
/// basket (median 40.00, heavy-tailed: σ = 1.2) when it does.
fn visitor(rng: &mut StdRng, conversion: f64, baskets: &LogNormal<f64>) -> i64 {
    if rng.random_bool(conversion) {
        baskets.sample(rng).round().max(1.0) as i64
    } else {
        0
    }
}

/// A group's conversions and revenue spread as an experiment keeps them.
#[derive(Default)]
struct Group {
    visitors: u64,
    ordering: u64,
    spread: Spread,
}

impl Group {
    fn add(&mut self, revenue: i64) {
        self.visitors += 1;
        if revenue > 0 {
            self.ordering += 1;
            self.spread.moved(0, revenue);
        }
    }

    /// Revenue per visitor capped at `cap`.
    fn revenue(&self, cap: Option<u16>) -> Sample {
        let (sum, squares) = self.spread.capped(cap);
        Sample {
            visitors: self.visitors as f64,
            sum,
            squares,
        }
    }
}

/// What one run concluded: (conversion, revenue per visitor), always-valid then a
/// fixed-horizon z-test read the same way.
struct Run {
    always_valid: (bool, bool),
    fixed: (bool, bool),
}

/// 20,000 visitors split in two halves by a coin, read after every 100: whether a
/// reading ever declared a difference. The variant converts at `lifted`.
fn run(seed: u64, conversion: f64, lifted: f64) -> Run {
    let mut rng = StdRng::seed_from_u64(seed);
    let baskets = LogNormal::new(4000f64.ln(), 1.2).unwrap();
    let (mut control, mut variant) = (Group::default(), Group::default());
    let mut outcome = Run {
        always_valid: (false, false),
        fixed: (false, false),
    };
    let fixed = |c: &Sample, v: &Sample| {
        if c.visitors < MIN_VISITORS || v.visitors < MIN_VISITORS {
            return false;
        }
        let se = (c.variance() / c.visitors + v.variance() / v.visitors).sqrt();
        se > 0.0 && (v.mean() - c.mean()).abs() > 1.96 * se
    };
    for n in 1..=20_000 {
        if rng.random_bool(0.5) {
            let revenue = visitor(&mut rng, conversion, &baskets);
            control.add(revenue);
        } else {
            let revenue = visitor(&mut rng, lifted, &baskets);
            variant.add(revenue);
        }
        if n % 100 != 0 {
            continue;
        }
        let conversions = (
            Sample::proportion(control.ordering, control.visitors),
            Sample::proportion(variant.ordering, variant.visitors),
        );
        let mut pooled = control.spread.clone();
        pooled.add(&variant.spread);
        let cap = pooled.cap_at(0.99);
        let revenues = (control.revenue(cap), variant.revenue(cap));
        let declared = |c: &Sample, v: &Sample| compare(c, v).is_some_and(|c| c.significant());
        outcome.always_valid.0 |= declared(&conversions.0, &conversions.1);
        outcome.always_valid.1 |= declared(&revenues.0, &revenues.1);
        outcome.fixed.0 |= fixed(&conversions.0, &conversions.1);
        outcome.fixed.1 |= fixed(&revenues.0, &revenues.1);
    }
    outcome
}

/// A/A runs read after every 100 visitors for 20,000 visitors: the share declared
/// different stays at or below 5 % on conversion and on revenue per visitor, where a
/// fixed-horizon test read the same way is far past it (the simulation can tell).
#[test]
fn a_and_a_read_two_hundred_times_are_declared_different_at_most_five_percent_of_runs() {
    const RUNS: u64 = 400;
    let (mut conversion, mut revenue, mut fixed_conversion, mut fixed_revenue) = (0, 0, 0, 0);
    for seed in 0..RUNS {
        let outcome = run(seed, 0.03, 0.03);
        conversion += u64::from(outcome.always_valid.0);
        revenue += u64::from(outcome.always_valid.1);
        fixed_conversion += u64::from(outcome.fixed.0);
        fixed_revenue += u64::from(outcome.fixed.1);
    }
    let share = |runs: u64| runs as f64 / RUNS as f64;
    let figures = format!(
        "of {RUNS} A/A runs, declared different: conversion {:.3}, revenue per visitor {:.3}; \
         fixed-horizon {:.3} and {:.3}",
        share(conversion),
        share(revenue),
        share(fixed_conversion),
        share(fixed_revenue)
    );
    assert!(share(conversion) <= ALPHA, "{figures}");
    assert!(share(revenue) <= ALPHA, "{figures}");
    assert!(share(fixed_conversion) > 2.0 * ALPHA, "{figures}");
    assert!(share(fixed_revenue) > 2.0 * ALPHA, "{figures}");
}

/// Real lifts are found in most runs of the same length: conversion half as high again
/// (3 % against 4.5 %; revenue per visitor, with baskets this heavy-tailed, needs
/// more: it is found once conversion doubles).
#[test]
fn a_real_lift_is_found() {
    const RUNS: u64 = 50;
    let found = |lifted: f64, metric: fn(&Run) -> bool| {
        (0..RUNS)
            .filter(|seed| metric(&run(1_000 + seed, 0.03, lifted)))
            .count() as u64
    };
    let conversion = found(0.045, |run| run.always_valid.0);
    let revenue = found(0.06, |run| run.always_valid.1);
    assert!(
        conversion * 10 >= RUNS * 9,
        "conversion found in {conversion} of {RUNS}"
    );
    assert!(
        revenue * 10 >= RUNS * 9,
        "revenue found in {revenue} of {RUNS}"
    );
}

#[test]
fn the_visitors_a_lift_needs_shrink_as_the_lift_grows() {
    // 3 % conversion, split evenly.
    let control = Sample::proportion(300, 10_000);
    let ten = visitors_to_show(
        &control,
        0.1,
        Shares {
            control: 1.0,
            variant: 1.0,
        },
    )
    .unwrap();
    let thirty = visitors_to_show(
        &control,
        0.3,
        Shares {
            control: 1.0,
            variant: 1.0,
        },
    )
    .unwrap();
    assert!(thirty < ten / 4.0, "{thirty} against {ten}");
    // At 30 %, the interval's half-width at that many visitors is just below the lift.
    let n = thirty / 2.0;
    let v = 2.0 * control.variance() / n;
    let c = compare(
        &Sample::proportion((0.03 * n) as u64, n as u64),
        &Sample::proportion((0.03 * n) as u64, n as u64),
    )
    .unwrap();
    let half = (c.interval.1 - c.interval.0) / 2.0;
    assert!(
        half < 0.0092 && half > 0.0085,
        "{half} at {n} visitors a group (V {v})"
    );
    // An uneven split needs more visitors; nothing to go on, no estimate.
    assert!(
        visitors_to_show(
            &control,
            0.3,
            Shares {
                control: 1.0,
                variant: 3.0
            }
        )
        .unwrap()
            > thirty
    );
    assert!(
        visitors_to_show(
            &Sample::proportion(0, 1000),
            0.3,
            Shares {
                control: 1.0,
                variant: 1.0
            }
        )
        .is_none()
    );
}
