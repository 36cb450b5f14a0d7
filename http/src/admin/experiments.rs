//! `GET /admin/api/accounts/{accessKey}/experiments`: each experiment's variants with
//! their counts over the experiment's days, and each variant against the control (the
//! first variant): view-through (views per impression), click-through, conversion
//! (ordering visitors per visitor) and revenue per visitor in the account's default
//! currency, each with its difference, relative difference and 95 % interval, always
//! valid: read as often as anyone likes, a test stopped when its interval first
//! excludes 0 keeps its 5 % error rate ([`sequential`], docs/admin.md "Experiment
//! statistics").
//!
//! The unit of "visitors" is a visitor on a day (analytics count distinct visitors per
//! day). Revenue per visitor is compared with each visitor's revenue capped at the 99th
//! percentile of paying visitors' revenue over every variant (one shopper's large
//! order must not decide a test). With `?lift=` (a percentage, default 10), each
//! variant says in how many days, at the zone's traffic so far, a lift that size in
//! conversion or revenue per visitor would be expected to show. With `?from=` and
//! `?to=` (dates, `YYYY-MM-DD`, either or both), each experiment's results are read over
//! those days of its own only: a split at a campaign change on its timeline (analytics
//! count days, so a change splits at its day).

use serde_json::{Value, json};
use vitrine_engine::analytics::spread::{Spread, upper_edge};
use vitrine_engine::analytics::{ZoneCounts, day_of};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::experiment::definition::{ExperimentDefinition, Status, VariantKind};
use vitrine_engine::experiment::sequential::{self, Sample};
use vitrine_engine::experiment::{Experiment, Variant};
use vitrine_engine::money::{Currency, Money};
use vitrine_engine::zone::Strategy;

use super::analytics::{counts_json, date};
use super::campaigns::with_etag;
use super::request::Query;
use crate::api::Reply;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// The quantile of paying visitors' revenue that revenue per visitor is capped at.
pub(super) const REVENUE_CAP_QUANTILE: f64 = 0.99;

/// The experiments answer: the console's (newest first), then the configuration's.
/// Its ETag is the version of the campaign document's experiments part.
pub(super) fn results(
    entry: &AccountEntry,
    query: &Query,
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let lift = query.limit("lift", 10, 1000)? as f64 / 100.0;
    let split = split_days(query)?;
    let account = &entry.account;
    let settings = account.settings();
    let currency = settings.default_currency;
    let (document, _) = account.campaigns().document();
    let history = account.campaigns().history();
    let mut experiments: Vec<Value> = Vec::new();
    for definition in document.experiments.list.iter().rev() {
        // A zone no longer configured (after a reload): its experiments are not shown.
        let Some(zone) = settings.zones.iter().find(|z| z.id == definition.zone) else {
            continue;
        };
        let shown = Experiment {
            id: definition.id.clone(),
            zone: definition.zone.clone(),
            start: definition.first_start(),
            end: definition.last_stop(),
            variants: definition
                .variants
                .iter()
                .map(|v| {
                    let mut spec = zone.clone();
                    let named = v.strategy.as_deref().and_then(Strategy::from_name);
                    match v.kind {
                        VariantKind::Strategy => {
                            spec.strategy = named.or(spec.strategy);
                            spec.fallback = v
                                .fallback
                                .iter()
                                .flatten()
                                .filter_map(|name| Strategy::from_name(name))
                                .collect();
                        }
                        VariantKind::None => {
                            spec.strategy = named.or(Some(Strategy::Trending));
                            spec.fallback = Vec::new();
                        }
                        VariantKind::Live | VariantKind::Draft => {
                            spec.strategy = None;
                            spec.fallback = Vec::new();
                        }
                    }
                    if let Some(count) = v.count.and_then(|c| usize::try_from(c).ok()) {
                        spec.count = count;
                    }
                    Variant {
                        name: v.name.clone(),
                        weight: v.share,
                        spec,
                        campaigns: v.kind == VariantKind::Live,
                        list: None,
                    }
                })
                .collect(),
            split: vitrine_engine::experiment::Split::Xxh3,
        };
        let counted: Vec<String> = definition
            .variants
            .iter()
            .map(|v| definition.counted_as(&v.name))
            .collect();
        let mut value = if definition.status == Status::Draft {
            experiment_json(
                &shown,
                &vec![ZoneCounts::default(); counted.len()],
                currency,
                lift,
                1.0,
                now,
            )
        } else {
            let (totals, days) = totals(account, &shown, &counted, now, split);
            experiment_json(&shown, &totals, currency, lift, days, now)
        };
        if let Some(fields) = value.as_object_mut() {
            fields.insert("source".to_owned(), json!("console"));
            fields.insert("name".to_owned(), json!(definition.name));
            fields.insert("status".to_owned(), json!(definition.status.name()));
            fields.insert(
                "running".to_owned(),
                json!(definition.status == Status::Running),
            );
            fields.insert("runs".to_owned(), json!(definition.runs));
            fields.insert("definition".to_owned(), json!(definition.variants));
            fields.insert(
                "timeline".to_owned(),
                timeline(&history.versions, definition, now),
            );
        }
        experiments.push(value);
    }
    for experiment in &settings.experiments {
        let counted: Vec<String> = experiment.variants.iter().map(|v| v.name.clone()).collect();
        let (totals, days) = totals(account, experiment, &counted, now, split);
        let mut value = experiment_json(experiment, &totals, currency, lift, days, now);
        if let Some(fields) = value.as_object_mut() {
            fields.insert("source".to_owned(), json!("configuration"));
        }
        experiments.push(value);
    }
    let body = json!({
        "accessKey": entry.config.access_key,
        "currency": currency.code(),
        "from": split.from.map(date),
        "to": split.to.map(date),
        "experiments": experiments,
    });
    Ok(with_etag(body, document.experiments.version))
}

