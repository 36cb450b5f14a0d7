//! Online self-evaluation (prequential): how well each product zone predicts what a
//! shopper does next.
//!
//! For one visitor in [`SAMPLE_ONE_IN`] (chosen by a stable hash of the visitor id), a
//! request that views a product, puts products in the basket or orders them is judged
//! before it is applied: each product zone of the account is filled as it would have
//! been shown to that visitor just then, on the page of their latest view (up to
//! [`TOP_K`] products), and each product the request brings that the visitor had not
//! viewed lately is looked up in it. A hit when it is there; its reciprocal rank (1 for
//! the first place, ½ for the second, 0 when absent) gives the mean reciprocal rank.
//! Counted per zone over the last [`BUCKETS`] × [`BUCKET_TRIALS`] trials (sliding) and
//! since the process started.
//!
//! At most [`JUDGED_PER_SECOND`] requests are judged a second per account (a token
//! bucket over request time, a second's worth at once): a judged request fills every
//! product zone once more, so a busy store pays it on a bounded share of its requests.
//!
//! This is not click-through: a zone is judged whether the store shows it or not.
//!
//! Files: `account.rs` (judging an account's product zones on a sampled visitor's
//! request, before it is applied).

use std::collections::{BTreeMap, VecDeque};

use parking_lot::Mutex;

use crate::bucket::TokenBucket;
use crate::catalogue::{ProductIdx, UnixMillis};

mod account;

/// One visitor in this many is judged.
pub const SAMPLE_ONE_IN: u64 = 20;
/// How many of a zone's products count (HR@K, MRR@K).
pub const TOP_K: usize = 10;
/// Trials per bucket of the sliding window.
pub const BUCKET_TRIALS: u64 = 1_000;
/// Buckets in the sliding window.
pub const BUCKETS: usize = 10;
/// Requests judged a second per account at most.
pub const JUDGED_PER_SECOND: u32 = 10;

/// Whether `visitor_id`'s requests are judged (the same answer in every process).
pub fn sampled(visitor_id: &str) -> bool {
    one_in(crate::analytics::session_key(visitor_id))
}

/// Whether `visitor_id`'s view of `product` is a self-tuning trial
/// ([`crate::tuning`]): one view in [`SAMPLE_ONE_IN`] of every visitor, so that a
/// store's every kind of shopper is heard, not a twentieth of them.
pub fn sampled_view(visitor_id: &str, product: &str) -> bool {
    one_in(crate::analytics::session_key(visitor_id) ^ crate::analytics::session_key(product))
}

/// Whether a hashed `key` is among one in [`SAMPLE_ONE_IN`].
fn one_in(key: u64) -> bool {
    // Fx hashes leave the low bits weak: mix before taking the remainder.
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32).is_multiple_of(SAMPLE_ONE_IN)
}

/// Where `target` is among the first [`TOP_K`] of `shown` (0 for the first).
pub fn rank_of(shown: impl IntoIterator<Item = ProductIdx>, target: ProductIdx) -> Option<usize> {
    shown
        .into_iter()
        .take(TOP_K)
        .position(|product| product == target)
}

/// Trials, hits and the sum of reciprocal ranks (of zones here, of self-tuning's
/// settings in [`crate::tuning`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Trials.
    pub trials: u64,
    /// Hits (the product among the first [`TOP_K`]).
    pub hits: u64,
    /// The sum of the hits' reciprocal ranks.
    pub reciprocal_ranks: f64,
}

impl Tally {
    /// Counts a trial whose product ranked at `rank` (from 0; `None`: a miss).
    pub fn add(&mut self, rank: Option<usize>) {
        self.trials += 1;
        if let Some(rank) = rank {
            self.hits += 1;
            #[expect(
                clippy::cast_precision_loss,
                reason = "a rank below TOP_K is exact in an f64"
            )]
            let place = (rank + 1) as f64;
            self.reciprocal_ranks += 1.0 / place;
        }
    }

    pub(crate) fn merge(&mut self, other: &Tally) {
        self.trials += other.trials;
        self.hits += other.hits;
        self.reciprocal_ranks += other.reciprocal_ranks;
    }

    #[expect(
        clippy::cast_precision_loss,
        reason = "trial counts far below 2^53 are exact in an f64"
    )]
    /// The hit rate and the mean reciprocal rank (0 without trials).
    pub fn rates(&self) -> (f64, f64) {
        if self.trials == 0 {
            return (0.0, 0.0);
        }
        let trials = self.trials as f64;
        (self.hits as f64 / trials, self.reciprocal_ranks / trials)
    }
}

/// One zone's trials: the sliding window's buckets, oldest first, and the total.
#[derive(Debug, Default)]
struct ZoneScore {
    window: VecDeque<Tally>,
    total: Tally,
}

