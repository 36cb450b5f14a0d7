//! Recent sessions and the products each was in, for `similar_sessions`: the shopper's
//! latest views against other shoppers' recent sessions that share a product with
//! it, scored as V-SKNN scores them (Ludewig and Jannach, "Evaluation of session-based
//! recommendation algorithms", 2018).
//!
//! Bounded both ways:
//! - memory: at most [`ModelSettings::sessions`] sessions (the oldest slot is reused),
//!   each with its latest [`SESSION_ITEMS`] distinct products, and per product the
//!   latest [`SESSIONS_PER_PRODUCT`] sessions it was in (4 bytes each: at most 2 KiB a
//!   product);
//! - CPU per request: at most [`SAMPLED_SESSIONS`] sessions are compared with the
//!   shopper's latest views (the latest sessions of the latest product first), of at
//!   most [`ENTRIES_READ`] entries of the products' indexes read, and the most similar
//!   ([`SessionSetting::neighbours`], at most [`SAMPLED_SESSIONS`]) give their products
//!   (`benches/benches/sessions.rs`).
//!
//! How many neighbours give their products and how many of the shopper's latest
//! products are compared is the index's [`SessionSetting`], which self-tuning chooses
//! per store ([`crate::tuning::sessions`]): [`SessionIndex::neighbourhoods`] reads one
//! neighbourhood under several settings from one sample per number of steps.
//!
//! A product's index names slots, not sessions: a slot reused by a later session leaves
//! stale entries behind, which are checked (the slot must hold the product) before they
//! count.
//!
//! Every product a session gains is stamped with the index's tick (a count of the
//! products added, [`SessionIndex::tick`]), so that a neighbourhood can be read as the
//! sessions were at an earlier tick ([`AsOf`]): self-tuning's trials read them as of
//! the pair lists they blend with, so that neither part wins for being fresher.
//!
//! [`ModelSettings::sessions`]: super::ModelSettings::sessions

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::catalogue::UnixMillis;

/// Distinct products kept per session (the latest viewed).
pub const SESSION_ITEMS: usize = 20;
/// Sessions kept per product (the latest it was viewed in).
pub const SESSIONS_PER_PRODUCT: usize = 500;
/// Sessions compared with the shopper's latest views per request, at most.
pub const SAMPLED_SESSIONS: usize = 500;
/// Entries of the products' indexes read per request, at most (stale ones, whose slot
/// a later session took, included): each is a read of a session's slot, most of them
/// cache misses, so this bounds a neighbourhood's cost.
pub const ENTRIES_READ: usize = SAMPLED_SESSIONS;
/// The most similar sessions whose products are scored, by default
/// ([`SessionSetting::neighbours`]).
pub const NEIGHBOUR_SESSIONS: usize = 100;
/// The shopper's latest products compared by default and at most
/// ([`SessionSetting::steps`]).
pub const SESSION_STEPS: usize = 10;

/// How a neighbourhood is read: the `steps` latest products of the shopper compared,
/// the latest weighing 1 and each older one `1 / steps` less, and the `neighbours`
/// most similar sessions scoring their products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionSetting {
    /// Sessions whose products are scored, 1 to [`SAMPLED_SESSIONS`].
    pub neighbours: usize,
    /// The shopper's latest products compared, 1 to [`SESSION_STEPS`].
    pub steps: usize,
}

impl Default for SessionSetting {
    fn default() -> SessionSetting {
        SessionSetting {
            neighbours: NEIGHBOUR_SESSIONS,
            steps: SESSION_STEPS,
        }
    }
}
/// Sessions kept per account by default ([`super::ModelSettings::sessions`]).
pub const SESSIONS_KEPT: usize = 100_000;

/// One session kept.
#[derive(Debug, Clone, Default)]
struct Slot {
    /// The session's key (`analytics::session_key` of its id); 0 for a free slot.
    session: u64,
    /// Its visitor's key (the same hash of the visitor id): their own other sessions
    /// are not their neighbours, and erasing them clears theirs.
    visitor: u64,
    /// Its distinct products, oldest first (a product viewed again moves last).
    items: SmallVec<[u32; SESSION_ITEMS]>,
    /// The tick each of `items` was first added at, in the same order.
    ticks: SmallVec<[u32; SESSION_ITEMS]>,
    /// When it was last added to.
    last: UnixMillis,
}

/// The latest slots a product was in, newest last until full, then a ring.
#[derive(Debug, Clone, Default)]
struct Ring {
    slots: Vec<u32>,
    /// Where the next one goes once full.
    next: usize,
}

