//! Seeds and blends: the products `personalized`, `viewed_together`/`bought_together`
//! (with `context`) and `basket_cross_sell` start from, with their weights, and the
//! blend that ranks the products their neighbour lists (and, with `content`, their
//! similar lists) hold.

use rustc_hash::FxHashMap;

use crate::catalogue::{Catalogue, ProductIdx};
use crate::models::{Neighbours, ProductLists};
use crate::zone::{CONTEXT_PURCHASES, LONG_TERM_HISTORY, ZoneRecipe, ZoneSpec};

use super::evidence::{Fact, Facts};
use super::rankings::{POPULAR_BLENDED, Popular};
use super::{Context, anchor};

/// Seeds of a blend, inline up to 32.
pub(super) type Seeds = smallvec::SmallVec<[(ProductIdx, f64); 32]>;

/// The products `personalized` starts from, with their weights: the latest views
/// (the latest 1, the one before `recency`, ... for the `history` latest, plus
/// `long_term / n` each for the latest `n` up to [`LONG_TERM_HISTORY`]), basket lines
/// (the same from the latest added) and purchases (`purchases` times that from the
/// latest bought).
pub(super) fn personalized_seeds(zone: &ZoneSpec, ctx: &Context<'_>) -> Seeds {
    let mut seeds = Seeds::new();
    for_each_history_list(ctx, zone.recipe.purchases, |latest_first, top| {
        let weights = history_weights(HistoryWeights::of(&zone.recipe), latest_first.len(), top);
        seeds.extend(
            latest_first
                .zip(weights)
                .map(|(idx, weight)| (*idx, weight)),
        );
    });
    seeds
}

/// How `personalized` weighs a history list (see [`ZoneSpec::history`],
/// [`ZoneSpec::recency`], [`ZoneSpec::long_term`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HistoryWeights {
    /// The latest entries weighed one after another.
    pub(crate) history: usize,
    /// Each of those weighs this times the one after it.
    pub(crate) recency: f64,
    /// What the latest [`LONG_TERM_HISTORY`] share on top.
    pub(crate) long_term: f64,
}

impl HistoryWeights {
    /// A zone's, from its `recipe`.
    pub(crate) fn of(recipe: &ZoneRecipe) -> HistoryWeights {
        HistoryWeights {
            history: recipe.history,
            recency: recipe.recency,
            long_term: recipe.long_term,
        }
    }
}

/// The weights `personalized` gives the entries of a history list of `len`, latest
/// first: the latest `history` weigh `top`, `top · recency`, …, and the latest
/// [`LONG_TERM_HISTORY`] share `top · long_term` on top; entries beyond both are not
/// read (the iterator ends).
pub(crate) fn history_weights(
    HistoryWeights {
        history,
        recency,
        long_term,
    }: HistoryWeights,
    len: usize,
    top: f64,
) -> impl Iterator<Item = f64> {
    let read = if long_term > 0.0 {
        len.min(LONG_TERM_HISTORY.max(history))
    } else {
        len.min(history)
    };
    let share = long_term / read.clamp(1, LONG_TERM_HISTORY) as f64;
    let mut recent = top;
    (0..read).map(move |i| {
        let mut weight = 0.0;
        if i < history {
            weight += recent;
            recent *= recency;
        }
        if i < LONG_TERM_HISTORY {
            weight += top * share;
        }
        weight
    })
}

/// The products `viewed_together` and `bought_together` start from: the page's product
/// (else the visitor's latest view) weighing 1, then the zone's `context` latest views,
/// as many basket lines (from the latest added) and purchases (from the latest bought,
/// at half weight), other than it, each `recency` times the one after it.
pub(super) fn anchor_seeds(zone: &ZoneSpec, ctx: &Context<'_>) -> Seeds {
    let Some(anchor) = anchor(ctx) else {
        return Seeds::new();
    };
    let mut seeds = Seeds::new();
    seeds.push((anchor, 1.0));
    for_each_history_list(ctx, CONTEXT_PURCHASES, |latest_first, top| {
        let mut weight = top;
        for idx in latest_first
            .filter(|idx| **idx != anchor)
            .take(zone.recipe.context)
        {
            weight *= zone.recipe.recency;
            seeds.push((*idx, weight));
        }
    });
    seeds
}

