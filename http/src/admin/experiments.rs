//! `GET /admin/api/accounts/{accessKey}/experiments`: each experiment's variants with
//! their counts over the experiment's days, and each variant against the control (the
//! first variant): view-through (views per impression), conversion (ordering visitors
//! per visitor) and revenue per visitor in the account's default currency, each with
//! its relative difference, a 95 % confidence interval and a two-sided test at 5 %.
//!
//! The unit of "visitors" is a visitor on a day (analytics count distinct visitors per
//! day). View-through and conversion are compared as two proportions (pooled z-test;
//! the interval of the ratio by the delta method on its logarithm); revenue per visitor
//! as two means (Welch's z with the per-visitor variances the counters keep).

use serde_json::{Value, json};
use statrs::distribution::{ContinuousCDF, Normal};
use vitrine_engine::analytics::{ZoneCounts, day_of};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::experiment::Experiment;
use vitrine_engine::money::{Currency, Money};

use super::analytics::{counts_json, date};
use crate::state::AccountEntry;

/// The level of the tests and intervals.
pub(super) const ALPHA: f64 = 0.05;

/// The experiments answer.
pub(super) fn results(entry: &AccountEntry, now: UnixMillis) -> Value {
    let account = &entry.account;
    let settings = account.settings();
    let currency = settings.default_currency;
    let experiments: Vec<Value> = settings
        .experiments
        .iter()
        .map(|experiment| {
            let from = experiment.start.map_or(i32::MIN, day_of);
            let last = experiment.end.map_or(now, |end| end.min(now + 1) - 1);
            let to = day_of(last);
            let mut totals: Vec<ZoneCounts> =
                vec![ZoneCounts::default(); experiment.variants.len()];
            for (key, counts) in account.zone_analytics(from, to) {
                if key.zone != experiment.zone.as_str() {
                    continue;
                }
                if let Some(at) = experiment
                    .variants
                    .iter()
                    .position(|v| v.name == key.variant.as_str())
                    && let Some(total) = totals.get_mut(at)
                {
                    total.add(&counts);
                }
            }
            experiment_json(experiment, &totals, currency, now)
        })
        .collect();
    json!({
        "accessKey": entry.config.access_key,
        "currency": currency.code(),
        "experiments": experiments,
    })
}

fn experiment_json(
    experiment: &Experiment,
    totals: &[ZoneCounts],
    currency: Currency,
    now: UnixMillis,
) -> Value {
    let control = totals.first().cloned().unwrap_or_default();
    let variants: Vec<Value> = experiment
        .variants
        .iter()
        .zip(totals)
        .enumerate()
        .map(|(i, (variant, counts))| {
            let rpv = mean(counts, currency);
            let mut value = json!({
                "name": variant.name,
                "control": i == 0,
                "weight": variant.weight,
                "strategy": variant.spec.strategy.map(|s| s.name()),
                "fallback": variant.spec.fallback.iter().map(|s| s.name()).collect::<Vec<_>>(),
                "count": variant.spec.count,
                "counts": counts_json(counts),
                "conversion": ratio(counts.ordering_visitors, counts.visitors),
                "revenuePerVisitor": rpv.map(|(m, _)| money(m, currency)),
            });
            if i > 0
                && let Some(fields) = value.as_object_mut()
            {
                let comparisons = [
                    (
                        "viewThrough",
                        "view-through",
                        proportions(
                            (control.viewed, control.impressions),
                            (counts.viewed, counts.impressions),
                        ),
                    ),
                    (
                        "conversion",
                        "conversion",
                        proportions(
                            (control.ordering_visitors, control.visitors),
                            (counts.ordering_visitors, counts.visitors),
                        ),
                    ),
                    (
                        "revenuePerVisitor",
                        "revenue per visitor",
                        means(&control, counts, currency),
                    ),
                    (
                        "clickThrough",
                        "click-through",
                        proportions(
                            (control.clicked, control.impressions),
                            (counts.clicked, counts.impressions),
                        ),
                    ),
                ];
                let mut against = serde_json::Map::new();
                let mut verdicts = Vec::new();
                for (key, label, comparison) in comparisons {
                    verdicts.push(verdict(&variant.name, label, comparison.as_ref()));
                    against.insert(
                        key.to_owned(),
                        comparison.map_or(Value::Null, |c| c.to_json()),
                    );
                }
                fields.insert("againstControl".to_owned(), Value::Object(against));
                fields.insert("verdicts".to_owned(), json!(verdicts));
            }
            value
        })
        .collect();
    json!({
        "id": experiment.id,
        "zone": experiment.zone,
        "start": experiment.start.map(|s| date(day_of(s))),
        "end": experiment.end.map(|e| date(day_of(e))),
        "running": experiment.runs_at(now),
        "variants": variants,
    })
}

