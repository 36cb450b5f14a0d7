//! Content similarity: for every product, the products most like it by shared
//! categories, brand and search tags, computed once per catalogue build (in parallel on
//! the current rayon pool) and stored in the archive, so the `similar` strategy reads a
//! short list instead of scanning categories per request.
//!
//! Candidates per product are bounded so that a build stays linear in the catalogue:
//! up to [`SAME_BRAND_CANDIDATES`] products of the same category and brand, and up to
//! [`CATEGORY_CANDIDATES`] other products of each category, taken from a window of the
//! category that starts at a position derived from the product, so different products
//! of a large category look at different members.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::catalogue::{Product, ProductIdx};

/// Neighbours kept per product.
pub const NEIGHBOURS: usize = 12;
/// Same-category, same-brand candidates looked at per category.
pub const SAME_BRAND_CANDIDATES: usize = 24;
/// Other candidates looked at per category.
pub const CATEGORY_CANDIDATES: usize = 24;

/// How alike two products are: shared categories weigh most, then the brand, then tags.
pub fn score(a: &Product, b: &Product) -> u32 {
    let mut interner = Interner::default();
    score_features(&interner.features(a), &interner.features(b))
}

/// Most categories and tags of a product that similarity looks at.
const MAX_CATEGORIES: usize = 4;
const MAX_TAGS: usize = 7;
const NO_BRAND: u32 = u32::MAX;

/// A product's categories, brand and tags as interned integers (sorted, deduplicated),
/// packed in one 52-byte record, so that scoring a candidate touches one cache line and
/// compares integers rather than strings.
#[derive(Debug, Clone, Copy)]
struct Features {
    categories: [u32; MAX_CATEGORIES],
    tags: [u32; MAX_TAGS],
    brand: u32,
    category_count: u8,
    tag_count: u8,
}

impl Features {
    fn categories(&self) -> &[u32] {
        self.categories
            .get(..usize::from(self.category_count))
            .unwrap_or_default()
    }

    fn tags(&self) -> &[u32] {
        self.tags
            .get(..usize::from(self.tag_count))
            .unwrap_or_default()
    }
}

#[derive(Debug, Default)]
struct Interner<'a> {
    ids: HashMap<&'a str, u32>,
}

impl<'a> Interner<'a> {
    fn id(&mut self, text: &'a str) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(text).or_insert(next)
    }

    fn packed<const N: usize>(&mut self, texts: &'a [String]) -> ([u32; N], u8) {
        let mut ids: Vec<u32> = texts.iter().map(|t| self.id(t)).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut out = [0u32; N];
        let count = ids.len().min(N);
        for (slot, id) in out.iter_mut().zip(ids) {
            *slot = id;
        }
        (out, count as u8)
    }

    fn features(&mut self, product: &'a Product) -> Features {
        let (categories, category_count) = self.packed::<MAX_CATEGORIES>(&product.categories);
        let (tags, tag_count) = self.packed::<MAX_TAGS>(&product.search_tags);
        let brand = product.brand.as_deref().map_or(NO_BRAND, |b| self.id(b));
        Features {
            categories,
            tags,
            brand,
            category_count,
            tag_count,
        }
    }
}

