//! Online models counted on every event: co-view and co-purchase pair counts, and
//! popularity with time decay.
//!
//! Counting is cheap and concurrent (one `DashMap` entry per product, bounded; a product
//! whose pairs change is queued once). A rebuild (the server runs one per account every
//! second, on the ingest pool) sorts the lists of the queued products only
//! ([`CoCounts::changed_lists`]) into [`Neighbours`], in dense catalogue ids, written in
//! place one list at a time: serving reads finished lists and never waits for a rebuild.

//!
//! Files: `live.rs` (an account's models as it holds them: counters, popularity, pairs,
//! sessions, and what the round publishes), `keys.rs` (product ids as small numbers, also read by the dense index of the
//! catalogue base for the products a zone shows), `co_counts.rs` (the pair counts and
//! the lists a rebuild sorts), `partners.rs` (one product's pairs: the space-saving
//! update, counts by distance and direction, and a partner's counts as lists read them), `neighbours.rs` (the published lists, in dense ids),
//! `popularity.rs` (decaying counters and the most popular names), `sessions.rs` (recent
//! sessions and the products each held, for `similar_sessions`), `shadow.rs` (a blend's
//! ranking under other list settings, for self-tuning).

use crate::catalogue::UnixMillis;

mod co_counts;
mod keys;
pub(crate) mod live;
mod neighbours;
mod partners;
mod popularity;
mod sessions;
mod shadow;

pub use co_counts::{CoCounts, DirectedPairs, PairCount, PairsCopy};
pub use keys::{IndexedKeys, KeyedIdx, ProductKeys};
pub use neighbours::{Neighbour, Neighbours, ProductLists};
pub use popularity::{Decaying, TopNames, most_popular};
pub use sessions::{
    AsOf, ENTRIES_READ, NEIGHBOUR_SESSIONS, SAMPLED_SESSIONS, SESSION_ITEMS, SESSION_STEPS,
    SESSIONS_KEPT, SESSIONS_PER_PRODUCT, SessionIndex, SessionSetting, SessionsCopy, StoredSession,
};
pub use shadow::{ListSetting, Ranks, ShadowSeeds};

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
    /// ... and the co-purchase lists' seed damping ([`PURCHASE_SEED_DAMPING`] by
    /// default).
    pub purchase_seed_damping: f32,
    /// How far apart in a visitor's views two products pair in the co-view lists.
    pub co_view_window: CoViewWindow,
    /// The co-purchase lists as configured: how far back in a shopper's purchases an
    /// order's lines pair (1: the order's own lines; see
    /// [`EARLIER_PURCHASES_PAIRED`])...
    pub co_purchase_window: CoViewWindow,
    /// ... and their partner damping (as `partner_damping` is the co-view lists').
    pub purchase_partner_damping: f32,
    /// How much of a co-view pair's weight its direction decides, 0 to 1: at 0 a pair
    /// weighs what it was counted either way ("viewed together"), at 1 what was
    /// counted with the partner viewed after the product ("viewed next"), see
    /// [`CoCounts`]' `directed`.
    pub co_view_forward: f32,
    /// ... and of a co-purchase pair's (the partner bought after the product, or in
    /// the same order).
    pub co_purchase_forward: f32,
    /// Recent sessions kept for `similar_sessions` ([`SessionIndex`]; 0: none, and
    /// nothing is indexed on the request path).
    pub sessions: usize,
    /// How `similar_sessions`' neighbourhood is read as configured (self-tuning may
    /// choose another, [`crate::tuning::sessions`]).
    pub session_setting: SessionSetting,
    /// Self-tuning's trials a second at most ([`crate::tuning`]): the bound on its work.
    pub tuning_trials_per_second: u32,
}

/// How far apart in a visitor's views two product views pair in the co-view lists
/// (the one before weighing 1, the one before that ½, and so on). Every view is counted
/// with each of its [`CO_VIEW_WINDOW`] previous ones, by distance, so that the lists of
/// any window can be read from the same counts (self-tuning compares them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CoViewWindow {
    /// The view just before only: the next step of a visit.
    One,
    /// The 3 views before.
    Three,
    /// The [`CO_VIEW_WINDOW`] views before: what a visit is about.
    Ten,
}

impl CoViewWindow {
    /// Every window, shortest first.
    pub const ALL: [CoViewWindow; 3] = [CoViewWindow::One, CoViewWindow::Three, CoViewWindow::Ten];

    /// Views before that pair.
    pub fn steps(self) -> usize {
        match self {
            CoViewWindow::One => 1,
            CoViewWindow::Three => 3,
            CoViewWindow::Ten => CO_VIEW_WINDOW,
        }
    }

    /// The window of `steps` views, if it is one of [`CoViewWindow::ALL`].
    pub fn of_steps(steps: usize) -> Option<CoViewWindow> {
        CoViewWindow::ALL
            .into_iter()
            .find(|window| window.steps() == steps)
    }

