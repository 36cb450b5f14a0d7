//! Recommenders: candidate generation per [`Strategy`], the filters every recommender
//! applies, fallback chains, and the price an item shows.

use std::sync::Arc;

use dashmap::DashMap;

use crate::catalogue::{ArchivedProduct, Catalogue, ProductIdx, UnixMillis};
use crate::models::{Neighbours, ProductLists};
use crate::money::{Currency, Money, saving_percent};
use crate::zone::{LONG_TERM_HISTORY, Strategy, ZoneSpec};

/// Popularity orderings of one catalogue version, rebuilt from the account's counters.
#[derive(Debug, Default)]
pub struct Rankings {
    /// Every product, most interacted-with first (ties in catalogue order).
    pub trending: Vec<ProductIdx>,
    /// Products with at least one ordered unit, most units first.
    pub top_sellers: Vec<ProductIdx>,
    /// Rank of each product in `trending`, indexed by dense id.
    pub trending_rank: Vec<u32>,
    /// Each product's trending key and units sold, indexed by dense id (see
    /// [`Rankings::build`]).
    scores: Vec<(f64, u64)>,
    /// Members of a category in trending order, sorted on first use (categories the
    /// catalogue has only; for the catalogue version the rankings were built from).
    category_tops: DashMap<String, Arc<[ProductIdx]>>,
}

impl Rankings {
    /// Orders a catalogue's products by trending key (greater first: a decayed score
    /// compared at one time, or a [`crate::models::Decaying::rank_key`], which orders
    /// the same at every time) and units sold.
    pub fn build(
        catalogue: &Catalogue,
        score: impl Fn(&ArchivedProduct) -> (f64, u64),
    ) -> Rankings {
        let bound = catalogue.idx_bound() as usize;
        let mut scores: Vec<(f64, u64)> = vec![(f64::NEG_INFINITY, 0); bound];
        let mut trending: Vec<ProductIdx> = Vec::with_capacity(catalogue.len());
        for (idx, product) in catalogue.iter() {
            if let Some(slot) = scores.get_mut(idx as usize) {
                *slot = score(product);
            }
            trending.push(idx);
        }
        let score_of = |idx: &ProductIdx| scores.get(*idx as usize).copied().unwrap_or_default();
        trending.sort_by(|a, b| score_of(b).0.total_cmp(&score_of(a).0).then(a.cmp(b)));
        let mut top_sellers: Vec<ProductIdx> = trending
            .iter()
            .copied()
            .filter(|i| score_of(i).1 > 0)
            .collect();
        top_sellers.sort_by(|a, b| score_of(b).1.cmp(&score_of(a).1).then(a.cmp(b)));
        Rankings::from_orders(trending, top_sellers, scores)
    }

    fn from_orders(
        trending: Vec<ProductIdx>,
        top_sellers: Vec<ProductIdx>,
        scores: Vec<(f64, u64)>,
    ) -> Rankings {
        let mut trending_rank = vec![u32::MAX; scores.len()];
        for (rank, idx) in trending.iter().enumerate() {
            if let Some(slot) = trending_rank.get_mut(*idx as usize) {
                *slot = rank as u32;
            }
        }
        Rankings {
            trending,
            top_sellers,
            trending_rank,
            scores,
            category_tops: DashMap::new(),
        }
    }

    /// A product's trending key and units sold (`None` for an index these rankings do
    /// not have).
    pub fn score_of(&self, idx: ProductIdx) -> Option<(f64, u64)> {
        self.scores.get(idx as usize).copied()
    }

    /// The members of `category` in `catalogue`, in trending order; kept for later
    /// requests when `catalogue` is the version these rankings were built from
    /// (`exact`) and the category has members.
    pub fn category_top(
        &self,
        catalogue: &Catalogue,
        category: &str,
        exact: bool,
    ) -> Arc<[ProductIdx]> {
        if exact && let Some(members) = self.category_tops.get(category) {
            return Arc::clone(&members);
        }
        let mut members = catalogue.in_category(category);
        members.sort_by_key(|idx| {
            self.trending_rank
                .get(*idx as usize)
                .copied()
                .unwrap_or(u32::MAX)
        });
        let members: Arc<[ProductIdx]> = members.into();
        if exact && !members.is_empty() {
            self.category_tops
                .insert(category.to_owned(), Arc::clone(&members));
        }
        members
    }

    /// The same orders with the products in `changed` (dense id, trending key, units)
    /// moved to their new places: the others keep their order, as decay scales every
    /// product alike. Linear in the products plus `changed` log `changed`, against a
    /// full sort's products log products; the result is what [`Rankings::build`] gives.
    pub fn update(&self, changed: &[(ProductIdx, f64, u64)]) -> Rankings {
        let mut scores = self.scores.clone();
        let mut moved = vec![false; scores.len()];
        let mut fresh: Vec<ProductIdx> = Vec::with_capacity(changed.len());
        for &(idx, key, units) in changed {
            let (Some(slot), Some(flag)) =
                (scores.get_mut(idx as usize), moved.get_mut(idx as usize))
            else {
                continue;
            };
            *slot = (key, units);
            if !*flag {
                *flag = true;
                fresh.push(idx);
            }
        }
        let score_of = |idx: &ProductIdx| scores.get(*idx as usize).copied().unwrap_or_default();
        let is_moved = |idx: &ProductIdx| moved.get(*idx as usize).copied().unwrap_or(false);
        let trending_order =
            |a: &ProductIdx, b: &ProductIdx| score_of(b).0.total_cmp(&score_of(a).0).then(a.cmp(b));
        let sellers_order =
            |a: &ProductIdx, b: &ProductIdx| score_of(b).1.cmp(&score_of(a).1).then(a.cmp(b));
        fresh.sort_by(trending_order);
        let kept = self.trending.iter().copied().filter(|i| !is_moved(i));
        let trending = merge(kept, &fresh, trending_order);
        let mut sellers: Vec<ProductIdx> = fresh
            .iter()
            .copied()
            .filter(|i| score_of(i).1 > 0)
            .collect();
        sellers.sort_by(sellers_order);
        let kept = self.top_sellers.iter().copied().filter(|i| !is_moved(i));
        let top_sellers = merge(kept, &sellers, sellers_order);
        Rankings::from_orders(trending, top_sellers, scores)
    }
}

