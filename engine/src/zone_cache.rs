//! The zone cache: a product zone's items, kept when nothing in them depends on the
//! visitor, and reused by every request that would fill the zone the same way.
//!
//! A zone is filled the same way for every visitor when each strategy of its chain
//! reads only the page (its product and category), the models and the catalogue
//! ([`Strategy`]s such as `trending`, `category_top`, or `similar` on a product page;
//! not `recently_viewed`, `personalized`, `basket_cross_sell`, `buy_again`, nor a
//! `viewed_together` that blends in the visitor's history), and the request has no
//! search term and no B2B account or user group (their prices and visibility are the
//! visitor's). The visitor's basket and purchases only take items out: the cache keeps
//! the zone filled as for a visitor with neither, as many items longer than the zone as
//! the request that filled it had products in its basket and purchases (at most
//! [`SLACK`]), and a request takes its own out of that list. When they take out so many
//! that the list runs short, the zone is filled again, longer, and kept in its place.
//!
//! A page is kept from its second miss within a generation on: a page asked for once
//! (a product page of a large catalogue, between two rankings rounds) costs no more than
//! filling it for the request.
//!
//! A cached list is keyed by everything it depends on:
//! - the versions of the account's settings, catalogue (with its overlay), rankings
//!   and neighbour lists: a `Generation` holds them, and a request that finds any of
//!   them changed starts a new, empty generation;
//! - the zone, the page's product and category, and the currency;
//! - the time: a list is kept for the span between two of the catalogue's time
//!   boundaries (a product's `StartDate` or `EndDate`, a sale window's start or end),
//!   during which no product's liveness or price changes.
//!
//! When a request shows a list's first items (nothing of its basket or purchases among
//! them), the text they render to is the same for every such request: the renderer
//! keeps it with the list ([`CachedItems::text`] for the answer's JSON,
//! [`CachedItems::markup`] for the browser's built-in cards) and copies it from then on.
//!
//! Zones filled by a campaign or by an experiment's variant are not cached.
//!
//! Off unless configured (`memory.zone_cache_mib`): filling a page-only zone is already
//! cheap (rankings and category tops are sorted once per round, neighbour lists kept),
//! every rankings round (each second) starts a new generation, and on the load
//! harness's store, whose product pages show a `viewed_together` zone over 100,000
//! products, the cache cost 3.5 % of the median handler time rather than saving any
//! (`benches/README.md`). The cache is
//! bounded in bytes per account (what a generation's lists take); past it, zones are
//! filled per request until the next generation.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;
use compact_str::CompactString;
use parking_lot::{Mutex, RwLock};
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::models::Neighbours;
use crate::money::Currency;
use crate::recommend::{Context, NoTrace, RenderedItem, ZoneItems, fill_zone, fill_zone_upto};
use crate::zone::{Strategy, ZoneSpec};

/// Items a cached list holds beyond its zone's count, for the basket and purchases of
/// the requests that reuse it.
pub const SLACK: usize = 16;

/// The bound `memory.zone_cache_mib` suggests for an account whose zones it serves
/// (the cache is off unless configured: see the module documentation).
pub const SUGGESTED_BYTES: usize = 32 << 20;

/// What a cached entry costs beyond its items (key, map slot, counts).
const ENTRY_OVERHEAD: usize = 128;

/// An account's zone cache, with its figures.
#[derive(Debug)]
pub struct ZoneCache {
    current: ArcSwapOption<Generation>,
    bound: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// The zone cache's figures, for `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneCacheFigures {
    /// Zones filled from a cached list.
    pub hits: u64,
    /// Zones that could have been and were not: filled, then kept (or, past the bound
    /// or with a basket that emptied the list, not kept).
    pub misses: u64,
    /// Bytes the current generation's lists take.
    pub bytes: usize,
    /// The bound.
    pub bound: usize,
}

impl Default for ZoneCache {
    fn default() -> ZoneCache {
        ZoneCache::new(0)
    }
}

