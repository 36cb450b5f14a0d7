//! What an account learns from its shoppers, as it holds it ([`Models`]): the counters
//! and popularity counted on every event, the pair counts, the sessions' products, and
//! what the models round publishes from them (the rankings with the catalogue version
//! they were sorted for, the neighbour lists, the most popular names). `Account` holds
//! one; events count into it (`account/track.rs`), the round reads and publishes
//! (`account/rebuild.rs`), serving reads what was published.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};

use arc_swap::ArcSwap;
use crossbeam_queue::SegQueue;

use super::{CoCounts, Decaying, ModelSettings, Neighbours, ProductKeys, SessionIndex, TopNames};
use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::recommend::Rankings;
use crate::shards::{Sharded, sharded};

/// An account's models.
#[derive(Debug)]
pub(crate) struct Models {
    /// Each product's trending popularity and units sold.
    pub(crate) counters: Sharded<String, Counter>,
    /// Products whose counters changed since the last rebuild, each once.
    pub(crate) changed_counters: SegQueue<String>,
    /// Set when counters changed without being queued (a state snapshot restored): the
    /// next rebuild ranks every product.
    pub(crate) rank_all: AtomicBool,
    pub(crate) category_popularity: Sharded<String, Decaying>,
    pub(crate) brand_popularity: Sharded<String, Decaying>,
    /// Keys of the products in `coview` and `copurchase`.
    pub(crate) product_keys: ProductKeys,
    pub(crate) coview: CoCounts,
    pub(crate) copurchase: CoCounts,
    /// Recent sessions' products, for `similar_sessions`.
    pub(crate) similar_sessions: SessionIndex,
    pub(crate) rankings: ArcSwap<RankingsVersion>,
    pub(crate) neighbours: ArcSwap<Neighbours>,
    /// The sessions' tick ([`SessionIndex::tick`]) the published lists were last sorted
    /// at: self-tuning's trials read the sessions as of it, as fresh as the lists.
    pub(crate) lists_tick: AtomicU32,
    pub(crate) top_names: ArcSwap<TopNames>,
    /// Held while neighbour lists are written: by a rebuild, and by a swap to a new
    /// base that moves them.
    pub(crate) lists_lock: parking_lot::Mutex<()>,
    /// Set by every counted interaction (product counters, co-view and co-purchase pairs
    /// are counted with them, categories, brands); cleared by a rebuild.
    pub(crate) models_stale: AtomicBool,
    /// Models rounds running now (`Account::models_pending`).
    pub(crate) rounds_running: AtomicU64,
}

/// A product's counts.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counter {
    pub(crate) popularity: Decaying,
    pub(crate) units: u64,
    /// Whether the product is queued in [`Models::changed_counters`].
    pub(crate) queued: bool,
}

/// The rankings an account serves, and the catalogue version they were sorted for.
#[derive(Debug)]
pub(crate) struct RankingsVersion {
    pub(crate) catalogue: Arc<Catalogue>,
    pub(crate) rankings: Rankings,
}

impl Models {
    /// Empty models for `catalogue`, counting as `settings` says, reading sessions
    /// through `similar_sessions`.
    pub(crate) fn new(
        settings: ModelSettings,
        catalogue: &Arc<Catalogue>,
        similar_sessions: SessionIndex,
    ) -> Models {
        Models {
            counters: sharded(),
            changed_counters: SegQueue::new(),
            rank_all: AtomicBool::new(false),
            category_popularity: sharded(),
            brand_popularity: sharded(),
            product_keys: ProductKeys::default(),
            coview: CoCounts::configured(settings),
            copurchase: CoCounts::configured(settings.for_purchases()),
            similar_sessions,
            rankings: ArcSwap::from_pointee(RankingsVersion {
                rankings: Rankings::build(catalogue, |_| (0.0, 0)),
                catalogue: Arc::clone(catalogue),
            }),
            neighbours: ArcSwap::from_pointee(Neighbours::default()),
            lists_tick: AtomicU32::new(u32::MAX),
            top_names: ArcSwap::from_pointee(TopNames::default()),
            lists_lock: parking_lot::Mutex::new(()),
            models_stale: AtomicBool::new(false),
            rounds_running: AtomicU64::new(0),
        }
    }

    /// Tells the next rebuild round that there is something to rebuild: called once
    /// after a request's (or an import's) counters, pairs and queues are written. Read before it is written: under load it is
    /// already set, and a store on every event would move its cache line between the
    /// cores on every request. The fence pairs with the one after the round's swap
    /// (`Account::rebuild_models`): either the round reads what was just written, or
    /// this reads the flag the round cleared and sets it for the next round. Without it
    /// (or with the mark before the write) a round could clear the flag, miss the
    /// write, and leave it unranked until some later event.
    pub(crate) fn mark_stale(&self) {
        fence(Ordering::SeqCst);
        if !self.models_stale.load(Ordering::Relaxed) {
            self.models_stale.store(true, Ordering::Release);
        }
    }

    /// Counts one interaction with a category or brand.
    pub(crate) fn popular(
        &self,
        counters: &Sharded<String, Decaying>,
        name: &str,
        now: UnixMillis,
    ) {
        match counters.get_mut(name) {
            Some(mut counter) => counter.add(1.0, now),
            None => counters.entry(name.to_owned()).or_default().add(1.0, now),
        }
    }

    /// Counts an interaction with a product in its counter (queued for the next round).
    pub(crate) fn count(&self, product_id: &str, score: f64, units: u64, now: UnixMillis) {
        let mut counter = match self.counters.get_mut(product_id) {
            Some(counter) => counter,
            None => self.counters.entry(product_id.to_owned()).or_default(),
        };
        counter.popularity.add(score, now);
        counter.units += units;
        if !counter.queued {
            counter.queued = true;
            self.changed_counters.push(product_id.to_owned());
        }
    }

    /// Counts a models round as running until the guard is dropped.
    pub(crate) fn running(&self) -> Running<'_> {
        Running::start(&self.rounds_running)
    }

    /// The rankings of `catalogue` with the queued products moved, or ranked whole when
    /// the published ones are of another version or a snapshot was restored.
    pub(crate) fn rerank(&self, catalogue: &Arc<Catalogue>) -> RankingsVersion {
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
    /// of `catalogue` (`current`: the account's catalogue now), into the published lists (new ones, every product's, when the
    /// published lists are of another base).
    ///
    /// The sorting runs on the ingest pool, at the lowest priority, and holds no lock:
    /// a swap to a new base (which moves the lists under `lists_lock`, with the account's
    /// writer held, so that deltas wait for it) never waits for a starved model round.
    /// Lists sorted for a base that was replaced meanwhile are dropped, and every list is
    /// sorted again next round.
    pub(crate) fn rebuild_lists(&self, catalogue: &Arc<Catalogue>, current: &ArcSwap<Catalogue>) {
        {
            let _lock = self.lists_lock.lock();
            if !current.load().same_base(catalogue) {
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
        if !current.load().same_base(catalogue) || !published.indexes(catalogue) {
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

    pub(crate) fn rank(&self, catalogue: &Arc<Catalogue>) -> RankingsVersion {
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
pub(crate) struct Running<'a>(&'a AtomicU64);

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
