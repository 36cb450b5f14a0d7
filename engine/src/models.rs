//! Online models counted on every event: co-view and co-purchase pair counts, and
//! popularity with time decay.
//!
//! Counting is cheap and concurrent (one `DashMap` entry per product, bounded; a product
//! whose pairs change is queued once). A rebuild (the server runs one per account every
//! second, on the ingest pool) sorts the lists of the queued products only
//! ([`CoCounts::changed_lists`]) into [`Neighbours`], in dense catalogue ids, written in
//! place one list at a time: serving reads finished lists and never waits for a rebuild.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crossbeam_queue::SegQueue;

use crate::shards::{IntMap, int_map, sharded};

use dashmap::DashMap;
use rayon::prelude::*;

use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};

/// Partners counted per product at most by default ([`ModelSettings::partners`]);
/// when full, the weakest partner makes room.
pub const MAX_PARTNERS: usize = 256;
/// Neighbours kept per product in a rebuilt list by default
/// ([`ModelSettings::neighbours`]).
pub const NEIGHBOURS: usize = 100;

/// How much of the co-view and co-purchase models an account keeps and how their
/// lists weigh a pair: more partners and neighbours find more (MovieLens 100K,
/// `vitrine-loadtest quality`: `personalized` HR@10 0.218 at 128/50, 0.231 at 256/100,
/// the defaults) at a cost in handler time and memory (see the README).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSettings {
    /// Partners counted per product.
    pub partners: usize,
    /// Neighbours per product in a rebuilt list (at most `partners`).
    pub neighbours: usize,
    /// A pair's weight in a product's list is its count divided by the partner's total
    /// count to this power: 0 ranks partners by count (popular products lead every
    /// list), 1 by the share of the partner's pairings that are with this product.
    pub partner_damping: f32,
    /// ... and by the product's own total count to this power: in a blend of several
    /// products' lists, 0 lets a popular product's list outweigh the others, 1 weighs
    /// every list alike.
    pub seed_damping: f32,
}

/// [`ModelSettings::partner_damping`] by default (chosen by `vitrine-loadtest quality`,
/// see the README).
pub const PARTNER_DAMPING: f32 = 0.5;
/// [`ModelSettings::seed_damping`] by default.
pub const SEED_DAMPING: f32 = 0.5;

impl Default for ModelSettings {
    fn default() -> ModelSettings {
        ModelSettings {
            partners: MAX_PARTNERS,
            neighbours: NEIGHBOURS,
            partner_damping: PARTNER_DAMPING,
            seed_damping: SEED_DAMPING,
        }
    }
}
/// A product view pairs with this many of the visitor's previous views.
pub const CO_VIEW_WINDOW: usize = 10;
/// Order lines paired with each other at most (the first ones of an order).
pub const MAX_ORDER_LINES_PAIRED: usize = 20;
/// Product ids outside the catalogue whose interactions are counted at most, beyond the
/// catalogue's own products (a product a delta may still bring, or an id made up by a
/// client): made-up ids cannot grow the counters and pair tables without bound.
pub const UNCATALOGUED_KEYS: usize = 100_000;
/// The key of a view that is not counted (see [`UNCATALOGUED_KEYS`]).
pub const NO_KEY: u32 = u32::MAX;
/// Half-life of the popularity behind `trending`: a view a day old counts half.
pub const TRENDING_HALF_LIFE_MILLIS: UnixMillis = 24 * 60 * 60 * 1000;

/// Product ids as small numbers for the pair counts: a key is handed out on first sight
/// and stays the same for the life of the process (unlike dense catalogue indexes, which
/// a new base renumbers), so counting compares integers, not strings.
#[derive(Debug)]
pub struct ProductKeys {
    keys: DashMap<Arc<str>, u32>,
    names: RwLock<Vec<Arc<str>>>,
}

impl ProductKeys {
    /// The key of `id`, handed out now if it has none.
    pub fn key(&self, id: &str) -> u32 {
        if let Some(key) = self.keys.get(id) {
            return *key;
        }
        match self.keys.entry(Arc::from(id)) {
            dashmap::Entry::Occupied(slot) => *slot.get(),
            dashmap::Entry::Vacant(slot) => {
                let mut names = self.names.write().unwrap_or_else(PoisonError::into_inner);
                let key = u32::try_from(names.len()).unwrap_or(u32::MAX);
                names.push(Arc::clone(slot.key()));
                slot.insert(key);
                key
            }
        }
    }

    /// The key of `id` if it has one.
    pub fn existing(&self, id: &str) -> Option<u32> {
        self.keys.get(id).map(|key| *key)
    }