impl Ring {
    fn push(&mut self, slot: u32) {
        if self.slots.len() < SESSIONS_PER_PRODUCT {
            self.slots.push(slot);
        } else if let Some(at) = self.slots.get_mut(self.next) {
            *at = slot;
            self.next = (self.next + 1) % SESSIONS_PER_PRODUCT;
        }
    }

    /// Newest first.
    fn newest_first(&self) -> impl Iterator<Item = u32> + '_ {
        let (older, newer) = self.slots.split_at(self.next.min(self.slots.len()));
        newer.iter().chain(older).rev().copied()
    }
}

#[derive(Debug, Default)]
struct Inner {
    slots: Vec<Slot>,
    /// Products added so far (wrapping): the next one's stamp.
    tick: u32,
    /// The slot reused next once every slot is taken.
    oldest: usize,
    by_session: FxHashMap<u64, u32>,
    by_product: FxHashMap<u32, Ring>,
    /// How neighbourhoods are read.
    setting: SessionSetting,
}

/// Which state of the sessions a neighbourhood reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOf {
    /// Every product added so far.
    Now,
    /// The products added up to a [`SessionIndex::tick`] (the later ones as if they
    /// had not been, within the last 2³¹ added).
    Tick(u32),
}

impl AsOf {
    /// Whether a product stamped `tick` was added by then.
    fn holds(self, tick: u32) -> bool {
        match self {
            AsOf::Now => true,
            AsOf::Tick(until) => until.wrapping_sub(tick) < 1 << 31,
        }
    }
}

/// An account's recent sessions (see the module).
#[derive(Debug)]
pub struct SessionIndex {
    inner: RwLock<Inner>,
    capacity: AtomicUsize,
}

/// A session as a state snapshot keeps it: its key, its visitor's, its products'
/// keys (oldest first) and when it was last added to.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct StoredSession {
    /// The session's key (`analytics::session_key` of its id).
    pub session: u64,
    /// Its visitor's key (the same hash of the visitor id).
    pub visitor: u64,
    /// Product ids, oldest first.
    pub items: Vec<String>,
    /// When it was last added to.
    pub last: UnixMillis,
}

/// The sessions as [`SessionIndex::copy`] took them, products by key.
#[derive(Debug)]
pub struct SessionsCopy(Vec<KeyedSession>);

/// A session copied: as [`StoredSession`], its products by key.
#[derive(Debug)]
struct KeyedSession {
    session: u64,
    visitor: u64,
    items: Vec<u32>,
    last: UnixMillis,
}

impl SessionsCopy {
    /// The sessions, products named by `name` (one it does not name is left out).
    pub fn named(self, name: impl Fn(u32) -> Option<String>) -> Vec<StoredSession> {
        self.0
            .into_iter()
            .map(|session| StoredSession {
                session: session.session,
                visitor: session.visitor,
                items: session.items.into_iter().filter_map(&name).collect(),
                last: session.last,
            })
            .collect()
    }
}

impl SessionIndex {
    /// An index of at most `capacity` sessions (0: none are kept, nothing is scored).
    pub fn new(capacity: usize) -> SessionIndex {
        SessionIndex {
            inner: RwLock::new(Inner::default()),
            capacity: AtomicUsize::new(capacity),
        }
    }

    /// The stamp of the latest product added (see [`AsOf::Tick`]).
    pub fn tick(&self) -> u32 {
        self.inner.read().tick.wrapping_sub(1)
    }

    /// Sessions it keeps at most.
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Keeps at most `capacity` sessions from now on: fewer than it keeps forgets all
    /// but the latest `capacity` (re-indexed oldest first).
    pub fn set_capacity(&self, capacity: usize) {
        let mut inner = self.inner.write();
        self.capacity.store(capacity, Ordering::Relaxed);
        if inner.slots.len() <= capacity {
            return;
        }
        let count = inner.slots.len();
        let oldest = inner.oldest;
        let mut kept: Vec<Slot> = (0..count)
            .filter_map(|at| inner.slots.get((oldest + at) % count).cloned())
            .filter(|slot| slot.session != 0)
            .collect();
        kept.drain(..kept.len().saturating_sub(capacity));
        *inner = Inner {
            setting: inner.setting,
            ..Inner::default()
        };
        for slot in kept {
            for product in &slot.items {
                inner.add(slot.session, slot.visitor, *product, slot.last, capacity);
            }
        }
    }

