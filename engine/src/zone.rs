//! Zone definitions: what a named zone ("PP-01") shows and how it is filled.

use std::fmt;

use crate::event::PageType;

/// The content type of a zone, as reported in the `type` field of zone content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneKind {
    /// `recommender-product`: product items.
    RecommenderProduct,
    /// `recommender-category`: category items.
    RecommenderCategory,
    /// `recommender-brand`: brand items.
    RecommenderBrand,
    /// `image-carousel` (config alias `carousel`).
    ImageCarousel,
    /// `image` (config alias `staticimage`).
    Image,
    /// `html`: a rendered template.
    Html,
}

impl ZoneKind {
    /// The wire name reported in zone content.
    pub fn name(self) -> &'static str {
        match self {
            ZoneKind::RecommenderProduct => "recommender-product",
            ZoneKind::RecommenderCategory => "recommender-category",
            ZoneKind::RecommenderBrand => "recommender-brand",
            ZoneKind::ImageCarousel => "image-carousel",
            ZoneKind::Image => "image",
            ZoneKind::Html => "html",
        }
    }

    /// Reads a configured type name, accepting the vendor aliases.
    pub fn from_name(name: &str) -> Option<ZoneKind> {
        Some(match name {
            "recommender-product" => ZoneKind::RecommenderProduct,
            "recommender-category" => ZoneKind::RecommenderCategory,
            "recommender-brand" => ZoneKind::RecommenderBrand,
            "image-carousel" | "carousel" => ZoneKind::ImageCarousel,
            "image" | "staticimage" => ZoneKind::Image,
            "html" => ZoneKind::Html,
            _ => return None,
        })
    }
}

/// How a product zone is filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Most interacted-with products of the account.
    Trending,
    /// Most ordered products (units).
    TopSellers,
    /// The visitor's own recently viewed products, newest first.
    RecentlyViewed,
    /// Products flagged `NewArrival`, most popular first.
    NewArrivals,
    /// Products flagged `OnOffer` or with a sale price, most popular first.
    OnOffer,
    /// Most popular products of the context category.
    CategoryTop,
    /// Products sharing categories, brand and search tags with the context product.
    Similar,
    /// `viewed_together`: products viewed by the same visitors close to the context
    /// product (co-view model).
    ViewedTogether,
    /// `bought_together`: products bought in the same orders as the context product
    /// (co-purchase model).
    BoughtTogether,
    /// `complete_the_look`: the context product's `RelatedProducts` (SKUs).
    CompleteTheLook,
    /// `associated`: the context product's `AssociatedIds` and `AssociatedSkus`.
    Associated,
    /// `personalized`: from the visitor's history — products viewed and bought together
    /// with what the visitor viewed and bought (recent ones weigh more), then products
    /// similar to the latest views; products the visitor viewed are left out.
    Personalized,
    /// `basket_cross_sell`: products bought together with the basket's products, then
    /// their `RelatedProducts`.
    BasketCrossSell,
    /// `buy_again`: the products the visitor bought, those bought in the most orders
    /// first, then the latest bought (see [`crate::repurchases`]); the one zone that
    /// shows bought products (not those in the basket).
    BuyAgain,
    /// `category_affinity` (recommender-category zones): the categories the visitor
    /// browsed most, then the most popular ones.
    CategoryAffinity,
    /// `brand_affinity` (recommender-brand zones): the brands the visitor browsed most,
    /// then the most popular ones.
    BrandAffinity,
    /// `similar_sessions`: products of the recent sessions most like what the shopper
    /// viewed last (V-SKNN, [`crate::models::SessionIndex`]); the visitor's recent
    /// views are left out.
    SimilarSessions,
}

