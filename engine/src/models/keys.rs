//! Product ids as small numbers for the pair counts.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use arc_swap::ArcSwap;

use crate::catalogue::{BaseHandle, Catalogue, ProductIdx};
use crate::shards::{Sharded, sharded};

/// Product ids as small numbers for the pair counts: a key is handed out on first sight
/// and stays the same for the life of the process (unlike dense catalogue indexes, which
/// a new base renumbers), so counting compares integers, not strings.
#[derive(Debug)]
pub struct ProductKeys {
    pub(super) keys: Sharded<Arc<str>, u32>,
    pub(super) names: RwLock<Vec<Arc<str>>>,
    /// The keys of one catalogue base's products by dense index, as they are looked up.
    by_idx: ArcSwap<KeysByIdx>,
    /// The other way: one catalogue base's dense indexes by key, as they are looked up.
    idx_by_key: ArcSwap<IdxByKey>,
}

/// Dense indexes of one catalogue base by key, each found once by id (a hash of the
/// string and its comparison) and read by key after that: what the model rounds look
/// up for every product of every list they sort.
#[derive(Debug, Default)]
struct IdxByKey {
    /// The base the indexes are of (`None`: none yet).
    base: Option<BaseHandle>,
    /// Each key's index plus 1; 0 while it has not been looked up (or the key's
    /// product had no index when it was).
    idx: Box<[AtomicU32]>,
}

/// Keys by the dense indexes of one catalogue base: an index names the same product
/// id in every version of a base (an added product takes a new index, a deleted one's
/// is not reused), so a key found once for an index holds for the base's life.
#[derive(Debug, Default)]
struct KeysByIdx {
    /// The base the indexes are of (`None`: none yet).
    base: Option<BaseHandle>,
    /// Each index's key plus 1; 0 while it has not been looked up.
    keys: Box<[AtomicU32]>,
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

    /// The keys of `catalogue`'s products by dense index, loaded once for a request's
    /// lookups ([`IndexedKeys::key`]). The first request on a new base indexes it; the
    /// bound grows with the next base (products added since look their ids up).
    pub fn indexed(&self, catalogue: &Catalogue) -> IndexedKeys<'_> {
        let by_idx = self.by_idx.load_full();
        let by_idx = if by_idx
            .base
            .as_ref()
            .is_some_and(|base| catalogue.has_base(base))
        {
            by_idx
        } else {
            let fresh = Arc::new(KeysByIdx {
                base: Some(catalogue.base_handle()),
                keys: (0..catalogue.idx_bound())
                    .map(|_| AtomicU32::new(0))
                    .collect(),
            });
            self.by_idx.store(Arc::clone(&fresh));
            fresh
        };
        IndexedKeys { keys: self, by_idx }
    }

    /// The dense indexes of `catalogue`'s products, looked up by key (see
    /// [`KeyedIdx::idx`]). Kept from one call to the next while the catalogue's base
    /// stays and no key was handed out since (else made anew, keeping what was found
    /// in the same base).
    pub fn idx_by_key(&self, catalogue: &Catalogue) -> KeyedIdx {
        let known = self.idx_by_key.load_full();
        let keys = self
            .names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        let same_base = known
            .base
            .as_ref()
            .is_some_and(|base| catalogue.has_base(base));
        if same_base && known.idx.len() >= keys {
            return KeyedIdx { by_key: known };
        }
        let kept = |key: usize| match known.idx.get(key) {
            Some(idx) if same_base => idx.load(Ordering::Relaxed),
            _ => 0,
        };
        let fresh = Arc::new(IdxByKey {
            base: Some(catalogue.base_handle()),
            idx: (0..keys).map(|key| AtomicU32::new(kept(key))).collect(),
        });
        self.idx_by_key.store(Arc::clone(&fresh));
        KeyedIdx { by_key: fresh }
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

/// One catalogue base's dense indexes by key (see [`ProductKeys::idx_by_key`]).
#[derive(Debug)]
pub struct KeyedIdx {
    by_key: Arc<IdxByKey>,
}

impl KeyedIdx {
    /// The dense index in `catalogue` (a version of the base this was made for) of the
    /// product whose key is `key` and id `name`, as [`Catalogue::idx_of`] gives it.
    /// An index names the same id in every version of a base, so one found once is read
    /// by key after that; a product deleted since has none, and one added again takes
    /// a new index, looked up by id again.
    pub fn idx(&self, catalogue: &Catalogue, key: u32, name: &str) -> Option<ProductIdx> {
        let slot = self.by_key.idx.get(key as usize);
        if let Some(known) = slot.map(|slot| slot.load(Ordering::Relaxed))
            && let Some(idx) = known.checked_sub(1)
            && catalogue.product(idx).is_some()
        {
            return Some(idx);
        }
        let idx = catalogue.idx_of(name)?;
        if let (Some(slot), Some(stored)) = (slot, idx.checked_add(1)) {
            slot.store(stored, Ordering::Relaxed);
        }
        Some(idx)
    }
}

/// [`ProductKeys`] read by the dense indexes of one catalogue base (see
/// [`ProductKeys::indexed`]).
#[derive(Debug)]
pub struct IndexedKeys<'a> {
    keys: &'a ProductKeys,
    by_idx: Arc<KeysByIdx>,
}

impl IndexedKeys<'_> {
    /// The key of the product at `idx`, whose id is `id`, handed out now if it has none.
    /// After the first time it is read by index, without hashing the id: what every
    /// shown product costs zone analytics.
    pub fn key(&self, idx: ProductIdx, id: &str) -> u32 {
        let Some(slot) = self.by_idx.keys.get(idx as usize) else {
            return self.keys.key(id);
        };
        match slot.load(Ordering::Relaxed) {
            0 => {
                let key = self.keys.key(id);
                if let Some(stored) = key.checked_add(1) {
                    slot.store(stored, Ordering::Relaxed);
                }
                key
            }
            stored => stored - 1,
        }
    }
}

impl Default for ProductKeys {
    fn default() -> ProductKeys {
        ProductKeys {
            keys: sharded(),
            names: RwLock::default(),
            by_idx: ArcSwap::default(),
            idx_by_key: ArcSwap::default(),
        }
    }
}
