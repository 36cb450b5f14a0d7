//! The published methods Vitrine's zones are measured against, fitted on the same
//! interactions: most popular, item-kNN (cosine), EASE, implicit ALS, a Markov
//! last-item model, sequential rules and V-SKNN (session kNN). Each is a
//! [`Recommender`] that scores every product for a visitor's history; all of them
//! treat every interaction (view, basket, order, rating) as one implicit signal.
//! Beside them, as a reference and never taken as the best baseline, Vitrine's own
//! co-view model computed exactly, without its bounds ([`Method::CoViewExact`]).
//!
//! The dense methods keep products × products matrices: datasets are limited to
//! [`MAX_DENSE_ITEMS`] products, and to [`MAX_INVERTED_ITEMS`] for the methods that
//! invert one (EASE and its blend).
//!
//! Files: `training.rs` (the interactions fitted on, and the [`Recommender`] each fit
//! is), `matrix.rs` (the square matrices and counts the methods share), `dense.rs`
//! (most popular, item-kNN, EASE, ALS), `sequential.rs` (Markov, sequential rules,
//! V-SKNN), `reference.rs` (the co-view references).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::bail;

mod dense;
mod matrix;
mod reference;
mod sequential;
mod training;

use dense::{Als, Ease, ItemKnn, MostPopular};
use reference::{CoViewBlend, CoViewExact, LocalEase};
use sequential::{Markov, SequentialRules, Vsknn};
pub(crate) use training::{Interactions, Recommender};
use vitrine_engine::models::{CO_VIEW_WINDOW, PARTNER_DAMPING};
use vitrine_engine::zone::{DEFAULT_LONG_TERM, DEFAULT_RECENCY};

/// Largest catalogue the dense methods take (a matrix of this many squared `f32`s is
/// 1 GB).
pub(crate) const MAX_DENSE_ITEMS: usize = 16_000;

/// Largest catalogue the methods that invert a products × products matrix take (EASE:
/// its cubic cost is minutes at this size on two cores).
pub(crate) const MAX_INVERTED_ITEMS: usize = 6_000;

/// The interactions every method is fitted on, with the fits the methods share.
pub(crate) struct Training {
    interactions: Interactions,
    /// EASE fitted on these interactions, by λ: EASE and the blends with it share
    /// one fit per λ instead of inverting the same matrix for each weight.
    ease: Mutex<HashMap<u64, Arc<Ease>>>,
    /// [`LocalEase`] fitted on these interactions, by λ and partners, shared likewise.
    local_ease: Mutex<HashMap<(u64, usize), Arc<LocalEase>>>,
    /// The exact co-view model at the server's settings, which every blend with EASE
    /// shares.
    co_view: OnceLock<Arc<CoViewExact>>,
}

