//! The product model, described once: [`Product`] (owned, as the store sent it: the
//! builder's input and what deltas edit) and [`StoredProduct`] (as the archive keeps it)
//! are both declared by `product_fields!` from one list of fields, so a new product
//! field is one line here, its reader in `ingest::record` and its wire name in
//! `http::api::render`. Also: prices ([`PriceSet`], [`GroupPrice`]), B2B
//! [`Visibility`], and the [`Category`] and [`Brand`] records.

use super::UnixMillis;
use crate::money::{Currency, Money};

/// Which B2B accounts may see a product.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[rkyv(derive(Debug))]
pub enum Visibility {
    /// No account rule: visible to everyone.
    #[default]
    Everyone,
    /// `AccountInclusions`: visible only to these account ids; hidden without an account.
    OnlyAccounts(Vec<String>),
    /// `AccountExclusions`: hidden from these account ids.
    ExceptAccounts(Vec<String>),
}

impl Visibility {
    /// Whether a visitor with this B2B account id (if any) may see the product.
    pub fn allows(&self, account: Option<&str>) -> bool {
        match self {
            Visibility::Everyone => true,
            Visibility::OnlyAccounts(ids) => {
                account_listed(ids.iter().map(String::as_str), account)
            }
            Visibility::ExceptAccounts(ids) => {
                !account_listed(ids.iter().map(String::as_str), account)
            }
        }
    }
}

/// Whether the visitor's B2B account (if any) is among `ids`: the one rule behind
/// `AccountInclusions` and `AccountExclusions`, for owned and archived products alike.
pub(super) fn account_listed<'a>(
    mut ids: impl Iterator<Item = &'a str>,
    account: Option<&str>,
) -> bool {
    account.is_some_and(|a| ids.any(|i| i == a))
}

/// Regular and sale prices, at most one of each per currency.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[rkyv(derive(Debug))]
pub struct PriceSet {
    /// `Prices`: the regular price per currency.
    pub prices: Vec<Money>,
    /// `SalePrices`: the sale price per currency, where one applies.
    pub sale_prices: Vec<Money>,
}

impl PriceSet {
    /// The regular price in `currency`.
    pub fn price_in(&self, currency: Currency) -> Option<Money> {
        self.prices.iter().copied().find(|m| m.currency == currency)
    }

    /// The sale price in `currency`.
    pub fn sale_in(&self, currency: Currency) -> Option<Money> {
        self.sale_prices
            .iter()
            .copied()
            .find(|m| m.currency == currency)
    }
}

/// Prices of one user group (`GroupPrices`).
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[rkyv(derive(Debug))]
pub struct GroupPrice {
    /// The group id.
    pub group: String,
    /// Its prices.
    pub prices: PriceSet,
}