impl ZoneCache {
    /// A cache of at most `bound` bytes (0: no cache).
    pub fn new(bound: usize) -> ZoneCache {
        ZoneCache {
            current: ArcSwapOption::empty(),
            bound: AtomicUsize::new(bound),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Sets the bound (0 turns the cache off); what is cached now is dropped.
    pub fn set_bound(&self, bound: usize) {
        self.bound.store(bound, Ordering::Release);
        self.current.store(None);
    }

    /// The figures.
    pub fn figures(&self) -> ZoneCacheFigures {
        ZoneCacheFigures {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes: self
                .current
                .load()
                .as_ref()
                .map_or(0, |g| g.bytes.load(Ordering::Relaxed)),
            bound: self.bound.load(Ordering::Relaxed),
        }
    }

    /// The generation of these versions: the current one, or a new, empty one that
    /// replaces it. `None` when the cache is off.
    pub(crate) fn generation(&self, versions: VersionRefs<'_>) -> Option<Arc<Generation>> {
        if self.bound.load(Ordering::Acquire) == 0 {
            return None;
        }
        let current = self.current.load_full();
        if let Some(generation) = &current
            && generation.versions.same(&versions)
        {
            return current;
        }
        let versions = versions.held();
        // The catalogue's time boundaries outlive a rankings round.
        let boundaries = current
            .as_ref()
            .filter(|g| Arc::ptr_eq(&g.versions.catalogue, &versions.catalogue))
            .map(|g| Arc::clone(&g.boundaries));
        let fresh = Arc::new(Generation {
            bound: self.bound.load(Ordering::Acquire),
            versions,
            boundaries: boundaries.unwrap_or_default(),
            lists: RwLock::new(FxHashMap::default()),
            missed: Mutex::new(FxHashSet::default()),
            bytes: Arc::new(AtomicUsize::new(0)),
        });
        // Another request may have started the same generation meanwhile: either is
        // right, the later one wins.
        self.current.store(Some(Arc::clone(&fresh)));
        Some(fresh)
    }

    /// The items of the product zone `spec` (at `position` in the settings) for the
    /// request in `ctx`, from `generation` when the zone is the same for every visitor
    /// ([`cacheable`]); else filled for the request.
    ///
    /// With the cached list when the items are its first ones (no basket or purchase
    /// taken out of them): their rendered text is then the same for every such request
    /// ([`CachedItems::text`]).
    pub(crate) fn items(
        &self,
        generation: &LazyGeneration<'_>,
        position: usize,
        spec: &ZoneSpec,
        ctx: &Context<'_>,
    ) -> (ZoneItems, Option<CachedItems>) {
        // The generation is looked up only for a zone that could use it: a request
        // without one costs the cache nothing.
        let Some(generation) = Some(())
            .filter(|()| cacheable(spec, ctx))
            .and_then(|()| generation.get(self))
        else {
            return (fill_zone(spec, ctx), None);
        };
        let key = Key {
            zone: position,
            product: ctx.product,
            category: ctx.category.map(CompactString::from),
            currency: ctx.currency(),
        };
        let now = ctx.now;
        let found = generation
            .lists
            .read()
            .get(&key)
            .filter(|list| list.holds(now))
            .cloned();
        if let Some(list) = found
            && let Some((items, first)) = list.for_visitor(spec.count, ctx)
        {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return (items, first.then(|| CachedItems(list)));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        // Kept from a page's second miss within the generation on: a page asked for
        // once (a product page of a large catalogue) costs no more than filling it.
        if !generation.missed_before(&key) {
            return (fill_zone(spec, ctx), None);
        }
        // As long as this request needs (its basket and purchases taken out), and
        // at most [`SLACK`] longer than the zone.
        let taken_out = (ctx.basket.len() + ctx.purchased.len()).min(SLACK);
        let list = Arc::new(generation.fill(spec, ctx, spec.count + taken_out));
        generation.keep(key, &list);
        match list.for_visitor(spec.count, ctx) {
            Some((items, first)) => (items, first.then(|| CachedItems(list))),
            // The basket and purchases took out more than the slack: filled alone.
            None => (fill_zone(spec, ctx), None),
        }
    }
}

/// Whether the product zone `spec` is filled the same way for every visitor of the
/// request's page, but for the basket and purchases taken out (see the module
/// documentation).
pub(crate) fn cacheable(spec: &ZoneSpec, ctx: &Context<'_>) -> bool {
    let page_only = |strategy: Strategy| match strategy {
        Strategy::Trending
        | Strategy::TopSellers
        | Strategy::NewArrivals
        | Strategy::OnOffer
        | Strategy::CategoryTop => true,
        // About the page's product (else the visitor's latest view).
        Strategy::Similar | Strategy::CompleteTheLook | Strategy::Associated => {
            ctx.product.is_some()
        }
        // Without the visitor's history blended in.
        Strategy::ViewedTogether | Strategy::BoughtTogether => {
            ctx.product.is_some() && spec.recipe.context == 0
        }
        Strategy::RecentlyViewed
        | Strategy::Personalized
        | Strategy::SimilarSessions
        | Strategy::BasketCrossSell
        | Strategy::BuyAgain
        | Strategy::CategoryAffinity
        | Strategy::BrandAffinity => false,
    };
    ctx.search.is_none_or(str::is_empty)
        && ctx.account_id.is_none()
        && ctx.group_id.is_none()
        && spec
            .strategy
            .into_iter()
            .chain(spec.fallback.iter().copied())
            .all(page_only)
}

/// A request's generation, looked up the first time a zone of the request could use it.
#[derive(Debug)]
pub(crate) struct LazyGeneration<'a> {
    /// The request's versions; `None` when its rankings are its own (a request racing
    /// the swap of a new base ranks it itself).
    versions: Option<VersionRefs<'a>>,
    got: std::cell::OnceCell<Option<Arc<Generation>>>,
}

impl<'a> LazyGeneration<'a> {
    pub(crate) fn new(versions: Option<VersionRefs<'a>>) -> LazyGeneration<'a> {
        LazyGeneration {
            versions,
            got: std::cell::OnceCell::new(),
        }
    }

    fn get(&self, cache: &ZoneCache) -> Option<&Generation> {
        self.got
            .get_or_init(|| {
                self.versions
                    .and_then(|versions| cache.generation(versions))
            })
            .as_deref()
    }
}

/// The versions a request is served from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VersionRefs<'a> {
    pub(crate) settings: &'a Arc<crate::account::settings::AccountSettings>,
    pub(crate) catalogue: &'a Arc<Catalogue>,
    pub(crate) rankings: &'a Arc<crate::models::live::RankingsVersion>,
    pub(crate) neighbours: &'a Arc<Neighbours>,
}

impl VersionRefs<'_> {
    fn held(self) -> Versions {
        Versions {
            settings: Arc::clone(self.settings),
            catalogue: Arc::clone(self.catalogue),
            rankings: Arc::clone(self.rankings),
            neighbours: Arc::clone(self.neighbours),
        }
    }
}

/// The versions a generation's lists were filled from.
#[derive(Debug)]
struct Versions {
    settings: Arc<crate::account::settings::AccountSettings>,
    catalogue: Arc<Catalogue>,
    rankings: Arc<crate::models::live::RankingsVersion>,
    neighbours: Arc<Neighbours>,
}

impl Versions {
    fn same(&self, other: &VersionRefs<'_>) -> bool {
        Arc::ptr_eq(&self.settings, other.settings)
            && Arc::ptr_eq(&self.catalogue, other.catalogue)
            && Arc::ptr_eq(&self.rankings, other.rankings)
            && Arc::ptr_eq(&self.neighbours, other.neighbours)
    }
}

/// The lists filled from one set of versions (held, so that no later version can
/// take their place in memory and pass for them).
#[derive(Debug)]
pub(crate) struct Generation {
    /// The cache's bound when it started.
    bound: usize,
    versions: Versions,
    boundaries: Arc<OnceLock<Vec<UnixMillis>>>,
    lists: RwLock<FxHashMap<Key, Arc<List>>>,
    /// The hashes of the keys missed once (a page is kept from its second miss on).
    missed: Mutex<FxHashSet<u64>>,
    /// What its lists and their texts take.
    bytes: Arc<AtomicUsize>,
}

impl Generation {
    /// Whether `key` was missed before in this generation (and notes that it was now).
    fn missed_before(&self, key: &Key) -> bool {
        let hash = FxBuildHasher.hash_one(key);
        let mut missed = self.missed.lock();
        // Bounded with the lists: past the bound nothing more is kept anyway.
        if missed.len() * 8 >= self.bytes_left() {
            return false;
        }
        !missed.insert(hash)
    }

