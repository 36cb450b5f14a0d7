//! `GET /admin/api/accounts/{accessKey}/analytics`: zone analytics over a date range.

use std::collections::BTreeMap;

use compact_str::CompactString;
use serde_json::{Value, json};
use time::Date;
use vitrine_engine::account::CAMPAIGN_VARIANT_PREFIX;
use vitrine_engine::analytics::{ZoneCounts, day_of};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::money::Money;

use super::request::Query;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// Days a range may span at most.
pub(super) const MAX_RANGE_DAYS: i32 = 366;
/// Days shown when the range is not given.
pub(super) const DEFAULT_RANGE_DAYS: i32 = 30;
/// The Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i32 = 2_440_588;

/// The day (see [`day_of`]) of the query's date `name` (`YYYY-MM-DD`), if given; checked.
pub(super) fn day_param(query: &Query, name: &str) -> Result<Option<i32>, ApiError> {
    query
        .get(name)
        .map(|text| {
            vitrine_fields::parse_dob(text)
                .map(|date| date.to_julian_day() - UNIX_EPOCH_JULIAN_DAY)
                .ok_or_else(|| {
                    ApiError::Invalid(vec![format!(
                        "{name}: expected a date YYYY-MM-DD, got {text:?}"
                    )])
                })
        })
        .transpose()
}

/// Refuses a `from` day after the `to` day.
pub(super) fn in_order(from: i32, to: i32) -> Result<(), ApiError> {
    if from > to {
        return Err(ApiError::Invalid(vec![format!(
            "from: {} is after to ({})",
            date(from),
            date(to)
        )]));
    }
    Ok(())
}

/// The days (see [`day_of`]) of `from` and `to`, checked.
pub(super) fn range(query: &Query, now: UnixMillis) -> Result<(i32, i32), ApiError> {
    let to = day_param(query, "to")?.unwrap_or_else(|| day_of(now));
    let from = day_param(query, "from")?.unwrap_or(to - (DEFAULT_RANGE_DAYS - 1));
    in_order(from, to)?;
    if to - from >= MAX_RANGE_DAYS {
        return Err(ApiError::Invalid(vec![format!(
            "from: the range spans {} days; at most {MAX_RANGE_DAYS}",
            to - from + 1
        )]));
    }
    Ok((from, to))
}

/// A day as `YYYY-MM-DD`.
pub(super) fn date(day: i32) -> String {
    Date::from_julian_day(day + UNIX_EPOCH_JULIAN_DAY)
        .map(|d| d.to_string())
        .unwrap_or_default()
}

/// How well each product zone predicts what sampled shoppers do next (see
/// `vitrine_engine::prequential`): per zone, the sliding window's trials, hit rate and
/// mean reciprocal rank, and the totals since the process started.
pub(super) fn predictions(entry: &AccountEntry) -> Value {
    use vitrine_engine::prequential::{BUCKET_TRIALS, BUCKETS, SAMPLE_ONE_IN, TOP_K};
    let zones: Vec<Value> = entry
        .account
        .zone_predictions()
        .into_iter()
        .map(|zone| {
            serde_json::json!({
                "zone": zone.zone,
                "trials": zone.trials,
                "hitRate": zone.hit_rate,
                "mrr": zone.mrr,
                "trialsTotal": zone.trials_total,
                "hitsTotal": zone.hits_total,
            })
        })
        .collect();
    serde_json::json!({
        "accessKey": entry.config.access_key,
        "sampledOneIn": SAMPLE_ONE_IN,
        "top": TOP_K,
        "windowTrials": BUCKET_TRIALS * BUCKETS as u64,
        "zones": zones,
    })
}