/// Declares [`Product`] and [`StoredProduct`] from one list of the fields they share,
/// with the conversions between them. The two differ only in how categories, brand
/// and the product's own prices are held: names and a [`PriceSet`] in a `Product`;
/// interned name indexes in a `StoredProduct`, whose prices go to the catalogue's
/// price columns. The stored field order (shared fields, then `categories` and
/// `brand`, then the rest) is the archive's layout: append new fields to the second
/// list, and snapshots of older versions fail their check and are rebuilt from feeds.
macro_rules! product_fields {
    (
        before_names { $( $(#[doc = $doc1:literal])* $field1:ident : $ty1:ty, )* }
        after_names { $( $(#[doc = $doc2:literal])* $field2:ident : $ty2:ty, )* }
    ) => {
        /// One product as the store described it (the builder's input; the archive
        /// stores it as a [`StoredProduct`]).
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct Product {
            $( $(#[doc = $doc1])* pub $field1: $ty1, )*
            /// `Categories`: category ids.
            pub categories: Vec<String>,
            /// `Brand` id.
            pub brand: Option<String>,
            $( $(#[doc = $doc2])* pub $field2: $ty2, )*
            /// The product's own prices (`Prices`, `SalePrices`).
            pub prices: PriceSet,
        }

        /// A product as the archive stores it: categories and brand interned (indexes
        /// into the catalogue's name tables), its own prices in the catalogue's
        /// per-currency columns.
        #[derive(
            Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize,
            rkyv::Deserialize,
        )]
        #[rkyv(derive(Debug))]
        pub struct StoredProduct {
            $( $(#[doc = $doc1])* pub $field1: $ty1, )*
            /// Interned `Categories`.
            pub categories: Vec<u32>,
            /// Interned `Brand`.
            pub brand: Option<u32>,
            $( $(#[doc = $doc2])* pub $field2: $ty2, )*
        }

        impl StoredProduct {
            /// The stored form of a product whose categories and brand are interned
            /// already (its own prices go to the price columns or the overlay, not here).
            pub(crate) fn from_product(
                product: Product,
                categories: Vec<u32>,
                brand: Option<u32>,
            ) -> StoredProduct {
                StoredProduct {
                    $( $field1: product.$field1, )*
                    categories,
                    brand,
                    $( $field2: product.$field2, )*
                }
            }

            /// The product as the store described it, given its names and prices back.
            pub(crate) fn into_product(
                self,
                categories: Vec<String>,
                brand: Option<String>,
                prices: PriceSet,
            ) -> Product {
                Product {
                    $( $field1: self.$field1, )*
                    categories,
                    brand,
                    $( $field2: self.$field2, )*
                    prices,
                }
            }
        }
    };
}

product_fields! {
    before_names {
        /// `Id`, unique in the catalogue.
        id: String,
        /// `Sku`, when different from the id.
        sku: Option<String>,
        /// `Title`.
        title: String,
        /// `Description`, plain text.
        description: String,
        /// `Link` to the product page.
        link: String,
        /// `Image` URL.
        image: String,
        /// `ImageOverlay` URL, e.g. an offer badge.
        image_overlay: Option<String>,
        /// `AllImages`: every image of the product.
        all_images: Vec<String>,
        /// `GroupPrices`: prices per user group id.
        group_prices: Vec<GroupPrice>,
    }
    after_names {
        /// `SearchTags`.
        search_tags: Vec<String>,
        /// `AssociatedSkus`.
        associated_skus: Vec<String>,
        /// `AssociatedIds`.
        associated_ids: Vec<String>,
        /// `RelatedProducts` (SKUs), for complete-the-look.
        related_products: Vec<String>,
        /// `AccountInclusions` / `AccountExclusions`.
        visibility: Visibility,
        /// `ExcludeFromRecommenders`.
        exclude_from_recommenders: bool,
        /// `OnOffer`.
        on_offer: bool,
        /// `NewArrival`.
        new_arrival: bool,
        /// `StartDate`: hidden before this instant.
        available_from: Option<UnixMillis>,
        /// `EndDate`: hidden after this instant.
        available_until: Option<UnixMillis>,
        /// `SalePriceStartDate`: its sale prices (own and group) apply from this instant.
        sale_from: Option<UnixMillis>,
        /// `SalePriceEndDate`: its sale prices apply until this instant (inclusive).
        sale_until: Option<UnixMillis>,
    }
}

impl Product {
    /// The SKU that `RelatedProducts` and `AssociatedSkus` of other products refer to.
    pub fn sku_or_id(&self) -> &str {
        self.sku.as_deref().unwrap_or(&self.id)
    }
}

/// A category record of the category feed.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Category {
    /// `Id`.
    pub id: String,
    /// `DisplayName`.
    pub display_name: String,
    /// `Image` URL.
    pub image: String,
    /// `Link` to the category page.
    pub link: String,
    /// `Description`.
    pub description: String,
    /// `ParentIds`.
    pub parent_ids: Vec<String>,
}

/// A brand record of the brand feed.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Brand {
    /// `Id`.
    pub id: String,
    /// `DisplayName`.
    pub display_name: String,
    /// `Image` URL.
    pub image: String,
    /// `Link` to the brand page.
    pub link: String,
    /// `Description`.
    pub description: String,
}
