//! The delta overlay: changes made to a catalogue since its base archive was built.
//!
//! A [`Catalogue`] is a base archive (owned or memory-mapped) plus an `Overlay`. A
//! delta never rebuilds the base: a [`CatalogueEdit`] copies the overlay (its size is
//! the number of changes, not of products), records the delta's changes in it and
//! produces the next version. Readers see base and overlay as one catalogue:
//!
//! - A replaced product keeps its dense index; its new version lives in the overlay and
//!   the base entry is marked *touched*. An added product gets the next index after the
//!   highest one in use; a deleted one leaves its index unused (`product` answers `None`).
//! - Category and brand names new to the base are interned after the base's names, so
//!   overlay products use the same `u32` name ids as base products.
//! - Account prices set or deleted since the base are looked up in the overlay first;
//!   deleting a product voids the base's account prices of that product id.
//!
//! Compaction ([`Catalogue::compact`]) folds the overlay into a new base; similarity
//! neighbours of products added or changed since the base are computed then.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use vitrine_snapshots::Frozen;

use crate::catalogue::{
    ArchivedCatalogueData, Catalogue, CatalogueError, Edited, PriceSet, Product, ProductIdx,
    StoredProduct,
};

/// A product added or replaced since the base.
#[derive(Debug)]
pub(crate) struct Changed {
    /// The product as serving reads it, names interned like the base's.
    pub(crate) stored: Frozen<StoredProduct>,
    /// Its own prices (base products keep theirs in the price columns).
    pub(crate) prices: PriceSet,
}

/// Names interned beyond the base's table.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExtraNames {
    pub(crate) names: Vec<String>,
    pub(crate) index: HashMap<String, u32>,
}

/// Account prices set (`Some`) or deleted (`None`) since the base.
pub(crate) type PriceChange = Option<Arc<Frozen<PriceSet>>>;

/// Changes since the base archive. Empty (and `active == false`) for a fresh base.
#[derive(Debug, Clone, Default)]
pub(crate) struct Overlay {
    /// Whether anything changed; the fields below are meaningful only then.
    pub(crate) active: bool,
    /// Dense index → new version, or `None` for a deleted product.
    pub(crate) changed: HashMap<ProductIdx, Option<Arc<Changed>>>,
    /// One bit per base product: set when the overlay holds its current state.
    pub(crate) touched: Vec<u64>,
    /// Product id → index (`None`: deleted) for every id changed since the base.
    pub(crate) ids: HashMap<String, Option<ProductIdx>>,
    /// SKU → index (`None`: no longer that product's SKU), for SKUs changed since the base.
    pub(crate) skus: HashMap<String, Option<ProductIdx>>,
    /// The next index to give an added product.
    pub(crate) next_idx: ProductIdx,
    /// Products present.
    pub(crate) live: usize,
    pub(crate) categories: ExtraNames,
    pub(crate) brands: ExtraNames,
    /// Overlay products of each category / brand name id.
    pub(crate) category_members: HashMap<u32, BTreeSet<ProductIdx>>,
    pub(crate) brand_members: HashMap<u32, BTreeSet<ProductIdx>>,
    /// account id → product id → prices (`None`: deleted) set since the base.
    pub(crate) account_prices: HashMap<String, HashMap<String, PriceChange>>,
    /// Product ids deleted since the base: the base's account prices for them are void.
    pub(crate) cleared_prices: HashSet<String>,
}