/// How well a zone predicts, for `/metrics` and the admin API.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneQuality {
    /// The zone's id.
    pub zone: String,
    /// Trials in the sliding window.
    pub trials: u64,
    /// Share of them whose product was in the zone's top [`TOP_K`].
    pub hit_rate: f64,
    /// Their mean reciprocal rank.
    pub mrr: f64,
    /// Trials since the process started.
    pub trials_total: u64,
    /// Hits since the process started.
    pub hits_total: u64,
}

/// The account's prequential scores, per zone.
#[derive(Debug)]
pub struct Prequential {
    zones: Mutex<BTreeMap<String, ZoneScore>>,
    /// The bound on judged requests ([`JUDGED_PER_SECOND`]).
    judged: Mutex<TokenBucket>,
}

impl Default for Prequential {
    fn default() -> Prequential {
        Prequential {
            zones: Mutex::default(),
            judged: Mutex::new(TokenBucket::new(JUDGED_PER_SECOND)),
        }
    }
}

impl Prequential {
    /// Whether a request at `now` may be judged ([`JUDGED_PER_SECOND`]).
    pub fn due(&self, now: UnixMillis) -> bool {
        self.judged.lock().take(now)
    }

    /// Records a trial of `zone`: where the product was in its top [`TOP_K`], if there.
    pub fn record(&self, zone: &str, rank: Option<usize>) {
        let mut zones = self.zones.lock();
        let score = match zones.get_mut(zone) {
            Some(score) => score,
            None => zones.entry(zone.to_owned()).or_default(),
        };
        if score
            .window
            .back()
            .is_none_or(|bucket| bucket.trials >= BUCKET_TRIALS)
        {
            score.window.push_back(Tally::default());
            if score.window.len() > BUCKETS {
                score.window.pop_front();
            }
        }
        if let Some(bucket) = score.window.back_mut() {
            bucket.add(rank);
        }
        score.total.add(rank);
    }

    /// Each judged zone's figures, by zone id.
    pub fn figures(&self) -> Vec<ZoneQuality> {
        self.zones
            .lock()
            .iter()
            .map(|(zone, score)| {
                let mut window = Tally::default();
                for bucket in &score.window {
                    window.merge(bucket);
                }
                let (hit_rate, mrr) = window.rates();
                ZoneQuality {
                    zone: zone.clone(),
                    trials: window.trials,
                    hit_rate,
                    mrr,
                    trials_total: score.total.trials,
                    hits_total: score.total.hits,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_sequence_is_counted_exactly() {
        let scores = Prequential::default();
        // First place, third place, a miss: HR 2/3, MRR (1 + 1/3 + 0) / 3.
        scores.record("PZ", Some(0));
        scores.record("PZ", Some(2));
        scores.record("PZ", None);
        scores.record("TR", None);
        let figures = scores.figures();
        let pz = figures.iter().find(|f| f.zone == "PZ").expect("PZ judged");
        assert_eq!((pz.trials, pz.trials_total, pz.hits_total), (3, 3, 2));
        assert!((pz.hit_rate - 2.0 / 3.0).abs() < 1e-12, "{pz:?}");
        assert!((pz.mrr - (1.0 + 1.0 / 3.0) / 3.0).abs() < 1e-12, "{pz:?}");
        let tr = figures.iter().find(|f| f.zone == "TR").expect("TR judged");
        assert_eq!((tr.trials, tr.hits_total), (1, 0));
        assert!(tr.hit_rate.abs() < f64::EPSILON);
    }

    #[test]
    fn the_window_slides_by_buckets_and_the_total_keeps_everything() {
        let scores = Prequential::default();
        let full = BUCKET_TRIALS * BUCKETS as u64;
        // A window of misses, then one bucket of hits: the oldest bucket of misses
        // slides out.
        for _ in 0..full {
            scores.record("PZ", None);
        }
        for _ in 0..BUCKET_TRIALS {
            scores.record("PZ", Some(0));
        }
        let pz = scores.figures().remove(0);
        assert_eq!(pz.trials, full);
        assert_eq!(pz.trials_total, full + BUCKET_TRIALS);
        assert_eq!(pz.hits_total, BUCKET_TRIALS);
        assert!((pz.hit_rate - 1.0 / BUCKETS as f64).abs() < 1e-12, "{pz:?}");
        assert!((pz.mrr - 1.0 / BUCKETS as f64).abs() < 1e-12, "{pz:?}");
    }

    #[test]
    fn ranks_count_within_the_top_k_only() {
        let shown: Vec<ProductIdx> = (0..20u32).collect();
        assert_eq!(rank_of(shown.iter().copied(), 0), Some(0));
        assert_eq!(rank_of(shown.iter().copied(), 9), Some(9));
        assert_eq!(rank_of(shown.iter().copied(), 10), None);
    }

    #[test]
    fn about_one_visitor_in_twenty_is_sampled() {
        let count = (0..20_000)
            .filter(|n| sampled(&format!("visitor-{n}")))
            .count();
        assert!((800..1_200).contains(&count), "{count}");
        assert_eq!(sampled("visitor-7"), sampled("visitor-7"));
    }
}