/// Merges two lists sorted by `order` into one.
fn merge(
    kept: impl Iterator<Item = ProductIdx>,
    fresh: &[ProductIdx],
    order: impl Fn(&ProductIdx, &ProductIdx) -> std::cmp::Ordering,
) -> Vec<ProductIdx> {
    let mut out = Vec::with_capacity(fresh.len());
    let mut fresh = fresh.iter().copied().peekable();
    for idx in kept {
        while let Some(next) = fresh.next_if(|f| order(f, &idx).is_lt()) {
            out.push(next);
        }
        out.push(idx);
    }
    out.extend(fresh);
    out
}

/// Everything a recommender may consult for one request.
#[derive(Debug)]
pub struct Context<'a> {
    /// The catalogue version of the request.
    pub catalogue: &'a Catalogue,
    /// Rankings of that version.
    pub rankings: &'a Rankings,
    /// Whether `rankings` were built from this very version (not only the same base):
    /// then what they keep per category holds for it.
    pub rankings_exact: bool,
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
    /// Products viewed by the visitor (those in the catalogue), newest first.
    pub recent_views: &'a [ProductIdx],
    /// What the shopper searched for, lower-cased: products whose title or search tags
    /// contain it come first in every product zone of the page.
    pub search: Option<&'a str>,
}

/// The price an item shows, after account > group > product precedence and sale rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemPrice {
    /// Current price: the sale price when one applies.
    pub price: Money,
    /// The regular price, present only when a sale price applies.
    pub was: Option<Money>,
}

impl ItemPrice {
    /// Amount saved, when on sale.
    pub fn saving(&self) -> Option<Money> {
        self.was.map(|was| Money {
            minor: was.minor - self.price.minor,
            ..was
        })
    }

    /// `SavingPercent`, e.g. `"29%"`, when on sale.
    pub fn saving_percent(&self) -> Option<String> {
        self.was.map(|was| saving_percent(was, self.price))
    }
}

/// The price of a product for a visitor, or `None` when it has none in the currency.
pub fn item_price(
    idx: ProductIdx,
    product: &ArchivedProduct,
    ctx: &Context<'_>,
) -> Option<ItemPrice> {
    priced(idx, product, ctx).map(|(price, _)| price)
}

/// [`item_price`], and whether it is the product's own price in the currency (the same
/// for every visitor, so its rendering can be shared) rather than an account or group
/// price.
pub fn priced(
    idx: ProductIdx,
    product: &ArchivedProduct,
    ctx: &Context<'_>,
) -> Option<(ItemPrice, bool)> {
    let account_set = ctx
        .account_id
        .and_then(|acc| ctx.catalogue.account_prices(acc, &product.id));
    let group_set = ctx.group_id.and_then(|group| product.group_prices(group));
    let chosen = [account_set, group_set]
        .into_iter()
        .flatten()
        .find(|set| set.price_in(ctx.currency).is_some());
    let (regular, sale) = match chosen {
        Some(set) => (set.price_in(ctx.currency), set.sale_in(ctx.currency)),
        None => ctx.catalogue.own_prices(idx, ctx.currency),
    };
    Some((price_from(regular?, sale)?, chosen.is_none()))
}

fn price_from(regular: Money, sale: Option<Money>) -> Option<ItemPrice> {
    Some(match sale {
        Some(sale) if sale.minor < regular.minor => ItemPrice {
            price: sale,
            was: Some(regular),
        },
        _ => ItemPrice {
            price: regular,
            was: None,
        },
    })
}

/// Why a candidate was not shown: the filters of every recommender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Not in the catalogue version of the request.
    NotInCatalogue,
    /// `ExcludeFromRecommenders`.
    Excluded,
    /// Outside its `StartDate`..`EndDate` window.
    NotLive,
    /// B2B visibility: not for the visitor's account.
    NotVisible,
    /// The page's own product.
    PageProduct,
    /// Already in the visitor's basket.
    InBasket,
    /// Already bought by the visitor.
    Bought,
    /// No price in the request's currency (for this visitor).
    NoPrice,
}

impl Rejection {
    /// The reason in words.
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::NotInCatalogue => "not in the catalogue",
            Rejection::Excluded => "excluded from recommenders",
            Rejection::NotLive => "outside its start and end dates",
            Rejection::NotVisible => "not visible to the visitor's B2B account",
            Rejection::PageProduct => "the page's own product",
            Rejection::InBasket => "already in the basket",
            Rejection::Bought => "already bought",
            Rejection::NoPrice => "no price in the request's currency",
        }
    }
}