impl Overlay {
    /// Whether the overlay holds the state of `idx` (a touched base product, or one
    /// beyond the base).
    pub(crate) fn covers(&self, idx: ProductIdx, base_len: usize) -> bool {
        let i = idx as usize;
        i >= base_len
            || self
                .touched
                .get(i / 64)
                .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn touch(&mut self, idx: ProductIdx) {
        let i = idx as usize;
        if let Some(word) = self.touched.get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
    }

    /// Changes held: products changed plus account-price entries set or deleted.
    pub(crate) fn size(&self) -> usize {
        self.changed.len()
            + self
                .account_prices
                .values()
                .map(HashMap::len)
                .sum::<usize>()
            + self.cleared_prices.len()
    }

    fn leave_memberships(&mut self, idx: ProductIdx) {
        let Some(Some(old)) = self.changed.get(&idx) else {
            return;
        };
        let archived = old.stored.get();
        let categories: Vec<u32> = archived.categories.iter().map(|c| c.to_native()).collect();
        let brand = archived.brand.as_ref().map(|b| b.to_native());
        for category in categories {
            if let Some(members) = self.category_members.get_mut(&category) {
                members.remove(&idx);
            }
        }
        if let Some(brand) = brand
            && let Some(members) = self.brand_members.get_mut(&brand)
        {
            members.remove(&idx);
        }
    }
}

fn intern(
    extra: &mut ExtraNames,
    base_index: &rkyv::collections::swiss_table::ArchivedHashMap<
        rkyv::string::ArchivedString,
        rkyv::rend::u32_le,
    >,
    base_len: usize,
    name: &str,
) -> u32 {
    if let Some(id) = base_index.get(name) {
        return id.to_native();
    }
    if let Some(&id) = extra.index.get(name) {
        return id;
    }
    let id = (base_len + extra.names.len()) as u32;
    extra.names.push(name.to_owned());
    extra.index.insert(name.to_owned(), id);
    id
}

/// The next version of a catalogue, being made: reads see every change made so far.
#[derive(Debug)]
pub struct CatalogueEdit {
    catalogue: Catalogue,
    /// The products added, replaced or removed so far.
    touched: Vec<ProductIdx>,
}

impl Catalogue {
    /// Starts the next version from this one; the base is shared, the overlay copied.
    pub fn edit(&self) -> CatalogueEdit {
        CatalogueEdit {
            catalogue: self.clone(),
            touched: Vec::new(),
        }
    }
}

impl CatalogueEdit {
    /// The catalogue as edited so far.
    pub fn view(&self) -> &Catalogue {
        &self.catalogue
    }

    /// The version with every change made.
    pub fn finish(mut self) -> Catalogue {
        let mut products = std::mem::take(&mut self.touched);
        products.sort_unstable();
        products.dedup();
        self.catalogue.edited = Some(Arc::new(Edited {
            parent: self.catalogue.version,
            products: products.into(),
        }));
        self.catalogue.version = crate::catalogue::next_version();
        self.catalogue
    }

    fn parts(&mut self) -> (&ArchivedCatalogueData, &mut Overlay) {
        let base = self.catalogue.frozen.get();
        let base_len = base.products.len();
        let overlay = Arc::make_mut(&mut self.catalogue.overlay);
        if !overlay.active {
            overlay.active = true;
            overlay.next_idx = base_len as ProductIdx;
            overlay.live = base_len;
            overlay.touched = vec![0; base_len.div_ceil(64)];
        }
        (base, overlay)
    }

    /// Whether a product with this id is present.
    pub fn contains_product(&self, id: &str) -> bool {
        self.catalogue.idx_of(id).is_some()
    }

    /// The current version of a product, owned, for changing it.
    pub fn product(&self, id: &str) -> Result<Option<Product>, CatalogueError> {
        match self.catalogue.idx_of(id) {
            Some(idx) => self.catalogue.owned_product(idx),
            None => Ok(None),
        }
    }