    /// `product` viewed in `session` by `visitor` at `now`.
    pub fn view(&self, session: u64, visitor: u64, product: u32, now: UnixMillis) {
        let capacity = self.capacity();
        if capacity == 0 || session == 0 {
            return;
        }
        self.inner
            .write()
            .add(session, visitor, product, now, capacity);
    }

    /// The products of `session`, oldest first.
    pub fn items_of(&self, session: u64) -> SmallVec<[u32; SESSION_ITEMS]> {
        let inner = self.inner.read();
        inner
            .by_session
            .get(&session)
            .and_then(|slot| inner.slots.get(*slot as usize))
            .map(|slot| slot.items.clone())
            .unwrap_or_default()
    }

    /// How neighbourhoods are read now.
    pub fn setting(&self) -> SessionSetting {
        self.inner.read().setting
    }

    /// Reads neighbourhoods at `setting` from now on.
    pub fn configure(&self, setting: SessionSetting) {
        self.inner.write().setting = setting;
    }

    /// Products scored by the sessions most like the shopper's latest products
    /// (`latest`, the latest first; V-SKNN), at the index's [`SessionSetting`]: the
    /// latest `steps` weigh 1, 1 − 1/steps, …; another session's similarity is the sum
    /// of the weights of the products it shares with them, and a product scores the
    /// summed similarity of the `neighbours` most similar sessions (of the
    /// [`SAMPLED_SESSIONS`] latest that hold those products, the latest products'
    /// first) that hold it. The `visitor`'s own sessions and the products of `latest`
    /// are left out; the highest score first (ties by key), at most `limit`. Sessions
    /// are read `as_of` a tick: a product added later is not in its session.
    ///
    /// The shopper's latest products rather than their session's: a shopper back
    /// after a pause, or whose client sends no session id, is still compared by what
    /// they did last.
    pub fn neighbourhood(
        &self,
        latest: &[u32],
        visitor: u64,
        limit: usize,
        as_of: AsOf,
    ) -> Vec<(u32, f32)> {
        let inner = self.inner.read();
        let setting = inner.setting;
        let read = Read {
            latest,
            visitor,
            limit,
            as_of,
        };
        inner
            .neighbourhoods(&read, &[setting])
            .pop()
            .unwrap_or_default()
    }

    /// [`SessionIndex::neighbourhood`] read at each of `settings`, in their order:
    /// the sessions sampled once per number of steps (self-tuning's trials).
    pub fn neighbourhoods(
        &self,
        latest: &[u32],
        visitor: u64,
        limit: usize,
        as_of: AsOf,
        settings: &[SessionSetting],
    ) -> Vec<Vec<(u32, f32)>> {
        let read = Read {
            latest,
            visitor,
            limit,
            as_of,
        };
        self.inner.read().neighbourhoods(&read, settings)
    }

    /// Forgets every session of `visitor` (an erasure): each slot of theirs is
    /// cleared (the products' entries naming it are stale from then on).
    pub fn erase_visitor(&self, visitor: u64) {
        let mut inner = self.inner.write();
        let Inner {
            slots, by_session, ..
        } = &mut *inner;
        for slot in slots.iter_mut().filter(|s| s.visitor == visitor) {
            by_session.remove(&slot.session);
            *slot = Slot::default();
        }
    }

    /// Sessions kept now.
    pub fn len(&self) -> usize {
        self.inner.read().by_session.len()
    }

    /// Whether no session is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes it holds, roughly: the slots and the products' rings.
    pub fn memory_bytes(&self) -> usize {
        let inner = self.inner.read();
        let slots = inner.slots.capacity() * std::mem::size_of::<Slot>();
        let sessions = inner.by_session.capacity() * (8 + 4 + 8);
        let rings: usize = inner
            .by_product
            .values()
            .map(|ring| ring.slots.capacity() * 4 + std::mem::size_of::<Ring>() + 4)
            .sum();
        slots + sessions + rings
    }

    /// Every session kept, oldest slot first, with product ids by `name` (a state
    /// snapshot).
    pub fn entries(&self, name: impl Fn(u32) -> Option<String>) -> Vec<StoredSession> {
        self.copy().named(name)
    }