/// Whether a product may be shown to this visitor at all: the filters of every
/// recommender (currency, `ExcludeFromRecommenders`, date window, B2B visibility, not the
/// page's own product, not already in the basket or bought).
/// The item to show when it may be, with its price; else why not.
fn admissible(idx: ProductIdx, ctx: &Context<'_>) -> Result<RenderedItem, Rejection> {
    let product = ctx
        .catalogue
        .product(idx)
        .ok_or(Rejection::NotInCatalogue)?;
    let rejected = if product.exclude_from_recommenders {
        Some(Rejection::Excluded)
    } else if !product.is_live_at(ctx.now) {
        Some(Rejection::NotLive)
    } else if !product.visible_to(ctx.account_id) {
        Some(Rejection::NotVisible)
    } else if ctx.product == Some(idx) {
        Some(Rejection::PageProduct)
    } else if ctx.basket.contains(&idx) {
        Some(Rejection::InBasket)
    } else if ctx.purchased.contains(&idx) {
        Some(Rejection::Bought)
    } else {
        None
    };
    if let Some(rejection) = rejected {
        return Err(rejection);
    }
    let (price, shared_price) = priced(idx, product, ctx).ok_or(Rejection::NoPrice)?;
    Ok(RenderedItem {
        product: idx,
        price,
        shared_price,
    })
}

/// What filling a zone did with each candidate, for the explanation of a zone
/// ([`fill_zone_traced`]); serving uses [`NoTrace`], which compiles to nothing.
pub trait Trace {
    /// `idx` was shown, found by `strategy` (in the search pass when `search`).
    fn chosen(&mut self, _idx: ProductIdx, _strategy: Strategy, _search: bool) {}
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
    // At most 100 items: a scan of `chosen` beats hashing.
    let mut chosen = ZoneItems::with_capacity(zone.count);
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
            candidates(strategy, zone, ctx, &mut |idx| {
                looked += 1;
                if !taken(&chosen, idx) && matches_search(idx, term, ctx) {
                    match admissible(idx, ctx) {
                        Ok(item) => {
                            trace.chosen(idx, strategy, true);
                            chosen.push(item);
                        }
                        Err(why) => trace.rejected(idx, strategy, why),
                    }
                }
                chosen.len() < zone.count && looked < SEARCH_SCAN
            });
            if chosen.len() >= zone.count {
                return chosen;
            }
        }
    }
    for strategy in strategies() {
        if chosen.len() >= zone.count {
            break;
        }
        candidates(strategy, zone, ctx, &mut |idx| {
            if taken(&chosen, idx) {
                return true;
            }
            match admissible(idx, ctx) {
                Ok(item) => {
                    trace.chosen(idx, strategy, false);
                    chosen.push(item);
                }
                Err(why) => trace.rejected(idx, strategy, why),
            }
            chosen.len() < zone.count
        });
    }
    chosen
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
fn contains_lowercase(text: &str, term: &str) -> bool {
    if !text.is_ascii() {
        return text.to_lowercase().contains(term);
    }
    let (text, term) = (text.as_bytes(), term.as_bytes());
    term.is_empty()
        || text
            .windows(term.len())
            .any(|window| window.eq_ignore_ascii_case(term))
}

