//! Reading a catalogue version: [`Catalogue`], a base archive read in place plus the
//! overlay of changes made by deltas since, answered as one catalogue (products by dense
//! index or external id, members of a category or brand, prices, similar products,
//! categories, brands, account prices).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use vitrine_snapshots::Frozen;

use super::layout::{
    ArchivedCatalogueData, ArchivedPriceColumn, ArchivedProduct, CatalogueData, NO_PRICE,
};
use super::model::{
    ArchivedBrand, ArchivedCategory, ArchivedPriceSet, ArchivedVisibility, PriceSet, account_listed,
};
use super::{ProductIdx, UnixMillis};
use crate::money::{ArchivedMoney, Currency, Money};
use crate::overlay::{Changed, Overlay};

/// One immutable version of an account's catalogue; cloning is cheap.
///
/// A version is a base archive plus the [overlay](crate::overlay) of changes made by
/// deltas since that base was built; every accessor reads both as one catalogue.
#[derive(Debug, Clone)]
pub struct Catalogue {
    pub(crate) frozen: Arc<Frozen<CatalogueData>>,
    pub(crate) overlay: Arc<Overlay>,
    /// This version's number (see [`Catalogue::version_id`]).
    pub(crate) version: u64,
    /// The products the edit that made this version changed, and the version it
    /// edited (`None` for a version read from an archive or built).
    pub(crate) edited: Option<Arc<Edited>>,
}

/// What an edit changed: the products it touched (added, replaced or removed; sorted),
/// and the number of the version it started from.
#[derive(Debug)]
pub(crate) struct Edited {
    pub(crate) parent: u64,
    pub(crate) products: Box<[ProductIdx]>,
}

/// Changes of the two overlays [`Catalogue::changed_since`] compares one by one at most,
/// for versions that are not parent and child (a few milliseconds' work beyond it).
pub const FULL_DIFF_LIMIT: usize = 4096;

/// A version's base archive, held without keeping it (see [`Catalogue::base_handle`]).
pub(crate) type BaseHandle = std::sync::Weak<Frozen<CatalogueData>>;

/// The number of the next catalogue version made in this process (0 names none).
static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

/// A number for a new catalogue version.
pub(crate) fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

impl Catalogue {
    /// A catalogue read from an archive (a snapshot).
    pub fn from_frozen(frozen: Frozen<CatalogueData>) -> Catalogue {
        Catalogue {
            frozen: Arc::new(frozen),
            overlay: Arc::new(Overlay::default()),
            version: next_version(),
            edited: None,
        }
    }

    /// A number naming this catalogue version, never reused in this process (at least
    /// 1); clones of a version share it.
    pub fn version_id(&self) -> u64 {
        self.version
    }

    pub(super) fn data(&self) -> &ArchivedCatalogueData {
        self.frozen.get()
    }

    fn base_len(&self) -> usize {
        self.data().products.len()
    }

    /// The overlay, when it holds any change.
    pub(super) fn changes(&self) -> Option<&Overlay> {
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

    /// A handle on the base archive that does not keep it in memory. It keeps the
    /// archive's address from being reused, so [`Catalogue::has_base`] never mistakes
    /// another base for it.
    pub(crate) fn base_handle(&self) -> BaseHandle {
        Arc::downgrade(&self.frozen)
    }

    /// Whether this version's base is the one `handle` was taken of.
    pub(crate) fn has_base(&self, handle: &BaseHandle) -> bool {
        std::ptr::eq(handle.as_ptr(), Arc::as_ptr(&self.frozen))
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

    /// Whether `self` and `other` read product `idx` alike: two versions of one base
    /// archive in which the product is the base's in both, the same change of the
    /// overlay, or deleted in both. Its record, its own prices and the names and brand
    /// record it refers to are then the same (names are only ever added after a base's,
    /// and brand records are the base's).
    pub fn same_product(&self, other: &Catalogue, idx: ProductIdx) -> bool {
        if !Arc::ptr_eq(&self.frozen, &other.frozen) {
            return false;
        }
        // Not covered by the overlay: the base's; covered: the overlay's change, the
        // same change being the same allocation (`None`: deleted).
        fn change(catalogue: &Catalogue, idx: ProductIdx) -> Option<Option<*const Changed>> {
            catalogue
                .changes()
                .filter(|overlay| overlay.covers(idx, catalogue.base_len()))
                .map(|overlay| {
                    overlay
                        .changed
                        .get(&idx)
                        .and_then(Option::as_ref)
                        .map(Arc::as_ptr)
                })
        }
        change(self, idx) == change(other, idx)
    }

    /// The products `self` reads differently from `other`, when the two are versions
    /// of one base archive: sorted, possibly with some that read alike; every other
    /// product reads the same in both. For a version and the one it was edited from,
    /// the edit's products; for others, those a change of either overlay covers that
    /// [`Catalogue::same_product`] does not find alike, when the overlays hold at most
    /// [`FULL_DIFF_LIMIT`] changes between them. `None` for another base, or past that
    /// limit.
    pub fn changed_since(&self, other: &Catalogue) -> Option<Vec<ProductIdx>> {
        if !Arc::ptr_eq(&self.frozen, &other.frozen) {
            return None;
        }
        if self.version == other.version {
            return Some(Vec::new());
        }
        for (child, parent) in [(self, other), (other, self)] {
            if let Some(edited) = &child.edited
                && edited.parent == parent.version
            {
                return Some(edited.products.to_vec());
            }
        }
        if self.overlay.changed.len() + other.overlay.changed.len() > FULL_DIFF_LIMIT {
            return None;
        }
        let mut changed: Vec<ProductIdx> = self
            .overlay
            .changed
            .keys()
            .chain(other.overlay.changed.keys())
            .copied()
            .filter(|idx| !self.same_product(other, *idx))
            .collect();
        changed.sort_unstable();
        changed.dedup();
        Some(changed)
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

    /// The interned id of a category (as products' `categories` hold it), if any
    /// product or record of this version names it.
    pub fn category_id(&self, category: &str) -> Option<u32> {
        let data = self.data();
        data.category_index
            .get(category)
            .map(|c| c.to_native())
            .or_else(|| self.changes()?.categories.index.get(category).copied())
    }

    /// The interned id of a brand (as products' `brand` holds it), if any.
    pub fn brand_id(&self, brand: &str) -> Option<u32> {
        let data = self.data();
        data.brand_index
            .get(brand)
            .map(|b| b.to_native())
            .or_else(|| self.changes()?.brands.index.get(brand).copied())
    }

    /// The interned category ids of a product.
    pub fn category_ids<'a>(&self, product: &'a ArchivedProduct) -> impl Iterator<Item = u32> + 'a {
        product.categories.iter().map(|c| c.to_native())
    }

    /// The interned brand id of a product.
    pub fn brand_id_of(&self, product: &ArchivedProduct) -> Option<u32> {
        Some(product.brand.as_ref()?.to_native())
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

    /// Every category id products of this version name, in interned order.
    pub fn category_names(&self) -> impl Iterator<Item = &str> + '_ {
        let added = self.changes().map(|o| o.categories.names.as_slice());
        self.data()
            .category_names
            .iter()
            .map(|n| n.as_str())
            .chain(added.unwrap_or_default().iter().map(String::as_str))
    }

    /// Every brand id products of this version name, in interned order.
    pub fn brand_names(&self) -> impl Iterator<Item = &str> + '_ {
        let added = self.changes().map(|o| o.brands.names.as_slice());
        self.data()
            .brand_names
            .iter()
            .map(|n| n.as_str())
            .chain(added.unwrap_or_default().iter().map(String::as_str))
    }