    /// Every session kept, oldest slot first, its products by key: a quick copy (a
    /// state snapshot's cut), named later ([`SessionsCopy::named`]).
    pub fn copy(&self) -> SessionsCopy {
        let inner = self.inner.read();
        let count = inner.slots.len();
        SessionsCopy(
            (0..count)
                .map(|at| (inner.oldest + at) % count.max(1))
                .filter_map(|at| inner.slots.get(at))
                .filter(|slot| slot.session != 0)
                .map(|slot| KeyedSession {
                    session: slot.session,
                    visitor: slot.visitor,
                    items: slot.items.to_vec(),
                    last: slot.last,
                })
                .collect(),
        )
    }

    /// Adds a session read from a state snapshot (in the order [`SessionIndex::entries`]
    /// gave them), its products keyed by `key`.
    pub fn restore(&self, stored: &StoredSession, key: impl Fn(&str) -> u32) {
        for product in &stored.items {
            self.view(stored.session, stored.visitor, key(product), stored.last);
        }
    }
}

impl Slot {
    /// Its products added by `as_of`, oldest first.
    fn added(&self, as_of: AsOf) -> impl Iterator<Item = u32> + '_ {
        self.items
            .iter()
            .zip(&self.ticks)
            .filter(move |(_, tick)| as_of.holds(**tick))
            .map(|(product, _)| *product)
    }

    /// Whether it held `product` by `as_of`.
    fn holds(&self, product: u32, as_of: AsOf) -> bool {
        self.items
            .iter()
            .zip(&self.ticks)
            .any(|(p, tick)| *p == product && as_of.holds(*tick))
    }
}

/// What a neighbourhood is read for (see [`SessionIndex::neighbourhood`]).
struct Read<'a> {
    latest: &'a [u32],
    visitor: u64,
    limit: usize,
    as_of: AsOf,
}

/// The shopper's latest products compared, each once: in order (the latest first),
/// and with their weights by key.
struct Seeds {
    latest_first: SmallVec<[u32; SESSION_STEPS]>,
    by_key: SmallVec<[(u32, f32); SESSION_STEPS]>,
}

impl Seeds {
    /// The latest `steps` distinct products of `latest`, weighing 1, 1 − 1/steps, ….
    fn of(latest: &[u32], steps: usize) -> Seeds {
        let mut latest_first: SmallVec<[u32; SESSION_STEPS]> = SmallVec::new();
        for product in latest {
            if latest_first.len() == steps.min(SESSION_STEPS) {
                break;
            }
            if !latest_first.contains(product) {
                latest_first.push(*product);
            }
        }
        #[expect(
            clippy::cast_precision_loss,
            reason = "at most SESSION_STEPS steps, exact in an f32"
        )]
        let mut by_key: SmallVec<[(u32, f32); SESSION_STEPS]> = latest_first
            .iter()
            .enumerate()
            .map(|(age, product)| (*product, 1.0 - age as f32 / steps as f32))
            .collect();
        by_key.sort_unstable_by_key(|w| w.0);
        Seeds {
            latest_first,
            by_key,
        }
    }

    fn weight(&self, product: u32) -> Option<f32> {
        self.by_key
            .binary_search_by_key(&product, |w| w.0)
            .ok()
            .and_then(|at| self.by_key.get(at))
            .map(|w| w.1)
    }
}

/// The sessions sampled for a number of steps: the steps, the shopper's products
/// compared, and each session's slot with its similarity.
type Sample = (usize, Seeds, Vec<(u32, f32)>);