/// Calls `take` with candidates in preference order until it returns `false`.
fn candidates(
    strategy: Strategy,
    zone: &ZoneSpec,
    ctx: &Context<'_>,
    take: &mut dyn FnMut(ProductIdx) -> bool,
) {
    let catalogue = ctx.catalogue;
    let popular = || ctx.rankings.trending.iter().copied();
    match strategy {
        Strategy::Trending => {
            for idx in popular() {
                if !take(idx) {
                    return;
                }
            }
        }
        Strategy::TopSellers => {
            for &idx in &ctx.rankings.top_sellers {
                if !take(idx) {
                    return;
                }
            }
        }
        Strategy::RecentlyViewed => {
            take_all(ctx.recent_views.iter().map(|idx| Some(*idx)), take);
        }
        Strategy::NewArrivals | Strategy::OnOffer => {
            for idx in popular() {
                let Some(product) = catalogue.product(idx) else {
                    continue;
                };
                let wanted = if strategy == Strategy::NewArrivals {
                    product.new_arrival
                } else {
                    product.on_offer
                        || item_price(idx, product, ctx).is_some_and(|p| p.was.is_some())
                };
                if wanted && !take(idx) {
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
            let members = ctx
                .rankings
                .category_top(catalogue, category, ctx.rankings_exact);
            for &idx in members.iter() {
                if !take(idx) {
                    return;
                }
            }
        }
        Strategy::Similar => similar(ctx, take),
        // Category and brand zones are filled with names, not products (the config
        // keeps these strategies to those zones).
        Strategy::CategoryAffinity | Strategy::BrandAffinity => {}
        Strategy::ViewedTogether | Strategy::BoughtTogether => {
            let lists = if strategy == Strategy::ViewedTogether {
                &ctx.neighbours.viewed_together
            } else {
                &ctx.neighbours.bought_together
            };
            let seeds = anchor_seeds(zone, ctx);
            match seeds.as_slice() {
                [] => {}
                [(anchor, _)] => {
                    let listed = Neighbours::list(lists, *anchor);
                    take_all(
                        listed
                            .iter()
                            .flat_map(|l| l.iter())
                            .map(|(idx, _)| Some(*idx)),
                        take,
                    );
                }
                _ => {
                    let skip: Vec<ProductIdx> = seeds.iter().map(|(idx, _)| *idx).collect();
                    let ranked = blended(
                        seeds.iter().copied(),
                        &[lists],
                        &skip,
                        catalogue,
                        zone.content,
                    );
                    take_all(ranked.map(Some), take);
                }
            }
        }
        Strategy::CompleteTheLook => {
            let Some(anchor) = anchor(ctx).and_then(|a| catalogue.product(a)) else {
                return;
            };
            take_all(related(catalogue, anchor), take);
        }
        Strategy::Personalized => {
            let viewed = ctx.recent_views;
            let lists = [
                &ctx.neighbours.viewed_together,
                &ctx.neighbours.bought_together,
            ];
            let seeds = personalized_seeds(zone, ctx);
            let ranked = blended(seeds.into_iter(), &lists, viewed, catalogue, zone.content);
            if !take_all(ranked.map(Some), take) {
                return;
            }
            for seed in viewed.iter().take(3) {
                for idx in catalogue.similar_to(*seed) {
                    if !viewed.contains(&idx) && !take(idx) {
                        return;
                    }
                }
            }
        }
        Strategy::BasketCrossSell => {
            let seeds = basket_seeds(ctx);
            let ranked = blended(
                seeds.iter().map(|idx| (*idx, 1.0)),
                &[&ctx.neighbours.bought_together],
                ctx.basket,
                catalogue,
                zone.content,
            );
            if !take_all(ranked.map(Some), take) {
                return;
            }
            for idx in &seeds {
                let Some(product) = catalogue.product(*idx) else {
                    continue;
                };
                if !take_all(related(catalogue, product), take) {
                    return;
                }
            }
        }
        Strategy::Associated => {
            let Some(anchor) = anchor(ctx).and_then(|a| catalogue.product(a)) else {
                return;
            };
            let by_id = anchor.associated_ids.iter().map(|id| catalogue.idx_of(id));
            let by_sku = anchor
                .associated_skus
                .iter()
                .map(|sku| catalogue.idx_of_sku(sku));
            take_all(by_id.chain(by_sku), take);
        }
    }
}

/// A fact behind an item of a zone (see [`evidence`]).
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
}

/// Why `strategy` put `idx` in a zone: its score where the strategy has one (a blend's
/// sum, a pair's count, the popularity key, units sold) and the facts behind it (with
/// the search term it matches, on a search page).
pub fn evidence(
    strategy: Strategy,
    idx: ProductIdx,
    zone: &ZoneSpec,
    ctx: &Context<'_>,
) -> (Option<f64>, Vec<Fact>) {
    let (score, mut facts) = strategy_evidence(strategy, idx, zone, ctx);
    if let Some(term) = ctx.search.filter(|t| !t.is_empty())
        && matches_search(idx, term, ctx)
    {
        facts.push(Fact::MatchesSearch(term.to_owned()));
    }
    (score, facts)
}

fn strategy_evidence(
    strategy: Strategy,
    idx: ProductIdx,
    zone: &ZoneSpec,
    ctx: &Context<'_>,
) -> (Option<f64>, Vec<Fact>) {
    let catalogue = ctx.catalogue;
    let (key, units) = ctx.rankings.score_of(idx).unwrap_or((0.0, 0));
    let rank = ctx
        .rankings
        .trending_rank
        .get(idx as usize)
        .copied()
        .unwrap_or(u32::MAX);
    let popularity = Fact::Popularity { rank, score: key };
    let pair = |lists: &ProductLists, seed: ProductIdx| -> Option<f32> {
        Neighbours::list(lists, seed)?
            .iter()
            .find(|(other, _)| *other == idx)
            .map(|(_, strength)| *strength)
    };
    // A seed's strongest pair weight in `lists`, as [`blended`] scales its content part.
    let strongest = |lists: &[(&ProductLists, bool)], seed: ProductIdx| -> f64 {
        lists
            .iter()
            .filter_map(|(list, _)| Neighbours::list(list, seed))
            .flat_map(|l| {
                l.iter()
                    .map(|(_, strength)| f64::from(*strength))
                    .max_by(f64::total_cmp)
            })
            .fold(0.0, f64::max)
    };
    let blend = |seeds: &[(ProductIdx, f64)], lists: &[(&ProductLists, bool)]| {
        let mut facts = Vec::new();
        let mut score = 0.0;
        for (seed, weight) in seeds {
            for (list, viewed) in lists {
                if let Some(strength) = pair(list, *seed) {
                    score += weight * f64::from(strength);
                    facts.push(if *viewed {
                        Fact::ViewedWith {
                            with: *seed,
                            strength,
                            weight: *weight,
                        }
                    } else {
                        Fact::BoughtWith {
                            with: *seed,
                            strength,
                            weight: *weight,
                        }
                    });
                }
            }
        }
        // The content part after the pairs, in seed order, as [`blended`] adds them.
        if zone.content > 0.0 {
            let tops: Vec<f64> = seeds
                .iter()
                .map(|(seed, _)| strongest(lists, *seed))
                .collect();
            let overall = tops.iter().copied().fold(0.0, f64::max);
            for ((seed, weight), top) in seeds.iter().zip(tops) {
                let Some(place) = catalogue.similar_to(*seed).position(|i| i == idx) else {
                    continue;
                };
                score += content_part(zone.content, place) * weight * content_scale(top, overall);
                facts.push(Fact::SimilarTo(*seed));
            }
        }
        (score, facts)
    };
    let similar_to = |seeds: &[ProductIdx]| {
        seeds
            .iter()
            .find(|seed| catalogue.similar_to(**seed).any(|i| i == idx))
            .map(|seed| Fact::SimilarTo(*seed))
    };
    let listed_by = |anchor: Option<ProductIdx>| anchor.map(Fact::ListedBy).into_iter().collect();
    let facts = match strategy {
        Strategy::Trending => return (Some(key), vec![popularity]),
        Strategy::TopSellers => return (Some(units as f64), vec![Fact::UnitsSold(units)]),
        Strategy::RecentlyViewed => ctx
            .recent_views
            .iter()
            .position(|i| *i == idx)
            .map(Fact::RecentlyViewed)
            .into_iter()
            .collect(),
        Strategy::NewArrivals => vec![Fact::NewArrival, popularity],
        Strategy::OnOffer => vec![Fact::OnOffer, popularity],
        Strategy::CategoryTop => {
            let category = ctx.category.map(str::to_owned).or_else(|| {
                let product = catalogue.product(ctx.product?)?;
                catalogue.categories_of(product).next().map(str::to_owned)
            });
            category
                .map(Fact::TopInCategory)
                .into_iter()
                .chain([popularity])
                .collect()
        }
        Strategy::Similar => similar_to(&anchor(ctx).into_iter().collect::<Vec<_>>())
            .into_iter()
            .collect(),
        Strategy::ViewedTogether | Strategy::BoughtTogether => {
            let viewed = strategy == Strategy::ViewedTogether;
            let lists = if viewed {
                &ctx.neighbours.viewed_together
            } else {
                &ctx.neighbours.bought_together
            };
            let seeds = anchor_seeds(zone, ctx);
            let (score, facts) = blend(&seeds, &[(lists, viewed)]);
            return (Some(score), facts);
        }
        Strategy::CompleteTheLook | Strategy::Associated => listed_by(anchor(ctx)),
        Strategy::Personalized => {
            let seeds = personalized_seeds(zone, ctx);
            let lists = [
                (&ctx.neighbours.viewed_together, true),
                (&ctx.neighbours.bought_together, false),
            ];
            let (score, mut facts) = blend(&seeds, &lists);
            if facts.is_empty() {
                let latest: Vec<ProductIdx> = ctx.recent_views.iter().take(3).copied().collect();
                facts.extend(similar_to(&latest));
                return (None, facts);
            }
            return (Some(score), facts);
        }
        Strategy::BasketCrossSell => {
            let seeds: Vec<(ProductIdx, f64)> =
                basket_seeds(ctx).into_iter().map(|s| (s, 1.0)).collect();
            let (score, facts) = blend(&seeds, &[(&ctx.neighbours.bought_together, false)]);
            if facts.is_empty() {
                let listing = basket_seeds(ctx).into_iter().find(|seed| {
                    catalogue
                        .product(*seed)
                        .is_some_and(|p| related(catalogue, p).any(|i| i == Some(idx)))
                });
                return (None, listing.map(Fact::ListedBy).into_iter().collect());
            }
            return (Some(score), facts);
        }
        Strategy::CategoryAffinity | Strategy::BrandAffinity => Vec::new(),
    };
    (None, facts)
}

/// Seeds of a blend, inline up to 32.
pub type Seeds = smallvec::SmallVec<[(ProductIdx, f64); 32]>;

/// The products `personalized` starts from, with their weights: the latest views
/// (the latest 1, the one before `recency`, ... for the `history` latest, plus
/// `long_term / n` each for the latest `n` up to [`LONG_TERM_HISTORY`]), basket lines
/// (the same from the latest added) and purchases (half that from the latest bought).
pub fn personalized_seeds(zone: &ZoneSpec, ctx: &Context<'_>) -> Seeds {
    let mut seeds = Seeds::new();
    for_each_history_list(ctx, |latest_first, top| {
        let read = if zone.long_term > 0.0 {
            latest_first.len().min(LONG_TERM_HISTORY.max(zone.history))
        } else {
            latest_first.len().min(zone.history)
        };
        let long_term = zone.long_term / read.clamp(1, LONG_TERM_HISTORY) as f64;
        let mut recent = top;
        for (i, idx) in latest_first.take(read).enumerate() {
            let mut weight = 0.0;
            if i < zone.history {
                weight += recent;
                recent *= zone.recency;
            }
            if i < LONG_TERM_HISTORY {
                weight += top * long_term;
            }
            seeds.push((*idx, weight));
        }
    });
    seeds
}

/// The products `viewed_together` and `bought_together` start from: the page's product
/// (else the visitor's latest view) weighing 1, then the zone's `context` latest views,
/// as many basket lines (from the latest added) and purchases (from the latest bought,
/// at half weight), other than it, each `recency` times the one after it.
pub fn anchor_seeds(zone: &ZoneSpec, ctx: &Context<'_>) -> Seeds {
    let Some(anchor) = anchor(ctx) else {
        return Seeds::new();
    };
    let mut seeds = Seeds::new();
    seeds.push((anchor, 1.0));
    for_each_history_list(ctx, |latest_first, top| {
        let mut weight = top;
        for idx in latest_first
            .filter(|idx| **idx != anchor)
            .take(zone.context)
        {
            weight *= zone.recency;
            seeds.push((*idx, weight));
        }
    });
    seeds
}

/// Calls `read` with each list of the visitor's history, latest first, and the weight
/// its latest counts at: the views and the basket lines 1, the purchases 1/2.
fn for_each_history_list(
    ctx: &Context<'_>,
    mut read: impl FnMut(&mut dyn ExactSizeIterator<Item = &ProductIdx>, f64),
) {
    read(&mut ctx.recent_views.iter(), 1.0);
    read(&mut ctx.basket.iter().rev(), 1.0);
    read(&mut ctx.purchased.iter().rev(), 0.5);
}

/// The products `basket_cross_sell` starts from: the basket's, in id order, each once.
pub fn basket_seeds(ctx: &Context<'_>) -> Vec<ProductIdx> {
    let catalogue = ctx.catalogue;
    let mut seeds: Vec<ProductIdx> = ctx.basket.to_vec();
    seeds.sort_unstable_by(|a, b| id_of(catalogue, *a).cmp(id_of(catalogue, *b)));
    seeds.dedup();
    seeds
}

/// Candidates scored by neighbour lists of several seed products: each scores the sum,
/// over the seeds whose lists hold it, of the seed's weight times the pair's weight,
/// and with `content` above 0 the content part of each seed (see
/// [`ZoneSpec::content`]). Products in `skip` are left out; ties go to the smaller
/// product id. Ranked as they are taken: a zone takes its first few of a blend of
/// thousands, so only the next [`BLEND_STEP`] are sorted at a time.
fn blended<'c>(
    seeds: impl Iterator<Item = (ProductIdx, f64)>,
    lists: &[&ProductLists],
    skip: &[ProductIdx],
    catalogue: &'c Catalogue,
    content: f64,
) -> impl Iterator<Item = ProductIdx> + 'c {
    // Each product's parts are added in the order found (seeds in order, lists in
    // order), so the sums are the same whatever the order of products.
    let mut sums: rustc_hash::FxHashMap<ProductIdx, f64> = rustc_hash::FxHashMap::default();
    // With content: each seed, its weight and its strongest pair weight.
    let mut strongest: Vec<(ProductIdx, f64, f64)> = Vec::new();
    for (seed, weight) in seeds {
        let mut top = 0.0f64;
        for list in lists {
            let listed = Neighbours::list(list, seed);
            for (idx, strength) in listed.iter().flat_map(|l| l.iter()) {
                *sums.entry(*idx).or_default() += weight * f64::from(*strength);
                top = top.max(f64::from(*strength));
            }
        }
        if content > 0.0 {
            strongest.push((seed, weight, top));
        }
    }
    let overall = strongest.iter().map(|(.., top)| *top).fold(0.0, f64::max);
    for (seed, weight, top) in strongest {
        let scale = content_scale(top, overall);
        for (place, idx) in catalogue.similar_to(seed).enumerate() {
            *sums.entry(idx).or_default() += content_part(content, place) * weight * scale;
        }
    }
    let ranked: Vec<(ProductIdx, f64)> = sums
        .into_iter()
        .filter(|(idx, _)| !skip.contains(idx))
        .collect();
    let order = move |a: &(ProductIdx, f64), b: &(ProductIdx, f64)| {
        b.1.total_cmp(&a.1)
            .then_with(|| id_of(catalogue, a.0).cmp(id_of(catalogue, b.0)))
    };
    sorted_lazily(ranked, order, BLEND_STEP).map(|(idx, _)| idx)
}

