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

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use rkyv::rancor;
use vitrine_snapshots::Frozen;

use crate::money::{ArchivedMoney, Currency, Money};
use crate::overlay::Overlay;
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
fn account_listed<'a>(mut ids: impl Iterator<Item = &'a str>, account: Option<&str>) -> bool {
    account.is_some_and(|a| ids.any(|i| i == a))
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

/// One product as the store described it (the builder's input; the archive stores it as
/// a [`StoredProduct`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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

/// A product as the archive stores it: categories and brand interned (indexes into the
/// catalogue's name tables), its own prices in the catalogue's per-currency columns.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct StoredProduct {
    /// `Id`.
    pub id: String,
    /// `Sku`.
    pub sku: Option<String>,
    /// `Title`.
    pub title: String,
    /// `Description`.
    pub description: String,
    /// `Link`.
    pub link: String,
    /// `Image`.
    pub image: String,
    /// `ImageOverlay`.
    pub image_overlay: Option<String>,
    /// `AllImages`.
    pub all_images: Vec<String>,
    /// `GroupPrices`.
    pub group_prices: Vec<GroupPrice>,
    /// Interned `Categories`.
    pub categories: Vec<u32>,
    /// Interned `Brand`.
    pub brand: Option<u32>,
    /// `SearchTags`.
    pub search_tags: Vec<String>,
    /// `AssociatedSkus`.
    pub associated_skus: Vec<String>,
    /// `AssociatedIds`.
    pub associated_ids: Vec<String>,
    /// `RelatedProducts`.
    pub related_products: Vec<String>,
    /// `AccountInclusions` / `AccountExclusions`.
    pub visibility: Visibility,
    /// `ExcludeFromRecommenders`.
    pub exclude_from_recommenders: bool,
    /// `OnOffer`.
    pub on_offer: bool,
    /// `NewArrival`.
    pub new_arrival: bool,
    /// `StartDate`.
    pub available_from: Option<UnixMillis>,
    /// `EndDate`.
    pub available_until: Option<UnixMillis>,
}

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

impl StoredProduct {
    /// The stored form of a product whose categories and brand are interned already
    /// (its own prices go to the price columns or the overlay, not here).
    pub(crate) fn from_product(
        product: Product,
        categories: Vec<u32>,
        brand: Option<u32>,
    ) -> StoredProduct {
        StoredProduct {
            id: product.id,
            sku: product.sku,
            title: product.title,
            description: product.description,
            link: product.link,
            image: product.image,
            image_overlay: product.image_overlay,
            all_images: product.all_images,
            group_prices: product.group_prices,
            categories,
            brand,
            search_tags: product.search_tags,
            associated_skus: product.associated_skus,
            associated_ids: product.associated_ids,
            related_products: product.related_products,
            visibility: product.visibility,
            exclude_from_recommenders: product.exclude_from_recommenders,
            on_offer: product.on_offer,
            new_arrival: product.new_arrival,
            available_from: product.available_from,
            available_until: product.available_until,
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
            categories,
            brand,
            prices,
            id: self.id,
            sku: self.sku,
            title: self.title,
            description: self.description,
            link: self.link,
            image: self.image,
            image_overlay: self.image_overlay,
            all_images: self.all_images,
            group_prices: self.group_prices,
            search_tags: self.search_tags,
            associated_skus: self.associated_skus,
            associated_ids: self.associated_ids,
            related_products: self.related_products,
            visibility: self.visibility,
            exclude_from_recommenders: self.exclude_from_recommenders,
            on_offer: self.on_offer,
            new_arrival: self.new_arrival,
            available_from: self.available_from,
            available_until: self.available_until,
        }
    }
}

/// The archived form of a product, as serving reads it.
pub type ArchivedProduct = ArchivedStoredProduct;

/// Why a catalogue could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the catalogue could not be archived: {0}")]
pub struct CatalogueError(pub(crate) String);

/// One immutable version of an account's catalogue; cloning is cheap.
///
/// A version is a base archive plus the [overlay](crate::overlay) of changes made by
/// deltas since that base was built; every accessor reads both as one catalogue.
#[derive(Debug, Clone)]
pub struct Catalogue {
    pub(crate) frozen: Arc<Frozen<CatalogueData>>,
    pub(crate) overlay: Arc<Overlay>,
}