impl Strategy {
    /// Strategies this version fills, by config name.
    pub const AVAILABLE: [(&'static str, Strategy); 17] = [
        ("trending", Strategy::Trending),
        ("top_sellers", Strategy::TopSellers),
        ("recently_viewed", Strategy::RecentlyViewed),
        ("new_arrivals", Strategy::NewArrivals),
        ("on_offer", Strategy::OnOffer),
        ("category_top", Strategy::CategoryTop),
        ("similar", Strategy::Similar),
        ("viewed_together", Strategy::ViewedTogether),
        ("bought_together", Strategy::BoughtTogether),
        ("complete_the_look", Strategy::CompleteTheLook),
        ("associated", Strategy::Associated),
        ("personalized", Strategy::Personalized),
        ("similar_sessions", Strategy::SimilarSessions),
        ("basket_cross_sell", Strategy::BasketCrossSell),
        ("buy_again", Strategy::BuyAgain),
        ("category_affinity", Strategy::CategoryAffinity),
        ("brand_affinity", Strategy::BrandAffinity),
    ];

    /// The zone type a strategy fills: category and brand affinity fill
    /// recommender-category and recommender-brand zones, every other strategy products.
    pub fn kind(self) -> ZoneKind {
        match self {
            Strategy::CategoryAffinity => ZoneKind::RecommenderCategory,
            Strategy::BrandAffinity => ZoneKind::RecommenderBrand,
            _ => ZoneKind::RecommenderProduct,
        }
    }

    /// The config name of the strategy.
    pub fn name(self) -> &'static str {
        Strategy::AVAILABLE
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("trending", |(n, _)| n)
    }

    /// Reads a config name.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::AVAILABLE
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One configured zone of an account.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneSpec {
    /// Zone id as requested, e.g. `PP-01`.
    pub id: String,
    /// Display title.
    pub title: String,
    /// Content type.
    pub kind: ZoneKind,
    /// The main strategy; `None` for image zones, and html zones whose template shows no
    /// items.
    pub strategy: Option<Strategy>,
    /// Strategies used in order to fill up to `count`.
    pub fallback: Vec<Strategy>,
    /// Number of items wanted.
    pub count: usize,
    /// Page types the zone is shown on; empty means every page type.
    pub page_types: Vec<PageType>,
    /// How its blends weigh what they read (`personalized`'s recipe, and the
    /// `context` and `content` of the pair strategies).
    pub recipe: ZoneRecipe,
}

/// How a zone's blends weigh what they read: `personalized`'s recipe (which self-tuning
/// may choose, [`crate::tuning::recipe`]), and the `context` and `content` of
/// `viewed_together`, `bought_together` and `basket_cross_sell`. Each is checked
/// against the zone's strategies where it is configured; [`ZoneRecipe::default`] is
/// what a zone that gives none of them reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZoneRecipe {
    /// `personalized`: how many of the visitor's latest views it starts from (the
    /// latest weighing 1, the one before `recency`, the one before that `recency`², and
    /// so on), and as many of the basket's lines and of the purchases;
    /// [`DEFAULT_HISTORY`] unless configured.
    pub history: usize,
    /// `personalized`: how much less each older view (basket line, purchase) of the
    /// `history` latest weighs than the one after it; [`DEFAULT_RECENCY`] unless
    /// configured.
    pub recency: f64,
    /// `personalized`: the weight shared by the latest [`LONG_TERM_HISTORY`] views (and
    /// as many basket lines and purchases), each `long_term / n` on top of its recency
    /// weight: the visitor's lasting taste next to the last few steps;
    /// [`DEFAULT_LONG_TERM`] unless configured (0 leaves it out).
    pub long_term: f64,
    /// `viewed_together` and `bought_together`: how many of the visitor's latest views,
    /// basket lines and purchases (each, other than the page's product) count with the
    /// page's product, each `recency` times the one after it (the page's product
    /// weighing 1, purchases half); 0, the default, lists the page's product's partners
    /// alone.
    pub context: usize,
    /// The blends (`personalized`, `basket_cross_sell`, and `viewed_together` and
    /// `bought_together` with `context` above 0; a single product's list keeps its
    /// order): how much the products like each seed (its `similar` list) count beside
    /// its pairs: the one at place `r` (from 0) adds `content / (r + 1)` times the
    /// seed's weight times the seed's strongest pair weight (the strongest of all seeds'
    /// for a seed without pairs, 1 when no seed has any), so a product like the ones
    /// the visitor looked at can join those seen together with them, new products
    /// included. [`DEFAULT_CONTENT`] unless configured; 0 leaves content to fill the
    /// zone only after the pairs run out.
    pub content: f64,
    /// `personalized`: how much the products of the sessions most like what the
    /// shopper viewed last (`similar_sessions`) count beside the pairs: the best of them adds
    /// `sessions` times the blend's best score, the others in proportion to their
    /// session score. [`DEFAULT_SESSIONS`] unless configured; 0 leaves them out (and
    /// the sessions are not read).
    pub sessions: f64,
    /// `personalized`: how much the account's most popular products (`trending`)
    /// count beside the pairs: the most popular adds `popularity` times the blend's
    /// best score, the others in proportion to their popularity. What self-tuning
    /// moves toward when the visitor's history predicts less than popularity does;
    /// [`DEFAULT_POPULARITY`] unless configured.
    pub popularity: f64,
    /// `personalized`: what the shopper's purchases weigh among its seeds, beside their
    /// views and basket lines (1): 0 reads the visit alone, as `basket_cross_sell`
    /// reads the basket. [`DEFAULT_PURCHASES`] unless configured.
    pub purchases: f64,
    /// Which of `history`, `long_term`, `sessions`, `popularity` and `purchases` the
    /// configuration gives: self-tuning leaves those as they are
    /// ([`crate::tuning::recipe`]).
    pub pinned: RecipePins,
}

