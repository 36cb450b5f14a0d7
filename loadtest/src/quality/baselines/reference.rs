//! The references beside the baselines, never taken as the best: Vitrine's co-view
//! model computed exactly, without its bounds, that model blended with EASE, and EASE
//! bounded to each product's strongest partners, alone and blended.

use std::sync::Arc;

use vitrine_engine::models::SEED_DAMPING;
use vitrine_engine::zone::{DEFAULT_HISTORY, LONG_TERM_HISTORY};

use nalgebra::{DMatrix, DVector};

use super::matrix::{Square, add_row, co_counts, counts};
use super::sequential::SequentialRules;
use super::training::{Interactions, Recommender};

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
        training: &Interactions,
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

/// [`Method::CoViewEase`] and [`Method::CoViewLocalEase`], fitted: the exact co-view
/// model blended with another.
pub(super) struct CoViewBlend {
    pub(super) co_view: Arc<CoViewExact>,
    pub(super) other: Arc<dyn Recommender>,
    pub(super) weight: f32,
}

impl Recommender for CoViewBlend {
    fn score(&self, visitor: u32, history: &[u32], scores: &mut [f32]) {
        blend_scaled(
            self.co_view.as_ref(),
            self.other.as_ref(),
            self.weight,
            visitor,
            history,
            scores,
        );
    }
}

/// Adds `first`'s and `second`'s scores, each scaled to a maximum of 1 for the question,
/// the second weighed `weight`.
fn blend_scaled(
    first: &dyn Recommender,
    second: &dyn Recommender,
    weight: f32,
    visitor: u32,
    history: &[u32],
    scores: &mut [f32],
) {
    let scaled = |fitted: &dyn Recommender| {
        let mut part = vec![0.0; scores.len()];
        fitted.score(visitor, history, &mut part);
        let most = part.iter().copied().fold(0.0f32, f32::max);
        if most > 0.0 {
            part.iter_mut().for_each(|s| *s /= most);
        }
        part
    };
    let first = scaled(first);
    let second = scaled(second);
    for ((score, a), b) in scores.iter_mut().zip(first).zip(second) {
        *score += a + weight * b;
    }
}

/// A third reference: EASE with each product's regression bounded to its `partners`
/// products seen with it by the most visitors (the products a server could keep per
/// product), so that it fits catalogues of any size: the weights of product `j` come
/// from `(G_NN + λI) w = G_Nj` over its partners `N`, `G` the count of visitors who
/// interacted with both (the products' own counts on the diagonal). A product scores
/// the sum of its weights from the history's products, as EASE does. It measures what
/// a regression on the counts Vitrine keeps would add to the co-occurrence lists.
pub(super) struct LocalEase {
    /// By product `i`, the products `j` it weighs, with `i`'s weight in `j`'s column.
    rows: Vec<Vec<(u32, f32)>>,
}

impl LocalEase {
    pub(super) fn fit(training: &Interactions, lambda: f64, partners: usize) -> LocalEase {
        use rayon::prelude::*;
        let distinct = training.distinct();
        let n = training.items;
        let counts = counts(&distinct, n);
        let co = co_counts(&distinct, n);
        // Each product's column, solved on its own: (partners, weights).
        let columns: Vec<Vec<(u32, f32)>> = (0..n as u32)
            .into_par_iter()
            .map(|j| {
                let mut strongest: Vec<u32> = (0..n as u32)
                    .filter(|&i| i != j && co.row(j)[i as usize] > 0.0)
                    .collect();
                strongest.sort_unstable_by(|&a, &b| {
                    co.row(j)[b as usize]
                        .total_cmp(&co.row(j)[a as usize])
                        .then(a.cmp(&b))
                });
                strongest.truncate(partners);
                let m = strongest.len();
                if m == 0 {
                    return Vec::new();
                }
                let gram = DMatrix::<f64>::from_fn(m, m, |x, y| {
                    let (a, b) = (strongest[x], strongest[y]);
                    if x == y {
                        f64::from(counts[a as usize]) + lambda
                    } else {
                        f64::from(co.row(a)[b as usize])
                    }
                });
                let target =
                    DVector::<f64>::from_fn(m, |x, _| f64::from(co.row(strongest[x])[j as usize]));
                let Some(cholesky) = gram.cholesky() else {
                    return Vec::new();
                };
                let solved = cholesky.solve(&target);
                strongest
                    .iter()
                    .zip(solved.iter())
                    .map(|(&i, &w)| (i, w as f32))
                    .collect()
            })
            .collect();
        let mut rows = vec![Vec::new(); n];
        for (j, column) in columns.iter().enumerate() {
            for &(i, w) in column {
                rows[i as usize].push((j as u32, w));
            }
        }
        LocalEase { rows }
    }
}

impl Recommender for LocalEase {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        let mut seen: Vec<u32> = history.to_vec();
        seen.sort_unstable();
        seen.dedup();
        for i in seen {
            for &(j, w) in &self.rows[i as usize] {
                scores[j as usize] += w;
            }
        }
    }
}