    pub(super) fn category_name(&self, id: u32) -> Option<&str> {
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

    pub(super) fn brand_name(&self, id: u32) -> Option<&str> {
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
        self.prices_in(currency).of(idx)
    }

    /// The products' own prices in `currency`, its price column found once: what a
    /// request prices its candidates from.
    pub fn prices_in(&self, currency: Currency) -> OwnPrices<'_> {
        OwnPrices {
            catalogue: self,
            currency,
            column: self
                .data()
                .price_columns
                .iter()
                .find(|c| c.currency.to_native() == currency),
        }
    }

    /// Every own price of a product.
    pub(super) fn price_set(&self, idx: ProductIdx) -> PriceSet {
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

    /// Whether the product's sale prices apply at `now`: inside its
    /// `SalePriceStartDate`..`SalePriceEndDate` window (bounds included), or always when
    /// it has none.
    pub fn sale_applies_at(&self, now: UnixMillis) -> bool {
        self.sale_from
            .as_ref()
            .is_none_or(|from| now >= from.to_native())
            && self
                .sale_until
                .as_ref()
                .is_none_or(|until| now <= until.to_native())
    }

    /// When the product is live (`StartDate`, `EndDate`) and when its sale prices apply
    /// (`SalePriceStartDate`, `SalePriceEndDate`), bounds included.
    #[expect(clippy::type_complexity, reason = "two (from, until) pairs")]
    pub fn time_windows(
        &self,
    ) -> (
        (Option<UnixMillis>, Option<UnixMillis>),
        (Option<UnixMillis>, Option<UnixMillis>),
    ) {
        let native = |t: &rkyv::rend::i64_le| t.to_native();
        (
            (
                self.available_from.as_ref().map(native),
                self.available_until.as_ref().map(native),
            ),
            (
                self.sale_from.as_ref().map(native),
                self.sale_until.as_ref().map(native),
            ),
        )
    }

    /// Whether the product's sale prices are limited to a window (so that its price
    /// depends on the time of the request).
    pub fn has_sale_window(&self) -> bool {
        self.sale_from.is_some() || self.sale_until.is_some()
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

/// A catalogue's own prices in one currency ([`Catalogue::prices_in`]).
#[derive(Clone, Copy)]
pub struct OwnPrices<'c> {
    catalogue: &'c Catalogue,
    currency: Currency,
    /// The base archive's column of the currency (`None`: no product of the base is
    /// priced in it).
    column: Option<&'c ArchivedPriceColumn>,
}

impl std::fmt::Debug for OwnPrices<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnPrices")
            .field("currency", &self.currency)
            .field("column", &self.column.is_some())
            .finish()
    }
}

impl OwnPrices<'_> {
    /// The currency.
    pub fn currency(&self) -> Currency {
        self.currency
    }

    /// Product `idx`'s own (regular, sale) price, from the price column (or the overlay,
    /// for products changed since the base).
    pub fn of(&self, idx: ProductIdx) -> (Option<Money>, Option<Money>) {
        let currency = self.currency;
        if let Some(overlay) = self.catalogue.changes()
            && overlay.covers(idx, self.catalogue.base_len())
        {
            return match overlay.changed.get(&idx) {
                Some(Some(changed)) => (
                    changed.prices.price_in(currency),
                    changed.prices.sale_in(currency),
                ),
                _ => (None, None),
            };
        }
        let Some(column) = self.column else {
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
}