impl Catalogue {
    /// A catalogue read from an archive (a snapshot).
    pub fn from_frozen(frozen: Frozen<CatalogueData>) -> Catalogue {
        Catalogue {
            frozen: Arc::new(frozen),
            overlay: Arc::new(Overlay::default()),
        }
    }

    fn data(&self) -> &ArchivedCatalogueData {
        self.frozen.get()
    }

    fn base_len(&self) -> usize {
        self.data().products.len()
    }

    /// The overlay, when it holds any change.
    fn changes(&self) -> Option<&Overlay> {
        self.overlay.active.then_some(&*self.overlay)
    }

    /// The base archive's bytes (what a snapshot stores). Changes in the overlay are not
    /// in them: [`Catalogue::compact`] first.
    pub fn archive_bytes(&self) -> &[u8] {
        self.frozen.bytes()
    }

    /// Whether changes since the base archive are held in an overlay.
    pub fn has_overlay(&self) -> bool {
        self.overlay.active
    }

    /// Number of changes held in the overlay (products changed, account-price entries).
    pub fn overlay_size(&self) -> usize {
        self.changes().map_or(0, Overlay::size)
    }

    /// Whether two versions share their base archive (they differ at most by overlay).
    pub fn same_base(&self, other: &Catalogue) -> bool {
        Arc::ptr_eq(&self.frozen, &other.frozen)
    }

    /// Whether the base archive is read from a memory-mapped snapshot.
    pub fn is_mapped(&self) -> bool {
        self.frozen.is_mapped()
    }

    /// Number of products.
    pub fn len(&self) -> usize {
        self.changes().map_or_else(|| self.base_len(), |o| o.live)
    }

    /// Whether there are no products.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One more than the highest dense index in use: indexes run over `0..idx_bound()`,
    /// with gaps where products were deleted since the base.
    pub fn idx_bound(&self) -> ProductIdx {
        self.changes()
            .map_or(self.base_len() as ProductIdx, |o| o.next_idx)
    }