    /// Adds a product, or replaces the whole product with the same id (keeping its
    /// dense index).
    pub fn upsert_product(&mut self, product: Product) -> Result<(), CatalogueError> {
        let existing = self.catalogue.idx_of(&product.id);
        let old_sku = existing
            .and_then(|idx| self.catalogue.product(idx))
            .map(|p| p.sku_or_id().to_owned())
            .filter(|sku| self.catalogue.idx_of_sku(sku) == existing);
        let new_sku = product.sku_or_id().to_owned();
        let id = product.id.clone();
        let (base, overlay) = self.parts();
        let base_len = base.products.len();
        let mut categories: Vec<u32> = Vec::with_capacity(product.categories.len());
        for name in &product.categories {
            let category = intern(
                &mut overlay.categories,
                &base.category_index,
                base.category_names.len(),
                name,
            );
            if !categories.contains(&category) {
                categories.push(category);
            }
        }
        let brand = product.brand.as_deref().map(|name| {
            intern(
                &mut overlay.brands,
                &base.brand_index,
                base.brand_names.len(),
                name,
            )
        });
        let idx = match existing {
            Some(idx) => {
                overlay.leave_memberships(idx);
                idx
            }
            None => {
                let idx = overlay.next_idx;
                overlay.next_idx += 1;
                overlay.live += 1;
                idx
            }
        };
        if (idx as usize) < base_len {
            overlay.touch(idx);
        }
        for category in &categories {
            overlay
                .category_members
                .entry(*category)
                .or_default()
                .insert(idx);
        }
        if let Some(brand) = brand {
            overlay.brand_members.entry(brand).or_default().insert(idx);
        }
        let prices = product.prices.clone();
        let stored = StoredProduct::from_product(product, categories, brand);
        let stored = Frozen::from_value(&stored).map_err(|e| CatalogueError(e.to_string()))?;
        if let Some(old) = old_sku
            && old != new_sku
        {
            overlay.skus.insert(old, None);
        }
        overlay.skus.insert(new_sku, Some(idx));
        overlay.ids.insert(id, Some(idx));
        overlay
            .changed
            .insert(idx, Some(Arc::new(Changed { stored, prices })));
        self.touched.push(idx);
        Ok(())
    }

    /// Removes a product and its account prices; returns whether it existed.
    pub fn remove_product(&mut self, id: &str) -> bool {
        let Some(idx) = self.catalogue.idx_of(id) else {
            return false;
        };
        let sku = self
            .catalogue
            .product(idx)
            .map(|p| p.sku_or_id().to_owned())
            .filter(|sku| self.catalogue.idx_of_sku(sku) == Some(idx));
        let (base, overlay) = self.parts();
        let base_len = base.products.len();
        overlay.leave_memberships(idx);
        if (idx as usize) < base_len {
            overlay.touch(idx);
        }
        overlay.changed.insert(idx, None);
        overlay.ids.insert(id.to_owned(), None);
        if let Some(sku) = sku {
            overlay.skus.insert(sku, None);
        }
        overlay.live = overlay.live.saturating_sub(1);
        for prices in overlay.account_prices.values_mut() {
            prices.remove(id);
        }
        overlay
            .account_prices
            .retain(|_, prices| !prices.is_empty());
        overlay.cleared_prices.insert(id.to_owned());
        self.touched.push(idx);
        true
    }

    /// Sets the prices of one account for one product.
    pub fn set_account_prices(
        &mut self,
        account: &str,
        product_id: &str,
        prices: &PriceSet,
    ) -> Result<(), CatalogueError> {
        let frozen = Frozen::from_value(prices).map_err(|e| CatalogueError(e.to_string()))?;
        let (_, overlay) = self.parts();
        overlay
            .account_prices
            .entry(account.to_owned())
            .or_default()
            .insert(product_id.to_owned(), Some(Arc::new(frozen)));
        Ok(())
    }

    /// Removes the prices of one account for one product; returns whether they existed.
    pub fn remove_account_prices(&mut self, account: &str, product_id: &str) -> bool {
        let existed = self.catalogue.account_prices(account, product_id).is_some();
        let (_, overlay) = self.parts();
        overlay
            .account_prices
            .entry(account.to_owned())
            .or_default()
            .insert(product_id.to_owned(), None);
        existed
    }
}

#[cfg(test)]
mod tests {
    use crate::catalogue::{CatalogueBuilder, FULL_DIFF_LIMIT};
    use crate::money::Money;

    use super::*;
    use crate::testing::{self, gbp};

    fn product(id: &str, categories: &[&str], brand: Option<&str>, price: i64) -> Product {
        Product {
            categories: testing::names(categories),
            brand: brand.map(str::to_owned),
            prices: testing::priced(price, "GBP"),
            ..testing::product(id)
        }
    }

    /// `catalogue`'s next version with `products` written.
    fn upserted(catalogue: &Catalogue, products: impl IntoIterator<Item = Product>) -> Catalogue {
        let mut edit = catalogue.edit();
        for product in products {
            edit.upsert_product(product).unwrap();
        }
        edit.finish()
    }

