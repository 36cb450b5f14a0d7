//! The evidence behind an item of a zone: the score its strategy ranked it by and the
//! facts it found it from, recorded by the strategy (`candidates.rs`) as it hands the item over.

use crate::catalogue::ProductIdx;

/// Why a strategy put an item in a zone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// The score the strategy ranked it by, where it has one (a blend's sum, a pair's
    /// weight, the popularity key, units sold).
    pub score: Option<f64>,
    /// The facts behind it.
    pub facts: Vec<Fact>,
}

impl Evidence {
    /// Facts with the score they add up to.
    pub(super) fn scored(score: f64, facts: Vec<Fact>) -> Evidence {
        Evidence {
            score: Some(score),
            facts,
        }
    }

    /// Facts without a score (an order the strategy does not score).
    pub(super) fn facts(facts: Vec<Fact>) -> Evidence {
        Evidence { score: None, facts }
    }
}

/// Which pass of a fill found a product: the search pass (the products matching the
/// shopper's search, first in every product zone of the page) or the strategy's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The search pass.
    Search,
    /// The strategy's own.
    Strategy,
}

/// Whether a fill keeps the facts each product was found by ([`super::Trace::FACTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Facts {
    /// Kept, for an explanation.
    Kept,
    /// Not built (serving).
    Dropped,
}

/// A fact behind an item of a zone.
#[derive(Debug, Clone, PartialEq)]
pub enum Fact {
    /// Its place in `trending` (0 the most popular) and its decayed popularity key.
    Popularity {
        /// 0-based rank.
        rank: u32,
        /// The trending key.
        score: f64,
    },
    /// Units sold.
    UnitsSold(u64),
    /// Viewed together with `with`.
    ViewedWith {
        /// The other product.
        with: ProductIdx,
        /// The pair's weight in `with`'s list: its co-view count (weighted by how close
        /// the views were), damped by the products' totals ([`crate::models::ModelSettings`]).
        strength: f32,
        /// The weight of `with` as a seed of a blend (1 for a single anchor).
        weight: f64,
    },
    /// Bought together with `with`.
    BoughtWith {
        /// The other product.
        with: ProductIdx,
        /// The pair's weight in `with`'s list: its co-purchase count, damped by the
        /// products' totals.
        strength: f32,
        /// The weight of `with` as a seed of a blend (1 for a single anchor).
        weight: f64,
    },
    /// Its place among the visitor's recent views (0 the latest).
    RecentlyViewed(usize),
    /// Bought by the visitor before, in this many orders.
    BoughtBefore(u32),
    /// Shares categories, brand or search tags with this product.
    SimilarTo(ProductIdx),
    /// Among the most popular of this category.
    TopInCategory(String),
    /// Listed by this product (`RelatedProducts`, `AssociatedIds`/`AssociatedSkus`).
    ListedBy(ProductIdx),
    /// Flagged `NewArrival`.
    NewArrival,
    /// On offer (`OnOffer`, or a sale price).
    OnOffer,
    /// Its title or search tags contain the search term.
    MatchesSearch(String),
    /// In the sessions most like what the shopper viewed last, their similarities summing
    /// to `score`.
    InSimilarSessions {
        /// The summed similarity.
        score: f32,
        /// What it added to a blend (`sessions` times the blend's best score times its
        /// share of the best session score); its whole score outside a blend.
        weight: f64,
    },
}