/// The stronger of two scored entries first, ties by key.
fn strongest(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

impl Inner {
    /// See [`SessionIndex::neighbourhoods`].
    fn neighbourhoods(&self, read: &Read<'_>, settings: &[SessionSetting]) -> Vec<Vec<(u32, f32)>> {
        // One sample per number of steps: the sessions and their similarities.
        let mut samples: SmallVec<[Sample; 2]> = SmallVec::new();
        settings
            .iter()
            .map(|setting| {
                let at = match samples.iter().position(|s| s.0 == setting.steps) {
                    Some(at) => at,
                    None => {
                        let seeds = Seeds::of(read.latest, setting.steps.max(1));
                        let sampled = self.sample(&seeds, read);
                        samples.push((setting.steps, seeds, sampled));
                        samples.len() - 1
                    }
                };
                let Some((_, seeds, sampled)) = samples.get(at) else {
                    return Vec::new();
                };
                self.score(sampled, setting.neighbours, seeds, read)
            })
            .collect()
    }

    /// The sessions compared with `seeds` and their similarities: the latest sessions
    /// of each product, the latest product first, at most [`SAMPLED_SESSIONS`] of at
    /// most [`ENTRIES_READ`] entries read.
    fn sample(&self, seeds: &Seeds, read: &Read<'_>) -> Vec<(u32, f32)> {
        if seeds.latest_first.is_empty() {
            return Vec::new();
        }
        let mut sampled: FxHashMap<u32, f32> = FxHashMap::default();
        let mut entries = 0usize;
        'sample: for product in &seeds.latest_first {
            let Some(ring) = self.by_product.get(product) else {
                continue;
            };
            for slot in ring.newest_first() {
                if sampled.len() >= SAMPLED_SESSIONS || entries >= ENTRIES_READ {
                    break 'sample;
                }
                entries += 1;
                if sampled.contains_key(&slot) {
                    continue;
                }
                let Some(other) = self.slots.get(slot as usize) else {
                    continue;
                };
                // A stale entry (the slot reused since), the visitor's own session, or
                // the product added to it after `as_of`.
                if other.visitor == read.visitor || !other.holds(*product, read.as_of) {
                    continue;
                }
                let similarity: f32 = other
                    .added(read.as_of)
                    .filter_map(|p| seeds.weight(p))
                    .sum();
                sampled.insert(slot, similarity);
            }
        }
        sampled.into_iter().collect()
    }

    /// The products of the `neighbours` most similar of `sampled`, each scored by the
    /// summed similarity of those that hold it (see [`SessionIndex::neighbourhood`]).
    fn score(
        &self,
        sampled: &[(u32, f32)],
        neighbours: usize,
        seeds: &Seeds,
        read: &Read<'_>,
    ) -> Vec<(u32, f32)> {
        let mut nearest = sampled.to_vec();
        let neighbours = neighbours.max(1);
        if nearest.len() > neighbours {
            nearest.select_nth_unstable_by(neighbours - 1, strongest);
            nearest.truncate(neighbours);
        }
        let mut scores: FxHashMap<u32, f32> = FxHashMap::default();
        for (slot, similarity) in &nearest {
            let Some(other) = self.slots.get(*slot as usize) else {
                continue;
            };
            for product in other.added(read.as_of) {
                if seeds.weight(product).is_none() && !read.latest.contains(&product) {
                    *scores.entry(product).or_default() += similarity;
                }
            }
        }
        let mut ranked: Vec<(u32, f32)> = scores.into_iter().collect();
        let limit = read.limit;
        if ranked.len() > limit && limit > 0 {
            ranked.select_nth_unstable_by(limit - 1, strongest);
        }
        ranked.truncate(limit);
        ranked.sort_unstable_by(strongest);
        ranked
    }

    /// See [`SessionIndex::view`].
    fn add(&mut self, session: u64, visitor: u64, product: u32, now: UnixMillis, capacity: usize) {
        let slot = match self.by_session.get(&session) {
            Some(slot) => *slot,
            None => self.take_slot(session, visitor, capacity),
        };
        let Some(kept) = self.slots.get_mut(slot as usize) else {
            return;
        };
        kept.last = now;
        let tick = self.tick;
        self.tick = tick.wrapping_add(1);
        if let Some(at) = kept.items.iter().position(|p| *p == product) {
            // Seen again in the session: last (with the tick it was first added at),
            // and already indexed.
            kept.items.remove(at);
            kept.items.push(product);
            let first = kept.ticks.remove(at);
            kept.ticks.push(first);
            return;
        }
        if kept.items.len() == SESSION_ITEMS {
            kept.items.remove(0);
            kept.ticks.remove(0);
        }
        kept.items.push(product);
        kept.ticks.push(tick);
        self.by_product.entry(product).or_default().push(slot);
    }

    /// A slot for a new `session`: a free one while there are fewer than `capacity`,
    /// else the oldest one, reused.
    fn take_slot(&mut self, session: u64, visitor: u64, capacity: usize) -> u32 {
        let fresh = Slot {
            session,
            visitor,
            items: SmallVec::new(),
            ticks: SmallVec::new(),
            last: 0,
        };
        let slot = if self.slots.len() < capacity {
            self.slots.push(fresh);
            self.slots.len() - 1
        } else {
            let at = self.oldest % self.slots.len().max(1);
            self.oldest = (at + 1) % self.slots.len().max(1);
            if let Some(old) = self.slots.get_mut(at) {
                if old.session != 0 {
                    self.by_session.remove(&old.session);
                }
                *old = fresh;
            }
            at
        };
        let slot = u32::try_from(slot).unwrap_or(u32::MAX);
        self.by_session.insert(session, slot);
        slot
    }
}

#[cfg(test)]
mod tests;