/// `items` in `order`, sorting only the next `step` items (at least 1) whenever the
/// sorted ones run out: the first few of many cost a selection, not a sort.
fn sorted_lazily<T: Copy>(
    mut items: Vec<T>,
    order: impl Fn(&T, &T) -> std::cmp::Ordering,
    step: usize,
) -> impl Iterator<Item = T> {
    // `items[..sorted]` is in order; `items[next..sorted]` not yet given.
    let (mut next, mut sorted) = (0, 0);
    std::iter::from_fn(move || {
        if next == sorted {
            let rest = items.get_mut(sorted..)?;
            let step = step.max(1).min(rest.len());
            if step == 0 {
                return None;
            }
            if step < rest.len() {
                rest.select_nth_unstable_by(step - 1, &order);
            }
            rest.get_mut(..step)?.sort_unstable_by(&order);
            sorted += step;
        }
        let item = items.get(next).copied();
        next += 1;
        item
    })
}

/// What the product at `place` (from 0) of a seed's `similar` list adds to a blend, per
/// unit of the seed's weight and strongest pair weight (see [`ZoneSpec::content`]).
fn content_part(content: f64, place: usize) -> f64 {
    content / (place as f64 + 1.0)
}

/// The pair weight a seed's content part is scaled by: the seed's strongest (`top`),
/// else the strongest of all the blend's seeds (`overall`), else 1.
fn content_scale(top: f64, overall: f64) -> f64 {
    if top > 0.0 {
        top
    } else if overall > 0.0 {
        overall
    } else {
        1.0
    }
}

