//! Candidates per [`Strategy`], in preference order, each with the evidence behind it:
//! the one `match` over strategies that both serving and explaining go through.
//!
//! Each candidate is handed over with a [`Found`]: how to build its [`Evidence`] from
//! what the strategy used to find it (the rank it read, the pair weights it added up).
//! Serving never builds it; an explanation does, so the evidence is always the reason
//! the item was served, never a second computation of it.

use crate::catalogue::{ArchivedProduct, Catalogue, ProductIdx};
use crate::models::Neighbours;
use crate::zone::{Strategy, ZoneSpec};

use super::blend::{Blend, Pairs, anchor_seeds, basket_seeds, blended, personalized_seeds};
use super::evidence::{Evidence, Fact, Facts};
use super::{Context, Popular, anchor, item_price};

/// How a candidate's [`Evidence`] is built, when someone asks for it.
pub(super) type Found<'f> = &'f dyn Fn() -> Evidence;

/// What a strategy's candidates are handed to: `false` once it wants no more.
pub(super) type Take<'t> = dyn FnMut(ProductIdx, Found<'_>) -> bool + 't;

/// Calls `take` with candidates in preference order, each with its evidence, until it
/// returns `false`. `facts`: whether the caller may ask for evidence (blends then keep
/// each product's parts as they add them up).
pub(super) fn candidates(
    strategy: Strategy,
    zone: &ZoneSpec,
    ctx: &Context<'_>,
    facts: Facts,
    take: &mut Take<'_>,
) {
    let catalogue = ctx.catalogue;
    let popularity = |rank: usize, idx: ProductIdx| Fact::Popularity {
        rank: u32::try_from(rank).unwrap_or(u32::MAX),
        score: ctx.rankings.score_of(idx).map_or(0.0, |(key, _)| key),
    };
    match strategy {
        Strategy::Trending => {
            for (rank, &idx) in ctx.rankings.trending.iter().enumerate() {
                let found = || {
                    let fact = popularity(rank, idx);
                    let Fact::Popularity { score, .. } = fact else {
                        return Evidence::default();
                    };
                    Evidence::scored(score, vec![fact])
                };
                if !take(idx, &found) {
                    return;
                }
            }
        }
        Strategy::TopSellers => {
            for &idx in &ctx.rankings.top_sellers {
                let found = || {
                    let units = ctx.rankings.score_of(idx).map_or(0, |(_, units)| units);
                    Evidence::scored(units as f64, vec![Fact::UnitsSold(units)])
                };
                if !take(idx, &found) {
                    return;
                }
            }
        }
        Strategy::RecentlyViewed => {
            for (at, &idx) in ctx.recent_views.iter().enumerate() {
                if !take(idx, &|| Evidence::facts(vec![Fact::RecentlyViewed(at)])) {
                    return;
                }
            }
        }
        Strategy::BuyAgain => {
            for &(idx, orders) in ctx.bought_again {
                if !take(idx, &|| Evidence::facts(vec![Fact::BoughtBefore(orders)])) {
                    return;
                }
            }
        }
        Strategy::NewArrivals | Strategy::OnOffer => {
            for (rank, &idx) in ctx.rankings.trending.iter().enumerate() {
                let Some(product) = catalogue.product(idx) else {
                    continue;
                };
                let (wanted, fact) = if strategy == Strategy::NewArrivals {
                    (product.new_arrival, Fact::NewArrival)
                } else {
                    let on_offer = product.on_offer
                        || item_price(idx, product, ctx).is_some_and(|p| p.was.is_some());
                    (on_offer, Fact::OnOffer)
                };
                let found = || Evidence::facts(vec![fact.clone(), popularity(rank, idx)]);
                if wanted && !take(idx, &found) {
                    return;
                }
            }
        }
        Strategy::CategoryTop => {
            let category = ctx.category.or_else(|| {
                let product = catalogue.product(ctx.product?)?;
                catalogue.categories_of(product).next()
            });
            let Some(category) = category else { return };
            let members = ctx.rankings.category_top(catalogue, category);
            for &idx in members.iter() {
                let found = || {
                    let rank = ctx
                        .rankings
                        .trending_rank
                        .get(idx as usize)
                        .map_or(usize::MAX, |r| *r as usize);
                    Evidence::facts(vec![
                        Fact::TopInCategory(category.to_owned()),
                        popularity(rank, idx),
                    ])
                };
                if !take(idx, &found) {
                    return;
                }
            }
        }
        Strategy::Similar => {
            let Some(anchor) = anchor(ctx) else { return };
            similar_to(catalogue, &[anchor], &[], take);
        }
        // Category and brand zones are filled with names, not products (the config
        // keeps these strategies to those zones).
        Strategy::CategoryAffinity | Strategy::BrandAffinity => {}
        Strategy::ViewedTogether | Strategy::BoughtTogether => {
            let pairs = if strategy == Strategy::ViewedTogether {
                Pairs::Viewed(&ctx.neighbours.viewed_together)
            } else {
                Pairs::Bought(&ctx.neighbours.bought_together)
            };
            let seeds = anchor_seeds(zone, ctx);
            match seeds.as_slice() {
                [] => {}
                [(anchor, _)] => {
                    let listed = Neighbours::list(pairs.lists(), *anchor);
                    for &(idx, strength) in listed.iter().flat_map(|l| l.iter()) {
                        let found = || {
                            Evidence::scored(
                                f64::from(strength),
                                vec![pairs.fact(*anchor, strength, 1.0)],
                            )
                        };
                        if !take(idx, &found) {
                            return;
                        }
                    }
                }
                _ => {
                    let skip: Vec<ProductIdx> = seeds.iter().map(|(idx, _)| *idx).collect();
                    let blend = Blend {
                        lists: &[pairs],
                        skip: &skip,
                        content: zone.recipe.content,
                        sessions: (&[], 0.0),
                        popularity: (Popular::default(), 0.0),
                        facts,
                    };
                    take_blended(blended(seeds.iter().copied(), &blend, catalogue), take);
                }
            }
        }
        Strategy::SimilarSessions => {
            for &(idx, score) in ctx.similar_sessions {
                if ctx.recent_views.contains(&idx) {
                    continue;
                }
                let found = || {
                    Evidence::scored(
                        f64::from(score),
                        vec![Fact::InSimilarSessions {
                            score,
                            weight: f64::from(score),
                        }],
                    )
                };
                if !take(idx, &found) {
                    return;
                }
            }
        }
        Strategy::CompleteTheLook => {
            let Some(anchor) = anchor(ctx) else { return };
            let Some(product) = catalogue.product(anchor) else {
                return;
            };
            listed_by(catalogue, anchor, product, take);
        }
        Strategy::Personalized => {
            let viewed = ctx.recent_views;
            let popular = popular_part(zone, ctx);
            let blend = Blend {
                lists: &[
                    Pairs::Viewed(&ctx.neighbours.viewed_together),
                    Pairs::Bought(&ctx.neighbours.bought_together),
                ],
                skip: viewed,
                content: zone.recipe.content,
                sessions: (ctx.similar_sessions, zone.recipe.sessions),
                popularity: (popular, zone.recipe.popularity),
                facts,
            };
            let seeds = personalized_seeds(zone, ctx);
            if !take_blended(blended(seeds.into_iter(), &blend, catalogue), take) {
                return;
            }
            let latest: Vec<ProductIdx> = viewed.iter().take(3).copied().collect();
            similar_to(catalogue, &latest, viewed, take);
        }
        Strategy::BasketCrossSell => {
            let seeds = basket_seeds(ctx);
            let blend = Blend {
                lists: &[Pairs::Bought(&ctx.neighbours.bought_together)],
                skip: ctx.basket,
                content: zone.recipe.content,
                sessions: (&[], 0.0),
                popularity: (Popular::default(), 0.0),
                facts,
            };
            let weighted = seeds.iter().map(|idx| (*idx, 1.0));
            if !take_blended(blended(weighted, &blend, catalogue), take) {
                return;
            }
            for &seed in &seeds {
                let Some(product) = catalogue.product(seed) else {
                    continue;
                };
                if !listed_by(catalogue, seed, product, take) {
                    return;
                }
            }
        }
        Strategy::Associated => {
            let Some(anchor) = anchor(ctx) else { return };
            let Some(product) = catalogue.product(anchor) else {
                return;
            };
            let by_id = product.associated_ids.iter().map(|id| catalogue.idx_of(id));
            let by_sku = product
                .associated_skus
                .iter()
                .map(|sku| catalogue.idx_of_sku(sku));
            let found = || Evidence::facts(vec![Fact::ListedBy(anchor)]);
            for idx in by_id.chain(by_sku).flatten() {
                if !take(idx, &found) {
                    return;
                }
            }
        }
    }
}

