//! The models' rebuild round: what changed since the last round turned into rankings
//! (published whole) and neighbour lists (sorted again in place), off the request path.

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
        let _running = Running::start(&self.rounds_running);
        self.graveyard.sweep();
        // A switch of the co-view lists makes the models stale: rebuilt below.
        self.score_trials();
        let catalogue = self.catalogue();
        let ranked = Arc::ptr_eq(&self.rankings.load().catalogue, &catalogue);
        let stale = self.models_stale.swap(false, Ordering::SeqCst);
        // Pairs with the fence of `mark_models_stale`: what was written before a mark
        // this swap cleared is read below.
        fence(Ordering::SeqCst);
        if !stale && ranked {
            return false;
        }
        self.rankings.store(Arc::new(self.rerank(&catalogue)));
        self.rebuild_lists(&catalogue);
        let now = self.clock.load(Ordering::Relaxed);
        self.top_names.store(Arc::new(TopNames {
            categories: most_popular(&self.category_popularity, now),
            brands: most_popular(&self.brand_popularity, now),
        }));
        true
    }

    /// Whether what the account was told waits for a models round: an interaction
    /// counted since the last round took it in, a catalogue version not ranked yet, or a
    /// round running now. False once a round has published everything counted before it
    /// (what `vitrine_model_changes_pending` reports).
    pub fn models_pending(&self) -> bool {
        self.rounds_running.load(Ordering::Acquire) > 0
            || self.models_stale.load(Ordering::Acquire)
            || !Arc::ptr_eq(&self.rankings.load().catalogue, &self.catalogue())
    }

    /// The rankings of `catalogue` with the queued products moved, or ranked whole when
    /// the published ones are of another version or a snapshot was restored.
    pub(in crate::account) fn rerank(&self, catalogue: &Arc<Catalogue>) -> RankingsVersion {
        let mut changed = Vec::new();
        while let Some(id) = self.changed_counters.pop() {
            if let Some(mut counter) = self.counters.get_mut(&id) {
                counter.queued = false;
                let score = (counter.popularity.rank_key(), counter.units);
                changed.push((id, score));
            }
        }
        let current = self.rankings.load_full();
        let whole = self.rank_all.swap(false, Ordering::AcqRel);
        if whole || !Arc::ptr_eq(&current.catalogue, catalogue) {
            return self.rank(catalogue);
        }
        let moved: Vec<(ProductIdx, f64, u64)> = changed
            .into_iter()
            .filter_map(|(id, (key, units))| Some((catalogue.idx_of(&id)?, key, units)))
            .collect();
        RankingsVersion {
            catalogue: Arc::clone(catalogue),
            rankings: current.rankings.update(&moved),
        }
    }

    /// Sorts the neighbour lists of the products whose pairs changed, in the dense ids
    /// of `catalogue`, into the published lists (new ones, every product's, when the
    /// published lists are of another base).
    ///
    /// The sorting runs on the ingest pool, at the lowest priority, and holds no lock:
    /// a swap to a new base (which moves the lists under `lists_lock`, with the account's
    /// writer held, so that deltas wait for it) never waits for a starved model round.
    /// Lists sorted for a base that was replaced meanwhile are dropped, and every list is
    /// sorted again next round.
    pub(in crate::account) fn rebuild_lists(&self, catalogue: &Arc<Catalogue>) {
        {
            let _lock = self.lists_lock.lock();
            if !self.catalogue.load().same_base(catalogue) {
                // A new base was swapped in since this round loaded its catalogue (and
                // the lists moved to it): the next round sorts them in its dense ids.
                return;
            }
            if !self.neighbours.load().indexes(catalogue) {
                self.coview.queue_all();
                self.copurchase.queue_all();
                self.neighbours.store(Arc::new(Neighbours::of(catalogue)));
            }
        }
        // The sessions as they are now are the ones the lists sorted below go with.
        let tick = self.similar_sessions.tick();
        let (viewed, bought) = rayon::join(
            || self.coview.changed_lists(&self.product_keys, catalogue),
            || self.copurchase.changed_lists(&self.product_keys, catalogue),
        );
        let _lock = self.lists_lock.lock();
        let published = self.neighbours.load_full();
        if !self.catalogue.load().same_base(catalogue) || !published.indexes(catalogue) {
            self.coview.queue_all();
            self.copurchase.queue_all();
            self.models_stale.store(true, Ordering::Release);
            return;
        }
        for (idx, list) in viewed {
            published.viewed_together.insert(idx, list);
        }
        for (idx, list) in bought {
            published.bought_together.insert(idx, list);
        }
        self.lists_tick.store(tick, Ordering::Release);
    }

    pub(in crate::account) fn rank(&self, catalogue: &Arc<Catalogue>) -> RankingsVersion {
        let rankings = Rankings::build(catalogue, |p| {
            self.counters
                .get(p.id.as_str())
                .map_or((f64::NEG_INFINITY, 0), |c| {
                    (c.popularity.rank_key(), c.units)
                })
        });
        RankingsVersion {
            catalogue: Arc::clone(catalogue),
            rankings,
        }
    }
}

/// A models round counted as running while it lives.
struct Running<'a>(&'a AtomicU64);

impl<'a> Running<'a> {
    fn start(running: &'a AtomicU64) -> Running<'a> {
        running.fetch_add(1, Ordering::AcqRel);
        Running(running)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