/// The days `?from=` and `?to=` bound the results to, checked.
fn split_days(query: &Query) -> Result<Days, ApiError> {
    let from = super::analytics::day_param(query, "from")?;
    let to = super::analytics::day_param(query, "to")?;
    if let (Some(from), Some(to)) = (from, to) {
        super::analytics::in_order(from, to)?;
    }
    Ok(Days { from, to })
}

/// The days results are bounded to (none: from the first, to the last).
#[derive(Debug, Clone, Copy)]
struct Days {
    /// The first day, when bounded.
    from: Option<i32>,
    /// The last day, when bounded.
    to: Option<i32>,
}

/// Each variant's counters over the experiment's days (counted under `counted`) within
/// `split`, and how many days that is (from its first day with data).
fn totals(
    account: &vitrine_engine::Account,
    experiment: &Experiment,
    counted: &[String],
    now: UnixMillis,
    split: Days,
) -> (Vec<ZoneCounts>, f64) {
    let from = experiment.start.map_or(i32::MIN, day_of);
    let last = experiment.end.map_or(now, |end| end.min(now + 1) - 1);
    let to = day_of(last);
    let from = split.from.map_or(from, |day| day.max(from));
    let to = split.to.map_or(to, |day| day.min(to));
    let mut totals: Vec<ZoneCounts> = vec![ZoneCounts::default(); counted.len()];
    let mut first_day = to;
    for (key, counts) in account.zone_analytics(from, to) {
        if key.zone != experiment.zone.as_str() {
            continue;
        }
        if let Some(at) = counted.iter().position(|v| v == key.variant.as_str())
            && let Some(total) = totals.get_mut(at)
        {
            total.add(&counts);
            first_day = first_day.min(key.day);
        }
    }
    (totals, f64::from(to - first_day + 1))
}

/// What happened while the experiment ran: its starts, stops and end, and every change
/// of its zone's campaign list (results can be read apart at them), oldest first.
fn timeline(
    versions: &[vitrine_engine::campaign::CampaignVersion],
    definition: &ExperimentDefinition,
    now: UnixMillis,
) -> Value {
    let Some(first) = definition.first_start() else {
        return json!([]);
    };
    let last = definition.last_stop().unwrap_or(now);
    let mut events: Vec<Value> = Vec::new();
    let mut previous = None;
    for version in versions {
        let zone_version = version.document.zone_version(&definition.zone);
        let changed = previous.is_some_and(|before| before != zone_version);
        previous = Some(zone_version);
        let mentions = version
            .summary
            .starts_with(&format!("experiment {} ", definition.id));
        if mentions || (changed && version.at >= first && version.at <= last) {
            events.push(json!({
                "version": version.version,
                "at": version.at,
                "author": version.author,
                "summary": version.summary,
                "kind": if mentions { "experiment" } else { "campaigns" },
            }));
        }
    }
    Value::Array(events)
}