    fn bytes_left(&self) -> usize {
        self.bound
            .saturating_sub(self.bytes.load(Ordering::Relaxed))
    }

    /// The zone filled as for a visitor without basket, purchases or history, up to
    /// `want` items, with the span of time it holds for.
    fn fill(&self, spec: &ZoneSpec, ctx: &Context<'_>, want: usize) -> List {
        let neutral = Context {
            catalogue: ctx.catalogue,
            rankings: ctx.rankings,
            neighbours: ctx.neighbours,
            prices: ctx.prices,
            now: ctx.now,
            account_id: None,
            group_id: None,
            product: ctx.product,
            category: ctx.category,
            basket: &[],
            purchased: &[],
            bought_again: &[],
            recent_views: &[],
            similar_sessions: &[],
            search: None,
        };
        let items = fill_zone_upto(spec, &neutral, want, &mut NoTrace);
        let boundaries = self
            .boundaries
            .get_or_init(|| time_boundaries(&self.versions.catalogue));
        let (from, until) = span(boundaries, ctx.now);
        List {
            complete: items.len() < want,
            items,
            from,
            until,
            text: OnceLock::new(),
            markup: OnceLock::new(),
            charged: Arc::clone(&self.bytes),
        }
    }

    /// Keeps `list` under `key` unless that passes the bound.
    fn keep(&self, key: Key, list: &Arc<List>) {
        let cost = ENTRY_OVERHEAD + list.items.capacity() * std::mem::size_of::<RenderedItem>();
        if cost > self.bytes_left() {
            return;
        }
        let replaced = self.lists.write().insert(key, Arc::clone(list));
        self.bytes.fetch_add(cost, Ordering::Relaxed);
        if let Some(replaced) = replaced {
            let freed =
                ENTRY_OVERHEAD + replaced.items.capacity() * std::mem::size_of::<RenderedItem>();
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
    }
}

/// What a cached list is found by within its generation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    zone: usize,
    product: Option<ProductIdx>,
    category: Option<CompactString>,
    currency: Currency,
}

/// A zone filled as for a visitor with no basket or purchases.
#[derive(Debug)]
struct List {
    items: ZoneItems,
    /// Whether `items` is every item such a visitor could be shown (fewer than asked
    /// for were found).
    complete: bool,
    /// The span of request times it holds for: `from..until`.
    from: UnixMillis,
    until: UnixMillis,
    /// The text its first items render to (as many as its zone shows) in an answer's
    /// JSON, and as the browser's built-in cards, once rendered.
    text: OnceLock<Box<[u8]>>,
    markup: OnceLock<Box<[u8]>>,
    /// Its generation's byte count, which the text is added to.
    charged: Arc<AtomicUsize>,
}

/// A cached list that a request's zone shows the first items of: the text they render
/// to is the same for every request that shows them (same catalogue version, currency
/// and prices).
#[derive(Debug, Clone)]
pub struct CachedItems(Arc<List>);

impl CachedItems {
    /// The items' text in an answer's JSON: `render`'s, the first time it is asked for.
    pub fn text(&self, render: impl FnOnce() -> Vec<u8>) -> &[u8] {
        self.kept(&self.0.text, render)
    }