    /// Keys handed out.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key was handed out.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The id of a key.
    pub fn name(&self, key: u32) -> Option<Arc<str>> {
        self.names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key as usize)
            .cloned()
    }

    /// Every id by key, as of now.
    pub fn names(&self) -> Vec<Arc<str>> {
        self.names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Symmetric pair counts between products (by [`ProductKeys`] key).
///
/// Every product whose partners change is queued once until the next
/// [`CoCounts::changed_lists`], so a rebuild sorts only the lists that changed.
#[derive(Debug)]
pub struct CoCounts {
    pairs: IntMap<u32, Partners>,
    /// Products whose partners changed since the last rebuild, each once.
    changed: SegQueue<u32>,
    /// [`ModelSettings::partners`] (replaced by a configuration reload: a list longer
    /// than a lowered bound stops growing and is cut at the next restart).
    partners: AtomicUsize,
    /// [`ModelSettings::neighbours`].
    neighbours: AtomicUsize,
    /// [`ModelSettings::partner_damping`] and [`ModelSettings::seed_damping`], as `f32`
    /// bits.
    damping: [AtomicU32; 2],
}

impl Default for CoCounts {
    fn default() -> CoCounts {
        CoCounts {
            pairs: int_map(),
            changed: SegQueue::new(),
            partners: AtomicUsize::new(MAX_PARTNERS),
            neighbours: AtomicUsize::new(NEIGHBOURS),
            damping: [
                AtomicU32::new(PARTNER_DAMPING.to_bits()),
                AtomicU32::new(SEED_DAMPING.to_bits()),
            ],
        }
    }
}

impl Default for ProductKeys {
    fn default() -> ProductKeys {
        ProductKeys {
            keys: sharded(),
            names: RwLock::default(),
        }
    }
}

/// One product's partners, counts and inherited counts (in three parallel vectors, by
/// ascending key), their total, and whether it is queued in `changed`.
#[derive(Debug, Default)]
struct Partners {
    keys: Vec<u32>,
    counts: Vec<f32>,
    /// What each partner's count started from: the count it inherited when it took a
    /// full list's weakest place (0 for one that found room). Space-saving may
    /// overestimate a count by that much at most, so `count - inherited` is what the
    /// pair was surely seen.
    inherited: Vec<f32>,
    /// Everything counted for the product. Space-saving keeps the counts' sum equal to
    /// it (a newcomer inherits the count of the partner it replaces), so it is the sum
    /// of `counts`, kept here to be read without summing.
    total: f32,
    queued: bool,
}

impl Partners {
    /// Adds `weight` to the partner `to`, making room by space-saving when `capacity`
    /// partners are counted. Keys are kept in ascending order, so a partner is found by
    /// binary search (a view looks up each of its window's partners: a scan of 256 keys
    /// would cost more than the rest of counting it).
    fn add(&mut self, to: u32, weight: f32, capacity: usize) {
        self.total += weight;
        let at = match self.keys.binary_search(&to) {
            Ok(at) => {
                if let Some(count) = self.counts.get_mut(at) {
                    *count += weight;
                }
                return;
            }
            Err(at) => at,
        };
        let mut inherited = 0.0;
        let mut at = at;
        if self.keys.len() >= capacity {
            // Space-saving (Metwally et al., 2005): the weakest partner makes room and
            // the newcomer inherits its count, so a pair seen often enough is never
            // pushed out by a stream of rare ones. What it inherited is kept: its count
            // may be overestimated by that much at most.
            let weakest = self
                .counts
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(at, count)| (at, *count));
            if let Some((weakest, count)) = weakest {
                self.keys.remove(weakest);
                self.counts.remove(weakest);
                self.inherited.remove(weakest);
                inherited = count;
                if weakest < at {
                    at -= 1;
                }
            }
        }
        self.keys.insert(at, to);
        self.counts.insert(at, inherited + weight);
        self.inherited.insert(at, inherited);
    }

    /// (partner, count, inherited) triples.
    fn pairs(&self) -> Vec<CountedPartner> {
        self.keys
            .iter()
            .zip(&self.counts)
            .zip(&self.inherited)
            .map(|((key, count), inherited)| (*key, *count, *inherited))
            .collect()
    }
}

impl CoCounts {
    /// Counts `a` and `b` together once (in both directions).
    pub fn add(&self, a: u32, b: u32, weight: f32) {
        if a == b {
            return;
        }
        self.add_one(a, b, weight);
        self.add_one(b, a, weight);
    }

    /// Counts `product` together with each of `others` once (in both directions), each
    /// pairing with its own weight: `product`'s partners are updated under one lock.
    pub fn add_all(&self, product: u32, others: &[(u32, f32)]) {
        let capacity = self.partners.load(Ordering::Relaxed);
        {
            let mut partners = self.queued_entry(product);
            for &(other, weight) in others {
                if other != product {
                    partners.add(other, weight, capacity);
                }
            }
        }
        for &(other, weight) in others {
            if other != product {
                self.queued_entry(other).add(product, weight, capacity);
            }
        }
    }

