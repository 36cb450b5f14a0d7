//! Most popular, item-kNN (cosine), EASE and implicit ALS.

use anyhow::bail;
use nalgebra::{DMatrix, DVector};

use super::matrix::{Square, add_row, add_rows_of, co_counts, counts};
use super::training::{Interactions, Recommender};

pub(super) struct MostPopular {
    counts: Vec<f32>,
}

impl MostPopular {
    pub(super) fn fit(training: &Interactions) -> MostPopular {
        let mut counts = vec![0.0f32; training.items];
        for sequence in &training.sequences {
            for &i in sequence {
                counts[i as usize] += 1.0;
            }
        }
        MostPopular { counts }
    }
}

impl Recommender for MostPopular {
    fn score(&self, _: u32, _: &[u32], scores: &mut [f32]) {
        add_row(scores, &self.counts, 1.0);
    }
}

/// Item-kNN: cosine similarity of products' visitor sets, each product's `neighbours`
/// most similar kept (0: all); a product scores the sum of its similarities to the
/// history's products.
pub(super) struct ItemKnn {
    similar: Square,
}

impl ItemKnn {
    pub(super) fn fit(training: &Interactions, neighbours: usize) -> ItemKnn {
        let distinct = training.distinct();
        let counts = counts(&distinct, training.items);
        let mut similar = co_counts(&distinct, training.items);
        let n = training.items;
        for i in 0..n {
            let row = &mut similar.cells[i * n..(i + 1) * n];
            for (j, cell) in row.iter_mut().enumerate() {
                let norm = (counts[i] * counts[j]).sqrt();
                *cell = if norm > 0.0 { *cell / norm } else { 0.0 };
            }
            if neighbours > 0 && neighbours < n {
                let mut sorted: Vec<f32> = row.to_vec();
                let (_, kth, _) =
                    sorted.select_nth_unstable_by(neighbours - 1, |a, b| b.total_cmp(a));
                let kth = *kth;
                let mut kept = 0;
                for cell in row.iter_mut() {
                    if *cell > kth || (*cell == kth && kept < neighbours) {
                        kept += 1;
                    } else {
                        *cell = 0.0;
                    }
                }
            }
        }
        ItemKnn { similar }
    }
}

impl Recommender for ItemKnn {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        add_rows_of(&self.similar, history, scores);
    }
}

/// EASE (Steck, 2019): the closed-form item-item regression `B = I - P diagMat(1 /
/// diag(P))` with `P = (XᵀX + λI)⁻¹`, zero diagonal; a product scores the sum of its
/// weights from the history's products.
pub(super) struct Ease {
    weights: Square,
}

impl Ease {
    pub(super) fn fit(training: &Interactions, lambda: f64) -> anyhow::Result<Ease> {
        let distinct = training.distinct();
        let n = training.items;
        let counts = counts(&distinct, n);
        let co = co_counts(&distinct, n);
        let gram = DMatrix::<f64>::from_fn(n, n, |i, j| {
            if i == j {
                f64::from(counts[i]) + lambda
            } else {
                f64::from(co.cells[i * n + j])
            }
        });
        let Some(cholesky) = gram.cholesky() else {
            bail!("ease: XᵀX + λI is not positive definite (λ = {lambda})");
        };
        let p = cholesky.inverse();
        let mut weights = Square::zeros(n);
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    weights.cells[i * n + j] = (-p[(i, j)] / p[(j, j)]) as f32;
                }
            }
        }
        Ok(Ease { weights })
    }
}

impl Recommender for Ease {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        add_rows_of(&self.weights, history, scores);
    }
}

/// Implicit ALS (Hu, Koren and Volinsky, 2008): confidence `1 + α` on every product a
/// visitor interacted with, alternating least squares with L2 `regularization`; the
/// visitor's factors are solved from their history when asked (so a history that grew
/// since the fit counts).
pub(super) struct Als {
    items: DMatrix<f64>,
    gram: DMatrix<f64>,
    regularization: f64,
    alpha: f64,
}

impl Als {
    pub(super) fn fit(
        training: &Interactions,
        factors: usize,
        regularization: f64,
        alpha: f64,
        iterations: usize,
    ) -> anyhow::Result<Als> {
        let distinct = training.distinct();
        let n = training.items;
        let mut by_item: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (u, list) in distinct.iter().enumerate() {
            for &i in list {
                by_item[i as usize].push(u as u32);
            }
        }
        let mut rng = vitrine_benches::feedgen::Rng::new(training.seed);
        let mut items = DMatrix::<f64>::from_fn(n, factors, |_, _| {
            (rng.below(1_000_000) as f64 / 1_000_000.0 - 0.5) * 0.02
        });
        for _ in 0..iterations {
            let users = solve_side(&items, &distinct, regularization, alpha)?;
            items = solve_side(&users, &by_item, regularization, alpha)?;
        }
        let gram = items.transpose() * &items;
        Ok(Als {
            items,
            gram,
            regularization,
            alpha,
        })
    }
}

/// One half-step of ALS: each row's factors from the other side's `fixed` factors and
/// the row's interactions.
pub(super) fn solve_side(
    fixed: &DMatrix<f64>,
    rows: &[Vec<u32>],
    regularization: f64,
    alpha: f64,
) -> anyhow::Result<DMatrix<f64>> {
    let gram = fixed.transpose() * fixed;
    let factors = fixed.ncols();
    let mut out = DMatrix::<f64>::zeros(rows.len(), factors);
    for (r, interacted) in rows.iter().enumerate() {
        let x = fold_in(fixed, &gram, interacted, regularization, alpha)?;
        out.set_row(r, &x.transpose());
    }
    Ok(out)
}

/// Solves `(YᵀY + α Σ yᵢyᵢᵀ + λI) x = (1 + α) Σ yᵢ` over the interacted rows `i` of
/// `fixed` (`Y`).
pub(super) fn fold_in(
    fixed: &DMatrix<f64>,
    gram: &DMatrix<f64>,
    interacted: &[u32],
    regularization: f64,
    alpha: f64,
) -> anyhow::Result<DVector<f64>> {
    let factors = fixed.ncols();
    let mut a = gram.clone();
    for d in 0..factors {
        a[(d, d)] += regularization;
    }
    let mut b = DVector::<f64>::zeros(factors);
    for &i in interacted {
        let y = fixed.row(i as usize).transpose();
        a.ger(alpha, &y, &y, 1.0);
        b.axpy(1.0 + alpha, &y, 1.0);
    }
    match a.cholesky() {
        Some(c) => Ok(c.solve(&b)),
        None => bail!("als: a normal-equations matrix is not positive definite"),
    }
}

impl Recommender for Als {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        let mut seen: Vec<u32> = history.to_vec();
        seen.sort_unstable();
        seen.dedup();
        let Ok(user) = fold_in(
            &self.items,
            &self.gram,
            &seen,
            self.regularization,
            self.alpha,
        ) else {
            return;
        };
        let predicted = &self.items * user;
        for (s, p) in scores.iter_mut().zip(predicted.iter()) {
            *s += *p as f32;
        }
    }
}
