//! The product catalogue: products under dense `u32` ids, categories, brands and
//! account-specific prices.
//!
//! A [`Catalogue`] is immutable once built: an rkyv archive of [`CatalogueData`] held in
//! a [`Frozen`] container (owned memory after a build, a memory map after a restart)
//! and read in place, so a snapshot serves without being deserialized. Readers hold one
//! version for a whole request. Changes go through a [`CatalogueBuilder`] (from scratch,
//! or from an existing version with [`Catalogue::to_builder`]) and produce a new version
//! that the owner swaps in. External ids (strings) map to dense [`ProductIdx`] through
//! one table.

use std::collections::HashMap;
use std::sync::Arc;

use rkyv::rancor;
use vitrine_snapshots::Frozen;

use crate::money::{ArchivedMoney, Currency, Money};
use crate::similar;

/// Dense index of a product inside one catalogue version.
pub type ProductIdx = u32;

/// Milliseconds since the Unix epoch, UTC.
pub type UnixMillis = i64;

/// Which B2B accounts may see a product.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
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
            Visibility::OnlyAccounts(ids) => account.is_some_and(|a| ids.iter().any(|i| i == a)),
            Visibility::ExceptAccounts(ids) => !account.is_some_and(|a| ids.iter().any(|i| i == a)),
        }
    }
}

/// Regular and sale prices, at most one of each per currency.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
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
pub struct GroupPrice {
    /// The group id.
    pub group: String,
    /// Its prices.
    pub prices: PriceSet,
}

/// One product as the store described it.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Product {
    /// `Id`, unique in the catalogue.
    pub id: String,
    /// `Sku`, when different from the id.
    pub sku: Option<String>,
    /// `Title`.
    pub title: String,
    /// `Description`, plain text.
    pub description: String,
    /// `Link` to the product page.
    pub link: String,
    /// `Image` URL.
    pub image: String,
    /// `ImageOverlay` URL, e.g. an offer badge.
    pub image_overlay: Option<String>,
    /// `AllImages`: every image of the product.
    pub all_images: Vec<String>,
    /// The product's own prices.
    pub prices: PriceSet,
    /// `GroupPrices`: prices per user group id.
    pub group_prices: Vec<GroupPrice>,
    /// `Categories`: category ids.
    pub categories: Vec<String>,
    /// `Brand` id.
    pub brand: Option<String>,
    /// `SearchTags`.
    pub search_tags: Vec<String>,
    /// `AssociatedSkus`.
    pub associated_skus: Vec<String>,
    /// `AssociatedIds`.
    pub associated_ids: Vec<String>,
    /// `RelatedProducts` (SKUs), for complete-the-look.
    pub related_products: Vec<String>,
    /// `AccountInclusions` / `AccountExclusions`.
    pub visibility: Visibility,
    /// `ExcludeFromRecommenders`.
    pub exclude_from_recommenders: bool,
    /// `OnOffer`.
    pub on_offer: bool,
    /// `NewArrival`.
    pub new_arrival: bool,
    /// `StartDate`: hidden before this instant.
    pub available_from: Option<UnixMillis>,
    /// `EndDate`: hidden after this instant.
    pub available_until: Option<UnixMillis>,
}

impl Product {
    /// The SKU that `RelatedProducts` and `AssociatedSkus` of other products refer to.
    pub fn sku_or_id(&self) -> &str {
        self.sku.as_deref().unwrap_or(&self.id)
    }

    /// Whether `now` lies inside the product's `StartDate`..`EndDate` window.
    pub fn is_live_at(&self, now: UnixMillis) -> bool {
        self.available_from.is_none_or(|from| now >= from)
            && self.available_until.is_none_or(|until| now <= until)
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

/// The archived content of one catalogue version.
#[derive(Debug, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CatalogueData {
    products: Vec<Product>,
    by_id: HashMap<String, ProductIdx>,
    by_sku: HashMap<String, ProductIdx>,
    by_category: HashMap<String, Vec<ProductIdx>>,
    by_brand: HashMap<String, Vec<ProductIdx>>,
    /// Content-similarity neighbours of each product, best first (see [`similar`]).
    similar: Vec<Vec<ProductIdx>>,
    categories: HashMap<String, Category>,
    brands: HashMap<String, Brand>,
    /// account id → product id → prices for that account.
    account_prices: HashMap<String, HashMap<String, PriceSet>>,
}

impl CatalogueData {
    /// The products, in dense-id order.
    pub fn products(&self) -> &[Product] {
        &self.products
    }
}

/// Why a catalogue could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the catalogue could not be archived: {0}")]
pub struct CatalogueError(String);

/// One immutable version of an account's catalogue; cloning is cheap.
#[derive(Debug, Clone)]
pub struct Catalogue {
    frozen: Arc<Frozen<CatalogueData>>,
}

impl Catalogue {
    /// A catalogue read from an archive (a snapshot).
    pub fn from_frozen(frozen: Frozen<CatalogueData>) -> Catalogue {
        Catalogue {
            frozen: Arc::new(frozen),
        }
    }

