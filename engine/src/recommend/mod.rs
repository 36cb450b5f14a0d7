//! Recommenders: candidate generation per [`Strategy`] with the evidence behind each
//! candidate, the filters every recommender applies, fallback chains, and the price an
//! item shows.
//!
//! Files: `rankings.rs` (popularity orderings), `price.rs` (an item's price),
//! `filters.rs` (what may be shown), `candidates.rs` (the one `match` over strategies),
//! `blend.rs` (seeds and blends), `evidence.rs` (why an item was chosen), `custom.rs` (a
//! campaign's custom recommender: its source through its filters, boosts and pins). Filling a zone
//! (here) takes each strategy's candidates through the filters; an explanation is the
//! same fill with a [`Trace`] that keeps the evidence.

use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::models::Neighbours;
use crate::money::Currency;
use crate::zone::{Strategy, ZoneSpec};

mod blend;
mod candidates;
mod custom;
mod evidence;
mod filters;
mod price;
mod rankings;

pub(crate) use blend::history_weights;
pub use custom::fill_custom;
pub use evidence::{Evidence, Fact};
pub use filters::Rejection;
pub use price::{ItemPrice, item_price, priced};
pub use rankings::{POPULAR_BLENDED, Popular, PopularProduct, Rankings};

use candidates::candidates;
use filters::admissible;

/// Everything a recommender may consult for one request.
#[derive(Debug)]
pub struct Context<'a> {
    /// The catalogue version of the request.
    pub catalogue: &'a Catalogue,
    /// Rankings of that version.
    pub rankings: &'a Rankings,
    /// Co-view and co-purchase neighbour lists.
    pub neighbours: &'a Neighbours,
    /// Currency of the request (else the account default).
    pub currency: Currency,
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

/// What filling a zone did with each candidate, for the explanation of a zone
/// ([`fill_zone_traced`]); serving uses [`NoTrace`], which compiles to nothing.
pub trait Trace {
    /// Whether [`Trace::chosen`] reads the evidence: strategies then record what they
    /// add up (serving's [`NoTrace`] does not, so it is never built).
    const EVIDENCE: bool = false;
    /// `idx` was shown, found by `strategy` (in the search pass when `search`), for the
    /// reasons `evidence` builds (the strategy's own record, with the search term when
    /// the item matches it).
    fn chosen(
        &mut self,
        _idx: ProductIdx,
        _strategy: Strategy,
        _search: bool,
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

/// A zone's items: up to [`INLINE_ITEMS`] without a heap allocation.
pub type ZoneItems = smallvec::SmallVec<[RenderedItem; INLINE_ITEMS]>;

/// Items of a zone kept inline (most zones show 4 to 12).
pub const INLINE_ITEMS: usize = 12;

/// Fills a zone: its strategy, then each fallback, de-duplicated, up to `count` items,
/// each with the price it shows.
pub fn fill_zone(zone: &ZoneSpec, ctx: &Context<'_>) -> ZoneItems {
    fill_zone_traced(zone, ctx, &mut NoTrace)
}

/// [`fill_zone`], telling `trace` what became of each candidate.
pub fn fill_zone_traced<T: Trace>(zone: &ZoneSpec, ctx: &Context<'_>, trace: &mut T) -> ZoneItems {
    fill_zone_upto(zone, ctx, zone.count, trace)
}

/// [`fill_zone_traced`] up to `count` items instead of the zone's own count (the zone
/// cache fills a few more, so that a visitor's basket and purchases can be taken out).
pub(crate) fn fill_zone_upto<T: Trace>(
    zone: &ZoneSpec,
    ctx: &Context<'_>,
    count: usize,
    trace: &mut T,
) -> ZoneItems {
    // At most 100 items: a scan of `chosen` beats hashing.
    let mut chosen = ZoneItems::with_capacity(count);
    let taken = |chosen: &[RenderedItem], idx: ProductIdx| chosen.iter().any(|c| c.product == idx);
    let strategies = || {
        zone.strategy
            .into_iter()
            .chain(zone.fallback.iter().copied())
    };
    if let Some(term) = ctx.search.filter(|t| !t.is_empty()) {
        // The search pass: each strategy's candidates that match the term, looking at
        // a bounded number of candidates so that a rare term costs little.
        for strategy in strategies() {
            let mut looked = 0;
            candidates(strategy, zone, ctx, T::EVIDENCE, &mut |idx, found| {
                looked += 1;
                if !taken(&chosen, idx) && matches_search(idx, term, ctx) {
                    match admissible(idx, strategy, ctx) {
                        Ok(item) => {
                            trace.chosen(idx, strategy, true, &|| searched(found(), idx, ctx));
                            chosen.push(item);
                        }
                        Err(why) => trace.rejected(idx, strategy, why),
                    }
                }
                chosen.len() < count && looked < SEARCH_SCAN
            });
            if chosen.len() >= count {
                return chosen;
            }
        }
    }
    for strategy in strategies() {
        if chosen.len() >= count {
            break;
        }
        candidates(strategy, zone, ctx, T::EVIDENCE, &mut |idx, found| {
            if taken(&chosen, idx) {
                return true;
            }
            match admissible(idx, strategy, ctx) {
                Ok(item) => {
                    trace.chosen(idx, strategy, false, &|| searched(found(), idx, ctx));
                    chosen.push(item);
                }
                Err(why) => trace.rejected(idx, strategy, why),
            }
            chosen.len() < count
        });
    }
    chosen
}

/// `evidence`, with the page's search term when `idx` matches it.
fn searched(mut evidence: Evidence, idx: ProductIdx, ctx: &Context<'_>) -> Evidence {
    if let Some(term) = ctx.search.filter(|t| !t.is_empty())
        && matches_search(idx, term, ctx)
    {
        evidence.facts.push(Fact::MatchesSearch(term.to_owned()));
    }
    evidence
}

/// Candidates examined per strategy for a search term's first pass.
pub const SEARCH_SCAN: usize = 2_000;

/// Whether a product's title or one of its search tags contains `term` (lower-case),
/// ignoring case.
fn matches_search(idx: ProductIdx, term: &str, ctx: &Context<'_>) -> bool {
    let Some(product) = ctx.catalogue.product(idx) else {
        return false;
    };
    contains_lowercase(product.title.as_str(), term)
        || product
            .search_tags
            .iter()
            .any(|t| contains_lowercase(t.as_str(), term))
}

/// Whether `text` contains `term` (lower-case) ignoring case; without allocating when
/// `text` is ASCII, which product titles and tags mostly are.
pub(crate) fn contains_lowercase(text: &str, term: &str) -> bool {
    if !text.is_ascii() {
        return text.to_lowercase().contains(term);
    }
    let (text, term) = (text.as_bytes(), term.as_bytes());
    term.is_empty()
        || text
            .windows(term.len())
            .any(|window| window.eq_ignore_ascii_case(term))
}

/// The product recommendations are about: the page's product, else the visitor's latest
/// view.
fn anchor(ctx: &Context<'_>) -> Option<ProductIdx> {
    ctx.product.or_else(|| ctx.recent_views.first().copied())
}

#[cfg(test)]
mod tests;