    /// Every product with its dense index, in index order.
    pub fn iter(&self) -> impl Iterator<Item = (ProductIdx, &ArchivedProduct)> + '_ {
        (0..self.idx_bound()).filter_map(|idx| self.product(idx).map(|p| (idx, p)))
    }

    /// The product at a dense index.
    pub fn product(&self, idx: ProductIdx) -> Option<&ArchivedProduct> {
        if let Some(overlay) = self.changes()
            && overlay.covers(idx, self.base_len())
        {
            return overlay
                .changed
                .get(&idx)
                .and_then(|changed| changed.as_deref())
                .map(|changed| changed.stored.get());
        }
        self.data().products.get(idx as usize)
    }

    /// The dense index of an external product id.
    pub fn idx_of(&self, id: &str) -> Option<ProductIdx> {
        if let Some(found) = self.changes().and_then(|o| o.ids.get(id)) {
            return *found;
        }
        self.data().by_id.get(id).map(|i| i.to_native())
    }

    /// The dense index of the product with this SKU (or id, when it has no SKU).
    pub fn idx_of_sku(&self, sku: &str) -> Option<ProductIdx> {
        if let Some(found) = self.changes().and_then(|o| o.skus.get(sku)) {
            return *found;
        }
        self.data().by_sku.get(sku).map(|i| i.to_native())
    }

    /// Products of a category, in dense-id order.
    pub fn in_category(&self, category: &str) -> Vec<ProductIdx> {
        let data = self.data();
        let id = data.category_index.get(category).map(|c| c.to_native());
        let base = id.and_then(|c| data.by_category.get(c as usize));
        let added = self.changes().map(|o| {
            let id = id.or_else(|| o.categories.index.get(category).copied());
            (o, id.and_then(|id| o.category_members.get(&id)))
        });
        self.members(base, added)
    }

    /// Products of a brand, in dense-id order.
    pub fn of_brand(&self, brand: &str) -> Vec<ProductIdx> {
        let data = self.data();
        let id = data.brand_index.get(brand).map(|b| b.to_native());
        let base = id.and_then(|b| data.by_brand.get(b as usize));
        let added = self.changes().map(|o| {
            let id = id.or_else(|| o.brands.index.get(brand).copied());
            (o, id.and_then(|id| o.brand_members.get(&id)))
        });
        self.members(base, added)
    }

    /// Base members not changed since, plus the overlay's members, in index order.
    fn members(
        &self,
        base: Option<&rkyv::vec::ArchivedVec<rkyv::rend::u32_le>>,
        overlay: Option<(&Overlay, Option<&BTreeSet<ProductIdx>>)>,
    ) -> Vec<ProductIdx> {
        let base = base
            .into_iter()
            .flat_map(|members| members.iter().map(|i| i.to_native()));
        let Some((overlay, added)) = overlay else {
            return base.collect();
        };
        let base_len = self.base_len();
        let mut found: Vec<ProductIdx> = base.filter(|i| !overlay.covers(*i, base_len)).collect();
        if let Some(added) = added.filter(|added| !added.is_empty()) {
            found.extend(added.iter().copied());
            found.sort_unstable();
        }
        found
    }

    fn category_name(&self, id: u32) -> Option<&str> {
        let names = &self.data().category_names;
        match names.get(id as usize) {
            Some(name) => Some(name.as_str()),
            None => self
                .changes()?
                .categories
                .names
                .get(id as usize - names.len())
                .map(String::as_str),
        }
    }

    fn brand_name(&self, id: u32) -> Option<&str> {
        let names = &self.data().brand_names;
        match names.get(id as usize) {
            Some(name) => Some(name.as_str()),
            None => self
                .changes()?
                .brands
                .names
                .get(id as usize - names.len())
                .map(String::as_str),
        }
    }

    /// The category ids of a product.
    pub fn categories_of<'a>(
        &'a self,
        product: &'a ArchivedProduct,
    ) -> impl Iterator<Item = &'a str> + 'a {
        product
            .categories
            .iter()
            .filter_map(move |c| self.category_name(c.to_native()))
    }

    /// The brand id of a product.
    pub fn brand_of(&self, product: &ArchivedProduct) -> Option<&str> {
        self.brand_name(product.brand.as_ref()?.to_native())
    }

    /// A product's own (regular, sale) price in `currency`, from the price columns (or
    /// the overlay, for products changed since the base).
    pub fn own_prices(
        &self,
        idx: ProductIdx,
        currency: Currency,
    ) -> (Option<Money>, Option<Money>) {
        if let Some(overlay) = self.changes()
            && overlay.covers(idx, self.base_len())
        {
            return match overlay.changed.get(&idx) {
                Some(Some(changed)) => (
                    changed.prices.price_in(currency),
                    changed.prices.sale_in(currency),
                ),
                _ => (None, None),
            };
        }
        let Some(column) = self
            .data()
            .price_columns
            .iter()
            .find(|c| c.currency.to_native() == currency)
        else {
            return (None, None);
        };
        let at = |values: &rkyv::vec::ArchivedVec<rkyv::rend::i64_le>| {
            values
                .get(idx as usize)
                .map(|m| m.to_native())
                .filter(|m| *m != NO_PRICE)
                .map(|minor| Money { minor, currency })
        };
        (at(&column.regular), at(&column.sale))
    }

    /// Every own price of a product.
    fn price_set(&self, idx: ProductIdx) -> PriceSet {
        let mut prices = PriceSet::default();
        if let Some(overlay) = self.changes()
            && overlay.covers(idx, self.base_len())
        {
            if let Some(Some(changed)) = overlay.changed.get(&idx) {
                prices = changed.prices.clone();
            }
            return prices;
        }
        for column in self.data().price_columns.iter() {
            let currency = column.currency.to_native();
            let (regular, sale) = self.own_prices(idx, currency);
            prices.prices.extend(regular);
            prices.sale_prices.extend(sale);
        }
        prices
    }

    /// The content-similarity neighbours of a product, best first. Products added or
    /// changed since the base get theirs at the next compaction.
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
        if let Some(overlay) = self.changes() {
            if let Some(entry) = overlay
                .account_prices
                .get(account)
                .and_then(|prices| prices.get(product_id))
            {
                return entry.as_deref().map(Frozen::get);
            }
            if overlay.cleared_prices.contains(product_id) {
                return None;
            }
        }
        self.data().account_prices.get(account)?.get(product_id)
    }

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
                account_listed(ids.iter().map(|i| i.as_str()), account)
            }
            ArchivedVisibility::ExceptAccounts(ids) => {
                !account_listed(ids.iter().map(|i| i.as_str()), account)
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

#[cfg(test)]
mod layout_tests {
    use super::*;

    fn money(minor: i64, code: &str) -> Money {
        Money {
            minor,
            currency: Currency::from_code(code).unwrap(),
        }
    }

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