impl Default for ZoneRecipe {
    fn default() -> ZoneRecipe {
        ZoneRecipe {
            history: DEFAULT_HISTORY,
            recency: DEFAULT_RECENCY,
            long_term: DEFAULT_LONG_TERM,
            context: 0,
            content: DEFAULT_CONTENT,
            sessions: DEFAULT_SESSIONS,
            popularity: DEFAULT_POPULARITY,
            purchases: DEFAULT_PURCHASES,
            pinned: RecipePins::default(),
        }
    }
}

impl ZoneSpec {
    /// Whether filling the zone reads the visitor's repurchases (`buy_again` as its
    /// strategy or a fallback).
    pub fn reads_repurchases(&self) -> bool {
        self.strategy
            .into_iter()
            .chain(self.fallback.iter().copied())
            .any(|s| s == Strategy::BuyAgain)
    }

    /// Whether filling the zone reads the sessions most like the shopper's
    /// (`similar_sessions` as its strategy or a fallback, or `personalized` with a
    /// `sessions` weight).
    pub fn reads_sessions(&self) -> bool {
        self.strategy
            .into_iter()
            .chain(self.fallback.iter().copied())
            .any(|s| {
                s == Strategy::SimilarSessions
                    || (s == Strategy::Personalized && self.recipe.sessions > 0.0)
            })
    }
}

/// Which values of `personalized`'s recipe a zone's configuration gives (and so pins
/// against self-tuning, [`crate::tuning::recipe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecipePins {
    /// `history` given.
    pub history: bool,
    /// `long_term` given.
    pub long_term: bool,
    /// `sessions` given.
    pub sessions: bool,
    /// `popularity` given.
    pub popularity: bool,
    /// `purchases` given.
    pub purchases: bool,
}

/// [`ZoneSpec::content`] by default: no content in the blends (README,
/// "Recommendation quality": it helps neither dataset's validation round enough).
pub const DEFAULT_CONTENT: f64 = 0.0;

/// [`ZoneSpec::sessions`] by default.
pub const DEFAULT_SESSIONS: f64 = 0.0;

/// [`ZoneSpec::popularity`] by default.
pub const DEFAULT_POPULARITY: f64 = 0.0;

/// [`ZoneSpec::purchases`] by default: a purchase weighs a quarter of a view or basket
/// line (docs/quality.md, "What the shopper bought before weighs a quarter").
pub const DEFAULT_PURCHASES: f64 = 0.25;

/// What a purchase weighs among `viewed_together`'s and `bought_together`'s `context`
/// seeds: half a view or basket line.
pub const CONTEXT_PURCHASES: f64 = 0.5;

/// The most views (basket lines, purchases) the long-term part of `personalized` reads.
pub const LONG_TERM_HISTORY: usize = 50;

/// [`ZoneSpec::recency`] by default: the best of 1/(1 + age), 0.6, 0.7 and 0.8 on the
/// validation round of `vitrine-loadtest quality` on MovieLens 100K and The Complete
/// Journey (`docs/quality.md`).
pub const DEFAULT_RECENCY: f64 = 0.8;

/// [`ZoneSpec::long_term`] by default (chosen as [`DEFAULT_RECENCY`] is).
pub const DEFAULT_LONG_TERM: f64 = 2.0;

/// Views `personalized` starts from by default: the best of 1, 5, 10 and 20 on the
/// validation round of `vitrine-loadtest quality` on MovieLens 100K (README,
/// "Recommendation quality").
pub const DEFAULT_HISTORY: usize = 10;
