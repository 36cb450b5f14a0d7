//! What the methods are fitted on ([`Interactions`]) and what a fitted one does
//! ([`Recommender`]).

use std::sync::Arc;

/// What every method is fitted on: each visitor's products in time order.
pub(crate) struct Interactions {
    pub(crate) sequences: Vec<Vec<u32>>,
    pub(crate) items: usize,
    /// Fixed seed for methods with random starts.
    pub(crate) seed: u64,
}

impl Interactions {
    /// Each visitor's distinct products.
    pub(crate) fn distinct(&self) -> Vec<Vec<u32>> {
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
