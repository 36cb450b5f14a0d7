//! A custom recommender's fill: candidates from its source (a strategy and its
//! fallbacks, or listed products, categories and brands), through the filters every
//! recommender applies and the campaign's own filters as they come, so that a filter
//! never leaves the zone short while eligible candidates remain; then boosts reorder,
//! and pins take their places.

use smallvec::SmallVec;

use crate::campaign::CampaignTrace;
use crate::campaign::content::{Candidate, Custom, Placement, Source, major};
use crate::catalogue::ProductIdx;
use crate::zone::Strategy;

use super::candidates::candidates;
use super::evidence::{Facts, Pass};
use super::filters::{admissible, admitted};
use super::{Context, Evidence, RenderedItem, ZoneItems, item_price};

/// Candidates gathered per item shown when boosts may reorder them.
const BOOST_POOL_FACTOR: usize = 4;
/// Candidates gathered at most when boosts may reorder them.
const MAX_BOOST_POOL: usize = 400;

/// A candidate that passed every filter.
struct Kept {
    item: RenderedItem,
    score: f64,
    /// The boosts it matched, one bit each (a campaign has at most 32).
    boosts: u32,
}

/// Fills a custom recommender for the request in `ctx`.
pub fn fill_custom<T: CampaignTrace>(
    custom: &Custom,
    ctx: &Context<'_>,
    trace: &mut T,
) -> ZoneItems {
    let count = custom.spec.count;
    let pool = if custom.boosts.is_empty() {
        count
    } else {
        count
            .saturating_mul(BOOST_POOL_FACTOR)
            .clamp(count, MAX_BOOST_POOL.max(count))
    };
    let catalogue = ctx.catalogue;
    let page = ctx.product.and_then(|idx| {
        let product = catalogue.product(idx)?;
        Some((product, item_price(idx, product, ctx).map(|p| major(&p))))
    });
    // The filters and boosts as this version judges them (worked out once per version).
    let interned = custom.interned(catalogue);
    // Item prices are in the request's currency: one scale for all.
    let scale = 10f64.powi(ctx.currency().minor_digits() as i32);
    let pinned: SmallVec<[ProductIdx; 4]> = custom
        .pins
        .iter()
        .filter_map(|pin| catalogue.idx_of(&pin.product))
        .collect();
    let mut kept: SmallVec<[Kept; 16]> = SmallVec::new();
    let mut seen = 0_usize;
    let mut consider = |idx: ProductIdx, strategy: Strategy, found: &dyn Fn() -> Evidence| {
        if pinned.contains(&idx) || kept.iter().any(|k| k.item.product == idx) {
            return kept.len() < pool;
        }
        seen += 1;
        let (item, product) = match admitted(idx, strategy, ctx) {
            Ok(admitted) => admitted,
            Err(why) => {
                trace.rejected(idx, strategy, why);
                return true;
            }
        };
        let candidate = Candidate {
            catalogue,
            product,
            price: item.price,
            amount: item.price.price.minor as f64 / scale,
            page,
        };
        if !interned.filters.passes(&candidate) {
            return true;
        }
        let mut score = 1.0 / seen as f64;
        let mut matched = 0_u32;
        for (at, (filter, factor)) in interned.boosts.iter().enumerate() {
            if filter.passes(&candidate) {
                score *= factor;
                matched |= 1_u32.checked_shl(at as u32).unwrap_or(0);
            }
        }
        trace.chosen(idx, strategy, Pass::Strategy, found);
        kept.push(Kept {
            item,
            score,
            boosts: matched,
        });
        kept.len() < pool
    };
    match &custom.source {
        Source::Strategy => {
            for strategy in crate::campaign::content::strategies(&custom.spec) {
                let mut more = true;
                candidates(strategy, &custom.spec, ctx, T::FACTS, &mut |idx, found| {
                    more = consider(idx, strategy, found);
                    more
                });
                if !more {
                    break;
                }
            }
        }
        Source::Manual {
            products,
            categories,
            brands,
        } => {
            let listed = || Evidence::default();
            let mut more = true;
            for idx in products.iter().filter_map(|id| catalogue.idx_of(id)) {
                more = consider(idx, Strategy::Associated, &listed);
                if !more {
                    break;
                }
            }
            for category in categories {
                if !more {
                    break;
                }
                for &idx in ctx.rankings.category_top(catalogue, category).iter() {
                    more = consider(idx, Strategy::CategoryTop, &listed);
                    if !more {
                        break;
                    }
                }
            }
            for brand in brands {
                if !more {
                    break;
                }
                let mut members = catalogue.of_brand(brand);
                members.sort_by_key(|idx| {
                    ctx.rankings
                        .trending_rank
                        .get(*idx as usize)
                        .copied()
                        .unwrap_or(u32::MAX)
                });
                for idx in members {
                    more = consider(idx, Strategy::Trending, &listed);
                    if !more {
                        break;
                    }
                }
            }
        }
    }
    if !custom.boosts.is_empty() {
        // Stable: equal scores keep the source's order.
        kept.sort_by(|a, b| b.score.total_cmp(&a.score));
    }
    kept.truncate(count);
    let mut items: ZoneItems = ZoneItems::with_capacity(count);
    for k in &kept {
        items.push(k.item);
        if T::FACTS == Facts::Kept {
            trace.placed(
                k.item.product,
                Placement::Sourced {
                    boosts: (0..32).filter(|at| k.boosts & (1 << at) != 0).collect(),
                    score: k.score,
                },
            );
        }
    }
    // Pins at their places, when eligible for this shopper (the filters every
    // recommender applies); a place past the end is the end.
    for pin in &custom.pins {
        let Some(idx) = catalogue.idx_of(&pin.product) else {
            continue;
        };
        match admissible(idx, Strategy::Associated, ctx) {
            Ok(item) => {
                if items.iter().any(|i| i.product == idx) {
                    continue;
                }
                let at = pin.place.saturating_sub(1).min(items.len());
                items.insert(at, item);
                trace.placed(idx, Placement::Pinned(pin.place));
            }
            Err(why) => trace.rejected(idx, Strategy::Associated, why),
        }
    }
    // Pins may push sourced items past the count: the last sourced ones go.
    while items.len() > count {
        let last_sourced = items
            .iter()
            .rposition(|i| !pinned.contains(&i.product))
            .unwrap_or(items.len() - 1);
        items.remove(last_sourced);
    }
    items
}
