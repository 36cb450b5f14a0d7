//! The published methods Vitrine's zones are measured against, fitted on the same
//! interactions: most popular, item-kNN (cosine), EASE, implicit ALS, a Markov
//! last-item model, sequential rules and V-SKNN (session kNN). Each is a
//! [`Recommender`] that scores every product for a visitor's history; all of them
//! treat every interaction (view, basket, order, rating) as one implicit signal.
//! Beside them, as a reference and never taken as the best baseline, Vitrine's own
//! co-view model computed exactly, without its bounds ([`Method::CoViewExact`]).
//!
//! The dense methods keep products × products matrices: datasets are limited to
//! [`MAX_DENSE_ITEMS`] products.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::bail;
use nalgebra::{DMatrix, DVector};
use vitrine_engine::models::{CO_VIEW_WINDOW, PARTNER_DAMPING, SEED_DAMPING};
use vitrine_engine::zone::{
    DEFAULT_HISTORY, DEFAULT_LONG_TERM, DEFAULT_RECENCY, LONG_TERM_HISTORY,
};

/// Largest catalogue the dense methods take (a matrix of this many squared `f32`s is
/// 144 MB).
pub(crate) const MAX_DENSE_ITEMS: usize = 6_000;

/// What every method is fitted on: each visitor's products in time order.
pub(crate) struct Training {
    pub(crate) sequences: Vec<Vec<u32>>,
    pub(crate) items: usize,
    /// Fixed seed for methods with random starts.
    pub(crate) seed: u64,
    /// EASE fitted on these interactions, by λ: EASE and the blends with it share
    /// one fit per λ instead of inverting the same matrix for each weight.
    ease: Mutex<HashMap<u64, Arc<Ease>>>,
    /// The exact co-view model at the server's settings, which every blend with EASE
    /// shares.
    co_view: OnceLock<Arc<CoViewExact>>,
}

impl Training {
    pub(crate) fn new(sequences: Vec<Vec<u32>>, items: usize, seed: u64) -> Training {
        Training {
            sequences,
            items,
            seed,
            ease: Mutex::new(HashMap::new()),
            co_view: OnceLock::new(),
        }
    }

    /// The exact co-view model at the server's settings, fitted once.
    fn server_co_view(&self) -> Arc<CoViewExact> {
        let fitted = self.co_view.get_or_init(|| {
            Arc::new(CoViewExact::fit(
                self,
                CO_VIEW_WINDOW,
                1.0,
                DEFAULT_RECENCY as f32,
                DEFAULT_LONG_TERM as f32,
            ))
        });
        Arc::clone(fitted)
    }

    /// EASE with `lambda` fitted on these interactions, fitted once.
    fn ease(&self, lambda: f64) -> anyhow::Result<Arc<Ease>> {
        let mut fits = self
            .ease
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(fitted) = fits.get(&lambda.to_bits()) {
            return Ok(Arc::clone(fitted));
        }
        let fitted = Arc::new(Ease::fit(self, lambda)?);
        fits.insert(lambda.to_bits(), Arc::clone(&fitted));
        Ok(fitted)
    }

    /// Each visitor's distinct products.
    fn distinct(&self) -> Vec<Vec<u32>> {
        self.sequences
            .iter()
            .map(|s| {
                let mut d = s.clone();
                d.sort_unstable();
                d.dedup();
                d
            })
            .collect()
    }
}

/// A fitted method.
pub(crate) trait Recommender: Send + Sync {
    /// Adds a score for every product to `scores` (products.len() long), for the
    /// visitor `visitor` whose history is `history` (oldest first).
    fn score(&self, visitor: u32, history: &[u32], scores: &mut [f32]);
}

impl<R: Recommender> Recommender for Arc<R> {
    fn score(&self, visitor: u32, history: &[u32], scores: &mut [f32]) {
        R::score(self, visitor, history, scores);
    }
}

