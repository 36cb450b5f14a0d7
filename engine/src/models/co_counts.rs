//! Pair counts between products: a bounded partner list per product counted by
//! space-saving (each partner with what it inherited when it came in), the products'
//! totals, and the changed lists a rebuild ranks.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};

use crossbeam_queue::SegQueue;
use rayon::prelude::*;

use super::partners::{CountedPartner, Direction, Kept, Partners, Totals, add_reach, undirected};
use super::{
    CoViewWindow, MAX_PARTNERS, ModelSettings, NEIGHBOURS, Neighbour, PARTNER_DAMPING, ProductKeys,
    Reach, SEED_DAMPING,
};
use crate::catalogue::{Catalogue, ProductIdx};
use crate::shards::{IntMap, int_map};

/// Symmetric pair counts between products (by [`ProductKeys`] key).
///
/// Every product whose partners change is queued once until the next
/// [`CoCounts::changed_lists`], so a rebuild sorts only the lists that changed.
#[derive(Debug)]
pub struct CoCounts {
    pub(super) pairs: IntMap<u32, Partners>,
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
    /// [`ModelSettings::co_view_window`], as its place in [`CoViewWindow::ALL`].
    window: AtomicUsize,
    /// [`ModelSettings::co_view_forward`], as `f32` bits.
    forward: AtomicU32,
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
            window: AtomicUsize::new(CoViewWindow::ALL.len() - 1),
            forward: AtomicU32::new(0.0f32.to_bits()),
        }
    }
}

impl CoCounts {
    /// Counts `a` and `b` together once (in both directions, each forward of the
    /// other), as close as can be (two lines of one order).
    pub fn add(&self, a: u32, b: u32, weight: f32) {
        if a == b {
            return;
        }
        let reach = [weight, weight];
        self.add_one(a, b, weight, reach);
        self.add_one(b, a, weight, reach);
    }

    /// Counts `product` together with each of `others`, which came before it, once (in
    /// both directions), each pairing with its own weight and its counts by distance:
    /// in `product`'s list they are backward, and it is forward in each of theirs.
    /// `product`'s partners are updated under one lock.
    pub fn add_all(&self, product: u32, others: &[(u32, f32, Reach)]) {
        let capacity = self.partners.load(Ordering::Relaxed);
        {
            let mut partners = self.queued_entry(product);
            for &(other, weight, reach) in others {
                if other != product {
                    partners.add(other, weight, reach, Direction::Backward, capacity);
                }
            }
        }
        for &(other, weight, reach) in others {
            if other != product {
                self.queued_entry(other)
                    .add(product, weight, reach, Direction::Forward, capacity);
            }
        }
    }

    fn add_one(&self, from: u32, to: u32, weight: f32, reach: Reach) {
        let capacity = self.partners.load(Ordering::Relaxed);
        self.queued_entry(from)
            .add(to, weight, reach, Direction::Forward, capacity);
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
        let window = CoViewWindow::ALL
            .iter()
            .position(|w| *w == settings.co_view_window)
            .unwrap_or(CoViewWindow::ALL.len() - 1);
        self.window.store(window, Ordering::Relaxed);
        self.forward
            .store(settings.co_view_forward.to_bits(), Ordering::Relaxed);
    }

    /// [`ModelSettings::co_view_forward`] now: how much of a pair's weight its
    /// direction decides.
    pub fn forward(&self) -> f32 {
        f32::from_bits(self.forward.load(Ordering::Relaxed))
    }

    /// [`ModelSettings::neighbours`] now.
    pub(super) fn neighbours_kept(&self) -> usize {
        self.neighbours.load(Ordering::Relaxed)
    }

    /// The window the lists are read at.
    pub fn window(&self) -> CoViewWindow {
        let at = self.window.load(Ordering::Relaxed);
        CoViewWindow::ALL
            .get(at)
            .copied()
            .unwrap_or(CoViewWindow::Ten)
    }

    /// [`ModelSettings::partner_damping`] and [`ModelSettings::seed_damping`] now.
    pub(crate) fn dampings(&self) -> (f32, f32) {
        let [partner, seed] = &self.damping;
        (
            f32::from_bits(partner.load(Ordering::Relaxed)),
            f32::from_bits(seed.load(Ordering::Relaxed)),
        )
    }