impl Training {
    pub(crate) fn new(sequences: Vec<Vec<u32>>, items: usize, seed: u64) -> Training {
        Training {
            interactions: Interactions {
                sequences,
                items,
                seed,
            },
            ease: Mutex::new(HashMap::new()),
            local_ease: Mutex::new(HashMap::new()),
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
                PARTNER_DAMPING,
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

    /// [`LocalEase`] with `lambda` and `partners` fitted on these interactions, once.
    fn local_ease(&self, lambda: f64, partners: usize) -> Arc<LocalEase> {
        let mut fits = self
            .local_ease
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(
            fits.entry((lambda.to_bits(), partners))
                .or_insert_with(|| Arc::new(LocalEase::fit(self, lambda, partners))),
        )
    }
}

impl std::ops::Deref for Training {
    type Target = Interactions;

    fn deref(&self) -> &Interactions {
        &self.interactions
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
        damping: f32,
    },
    /// A second reference: the exact co-view model at the server's settings blended
    /// with EASE, each question's scores of either scaled to a maximum of 1 and EASE's
    /// weighed `weight`. It measures how far a model beyond co-occurrence counts (EASE
    /// is refitted offline, not learnt event by event) would take the approach.
    CoViewEase {
        lambda: f64,
        weight: f32,
    },
    /// A third reference: EASE with each product's regression bounded to its `partners`
    /// strongest co-occurring products, which fits any catalogue and keeps what a
    /// server could keep per product ([`reference::LocalEase`]).
    LocalEase {
        lambda: f64,
        partners: usize,
    },
    /// The exact co-view model at the server's settings blended with [`Method::LocalEase`]
    /// as [`Method::CoViewEase`] blends it with EASE.
    CoViewLocalEase {
        lambda: f64,
        partners: usize,
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
            Method::LocalEase { .. } => "local_ease",
            Method::CoViewLocalEase { .. } => "co_view_local_ease",
        }
    }

    /// Whether the method is a reference for Vitrine's own model rather than a
    /// published baseline (it is reported, never taken as the best baseline).
    pub(crate) fn is_reference(&self) -> bool {
        matches!(
            self,
            Method::CoViewExact { .. }
                | Method::CoViewEase { .. }
                | Method::LocalEase { .. }
                | Method::CoViewLocalEase { .. }
        )
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
                damping,
            } => format!(
                "window={window} backward={backward} recency={recency} long_term={long_term} \
                 damping={damping}"
            ),
            Method::CoViewEase { lambda, weight } => format!("lambda={lambda} weight={weight}"),
            Method::LocalEase { lambda, partners } => {
                format!("lambda={lambda} partners={partners}")
            }
            Method::CoViewLocalEase {
                lambda,
                partners,
                weight,
            } => format!("lambda={lambda} partners={partners} weight={weight}"),
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
        let exact = |window, backward, recency, long_term, damping| Method::CoViewExact {
            window,
            backward,
            recency,
            long_term,
            damping,
        };
        let (zone_recency, zone_long_term) = (DEFAULT_RECENCY as f32, DEFAULT_LONG_TERM as f32);
        let mut references = Vec::new();
        for recency in [0.7, 0.8, 0.9] {
            for long_term in [0.0, 1.0, 2.0] {
                references.push(exact(
                    CO_VIEW_WINDOW,
                    1.0,
                    recency,
                    long_term,
                    PARTNER_DAMPING,
                ));
            }
        }
        for window in [5, 20, 30] {
            references.push(exact(
                window,
                1.0,
                zone_recency,
                zone_long_term,
                PARTNER_DAMPING,
            ));
        }
        for backward in [0.0, 0.5] {
            references.push(exact(
                CO_VIEW_WINDOW,
                backward,
                zone_recency,
                zone_long_term,
                PARTNER_DAMPING,
            ));
        }
        // The partner damping self-tuning chooses among, at the windows and blends the
        // undamped counts favour: what the approach reaches on data where damping
        // does not pay.
        for damping in [0.0, 0.25] {
            for window in [3, 10] {
                for (recency, long_term) in [(0.8, 2.0), (0.9, 0.0), (0.8, 0.0), (0.9, 2.0)] {
                    references.push(exact(window, 1.0, recency, long_term, damping));
                }
            }
        }
        grid.push(references);
        let mut blends = Vec::new();
        for lambda in [200.0, 1000.0] {
            for weight in [0.25, 0.5, 1.0] {
                blends.push(Method::CoViewEase { lambda, weight });
            }
        }
        grid.push(blends);
        let mut local = Vec::new();
        let mut local_blends = Vec::new();
        for lambda in [50.0, 200.0, 500.0] {
            for partners in [100, 256] {
                local.push(Method::LocalEase { lambda, partners });
                for weight in [0.5, 1.0, 2.0] {
                    local_blends.push(Method::CoViewLocalEase {
                        lambda,
                        partners,
                        weight,
                    });
                }
            }
        }
        grid.push(local);
        grid.push(local_blends);
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
        let inverted = matches!(self, Method::Ease { .. } | Method::CoViewEase { .. });
        if inverted && training.items > MAX_INVERTED_ITEMS {
            bail!(
                "{}: {} products is more than the {MAX_INVERTED_ITEMS} the inverted baselines \
                 take (leave it out with --methods)",
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
            } => {
                let backward = if symmetric { 1.0 } else { 0.0 };
                Box::new(SequentialRules::fit(training, window, backward, steps))
            }
            Method::Vsknn { neighbours, steps } => {
                Box::new(Vsknn::fit(training, neighbours, steps))
            }
            Method::CoViewExact {
                window,
                backward,
                recency,
                long_term,
                damping,
            } => Box::new(CoViewExact::fit(
                training, window, backward, recency, long_term, damping,
            )),
            Method::CoViewEase { lambda, weight } => Box::new(CoViewBlend {
                co_view: training.server_co_view(),
                other: training.ease(lambda)?,
                weight,
            }),
            Method::LocalEase { lambda, partners } => {
                Box::new(training.local_ease(lambda, partners))
            }
            Method::CoViewLocalEase {
                lambda,
                partners,
                weight,
            } => Box::new(CoViewBlend {
                co_view: training.server_co_view(),
                other: training.local_ease(lambda, partners),
                weight,
            }),
        })
    }
}

#[cfg(test)]
mod tests;