/// A method with one setting of its hyper-parameters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Method {
    MostPopular,
    ItemKnn {
        neighbours: usize,
    },
    Ease {
        lambda: f64,
    },
    Als {
        factors: usize,
        regularization: f64,
        alpha: f64,
        iterations: usize,
    },
    Markov,
    SequentialRules {
        window: usize,
        symmetric: bool,
        steps: usize,
    },
    Vsknn {
        neighbours: usize,
        steps: usize,
    },
    /// Not a baseline but a reference: Vitrine's co-view model and `personalized` blend
    /// computed exactly, without its bounds on partners and neighbours; `window` and
    /// `backward` (the weight of a pair read against the order it was viewed in) are
    /// the server's fixed choices ([`CO_VIEW_WINDOW`], both ways alike) among others
    /// the validation round compares.
    CoViewExact {
        window: usize,
        backward: f32,
        recency: f32,
        long_term: f32,
    },
    /// A second reference: the exact co-view model at the server's settings blended
    /// with EASE, each question's scores of either scaled to a maximum of 1 and EASE's
    /// weighed `weight`. It measures how far a model beyond co-occurrence counts (EASE
    /// is refitted offline, not learnt event by event) would take the approach.
    CoViewEase {
        lambda: f64,
        weight: f32,
    },
}

impl Method {
    /// The method's name in reports.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Method::MostPopular => "most_popular",
            Method::ItemKnn { .. } => "item_knn",
            Method::Ease { .. } => "ease",
            Method::Als { .. } => "als",
            Method::Markov => "markov",
            Method::SequentialRules { .. } => "sequential_rules",
            Method::Vsknn { .. } => "v_sknn",
            Method::CoViewExact { .. } => "co_view_exact",
            Method::CoViewEase { .. } => "co_view_ease",
        }
    }

    /// Whether the method is a reference for Vitrine's own model rather than a
    /// published baseline (it is reported, never taken as the best baseline).
    pub(crate) fn is_reference(&self) -> bool {
        matches!(self, Method::CoViewExact { .. } | Method::CoViewEase { .. })
    }

    /// Its hyper-parameters, for reports.
    pub(crate) fn params(&self) -> String {
        match self {
            Method::MostPopular | Method::Markov => String::new(),
            Method::ItemKnn { neighbours } => format!("neighbours={neighbours}"),
            Method::Ease { lambda } => format!("lambda={lambda}"),
            Method::Als {
                factors,
                regularization,
                alpha,
                iterations,
            } => format!(
                "factors={factors} regularization={regularization} alpha={alpha} iterations={iterations}"
            ),
            Method::SequentialRules {
                window,
                symmetric,
                steps,
            } => format!("window={window} symmetric={symmetric} steps={steps}"),
            Method::Vsknn { neighbours, steps } => format!("neighbours={neighbours} steps={steps}"),
            Method::CoViewExact {
                window,
                backward,
                recency,
                long_term,
            } => format!(
                "window={window} backward={backward} recency={recency} long_term={long_term}"
            ),
            Method::CoViewEase { lambda, weight } => format!("lambda={lambda} weight={weight}"),
        }
    }

    /// Every method with the settings tried on the validation round, grouped by method.
    pub(crate) fn grid() -> Vec<Vec<Method>> {
        let mut grid = vec![vec![Method::MostPopular], vec![Method::Markov]];
        grid.push(
            [20, 50, 100, 200, 0]
                .into_iter()
                .map(|neighbours| Method::ItemKnn { neighbours })
                .collect(),
        );
        grid.push(
            [50.0, 200.0, 500.0, 1000.0]
                .into_iter()
                .map(|lambda| Method::Ease { lambda })
                .collect(),
        );
        let mut als = Vec::new();
        for regularization in [0.1, 1.0] {
            for alpha in [2.0, 10.0, 40.0] {
                als.push(Method::Als {
                    factors: 64,
                    regularization,
                    alpha,
                    iterations: 10,
                });
            }
        }
        grid.push(als);
        let mut rules = Vec::new();
        for window in [3, 10, 20, 40] {
            for symmetric in [false, true] {
                for steps in [1, 5, 10, 20] {
                    rules.push(Method::SequentialRules {
                        window,
                        symmetric,
                        steps,
                    });
                }
            }
        }
        grid.push(rules);
        let mut sknn = Vec::new();
        for neighbours in [25, 50, 100, 200] {
            for steps in [5, 10, 20, 50] {
                sknn.push(Method::Vsknn { neighbours, steps });
            }
        }
        grid.push(sknn);
        // The zone's own settings at the server's window, then the window and the
        // backward weight the server fixes, each at the zone's defaults.
        let exact = |window, backward, recency, long_term| Method::CoViewExact {
            window,
            backward,
            recency,
            long_term,
        };
        let (zone_recency, zone_long_term) = (DEFAULT_RECENCY as f32, DEFAULT_LONG_TERM as f32);
        let mut references = Vec::new();
        for recency in [0.7, 0.8, 0.9] {
            for long_term in [0.0, 1.0, 2.0] {
                references.push(exact(CO_VIEW_WINDOW, 1.0, recency, long_term));
            }
        }
        for window in [5, 20, 30] {
            references.push(exact(window, 1.0, zone_recency, zone_long_term));
        }
        for backward in [0.0, 0.5] {
            references.push(exact(
                CO_VIEW_WINDOW,
                backward,
                zone_recency,
                zone_long_term,
            ));
        }
        grid.push(references);
        let mut blends = Vec::new();
        for lambda in [200.0, 1000.0] {
            for weight in [0.25, 0.5, 1.0] {
                blends.push(Method::CoViewEase { lambda, weight });
            }
        }
        grid.push(blends);
        grid
    }

    /// Fits the method on `training`.
    pub(crate) fn fit(&self, training: &Training) -> anyhow::Result<Box<dyn Recommender>> {
        let dense = !matches!(
            self,
            Method::MostPopular | Method::Als { .. } | Method::Vsknn { .. }
        );
        if dense && training.items > MAX_DENSE_ITEMS {
            bail!(
                "{}: {} products is more than the {MAX_DENSE_ITEMS} the dense baselines take",
                self.name(),
                training.items
            );
        }
        Ok(match *self {
            Method::MostPopular => Box::new(MostPopular::fit(training)),
            Method::ItemKnn { neighbours } => Box::new(ItemKnn::fit(training, neighbours)),
            Method::Ease { lambda } => Box::new(training.ease(lambda)?),
            Method::Als {
                factors,
                regularization,
                alpha,
                iterations,
            } => Box::new(Als::fit(
                training,
                factors,
                regularization,
                alpha,
                iterations,
            )?),
            Method::Markov => Box::new(Markov::fit(training)),
            Method::SequentialRules {
                window,
                symmetric,
                steps,
            } => Box::new(SequentialRules::fit(training, window, symmetric, steps)),
            Method::Vsknn { neighbours, steps } => {
                Box::new(Vsknn::fit(training, neighbours, steps))
            }
            Method::CoViewExact {
                window,
                backward,
                recency,
                long_term,
            } => Box::new(CoViewExact::fit(
                training, window, backward, recency, long_term,
            )),
            Method::CoViewEase { lambda, weight } => Box::new(CoViewEase {
                co_view: training.server_co_view(),
                ease: training.ease(lambda)?,
                weight,
            }),
        })
    }
}