    /// A product's list from its partners' counts (`total` its own): the `keep`
    /// partners it is surest of, strongest first (ties by id), with their weights.
    fn list<'a>(
        &self,
        totals: Totals,
        partners: Vec<CountedPartner>,
        name: &impl Fn(u32) -> Option<&'a str>,
        keep: usize,
    ) -> impl Iterator<Item = (u32, f32)> {
        let window = self.window();
        let mut sure = self.sure_counts(partners, window, self.forward());
        rank_partners(&mut sure, name, keep);
        self.damp(totals.at(window), sure)
    }

    /// A product's partners with the counts it is sure of and their own totals;
    /// partners with nothing sure are left out.
    ///
    /// Space-saving may overestimate a count by what the partner inherited when it came
    /// in, so that is taken off its count; a pair is not counted more than the
    /// partner's total either. Without that, a product seen once that took a full
    /// list's last place would rank with pairs seen many times, while a pair counted
    /// since the list had room keeps its whole count. At a shorter `window`, the
    /// counts by distance are sure already (counted since the partner came in).
    /// `forward` then weighs the pairs' direction ([`CountedPartner::directed`]).
    fn sure_counts(
        &self,
        partners: Vec<CountedPartner>,
        window: CoViewWindow,
        forward: f32,
    ) -> Vec<SurePartner> {
        partners
            .into_iter()
            .filter_map(|partner| {
                let total = self
                    .pairs
                    .get(&partner.key)
                    .map_or(partner.at(window), |p| p.totals().at(window));
                let sure = partner.sure_at(window).min(total) * partner.directed(window, forward);
                (sure > 0.0).then_some((partner.key, sure, total))
            })
            .collect()
    }

    /// The weights of a product's list, from its ranked sure counts: each divided by
    /// the partner's total to the partner damping and by the product's own total
    /// (`own_total`) to the seed damping. The list keeps its order (by count): a single
    /// product's zone shows its strongest pairs, and a blend of several lists sums
    /// weights that do not favour popular products.
    fn damp(&self, own_total: f32, ranked: Vec<SurePartner>) -> impl Iterator<Item = (u32, f32)> {
        let (partner_damping, seed_damping) = self.dampings();
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

    /// Every product's partners, counts, inherited counts, counts by distance and by
    /// direction, by id, unordered (for a state snapshot).
    pub fn entries(&self, keys: &ProductKeys) -> Vec<DirectedPairs> {
        self.copy().named(keys)
    }

    /// Every product's pairs by key, unordered: a quick copy (a state snapshot's cut),
    /// named later ([`PairsCopy::named`]).
    pub fn copy(&self) -> PairsCopy {
        PairsCopy(
            self.pairs
                .iter()
                .map(|entry| (*entry.key(), entry.pairs()))
                .collect(),
        )
    }
}

/// The pairs as [`CoCounts::copy`] took them.
#[derive(Debug)]
pub struct PairsCopy(Vec<(u32, Vec<CountedPartner>)>);

impl PairsCopy {
    /// The pairs, products named by `keys`.
    pub fn named(self, keys: &ProductKeys) -> Vec<DirectedPairs> {
        let names = keys.names();
        let name = |key: u32| names.get(key as usize).map_or("", |n| n).to_owned();
        self.0
            .into_iter()
            .map(|(product, pairs)| DirectedPairs {
                product: name(product),
                reach: pairs.iter().map(|pair| pair.reach).collect(),
                forward: pairs.iter().map(|pair| pair.forward).collect(),
                partners: pairs
                    .into_iter()
                    .map(|pair| PairCount {
                        partner: name(pair.key),
                        count: pair.count,
                        inherited: pair.inherited,
                    })
                    .collect(),
            })
            .collect()
    }
}