/// The analytics answer.
pub(super) fn zones(
    entry: &AccountEntry,
    query: &Query,
    now: UnixMillis,
) -> Result<Value, ApiError> {
    let (from, to) = range(query, now)?;
    let account = &entry.account;
    let settings = account.settings();
    let mut grouped: BTreeMap<(CompactString, CompactString), Vec<(i32, ZoneCounts)>> =
        BTreeMap::new();
    for (key, counts) in account.zone_analytics(from, to) {
        grouped
            .entry((key.zone, key.variant))
            .or_default()
            .push((key.day, counts));
    }
    let zones: Vec<Value> = grouped
        .into_iter()
        .map(|((zone, variant), days)| {
            let mut totals = ZoneCounts::default();
            for (_, counts) in &days {
                totals.add(counts);
            }
            // A variant's strategy is its experiment's; otherwise the zone's.
            let variant_strategy = settings
                .experiments
                .iter()
                .filter(|e| e.zone == zone.as_str())
                .flat_map(|e| e.variants.iter())
                .find(|v| !variant.is_empty() && v.name == variant.as_str())
                .map(|v| v.spec.strategy);
            let strategy = variant_strategy
                .unwrap_or_else(|| {
                    settings
                        .zones
                        .iter()
                        .find(|z| z.id == zone.as_str())
                        .and_then(|z| z.strategy)
                })
                .map(|s| s.name());
            let campaign = variant.strip_prefix(CAMPAIGN_VARIANT_PREFIX);
            json!({
                "zone": zone.as_str(),
                "variant": if campaign.is_some() { "" } else { variant.as_str() },
                "campaign": campaign,
                "strategy": strategy,
                "totals": counts_json(&totals),
                "days": days
                    .iter()
                    .map(|(day, counts)| {
                        let mut value = counts_json(counts);
                        if let Some(fields) = value.as_object_mut() {
                            fields.insert("date".to_owned(), json!(date(*day)));
                        }
                        value
                    })
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({
        "accessKey": entry.config.access_key,
        "from": date(from),
        "to": date(to),
        "attributionDays": settings.attribution_days,
        "zones": zones,
    }))
}

/// A zone's counters as JSON, with the view-through and click-through rates (views and
/// clicks per impression).
pub(super) fn counts_json(counts: &ZoneCounts) -> Value {
    let revenue: Vec<Value> = counts
        .revenue
        .iter()
        .map(|(currency, minor)| {
            let money = Money {
                minor: *minor,
                currency: *currency,
            };
            json!({"currency": currency.code(), "amount": money.decimal()})
        })
        .collect();
    let per_impression =
        |n: u64| (counts.impressions > 0).then(|| n as f64 / counts.impressions as f64);
    json!({
        "answers": counts.answers,
        "impressions": counts.impressions,
        "visitors": counts.visitors,
        "viewed": counts.viewed,
        "basketed": counts.basketed,
        "orderedLines": counts.ordered_lines,
        "orderedUnits": counts.ordered_units,
        "orderingVisitors": counts.ordering_visitors,
        "revenue": revenue,
        "viewThroughRate": per_impression(counts.viewed),
        "clicked": counts.clicked,
        "clickThroughRate": per_impression(counts.clicked),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV_23_2026: UnixMillis = 1_795_392_000_000;

    #[test]
    fn days_read_and_print_as_dates() {
        assert_eq!(date(day_of(NOV_23_2026)), "2026-11-23");
        let query = Query::parse("from=2026-11-01&to=2026-11-23");
        let (from, to) = range(&query, NOV_23_2026).unwrap();
        assert_eq!(
            (date(from), date(to)),
            ("2026-11-01".into(), "2026-11-23".into())
        );
        let (from, to) = range(&Query::parse(""), NOV_23_2026).unwrap();
        assert_eq!(to - from + 1, DEFAULT_RANGE_DAYS);
    }

    #[test]
    fn a_bad_range_names_the_parameter() {
        let fails = |q: &str| match range(&Query::parse(q), NOV_23_2026) {
            Err(ApiError::Invalid(m)) => m.join("; "),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            fails("from=23/11/2026"),
            "from: expected a date YYYY-MM-DD, got \"23/11/2026\""
        );
        assert_eq!(
            fails("from=2026-11-24&to=2026-11-23"),
            "from: 2026-11-24 is after to (2026-11-23)"
        );
        assert!(fails("from=2020-01-01&to=2026-11-23").contains("at most 366"));
    }
}
