//! Shadow tests: a draft campaign list for a zone judged beside the live one on the
//! self-evaluation sample ([`crate::prequential`]), before it is published.
//!
//! When a sampled visitor's request is judged, each zone under a shadow test is filled
//! twice for the same shopper at the same moment, on the same page: as the live
//! campaigns (or, without a list, the configuration) would show it, and as the draft
//! would. Each product the request brings that is new to the visitor is a trial of
//! both, paired: a hit when it is among the first [`crate::prequential::TOP_K`] of what each showed, and
//! its reciprocal rank. The difference of the two (draft minus live) is estimated with
//! a 95 % interval from the paired trials (Student's t on the per-trial differences).
//!
//! Nothing a shopper sees changes: the draft is filled only for the judgement. The
//! cost is inside self-evaluation's bound: only the requests it judges
//! ([`crate::prequential::JUDGED_PER_SECOND`] a second per account at most) fill a
//! zone once more per shadow test, and an account runs at most [`MAX_SHADOWS`].
//! Shadow tests live in memory: a restart ends them.
//!
//! Here: the test and its paired figures; `account` (what shadow tests add to
//! [`crate::account::Account`]: started, read and stopped by the admin API, and judged on
//! the requests self-evaluation judges).

use std::sync::Arc;

use parking_lot::Mutex;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::campaign::CampaignSet;
use crate::catalogue::UnixMillis;
use crate::prequential::Tally;

mod account;

/// Shadow tests an account runs at once, at most.
pub const MAX_SHADOWS: usize = 5;

/// Why a shadow test was not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShadowError {
    /// The account has no such product zone.
    #[error("no product zone {0:?} in the account")]
    NoZone(String),
    /// The account runs as many as it may.
    #[error("at most {MAX_SHADOWS} shadow tests run at once; stop one first")]
    TooMany,
}

/// A draft list judged beside the live one.
#[derive(Debug)]
pub struct Shadow {
    /// The zone id.
    pub zone: String,
    /// The campaigns with the draft (its list for the zone, and its segments).
    pub set: Arc<CampaignSet>,
    /// When it started.
    pub started: UnixMillis,
    paired: Mutex<Paired>,
}

/// Paired trials of the live and the draft list.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Paired {
    /// The live list's trials.
    pub live: Tally,
    /// The draft's trials (the same, judged on what the draft showed).
    pub draft: Tally,
    /// The sum of the squared per-trial hit differences (draft minus live).
    hit_squares: f64,
    /// The sum of the squared per-trial reciprocal-rank differences.
    rank_squares: f64,
}

/// A difference of the draft against the live list, with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// Draft minus live.
    pub estimate: f64,
    /// The interval's low end (none with fewer than two trials).
    pub low: Option<f64>,
    /// Its high end.
    pub high: Option<f64>,
}

impl Paired {
    /// Counts one trial: where the product was in what the live list and the draft
    /// showed (from 0; `None`: not among the first [`crate::prequential::TOP_K`]).
    pub fn add(&mut self, live: Option<usize>, draft: Option<usize>) {
        self.live.add(live);
        self.draft.add(draft);
        let hit = |rank: Option<usize>| f64::from(u8::from(rank.is_some()));
        let reciprocal = |rank: Option<usize>| {
            rank.map_or(0.0, |r| {
                #[expect(
                    clippy::cast_precision_loss,
                    reason = "a rank below TOP_K is exact in an f64"
                )]
                let place = (r + 1) as f64;
                1.0 / place
            })
        };
        let hits = hit(draft) - hit(live);
        let ranks = reciprocal(draft) - reciprocal(live);
        self.hit_squares += hits * hits;
        self.rank_squares += ranks * ranks;
    }

    /// Adds the trials of another (judged apart, on other moments).
    pub fn merge(&mut self, other: &Paired) {
        self.live.merge(&other.live);
        self.draft.merge(&other.draft);
        self.hit_squares += other.hit_squares;
        self.rank_squares += other.rank_squares;
    }

    /// The difference in hit rate, draft minus live.
    pub fn hit_rate(&self) -> Difference {
        #[expect(
            clippy::cast_precision_loss,
            reason = "hit counts far below 2^53 are exact in an f64"
        )]
        let sum = self.draft.hits as f64 - self.live.hits as f64;
        difference(sum, self.hit_squares, self.live.trials)
    }

    /// The difference in mean reciprocal rank, draft minus live.
    pub fn mrr(&self) -> Difference {
        let sum = self.draft.reciprocal_ranks - self.live.reciprocal_ranks;
        difference(sum, self.rank_squares, self.live.trials)
    }
}