    fn base() -> Catalogue {
        let mut builder = CatalogueBuilder::new();
        builder.upsert_product(product("a", &["c1"], Some("b1"), 100));
        builder.upsert_product(product("b", &["c1", "c2"], None, 200));
        builder.upsert_product(Product {
            sku: Some("SKU-C".into()),
            ..product("c", &["c2"], Some("b1"), 300)
        });
        builder.set_account_prices("acc", "a", PriceSet::default());
        builder.build().unwrap()
    }

    /// Versions of one base read a product alike until an edit changes it; a product
    /// changed once reads alike in the versions after that change; another base never
    /// reads alike.
    #[test]
    fn same_product_and_changed_since_name_exactly_what_edits_changed_between_two_versions() {
        let first = base();
        let mut edit = first.edit();
        edit.upsert_product(product("b", &["c3"], Some("b2"), 250))
            .unwrap();
        edit.upsert_product(product("d", &["c1"], None, 400))
            .unwrap();
        let second = edit.finish();
        let mut edit = second.edit();
        assert!(edit.remove_product("a"));
        let third = edit.finish();

        let (a, b, c, d) = (0, 1, 2, 3);
        assert!(second.same_product(&first, a));
        assert!(second.same_product(&first, c));
        assert!(!second.same_product(&first, b), "b was replaced");
        assert!(!second.same_product(&first, d), "d was added");
        assert!(third.same_product(&second, b), "the same change of b");
        assert!(third.same_product(&second, d));
        assert!(third.same_product(&first, c));
        assert!(!third.same_product(&second, a), "a was removed");
        assert!(first.same_product(&first.clone(), b));
        let other_base = base();
        assert!(!other_base.same_product(&first, c), "another base archive");
        let compacted = third.compact().unwrap();
        assert!(
            !compacted.same_product(&third, c),
            "compaction makes a new base"
        );

        assert_eq!(second.changed_since(&first), Some(vec![b, d]));
        assert_eq!(third.changed_since(&second), Some(vec![a]));
        assert_eq!(third.changed_since(&first), Some(vec![a, b, d]));
        assert_eq!(first.changed_since(&third), Some(vec![a, b, d]));
        assert_eq!(third.changed_since(&third), Some(vec![]));
        assert_eq!(other_base.changed_since(&first), None);
        // An edit that writes a product again as it was still names it (a new change).
        let fourth = upserted(&third, [product("c", &["c2"], Some("b1"), 300)]);
        assert_eq!(fourth.changed_since(&third), Some(vec![c]));
    }

    /// Versions that are not parent and child are compared change by change up to
    /// FULL_DIFF_LIMIT changes between their overlays; past it, nothing is said.
    #[test]
    fn changed_since_gives_up_past_its_limit_for_versions_not_parent_and_child() {
        let first = base();
        let second = upserted(
            &first,
            (0..FULL_DIFF_LIMIT / 2 - 2).map(|i| product(&format!("n{i}"), &["c1"], None, 100)),
        );
        assert_eq!(
            second.changed_since(&first).map(|changed| changed.len()),
            Some(FULL_DIFF_LIMIT / 2 - 2),
            "parent and child: the edit's products"
        );
        let third = upserted(&second, [product("a", &["c1"], None, 150)]);
        let fourth = upserted(&third, [product("b", &["c1"], None, 150)]);
        // 2,046 and 2,048 changes.
        assert_eq!(
            fourth.changed_since(&second),
            Some(vec![0, 1]),
            "within the limit"
        );
        let fifth = upserted(&fourth, [product("c", &["c1"], None, 150)]);
        let sixth = upserted(&fifth, [product("n0", &["c2"], None, 150)]);
        // 2,046 and 2,049 changes.
        assert_eq!(sixth.changed_since(&second).map(|c| c.len()), Some(4));
        let seventh = upserted(
            &sixth,
            [
                product("z", &["c2"], None, 150),
                product("y", &["c2"], None, 150),
            ],
        );
        // 2,046 and 2,051 changes.
        assert_eq!(seventh.changed_since(&second), None, "past the limit");
    }

