//! What a campaign shows: automated recommendations, a custom recommender (a source,
//! then filters, boosts and pins, between a minimum and a maximum of items), or an
//! image or html content. Custom content is filled by `recommend::custom`, with the
//! filters applied while the zone is filled.

use compact_str::CompactString;
use smallvec::SmallVec;

use crate::catalogue::{ArchivedProduct, Catalogue};
use crate::recommend::ItemPrice;
use crate::zone::{Strategy, ZoneSpec};

use super::segment::Names;

/// What a campaign shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A strategy and its fallbacks, as zones of the configuration are filled: the
    /// zone's definition with them (and its count) in place of its own.
    Automated(ZoneSpec),
    /// A custom recommender.
    Custom(Box<Custom>),
    /// Images (`image`, or `image-carousel` with more than one).
    Image(Vec<Image>),
    /// An html template, rendered with the zone's title and the products of its
    /// strategy, if any (the zone's definition with them).
    Html {
        /// The template's source (minijinja).
        template: String,
        /// The products it shows.
        spec: ZoneSpec,
    },
}

impl Content {
    /// The zone definition products are filled by, for automated and html content.
    pub fn spec(&self) -> Option<&ZoneSpec> {
        match self {
            Content::Automated(spec) | Content::Html { spec, .. } => Some(spec),
            Content::Custom(custom) => Some(&custom.spec),
            Content::Image(_) => None,
        }
    }

    /// Its type in the campaign document.
    pub fn name(&self) -> &'static str {
        match self {
            Content::Automated(_) => "automated",
            Content::Custom(_) => "custom",
            Content::Image(_) => "image",
            Content::Html { .. } => "html",
        }
    }
}

/// An image of image content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Its URL.
    pub url: String,
    /// Where it links to.
    pub link: String,
    /// Its alternative text.
    pub alt: String,
}

/// A custom recommender.
#[derive(Debug, Clone, PartialEq)]
pub struct Custom {
    /// Where candidates come from.
    pub source: Source,
    /// Every filter must pass.
    pub filters: Vec<Filter>,
    /// Factors on the scores of the candidates that match a filter (below 1: buried).
    pub boosts: Vec<Boost>,
    /// Products at fixed places, in place order.
    pub pins: Vec<Pin>,
    /// The zone's definition with the source's strategies and the most items shown as
    /// its count (the strategies' parameters are the zone's).
    pub spec: ZoneSpec,
    /// The category and brand ids of its filters and boosts as the latest catalogue
    /// version interns them (worked out once per version, by the first request).
    pub interned: InternedCache,
}

/// A custom recommender's filters and boosts as one catalogue version judges them:
/// category and brand ids interned, so that a candidate is judged by comparing
/// integers, and the filters merged into one [`Plan`].
#[derive(Debug)]
pub struct Interned {
    version: u64,
    /// Every filter, merged.
    pub filters: Plan,
    /// Each boost's filter, with its factor.
    pub boosts: Vec<(Plan, f64)>,
}

/// [`Interned`] for the latest catalogue version seen, swapped whole.
#[derive(Debug, Default)]
pub struct InternedCache(arc_swap::ArcSwapOption<Interned>);

impl Clone for InternedCache {
    /// A copy starts empty (it fills on first use).
    fn clone(&self) -> InternedCache {
        InternedCache::default()
    }
}

impl PartialEq for InternedCache {
    /// A cache is not part of what a campaign is.
    fn eq(&self, _: &InternedCache) -> bool {
        true
    }
}

impl Custom {
    /// Its filters' and boosts' category and brand ids interned by `catalogue`.
    pub fn interned(&self, catalogue: &Catalogue) -> std::sync::Arc<Interned> {
        let version = catalogue.version_id();
        if let Some(kept) = self.interned.0.load_full()
            && kept.version == version
        {
            return kept;
        }
        let filters = Plan::of(&self.filters, catalogue);
        let boosts = self
            .boosts
            .iter()
            .map(|b| {
                (
                    Plan::of(std::slice::from_ref(&b.filter), catalogue),
                    b.factor,
                )
            })
            .collect();
        let fresh = std::sync::Arc::new(Interned {
            version,
            filters,
            boosts,
        });
        self.interned.0.store(Some(std::sync::Arc::clone(&fresh)));
        fresh
    }
}

/// Where a custom recommender's candidates come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A product strategy, then its fallbacks (in the spec of [`Custom`]).
    Strategy,
    /// Listed products in their order, then the most popular products of the listed
    /// categories, then of the listed brands.
    Manual {
        /// Product ids.
        products: Vec<CompactString>,
        /// Category ids.
        categories: Vec<CompactString>,
        /// Brand ids.
        brands: Vec<CompactString>,
    },
}