/// The most popular products `personalized`'s popularity part reads, at most
/// [`POPULAR_BLENDED`](super::POPULAR_BLENDED), with their popularity; none
/// when its weight is 0.
fn popular_part<'c>(zone: &ZoneSpec, ctx: &Context<'c>) -> Popular<'c> {
    if zone.recipe.popularity <= 0.0 {
        return Popular::default();
    }
    ctx.rankings.popular()
}

/// Hands over a blend's products with the score each was ranked by and, when recorded,
/// the parts it was added up from; `false` once `take` wants no more.
fn take_blended(
    ranked: impl Iterator<Item = (ProductIdx, f64, Vec<Fact>)>,
    take: &mut Take<'_>,
) -> bool {
    for (idx, score, facts) in ranked {
        if !take(idx, &|| Evidence::scored(score, facts.clone())) {
            return false;
        }
    }
    true
}

/// Hands over the products of `seed`'s `RelatedProducts` (by SKU, or id for products
/// without one), each listed by it; `false` once `take` wants no more.
fn listed_by(
    catalogue: &Catalogue,
    seed: ProductIdx,
    product: &ArchivedProduct,
    take: &mut Take<'_>,
) -> bool {
    let found = || Evidence::facts(vec![Fact::ListedBy(seed)]);
    related(catalogue, product)
        .flatten()
        .all(|idx| take(idx, &found))
}

/// Hands over the precomputed content-similarity neighbours (shared categories, brand,
/// search tags) of each seed in turn, but those in `skip`; `false` once `take` wants no
/// more.
fn similar_to(
    catalogue: &Catalogue,
    seeds: &[ProductIdx],
    skip: &[ProductIdx],
    take: &mut Take<'_>,
) -> bool {
    for &seed in seeds {
        let found = || Evidence::facts(vec![Fact::SimilarTo(seed)]);
        for idx in catalogue.similar_to(seed) {
            if !skip.contains(&idx) && !take(idx, &found) {
                return false;
            }
        }
    }
    true
}

/// A product's `RelatedProducts`, by SKU (or id, for products without one).
fn related<'a>(
    catalogue: &'a Catalogue,
    product: &'a ArchivedProduct,
) -> impl Iterator<Item = Option<ProductIdx>> + 'a {
    product
        .related_products
        .iter()
        .map(|sku| catalogue.idx_of_sku(sku))
}
