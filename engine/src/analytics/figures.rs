//! What an account measures of itself, as it holds it ([`Figures`]): zone analytics
//! (counters per zone, variant and day), the store-wide figures per day, the requests
//! served and items shown since the process started, and how well each product zone
//! predicts what sampled shoppers do next. `Account` holds one; events and answers
//! count into it (`crate::account`'s `track.rs`, `account.rs` here, `crate::prequential`).

use std::sync::atomic::{AtomicI64, Ordering};

use super::{ZoneCounts, ZoneDay};
use crate::catalogue::UnixMillis;
use crate::prequential::Prequential;
use crate::shards::{Sharded, StripedCounter, sharded};
use crate::site::SiteFigures;

/// An account's figures.
#[derive(Debug)]
pub(crate) struct Figures {
    /// Zone analytics: counters per zone, variant and day.
    pub(crate) zones: Sharded<ZoneDay, ZoneCounts>,
    /// Store-wide figures per day.
    pub(crate) site: SiteFigures,
    /// Requests served and items shown, since the process started.
    pub(crate) activity: Activity,
    /// How well each product zone predicts what sampled shoppers do next.
    pub(crate) predictions: Prequential,
}

impl Default for Figures {
    fn default() -> Figures {
        Figures {
            zones: sharded(),
            site: SiteFigures::default(),
            activity: Activity::default(),
            predictions: Prequential::default(),
        }
    }
}

/// Milliseconds in a day.
const DAY_MILLIS: UnixMillis = 86_400_000;

/// Counters of the serverside calls an account served.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// The UTC day (days since the epoch) that `today` counts.
    day: AtomicI64,
    today: StripedCounter,
    requests: StripedCounter,
    items: StripedCounter,
}

impl Activity {
    /// Counts one request at `now` that showed `items` zone items.
    pub(crate) fn record(&self, now: UnixMillis, items: usize) {
        let day = now.div_euclid(DAY_MILLIS);
        let seen = self.day.load(Ordering::Relaxed);
        if day > seen
            && self
                .day
                .compare_exchange(seen, day, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.today.reset();
        }
        if day >= self.day.load(Ordering::Relaxed) {
            self.today.add(1);
        }
        self.requests.add(1);
        self.items.add(items as u64);
    }

    pub(crate) fn stats(&self, now: UnixMillis) -> ActivityStats {
        let today = if self.day.load(Ordering::Relaxed) == now.div_euclid(DAY_MILLIS) {
            self.today.get()
        } else {
            0
        };
        ActivityStats {
            requests_today: today,
            requests: self.requests.get(),
            items_shown: self.items.get(),
        }
    }
}

/// What [`Account::activity`](crate::account::Account::activity) reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivityStats {
    /// Serverside calls on the UTC day asked about.
    pub requests_today: u64,
    /// Serverside calls since the process started.
    pub requests: u64,
    /// Zone items shown since the process started.
    pub items_shown: u64,
}