/// A pinned product.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// Its id.
    pub product: CompactString,
    /// Its place, from 1.
    pub place: usize,
}

/// A boost (or, below 1, a bury).
#[derive(Debug, Clone, PartialEq)]
pub struct Boost {
    /// What the boosted candidates match.
    pub filter: Filter,
    /// The factor on their score.
    pub factor: f64,
}

/// A condition on a candidate product.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// In one of these categories (ids, matched exactly).
    CategoryIn(Ids),
    /// In none of these categories.
    CategoryNotIn(Ids),
    /// Of one of these brands (ids, matched exactly).
    BrandIn(Ids),
    /// Of none of these brands.
    BrandNotIn(Ids),
    /// Its price for the shopper, in the request's currency (major units), in this
    /// inclusive range.
    Price {
        /// Lowest price.
        min: Option<f64>,
        /// Highest price.
        max: Option<f64>,
    },
    /// On offer (`OnOffer` or a sale price) or not.
    OnOffer(bool),
    /// A new arrival (`NewArrival`) or not.
    NewArrival(bool),
    /// Shares a category with the page's product (none on a page without one).
    SameCategory,
    /// Of the page's product's brand (none on a page without one).
    SameBrand,
    /// Its price within ± `percent` % of the page's product's price (none on a page
    /// without one).
    PriceWithin {
        /// The percentage.
        percent: f64,
    },
    /// Has one of these search tags.
    SearchTag(Names),
    /// None of these products (ids, matched exactly): products a merchandiser hid from
    /// the campaign.
    ProductNotIn(Ids),
}

impl Filter {
    /// Its kind in the campaign document.
    pub fn name(&self) -> &'static str {
        match self {
            Filter::CategoryIn(_) => "categoryIn",
            Filter::CategoryNotIn(_) => "categoryNotIn",
            Filter::BrandIn(_) => "brandIn",
            Filter::BrandNotIn(_) => "brandNotIn",
            Filter::Price { .. } => "price",
            Filter::OnOffer(_) => "onOffer",
            Filter::NewArrival(_) => "newArrival",
            Filter::SameCategory => "sameCategory",
            Filter::SameBrand => "sameBrand",
            Filter::PriceWithin { .. } => "priceWithin",
            Filter::SearchTag(_) => "searchTag",
            Filter::ProductNotIn(_) => "productNotIn",
        }
    }
}

/// Category, brand or product ids, as the catalogue names them (matched exactly).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ids(pub Box<[CompactString]>);

impl Ids {
    /// The ids given.
    pub fn of<'a>(ids: impl IntoIterator<Item = &'a str>) -> Ids {
        Ids(ids.into_iter().map(CompactString::from).collect())
    }

    /// The catalogue's interned ids of those it knows.
    fn interned(&self, intern: impl Fn(&str) -> Option<u32>) -> SmallVec<[u32; 4]> {
        self.0.iter().filter_map(|id| intern(id)).collect()
    }
}

/// A candidate as filters see it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The catalogue version.
    pub catalogue: &'a Catalogue,
    /// The product.
    pub product: &'a ArchivedProduct,
    /// Its price for the shopper.
    pub price: ItemPrice,
    /// That price in major units.
    pub amount: f64,
    /// The page's product and its price in major units for the shopper, when the page
    /// has one.
    pub page: Option<(&'a ArchivedProduct, Option<f64>)>,
}

/// An amount in major units.
pub fn major(price: &ItemPrice) -> f64 {
    price.price.minor as f64 / 10f64.powi(price.price.currency.minor_digits() as i32)
}

/// Filters as one catalogue version judges them, merged: the price filters into one
/// range, the category and brand exclusions into one list each, the rest in turn.
#[derive(Debug, Default)]
pub struct Plan {
    /// The range every price filter allows (major units), if any filter bounds it.
    price: Option<(f64, f64)>,
    /// Interned categories no candidate may be in.
    not_categories: SmallVec<[u32; 4]>,
    /// Interned brands no candidate may be of.
    not_brands: SmallVec<[u32; 4]>,
    /// The other filters, each judged in turn.
    tests: Vec<Test>,
}

/// A filter of a [`Plan`] judged on its own.
#[derive(Debug)]
enum Test {
    /// In one of these interned categories (none: no candidate passes).
    Categories(SmallVec<[u32; 4]>),
    /// Of one of these interned brands (none: no candidate passes).
    Brands(SmallVec<[u32; 4]>),
    /// Any other filter, judged as it is.
    Other(Filter),
}

