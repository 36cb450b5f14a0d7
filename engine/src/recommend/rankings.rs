//! Popularity orderings of one catalogue version (`trending`, `top_sellers`, each
//! category's members in trending order) and their incremental update.

use std::sync::Arc;

use dashmap::DashMap;

use crate::catalogue::{ArchivedProduct, Catalogue, ProductIdx};

/// Popularity orderings of one catalogue version, rebuilt from the account's counters.
#[derive(Debug, Default)]
pub struct Rankings {
    /// Every product, most interacted-with first (ties in catalogue order).
    pub trending: Vec<ProductIdx>,
    /// Products with at least one ordered unit, most units first.
    pub top_sellers: Vec<ProductIdx>,
    /// Rank of each product in `trending`, indexed by dense id.
    pub trending_rank: Vec<u32>,
    /// The first [`POPULAR_BLENDED`] of `trending` with their trending keys and
    /// popularity: what `personalized`'s popularity part blends in, made once per
    /// rankings rather than per request.
    popular: Vec<PopularProduct>,
    /// Each product's trending key and units sold, indexed by dense id (see
    /// [`Rankings::build`]).
    scores: Vec<(f64, u64)>,
    /// Members of a category in trending order, sorted on first use, with the number
    /// of the catalogue version whose members they are (categories with members only).
    category_tops: DashMap<String, (u64, Arc<[ProductIdx]>)>,
}

/// The most popular products `personalized`'s popularity part blends in, at most.
pub const POPULAR_BLENDED: usize = 200;

/// One of the most popular products ([`Rankings::popular`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PopularProduct {
    /// The product.
    pub idx: ProductIdx,
    /// Its trending key.
    pub key: f64,
    /// Its popularity over the most popular product's, in (0, 1].
    pub share: f64,
}

/// The most popular products of some rankings ([`Rankings::popular`]), most popular
/// first, and a product's place among them without a search.
#[derive(Debug, Clone, Copy, Default)]
pub struct Popular<'a> {
    list: &'a [PopularProduct],
    /// Each product's place in trending, by dense id.
    rank: &'a [u32],
}