/// Calls `read` with each list of the visitor's history, latest first, and the weight
/// its latest counts at: the views and the basket lines 1, the purchases `purchases`
/// (none when 0).
fn for_each_history_list(
    ctx: &Context<'_>,
    purchases: f64,
    mut read: impl FnMut(&mut dyn ExactSizeIterator<Item = &ProductIdx>, f64),
) {
    read(&mut ctx.recent_views.iter(), 1.0);
    read(&mut ctx.basket.iter().rev(), 1.0);
    if purchases > 0.0 {
        read(&mut ctx.purchased.iter().rev(), purchases);
    }
}

/// The products `basket_cross_sell` starts from: the basket's, in id order, each once.
pub(super) fn basket_seeds(ctx: &Context<'_>) -> Vec<ProductIdx> {
    let catalogue = ctx.catalogue;
    let mut seeds: Vec<ProductIdx> = ctx.basket.to_vec();
    seeds.sort_unstable_by(|a, b| id_of(catalogue, *a).cmp(id_of(catalogue, *b)));
    seeds.dedup();
    seeds
}

/// Which pairs a blend reads: a product's co-view list or its co-purchase list.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pairs<'a> {
    /// Viewed together.
    Viewed(&'a ProductLists),
    /// Bought together.
    Bought(&'a ProductLists),
}

impl<'a> Pairs<'a> {
    /// The lists.
    pub(super) fn lists(self) -> &'a ProductLists {
        match self {
            Pairs::Viewed(lists) | Pairs::Bought(lists) => lists,
        }
    }

    /// The fact that a product is in `seed`'s list at `strength`, the seed weighing
    /// `weight`.
    pub(super) fn fact(self, seed: ProductIdx, strength: f32, weight: f64) -> Fact {
        match self {
            Pairs::Viewed(_) => Fact::ViewedWith {
                with: seed,
                strength,
                weight,
            },
            Pairs::Bought(_) => Fact::BoughtWith {
                with: seed,
                strength,
                weight,
            },
        }
    }
}

