//! Making catalogue versions: [`CatalogueBuilder`] (owned [`Product`]s and records in,
//! dense ids, interned names, price columns and similarity neighbours out, archived
//! into a new base), and the way back from a version to a builder for the next one.

use std::collections::HashMap;

use rkyv::rancor;
use vitrine_snapshots::Frozen;

use super::layout::{CatalogueData, NO_PRICE, PriceColumn};
use super::model::{Brand, Category, PriceSet, Product, StoredProduct};
use super::read::Catalogue;
use super::{CatalogueError, ProductIdx};
use crate::money::Currency;
use crate::similar;

impl Catalogue {
    /// Number of (account, product) price entries (deserializes them all: for tests).
    #[cfg(test)]
    pub(crate) fn account_price_count(&self) -> usize {
        self.owned_account_prices()
            .map_or(0, |all| all.values().map(HashMap::len).sum())
    }

    /// Every account price, owned: the base's with the overlay's changes applied.
    fn owned_account_prices(
        &self,
    ) -> Result<HashMap<String, HashMap<String, PriceSet>>, CatalogueError> {
        let mut all: HashMap<String, HashMap<String, PriceSet>> =
            rkyv::deserialize::<_, rancor::Error>(&self.data().account_prices)
                .map_err(|e| CatalogueError(e.to_string()))?;
        let Some(overlay) = self.changes() else {
            return Ok(all);
        };
        for prices in all.values_mut() {
            prices.retain(|product, _| !overlay.cleared_prices.contains(product));
        }
        for (account, changes) in &overlay.account_prices {
            let prices = all.entry(account.clone()).or_default();
            for (product, change) in changes {
                match change {
                    Some(set) => {
                        let set = rkyv::deserialize::<PriceSet, rancor::Error>(set.get())
                            .map_err(|e| CatalogueError(e.to_string()))?;
                        prices.insert(product.clone(), set);
                    }
                    None => {
                        prices.remove(product);
                    }
                }
            }
        }
        all.retain(|_, prices| !prices.is_empty());
        Ok(all)
    }

    /// A product as the store described it (owned), by dense index.
    pub fn owned_product(&self, idx: ProductIdx) -> Result<Option<Product>, CatalogueError> {
        let Some(archived) = self.product(idx) else {
            return Ok(None);
        };
        let stored = rkyv::deserialize::<StoredProduct, rancor::Error>(archived)
            .map_err(|e| CatalogueError(e.to_string()))?;
        let categories = stored
            .categories
            .iter()
            .filter_map(|c| self.category_name(*c).map(str::to_owned))
            .collect();
        let brand = stored
            .brand
            .and_then(|b| self.brand_name(b).map(str::to_owned));
        Ok(Some(stored.into_product(
            categories,
            brand,
            self.price_set(idx),
        )))
    }

    /// The owned content of this version (overlay folded in, neighbours recomputed when
    /// there was one).
    pub fn to_data(&self) -> Result<CatalogueData, CatalogueError> {
        if self.has_overlay() {
            return Ok(self.to_builder()?.into_data());
        }
        rkyv::deserialize::<CatalogueData, rancor::Error>(self.data())
            .map_err(|e| CatalogueError(e.to_string()))
    }

    /// A builder holding a copy of this version, for producing the next one.
    pub fn to_builder(&self) -> Result<CatalogueBuilder, CatalogueError> {
        let mut builder = self.to_builder_without_products()?;
        builder.products.reserve(self.len());
        builder.index.reserve(self.len());
        for idx in 0..self.idx_bound() {
            if let Some(product) = self.owned_product(idx)? {
                builder.upsert_product(product);
            }
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
            account_prices: self.owned_account_prices()?,
        })
    }

    /// Folds the overlay into a new base (every index rebuilt, similarity neighbours
    /// computed on the current rayon pool). Indexes change: deleted products leave no gap.
    pub fn compact(&self) -> Result<Catalogue, CatalogueError> {
        self.to_builder()?.build()
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

    /// Drops every account price (a feed that carries them replaces them all).
    pub fn clear_account_prices(&mut self) {
        self.account_prices.clear();
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
        let mut names_by_category: HashMap<String, Vec<ProductIdx>> = HashMap::new();
        for (idx, product) in products.iter().enumerate() {
            let idx = idx as ProductIdx;
            by_id.insert(product.id.clone(), idx);
            by_sku.entry(product.sku_or_id().to_owned()).or_insert(idx);
            for category in &product.categories {
                names_by_category
                    .entry(category.clone())
                    .or_default()
                    .push(idx);
            }
        }
        let similar = similar::neighbours(&products, &names_by_category);

        let mut categories = Interned::default();
        let mut brands = Interned::default();
        let mut columns: Vec<PriceColumn> = Vec::new();
        let count = products.len();
        let mut stored = Vec::with_capacity(count);
        for (idx, mut product) in products.into_iter().enumerate() {
            let column = |columns: &mut Vec<PriceColumn>, currency: Currency| -> usize {
                match columns.iter().position(|c| c.currency == currency) {
                    Some(at) => at,
                    None => {
                        columns.push(PriceColumn {
                            currency,
                            regular: vec![NO_PRICE; count],
                            sale: vec![NO_PRICE; count],
                        });
                        columns.len() - 1
                    }
                }
            };
            for price in &product.prices.prices {
                let at = column(&mut columns, price.currency);
                if let Some(slot) = columns.get_mut(at).and_then(|c| c.regular.get_mut(idx)) {
                    *slot = price.minor;
                }
            }
            for price in &product.prices.sale_prices {
                let at = column(&mut columns, price.currency);
                if let Some(slot) = columns.get_mut(at).and_then(|c| c.sale.get_mut(idx)) {
                    *slot = price.minor;
                }
            }
            let idx = idx as ProductIdx;
            let mut category_ids: Vec<u32> = Vec::with_capacity(product.categories.len());
            for name in std::mem::take(&mut product.categories) {
                let id = categories.intern(name, idx);
                if !category_ids.contains(&id) {
                    category_ids.push(id);
                }
            }
            let brand = product.brand.take().map(|name| brands.intern(name, idx));
            stored.push(StoredProduct::from_product(product, category_ids, brand));
        }
        CatalogueData {
            products: stored,
            category_names: categories.names,
            category_index: categories.index,
            brand_names: brands.names,
            brand_index: brands.index,
            price_columns: columns,
            by_id,
            by_sku,
            by_category: categories.members,
            by_brand: brands.members,
            similar,
            categories: self.categories,
            brands: self.brands,
            account_prices: self.account_prices,
        }
    }
}

/// A name table being built: names, their index, and the products of each name.
#[derive(Debug, Default)]
struct Interned {
    names: Vec<String>,
    index: HashMap<String, u32>,
    members: Vec<Vec<ProductIdx>>,
}

impl Interned {
    fn intern(&mut self, name: String, product: ProductIdx) -> u32 {
        let id = match self.index.get(&name) {
            Some(&id) => id,
            None => {
                let id = self.names.len() as u32;
                self.index.insert(name.clone(), id);
                self.names.push(name);
                self.members.push(Vec::new());
                id
            }
        };
        if let Some(members) = self.members.get_mut(id as usize)
            && members.last() != Some(&product)
        {
            members.push(product);
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Visibility;
    use crate::testing;

    fn product(id: &str, categories: &[&str]) -> Product {
        Product {
            categories: testing::names(categories),
            ..testing::product(id)
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