/// A variant against the control on one metric.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Comparison {
    /// The variant's value over the control's, less one.
    pub(super) relative: f64,
    /// The 95 % interval of `relative`.
    pub(super) interval: (f64, f64),
    /// The two-sided p-value of no difference.
    pub(super) p_value: f64,
}

impl Comparison {
    fn significant(&self) -> bool {
        self.p_value < ALPHA
    }

    fn to_json(&self) -> Value {
        json!({
            "relative": self.relative,
            "low": self.interval.0,
            "high": self.interval.1,
            "pValue": self.p_value,
            "significant": self.significant(),
        })
    }
}

fn normal() -> Option<Normal> {
    Normal::new(0.0, 1.0).ok()
}

/// The two-sided p-value of a z statistic.
fn p_value(z: f64) -> f64 {
    normal().map_or(1.0, |n| 2.0 * (1.0 - n.cdf(z.abs())))
}

/// The critical z of a two-sided interval at [`ALPHA`].
fn critical() -> f64 {
    normal().map_or(1.96, |n| n.inverse_cdf(1.0 - ALPHA / 2.0))
}

/// Two proportions `(successes, trials)`: control then variant. `None` when either has
/// no success or no trial (no ratio to speak of).
pub(super) fn proportions(control: (u64, u64), variant: (u64, u64)) -> Option<Comparison> {
    let (x1, n1) = (control.0 as f64, control.1 as f64);
    let (x2, n2) = (variant.0 as f64, variant.1 as f64);
    if x1 <= 0.0 || x2 <= 0.0 || n1 <= 0.0 || n2 <= 0.0 || x1 > n1 || x2 > n2 {
        return None;
    }
    let (p1, p2) = (x1 / n1, x2 / n2);
    let pooled = (x1 + x2) / (n1 + n2);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
    let p_value = if se > 0.0 {
        p_value((p2 - p1) / se)
    } else {
        1.0
    };
    let log_ratio = (p2 / p1).ln();
    let log_se = ((1.0 - p1) / x1 + (1.0 - p2) / x2).sqrt();
    let z = critical();
    Some(Comparison {
        relative: p2 / p1 - 1.0,
        interval: (
            (log_ratio - z * log_se).exp() - 1.0,
            (log_ratio + z * log_se).exp() - 1.0,
        ),
        p_value,
    })
}

/// Revenue per visitor in `currency` and its variance, from the counters.
fn mean(counts: &ZoneCounts, currency: Currency) -> Option<(f64, f64)> {
    let n = counts.visitors as f64;
    if n <= 0.0 {
        return None;
    }
    let mean = counts.revenue_in(currency) as f64 / n;
    let variance = (counts.squares_in(currency) / n - mean * mean).max(0.0);
    Some((mean, variance))
}