/// How a blend adds up its candidates.
#[derive(Debug)]
pub(super) struct Blend<'a> {
    /// The lists read, in order.
    pub(super) lists: &'a [Pairs<'a>],
    /// Products left out.
    pub(super) skip: &'a [ProductIdx],
    /// The zone's `content` (see [`ZoneSpec::content`]).
    pub(super) content: f64,
    /// The products of the sessions most like the shopper's, and the zone's `sessions`
    /// weight on them (see [`ZoneSpec::sessions`]).
    pub(super) sessions: (&'a [(ProductIdx, f32)], f64),
    /// The account's most popular products, and the zone's `popularity` weight on
    /// them (see [`ZoneSpec::popularity`]).
    pub(super) popularity: (Popular<'a>, f64),
    /// Whether each product keeps the parts it was added up from, as facts.
    pub(super) facts: Facts,
}

/// Candidates scored by neighbour lists of several seed products: each scores the sum,
/// over the seeds whose lists hold it, of the seed's weight times the pair's weight,
/// and with `content` above 0 the content part of each seed (see
/// [`ZoneSpec::content`]), and with `sessions` and `popularity` above 0 the session
/// and popularity parts (see [`ZoneSpec::sessions`], [`ZoneSpec::popularity`]).
/// Products in `skip` are left out; ties go to the smaller product id. Ranked as they
/// are taken: a zone takes its first few of a blend of thousands, so only the next
/// [`BLEND_STEP`] are sorted at a time, and the popular products no other part scored
/// are not added up but merged in, in their own order, as far as they are taken. Each
/// comes with its score and, when the blend records, the parts of it as facts (pairs
/// in seed order, then content parts in seed order, then the session and popularity
/// parts).
pub(super) fn blended<'c>(
    seeds: impl Iterator<Item = (ProductIdx, f64)>,
    blend: &Blend<'c>,
    catalogue: &'c Catalogue,
) -> impl Iterator<Item = (ProductIdx, f64, Vec<Fact>)> + 'c {
    let mut sums = Sums::default();
    // With content: each seed, its weight and its strongest pair weight.
    let mut strongest: Vec<(ProductIdx, f64, f64)> = Vec::new();
    for (seed, weight) in seeds {
        let mut top = 0.0f64;
        for pairs in blend.lists {
            let listed = Neighbours::list(pairs.lists(), seed);
            for (idx, strength) in listed.iter().flat_map(|l| l.iter()) {
                *sums.scores.entry(*idx).or_default() += weight * f64::from(*strength);
                top = top.max(f64::from(*strength));
                if blend.facts == Facts::Kept {
                    let fact = pairs.fact(seed, *strength, weight);
                    sums.parts.entry(*idx).or_default().push(fact);
                }
            }
        }
        if blend.content > 0.0 {
            strongest.push((seed, weight, top));
        }
    }
    let overall = strongest.iter().map(|(.., top)| *top).fold(0.0, f64::max);
    for (seed, weight, top) in strongest {
        let scale = content_scale(top, overall);
        for (place, idx) in catalogue.similar_to(seed).enumerate() {
            *sums.scores.entry(idx).or_default() +=
                content_part(blend.content, place) * weight * scale;
            if blend.facts == Facts::Kept {
                sums.parts
                    .entry(idx)
                    .or_default()
                    .push(Fact::SimilarTo(seed));
            }
        }
    }
    // The session and popularity parts are scaled to the pairs' best score, so that a
    // weight means the same on every store (1 when no pair scored); that scan of the
    // candidates only when either part is blended.
    let blends_parts = (blend.sessions.1 > 0.0 && !blend.sessions.0.is_empty())
        || (blend.popularity.1 > 0.0 && !blend.popularity.0.list().is_empty());
    let peak = if blends_parts {
        sums.scores.values().copied().fold(0.0, f64::max)
    } else {
        0.0
    };
    let peak = if peak > 0.0 { peak } else { 1.0 };
    let (similar, weight) = blend.sessions;
    add_scaled(
        similar,
        weight * peak,
        &mut sums,
        blend.facts,
        |score, part| Fact::InSimilarSessions {
            score,
            weight: part,
        },
    );
    // The popularity part: added to the products the other parts scored; the others
    // it scores are merged in below.
    let (popular, weight) = blend.popularity;
    let scale = if weight > 0.0 { weight * peak } else { 0.0 };
    let scored_too = add_popularity(popular, scale, &mut sums, blend.facts);
    let Sums { scores, mut parts } = sums;
    let ranked: Vec<(ProductIdx, f64)> = scores
        .into_iter()
        .filter(|(idx, _)| !blend.skip.contains(idx))
        .collect();
    let order = move |a: &(ProductIdx, f64), b: &(ProductIdx, f64)| {
        b.1.total_cmp(&a.1)
            .then_with(|| id_of(catalogue, a.0).cmp(id_of(catalogue, b.0)))
    };
    let summed = sorted_lazily(ranked, order, BLEND_STEP)
        .map(move |(idx, score)| (idx, score, parts.remove(&idx).unwrap_or_default()));
    let only_popular = only_popular(
        popular,
        scale,
        scored_too,
        blend.skip,
        blend.facts,
        catalogue,
    );
    merged(summed, only_popular, move |a, b| {
        order(&(a.0, a.1), &(b.0, b.1))
    })
}

/// What a blend adds up: each product's score, and the parts of it as facts (when the
/// blend keeps facts). Parts are added in the order found (seeds in order, lists in
/// order), so the sums are the same whatever the order of products.
#[derive(Default)]
struct Sums {
    /// Each product's score so far.
    scores: FxHashMap<ProductIdx, f64>,
    /// Each product's parts so far.
    parts: FxHashMap<ProductIdx, Vec<Fact>>,
}

/// Adds the popularity part, `scale` times each product's popularity over the most
/// popular's, to the products of `sums` among `popular`; which of `popular` (by place)
/// it added to.
fn add_popularity(
    popular: Popular<'_>,
    scale: f64,
    sums: &mut Sums,
    facts: Facts,
) -> [bool; POPULAR_BLENDED] {
    let mut scored_too = [false; POPULAR_BLENDED];
    if scale <= 0.0 {
        return scored_too;
    }
    for (idx, sum) in sums.scores.iter_mut() {
        let Some(place) = popular.place_of(*idx) else {
            continue;
        };
        let (Some(product), Some(seen)) = (popular.list().get(place), scored_too.get_mut(place))
        else {
            continue;
        };
        *seen = true;
        *sum += scale * product.share;
        if facts == Facts::Kept {
            sums.parts
                .entry(*idx)
                .or_default()
                .push(popularity_fact(place, product.key));
        }
    }
    scored_too
}