fn experiment_json(
    experiment: &Experiment,
    totals: &[ZoneCounts],
    currency: Currency,
    lift: f64,
    days: f64,
    now: UnixMillis,
) -> Value {
    let control = totals.first().cloned().unwrap_or_default();
    let mut pooled = Spread::default();
    for counts in totals {
        if let Some(spread) = counts.spread_in(currency) {
            pooled.add(spread);
        }
    }
    let cap = pooled.cap_at(REVENUE_CAP_QUANTILE);
    let control_weight = experiment.variants.first().map_or(1, |v| v.weight);
    let variants: Vec<Value> = experiment
        .variants
        .iter()
        .zip(totals)
        .enumerate()
        .map(|(i, (variant, counts))| {
            let capped = revenue(counts, currency, cap);
            let mut value = json!({
                "name": variant.name,
                "control": i == 0,
                "weight": variant.weight,
                "strategy": variant.spec.strategy.map(|s| s.name()),
                "fallback": variant.spec.fallback.iter().map(|s| s.name()).collect::<Vec<_>>(),
                "count": variant.spec.count,
                "counts": counts_json(counts),
                "conversion": ratio(counts.ordering_visitors, counts.visitors),
                "revenuePerVisitor": ratio_f(counts.revenue_in(currency) as f64, counts.visitors)
                    .map(|m| money(m, currency)),
                "revenuePerVisitorCapped": ratio_f(capped.sum, counts.visitors)
                    .map(|m| money(m, currency)),
            });
            if i > 0
                && let Some(fields) = value.as_object_mut()
            {
                let comparisons = [
                    (
                        "viewThrough",
                        "view-through",
                        Comparison::of(
                            &Sample::proportion(control.viewed, control.impressions),
                            &Sample::proportion(counts.viewed, counts.impressions),
                        ),
                    ),
                    (
                        "conversion",
                        "conversion",
                        Comparison::of(
                            &Sample::proportion(control.ordering_visitors, control.visitors),
                            &Sample::proportion(counts.ordering_visitors, counts.visitors),
                        ),
                    ),
                    (
                        "revenuePerVisitor",
                        "revenue per visitor",
                        means(&control, counts, currency, cap),
                    ),
                    (
                        "clickThrough",
                        "click-through",
                        Comparison::of(
                            &Sample::proportion(control.clicked, control.impressions),
                            &Sample::proportion(counts.clicked, counts.impressions),
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
                let shares = sequential::Shares {
                    control: f64::from(control_weight),
                    variant: f64::from(variant.weight),
                };
                let so_far = (control.visitors + counts.visitors) as f64;
                let per_day = so_far / days;
                let days_to = |sample: &Sample| {
                    let needed = sequential::visitors_to_show(sample, lift, shares)?;
                    (per_day > 0.0).then(|| ((needed - so_far).max(0.0) / per_day).ceil())
                };
                fields.insert(
                    "toShow".to_owned(),
                    json!({
                        "lift": lift,
                        "visitorsPerDay": per_day.round(),
                        "conversionDays": days_to(&Sample::proportion(
                            control.ordering_visitors,
                            control.visitors,
                        )),
                        "revenuePerVisitorDays": days_to(&revenue(&control, currency, cap)),
                    }),
                );
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
        "revenueCap": cap.map(|cap| money(upper_edge(cap), currency)),
        "variants": variants,
    })
}

/// A variant against the control on one metric, always valid (see
/// [`vitrine_engine::experiment::sequential`]); none until there is enough to compare,
/// and while the control's mean is 0 (no relative figure).
#[derive(Debug)]
pub(super) struct Comparison(sequential::Comparison);

impl Comparison {
    pub(super) fn of(control: &Sample, variant: &Sample) -> Option<Comparison> {
        let comparison = sequential::compare(control, variant)?;
        comparison.relative()?;
        Some(Comparison(comparison))
    }

    fn significant(&self) -> bool {
        self.0.significant()
    }

    fn relative(&self) -> (f64, (f64, f64)) {
        self.0.relative().unwrap_or((0.0, (0.0, 0.0)))
    }

    pub(super) fn to_json(&self) -> Value {
        let (relative, (low, high)) = self.relative();
        json!({
            "relative": relative,
            "low": low,
            "high": high,
            "difference": self.0.difference,
            "differenceLow": self.0.interval.0,
            "differenceHigh": self.0.interval.1,
            "pValue": self.0.p_value,
            "significant": self.significant(),
        })
    }
}

/// Revenue per visitor in `currency`, each visitor's revenue capped at `cap` (a bucket
/// of [`vitrine_engine::analytics::spread`]; none: uncapped).
pub(super) fn revenue(counts: &ZoneCounts, currency: Currency, cap: Option<u16>) -> Sample {
    let (sum, squares) = counts
        .spread_in(currency)
        .map_or((0.0, 0.0), |spread| spread.capped(cap));
    Sample {
        visitors: counts.visitors as f64,
        sum,
        squares,
    }
}

/// Revenue per visitor, control then variant, capped at `cap`.
pub(super) fn means(
    control: &ZoneCounts,
    variant: &ZoneCounts,
    currency: Currency,
    cap: Option<u16>,
) -> Option<Comparison> {
    Comparison::of(
        &revenue(control, currency, cap),
        &revenue(variant, currency, cap),
    )
}

/// "B: +12.4 % view-through, 95 % CI [+8.1, +16.9], significant".
pub(super) fn verdict(variant: &str, metric: &str, comparison: Option<&Comparison>) -> String {
    let Some(c) = comparison else {
        return format!("{variant}: {metric}: not enough data yet");
    };
    let percent = |x: f64| format!("{:+.1}", x * 100.0);
    let (relative, (low, high)) = c.relative();
    format!(
        "{variant}: {} % {metric}, 95 % CI [{}, {}], {}",
        percent(relative),
        percent(low),
        percent(high),
        if c.significant() {
            "significant"
        } else {
            "not significant"
        }
    )
}

pub(super) fn ratio(part: u64, whole: u64) -> Option<f64> {
    ratio_f(part as f64, whole)
}

pub(super) fn ratio_f(part: f64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part / whole as f64)
}

/// An amount in minor units as a decimal string of `currency`.
pub(super) fn money(minor: f64, currency: Currency) -> String {
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
    fn a_verdict_reads_the_always_valid_interval() {
        let c = Comparison::of(
            &Sample::proportion(1000, 10_000),
            &Sample::proportion(1300, 10_000),
        )
        .unwrap();
        let (relative, (low, high)) = c.relative();
        assert!((relative - 0.3).abs() < 1e-9 && low > 0.0 && high > relative);
        assert_eq!(
            verdict("B", "conversion", Some(&c)),
            format!(
                "B: +30.0 % conversion, 95 % CI [{:+.1}, {:+.1}], significant",
                low * 100.0,
                high * 100.0
            )
        );
        // Significant at a fixed horizon (p = 0.035), not yet when read at any time.
        let early = Comparison::of(
            &Sample::proportion(100, 1000),
            &Sample::proportion(130, 1000),
        )
        .unwrap();
        assert!(!early.significant() && early.relative().1.0 < 0.0);
        // Nothing converting in the control: no relative figure to give.
        assert!(
            Comparison::of(&Sample::proportion(0, 1000), &Sample::proportion(5, 1000),).is_none()
        );
        assert_eq!(
            verdict("B", "conversion", None),
            "B: conversion: not enough data yet"
        );
    }

    #[test]
    fn one_large_order_does_not_decide_revenue_per_visitor() {
        let gbp = Currency::from_code("GBP").unwrap();
        // 2,000 visitors a variant; 100 of each spend 20.00. One visitor of the variant
        // spends 50,000.00: uncapped, revenue per visitor is 26 times the control's.
        let variant_of = |big: bool| {
            let mut counts = ZoneCounts {
                visitors: 2_000,
                ..ZoneCounts::default()
            };
            let mut spread = Spread::default();
            for _ in 0..100 {
                spread.moved(0, 2_000);
            }
            if big {
                spread.moved(0, 5_000_000);
            }
            counts.revenue_spread = vec![(gbp, spread)];
            counts
        };
        let (control, variant) = (variant_of(false), variant_of(true));
        let uncapped = means(&control, &variant, gbp, None).unwrap();
        assert!(uncapped.relative().0 > 20.0);
        let mut pooled = control.spread_in(gbp).unwrap().clone();
        pooled.add(variant.spread_in(gbp).unwrap());
        let cap = pooled.cap_at(REVENUE_CAP_QUANTILE);
        let capped = means(&control, &variant, gbp, cap).unwrap();
        // It counts as one more paying visitor at the cap (the edge above 20.00).
        assert!(capped.relative().0 < 0.02, "{:?}", capped.relative());
        assert!(!capped.significant());
    }
}
