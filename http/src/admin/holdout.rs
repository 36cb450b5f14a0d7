//! `GET /admin/api/accounts/{accessKey}/holdout`: the store-wide holdout (its share,
//! strategy and periods) and, for the period on now (else the latest), what
//! personalization added: store-wide conversion (ordering visitors per visitor) and
//! revenue per visitor of the personalized shoppers against the held-out ones, with
//! always-valid 95 % intervals, as experiments compare a variant with its control
//! (`experiments.rs`, docs/admin.md "Experiment statistics"). Its ETag is the version of
//! the campaign document's experiments part, which `PUT` (switch on, or change) and
//! `DELETE` (switch off) take in `If-Match` (`campaigns.rs`).
//!
//! Unlike an experiment's, the groups' figures are store-wide: every visitor who made a
//! request that day and every order, whichever zone (if any) showed its products. A
//! visitor on a day is the unit; revenue per visitor is capped at the 99th percentile of
//! paying visitors' revenue over both groups.

use serde_json::{Value, json};
use vitrine_engine::analytics::spread::{Spread, upper_edge};
use vitrine_engine::analytics::{ZoneCounts, day_of};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::experiment::holdout::{Holdout, HoldoutPeriod};
use vitrine_engine::experiment::sequential::Sample;
use vitrine_engine::money::Currency;

use super::analytics::date;
use super::campaigns::with_etag;
use super::experiments::{
    Comparison, REVENUE_CAP_QUANTILE, means, money, ratio, ratio_f, revenue, verdict,
};
use crate::api::Reply;
use crate::clock::rfc3339;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// The holdout answer.
pub(super) fn results(entry: &AccountEntry, now: UnixMillis) -> Result<Reply, ApiError> {
    let account = &entry.account;
    let currency = account.settings().default_currency;
    let (document, _) = account.campaigns().document();
    let holdout = document.experiments.holdout.clone().unwrap_or_default();
    let current = holdout.current();
    let shown = current.or(holdout.periods.last());
    let periods: Vec<Value> = holdout.periods.iter().rev().map(period_json).collect();
    let mut body = json!({
        "accessKey": entry.config.access_key,
        "currency": currency.code(),
        "on": current.is_some(),
        "share": current.map(|p| p.share),
        "strategy": current.map(|p| p.strategy.as_str()),
        "periods": periods,
    });
    if let (Some(period), Some(fields)) = (shown, body.as_object_mut()) {
        let (held, personalized) = totals(account, period, now);
        fields.insert("period".to_owned(), period_json(period));
        for (key, value) in figures(&held, &personalized, currency) {
            fields.insert(key.to_owned(), value);
        }
    }
    Ok(with_etag(body, document.experiments.version))
}

fn period_json(period: &HoldoutPeriod) -> Value {
    json!({
        "from": rfc3339(period.from),
        "to": period.to.map(rfc3339),
        "fromDate": date(day_of(period.from)),
        "share": period.share,
        "strategy": period.strategy,
    })
}

/// The held-out and the personalized group's store-wide counters over the period.
fn totals(
    account: &vitrine_engine::Account,
    period: &HoldoutPeriod,
    now: UnixMillis,
) -> (ZoneCounts, ZoneCounts) {
    let (held_name, personalized_name) = Holdout::counted_as(period.from);
    let last = period.to.map_or(now, |to| to.min(now + 1) - 1);
    let (mut held, mut personalized) = (ZoneCounts::default(), ZoneCounts::default());
    for (key, counts) in account.store_analytics(day_of(period.from), day_of(last)) {
        if key.variant == held_name {
            held.add(&counts);
        } else if key.variant == personalized_name {
            personalized.add(&counts);
        }
    }
    (held, personalized)
}

/// The groups and what personalization added, the held-out group as the control.
fn figures(
    held: &ZoneCounts,
    personalized: &ZoneCounts,
    currency: Currency,
) -> Vec<(&'static str, Value)> {
    let mut pooled = Spread::default();
    for counts in [held, personalized] {
        if let Some(spread) = counts.spread_in(currency) {
            pooled.add(spread);
        }
    }
    let cap = pooled.cap_at(REVENUE_CAP_QUANTILE);
    let group = |name: &str, counts: &ZoneCounts| {
        json!({
            "name": name,
            "visitors": counts.visitors,
            "orderingVisitors": counts.ordering_visitors,
            "requests": counts.answers,
            "revenue": money(counts.revenue_in(currency) as f64, currency),
            "conversion": ratio(counts.ordering_visitors, counts.visitors),
            "revenuePerVisitor": ratio_f(counts.revenue_in(currency) as f64, counts.visitors)
                .map(|m| money(m, currency)),
            "revenuePerVisitorCapped": ratio_f(revenue(counts, currency, cap).sum, counts.visitors)
                .map(|m| money(m, currency)),
        })
    };
    let conversion = Comparison::of(
        &Sample::proportion(held.ordering_visitors, held.visitors),
        &Sample::proportion(personalized.ordering_visitors, personalized.visitors),
    );
    let per_visitor = means(held, personalized, currency, cap);
    let verdicts = vec![
        verdict("personalization", "conversion", conversion.as_ref()),
        verdict(
            "personalization",
            "revenue per visitor",
            per_visitor.as_ref(),
        ),
    ];
    vec![
        (
            "groups",
            json!([group("personalized", personalized), group("holdout", held)]),
        ),
        (
            "revenueCap",
            json!(cap.map(|cap| money(upper_edge(cap), currency))),
        ),
        (
            "added",
            json!({
                "conversion": conversion.map_or(Value::Null, |c| c.to_json()),
                "revenuePerVisitor": per_visitor.map_or(Value::Null, |c| c.to_json()),
            }),
        ),
        ("verdicts", json!(verdicts)),
    ]
}