/// Revenue per visitor, control then variant (Welch's statistic, normal tails: visitor
/// counts of an experiment are large). `None` without visitors or control revenue.
pub(super) fn means(
    control: &ZoneCounts,
    variant: &ZoneCounts,
    currency: Currency,
) -> Option<Comparison> {
    let (m1, v1) = mean(control, currency)?;
    let (m2, v2) = mean(variant, currency)?;
    if m1 <= 0.0 {
        return None;
    }
    let se = (v1 / control.visitors as f64 + v2 / variant.visitors as f64).sqrt();
    let diff = m2 - m1;
    let p_value = if se > 0.0 { p_value(diff / se) } else { 1.0 };
    let z = critical();
    Some(Comparison {
        relative: diff / m1,
        interval: ((diff - z * se) / m1, (diff + z * se) / m1),
        p_value,
    })
}

/// "B: +12.4 % view-through, 95 % CI [+8.1, +16.9], significant".
pub(super) fn verdict(variant: &str, metric: &str, comparison: Option<&Comparison>) -> String {
    let Some(c) = comparison else {
        return format!("{variant}: {metric}: not enough data yet");
    };
    let percent = |x: f64| format!("{:+.1}", x * 100.0);
    format!(
        "{variant}: {} % {metric}, 95 % CI [{}, {}], {}",
        percent(c.relative),
        percent(c.interval.0),
        percent(c.interval.1),
        if c.significant() {
            "significant"
        } else {
            "not significant"
        }
    )
}

fn ratio(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// An amount in minor units as a decimal string of `currency`.
fn money(minor: f64, currency: Currency) -> String {
    let rounded = minor.round();
    let minor = if rounded.is_finite() {
        rounded as i64
    } else {
        0
    };
    Money { minor, currency }.decimal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportions_match_a_hand_computed_test() {
        // 100 / 1000 against 130 / 1000: pooled p 0.115, z = 0.03 / sqrt(0.115 × 0.885 ×
        // 0.002) = 2.1067, two-sided p = 0.0351.
        let c = proportions((100, 1000), (130, 1000)).unwrap();
        assert!((c.relative - 0.3).abs() < 1e-12);
        assert!((c.p_value - 0.0351).abs() < 0.0005, "{c:?}");
        assert!(c.interval.0 > 0.0 && c.interval.1 > c.relative);
        assert_eq!(
            verdict("B", "view-through", Some(&c)),
            format!(
                "B: +30.0 % view-through, 95 % CI [{:+.1}, {:+.1}], significant",
                c.interval.0 * 100.0,
                c.interval.1 * 100.0
            )
        );
        let same = proportions((100, 1000), (101, 1000)).unwrap();
        assert!(!same.significant());
        assert!(same.interval.0 < 0.0 && same.interval.1 > 0.0);
        assert!(proportions((0, 1000), (5, 1000)).is_none());
        assert_eq!(
            verdict("B", "conversion", None),
            "B: conversion: not enough data yet"
        );
    }

    #[test]
    fn means_use_the_per_visitor_variance() {
        let gbp = Currency::from_code("GBP").unwrap();
        let counts = |visitors: u64, revenue: i64, squares: f64| {
            let mut c = ZoneCounts {
                visitors,
                ..ZoneCounts::default()
            };
            c.add_revenue(gbp, revenue);
            c.add_squares(gbp, squares);
            c
        };
        // Control: 1000 visitors, 100 of them spent 1000 each (mean 100, variance
        // 100000 − 10000 = 90000); variant: 150 of them (mean 150, variance 127500).
        let control = counts(1000, 100_000, 100.0 * 1e6);
        let variant = counts(1000, 150_000, 150.0 * 1e6);
        let c = means(&control, &variant, gbp).unwrap();
        assert!((c.relative - 0.5).abs() < 1e-12);
        // se = sqrt(90 + 127.5) = 14.748; z = 50 / 14.748 = 3.39.
        assert!(c.p_value < 0.001 && c.p_value > 0.0005, "{c:?}");
        assert!(means(&counts(0, 0, 0.0), &variant, gbp).is_none());
    }
}