    fn data(&self) -> &ArchivedCatalogueData {
        self.frozen.get()
    }

    /// The archive's bytes (what a snapshot stores).
    pub fn archive_bytes(&self) -> &[u8] {
        self.frozen.bytes()
    }

    /// Whether the version is read from a memory-mapped snapshot.
    pub fn is_mapped(&self) -> bool {
        self.frozen.is_mapped()
    }

    /// Number of products.
    pub fn len(&self) -> usize {
        self.data().products.len()
    }

    /// Whether there are no products.
    pub fn is_empty(&self) -> bool {
        self.data().products.is_empty()
    }

    /// All products in dense-id order.
    pub fn products(&self) -> &[ArchivedProduct] {
        self.data().products.as_slice()
    }

    /// The product at a dense index.
    pub fn product(&self, idx: ProductIdx) -> Option<&ArchivedProduct> {
        self.data().products.get(idx as usize)
    }

    /// The dense index of an external product id.
    pub fn idx_of(&self, id: &str) -> Option<ProductIdx> {
        self.data().by_id.get(id).map(|i| i.to_native())
    }

    /// The dense index of the product with this SKU (or id, when it has no SKU).
    pub fn idx_of_sku(&self, sku: &str) -> Option<ProductIdx> {
        self.data().by_sku.get(sku).map(|i| i.to_native())
    }

    /// Products of a category, in dense-id order.
    pub fn in_category(&self, category: &str) -> Vec<ProductIdx> {
        self.data()
            .by_category
            .get(category)
            .map_or_else(Vec::new, |members| {
                members.iter().map(|i| i.to_native()).collect()
            })
    }

    /// Products of a brand, in dense-id order.
    pub fn of_brand(&self, brand: &str) -> Vec<ProductIdx> {
        self.data()
            .by_brand
            .get(brand)
            .map_or_else(Vec::new, |members| {
                members.iter().map(|i| i.to_native()).collect()
            })
    }

    /// The content-similarity neighbours of a product, best first.
    pub fn similar_to(&self, idx: ProductIdx) -> impl Iterator<Item = ProductIdx> + '_ {
        self.data()
            .similar
            .get(idx as usize)
            .into_iter()
            .flat_map(|n| n.iter().map(|i| i.to_native()))
    }

    /// A category record.
    pub fn category(&self, id: &str) -> Option<&ArchivedCategory> {
        self.data().categories.get(id)
    }

    /// Number of category records.
    pub fn category_count(&self) -> usize {
        self.data().categories.len()
    }

    /// A brand record.
    pub fn brand(&self, id: &str) -> Option<&ArchivedBrand> {
        self.data().brands.get(id)
    }

    /// Number of brand records.
    pub fn brand_count(&self) -> usize {
        self.data().brands.len()
    }

    /// The prices a B2B account has for a product, if the store set any.
    pub fn account_prices(&self, account: &str, product_id: &str) -> Option<&ArchivedPriceSet> {
        self.data().account_prices.get(account)?.get(product_id)
    }

    /// Number of (account, product) price entries.
    pub fn account_price_count(&self) -> usize {
        self.data().account_prices.values().map(|m| m.len()).sum()
    }

    /// The owned content of this version.
    pub fn to_data(&self) -> Result<CatalogueData, CatalogueError> {
        rkyv::deserialize::<CatalogueData, rancor::Error>(self.data())
            .map_err(|e| CatalogueError(e.to_string()))
    }

    /// A builder holding a copy of this version, for producing the next one.
    pub fn to_builder(&self) -> Result<CatalogueBuilder, CatalogueError> {
        let data = self.to_data()?;
        let mut builder = CatalogueBuilder {
            products: Vec::with_capacity(data.products.len()),
            index: HashMap::with_capacity(data.products.len()),
            categories: data.categories,
            brands: data.brands,
            account_prices: data.account_prices,
        };
        for product in data.products {
            builder.upsert_product(product);
        }
        Ok(builder)
    }