impl Plan {
    /// `filters` (all of which must pass) with their ids as `catalogue` interns them.
    pub fn of(filters: &[Filter], catalogue: &Catalogue) -> Plan {
        let mut plan = Plan::default();
        let category = |c: &str| catalogue.category_id(c);
        let brand = |b: &str| catalogue.brand_id(b);
        for filter in filters {
            match filter {
                Filter::CategoryIn(ids) => {
                    plan.tests.push(Test::Categories(ids.interned(category)))
                }
                Filter::BrandIn(ids) => plan.tests.push(Test::Brands(ids.interned(brand))),
                Filter::CategoryNotIn(ids) => plan.not_categories.extend(ids.interned(category)),
                Filter::BrandNotIn(ids) => plan.not_brands.extend(ids.interned(brand)),
                Filter::Price { min, max } => {
                    let (low, high) = plan.price.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
                    plan.price = Some((
                        min.map_or(low, |min| low.max(min)),
                        max.map_or(high, |max| high.min(max)),
                    ));
                }
                other => plan.tests.push(Test::Other(other.clone())),
            }
        }
        plan
    }

    /// Whether `candidate` passes every filter.
    #[inline]
    pub fn passes(&self, candidate: &Candidate<'_>) -> bool {
        if let Some((low, high)) = self.price
            && !(candidate.amount >= low && candidate.amount <= high)
        {
            return false;
        }
        let product = candidate.product;
        if !self.not_brands.is_empty()
            && product
                .brand
                .as_ref()
                .is_some_and(|b| self.not_brands.contains(&b.to_native()))
        {
            return false;
        }
        if !self.not_categories.is_empty()
            && product
                .categories
                .iter()
                .any(|c| self.not_categories.contains(&c.to_native()))
        {
            return false;
        }
        self.tests.is_empty() || self.tests.iter().all(|test| test.passes(candidate))
    }
}

impl Test {
    /// Whether `candidate` passes.
    fn passes(&self, candidate: &Candidate<'_>) -> bool {
        let Candidate {
            catalogue,
            product,
            price,
            amount,
            page,
        } = *candidate;
        let filter = match self {
            Test::Categories(ids) => {
                return catalogue.category_ids(product).any(|c| ids.contains(&c));
            }
            Test::Brands(ids) => {
                return catalogue
                    .brand_id_of(product)
                    .is_some_and(|b| ids.contains(&b));
            }
            Test::Other(filter) => filter,
        };
        match filter {
            // Merged into the plan.
            Filter::CategoryIn(_)
            | Filter::CategoryNotIn(_)
            | Filter::BrandIn(_)
            | Filter::BrandNotIn(_)
            | Filter::Price { .. } => true,
            Filter::OnOffer(wanted) => (product.on_offer || price.was.is_some()) == *wanted,
            Filter::NewArrival(wanted) => product.new_arrival == *wanted,
            Filter::SameCategory => page.is_some_and(|(page, _)| {
                catalogue
                    .category_ids(product)
                    .any(|c| catalogue.category_ids(page).any(|p| p == c))
            }),
            Filter::SameBrand => page.is_some_and(|(page, _)| {
                catalogue
                    .brand_id_of(page)
                    .is_some_and(|b| catalogue.brand_id_of(product) == Some(b))
            }),
            Filter::PriceWithin { percent } => page.and_then(|(_, p)| p).is_some_and(|reference| {
                (amount - reference).abs() <= reference.abs() * percent / 100.0 + 1e-9
            }),
            Filter::SearchTag(names) => product
                .search_tags
                .iter()
                .any(|tag| names.has(tag.as_str())),
            Filter::ProductNotIn(ids) => !ids.0.iter().any(|id| id.as_str() == product.id.as_str()),
        }
    }
}

/// Which rule of a custom recommender placed an item, for explain.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// Pinned at this place (from 1).
    Pinned(usize),
    /// Found by the source and passed every filter, with the boosts it matched (their
    /// positions in the campaign's boosts) and its score after them.
    Sourced {
        /// The boosts it matched.
        boosts: Vec<usize>,
        /// Its score: 1 / (1 + its place in the source), times each boost's factor.
        score: f64,
    },
}

/// The strategies a custom recommender's spec lists, for explain.
pub fn strategies(spec: &ZoneSpec) -> impl Iterator<Item = Strategy> + '_ {
    spec.strategy
        .into_iter()
        .chain(spec.fallback.iter().copied())
}