impl CoCounts {
    /// Sets a product's partners and counts (restoring a state snapshot); at most
    /// [`ModelSettings::partners`] are kept. `reach`: each pair's counts by distance, in
    /// the order of `partners`; a snapshot written before they were kept has none, and
    /// every window then reads a pair's whole count. `forward`: of those, what went in
    /// the partner's direction; without it (a snapshot written before directions were
    /// counted), half.
    pub fn restore(
        &self,
        keys: &ProductKeys,
        product: &str,
        partners: &[PairCount],
        reach: Option<&[Reach]>,
        forward: Option<&[Reach]>,
    ) {
        let mut restored: Vec<CountedPartner> = partners
            .iter()
            .enumerate()
            .take(self.partners.load(Ordering::Relaxed))
            .map(|(at, pair)| {
                let reach = reach
                    .and_then(|reach| reach.get(at).copied())
                    .unwrap_or([pair.count; 2]);
                CountedPartner {
                    key: keys.key(&pair.partner),
                    count: pair.count,
                    inherited: pair.inherited,
                    reach,
                    forward: forward
                        .and_then(|forward| forward.get(at).copied())
                        .unwrap_or_else(|| undirected(reach)),
                }
            })
            .collect();
        // In key order, as `Partners::add` keeps them (a snapshot names a partner once).
        restored.sort_unstable_by_key(|pair| pair.key);
        restored.dedup_by_key(|pair| pair.key);
        let key = keys.key(product);
        let mut entry = self.pairs.entry(key).or_default();
        entry.keys = restored.iter().map(|pair| pair.key).collect();
        entry.counts = restored.iter().map(|pair| pair.count).collect();
        entry.kept = restored
            .iter()
            .map(|pair| Kept {
                inherited: pair.inherited,
                reach: pair.reach,
                forward: pair.forward,
            })
            .collect();
        entry.total = entry.counts.iter().sum();
        let mut reach_total = [0.0; 2];
        for kept in &entry.kept {
            add_reach(&mut reach_total, kept.reach);
        }
        entry.reach_total = reach_total;
        if !entry.queued {
            entry.queued = true;
            self.changed.push(key);
        }
    }

    /// [`CoCounts::restore`] of a product's pairs as a state snapshot now writes them.
    pub fn restore_directed(&self, keys: &ProductKeys, pairs: &DirectedPairs) {
        self.restore(
            keys,
            &pairs.product,
            &pairs.partners,
            Some(&pairs.reach),
            Some(&pairs.forward),
        );
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
        self.restore(keys, product, &pairs, None, None);
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
                changed.push((key, entry.totals(), entry.pairs()));
            }
        }
        let indexes = keys.idx_by_key(catalogue);
        changed
            .into_par_iter()
            .filter_map(|(product, total, partners)| {
                // One read of the names per list: the sort compares ids only on ties,
                // and no id is copied or counted.
                let names = keys.names.read().unwrap_or_else(PoisonError::into_inner);
                let name = |key: u32| names.get(key as usize).map(|name| &**name);
                let idx_of = |key: u32| indexes.idx(catalogue, key, name(key)?);
                let idx = idx_of(product)?;
                let list = self
                    .list(total, partners, &name, keep)
                    .filter_map(|(key, weight)| Some((idx_of(key)?, weight)))
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
            .map(|entry| (*entry.key(), entry.totals(), entry.pairs()))
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

/// A count divided by `total` to `power` (1 when either is 0).
pub(super) fn damped(total: f32, power: f32) -> f32 {
    if power == 0.0 || total <= 0.0 {
        1.0
    } else {
        total.powf(-power)
    }
}

/// A queued product, its totals and its partners' counts.
type ChangedList = (u32, Totals, Vec<CountedPartner>);

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

/// A product's pairs as a state snapshot keeps them: partners, counts, inherited
/// counts, and each pair's counts by distance and, of those, in the partner's
/// direction.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct DirectedPairs {
    /// Product id.
    pub product: String,
    /// Its pairs.
    pub partners: Vec<PairCount>,
    /// Each pair's counts at distance 1 and at distance 3 at most, in the order of
    /// `partners` (see [`Reach`]).
    pub reach: Vec<Reach>,
    /// Of `reach`, what was counted with the partner after the product, in the same
    /// order.
    pub forward: Vec<Reach>,
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
    let order = |a: &SurePartner, b: &SurePartner| {
        b.1.total_cmp(&a.1)
            .then_with(|| name(a.0).cmp(&name(b.0)))
            .then_with(|| a.0.cmp(&b.0))
    };
    // Only the kept ones are sorted: a list of a few hundred partners keeps a few dozen.
    if keep == 0 {
        partners.clear();
        return;
    }
    if partners.len() > keep {
        partners.select_nth_unstable_by(keep - 1, order);
        partners.truncate(keep);
    }
    partners.sort_unstable_by(order);
}
