//! Concurrent maps with many small shards (keys from outside hashed with [`TextHasher`],
//! integer keys with FxHash), and a graveyard for large values.
//!
//! A `DashMap` locks one shard at a time. A background job that walks a map (a state
//! snapshot copying visitor ids, the session sweep, a rebuild queueing every product)
//! holds each shard while it walks it, and a request that writes into that shard waits.
//! [`sharded`] maps have [`SHARDS`] shards (the default is four per core: 8 here), so a
//! shard of a million visitors holds about 16,000 and a walk holds it for a fraction of
//! a millisecond instead of several. More shards would shorten it further, at a fixed
//! cost per shard and map; 64 is where the `scale` bench's handler was fastest of the
//! counts tried (8, 64, 512).
//!
//! Dropping a large value (a catalogue version's overlay or mapping, a cache of product
//! texts) takes as long as freeing everything in it. The [`Graveyard`] keeps such values
//! once they are replaced, so that the request that lets go of one last does not pay for
//! it; [`Graveyard::sweep`], on a background thread, drops those nobody uses any more.
//!
//! A counter that every request adds to is a cache line that every core writes: under
//! load each addition waits for the line to come back from the other core. A
//! [`StripedCounter`] gives each thread its own line and adds them up when read.

use std::any::Any;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use dashmap::DashMap;

/// Shards of a [`sharded`] map.
pub const SHARDS: usize = 64;

/// How [`sharded`] maps hash their keys: foldhash, seeded per process. The keys are
/// text from outside (visitor, session, order and product ids, category and brand
/// names), so the seed is random, as SipHash's is; foldhash takes a fraction of
/// SipHash's instructions for a short key, and every request looks up several.
pub type TextHasher = foldhash::fast::RandomState;

/// A map of [`SHARDS`] shards whose keys are text from outside ([`TextHasher`]).
pub type Sharded<K, V> = DashMap<K, V, TextHasher>;

/// An empty map with [`SHARDS`] shards.
pub fn sharded<K: Eq + Hash, V>() -> Sharded<K, V> {
    DashMap::with_hasher_and_shard_amount(TextHasher::default(), SHARDS)
}

/// A map keyed by internal integers (product keys, dense ids): hashed with FxHash, which
/// is several times cheaper than the default SipHash. Only for keys that outside input
/// cannot choose: they are handed out in order by the engine.
pub type IntMap<K, V> = DashMap<K, V, rustc_hash::FxBuildHasher>;

/// An empty [`IntMap`] with [`SHARDS`] shards.
pub fn int_map<K: Eq + Hash, V>() -> IntMap<K, V> {
    DashMap::with_hasher_and_shard_amount(rustc_hash::FxBuildHasher, SHARDS)
}

/// A [`sharded`] map that knows its length without walking its shards: bounded maps
/// (visitors, sessions) check it on every insert. Every insert and removal goes
/// through it; the count may lag a concurrent change by one.
#[derive(Debug)]
pub struct CountedMap<K: Eq + Hash, V> {
    map: Sharded<K, V>,
    len: AtomicUsize,
}

impl<K: Eq + Hash + Clone, V> Default for CountedMap<K, V> {
    fn default() -> Self {
        CountedMap {
            map: sharded(),
            len: AtomicUsize::new(0),
        }
    }
}

