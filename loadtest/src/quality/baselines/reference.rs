//! The references beside the baselines, never taken as the best: Vitrine's co-view
//! model computed exactly, without its bounds, and that model blended with EASE.

use std::sync::Arc;

use vitrine_engine::models::SEED_DAMPING;
use vitrine_engine::zone::{DEFAULT_HISTORY, LONG_TERM_HISTORY};

use super::dense::Ease;
use super::matrix::{Square, add_row};
use super::sequential::SequentialRules;
use super::{Recommender, Training};

/// Vitrine's co-view model without its bounds: every view paired with the previous
/// `window` ([`CO_VIEW_WINDOW`] in the server) at weight 1/distance, read the other way
/// at `backward` times that (1 in the server); a pair weighs its count divided
/// by the partner's total to `partner_damping` (which the server tunes) and by the
/// seed's total to the default seed damping; a history's latest
/// [`DEFAULT_HISTORY`] products weigh `recency` to the power of their age and the
/// latest [`LONG_TERM_HISTORY`] share `long_term`, as `personalized` weighs its seeds.
/// What it scores above the zone is what the bounds on partners and neighbours cost.
pub(super) struct CoViewExact {
    weights: Square,
    recency: f32,
    long_term: f32,
}

impl CoViewExact {
    pub(super) fn fit(
        training: &Training,
        window: usize,
        backward: f32,
        recency: f32,
        long_term: f32,
        partner_damping: f32,
    ) -> CoViewExact {
        let counts = SequentialRules::count(training, window, backward);
        let n = training.items;
        let totals: Vec<f32> = (0..n as u32).map(|i| counts.row(i).iter().sum()).collect();
        let damped = |total: f32, power: f32| {
            if total > 0.0 { total.powf(-power) } else { 0.0 }
        };
        let mut weights = Square::zeros(n);
        for (i, &own) in totals.iter().enumerate() {
            let seed = damped(own, SEED_DAMPING);
            for ((cell, &count), &partner) in weights.cells[i * n..(i + 1) * n]
                .iter_mut()
                .zip(counts.row(i as u32))
                .zip(&totals)
            {
                *cell = count * seed * damped(partner, partner_damping);
            }
        }
        CoViewExact {
            weights,
            recency,
            long_term,
        }
    }
}

impl Recommender for CoViewExact {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        let mut weight = 1.0;
        for &item in history.iter().rev().take(DEFAULT_HISTORY) {
            add_row(scores, self.weights.row(item), weight);
            weight *= self.recency;
        }
        let lasting = history.len().min(LONG_TERM_HISTORY);
        if self.long_term > 0.0 && lasting > 0 {
            let share = self.long_term / lasting as f32;
            for &item in history.iter().rev().take(lasting) {
                add_row(scores, self.weights.row(item), share);
            }
        }
    }
}

/// [`Method::CoViewEase`], fitted.
pub(super) struct CoViewEase {
    pub(super) co_view: Arc<CoViewExact>,
    pub(super) ease: Arc<Ease>,
    pub(super) weight: f32,
}

impl Recommender for CoViewEase {
    fn score(&self, visitor: u32, history: &[u32], scores: &mut [f32]) {
        let scaled = |fitted: &dyn Recommender| {
            let mut part = vec![0.0; scores.len()];
            fitted.score(visitor, history, &mut part);
            let most = part.iter().copied().fold(0.0f32, f32::max);
            if most > 0.0 {
                part.iter_mut().for_each(|s| *s /= most);
            }
            part
        };
        let co_view = scaled(self.co_view.as_ref());
        let ease = scaled(self.ease.as_ref());
        for ((score, c), e) in scores.iter_mut().zip(co_view).zip(ease) {
            *score += c + self.weight * e;
        }
    }
}