    fn add_one(&self, from: u32, to: u32, weight: f32) {
        let capacity = self.partners.load(Ordering::Relaxed);
        self.queued_entry(from).add(to, weight, capacity);
    }

    /// Empty counts kept within `settings`.
    pub fn configured(settings: ModelSettings) -> CoCounts {
        let counts = CoCounts::default();
        counts.configure(settings);
        counts
    }

    /// Applies an account's model settings (at start and on a configuration reload).
    pub fn configure(&self, settings: ModelSettings) {
        self.partners.store(settings.partners, Ordering::Relaxed);
        self.neighbours
            .store(settings.neighbours, Ordering::Relaxed);
        let [partner, seed] = &self.damping;
        partner.store(settings.partner_damping.to_bits(), Ordering::Relaxed);
        seed.store(settings.seed_damping.to_bits(), Ordering::Relaxed);
    }

    /// A product's list from its partners' counts (`total` its own): the `keep`
    /// partners it is surest of, strongest first (ties by id), with their weights.
    fn list<'a>(
        &self,
        total: f32,
        partners: Vec<CountedPartner>,
        name: &impl Fn(u32) -> Option<&'a str>,
        keep: usize,
    ) -> impl Iterator<Item = (u32, f32)> {
        let mut sure = self.sure_counts(partners);
        rank_partners(&mut sure, name, keep);
        self.damp(total, sure)
    }

    /// A product's partners with the counts it is sure of and their own totals;
    /// partners with nothing sure are left out.
    ///
    /// Space-saving may overestimate a count by what the partner inherited when it came
    /// in, so that is taken off its count; a pair is not counted more than the
    /// partner's total either. Without that, a product seen once that took a full
    /// list's last place would rank with pairs seen many times, while a pair counted
    /// since the list had room keeps its whole count.
    fn sure_counts(&self, partners: Vec<CountedPartner>) -> Vec<SurePartner> {
        partners
            .into_iter()
            .filter_map(|(key, count, inherited)| {
                let total = self.pairs.get(&key).map_or(count, |p| p.total);
                let sure = (count - inherited).min(total);
                (sure > 0.0).then_some((key, sure, total))
            })
            .collect()
    }

    /// The weights of a product's list, from its ranked sure counts: each divided by
    /// the partner's total to the partner damping and by the product's own total
    /// (`own_total`) to the seed damping. The list keeps its order (by count): a single
    /// product's zone shows its strongest pairs, and a blend of several lists sums
    /// weights that do not favour popular products.
    fn damp(&self, own_total: f32, ranked: Vec<SurePartner>) -> impl Iterator<Item = (u32, f32)> {
        let [partner, seed] = &self.damping;
        let partner_damping = f32::from_bits(partner.load(Ordering::Relaxed));
        let seed_damping = f32::from_bits(seed.load(Ordering::Relaxed));
        let damped = |total: f32, power: f32| {
            if power == 0.0 || total <= 0.0 {
                1.0
            } else {
                total.powf(-power)
            }
        };
        let own = damped(own_total, seed_damping);
        ranked
            .into_iter()
            .map(move |(key, sure, total)| (key, sure * damped(total, partner_damping) * own))
    }

    /// `product`'s entry, queued for the next rebuild.
    fn queued_entry(&self, product: u32) -> dashmap::mapref::one::RefMut<'_, u32, Partners> {
        let mut partners = self.pairs.entry(product).or_default();
        if !partners.queued {
            partners.queued = true;
            self.changed.push(product);
        }
        partners
    }

    /// Number of products with partners.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Every product's partners, counts and inherited counts by id, unordered (for a
    /// state snapshot).
    pub fn entries(&self, keys: &ProductKeys) -> Vec<(String, Vec<PairCount>)> {
        let names = keys.names();
        let name = |key: u32| names.get(key as usize).map_or("", |n| n).to_owned();
        self.pairs
            .iter()
            .map(|entry| {
                let partners = entry
                    .pairs()
                    .into_iter()
                    .map(|(key, count, inherited)| PairCount {
                        partner: name(key),
                        count,
                        inherited,
                    })
                    .collect();
                (name(*entry.key()), partners)
            })
            .collect()
    }

    /// Sets a product's partners and counts (restoring a state snapshot); at most
    /// [`ModelSettings::partners`] are kept.
    pub fn restore(&self, keys: &ProductKeys, product: &str, partners: &[PairCount]) {
        let mut restored: Vec<CountedPartner> = partners
            .iter()
            .take(self.partners.load(Ordering::Relaxed))
            .map(|pair| (keys.key(&pair.partner), pair.count, pair.inherited))
            .collect();
        // In key order, as `Partners::add` keeps them (a snapshot names a partner once).
        restored.sort_unstable_by_key(|(key, ..)| *key);
        restored.dedup_by_key(|(key, ..)| *key);
        let key = keys.key(product);
        let mut entry = self.pairs.entry(key).or_default();
        entry.keys = restored.iter().map(|(key, ..)| *key).collect();
        entry.counts = restored.iter().map(|(_, count, _)| *count).collect();
        entry.inherited = restored.iter().map(|(.., inherited)| *inherited).collect();
        entry.total = entry.counts.iter().sum();
        if !entry.queued {
            entry.queued = true;
            self.changed.push(key);
        }
    }

    /// [`CoCounts::restore`] from a snapshot written before inherited counts were
    /// kept: each pair of a full list is taken to have inherited the list's weakest
    /// count (the most any of them can have), as lists were then read.
    pub fn restore_counts(&self, keys: &ProductKeys, product: &str, partners: &[(String, f32)]) {
        let full = partners.len() >= self.partners.load(Ordering::Relaxed);
        let weakest = partners
            .iter()
            .map(|(_, count)| *count)
            .min_by(f32::total_cmp)
            .filter(|_| full)
            .unwrap_or(0.0);
        let pairs: Vec<PairCount> = partners
            .iter()
            .map(|(partner, count)| PairCount {
                partner: partner.clone(),
                count: *count,
                inherited: weakest.min(*count),
            })
            .collect();
        self.restore(keys, product, &pairs);
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Queues every product, so that the next [`CoCounts::changed_lists`] gives all
    /// lists (for lists in a new catalogue base).
    pub fn queue_all(&self) {
        for mut entry in self.pairs.iter_mut() {
            if !entry.queued {
                entry.queued = true;
                self.changed.push(*entry.key());
            }
        }
    }

    /// The lists of the products whose partners changed since the last call (each
    /// partner list strongest first, ties by id, at most [`ModelSettings::neighbours`]), in the dense
    /// ids of `catalogue` (products it lacks are left out); sorted in parallel on the
    /// current rayon pool. The work is proportional to the products that changed.
    pub fn changed_lists(
        &self,
        keys: &ProductKeys,
        catalogue: &Catalogue,
    ) -> Vec<(ProductIdx, Arc<[Neighbour]>)> {
        let keep = self.neighbours.load(Ordering::Relaxed);
        let mut changed: Vec<ChangedList> = Vec::new();
        while let Some(key) = self.changed.pop() {
            if let Some(mut entry) = self.pairs.get_mut(&key) {
                entry.queued = false;
                changed.push((key, entry.total, entry.pairs()));
            }
        }
        changed
            .into_par_iter()
            .filter_map(|(product, total, partners)| {
                // One read of the names per list: the sort compares ids only on ties,
                // and no id is copied or counted.
                let names = keys.names.read().unwrap_or_else(PoisonError::into_inner);
                let name = |key: u32| names.get(key as usize).map(|name| &**name);
                let idx = catalogue.idx_of(name(product)?)?;
                let list = self
                    .list(total, partners, &name, keep)
                    .filter_map(|(key, weight)| Some((catalogue.idx_of(name(key)?)?, weight)))
                    .collect();
                Some((idx, list))
            })
            .collect()
    }

    /// Every product's partners by id, strongest first (ties by id), at most
    /// [`ModelSettings::neighbours`] (the tests' view of what [`CoCounts::changed_lists`]
    /// sorts).
    #[cfg(test)]
    pub fn neighbours(&self, keys: &ProductKeys) -> std::collections::HashMap<String, Vec<String>> {
        self.weighted_lists(keys)
            .into_iter()
            .map(|(product, list)| (product, list.into_iter().map(|(id, _)| id).collect()))
            .collect()
    }

    /// [`CoCounts::neighbours`] with each pair's weight in the list.
    #[cfg(test)]
    pub fn weighted_lists(
        &self,
        keys: &ProductKeys,
    ) -> std::collections::HashMap<String, Vec<(String, f32)>> {
        let snapshot: Vec<ChangedList> = self
            .pairs
            .iter()
            .map(|entry| (*entry.key(), entry.total, entry.pairs()))
            .collect();
        let names = keys.names();
        let name = |key: u32| names.get(key as usize).map(|name| &**name);
        let keep = self.neighbours.load(Ordering::Relaxed);
        snapshot
            .into_iter()
            .filter_map(|(product, total, partners)| {
                let list = self
                    .list(total, partners, &name, keep)
                    .filter_map(|(key, weight)| Some((name(key)?.to_owned(), weight)))
                    .collect();
                Some((name(product)?.to_owned(), list))
            })
            .collect()
    }
}

