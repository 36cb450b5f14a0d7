//! Filling a zone: its strategy's candidates, then each fallback's, through the filters
//! every recommender applies, with a search term's matches first; told to a [`Trace`].

use super::candidates::candidates;
use super::evidence::{Evidence, Fact, Pass};
use super::filters::admissible;
use super::{Context, NoTrace, RenderedItem, Trace, ZoneItems};
use crate::catalogue::ProductIdx;
use crate::zone::ZoneSpec;

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
            candidates(strategy, zone, ctx, T::FACTS, &mut |idx, found| {
                looked += 1;
                if !taken(&chosen, idx) && matches_search(idx, term, ctx) {
                    match admissible(idx, strategy, ctx) {
                        Ok(item) => {
                            trace.chosen(idx, strategy, Pass::Search, &|| {
                                searched(found(), idx, ctx)
                            });
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
        candidates(strategy, zone, ctx, T::FACTS, &mut |idx, found| {
            if taken(&chosen, idx) {
                return true;
            }
            match admissible(idx, strategy, ctx) {
                Ok(item) => {
                    trace.chosen(idx, strategy, Pass::Strategy, &|| {
                        searched(found(), idx, ctx)
                    });
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
