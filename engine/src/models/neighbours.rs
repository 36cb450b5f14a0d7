//! The published neighbour lists, in dense ids of one catalogue version: what serving
//! reads.

use std::sync::Arc;

use crate::catalogue::{Catalogue, ProductIdx};
use crate::shards::IntMap;

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

    /// The lists of `products` only, as they are now: a copy of each list's handle,
    /// which a rebuild (updating the lists in place) leaves as it was. What a trial
    /// scored later reads, so that it sees the lists its request was served from.
    pub fn lists_of(&self, products: impl IntoIterator<Item = ProductIdx>) -> Neighbours {
        let copy = Neighbours {
            catalogue: self.catalogue.clone(),
            ..Neighbours::default()
        };
        // A product listed twice copies the same handle twice.
        for idx in products {
            if let Some(list) = Neighbours::list(&self.viewed_together, idx) {
                copy.viewed_together.insert(idx, list);
            }
            if let Some(list) = Neighbours::list(&self.bought_together, idx) {
                copy.bought_together.insert(idx, list);
            }
        }
        copy
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