/// A products × products matrix of `f32`, row-major.
struct Square {
    n: usize,
    cells: Vec<f32>,
}

impl Square {
    fn zeros(n: usize) -> Square {
        Square {
            n,
            cells: vec![0.0; n * n],
        }
    }

    fn row(&self, i: u32) -> &[f32] {
        let start = i as usize * self.n;
        &self.cells[start..start + self.n]
    }

    fn add(&mut self, i: u32, j: u32, value: f32) {
        self.cells[i as usize * self.n + j as usize] += value;
    }
}

fn add_row(scores: &mut [f32], row: &[f32], weight: f32) {
    for (s, r) in scores.iter_mut().zip(row) {
        *s += weight * r;
    }
}

/// Adds the rows of `matrix` of each distinct product of `history`.
fn add_rows_of(matrix: &Square, history: &[u32], scores: &mut [f32]) {
    let mut seen: Vec<u32> = history.to_vec();
    seen.sort_unstable();
    seen.dedup();
    for i in seen {
        add_row(scores, matrix.row(i), 1.0);
    }
}

/// How many visitors interacted with each product.
fn counts(distinct: &[Vec<u32>], items: usize) -> Vec<f32> {
    let mut counts = vec![0.0f32; items];
    for items in distinct {
        for &i in items {
            counts[i as usize] += 1.0;
        }
    }
    counts
}

/// Visitors who interacted with both products, for every pair.
fn co_counts(distinct: &[Vec<u32>], items: usize) -> Square {
    let mut co = Square::zeros(items);
    for list in distinct {
        for (x, &i) in list.iter().enumerate() {
            for &j in &list[x + 1..] {
                co.add(i, j, 1.0);
                co.add(j, i, 1.0);
            }
        }
    }
    co
}

struct MostPopular {
    counts: Vec<f32>,
}