/// The mean of `trials` paired differences whose sum and sum of squares are given,
/// with its 95 % interval (Student's t with `trials - 1` degrees of freedom).
fn difference(sum: f64, squares: f64, trials: u64) -> Difference {
    if trials == 0 {
        return Difference {
            estimate: 0.0,
            low: None,
            high: None,
        };
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "trial counts far below 2^53 are exact in an f64"
    )]
    let n = trials as f64;
    let mean = sum / n;
    if trials < 2 {
        return Difference {
            estimate: mean,
            low: None,
            high: None,
        };
    }
    let variance = ((squares - n * mean * mean) / (n - 1.0)).max(0.0);
    let quantile = StudentsT::new(0.0, 1.0, n - 1.0)
        .map(|t| t.inverse_cdf(0.975))
        .unwrap_or(1.96);
    let half = quantile * (variance / n).sqrt();
    // A difference of two rates lies within ±1: the interval is cut there.
    Difference {
        estimate: mean,
        low: Some((mean - half).max(-1.0)),
        high: Some((mean + half).min(1.0)),
    }
}

impl Shadow {
    /// A shadow test of `set`'s list for `zone`, from `started`.
    pub fn new(zone: &str, set: Arc<CampaignSet>, started: UnixMillis) -> Shadow {
        Shadow {
            zone: zone.to_owned(),
            set,
            started,
            paired: Mutex::default(),
        }
    }

    /// Counts a trial (see [`Paired::add`]).
    pub fn record(&self, live: Option<usize>, draft: Option<usize>) {
        self.paired.lock().add(live, draft);
    }

    /// Its trials so far.
    pub fn paired(&self) -> Paired {
        *self.paired.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paired_difference_has_the_interval_of_its_trials() {
        let mut paired = Paired::default();
        assert_eq!(paired.hit_rate().low, None);
        // Ten trials: the draft hits all at the first place, the live list hits four
        // at the second.
        for trial in 0..10 {
            paired.add((trial < 4).then_some(1), Some(0));
        }
        assert_eq!((paired.live.hits, paired.draft.hits), (4, 10));
        let hits = paired.hit_rate();
        assert!((hits.estimate - 0.6).abs() < 1e-12, "{hits:?}");
        // Differences 0 (four times) and 1 (six times): sd = sqrt(0.2667), t(9) = 2.262.
        let half = 2.262_157 * (0.266_666_7_f64 / 10.0).sqrt();
        let low = hits.low.unwrap();
        assert!((low - (0.6 - half)).abs() < 1e-4, "{hits:?}");
        let mrr = paired.mrr();
        // Draft 1 each; live 0.5 four times, 0 six times: mean difference 0.8.
        assert!((mrr.estimate - 0.8).abs() < 1e-12, "{mrr:?}");
        assert!(mrr.low.unwrap() > 0.0 && mrr.high.unwrap() < 1.0, "{mrr:?}");
        // Equal lists: no difference, a zero-width interval.
        let mut same = Paired::default();
        for _ in 0..5 {
            same.add(Some(2), Some(2));
        }
        assert_eq!(same.hit_rate().low, Some(0.0));
        assert_eq!(same.mrr().high, Some(0.0));
    }
}
