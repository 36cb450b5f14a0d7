//! The archived layout of one catalogue version: [`CatalogueData`], what a snapshot
//! holds and serving reads in place. Products are [`StoredProduct`]s under dense ids;
//! category and brand names are interned; the products' own prices live in one
//! [`PriceColumn`] per currency rather than in each product.

use std::collections::HashMap;

use super::ProductIdx;
use super::model::{ArchivedStoredProduct, Brand, Category, PriceSet, Product, StoredProduct};
use crate::money::{Currency, Money};

/// Marks "no price" in a price column.
pub const NO_PRICE: i64 = i64::MIN;

/// The products' own prices in one currency, indexed by dense product id.
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct PriceColumn {
    /// The currency of the column.
    pub currency: Currency,
    /// Regular price in minor units, or [`NO_PRICE`].
    pub regular: Vec<i64>,
    /// Sale price in minor units, or [`NO_PRICE`].
    pub sale: Vec<i64>,
}

/// The archived content of one catalogue version.
#[derive(Debug, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CatalogueData {
    pub(crate) products: Vec<StoredProduct>,
    /// Interned category ids.
    pub(crate) category_names: Vec<String>,
    pub(crate) category_index: HashMap<String, u32>,
    /// Interned brand ids.
    pub(crate) brand_names: Vec<String>,
    pub(crate) brand_index: HashMap<String, u32>,
    /// One column per currency any product is priced in.
    pub(crate) price_columns: Vec<PriceColumn>,
    pub(crate) by_id: HashMap<String, ProductIdx>,
    pub(crate) by_sku: HashMap<String, ProductIdx>,
    /// Members of each interned category.
    pub(crate) by_category: Vec<Vec<ProductIdx>>,
    /// Members of each interned brand.
    pub(crate) by_brand: Vec<Vec<ProductIdx>>,
    /// Content-similarity neighbours of each product, best first (see [`similar`]).
    pub(crate) similar: Vec<Vec<ProductIdx>>,
    pub(crate) categories: HashMap<String, Category>,
    pub(crate) brands: HashMap<String, Brand>,
    /// account id → product id → prices for that account.
    pub(crate) account_prices: HashMap<String, HashMap<String, PriceSet>>,
}

impl CatalogueData {
    /// The products as the store described them, in dense-id order.
    pub fn products(&self) -> Vec<Product> {
        (0..self.products.len())
            .filter_map(|i| self.product(i))
            .collect()
    }

    fn product(&self, i: usize) -> Option<Product> {
        let stored = self.products.get(i)?;
        let name = |names: &[String], n: u32| names.get(n as usize).cloned();
        let mut prices = PriceSet::default();
        for column in &self.price_columns {
            let at = |values: &[i64]| values.get(i).copied().filter(|m| *m != NO_PRICE);
            if let Some(minor) = at(&column.regular) {
                prices.prices.push(Money {
                    minor,
                    currency: column.currency,
                });
            }
            if let Some(minor) = at(&column.sale) {
                prices.sale_prices.push(Money {
                    minor,
                    currency: column.currency,
                });
            }
        }
        let categories = stored
            .categories
            .iter()
            .filter_map(|c| name(&self.category_names, *c))
            .collect();
        let brand = stored.brand.and_then(|b| name(&self.brand_names, b));
        Some(stored.clone().into_product(categories, brand, prices))
    }
}

/// The archived form of a product, as serving reads it.
pub type ArchivedProduct = ArchivedStoredProduct;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::CatalogueBuilder;
    use crate::testing::money;

    #[test]
    fn interned_names_and_price_columns_round_trip() {
        let products = vec![
            Product {
                id: "a".into(),
                categories: vec!["c1".into(), "c2".into()],
                brand: Some("b1".into()),
                prices: PriceSet {
                    prices: vec![money(100, "GBP"), money(130, "USD")],
                    sale_prices: vec![money(80, "GBP")],
                },
                ..Product::default()
            },
            Product {
                id: "b".into(),
                categories: vec!["c2".into()],
                prices: PriceSet {
                    prices: vec![money(500, "JPY")],
                    sale_prices: vec![],
                },
                ..Product::default()
            },
        ];
        let mut builder = CatalogueBuilder::new();
        for product in &products {
            builder.upsert_product(product.clone());
        }
        let catalogue = builder.build().unwrap();
        let a = catalogue.product(0).unwrap();
        assert_eq!(catalogue.categories_of(a).collect::<Vec<_>>(), ["c1", "c2"]);
        assert_eq!(catalogue.brand_of(a), Some("b1"));
        assert_eq!(catalogue.brand_of(catalogue.product(1).unwrap()), None);
        let gbp = Currency::from_code("GBP").unwrap();
        let jpy = Currency::from_code("JPY").unwrap();
        assert_eq!(
            catalogue.own_prices(0, gbp),
            (Some(money(100, "GBP")), Some(money(80, "GBP")))
        );
        assert_eq!(catalogue.own_prices(1, gbp), (None, None));
        assert_eq!(
            catalogue.own_prices(1, jpy),
            (Some(money(500, "JPY")), None)
        );
        assert_eq!(catalogue.in_category("c2"), [0, 1]);
        assert_eq!(catalogue.of_brand("b1"), [0]);
        assert_eq!(
            catalogue.to_data().unwrap().products(),
            products,
            "the archive keeps every field"
        );
    }
}