    /// The items as the browser's built-in cards: `render`'s, the first time it is
    /// asked for.
    pub fn markup(&self, render: impl FnOnce() -> Vec<u8>) -> &[u8] {
        self.kept(&self.0.markup, render)
    }

    fn kept<'a>(
        &self,
        slot: &'a OnceLock<Box<[u8]>>,
        render: impl FnOnce() -> Vec<u8>,
    ) -> &'a [u8] {
        slot.get_or_init(|| {
            let text = render().into_boxed_slice();
            self.0.charged.fetch_add(text.len(), Ordering::Relaxed);
            text
        })
    }
}

impl List {
    fn holds(&self, now: UnixMillis) -> bool {
        self.from <= now && now < self.until
    }

    /// The first `count` items without the visitor's basket and purchases, and whether
    /// they are the list's first items (none taken out before the last); `None` when
    /// they took out so many that the list cannot tell what comes next.
    fn for_visitor(&self, count: usize, ctx: &Context<'_>) -> Option<(ZoneItems, bool)> {
        let mut items = ZoneItems::with_capacity(count);
        let mut first = true;
        for item in &self.items {
            if items.len() == count {
                break;
            }
            if !ctx.basket.contains(&item.product) && !ctx.purchased.contains(&item.product) {
                items.push(*item);
            } else {
                first = false;
            }
        }
        (items.len() == count || self.complete).then_some((items, first))
    }
}

/// Every instant at which a product of `catalogue` becomes live or stops being, or its
/// sale window opens or closes, sorted, each once.
fn time_boundaries(catalogue: &Catalogue) -> Vec<UnixMillis> {
    let mut boundaries = Vec::new();
    for (_, product) in catalogue.iter() {
        let (live, sale) = product.time_windows();
        for (from, until) in [live, sale] {
            boundaries.extend(from);
            // Bounds are included: the state changes just after `until`.
            boundaries.extend(until.map(|until| until.saturating_add(1)));
        }
    }
    boundaries.sort_unstable();
    boundaries.dedup();
    boundaries
}

/// The span `from..until` around `now` that no boundary splits.
fn span(boundaries: &[UnixMillis], now: UnixMillis) -> (UnixMillis, UnixMillis) {
    let after = boundaries.partition_point(|b| *b <= now);
    let from = after
        .checked_sub(1)
        .and_then(|i| boundaries.get(i))
        .copied()
        .unwrap_or(UnixMillis::MIN);
    let until = boundaries.get(after).copied().unwrap_or(UnixMillis::MAX);
    (from, until)
}

#[cfg(test)]
mod tests {
    use super::span;

    #[test]
    fn a_span_lies_between_the_boundaries_around_now() {
        let boundaries = [10, 20, 30];
        assert_eq!(span(&boundaries, 5), (i64::MIN, 10));
        assert_eq!(span(&boundaries, 10), (10, 20));
        assert_eq!(span(&boundaries, 19), (10, 20));
        assert_eq!(span(&boundaries, 30), (30, i64::MAX));
        assert_eq!(span(&[], 7), (i64::MIN, i64::MAX));
    }
}