    /// A builder with this version's categories, brands and account prices but no
    /// products, for a full feed that replaces every product.
    pub fn to_builder_without_products(&self) -> Result<CatalogueBuilder, CatalogueError> {
        let de = |e: rancor::Error| CatalogueError(e.to_string());
        let data = self.data();
        Ok(CatalogueBuilder {
            products: Vec::new(),
            index: HashMap::new(),
            categories: rkyv::deserialize::<_, rancor::Error>(&data.categories).map_err(de)?,
            brands: rkyv::deserialize::<_, rancor::Error>(&data.brands).map_err(de)?,
            account_prices: rkyv::deserialize::<_, rancor::Error>(&data.account_prices)
                .map_err(de)?,
        })
    }
}

impl ArchivedProduct {
    /// The SKU that `RelatedProducts` and `AssociatedSkus` of other products refer to.
    pub fn sku_or_id(&self) -> &str {
        self.sku.as_ref().map_or(self.id.as_str(), |s| s.as_str())
    }

    /// Whether `now` lies inside the product's `StartDate`..`EndDate` window.
    pub fn is_live_at(&self, now: UnixMillis) -> bool {
        self.available_from
            .as_ref()
            .is_none_or(|from| now >= from.to_native())
            && self
                .available_until
                .as_ref()
                .is_none_or(|until| now <= until.to_native())
    }

    /// Whether a visitor with this B2B account id (if any) may see the product.
    pub fn visible_to(&self, account: Option<&str>) -> bool {
        match &self.visibility {
            ArchivedVisibility::Everyone => true,
            ArchivedVisibility::OnlyAccounts(ids) => {
                account.is_some_and(|a| ids.iter().any(|i| i == a))
            }
            ArchivedVisibility::ExceptAccounts(ids) => {
                !account.is_some_and(|a| ids.iter().any(|i| i == a))
            }
        }
    }

    /// The prices of a user group, if the product has any.
    pub fn group_prices(&self, group: &str) -> Option<&ArchivedPriceSet> {
        self.group_prices
            .iter()
            .find(|g| g.group == group)
            .map(|g| &g.prices)
    }
}

impl ArchivedPriceSet {
    /// The regular price in `currency`.
    pub fn price_in(&self, currency: Currency) -> Option<Money> {
        self.prices
            .iter()
            .map(ArchivedMoney::to_native)
            .find(|m| m.currency == currency)
    }

    /// The sale price in `currency`.
    pub fn sale_in(&self, currency: Currency) -> Option<Money> {
        self.sale_prices
            .iter()
            .map(ArchivedMoney::to_native)
            .find(|m| m.currency == currency)
    }
}

/// Accumulates products and records, then builds the indexes of a [`Catalogue`].
#[derive(Debug, Default)]
pub struct CatalogueBuilder {
    products: Vec<Option<Product>>,
    index: HashMap<String, usize>,
    categories: HashMap<String, Category>,
    brands: HashMap<String, Brand>,
    account_prices: HashMap<String, HashMap<String, PriceSet>>,
}

impl CatalogueBuilder {
    /// An empty builder.
    pub fn new() -> CatalogueBuilder {
        CatalogueBuilder::default()
    }

    /// Adds a product, or replaces the whole product with the same id in place.
    pub fn upsert_product(&mut self, product: Product) {
        match self.index.get(&product.id) {
            Some(&slot) => {
                if let Some(entry) = self.products.get_mut(slot) {
                    *entry = Some(product);
                }
            }
            None => {
                self.index.insert(product.id.clone(), self.products.len());
                self.products.push(Some(product));
            }
        }
    }

    /// Removes a product and its account prices; returns whether it existed.
    pub fn remove_product(&mut self, id: &str) -> bool {
        let Some(slot) = self.index.remove(id) else {
            return false;
        };
        if let Some(entry) = self.products.get_mut(slot) {
            *entry = None;
        }
        for prices in self.account_prices.values_mut() {
            prices.remove(id);
        }
        true
    }