    /// Which of a pair's counts by distance ([`Reach`]) the window reads: `None` for all
    /// of them.
    pub(crate) fn reach(self) -> Option<usize> {
        match self {
            CoViewWindow::One => Some(0),
            CoViewWindow::Three => Some(1),
            CoViewWindow::Ten => None,
        }
    }

    /// The count the window reads: the one of `reach` at its distance, else `whole`
    /// (the longest window's).
    pub(crate) fn read(self, reach: &Reach, whole: f32) -> f32 {
        match self.reach() {
            Some(at) => reach.get(at).copied().unwrap_or(0.0),
            None => whole,
        }
    }
}

/// A pair's weighted counts at distance 1, and at distance 3 at most (the shorter
/// [`CoViewWindow`]s); its whole count is the longest window's.
pub type Reach = [f32; 2];

/// The [`Reach`] of a pairing at `distance` (1 for the view just before) weighing
/// `weight`.
pub fn reach_of(distance: usize, weight: f32) -> Reach {
    [
        if distance <= 1 { weight } else { 0.0 },
        if distance <= 3 { weight } else { 0.0 },
    ]
}

/// [`ModelSettings::partner_damping`] by default (chosen by `vitrine-loadtest quality`,
/// see the README).
pub const PARTNER_DAMPING: f32 = 0.5;
/// [`ModelSettings::seed_damping`] by default.
pub const SEED_DAMPING: f32 = 0.5;
/// [`ModelSettings::purchase_seed_damping`] by default: a shopper's products blend
/// their co-purchase lists by their own weight, however often each was bought. On the
/// grocery orders of the Instacart sample, where the lists read at a seed damping of
/// 0.5 fall 4 to 9 % below 0 (`docs/quality.md`); purchases are sparse beside views,
/// and a product bought often is what the shopper's next basket is built around.
pub const PURCHASE_SEED_DAMPING: f32 = 0.0;

impl ModelSettings {
    /// These settings for the co-purchase lists as configured: read at their own
    /// window (by default 1, an order's own lines; self-tuning may widen it to the
    /// shopper's purchases before the order, see [`EARLIER_PURCHASES_PAIRED`]) and
    /// dampings.
    pub fn for_purchases(&self) -> ModelSettings {
        ModelSettings {
            co_view_window: self.co_purchase_window,
            partner_damping: self.purchase_partner_damping,
            seed_damping: self.purchase_seed_damping,
            co_view_forward: self.co_purchase_forward,
            ..*self
        }
    }
}

impl Default for ModelSettings {
    fn default() -> ModelSettings {
        ModelSettings {
            partners: MAX_PARTNERS,
            neighbours: NEIGHBOURS,
            partner_damping: PARTNER_DAMPING,
            seed_damping: SEED_DAMPING,
            purchase_seed_damping: PURCHASE_SEED_DAMPING,
            co_view_window: CoViewWindow::Ten,
            co_purchase_window: CoViewWindow::One,
            purchase_partner_damping: PARTNER_DAMPING,
            co_view_forward: 0.0,
            co_purchase_forward: 0.0,
            sessions: SESSIONS_KEPT,
            session_setting: SessionSetting {
                neighbours: NEIGHBOUR_SESSIONS,
                steps: SESSION_STEPS,
            },
            tuning_trials_per_second: TRIALS_PER_SECOND,
        }
    }
}
/// Self-tuning's trials scored per account and second at most by default
/// ([`ModelSettings::tuning_trials_per_second`], [`crate::tuning`]): the bound on its
/// work, a second's worth of them at once at most.
pub const TRIALS_PER_SECOND: u32 = 5;
/// A product view pairs with this many of the visitor's previous views.
pub const CO_VIEW_WINDOW: usize = 10;
/// Order lines paired with each other at most (the first ones of an order).
pub const MAX_ORDER_LINES_PAIRED: usize = 20;
/// The shopper's previous purchases (latest first, distinct) each line of an order also
/// pairs with in the co-purchase counts, the one before it at distance 2, the one
/// before that 3, and so on, each weighing 1/distance: a co-purchase window of 1 reads
/// the order's own lines, 3 the two purchases before it too, 10 all of these.
pub const EARLIER_PURCHASES_PAIRED: usize = 9;
/// Product ids outside the catalogue whose interactions are counted at most, beyond the
/// catalogue's own products (a product a delta may still bring, or an id made up by a
/// client): made-up ids cannot grow the counters and pair tables without bound.
pub const UNCATALOGUED_KEYS: usize = 100_000;
/// The key of a view that is not counted (see [`UNCATALOGUED_KEYS`]).
pub const NO_KEY: u32 = u32::MAX;
/// Half-life of the popularity behind `trending`: a view a day old counts half.
pub const TRENDING_HALF_LIFE_MILLIS: UnixMillis = 24 * 60 * 60 * 1000;

#[cfg(test)]
mod tests;