/// A partner, the pair's count, and what the count inherited (see [`Partners`]).
type CountedPartner = (u32, f32, f32);

/// A queued product, its total and its partners' counts.
type ChangedList = (u32, f32, Vec<CountedPartner>);

/// One pair of a product's partners as a state snapshot keeps it.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct PairCount {
    /// The partner's product id.
    pub partner: String,
    /// The pair's count.
    pub count: f32,
    /// What the count inherited when the partner took a full list's weakest place.
    pub inherited: f32,
}

/// A partner, the count of the pair its product is sure of, and the partner's total.
type SurePartner = (u32, f32, f32);

/// Sorts a product's partners strongest first, ties by id (partners without an id left
/// out), and keeps the first `keep`.
fn rank_partners<'a>(
    partners: &mut Vec<SurePartner>,
    name: &impl Fn(u32) -> Option<&'a str>,
    keep: usize,
) {
    partners.retain(|(key, ..)| name(*key).is_some());
    partners.sort_unstable_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| name(a.0).cmp(&name(b.0)))
            .then_with(|| a.0.cmp(&b.0))
    });
    partners.truncate(keep);
}

/// A neighbour in a list: its dense id and the weight of its pairing.
pub type Neighbour = (ProductIdx, f32);

/// Neighbour lists by dense id: a product's neighbours, strongest first. Updated in
/// place by a rebuild (only the lists that changed); read a list at a time.
pub type ProductLists = IntMap<ProductIdx, Arc<[Neighbour]>>;

