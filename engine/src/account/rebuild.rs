//! The models' rebuild round, off the request path: the trials scored, then what
//! changed since the last round turned into rankings and neighbour lists
//! (`models::live`).

use std::sync::Arc;

use super::*;

impl Account {
    /// Rebuilds the rankings (decayed popularity, units sold) of the current catalogue,
    /// the co-view and co-purchase neighbour lists and the most popular categories and
    /// brands from the counters, and publishes them. Only what changed since the last
    /// round is redone: the products whose counters changed move in the rankings, the
    /// lists of the products whose pairs changed are sorted again (every product's, for
    /// a new catalogue version or base). Runs on the caller's thread, its parallel parts
    /// on the current rayon pool. Nothing is done (and `false` returned) when no
    /// interaction was counted and the current catalogue version is already ranked.
    pub fn rebuild_models(&self) -> bool {
        let _running = self.models.running();
        self.graveyard.sweep();
        // A switch of the co-view lists makes the models stale: rebuilt below.
        self.score_trials();
        let catalogue = self.catalogue();
        let ranked = Arc::ptr_eq(&self.models.rankings.load().catalogue, &catalogue);
        let stale = self.models.models_stale.swap(false, Ordering::SeqCst);
        // Pairs with the fence of `mark_models_stale`: what was written before a mark
        // this swap cleared is read below.
        fence(Ordering::SeqCst);
        if !stale && ranked {
            return false;
        }
        self.models
            .rankings
            .store(Arc::new(self.models.rerank(&catalogue)));
        self.models.rebuild_lists(&catalogue, &self.catalogue);
        let now = self.clock.load(Ordering::Relaxed);
        self.models.top_names.store(Arc::new(TopNames {
            categories: most_popular(&self.models.category_popularity, now),
            brands: most_popular(&self.models.brand_popularity, now),
        }));
        true
    }

    /// Whether what the account was told waits for a models round: an interaction
    /// counted since the last round took it in, a catalogue version not ranked yet, or a
    /// round running now. False once a round has published everything counted before it
    /// (what `vitrine_model_changes_pending` reports).
    pub fn models_pending(&self) -> bool {
        self.models.rounds_running.load(Ordering::Acquire) > 0
            || self.models.models_stale.load(Ordering::Acquire)
            || !Arc::ptr_eq(&self.models.rankings.load().catalogue, &self.catalogue())
    }
}