fn shared(a: &[u32], b: &[u32]) -> u32 {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

fn score_features(a: &Features, b: &Features) -> u32 {
    let same_brand = u32::from(a.brand != NO_BRAND && a.brand == b.brand);
    shared(a.categories(), b.categories()) * 4 + same_brand * 3 + shared(a.tags(), b.tags())
}

/// The neighbours of every product, best first (ties by dense id).
pub fn neighbours(
    products: &[Product],
    by_category: &HashMap<String, Vec<ProductIdx>>,
) -> Vec<Vec<ProductIdx>> {
    let mut interner = Interner::default();
    let features: Vec<Features> = products.iter().map(|p| interner.features(p)).collect();
    // Same-category, same-brand members, at most SAME_BRAND_CANDIDATES + 1 per pair.
    let mut by_category_brand: HashMap<(&str, &str), Vec<ProductIdx>> = HashMap::new();
    for (i, product) in products.iter().enumerate() {
        let Some(brand) = product.brand.as_deref() else {
            continue;
        };
        for category in &product.categories {
            let members = by_category_brand
                .entry((category.as_str(), brand))
                .or_default();
            if members.len() <= SAME_BRAND_CANDIDATES {
                members.push(i as ProductIdx);
            }
        }
    }
    (0..products.len())
        .into_par_iter()
        .map(|i| {
            let (Some(product), Some(mine)) = (products.get(i), features.get(i)) else {
                return Vec::new();
            };
            let me = i as ProductIdx;
            let mut candidates: Vec<ProductIdx> =
                Vec::with_capacity(2 * (SAME_BRAND_CANDIDATES + CATEGORY_CANDIDATES));
            for category in &product.categories {
                let Some(members) = by_category.get(category) else {
                    continue;
                };
                if let Some(same_brand) = product
                    .brand
                    .as_deref()
                    .and_then(|brand| by_category_brand.get(&(category.as_str(), brand)))
                {
                    candidates.extend(same_brand.iter().copied().filter(|&m| m != me));
                }
                let len = members.len();
                let start = i.wrapping_mul(2_654_435_761) % len.max(1);
                let window = (0..CATEGORY_CANDIDATES.min(len))
                    .filter_map(|k| members.get((start + k) % len));
                candidates.extend(window.copied().filter(|&m| m != me));
            }
            candidates.sort_unstable();
            candidates.dedup();
            let mut scored: Vec<(u32, ProductIdx)> = candidates
                .into_iter()
                .filter_map(|c| {
                    features
                        .get(c as usize)
                        .map(|other| (score_features(mine, other), c))
                })
                .collect();
            let keep = NEIGHBOURS.min(scored.len());
            if keep < scored.len() {
                scored.select_nth_unstable_by(keep, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                scored.truncate(keep);
            }
            scored.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            scored.into_iter().map(|(_, c)| c).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(categories: &[&str], brand: Option<&str>, tags: &[&str]) -> Product {
        Product {
            categories: crate::testing::names(categories),
            brand: brand.map(str::to_owned),
            search_tags: crate::testing::names(tags),
            ..Product::default()
        }
    }

    #[test]
    fn score_counts_categories_brand_and_tags() {
        let a = product(&["c1", "c2"], Some("b1"), &["oak", "grey"]);
        let b = product(&["c2", "c1"], Some("b1"), &["oak"]);
        assert_eq!(score(&a, &b), 2 * 4 + 3 + 1);
        assert_eq!(score(&a, &product(&["c9"], None, &[])), 0);
        assert_eq!(
            score(&product(&[], None, &[]), &product(&[], None, &[])),
            0,
            "no brand is not the same brand"
        );
    }

    #[test]
    fn neighbours_rank_by_shared_categories_brand_and_tags() {
        let products = vec![
            product(&["c1", "c2"], Some("b1"), &["oak"]),
            product(&["c1"], Some("b2"), &[]),
            product(&["c1", "c2"], Some("b1"), &["oak"]),
            product(&["c1", "c2"], Some("b2"), &[]),
            product(&["c3"], Some("b1"), &["oak"]),
        ];
        let mut by_category: HashMap<String, Vec<ProductIdx>> = HashMap::new();
        for (i, p) in products.iter().enumerate() {
            for c in &p.categories {
                by_category
                    .entry(c.clone())
                    .or_default()
                    .push(i as ProductIdx);
            }
        }
        let lists = neighbours(&products, &by_category);
        assert_eq!(
            lists[0],
            [2, 3, 1],
            "same categories + brand + tag, then same categories, then one category"
        );
        assert!(lists[4].is_empty(), "no shared category, no candidate");
        assert!(!lists[0].contains(&0), "never its own neighbour");
    }
}