/// Rebuilt neighbour lists, as serving reads them: in the dense ids of one catalogue
/// base, so that a request reads a list and its products without looking up an id.
#[derive(Debug, Default)]
pub struct Neighbours {
    /// The catalogue version the lists were resolved in (a request whose catalogue has
    /// another base reads no lists; [`Neighbours::rebase`] moves them to a new base).
    pub catalogue: Option<Arc<Catalogue>>,
    /// Products viewed by the same visitors close together, strongest first.
    pub viewed_together: ProductLists,
    /// Products bought in the same orders, strongest first.
    pub bought_together: ProductLists,
}

impl Neighbours {
    /// Empty lists for `catalogue`'s base.
    pub fn of(catalogue: &Arc<Catalogue>) -> Neighbours {
        Neighbours {
            catalogue: Some(Arc::clone(catalogue)),
            ..Neighbours::default()
        }
    }

    /// Whether the lists index `catalogue`'s dense ids.
    pub fn indexes(&self, catalogue: &Catalogue) -> bool {
        self.catalogue
            .as_ref()
            .is_some_and(|own| own.same_base(catalogue))
    }

    /// A product's list in `lists` (a copy of the handle: no lock is held after).
    pub fn list(lists: &ProductLists, idx: ProductIdx) -> Option<Arc<[Neighbour]>> {
        lists.get(&idx).map(|list| Arc::clone(&list))
    }

    /// The same lists in the dense ids of `catalogue`, a version with another base:
    /// each product is found again by its id; products it lacks are dropped.
    pub fn rebase(&self, catalogue: &Arc<Catalogue>) -> Neighbours {
        let Some(old) = &self.catalogue else {
            return Neighbours::of(catalogue);
        };
        let moved = |idx: &ProductIdx| {
            old.product(*idx)
                .and_then(|product| catalogue.idx_of(product.id.as_str()))
        };
        let rebase = |lists: &ProductLists| -> ProductLists {
            lists
                .iter()
                .filter_map(|entry| {
                    let list = entry
                        .value()
                        .iter()
                        .filter_map(|(idx, weight)| Some((moved(idx)?, *weight)))
                        .collect();
                    Some((moved(entry.key())?, list))
                })
                .collect()
        };
        Neighbours {
            catalogue: Some(Arc::clone(catalogue)),
            viewed_together: rebase(&self.viewed_together),
            bought_together: rebase(&self.bought_together),
        }
    }
}

/// The most popular category and brand ids, rebuilt whole each round.
#[derive(Debug, Default)]
pub struct TopNames {
    /// Category ids by decayed popularity, most popular first.
    pub categories: Vec<String>,
    /// Brand ids by decayed popularity, most popular first.
    pub brands: Vec<String>,
}