/// The popular products no other part of a blend scored (not `scored_too`, by place)
/// nor `skip`ped, in popularity order (ties by id), each scored by its popularity part
/// alone (`scale` times its popularity over the most popular's), with that part as a
/// fact when the blend keeps facts.
fn only_popular<'c>(
    popular: Popular<'c>,
    scale: f64,
    scored_too: [bool; POPULAR_BLENDED],
    skip: &'c [ProductIdx],
    facts: Facts,
    catalogue: &'c Catalogue,
) -> impl Iterator<Item = (ProductIdx, f64, Vec<Fact>)> + 'c {
    let unscored = popular
        .list()
        .iter()
        .enumerate()
        .filter(move |(place, product)| {
            scale > 0.0
                && !scored_too.get(*place).copied().unwrap_or(true)
                && !skip.contains(&product.idx)
        })
        .map(move |(place, product)| (product.idx, scale * product.share, place));
    runs_by_id(unscored, catalogue).map(move |(idx, score, place)| {
        let facts = match popular.list().get(place) {
            Some(product) if facts == Facts::Kept => vec![popularity_fact(place, product.key)],
            _ => Vec::new(),
        };
        (idx, score, facts)
    })
}

/// The fact of a popular product's part: its place in trending and its trending key.
fn popularity_fact(place: usize, key: f64) -> Fact {
    Fact::Popularity {
        rank: u32::try_from(place).unwrap_or(u32::MAX),
        score: key,
    }
}

/// `scored` (in non-increasing score order) with each run of equal scores in product id
/// order.
fn runs_by_id<'c>(
    scored: impl Iterator<Item = (ProductIdx, f64, usize)> + 'c,
    catalogue: &'c Catalogue,
) -> impl Iterator<Item = (ProductIdx, f64, usize)> + 'c {
    let mut scored = scored.peekable();
    // The current run, in reverse id order (taken from the end).
    let mut run: Vec<(ProductIdx, f64, usize)> = Vec::new();
    std::iter::from_fn(move || {
        if run.is_empty() {
            let first = scored.next()?;
            run.push(first);
            while let Some(next) = scored.next_if(|next| next.1 == first.1) {
                run.push(next);
            }
            run.sort_unstable_by(|a, b| id_of(catalogue, b.0).cmp(id_of(catalogue, a.0)));
        }
        run.pop()
    })
}

/// Two iterators each in `order`, merged into one in `order` (the first's item first
/// on a tie).
fn merged<T>(
    first: impl Iterator<Item = T>,
    second: impl Iterator<Item = T>,
    order: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> impl Iterator<Item = T> {
    let (mut first, mut second) = (first.peekable(), second.peekable());
    std::iter::from_fn(move || match (first.peek(), second.peek()) {
        (Some(a), Some(b)) if order(b, a).is_lt() => second.next(),
        (Some(_), _) => first.next(),
        (None, _) => second.next(),
    })
}

/// Adds a scored list to a blend's `sums`: each product `scale` times its score over
/// the list's first (highest) score; with [`Facts::Kept`], the part as `fact` gives it (from
/// the product's score and what it added).
fn add_scaled(
    list: &[(ProductIdx, f32)],
    scale: f64,
    sums: &mut Sums,
    facts: Facts,
    fact: impl Fn(f32, f64) -> Fact,
) {
    let Some(&(_, best)) = list.first() else {
        return;
    };
    if scale <= 0.0 || best <= 0.0 {
        return;
    }
    for &(idx, score) in list {
        let part = scale * f64::from(score) / f64::from(best);
        *sums.scores.entry(idx).or_default() += part;
        if facts == Facts::Kept {
            sums.parts.entry(idx).or_default().push(fact(score, part));
        }
    }
}

/// `items` in `order`, sorting only the next `step` items (at least 1) whenever the
/// sorted ones run out: the first few of many cost a selection, not a sort.
pub(super) fn sorted_lazily<T: Copy>(
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
pub(super) fn id_of(catalogue: &Catalogue, idx: ProductIdx) -> &str {
    catalogue.product(idx).map_or("", |p| p.id.as_str())
}
