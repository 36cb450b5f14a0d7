//! `POST /api/plugin/dashboard`: the account, and the figures the plugins' admin pages
//! show for "today" and "the last 30 days".
//!
//! The plugins iterate `Stats` by period key (`today`, `last30days`) and show, in each,
//! `Impressions`, `Sessions`, `ConvertedSessions` (%), `ConversionRate` (%),
//! `SalesTotalDisplay`, `OrderCount` and `RecommenderProductTotalDisplay`; the line
//! "Recommenders have made X from N orders totalling Y" appears when
//! `RecommenderProductTotal` is above 0. Periods are UTC days, today included.
//! Figures come from the store-wide day counters ([`vitrine_engine::site`]) and the
//! zone analytics ([`vitrine_engine::analytics`]).

use serde_json::{Value, json};
use vitrine_engine::analytics::{ZoneCounts, day_of};
use vitrine_engine::{Account, Currency, Money};

use super::json_reply;
use crate::api::Reply;
use crate::auth::authenticated;
use crate::clock::now_millis;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// The periods of `Stats`: key and number of days (today included).
const PERIODS: [(&str, i32); 2] = [("today", 1), ("last30days", 30)];

/// `dashboard`: the account, its figures per period, and the store's totals.
pub fn handle_dashboard(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (entry, _) = authenticated(state, body, Endpoint::PluginDashboard)?;
    let account = &entry.account;
    let now = now_millis();
    let today = day_of(now);
    let currency = entry.config.default_currency;
    let mut stats = serde_json::Map::new();
    for (key, days) in PERIODS {
        let from = today - (days - 1);
        stats.insert(key.to_owned(), period(account, from, today, currency));
    }
    let activity = account.activity(now);
    let reply = json!({
        "Account": {
            "Name": entry.config.access_key,
            "Region": entry.config.region.name(),
            "Currency": currency.code(),
            // Self-hosted: no trial, nothing to sign up for (the plugins show a
            // free-trial box when this is 0).
            "IsSignedUp": 1,
        },
        "Stats": stats,
        "Store": {
            "Products": account.catalogue().len(),
            "Visitors": account.visitor_count(),
            "Orders": account.order_count(),
            "RequestsToday": activity.requests_today,
            "Requests": activity.requests,
            "ZoneImpressions": activity.items_shown,
        },
        "NextSteps": [],
    });
    Ok(json_reply(&reply))
}

/// The figures of the UTC days `from..=to`.
fn period(account: &Account, from: i32, to: i32, currency: Currency) -> Value {
    let site = account.site_figures(from, to);
    let mut zones = ZoneCounts::default();
    for (_, counts) in account.zone_analytics(from, to) {
        zones.add(&counts);
    }
    let percent = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            (part as f64 * 10_000.0 / whole as f64).round() / 100.0
        }
    };
    let in_currency = |revenue: &[(Currency, i64)]| {
        revenue
            .iter()
            .find(|(c, _)| *c == currency)
            .map_or(0, |(_, minor)| *minor)
    };
    let sales = in_currency(&site.revenue);
    let recommended = in_currency(&zones.revenue);
    json!({
        "Impressions": zones.impressions,
        "Sessions": site.sessions,
        "ConvertedSessions": percent(site.converted_sessions, site.sessions),
        "ConversionRate": percent(site.orders, site.sessions),
        "OrderCount": site.orders,
        "SalesTotal": Money { minor: sales, currency }.as_f64(),
        "SalesTotalDisplay": display(&site.revenue, currency),
        "RecommenderProductTotal": Money { minor: recommended, currency }.as_f64(),
        "RecommenderProductTotalDisplay": display(&zones.revenue, currency),
        "Clicks": zones.clicked,
        "ClickThroughRate": percent(zones.clicked, zones.impressions),
    })
}

/// Amounts for display, the account's currency first: `£1,234.50`, or
/// `£1,234.50 + €20.00` when orders came in several currencies.
fn display(revenue: &[(Currency, i64)], currency: Currency) -> String {
    let mut amounts: Vec<Money> = revenue
        .iter()
        .filter(|(c, minor)| *c == currency || *minor != 0)
        .map(|(c, minor)| Money {
            minor: *minor,
            currency: *c,
        })
        .collect();
    if !amounts.iter().any(|m| m.currency == currency) {
        amounts.push(Money { minor: 0, currency });
    }
    amounts.sort_by_key(|m| (m.currency != currency, m.currency.code()));
    let shown: Vec<String> = amounts.into_iter().map(Money::display).collect();
    shown.join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_show_the_accounts_currency_first() {
        let gbp = Currency::from_code("GBP").unwrap();
        let eur = Currency::from_code("EUR").unwrap();
        assert_eq!(display(&[], gbp), "£0.00");
        assert_eq!(
            display(&[(eur, 2_000), (gbp, 123_450)], gbp),
            "£1,234.50 + €20.00"
        );
    }
}