    #[test]
    fn an_edit_reads_as_one_catalogue_and_leaves_the_old_version_alone() {
        let first = base();
        let mut edit = first.edit();
        // Replace b: new category, new brand, new price.
        edit.upsert_product(product("b", &["c3"], Some("b2"), 250))
            .unwrap();
        // Add d in an existing and a new category.
        edit.upsert_product(product("d", &["c1", "c9"], Some("b1"), 400))
            .unwrap();
        assert!(edit.remove_product("a"));
        assert!(!edit.remove_product("zzz"));
        let next = edit.finish();

        assert_eq!(next.len(), 3);
        assert_eq!(next.idx_of("a"), None);
        assert_eq!(
            next.idx_of("b"),
            Some(1),
            "a replaced product keeps its index"
        );
        assert_eq!(next.idx_of("d"), Some(3));
        assert!(next.product(0).is_none());
        assert_eq!(next.product(1).unwrap().title, "Product b");
        assert_eq!(next.in_category("c1"), [3]);
        assert_eq!(next.in_category("c2"), [2]);
        assert_eq!(next.in_category("c3"), [1]);
        assert_eq!(next.in_category("c9"), [3]);
        assert_eq!(next.of_brand("b1"), [2, 3]);
        assert_eq!(next.of_brand("b2"), [1]);
        let d = next.product(3).unwrap();
        assert_eq!(next.categories_of(d).collect::<Vec<_>>(), ["c1", "c9"]);
        assert_eq!(next.brand_of(d), Some("b1"));
        assert_eq!(next.own_prices(1, gbp()).0.unwrap().minor, 250);
        assert_eq!(next.own_prices(2, gbp()).0.unwrap().minor, 300);
        assert_eq!(next.idx_of_sku("SKU-C"), Some(2));
        assert!(next.account_prices("acc", "a").is_none(), "deleted with a");
        assert_eq!(
            next.iter().map(|(idx, _)| idx).collect::<Vec<_>>(),
            [1, 2, 3]
        );

        // The first version is untouched.
        assert_eq!(first.len(), 3);
        assert_eq!(first.in_category("c1"), [0, 1]);
        assert!(first.account_prices("acc", "a").is_some());

        // Compaction keeps every product, in index order, with fresh indexes.
        let compacted = next.compact().unwrap();
        assert!(!compacted.has_overlay());
        assert_eq!(compacted.len(), 3);
        assert_eq!(compacted.idx_of("b"), Some(0));
        assert_eq!(compacted.idx_of("d"), Some(2));
        assert_eq!(compacted.in_category("c9"), [2]);
        assert_eq!(compacted.own_prices(0, gbp()).0.unwrap().minor, 250);
        assert_eq!(
            compacted.owned_product(2).unwrap(),
            next.owned_product(3).unwrap()
        );
    }

    #[test]
    fn skus_and_account_prices_follow_the_changes() {
        let mut edit = base().edit();
        edit.upsert_product(Product {
            sku: Some("SKU-NEW".into()),
            ..product("c", &["c2"], None, 300)
        })
        .unwrap();
        edit.set_account_prices(
            "acc",
            "b",
            &PriceSet {
                prices: vec![Money {
                    minor: 150,
                    currency: gbp(),
                }],
                sale_prices: Vec::new(),
            },
        )
        .unwrap();
        assert!(edit.remove_account_prices("acc", "a"));
        assert!(!edit.remove_account_prices("acc", "c"));
        let next = edit.finish();
        assert_eq!(next.idx_of_sku("SKU-C"), None);
        assert_eq!(next.idx_of_sku("SKU-NEW"), Some(2));
        assert!(next.account_prices("acc", "a").is_none());
        assert_eq!(
            next.account_prices("acc", "b")
                .unwrap()
                .price_in(gbp())
                .unwrap()
                .minor,
            150
        );
        assert_eq!(next.account_price_count(), 1);

        // A product deleted and added again does not get its old account prices back.
        let mut edit = base().edit();
        assert!(edit.remove_product("a"));
        edit.upsert_product(product("a", &["c1"], None, 100))
            .unwrap();
        let next = edit.finish();
        assert_eq!(next.idx_of("a"), Some(3));
        assert!(next.account_prices("acc", "a").is_none());
        assert_eq!(next.in_category("c1"), [1, 3]);
    }
}