/// Candidates of a blend sorted at a time (see [`blended`]).
const BLEND_STEP: usize = 32;

/// A product's id, empty for an index the catalogue does not have.
fn id_of(catalogue: &Catalogue, idx: ProductIdx) -> &str {
    catalogue.product(idx).map_or("", |p| p.id.as_str())
}

/// Calls `take` with each product found, in order; `false` once `take` wants no more.
fn take_all(
    found: impl IntoIterator<Item = Option<ProductIdx>>,
    take: &mut dyn FnMut(ProductIdx) -> bool,
) -> bool {
    found.into_iter().flatten().all(take)
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

/// The product recommendations are about: the page's product, else the visitor's latest
/// view.
fn anchor(ctx: &Context<'_>) -> Option<ProductIdx> {
    ctx.product.or_else(|| ctx.recent_views.first().copied())
}

/// The precomputed content-similarity neighbours (shared categories, brand, search tags)
/// of the context product, or of the visitor's latest view.
fn similar(ctx: &Context<'_>, take: &mut dyn FnMut(ProductIdx) -> bool) {
    let catalogue = ctx.catalogue;
    let Some(anchor) = anchor(ctx) else { return };
    for idx in catalogue.similar_to(anchor) {
        if !take(idx) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_terms_match_ignoring_case_with_and_without_ascii() {
        assert!(contains_lowercase("Red HAT", "hat"));
        assert!(!contains_lowercase("Red cap", "hat"));
        assert!(contains_lowercase("Écharpe", "écharpe"));
        assert!(!contains_lowercase("Red", "é"));
        assert!(contains_lowercase("anything", ""));
    }
    use crate::catalogue::{CatalogueBuilder, GroupPrice, PriceSet, Product, Visibility};
    use crate::testing::money;
    use crate::zone::ZoneKind;

    /// Products a..h, each with one filter-relevant trait, trending in id order.
    fn catalogue() -> Catalogue {
        let gbp = |p: i64| PriceSet {
            prices: vec![money(p, "GBP")],
            sale_prices: vec![],
        };
        let base = |id: &str| Product {
            id: id.into(),
            prices: gbp(1000),
            categories: vec!["c".into()],
            ..Product::default()
        };
        let mut b = CatalogueBuilder::new();
        b.upsert_product(base("a"));
        b.upsert_product(Product {
            prices: PriceSet {
                prices: vec![money(500, "USD")],
                sale_prices: vec![],
            },
            ..base("usd-only")
        });
        b.upsert_product(Product {
            exclude_from_recommenders: true,
            ..base("excluded")
        });
        b.upsert_product(Product {
            available_until: Some(10),
            ..base("ended")
        });
        b.upsert_product(Product {
            available_from: Some(i64::MAX),
            ..base("future")
        });
        b.upsert_product(Product {
            visibility: Visibility::OnlyAccounts(vec!["acme".into()]),
            ..base("b2b-only")
        });
        b.upsert_product(Product {
            visibility: Visibility::ExceptAccounts(vec!["acme".into()]),
            ..base("not-acme")
        });
        b.upsert_product(base("in-basket"));
        b.upsert_product(base("bought"));
        b.upsert_product(Product {
            prices: PriceSet {
                prices: vec![money(1000, "GBP")],
                sale_prices: vec![money(700, "GBP")],
            },
            ..base("on-sale")
        });
        b.upsert_product(base("page"));
        b.build().unwrap()
    }

    /// A request in GBP on no page, with no visitor history.
    fn context<'a>(
        catalogue: &'a Catalogue,
        rankings: &'a Rankings,
        neighbours: &'a Neighbours,
    ) -> Context<'a> {
        Context {
            catalogue,
            rankings,
            rankings_exact: true,
            neighbours,
            currency: Currency::from_code("GBP").unwrap(),
            now: 1_000,
            account_id: None,
            group_id: None,
            product: None,
            category: None,
            basket: &[],
            purchased: &[],
            recent_views: &[],
            search: None,
        }
    }

    /// A zone of `strategy` with the default settings.
    fn zone_of(strategy: Strategy) -> ZoneSpec {
        ZoneSpec {
            id: "z".into(),
            title: "t".into(),
            kind: ZoneKind::RecommenderProduct,
            strategy: Some(strategy),
            fallback: vec![],
            count: 20,
            page_types: vec![],
            history: crate::zone::DEFAULT_HISTORY,
            recency: crate::zone::DEFAULT_RECENCY,
            long_term: crate::zone::DEFAULT_LONG_TERM,
            context: 0,
            content: 0.0,
        }
    }

    fn ids(catalogue: &Catalogue, account: Option<&str>, currency: &str) -> Vec<String> {
        let rankings = Rankings::build(catalogue, |_| (0.0, 0));
        let neighbours = Neighbours::default();
        let ctx = Context {
            currency: Currency::from_code(currency).unwrap(),
            account_id: account,
            product: catalogue.idx_of("page"),
            basket: &[catalogue.idx_of("in-basket").unwrap()],
            purchased: &[catalogue.idx_of("bought").unwrap()],
            ..context(catalogue, &rankings, &neighbours)
        };
        let zone = zone_of(Strategy::Trending);
        fill_zone(&zone, &ctx)
            .into_iter()
            .map(|i| catalogue.product(i.product).unwrap().id.to_string())
            .collect()
    }

    #[test]
    fn personalized_seeds_weigh_recent_steps_by_recency_and_share_the_long_term_weight() {
        let catalogue = catalogue();
        let rankings = Rankings::build(&catalogue, |_| (0.0, 0));
        let neighbours = Neighbours::default();
        let views: Vec<ProductIdx> = (0..60).collect();
        let purchased: Vec<ProductIdx> = vec![7, 8];
        let ctx = Context {
            purchased: &purchased,
            recent_views: &views,
            ..context(&catalogue, &rankings, &neighbours)
        };
        let mut zone = ZoneSpec {
            history: 3,
            recency: 0.5,
            long_term: 0.0,
            ..zone_of(Strategy::Personalized)
        };
        let close = |a: &Seeds, b: &[(ProductIdx, f64)]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.0 == y.0 && (x.1 - y.1).abs() < 1e-12)
        };
        // Without the long-term part: the latest 3 views 1, 1/2, 1/4; the purchases
        // half that from the latest bought.
        let seeds = personalized_seeds(&zone, &ctx);
        let expected = [(0, 1.0), (1, 0.5), (2, 0.25), (8, 0.5), (7, 0.25)];
        assert!(close(&seeds, &expected), "{seeds:?}");
        // With it: the latest 50 views share 5 (0.1 each) on top; the 2 purchases
        // share half of it.
        zone.long_term = 5.0;
        let seeds = personalized_seeds(&zone, &ctx);
        assert_eq!(seeds.len(), 50 + 2);
        assert!((seeds[0].1 - 1.1).abs() < 1e-12, "{seeds:?}");
        assert!((seeds[2].1 - 0.35).abs() < 1e-12, "{seeds:?}");
        assert!((seeds[49].1 - 0.1).abs() < 1e-12, "{seeds:?}");
        assert_eq!(seeds[49].0, 49);
        assert!((seeds[50].1 - (0.5 + 1.25)).abs() < 1e-12, "{seeds:?}");
        assert!((seeds[51].1 - (0.25 + 1.25)).abs() < 1e-12, "{seeds:?}");
        let total: f64 = seeds.iter().map(|s| s.1).sum();
        assert!((total - (1.75 + 5.0 + 0.75 + 2.5)).abs() < 1e-9, "{total}");
    }

    #[test]
    fn a_lazy_sort_gives_what_a_full_sort_gives() {
        // Pseudo-random values with many ties, sorted by value, then index.
        let items: Vec<(u32, u32)> = (0..200u32).map(|i| (i * 7919 % 13, i)).collect();
        let order = |a: &(u32, u32), b: &(u32, u32)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        let mut full = items.clone();
        full.sort_by(order);
        for step in [0, 1, 3, 32, 199, 200, 500] {
            let lazy: Vec<(u32, u32)> = sorted_lazily(items.clone(), order, step).collect();
            assert_eq!(lazy, full, "step {step}");
        }
        let first: Vec<(u32, u32)> = sorted_lazily(items, order, 32).take(5).collect();
        assert_eq!(first, full[..5]);
        assert_eq!(sorted_lazily(Vec::<u32>::new(), u32::cmp, 4).next(), None);
    }

    #[test]
    fn every_recommender_filter_applies() {
        let catalogue = catalogue();
        assert_eq!(ids(&catalogue, None, "GBP"), ["a", "not-acme", "on-sale"]);
        assert_eq!(
            ids(&catalogue, Some("acme"), "GBP"),
            ["a", "b2b-only", "on-sale"]
        );
        assert_eq!(ids(&catalogue, None, "USD"), ["usd-only"]);
    }

    #[test]
    fn prices_prefer_account_then_group_then_product_and_show_sales() {
        let mut b = CatalogueBuilder::new();
        b.upsert_product(Product {
            id: "p".into(),
            prices: PriceSet {
                prices: vec![money(1000, "GBP")],
                sale_prices: vec![money(800, "GBP")],
            },
            group_prices: vec![GroupPrice {
                group: "trade".into(),
                prices: PriceSet {
                    prices: vec![money(900, "GBP")],
                    sale_prices: vec![],
                },
            }],
            ..Product::default()
        });
        b.set_account_prices(
            "acme",
            "p",
            PriceSet {
                prices: vec![money(700, "GBP")],
                sale_prices: vec![],
            },
        );
        let catalogue = b.build().unwrap();
        let rankings = Rankings::default();
        let neighbours = Neighbours::default();
        let price = |account: Option<&str>, group: Option<&str>| {
            let ctx = Context {
                catalogue: &catalogue,
                rankings: &rankings,
                rankings_exact: true,
                neighbours: &neighbours,
                currency: Currency::from_code("GBP").unwrap(),
                now: 0,
                account_id: account,
                group_id: group,
                product: None,
                category: None,
                basket: &[],
                purchased: &[],
                recent_views: &[],
                search: None,
            };
            item_price(0, catalogue.product(0).unwrap(), &ctx).unwrap()
        };
        assert_eq!(
            price(None, None),
            ItemPrice {
                price: money(800, "GBP"),
                was: Some(money(1000, "GBP"))
            }
        );
        assert_eq!(price(None, None).saving_percent().as_deref(), Some("20%"));
        assert_eq!(
            price(None, Some("trade")),
            ItemPrice {
                price: money(900, "GBP"),
                was: None
            }
        );
        assert_eq!(
            price(Some("acme"), Some("trade")),
            ItemPrice {
                price: money(700, "GBP"),
                was: None
            }
        );
        assert_eq!(price(Some("other"), None).price, money(800, "GBP"));
    }

    /// Moving changed products gives the orders a full build gives, round after round,
    /// with ties, zero scores, products never sold and repeated changes.
    #[test]
    fn an_update_orders_as_a_full_build() {
        let catalogue = crate::testing::catalogue(
            (0..300).map(|i| crate::testing::product(&format!("p{i:03}"))),
        );
        let mut scores: Vec<(f64, u64)> = vec![(f64::NEG_INFINITY, 0); 300];
        let score_of = |scores: &[(f64, u64)], p: &ArchivedProduct| {
            let i: usize = p.id.as_str()[1..].parse().unwrap();
            scores[i]
        };
        let mut rankings = Rankings::build(&catalogue, |p| score_of(&scores, p));
        let mut sequence = crate::demo::Sequence::new(7);
        let mut next = move |n: u64| sequence.next_u64() % n;
        for _ in 0..50 {
            let mut changed = Vec::new();
            for _ in 0..next(20) {
                let i = next(300) as usize;
                // Few distinct keys, so ties are common.
                let key = if next(4) == 0 {
                    f64::NEG_INFINITY
                } else {
                    next(6) as f64
                };
                scores[i] = (key, next(3));
                let idx = catalogue.idx_of(&format!("p{i:03}")).unwrap();
                changed.push((idx, scores[i].0, scores[i].1));
            }
            rankings = rankings.update(&changed);
            let full = Rankings::build(&catalogue, |p| score_of(&scores, p));
            assert_eq!(rankings.trending, full.trending);
            assert_eq!(rankings.top_sellers, full.top_sellers);
            assert_eq!(rankings.trending_rank, full.trending_rank);
        }
    }

    /// A category's order is kept only for the version the rankings were built from,
    /// and only for categories with members.
    #[test]
    fn category_tops_are_kept_for_the_ranked_version_only() {
        let catalogue = crate::testing::catalogue((0..5).map(|i| Product {
            categories: vec!["c".into()],
            ..crate::testing::product(&format!("p{i}"))
        }));
        let rankings = Rankings::build(&catalogue, |p| {
            let i: f64 = p.id.as_str()[1..].parse().unwrap();
            (i, 0)
        });
        let top = rankings.category_top(&catalogue, "c", false);
        assert_eq!(top.len(), 5);
        assert_eq!(catalogue.product(top[0]).unwrap().id.as_str(), "p4");
        assert!(rankings.category_tops.is_empty());
        assert_eq!(rankings.category_top(&catalogue, "c", true), top);
        assert!(rankings.category_top(&catalogue, "none", true).is_empty());
        assert_eq!(rankings.category_tops.len(), 1);
    }
}