impl<K: Eq + Hash + Clone, V> CountedMap<K, V> {
    /// Entries now.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry of `key`, made with `make` if there is none.
    pub fn get_or_insert_with(
        &self,
        key: K,
        make: impl FnOnce() -> V,
    ) -> dashmap::mapref::one::RefMut<'_, K, V> {
        match self.map.entry(key) {
            dashmap::Entry::Occupied(entry) => entry.into_ref(),
            dashmap::Entry::Vacant(entry) => {
                self.len.fetch_add(1, Ordering::Relaxed);
                entry.insert(make())
            }
        }
    }

    /// Sets `key` to `value`; returns the value it replaces.
    pub fn insert(&self, key: K, value: V) -> Option<V> {
        let old = self.map.insert(key, value);
        if old.is_none() {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
        old
    }

    /// Removes `key`.
    pub fn remove<Q>(&self, key: &Q) -> Option<(K, V)>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let removed = self.map.remove(key);
        if removed.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        removed
    }

    /// Keeps the entries `keep` says to keep; returns how many were removed.
    pub fn retain(&self, mut keep: impl FnMut(&K, &mut V) -> bool) -> usize {
        let mut removed = 0;
        self.map.retain(|key, value| {
            let kept = keep(key, value);
            if !kept {
                removed += 1;
            }
            kept
        });
        self.len.fetch_sub(removed, Ordering::Relaxed);
        removed
    }

    /// The map itself, for reading (no insert or removal through it).
    pub fn read(&self) -> &Sharded<K, V> {
        &self.map
    }
}

/// Slots of a [`StripedCounter`]: threads beyond this many share slots.
pub const STRIPES: usize = 16;

/// A count that many threads add to at once: each thread adds to its own slot (a cache
/// line of its own), and [`StripedCounter::get`] adds the slots up.
#[derive(Debug, Default)]
pub struct StripedCounter {
    slots: [CachePadded<AtomicU64>; STRIPES],
}

impl StripedCounter {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        if let Some(slot) = self.slots.get(stripe()) {
            slot.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The sum of every addition so far (those of other threads at the moment of
    /// reading may or may not be in it).
    pub fn get(&self) -> u64 {
        self.slots.iter().fold(0u64, |sum, slot| {
            sum.wrapping_add(slot.load(Ordering::Relaxed))
        })
    }

    /// Sets the count back to zero (additions racing with it may survive).
    pub fn reset(&self) {
        for slot in &self.slots {
            slot.store(0, Ordering::Relaxed);
        }
    }
}

/// This thread's slot in every [`StripedCounter`]: threads take slots in turn.
fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|stripe| *stripe)
}

/// Replaced values kept until nobody else holds them.
#[derive(Debug, Default)]
pub struct Graveyard {
    buried: parking_lot::Mutex<Vec<Arc<dyn Any + Send + Sync>>>,
}

impl Graveyard {
    /// Keeps `value` until a [`Graveyard::sweep`] finds it unused.
    pub fn bury<T: Any + Send + Sync>(&self, value: Arc<T>) {
        self.buried.lock().push(value);
    }

    /// Drops, on the caller's thread, the values nobody else holds any more; returns
    /// how many.
    pub fn sweep(&self) -> usize {
        let unused: Vec<Arc<dyn Any + Send + Sync>> = {
            let mut buried = self.buried.lock();
            let (unused, used) = buried.drain(..).partition(|v| Arc::strong_count(v) == 1);
            *buried = used;
            unused
        };
        // Dropped here, with the lock released.
        unused.len()
    }

    /// Values kept.
    pub fn len(&self) -> usize {
        self.buried.lock().len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.buried.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_striped_counter_adds_up_every_threads_additions() {
        let counter = Arc::new(StripedCounter::default());
        let threads: Vec<_> = (0..(STRIPES + 3))
            .map(|_| {
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || {
                    for _ in 0..1_000 {
                        counter.add(2);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(counter.get(), 2 * 1_000 * (STRIPES as u64 + 3));
        counter.reset();
        assert_eq!(counter.get(), 0);
    }

    #[test]
    fn a_value_is_dropped_by_the_sweep_once_nobody_holds_it() {
        let graveyard = Graveyard::default();
        let value = Arc::new(vec![1u8; 1000]);
        let held = Arc::clone(&value);
        graveyard.bury(value);
        assert_eq!(graveyard.sweep(), 0);
        assert_eq!(graveyard.len(), 1);
        drop(held);
        assert_eq!(graveyard.sweep(), 1);
        assert!(graveyard.is_empty());
    }
}