impl MostPopular {
    fn fit(training: &Training) -> MostPopular {
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
struct ItemKnn {
    similar: Square,
}

impl ItemKnn {
    fn fit(training: &Training, neighbours: usize) -> ItemKnn {
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
struct Ease {
    weights: Square,
}

impl Ease {
    fn fit(training: &Training, lambda: f64) -> anyhow::Result<Ease> {
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
struct Als {
    items: DMatrix<f64>,
    gram: DMatrix<f64>,
    regularization: f64,
    alpha: f64,
}

impl Als {
    fn fit(
        training: &Training,
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
fn solve_side(
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
fn fold_in(
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

/// A first-order Markov chain: how often each product followed the history's last.
struct Markov {
    transitions: HashMap<u32, HashMap<u32, f32>>,
}

impl Markov {
    fn fit(training: &Training) -> Markov {
        let mut transitions: HashMap<u32, HashMap<u32, f32>> = HashMap::new();
        for sequence in &training.sequences {
            for pair in sequence.windows(2) {
                if let [a, b] = *pair
                    && a != b
                {
                    *transitions.entry(a).or_default().entry(b).or_default() += 1.0;
                }
            }
        }
        Markov { transitions }
    }
}

impl Recommender for Markov {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        if let Some(next) = history.last().and_then(|last| self.transitions.get(last)) {
            for (&b, &count) in next {
                scores[b as usize] += count;
            }
        }
    }
}

/// Sequential rules (Ludewig and Jannach, 2018): a rule `a → b` for every `b` within
/// `window` steps after `a` in a sequence, weighted `1 / distance` (and `b → a` too
/// when `symmetric`); a product scores the rules from the history's last `steps`
/// products, the latest weighing most (`1 / (1 + age)`).
struct SequentialRules {
    rules: Square,
    steps: usize,
}

impl SequentialRules {
    fn fit(training: &Training, window: usize, symmetric: bool, steps: usize) -> Self {
        let backward = if symmetric { 1.0 } else { 0.0 };
        SequentialRules {
            rules: Self::count(training, window, backward),
            steps,
        }
    }

    /// The rules `a → b` at `1 / distance`, and `b → a` at `backward` times that.
    fn count(training: &Training, window: usize, backward: f32) -> Square {
        let mut rules = Square::zeros(training.items);
        for sequence in &training.sequences {
            for (x, &a) in sequence.iter().enumerate() {
                for (d, &b) in sequence.iter().skip(x + 1).take(window).enumerate() {
                    if a == b {
                        continue;
                    }
                    let weight = 1.0 / (d + 1) as f32;
                    rules.add(a, b, weight);
                    if backward > 0.0 {
                        rules.add(b, a, backward * weight);
                    }
                }
            }
        }
        rules
    }
}

impl Recommender for SequentialRules {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        for (age, &item) in history.iter().rev().take(self.steps).enumerate() {
            add_row(scores, self.rules.row(item), 1.0 / (1 + age) as f32);
        }
    }
}

/// V-SKNN (Ludewig and Jannach, 2018), each visitor's training history a session: the
/// history's last `steps` products weighted by position (the latest 1, the oldest
/// `1 / steps`), the `neighbours` sessions with the highest weighted overlap (the
/// visitor's own left out), a product scoring the summed similarity of the neighbour
/// sessions that hold it.
struct Vsknn {
    sessions: Vec<Vec<u32>>,
    by_item: Vec<Vec<u32>>,
    neighbours: usize,
    steps: usize,
}

impl Vsknn {
    fn fit(training: &Training, neighbours: usize, steps: usize) -> Vsknn {
        let sessions = training.distinct();
        let mut by_item: Vec<Vec<u32>> = vec![Vec::new(); training.items];
        for (s, list) in sessions.iter().enumerate() {
            for &i in list {
                by_item[i as usize].push(s as u32);
            }
        }
        Vsknn {
            sessions,
            by_item,
            neighbours,
            steps,
        }
    }
}

impl Recommender for Vsknn {
    fn score(&self, visitor: u32, history: &[u32], scores: &mut [f32]) {
        let recent: Vec<u32> = history.iter().rev().take(self.steps).copied().collect();
        let mut weights: std::collections::BTreeMap<u32, f32> = std::collections::BTreeMap::new();
        for (age, &item) in recent.iter().enumerate() {
            let weight = 1.0 - age as f32 / self.steps as f32;
            let entry = weights.entry(item).or_default();
            *entry = entry.max(weight);
        }
        let mut similarity: HashMap<u32, f32> = HashMap::new();
        for (&item, &weight) in &weights {
            for &session in self.by_item.get(item as usize).into_iter().flatten() {
                if session != visitor {
                    *similarity.entry(session).or_default() += weight;
                }
            }
        }
        let mut ranked: Vec<(u32, f32)> = similarity.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (session, sim) in ranked.into_iter().take(self.neighbours) {
            for &item in &self.sessions[session as usize] {
                scores[item as usize] += sim;
            }
        }
    }
}

/// Vitrine's co-view model without its bounds: every view paired with the previous
/// `window` ([`CO_VIEW_WINDOW`] in the server) at weight 1/distance, read the other way
/// at `backward` times that (1 in the server); a pair weighs its count divided
/// by both products' totals to the default dampings; a history's latest
/// [`DEFAULT_HISTORY`] products weigh `recency` to the power of their age and the
/// latest [`LONG_TERM_HISTORY`] share `long_term`, as `personalized` weighs its seeds.
/// What it scores above the zone is what the bounds on partners and neighbours cost.
struct CoViewExact {
    weights: Square,
    recency: f32,
    long_term: f32,
}

impl CoViewExact {
    fn fit(
        training: &Training,
        window: usize,
        backward: f32,
        recency: f32,
        long_term: f32,
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
                *cell = count * seed * damped(partner, PARTNER_DAMPING);
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
struct CoViewEase {
    co_view: Arc<CoViewExact>,
    ease: Arc<Ease>,
    weight: f32,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn training(sequences: Vec<Vec<u32>>, items: usize) -> Training {
        Training::new(sequences, items, 1)
    }

    fn top(method: &Method, t: &Training, visitor: u32, history: &[u32]) -> u32 {
        let fitted = method.fit(t).unwrap();
        let mut scores = vec![0.0; t.items];
        fitted.score(visitor, history, &mut scores);
        for &h in history {
            scores[h as usize] = f32::NEG_INFINITY;
        }
        (0..t.items as u32)
            .max_by(|a, b| scores[*a as usize].total_cmp(&scores[*b as usize]))
            .unwrap()
    }

    /// Two clusters {0,1,2} and {3,4,5}, each browsed in order by many visitors; product
    /// 5 the most popular overall.
    fn clustered() -> Training {
        let mut sequences = Vec::new();
        for _ in 0..20 {
            sequences.push(vec![0, 1, 2]);
        }
        for _ in 0..30 {
            sequences.push(vec![3, 4, 5]);
        }
        sequences.push(vec![5]);
        training(sequences, 6)
    }

    #[test]
    fn every_method_but_popularity_follows_the_cluster() {
        let t = clustered();
        assert_eq!(top(&Method::MostPopular, &t, 99, &[0]), 5);
        for group in Method::grid() {
            let method = &group[0];
            if *method == Method::MostPopular {
                continue;
            }
            let next = top(method, &t, 99, &[0, 1]);
            assert_eq!(next, 2, "{}", method.name());
        }
    }

    #[test]
    fn sequence_methods_know_what_comes_next() {
        let t = clustered();
        for method in [
            Method::Markov,
            Method::SequentialRules {
                window: 1,
                symmetric: false,
                steps: 1,
            },
        ] {
            assert_eq!(top(&method, &t, 99, &[3]), 4, "{}", method.name());
        }
    }

    #[test]
    fn session_knn_leaves_the_visitor_out() {
        // Visitor 0 alone holds 7 next to 6: it must not recommend 7 to itself.
        let t = training(vec![vec![6, 7], vec![6, 8], vec![6, 8]], 9);
        assert_eq!(
            top(
                &Method::Vsknn {
                    neighbours: 10,
                    steps: 5
                },
                &t,
                0,
                &[6]
            ),
            8
        );
    }

    #[test]
    fn the_exact_co_view_model_weighs_pairs_as_the_zones_lists_do() {
        // One visitor viewed 0, 1, 2: pairs (0,1) and (1,2) count 1, (0,2) 1/2; the
        // totals are 1.5, 2 and 1.5; a pair weighs its count / both totals^0.5.
        let t = training(vec![vec![0, 1, 2]], 3);
        let exact = Method::CoViewExact {
            window: CO_VIEW_WINDOW,
            backward: 1.0,
            recency: 0.5,
            long_term: 0.0,
        };
        let fitted = exact.fit(&t).unwrap();
        let mut scores = vec![0.0; 3];
        fitted.score(0, &[0], &mut scores);
        let pair = |count: f32, a: f32, b: f32| count / a.sqrt() / b.sqrt();
        assert!((scores[1] - pair(1.0, 1.5, 2.0)).abs() < 1e-6, "{scores:?}");
        assert!((scores[2] - pair(0.5, 1.5, 1.5)).abs() < 1e-6, "{scores:?}");
        // An older step weighs `recency` times the one after it.
        let mut scores = vec![0.0; 3];
        fitted.score(0, &[1, 0], &mut scores);
        let expected = pair(0.5, 1.5, 1.5) + 0.5 * pair(1.0, 2.0, 1.5);
        assert!((scores[2] - expected).abs() < 1e-6, "{scores:?}");
        assert!(exact.is_reference());
        assert!(
            Method::grid()
                .iter()
                .flatten()
                .filter(|m| m.is_reference())
                .all(|m| ["co_view_exact", "co_view_ease"].contains(&m.name()))
        );
    }

    #[test]
    fn the_exact_co_view_models_window_and_backward_weight_shape_its_pairs() {
        // One visitor viewed 0, 1, 2. A window of 1 pairs neighbours only: nothing
        // pairs 0 with 2. Read against the order they were viewed in, pairs weigh
        // `backward` times their count: from 1, the product after it (2) counts 1 and
        // the one before it (0) a half.
        let t = training(vec![vec![0, 1, 2]], 3);
        let counts = SequentialRules::count(&t, 1, 0.5);
        assert_eq!(counts.row(0), [0.0, 1.0, 0.0]);
        assert_eq!(counts.row(1), [0.5, 0.0, 1.0]);
        assert_eq!(counts.row(2), [0.0, 0.5, 0.0]);
        let counts = SequentialRules::count(&t, 2, 0.0);
        assert_eq!(counts.row(0), [0.0, 1.0, 0.5]);
        assert_eq!(counts.row(2), [0.0, 0.0, 0.0]);
        // The grid compares the server's choices (window 10, both ways alike) with
        // others, each at the zone's defaults.
        let references: Vec<Method> = Method::grid()
            .into_iter()
            .flatten()
            .filter(Method::is_reference)
            .collect();
        for (window, backward) in [
            (CO_VIEW_WINDOW, 1.0),
            (5, 1.0),
            (30, 1.0),
            (CO_VIEW_WINDOW, 0.0),
        ] {
            assert!(
                references.contains(&Method::CoViewExact {
                    window,
                    backward,
                    recency: DEFAULT_RECENCY as f32,
                    long_term: DEFAULT_LONG_TERM as f32,
                }),
                "{window} {backward}"
            );
        }
    }

    #[test]
    fn the_ease_blend_adds_eases_scores_at_its_weight_to_the_co_view_models() {
        let t = clustered();
        let history = [0, 1];
        let scaled = |method: Method| {
            let mut scores = vec![0.0; t.items];
            method.fit(&t).unwrap().score(0, &history, &mut scores);
            let most = scores.iter().copied().fold(0.0f32, f32::max);
            scores.iter().map(|s| s / most).collect::<Vec<f32>>()
        };
        let co_view = scaled(Method::CoViewExact {
            window: CO_VIEW_WINDOW,
            backward: 1.0,
            recency: DEFAULT_RECENCY as f32,
            long_term: DEFAULT_LONG_TERM as f32,
        });
        let ease = scaled(Method::Ease { lambda: 1.0 });
        let blend = Method::CoViewEase {
            lambda: 1.0,
            weight: 0.5,
        };
        assert!(blend.is_reference());
        let mut scores = vec![0.0; t.items];
        blend.fit(&t).unwrap().score(0, &history, &mut scores);
        for (i, score) in scores.iter().enumerate() {
            let expected = co_view[i] + 0.5 * ease[i];
            assert!((score - expected).abs() < 1e-5, "{i}: {scores:?}");
        }
    }

    #[test]
    fn ease_is_fitted_once_per_lambda_for_the_methods_of_one_training() {
        let t = clustered();
        let first = t.ease(1.0).unwrap();
        assert!(Arc::ptr_eq(&first, &t.ease(1.0).unwrap()));
        assert!(!Arc::ptr_eq(&first, &t.ease(2.0).unwrap()));
    }

    #[test]
    fn the_ease_blends_of_one_training_share_one_co_view_fit() {
        let t = clustered();
        assert!(Arc::ptr_eq(&t.server_co_view(), &t.server_co_view()));
    }

    #[test]
    fn dense_methods_refuse_catalogues_beyond_their_bound() {
        let t = training(vec![vec![0]], MAX_DENSE_ITEMS + 1);
        let error = Method::Ease { lambda: 1.0 }
            .fit(&t)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("dense"), "{error}");
    }
}