/// Names by decayed popularity as of `now`, most popular first (ties by name).
pub fn most_popular(counters: &DashMap<String, Decaying>, now: UnixMillis) -> Vec<String> {
    let mut scored: Vec<(String, f64)> = counters
        .iter()
        .map(|entry| (entry.key().clone(), entry.value().value_at(now)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scored.into_iter().map(|(name, _)| name).collect()
}

/// A popularity counter whose score halves every [`TRENDING_HALF_LIFE_MILLIS`].
#[derive(Debug, Clone, Copy, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Decaying {
    score: f64,
    at: UnixMillis,
}

impl Decaying {
    /// Adds `amount` at time `now`. An addition older than the last one is decayed to
    /// it, so the score does not depend on the order additions arrive in (cluster nodes
    /// apply each other's events after their own).
    pub fn add(&mut self, amount: f64, now: UnixMillis) {
        if now < self.at {
            let elapsed = (self.at - now) as f64;
            self.score += amount * (-elapsed / TRENDING_HALF_LIFE_MILLIS as f64).exp2();
        } else {
            self.score = self.value_at(now) + amount;
            self.at = now;
        }
    }

    /// The score as of `now` (never more than it was at the last addition).
    pub fn value_at(&self, now: UnixMillis) -> f64 {
        let elapsed = now.saturating_sub(self.at).max(0) as f64;
        self.score * (-elapsed / TRENDING_HALF_LIFE_MILLIS as f64).exp2()
    }

    /// A key that orders counters as their scores at any one time would (greater
    /// first): the base-2 logarithm of the score as of the epoch. Scores all halve at the
    /// same rate, so counters that did not change keep their order.
    pub fn rank_key(&self) -> f64 {
        if self.score > 0.0 {
            self.score.log2() + self.at as f64 / TRENDING_HALF_LIFE_MILLIS as f64
        } else {
            f64::NEG_INFINITY
        }
    }

    /// When it was last added to.
    pub fn at(&self) -> UnixMillis {
        self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_symmetric_ordered_and_bounded() {
        let keys = ProductKeys::default();
        let counts = CoCounts::default();
        let add = |a: &str, b: &str, weight: f32| counts.add(keys.key(a), keys.key(b), weight);
        for _ in 0..3 {
            add("a", "b", 1.0);
        }
        add("a", "c", 1.0);
        add("a", "a", 5.0);
        let lists = counts.neighbours(&keys);
        assert_eq!(lists["a"], ["b", "c"]);
        assert_eq!(lists["b"], ["a"]);
        assert!(!lists["a"].contains(&"a".to_owned()));

        for i in 0..(MAX_PARTNERS * 2) {
            add("hub", &format!("p{i:03}"), 1.0);
        }
        add("hub", "strong", 10.0);
        let kept = counts.pairs.get(&keys.key("hub")).map(|e| e.keys.len());
        assert_eq!(kept, Some(MAX_PARTNERS));
        // The strong partner leads; every other place went to a partner that came into
        // the full list (p256 on) and is sure of its one pairing, no more.
        let lists = counts.weighted_lists(&keys);
        let hub = &lists["hub"];
        assert_eq!(hub.len(), NEIGHBOURS);
        assert_eq!(hub[0].0, "strong");
        for (partner, _) in hub.iter().skip(1) {
            assert!(partner.as_str() >= "p256", "{partner} was evicted");
        }
        let damped = |count: f32, partner_total: f32| {
            count / partner_total.sqrt() / (MAX_PARTNERS as f32 * 2.0 + 10.0).sqrt()
        };
        assert!((hub[0].1 - damped(10.0, 10.0)).abs() < 1e-6, "{hub:?}");
        assert!((hub[1].1 - damped(1.0, 1.0)).abs() < 1e-6, "{hub:?}");
        for i in 0..(NEIGHBOURS * 2) {
            add("other", &format!("q{i:03}"), 1.0);
        }
        assert_eq!(counts.neighbours(&keys)["other"].len(), NEIGHBOURS);
    }

    #[test]
    fn an_accounts_model_settings_bound_partners_and_lists() {
        let keys = ProductKeys::default();
        let counts = CoCounts::default();
        counts.configure(ModelSettings {
            partners: 16,
            neighbours: 4,
            ..ModelSettings::default()
        });
        for i in 0..40u32 {
            // Later partners are stronger: each counted i + 1 times.
            for _ in 0..=i {
                counts.add(keys.key("hub"), keys.key(&format!("p{i:02}")), 1.0);
            }
        }
        let entry = counts.pairs.get(&keys.key("hub")).map(|e| e.keys.len());
        assert_eq!(entry, Some(16));
        let lists = counts.neighbours(&keys);
        assert_eq!(lists["hub"], ["p39", "p38", "p37", "p36"]);
    }

    #[test]
    fn a_decaying_score_does_not_depend_on_the_order_of_additions() {
        let hour = 3_600_000;
        let additions = [
            (1.0, 10 * hour),
            (2.0, 11 * hour),
            (1.0, 13 * hour),
            (3.0, 12 * hour),
        ];
        let mut in_order = Decaying::default();
        let mut sorted = additions;
        sorted.sort_by_key(|&(_, at)| at);
        for (amount, at) in sorted {
            in_order.add(amount, at);
        }
        let mut reversed = Decaying::default();
        for (amount, at) in sorted.iter().rev() {
            reversed.add(*amount, *at);
        }
        let mut shuffled = Decaying::default();
        for (amount, at) in additions {
            shuffled.add(amount, at);
        }
        for other in [reversed, shuffled] {
            assert_eq!(other.at(), in_order.at());
            let (a, b) = (other.value_at(14 * hour), in_order.value_at(14 * hour));
            assert!((a - b).abs() < 1e-12 * b, "{a} vs {b}");
        }
        // A late addition counts at its own time, not as a fresh one.
        let mut late = Decaying::default();
        late.add(1.0, 13 * hour);
        late.add(1.0, 13 * hour - TRENDING_HALF_LIFE_MILLIS);
        assert!((late.value_at(13 * hour) - 1.5).abs() < 1e-12);
    }

    #[test]
    fn a_frequent_partner_is_kept_through_a_stream_of_rare_ones() {
        let keys = ProductKeys::default();
        let counts = CoCounts::default();
        let add = |a: &str, b: &str| counts.add(keys.key(a), keys.key(b), 1.0);
        // A full list of partners seen twice each.
        for i in 0..MAX_PARTNERS {
            add("hub", &format!("old{i}"));
            add("hub", &format!("old{i}"));
        }
        // Then "steady" once in every three pairings, each other one new. Dropping the
        // weakest partner for a newcomer that starts from its own count would drop
        // "steady" (weakest at 1) at each newcomer; counted from the weakest's count,
        // it stays and leads.
        for round in 0..100 {
            add("hub", "steady");
            add("hub", &format!("new{round}a"));
            add("hub", &format!("new{round}b"));
        }
        let lists = counts.neighbours(&keys);
        assert_eq!(lists["hub"][0], "steady");
    }

    /// Counts keeping `partners` partners and as many neighbours, weights undamped (a
    /// list's weights are its sure counts).
    fn undamped(partners: usize) -> CoCounts {
        CoCounts::configured(ModelSettings {
            partners,
            neighbours: partners,
            partner_damping: 0.0,
            seed_damping: 0.0,
        })
    }

    #[test]
    fn a_newcomer_that_inherited_a_count_does_not_rank_with_pairs_seen_often() {
        let keys = ProductKeys::default();
        let counts = undamped(8);
        let add = |a: &str, b: &str| counts.add(keys.key(a), keys.key(b), 1.0);
        // A full list of partners each seen three times, the first one five times.
        for i in 0..8 {
            for _ in 0..3 {
                add("hub", &format!("old{i}"));
            }
        }
        add("hub", "old0");
        add("hub", "old0");
        // A product seen once takes the weakest place ("old1", the first of the
        // partners seen three times) and inherits its count (3 + 1): counted as it is,
        // it would lead the pairs seen three times. What is sure of its count is what
        // it gained since it came in, and no more than the partner's own total (1);
        // the pairs counted since the list had room keep their whole counts.
        add("hub", "once");
        let lists = counts.weighted_lists(&keys);
        let mut expected = vec![("old0".to_owned(), 5.0)];
        expected.extend((2..8).map(|i| (format!("old{i}"), 3.0)));
        expected.push(("once".to_owned(), 1.0));
        assert_eq!(lists["hub"], expected);

        // Seen twice more, "once" is sure of those (3: its count 6 less the 3 it
        // inherited) and ranks with the pairs seen three times.
        add("hub", "once");
        add("hub", "once");
        let lists = counts.weighted_lists(&keys);
        assert_eq!(lists["hub"].get(1), Some(&("old2".to_owned(), 3.0)));
        assert_eq!(lists["hub"].last(), Some(&("once".to_owned(), 3.0)));
    }

    #[test]
    fn a_snapshot_written_before_inherited_counts_reads_as_it_did() {
        let keys = ProductKeys::default();
        let counts = undamped(3);
        let pairs = |list: &[(&str, f32)]| -> Vec<(String, f32)> {
            list.iter().map(|(id, c)| ((*id).to_owned(), *c)).collect()
        };
        for (id, total) in [("a", 9.0), ("b", 9.0), ("c", 9.0), ("d", 9.0)] {
            counts.restore_counts(&keys, id, &pairs(&[("z", total)]));
        }
        // A full list: each count is read above the weakest (2), as lists were then.
        counts.restore_counts(&keys, "full", &pairs(&[("a", 6.0), ("b", 2.0), ("c", 3.0)]));
        // A list with room: every count is sure.
        counts.restore_counts(&keys, "room", &pairs(&[("a", 6.0), ("d", 2.0)]));
        let lists = counts.weighted_lists(&keys);
        assert_eq!(
            lists["full"],
            [("a".to_owned(), 4.0), ("c".to_owned(), 1.0)]
        );
        assert_eq!(
            lists["room"],
            [("a".to_owned(), 6.0), ("d".to_owned(), 2.0)]
        );
    }

    #[test]
    fn list_weights_are_damped_by_totals_and_keep_the_order_by_count() {
        let keys = ProductKeys::default();
        let settings = |partner_damping, seed_damping| ModelSettings {
            partner_damping,
            seed_damping,
            ..ModelSettings::default()
        };
        let counts = CoCounts::configured(settings(0.5, 0.5));
        let add = |a: &str, b: &str, n: usize| {
            for _ in 0..n {
                counts.add(keys.key(a), keys.key(b), 1.0);
            }
        };
        // "popular" is paired 4 times with "a" and 96 times elsewhere; "niche" twice
        // with "a" only.
        add("a", "popular", 4);
        add("popular", "elsewhere", 96);
        add("a", "niche", 2);
        let lists = counts.weighted_lists(&keys);
        let a = &lists["a"];
        // Ordered by count (a zone about "a" shows its strongest pair first) ...
        assert_eq!(a[0].0, "popular");
        assert_eq!(a[1].0, "niche");
        // ... weighed by count / partner total^0.5 / own total^0.5 (a's total: 6).
        let expected = |count: f32, partner_total: f32| count / partner_total.sqrt() / 6f32.sqrt();
        assert!((a[0].1 - expected(4.0, 100.0)).abs() < 1e-6, "{a:?}");
        assert!((a[1].1 - expected(2.0, 2.0)).abs() < 1e-6, "{a:?}");
        assert!(
            a[1].1 > a[0].1,
            "in a blend the niche pair weighs more: {a:?}"
        );

        // Without damping the weights are the counts.
        counts.configure(settings(0.0, 0.0));
        let lists = counts.weighted_lists(&keys);
        assert_eq!(
            lists["a"],
            [("popular".to_owned(), 4.0), ("niche".to_owned(), 2.0)]
        );
    }

    #[test]
    fn a_restored_snapshot_gives_the_same_weighted_lists() {
        let keys = ProductKeys::default();
        let settings = ModelSettings {
            partners: 8,
            neighbours: 6,
            ..ModelSettings::default()
        };
        let counts = CoCounts::configured(settings);
        // Enough partners, at uneven weights, for lists to fill and evict.
        for i in 0..200u32 {
            let a = format!("p{}", i % 7);
            let b = format!("p{}", (i * 13 + 5) % 23);
            counts.add(
                keys.key(&a),
                keys.key(&b),
                1.0 / f32::from(1 + (i % 4) as u8),
            );
        }
        // The total a weight divides by is the sum of the kept counts (space-saving
        // hands the weakest count on), so a state snapshot, which stores the counts,
        // restores it.
        for entry in counts.pairs.iter() {
            let sum: f32 = entry.counts.iter().sum();
            assert!((entry.total - sum).abs() < 1e-3, "{} vs {sum}", entry.total);
        }
        let restored = CoCounts::configured(settings);
        let entries = counts.entries(&keys);
        // The snapshot keeps what counts inherited (lists filled and evicted).
        assert!(
            entries
                .iter()
                .any(|(_, pairs)| pairs.iter().any(|pair| pair.inherited > 0.0)),
            "no count inherited anything"
        );
        for (product, partners) in entries {
            restored.restore(&keys, &product, &partners);
        }
        let (live, again) = (counts.weighted_lists(&keys), restored.weighted_lists(&keys));
        assert_eq!(live.len(), again.len());
        for (product, list) in &live {
            let other = &again[product];
            assert_eq!(list.len(), other.len(), "{product}");
            for ((a, x), (b, y)) in list.iter().zip(other) {
                assert_eq!(a, b, "{product}");
                assert!((x - y).abs() < 1e-4, "{product}: {x} vs {y}");
            }
        }
    }

    #[test]
    fn popularity_halves_every_half_life() {
        let mut counter = Decaying::default();
        counter.add(8.0, 0);
        assert_eq!(counter.value_at(TRENDING_HALF_LIFE_MILLIS), 4.0);
        counter.add(1.0, TRENDING_HALF_LIFE_MILLIS);
        assert_eq!(counter.value_at(TRENDING_HALF_LIFE_MILLIS * 2), 2.5);
        // An older addition counts as of its own time: halved once by now.
        counter.add(1.0, 0);
        assert_eq!(counter.value_at(TRENDING_HALF_LIFE_MILLIS), 5.5);
    }
}
