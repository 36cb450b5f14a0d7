//! Recommenders: candidate generation per [`Strategy`] with the evidence behind each
//! candidate, the filters every recommender applies, fallback chains, and the price an
//! item shows.
//!
//! Files: `rankings.rs` (popularity orderings), `price.rs` (an item's price),
//! `filters.rs` (what may be shown), `candidates.rs` (the one `match` over strategies),
//! `blend.rs` (seeds and blends), `evidence.rs` (why an item was chosen), `custom.rs` (a
//! campaign's custom recommender: its source through its filters, boosts and pins),
//! `fill.rs` (filling a zone: each strategy's candidates through the filters; an
//! explanation is the same fill with a [`Trace`] that keeps the evidence). This file
//! holds what they share: the request's [`Context`], the [`Trace`] and a filled zone's
//! items.

use crate::catalogue::{Catalogue, OwnPrices, ProductIdx, UnixMillis};
use crate::models::Neighbours;
use crate::money::Currency;
use crate::zone::Strategy;

mod blend;
mod candidates;
mod custom;
mod evidence;
mod fill;
mod filters;
mod price;
mod rankings;

pub(crate) use blend::{HistoryWeights, history_weights};
pub use custom::fill_custom;
pub use evidence::{Evidence, Fact, Facts, Pass};
pub use filters::Rejection;
pub use price::{ItemPrice, item_price, priced, shared_price};
pub use rankings::{POPULAR_BLENDED, Popular, PopularProduct, Rankings};

pub use fill::{SEARCH_SCAN, fill_zone, fill_zone_traced};
pub(crate) use fill::{contains_lowercase, fill_zone_upto};

/// Everything a recommender may consult for one request.
#[derive(Debug)]
pub struct Context<'a> {
    /// The catalogue version of the request.
    pub catalogue: &'a Catalogue,
    /// Rankings of that version.
    pub rankings: &'a Rankings,
    /// Co-view and co-purchase neighbour lists.
    pub neighbours: &'a Neighbours,
    /// The catalogue's own prices in the request's currency (else the account
    /// default's): [`Context::currency`].
    pub prices: OwnPrices<'a>,
    /// Time of the request.
    pub now: UnixMillis,
    /// The visitor's B2B account id.
    pub account_id: Option<&'a str>,
    /// The visitor's user group.
    pub group_id: Option<&'a str>,
    /// The product of the page, from page_view or product_view.
    pub product: Option<ProductIdx>,
    /// The category of the page.
    pub category: Option<&'a str>,
    /// Products in the basket (those in the catalogue), in basket order.
    pub basket: &'a [ProductIdx],
    /// Products bought by the visitor (those in the catalogue).
    pub purchased: &'a [ProductIdx],
    /// Products bought by the visitor (those in the catalogue) in `buy_again`'s order,
    /// with the orders each was in; empty unless a `buy_again` zone was asked for.
    pub bought_again: &'a [(ProductIdx, u32)],
    /// Products viewed by the visitor (those in the catalogue), newest first.
    pub recent_views: &'a [ProductIdx],
    /// Products of the sessions most like what the shopper viewed last, with their
    /// scores, the highest first; empty unless a zone reads them
    /// ([`ZoneSpec::reads_sessions`](crate::zone::ZoneSpec::reads_sessions)).
    pub similar_sessions: &'a [(ProductIdx, f32)],
    /// What the shopper searched for, lower-cased: products whose title or search tags
    /// contain it come first in every product zone of the page.
    pub search: Option<&'a str>,
}

impl Context<'_> {
    /// The request's currency (else the account default).
    pub fn currency(&self) -> Currency {
        self.prices.currency()
    }
}

/// What filling a zone did with each candidate, for the explanation of a zone
/// ([`fill_zone_traced`]); serving uses [`NoTrace`], which compiles to nothing.
pub trait Trace {
    /// Whether [`Trace::chosen`] reads the evidence: strategies then keep the facts of
    /// what they add up (serving's [`NoTrace`] does not, so they are never built).
    const FACTS: Facts = Facts::Dropped;
    /// `idx` was shown, found by `strategy` in the `pass` of the fill, for the
    /// reasons `evidence` builds (the strategy's own record, with the search term when
    /// the item matches it).
    fn chosen(
        &mut self,
        _idx: ProductIdx,
        _strategy: Strategy,
        _pass: Pass,
        _evidence: &dyn Fn() -> Evidence,
    ) {
    }
    /// `idx`, found by `strategy`, was filtered out.
    fn rejected(&mut self, _idx: ProductIdx, _strategy: Strategy, _why: Rejection) {}
}

/// No tracing: what serving fills zones with.
#[derive(Debug)]
pub struct NoTrace;

impl Trace for NoTrace {}

/// One product of a filled zone with the price it shows.
#[derive(Debug, Clone, Copy)]
pub struct RenderedItem {
    /// Dense id in the request's catalogue.
    pub product: ProductIdx,
    /// The price for this visitor.
    pub price: ItemPrice,
    /// Whether `price` is the product's own price in the request's currency, the same
    /// for every visitor (not an account or group price).
    pub shared_price: bool,
}

/// A zone's items, on the heap: one allocation of the zone's count, and a zone passed
/// from the fill through the cache to the answer moves three words, not its items.
pub type ZoneItems = Vec<RenderedItem>;

/// The product recommendations are about: the page's product, else the visitor's latest
/// view.
fn anchor(ctx: &Context<'_>) -> Option<ProductIdx> {
    ctx.product.or_else(|| ctx.recent_views.first().copied())
}

#[cfg(test)]
mod tests;