    /// Whether a product with this id is present.
    pub fn contains_product(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    /// The product with this id, for editing.
    pub fn product_mut(&mut self, id: &str) -> Option<&mut Product> {
        let slot = *self.index.get(id)?;
        self.products.get_mut(slot)?.as_mut()
    }

    /// Replaces all category records.
    pub fn set_categories(&mut self, categories: Vec<Category>) {
        self.categories = categories.into_iter().map(|c| (c.id.clone(), c)).collect();
    }

    /// Replaces all brand records.
    pub fn set_brands(&mut self, brands: Vec<Brand>) {
        self.brands = brands.into_iter().map(|b| (b.id.clone(), b)).collect();
    }

    /// Sets the prices of one account for one product.
    pub fn set_account_prices(&mut self, account: &str, product_id: &str, prices: PriceSet) {
        self.account_prices
            .entry(account.to_owned())
            .or_default()
            .insert(product_id.to_owned(), prices);
    }

    /// Removes the prices of one account for one product; returns whether they existed.
    pub fn remove_account_prices(&mut self, account: &str, product_id: &str) -> bool {
        let Some(prices) = self.account_prices.get_mut(account) else {
            return false;
        };
        let removed = prices.remove(product_id).is_some();
        if prices.is_empty() {
            self.account_prices.remove(account);
        }
        removed
    }

    /// Drops account prices of products the builder does not hold.
    pub fn retain_account_prices_of_products(&mut self) {
        let index = &self.index;
        for prices in self.account_prices.values_mut() {
            prices.retain(|product_id, _| index.contains_key(product_id));
        }
        self.account_prices.retain(|_, prices| !prices.is_empty());
    }

    /// Assigns dense ids in insertion order, builds every index and archives the result.
    pub fn build(self) -> Result<Catalogue, CatalogueError> {
        let data = self.into_data();
        let frozen = Frozen::from_value(&data).map_err(|e| CatalogueError(e.to_string()))?;
        Ok(Catalogue::from_frozen(frozen))
    }

    /// Assigns dense ids in insertion order and builds every index.
    ///
    /// The similarity neighbours are computed in parallel on the current rayon pool (the
    /// ingest pool when called from a feed build).
    pub fn into_data(self) -> CatalogueData {
        let products: Vec<Product> = self.products.into_iter().flatten().collect();
        let mut by_id = HashMap::with_capacity(products.len());
        let mut by_sku = HashMap::with_capacity(products.len());
        let mut by_category: HashMap<String, Vec<ProductIdx>> = HashMap::new();
        let mut by_brand: HashMap<String, Vec<ProductIdx>> = HashMap::new();
        for (idx, product) in products.iter().enumerate() {
            let idx = idx as ProductIdx;
            by_id.insert(product.id.clone(), idx);
            by_sku.entry(product.sku_or_id().to_owned()).or_insert(idx);
            for category in &product.categories {
                by_category.entry(category.clone()).or_default().push(idx);
            }
            if let Some(brand) = &product.brand {
                by_brand.entry(brand.clone()).or_default().push(idx);
            }
        }
        let similar = similar::neighbours(&products, &by_category);
        CatalogueData {
            products,
            by_id,
            by_sku,
            by_category,
            by_brand,
            similar,
            categories: self.categories,
            brands: self.brands,
            account_prices: self.account_prices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(id: &str, categories: &[&str]) -> Product {
        Product {
            id: id.to_owned(),
            title: format!("Product {id}"),
            categories: categories.iter().map(|c| (*c).to_owned()).collect(),
            ..Product::default()
        }
    }

    #[test]
    fn builds_dense_ids_and_indexes() {
        let mut builder = CatalogueBuilder::new();
        builder.upsert_product(product("a", &["c1"]));
        builder.upsert_product(product("b", &["c1", "c2"]));
        builder.upsert_product(Product {
            sku: Some("SKU-C".into()),
            ..product("c", &[])
        });
        let catalogue = builder.build().unwrap();
        assert_eq!(catalogue.len(), 3);
        assert_eq!(catalogue.idx_of("b"), Some(1));
        assert_eq!(catalogue.idx_of_sku("SKU-C"), Some(2));
        assert_eq!(catalogue.idx_of_sku("a"), Some(0));
        assert_eq!(catalogue.in_category("c1"), [0, 1]);
        assert!(catalogue.in_category("nope").is_empty());
    }

    #[test]
    fn builder_from_version_replaces_and_removes() {
        let mut builder = CatalogueBuilder::new();
        builder.upsert_product(product("a", &["c1"]));
        builder.upsert_product(product("b", &["c1"]));
        builder.set_account_prices("acc", "a", PriceSet::default());
        let first = builder.build().unwrap();

        let mut next = first.to_builder().unwrap();
        assert!(next.remove_product("a"));
        assert!(!next.remove_product("zzz"));
        next.upsert_product(product("b", &["c2"]));
        let second = next.build().unwrap();
        assert_eq!(second.len(), 1);
        assert_eq!(second.in_category("c2"), [0]);
        assert!(second.account_prices("acc", "a").is_none());
        // The first version is untouched.
        assert_eq!(first.len(), 2);
        assert!(first.account_prices("acc", "a").is_some());
    }

    #[test]
    fn visibility_rules() {
        let only = Visibility::OnlyAccounts(vec!["acc1".into()]);
        assert!(only.allows(Some("acc1")));
        assert!(!only.allows(Some("acc2")));
        assert!(!only.allows(None));
        let except = Visibility::ExceptAccounts(vec!["acc1".into()]);
        assert!(!except.allows(Some("acc1")));
        assert!(except.allows(Some("acc2")));
        assert!(except.allows(None));
    }
}