impl<'a> Popular<'a> {
    /// The products, most popular first.
    pub fn list(&self) -> &'a [PopularProduct] {
        self.list
    }

    /// A product's place among them (its place in trending), when it is among them.
    pub fn place_of(&self, idx: ProductIdx) -> Option<usize> {
        let rank = *self.rank.get(idx as usize)? as usize;
        (rank < self.list.len()).then_some(rank)
    }
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
        let key_of =
            |idx: &ProductIdx| scores.get(*idx as usize).map_or(f64::NEG_INFINITY, |s| s.0);
        let best = trending.first().map_or(f64::NEG_INFINITY, key_of);
        // Keys are base-2 logarithms of decayed scores (`Decaying::rank_key`): a
        // product's score over the best one's is 2^(key - best). Products never
        // interacted with (key -inf) have no popularity to blend.
        let popular = trending
            .iter()
            .take(POPULAR_BLENDED)
            .filter_map(|idx| {
                let key = key_of(idx);
                let share = (key - best).exp2();
                (share > 0.0 && share.is_finite()).then_some(PopularProduct {
                    idx: *idx,
                    key,
                    share,
                })
            })
            .collect();
        Rankings {
            trending,
            top_sellers,
            trending_rank,
            popular,
            scores,
            category_tops: DashMap::new(),
        }
    }

    /// The most popular products (at most [`POPULAR_BLENDED`], those with any
    /// popularity) with their trending keys and popularity.
    pub fn popular(&self) -> Popular<'_> {
        Popular {
            list: &self.popular,
            rank: &self.trending_rank,
        }
    }

    /// A product's trending key and units sold (`None` for an index these rankings do
    /// not have).
    pub fn score_of(&self, idx: ProductIdx) -> Option<(f64, u64)> {
        self.scores.get(idx as usize).copied()
    }

    /// The members of `category` in `catalogue`, in trending order; kept for later
    /// requests on the same catalogue version (a delta's new version sorts them again
    /// once) when the category has members.
    pub fn category_top(&self, catalogue: &Catalogue, category: &str) -> Arc<[ProductIdx]> {
        let version = catalogue.version_id();
        if let Some(kept) = self.category_tops.get(category)
            && kept.0 == version
        {
            return Arc::clone(&kept.1);
        }
        // Each member's rank read once (a read from a table as long as the catalogue),
        // then sorted as one integer, rank before dense id: the order of a stable sort
        // by rank of the members in dense-id order.
        let mut keyed: Vec<u64> = catalogue
            .in_category(category)
            .into_iter()
            .map(|idx| {
                let rank = self
                    .trending_rank
                    .get(idx as usize)
                    .copied()
                    .unwrap_or(u32::MAX);
                (u64::from(rank) << 32) | u64::from(idx)
            })
            .collect();
        keyed.sort_unstable();
        let members: Arc<[ProductIdx]> = keyed.iter().map(|key| *key as ProductIdx).collect();
        if !members.is_empty() {
            self.category_tops
                .insert(category.to_owned(), (version, Arc::clone(&members)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Product;

    fn scores_of(rankings: &Rankings, idx: ProductIdx) -> f64 {
        rankings.score_of(idx).map_or(0.0, |(key, _)| key)
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
            // The popularity part: the first of trending with any popularity, with
            // their keys and their scores over the best one's.
            let popular = rankings.popular();
            assert_eq!(popular.list(), full.popular().list());
            let best = scores_of(&rankings, rankings.trending[0]);
            let with_score = rankings
                .trending
                .iter()
                .take(POPULAR_BLENDED)
                .take_while(|idx| scores_of(&rankings, **idx) > f64::NEG_INFINITY);
            assert_eq!(popular.list().len(), with_score.clone().count());
            for (product, &first) in popular.list().iter().zip(with_score) {
                assert_eq!(product.idx, first);
                let key = scores_of(&rankings, first);
                assert_eq!(product.key, key);
                assert!((product.share - (key - best).exp2()).abs() < 1e-12);
            }
            // Found by place: those, no other.
            for (rank, &idx) in rankings.trending.iter().enumerate() {
                let place = popular.place_of(idx);
                let expected = (rank < popular.list().len()).then_some(rank);
                assert_eq!(place, expected, "{rank}");
            }
        }
    }

    /// A category's order is its members by trending rank; members the rankings do not
    /// know yet (added by a delta since) come last, in dense-id order.
    #[test]
    fn a_category_top_is_by_rank_then_unranked_members_by_dense_id() {
        let catalogue = crate::testing::catalogue((0..6).map(|i| Product {
            categories: vec![if i == 3 { "other".into() } else { "c".into() }],
            ..crate::testing::product(&format!("p{i}"))
        }));
        // p2 trends most, then p0, p5, p4, p1.
        let rankings = Rankings::build(&catalogue, |p| {
            let score = match p.id.as_str() {
                "p2" => 9.0,
                "p0" => 7.0,
                "p5" => 5.0,
                "p4" => 3.0,
                _ => 1.0,
            };
            (score, 0)
        });
        let mut edit = catalogue.edit();
        for id in ["p7", "p6"] {
            edit.upsert_product(Product {
                categories: vec!["c".into()],
                ..crate::testing::product(id)
            })
            .unwrap();
        }
        let next = edit.finish();
        let ids: Vec<String> = rankings
            .category_top(&next, "c")
            .iter()
            .map(|idx| next.product(*idx).unwrap().id.to_string())
            .collect();
        assert_eq!(ids, ["p2", "p0", "p5", "p4", "p1", "p7", "p6"]);
    }

    /// A category's order is kept for the catalogue version it was sorted for, only for
    /// categories with members: a new version (a delta) sorts it again once, with its
    /// own members, and keeps that.
    #[test]
    fn category_tops_are_kept_per_catalogue_version() {
        let catalogue = crate::testing::catalogue((0..5).map(|i| Product {
            categories: vec!["c".into()],
            ..crate::testing::product(&format!("p{i}"))
        }));
        let rankings = Rankings::build(&catalogue, |p| {
            let i: f64 = p.id.as_str()[1..].parse().unwrap();
            (i, 0)
        });
        let top = rankings.category_top(&catalogue, "c");
        assert_eq!(top.len(), 5);
        assert_eq!(catalogue.product(top[0]).unwrap().id.as_str(), "p4");
        assert!(
            Arc::ptr_eq(&rankings.category_top(&catalogue, "c"), &top),
            "kept"
        );
        assert!(rankings.category_top(&catalogue, "none").is_empty());
        assert_eq!(
            rankings.category_tops.len(),
            1,
            "no entry for a category without members"
        );

        let mut edit = catalogue.edit();
        assert!(edit.remove_product("p4"));
        let next = edit.finish();
        let after_delta = rankings.category_top(&next, "c");
        assert_eq!(after_delta.len(), 4, "the new version's members");
        assert_eq!(next.product(after_delta[0]).unwrap().id.as_str(), "p3");
        assert!(
            Arc::ptr_eq(&rankings.category_top(&next, "c"), &after_delta),
            "kept"
        );
        assert_eq!(
            rankings.category_tops.get("c").unwrap().0,
            next.version_id()
        );
    }
}
