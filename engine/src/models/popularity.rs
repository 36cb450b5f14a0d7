//! Popularity with time decay, and the most popular category and brand names.

use super::TRENDING_HALF_LIFE_MILLIS;
use crate::catalogue::UnixMillis;
use crate::shards::Sharded;

/// The most popular category and brand ids, rebuilt whole each round.
#[derive(Debug, Default)]
pub struct TopNames {
    /// Category ids by decayed popularity, most popular first.
    pub categories: Vec<String>,
    /// Brand ids by decayed popularity, most popular first.
    pub brands: Vec<String>,
}

/// Names by decayed popularity as of `now`, most popular first (ties by name).
pub fn most_popular(counters: &Sharded<String, Decaying>, now: UnixMillis) -> Vec<String> {
    let mut scored: Vec<(String, f64)> = counters
        .iter()
        .map(|entry| (entry.key().clone(), entry.value().value_at(now)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scored.into_iter().map(|(name, _)| name).collect()
}

/// A popularity counter whose score halves every [`TRENDING_HALF_LIFE_MILLIS`].
#[derive(Debug, Clone, Copy, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Decaying {
    score: f64,
    at: UnixMillis,
}

impl Decaying {
    /// Adds `amount` at time `now`. An addition older than the last one is decayed to
    /// it, so the score does not depend on the order additions arrive in (cluster nodes
    /// apply each other's events after their own).
    pub fn add(&mut self, amount: f64, now: UnixMillis) {
        if now < self.at {
            let elapsed = (self.at - now) as f64;
            self.score += amount * (-elapsed / TRENDING_HALF_LIFE_MILLIS as f64).exp2();
        } else {
            self.score = self.value_at(now) + amount;
            self.at = now;
        }
    }

    /// The score as of `now` (never more than it was at the last addition).
    pub fn value_at(&self, now: UnixMillis) -> f64 {
        let elapsed = now.saturating_sub(self.at).max(0) as f64;
        self.score * (-elapsed / TRENDING_HALF_LIFE_MILLIS as f64).exp2()
    }

    /// A key that orders counters as their scores at any one time would (greater
    /// first): the base-2 logarithm of the score as of the epoch. Scores all halve at the
    /// same rate, so counters that did not change keep their order.
    pub fn rank_key(&self) -> f64 {
        if self.score > 0.0 {
            self.score.log2() + self.at as f64 / TRENDING_HALF_LIFE_MILLIS as f64
        } else {
            f64::NEG_INFINITY
        }
    }

    /// When it was last added to.
    pub fn at(&self) -> UnixMillis {
        self.at
    }
}
