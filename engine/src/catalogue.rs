//! The product catalogue: products under dense `u32` ids, categories, brands and
//! account-specific prices.
//!
//! A [`Catalogue`] is immutable once built; readers hold an `Arc` of one version for a
//! whole request. Changes go through a [`CatalogueBuilder`] (from scratch, or from an
//! existing version with [`Catalogue::to_builder`]) and produce a new version that the
//! owner swaps in. External ids (strings) map to dense [`ProductIdx`] through one table.

use std::collections::HashMap;

use crate::money::{Currency, Money};

/// Dense index of a product inside one catalogue version.
pub type ProductIdx = u32;

/// Milliseconds since the Unix epoch, UTC.
pub type UnixMillis = i64;

/// Which B2B accounts may see a product.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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

/// One product as the store described it.
#[derive(Debug, Clone, PartialEq, Default)]
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
    pub group_prices: Vec<(String, PriceSet)>,
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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

/// One immutable version of an account's catalogue.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    products: Vec<Product>,
    by_id: HashMap<String, ProductIdx>,
    by_sku: HashMap<String, ProductIdx>,
    by_category: HashMap<String, Vec<ProductIdx>>,
    categories: HashMap<String, Category>,
    brands: HashMap<String, Brand>,
    /// account id → product id → prices for that account.
    account_prices: HashMap<String, HashMap<String, PriceSet>>,
}

impl Catalogue {
    /// Number of products.
    pub fn len(&self) -> usize {
        self.products.len()
    }

    /// Whether there are no products.
    pub fn is_empty(&self) -> bool {
        self.products.is_empty()
    }

    /// All products in dense-id order.
    pub fn products(&self) -> &[Product] {
        &self.products
    }

    /// The product at a dense index.
    pub fn product(&self, idx: ProductIdx) -> Option<&Product> {
        self.products.get(idx as usize)
    }

    /// The dense index of an external product id.
    pub fn idx_of(&self, id: &str) -> Option<ProductIdx> {
        self.by_id.get(id).copied()
    }

    /// The dense index of the product with this SKU (or id, when it has no SKU).
    pub fn idx_of_sku(&self, sku: &str) -> Option<ProductIdx> {
        self.by_sku.get(sku).copied()
    }

    /// Products of a category, in dense-id order.
    pub fn in_category(&self, category: &str) -> &[ProductIdx] {
        self.by_category.get(category).map_or(&[], Vec::as_slice)
    }

    /// A category record.
    pub fn category(&self, id: &str) -> Option<&Category> {
        self.categories.get(id)
    }

    /// Number of category records.
    pub fn category_count(&self) -> usize {
        self.categories.len()
    }

    /// A brand record.
    pub fn brand(&self, id: &str) -> Option<&Brand> {
        self.brands.get(id)
    }

    /// Number of brand records.
    pub fn brand_count(&self) -> usize {
        self.brands.len()
    }

    /// The prices a B2B account has for a product, if the store set any.
    pub fn account_prices(&self, account: &str, product_id: &str) -> Option<&PriceSet> {
        self.account_prices.get(account)?.get(product_id)
    }

    /// Number of (account, product) price entries.
    pub fn account_price_count(&self) -> usize {
        self.account_prices.values().map(HashMap::len).sum()
    }

    /// A builder with this version's categories, brands and account prices but no
    /// products, for a full feed that replaces every product.
    pub fn to_builder_without_products(&self) -> CatalogueBuilder {
        CatalogueBuilder {
            products: Vec::new(),
            index: HashMap::new(),
            categories: self.categories.clone(),
            brands: self.brands.clone(),
            account_prices: self.account_prices.clone(),
        }
    }

    /// A builder holding a copy of this version, for producing the next one.
    pub fn to_builder(&self) -> CatalogueBuilder {
        let mut builder = CatalogueBuilder {
            products: Vec::with_capacity(self.products.len()),
            index: HashMap::with_capacity(self.products.len()),
            categories: self.categories.clone(),
            brands: self.brands.clone(),
            account_prices: self.account_prices.clone(),
        };
        for product in &self.products {
            builder.upsert_product(product.clone());
        }
        builder
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

    /// Assigns dense ids in insertion order and builds every index.
    pub fn build(self) -> Catalogue {
        let products: Vec<Product> = self.products.into_iter().flatten().collect();
        let mut by_id = HashMap::with_capacity(products.len());
        let mut by_sku = HashMap::with_capacity(products.len());
        let mut by_category: HashMap<String, Vec<ProductIdx>> = HashMap::new();
        for (idx, product) in products.iter().enumerate() {
            let idx = idx as ProductIdx;
            by_id.insert(product.id.clone(), idx);
            by_sku.entry(product.sku_or_id().to_owned()).or_insert(idx);
            for category in &product.categories {
                by_category.entry(category.clone()).or_default().push(idx);
            }
        }
        Catalogue {
            products,
            by_id,
            by_sku,
            by_category,
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
        let catalogue = builder.build();
        assert_eq!(catalogue.len(), 3);
        assert_eq!(catalogue.idx_of("b"), Some(1));
        assert_eq!(catalogue.idx_of_sku("SKU-C"), Some(2));
        assert_eq!(catalogue.idx_of_sku("a"), Some(0));
        assert_eq!(catalogue.in_category("c1"), &[0, 1]);
        assert!(catalogue.in_category("nope").is_empty());
    }

    #[test]
    fn builder_from_version_replaces_and_removes() {
        let mut builder = CatalogueBuilder::new();
        builder.upsert_product(product("a", &["c1"]));
        builder.upsert_product(product("b", &["c1"]));
        builder.set_account_prices("acc", "a", PriceSet::default());
        let first = builder.build();

        let mut next = first.to_builder();
        assert!(next.remove_product("a"));
        assert!(!next.remove_product("zzz"));
        next.upsert_product(product("b", &["c2"]));
        let second = next.build();
        assert_eq!(second.len(), 1);
        assert_eq!(second.in_category("c2"), &[0]);
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
