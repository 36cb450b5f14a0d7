//! Product ids as small numbers for the pair counts.

use std::sync::{Arc, PoisonError, RwLock};

use dashmap::DashMap;

use crate::shards::sharded;

/// Product ids as small numbers for the pair counts: a key is handed out on first sight
/// and stays the same for the life of the process (unlike dense catalogue indexes, which
/// a new base renumbers), so counting compares integers, not strings.
#[derive(Debug)]
pub struct ProductKeys {
    pub(super) keys: DashMap<Arc<str>, u32>,
    pub(super) names: RwLock<Vec<Arc<str>>>,
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

impl Default for ProductKeys {
    fn default() -> ProductKeys {
        ProductKeys {
            keys: sharded(),
            names: RwLock::default(),
        }
    }
}
