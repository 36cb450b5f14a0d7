//! Store-wide figures per UTC day: sessions started, sessions that ordered, orders and
//! their revenue per currency. They are what a store's plugin shows on its admin page
//! ("today", "last 30 days"), beside the zone analytics.
//!
//! A session is counted on the day it starts (its first request); an order on the day
//! it is placed, once per order id; a session as *converted* on each day it places its
//! first order of that day. To count that once, the current day keeps the
//! [`crate::analytics::session_key`]s of its converted sessions (64-bit hashes, no
//! identifier in clear); the set is dropped when the day ends, and an erasure removes
//! the erased sessions' keys from it. Days older than [`KEPT_DAYS`] are dropped.

use std::collections::{BTreeMap, HashSet};

use crate::analytics::day_of;
use crate::catalogue::UnixMillis;
use crate::money::Currency;

/// Days of figures kept (today included).
pub const KEPT_DAYS: i32 = 90;

/// One day's figures.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct SiteDay {
    /// Sessions started.
    pub sessions: u64,
    /// Sessions that placed at least one order that day.
    pub converted_sessions: u64,
    /// Orders placed (first sight of each order id).
    pub orders: u64,
    /// Their revenue, in minor units per currency.
    pub revenue: Vec<(Currency, i64)>,
}

impl SiteDay {
    /// Adds another day's figures (for a period's total).
    pub fn add(&mut self, other: &SiteDay) {
        self.sessions += other.sessions;
        self.converted_sessions += other.converted_sessions;
        self.orders += other.orders;
        for (currency, minor) in &other.revenue {
            self.add_revenue(*currency, *minor);
        }
    }

    fn add_revenue(&mut self, currency: Currency, minor: i64) {
        match self.revenue.iter_mut().find(|(c, _)| *c == currency) {
            Some((_, total)) => *total = total.saturating_add(minor),
            None => self.revenue.push((currency, minor)),
        }
    }
}

/// A day's figures as a state snapshot keeps them.
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct StoredSiteDay {
    /// The day ([`day_of`]).
    pub day: i32,
    /// Its figures.
    pub figures: SiteDay,
    /// Session keys that converted on it (the current day only).
    pub converted: Vec<u64>,
}

/// An account's figures per day.
#[derive(Debug, Default)]
pub struct SiteFigures {
    inner: parking_lot::Mutex<Days>,
}

#[derive(Debug, Default)]
struct Days {
    days: BTreeMap<i32, SiteDay>,
    /// The day whose converted sessions `converted` holds.
    converted_day: i32,
    converted: HashSet<u64>,
}

impl Days {
    fn day(&mut self, day: i32) -> &mut SiteDay {
        if self.days.len() > KEPT_DAYS as usize
            && let Some(newest) = self.days.keys().next_back().copied()
        {
            self.days.retain(|d, _| *d > newest.max(day) - KEPT_DAYS);
        }
        self.days.entry(day).or_default()
    }
}

impl SiteFigures {
    /// Counts a session started at `now`.
    pub fn session_started(&self, now: UnixMillis) {
        self.inner.lock().day(day_of(now)).sessions += 1;
    }

    /// Counts a first-seen order of the session `session` ([`crate::analytics::session_key`])
    /// at `now`, worth `minor` units of `currency`.
    pub fn order_placed(&self, session: u64, now: UnixMillis, currency: Currency, minor: i64) {
        let day = day_of(now);
        let mut days = self.inner.lock();
        if days.converted_day != day {
            if day < days.converted_day {
                // A late event of an earlier day: its conversions are no longer known.
                let figures = days.day(day);
                figures.orders += 1;
                figures.add_revenue(currency, minor.max(0));
                return;
            }
            days.converted_day = day;
            days.converted.clear();
        }
        let converted = days.converted.insert(session);
        let figures = days.day(day);
        figures.orders += 1;
        figures.add_revenue(currency, minor.max(0));
        if converted {
            figures.converted_sessions += 1;
        }
    }

    /// Forgets an erased session's key.
    pub fn forget_session(&self, session: u64) {
        self.inner.lock().converted.remove(&session);
    }

    /// The figures of the days `from..=to` ([`day_of`]), added up.
    pub fn total(&self, from: i32, to: i32) -> SiteDay {
        let days = self.inner.lock();
        let mut total = SiteDay::default();
        for (_, figures) in days.days.range(from..=to) {
            total.add(figures);
        }
        total
    }

    /// Every day's figures, for a state snapshot.
    pub fn entries(&self) -> Vec<StoredSiteDay> {
        let days = self.inner.lock();
        days.days
            .iter()
            .map(|(day, figures)| StoredSiteDay {
                day: *day,
                figures: figures.clone(),
                converted: if *day == days.converted_day {
                    days.converted.iter().copied().collect()
                } else {
                    Vec::new()
                },
            })
            .collect()
    }

    /// Restores one day's figures from a state snapshot.
    pub fn restore(&self, stored: StoredSiteDay) {
        let mut days = self.inner.lock();
        if !stored.converted.is_empty() && stored.day >= days.converted_day {
            days.converted_day = stored.day;
            days.converted = stored.converted.into_iter().collect();
        }
        *days.day(stored.day) = stored.figures;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytics::MILLIS_PER_DAY;

    fn gbp() -> Currency {
        Currency::from_code("GBP").unwrap()
    }

    #[test]
    fn a_session_converts_once_a_day_and_orders_add_up() {
        let site = SiteFigures::default();
        let day = 20_000 * MILLIS_PER_DAY;
        site.session_started(day + 10);
        site.session_started(day + 20);
        site.order_placed(1, day + 30, gbp(), 1_000);
        site.order_placed(1, day + 40, gbp(), 250);
        site.order_placed(2, day + MILLIS_PER_DAY, gbp(), 100);
        let first = site.total(20_000, 20_000);
        assert_eq!(first.sessions, 2);
        assert_eq!(first.orders, 2);
        assert_eq!(first.converted_sessions, 1);
        assert_eq!(first.revenue, vec![(gbp(), 1_250)]);
        let both = site.total(20_000, 20_001);
        assert_eq!((both.orders, both.converted_sessions), (3, 2));
    }

    #[test]
    fn figures_survive_a_snapshot_with_the_days_conversions() {
        let site = SiteFigures::default();
        let day = 20_000 * MILLIS_PER_DAY;
        site.order_placed(7, day, gbp(), 500);
        let restored = SiteFigures::default();
        for entry in site.entries() {
            restored.restore(entry);
        }
        restored.order_placed(7, day + 1, gbp(), 500);
        let total = restored.total(20_000, 20_000);
        assert_eq!((total.orders, total.converted_sessions), (2, 1));
    }

    #[test]
    fn old_days_are_dropped() {
        let site = SiteFigures::default();
        for day in 0..(KEPT_DAYS + 20) {
            site.session_started(UnixMillis::from(day) * MILLIS_PER_DAY);
        }
        assert!(site.entries().len() <= KEPT_DAYS as usize + 1);
        assert_eq!(site.total(KEPT_DAYS + 19, KEPT_DAYS + 19).sessions, 1);
    }
}
