//! The fixed text of each product, escaped once and kept per account: a catalogue
//! version's texts, taken over by the next version for the products it did not change.
//! A text holds the product's own prices in the currency it was first asked for, so an
//! item shown at those prices (most are) is written as one copy ([`ProductText`]).
//!
//! A delta makes a new catalogue version. Its texts start as the version before's:
//! the texts are kept in chunks of [`CHUNK`] products, and the new version shares every
//! chunk in which no product changed ([`Catalogue::changed_since`]: the same base
//! archive, and the product the base's in both, the same change of the overlay, or
//! deleted in both), and copies the others without the changed products' texts. Only
//! the products a delta changed are written again, however many deltas follow one
//! another. A full feed (a new base), a delta that changed products in more than
//! [`MAX_COPIED_CHUNKS`] chunks, or versions too far apart to compare cheaply start
//! afresh.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use parking_lot::RwLock;
use vitrine_engine::account::RenderedItem;
use vitrine_engine::catalogue::{Catalogue, ProductIdx};
use vitrine_engine::money::Currency;
use vitrine_engine::recommend::{ItemPrice, shared_price};
use vitrine_engine::shards::Graveyard;

use super::wire::{Fixed, Flags, fixed_parts, to_vec, write_prices};

/// Bytes of product text kept per account and catalogue version at most (about 700
/// bytes per product with its prices: some 380,000 products); beyond it, the text of
/// products not kept yet is written per request.
pub const MAX_CACHED_BYTES: usize = 256 << 20;

/// Bytes counted for one currency's rendered prices of a product (they are about 150
/// to 250).
const PRICE_TEXT_BYTES: usize = 256;

/// Currencies whose prices are kept rendered per product at most.
pub const MAX_CACHED_CURRENCIES: usize = 8;

/// A product's JSON item text, made once per catalogue version: `head` is `{"Id":…`
/// through `"AllImages":[…],`; then the product's own prices in the currency the text
/// was first asked for (none when it has no shared price there); `tail` is
/// `"Categories":[…],` through `"SearchTags":[…],`; then its flags and the closing
/// brace. An item with those very prices is one copy of the whole text ([`whole`]);
/// another is written around its prices. Its own prices in other currencies are
/// rendered once per currency too.
///
/// [`whole`]: ProductText::whole
#[derive(Debug)]
pub struct ProductText {
    text: Box<[u8]>,
    /// Where the prices, the tail and the flags begin in `text`.
    prices_at: usize,
    tail_at: usize,
    flags_at: usize,
    /// The own price `text` holds (none: it holds no prices).
    priced: Option<ItemPrice>,
    /// The product's own `OnOffer` (a sale price for the visitor also makes it true).
    pub(super) on_offer: bool,
    pub(super) new_arrival: bool,
    /// The product's own prices in the first currency they were rendered in (the
    /// account's default one, which the models round renders ahead), read without a
    /// lock (see [`PriceText`]).
    first_prices: OnceLock<(Currency, PriceText)>,
    /// Its own prices in other currencies.
    prices: RwLock<Vec<(Currency, Arc<PriceText>)>>,
    /// The product's markup in the browser's card, written by the first browser request
    /// that shows it ([`ProductTexts::with_card`]).
    card: OnceLock<Box<str>>,
}

/// The price fields of an item, `"Price":…,` through the last price field and its
/// comma, and whether the price is a sale.
#[derive(Debug)]
pub(super) struct PriceText {
    pub(super) text: Box<[u8]>,
    pub(super) sale: bool,
    /// The prices in the browser's card, written by the first browser request that
    /// shows them.
    card: OnceLock<Box<str>>,
}

impl PriceText {
    pub(super) fn of(price: &ItemPrice) -> PriceText {
        let mut text = Vec::with_capacity(PRICE_TEXT_BYTES);
        write_prices(&mut text, price);
        PriceText {
            text: text.into_boxed_slice(),
            sale: price.was.is_some(),
            card: OnceLock::new(),
        }
    }
}

impl ProductText {
    /// The text of product `idx`, with its own prices in `currency` when it has a
    /// shared one there.
    fn of(catalogue: &Catalogue, idx: ProductIdx, currency: Currency) -> Option<ProductText> {
        let Fixed {
            head,
            tail,
            on_offer,
            new_arrival,
        } = fixed_parts(catalogue, idx)?;
        let mut text = to_vec(&head);
        // `{…}` → `{…,`
        text.pop();
        text.push(b',');
        let prices_at = text.len();
        let priced = shared_price(catalogue, idx, currency);
        if let Some(price) = &priced {
            write_prices(&mut text, price);
        }
        let tail_at = text.len();
        let tail = to_vec(&tail);
        // `{…}` → `…,`
        text.extend_from_slice(tail.get(1..tail.len() - 1).unwrap_or_default());
        text.push(b',');
        let flags_at = text.len();
        let sale = priced.is_some_and(|price| price.was.is_some());
        let flags = Flags {
            on_offer: on_offer || sale,
            new_arrival,
        };
        text.extend_from_slice(flags.text());
        Some(ProductText {
            text: text.into_boxed_slice(),
            prices_at,
            tail_at,
            flags_at,
            priced,
            on_offer,
            new_arrival,
            first_prices: OnceLock::new(),
            prices: RwLock::new(Vec::new()),
            card: OnceLock::new(),
        })
    }

    /// The whole item, when `price` is the own price its text holds.
    pub(super) fn whole(&self, price: &ItemPrice) -> Option<&[u8]> {
        (self.priced.as_ref() == Some(price)).then_some(&*self.text)
    }

    pub(super) fn head(&self) -> &[u8] {
        self.text.get(..self.prices_at).unwrap_or_default()
    }

    pub(super) fn tail(&self) -> &[u8] {
        self.text
            .get(self.tail_at..self.flags_at)
            .unwrap_or_default()
    }

    /// Bytes counted for it: its text, with room for its prices in two currencies.
    fn counted_bytes(&self) -> usize {
        self.text.len() + 2 * PRICE_TEXT_BYTES
    }

    /// Hands `read` the rendered own prices of `price`'s currency: kept from an earlier
    /// request, else rendered now (and kept, for up to [`MAX_CACHED_CURRENCIES`]
    /// currencies). The first currency's are read without a lock or a count.
    pub(super) fn with_own_prices<R>(
        &self,
        price: &ItemPrice,
        read: impl FnOnce(&PriceText) -> R,
    ) -> R {
        let currency = price.price.currency;
        let (first, text) = self
            .first_prices
            .get_or_init(|| (currency, PriceText::of(price)));
        if *first == currency {
            return read(text);
        }
        let find = |prices: &[(Currency, Arc<PriceText>)]| {
            prices
                .iter()
                .find(|(c, _)| *c == currency)
                .map(|(_, text)| Arc::clone(text))
        };
        if let Some(text) = find(&self.prices.read()) {
            return read(&text);
        }
        let text = Arc::new(PriceText::of(price));
        let mut prices = self.prices.write();
        if let Some(text) = find(&prices) {
            drop(prices);
            return read(&text);
        }
        if prices.len() + 1 < MAX_CACHED_CURRENCIES {
            prices.push((currency, Arc::clone(&text)));
        }
        drop(prices);
        read(&text)
    }
}

/// How a product is written in the browser's card ([`ProductTexts::with_card`]).
pub trait CardMarkup {
    /// What of the card is the product's alone, from the catalogue version.
    fn head(&self, catalogue: &Catalogue, idx: ProductIdx) -> String;
    /// The rest: its prices.
    fn prices(&self, price: &ItemPrice) -> String;
}

/// Product slots per chunk of a [`ProductTexts`].
const CHUNK: usize = 1024;

/// Chunks a new version copies at most (the request that first reads it does the
/// copying: some 30,000 slots, about a tenth of a millisecond); a delta that changed
/// products in more chunks starts with no texts.
const MAX_COPIED_CHUNKS: usize = 32;

/// A product's slot: empty until asked for, then its text (`None`: not in the version).
type Slot = OnceLock<Option<Arc<ProductText>>>;

/// [`CHUNK`] slots of a [`ProductTexts`], shared by the versions that read its products
/// alike.
type Chunk = Arc<[Slot]>;

/// The product texts of an account: those of the latest catalogue version served, and
/// earlier ones kept until no request uses them (a cache's texts are freed by the
/// background [`TextCache::sweep`], not by the request that lets go of it last).
#[derive(Debug)]
pub struct TextCache {
    current: ArcSwap<ProductTexts>,
    replaced: Graveyard,
}

impl TextCache {
    /// A cache for `catalogue`.
    pub fn new(catalogue: Arc<Catalogue>) -> TextCache {
        TextCache {
            current: ArcSwap::from_pointee(ProductTexts::new(catalogue)),
            replaced: Graveyard::default(),
        }
    }

    /// The texts of `catalogue`: the current ones when they are for that version, else
    /// new ones made current, which start with the current ones' texts of the products
    /// the two versions read alike.
    pub fn of(&self, catalogue: &Arc<Catalogue>) -> Arc<ProductTexts> {
        let texts = self.current.load_full();
        if Arc::ptr_eq(&texts.catalogue, catalogue) {
            return texts;
        }
        let fresh = Arc::new(ProductTexts::after(
            Arc::clone(catalogue),
            &texts,
            MAX_COPIED_CHUNKS,
        ));
        let replaced = self.current.swap(Arc::clone(&fresh));
        self.replaced.bury(replaced);
        fresh
    }

    /// [`ProductTexts::prepare`] on the texts of `catalogue` (the version served now).
    pub fn prepare(&self, catalogue: &Arc<Catalogue>, currency: Currency, limit: usize) -> usize {
        self.of(catalogue).prepare(currency, limit)
    }

    /// Frees the replaced texts no request uses any more, on the caller's thread (the
    /// chunks a later version shares stay); returns how many caches were freed.
    pub fn sweep(&self) -> usize {
        self.replaced.sweep()
    }

    /// Bytes of text kept for the current version.
    pub fn kept_bytes(&self) -> usize {
        self.current.load().kept_bytes.load(Ordering::Relaxed)
    }
}

/// The [`ProductText`]s of one catalogue version of an account, by dense id.
#[derive(Debug)]
pub struct ProductTexts {
    /// The version the texts were written from (held, so its address is not reused).
    catalogue: Arc<Catalogue>,
    /// Chunks of [`CHUNK`] slots by dense id, each made when a product in it is first
    /// written: a new version's cache costs a small table, not one slot per product.
    chunks: Box<[OnceLock<Chunk>]>,
    /// Texts kept so far.
    kept: AtomicUsize,
    /// Of them, those taken over from the version before when these were made.
    carried: usize,
    /// Their bytes.
    kept_bytes: AtomicUsize,
    /// Bytes kept at most ([`MAX_CACHED_BYTES`]).
    budget: usize,
    /// The next product [`ProductTexts::prepare`] writes (by dense id).
    prepared: AtomicUsize,
}

impl ProductTexts {
    /// An empty cache for `catalogue`.
    pub fn new(catalogue: Arc<Catalogue>) -> ProductTexts {
        ProductTexts::with_budget(catalogue, MAX_CACHED_BYTES)
    }

    /// An empty cache for `catalogue` that keeps about `budget` bytes of text at most.
    pub fn with_budget(catalogue: Arc<Catalogue>, budget: usize) -> ProductTexts {
        let slots = catalogue.idx_bound() as usize;
        ProductTexts {
            catalogue,
            chunks: (0..slots.div_ceil(CHUNK))
                .map(|_| OnceLock::new())
                .collect(),
            kept: AtomicUsize::new(0),
            carried: 0,
            kept_bytes: AtomicUsize::new(0),
            budget,
            prepared: AtomicUsize::new(0),
        }
    }

    /// Texts for `catalogue` that start with `previous`'s (another version's) texts of
    /// every product the two read alike: its chunks without a changed product shared,
    /// the others copied without the changed products' texts. Nothing is taken from
    /// another base, nor from a version whose changes are in more than `max_copied`
    /// chunks.
    fn after(
        catalogue: Arc<Catalogue>,
        previous: &ProductTexts,
        max_copied: usize,
    ) -> ProductTexts {
        let mut texts = ProductTexts::with_budget(catalogue, previous.budget);
        let Some(changed) = texts.catalogue.changed_since(&previous.catalogue) else {
            return texts;
        };
        let mut chunks_changed = changed
            .iter()
            .map(|idx| *idx as usize / CHUNK)
            .collect::<Vec<_>>();
        chunks_changed.dedup();
        if chunks_changed.len() > max_copied {
            // A delta this wide: its texts are written again as requests ask for them.
            return texts;
        }
        let mut kept = previous.kept();
        let mut kept_bytes = previous.kept_bytes.load(Ordering::Relaxed);
        let mut changed = changed.iter().map(|idx| *idx as usize).peekable();
        for (n, (slot, old)) in texts
            .chunks
            .iter_mut()
            .zip(previous.chunks.iter())
            .enumerate()
        {
            let end = (n + 1) * CHUNK;
            let mut in_chunk = Vec::new();
            while let Some(idx) = changed.next_if(|idx| *idx < end) {
                in_chunk.push(idx % CHUNK);
            }
            let Some(old) = old.get() else { continue };
            let chunk = if in_chunk.is_empty() {
                Arc::clone(old)
            } else {
                let mut copy: Vec<Slot> = old.iter().cloned().collect();
                for at in in_chunk {
                    if let Some(Some(stale)) = copy.get_mut(at).and_then(OnceLock::take) {
                        kept = kept.saturating_sub(1);
                        kept_bytes = kept_bytes.saturating_sub(stale.counted_bytes());
                    }
                }
                copy.into()
            };
            let _ = slot.set(chunk);
        }
        texts.carried = kept;
        texts.kept = AtomicUsize::new(kept);
        texts.kept_bytes = AtomicUsize::new(kept_bytes);
        texts
    }

    /// The slot of `idx`, its chunk made if need be.
    fn slot(&self, idx: ProductIdx) -> Option<&Slot> {
        let idx = idx as usize;
        self.chunks
            .get(idx / CHUNK)?
            .get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect())
            .get(idx % CHUNK)
    }

    /// The text of `idx` kept already, without making a chunk.
    #[cfg(test)]
    fn kept_text(&self, idx: ProductIdx) -> Option<&Arc<ProductText>> {
        let idx = idx as usize;
        self.chunks
            .get(idx / CHUNK)?
            .get()?
            .get(idx % CHUNK)?
            .get()?
            .as_ref()
    }

    /// Calls `write` with the text of product `idx`: the kept one, else one written now
    /// (and kept while the texts kept hold fewer than [`MAX_CACHED_BYTES`]).
    /// The product's markup in the browser's card, as `markup` writes it: its fixed
    /// part (kept beside its text the first time) and its prices (the product's own,
    /// kept per currency beside their text; an account or group price written now),
    /// handed to `read`. What is kept is counted in the budget (a text written over
    /// budget, not kept, counts its card all the same: the count errs high). `None`
    /// when the product is not in the version.
    pub fn with_card<R>(
        &self,
        item: &RenderedItem,
        markup: &impl CardMarkup,
        read: impl FnOnce(&str, &str) -> R,
    ) -> Option<R> {
        self.with(item.product, item.price.price.currency, |text| {
            let mut made = 0;
            let head = text.card.get_or_init(|| {
                let head = markup.head(&self.catalogue, item.product).into_boxed_str();
                made += head.len();
                head
            });
            let answer = if item.shared_price {
                text.with_own_prices(&item.price, |prices| {
                    let tail = prices.card.get_or_init(|| {
                        let tail = markup.prices(&item.price).into_boxed_str();
                        made += tail.len();
                        tail
                    });
                    read(head, tail)
                })
            } else {
                read(head, &markup.prices(&item.price))
            };
            if made > 0 {
                self.kept_bytes.fetch_add(made, Ordering::Relaxed);
            }
            answer
        })
    }

    /// Hands `write` the text of product `idx`: kept from an earlier request, else
    /// made now with its own prices in `currency` (and kept, within the budget).
    pub(super) fn with<R>(
        &self,
        idx: ProductIdx,
        currency: Currency,
        write: impl FnOnce(&ProductText) -> R,
    ) -> Option<R> {
        let slot = self.slot(idx)?;
        if let Some(text) = slot.get() {
            return text.as_deref().map(write);
        }
        if self.kept_bytes.load(Ordering::Relaxed) >= self.budget {
            return ProductText::of(&self.catalogue, idx, currency).map(|text| write(&text));
        }
        let text = slot.get_or_init(|| {
            let text = ProductText::of(&self.catalogue, idx, currency)?;
            self.kept.fetch_add(1, Ordering::Relaxed);
            self.kept_bytes
                .fetch_add(text.counted_bytes(), Ordering::Relaxed);
            Some(Arc::new(text))
        });
        text.as_deref().map(write)
    }

    /// Writes ahead of the requests the texts of up to `limit` products not kept yet,
    /// from where the last call stopped, with their own prices in `currency` (off the
    /// request path: the models' round); stops at the budget. Returns how many products
    /// it went through (0 once every product is).
    pub fn prepare(&self, currency: Currency, limit: usize) -> usize {
        let bound = self.catalogue.idx_bound() as usize;
        let mut visited = 0;
        while visited < limit && self.kept_bytes.load(Ordering::Relaxed) < self.budget {
            let at = self.prepared.fetch_add(1, Ordering::Relaxed);
            let Ok(idx) = ProductIdx::try_from(at) else {
                break;
            };
            if at >= bound {
                break;
            }
            visited += 1;
            self.with(idx, currency, |text| {
                // A text made now holds them; one made in another currency keeps them
                // beside it.
                if let Some(price) = shared_price(&self.catalogue, idx, currency)
                    && text.whole(&price).is_none()
                {
                    text.with_own_prices(&price, |_| ());
                }
            });
        }
        visited
    }

    /// Number of product texts kept.
    pub fn kept(&self) -> usize {
        self.kept.load(Ordering::Relaxed)
    }

    /// Number of product texts taken over from the version before.
    pub fn carried(&self) -> usize {
        self.carried
    }
}

#[cfg(test)]
mod tests {
    use super::super::write_product;
    use super::*;
    use vitrine_engine::account::RenderedItem;
    use vitrine_engine::money::Money;

    fn item(idx: ProductIdx, code: &str, minor: i64) -> RenderedItem {
        RenderedItem {
            product: idx,
            price: ItemPrice {
                price: Money {
                    minor,
                    currency: Currency::from_code(code).unwrap(),
                },
                was: None,
            },
            shared_price: true,
        }
    }

    fn render(texts: &ProductTexts, item: &RenderedItem) -> Option<String> {
        texts.with(item.product, item.price.price.currency, |text| {
            let mut out = Vec::new();
            write_product(&mut out, text, item);
            String::from_utf8(out).unwrap()
        })
    }

    /// Texts are kept up to the bound, with the shared prices of each currency; a later
    /// version gets a cache of its own, and the earlier one is freed by a sweep once
    /// nobody holds it.
    #[test]
    fn texts_are_kept_per_version_with_the_shared_prices_of_each_currency() {
        let catalogue = Arc::new(vitrine_engine::demo::catalogue().unwrap());
        let texts = ProductTexts::new(Arc::clone(&catalogue));
        for (idx, _) in catalogue.iter() {
            for code in ["GBP", "USD", "JPY"] {
                render(&texts, &item(idx, code, 1234)).unwrap();
            }
        }
        assert_eq!(texts.kept(), catalogue.len());
        assert!(texts.kept_bytes.load(Ordering::Relaxed) < MAX_CACHED_BYTES);
        let cached = texts
            .chunks
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|chunk| chunk.iter().filter_map(|slot| slot.get()?.as_deref()));
        assert_eq!(cached.clone().count(), catalogue.len());
        // The first currency's without a lock, the two others' beside it.
        assert!(cached.clone().all(|text| {
            text.first_prices
                .get()
                .is_some_and(|(c, _)| c.code() == "GBP")
                && text.prices.read().len() == 2
        }));

        let cache = TextCache::new(Arc::clone(&catalogue));
        let first = cache.of(&catalogue);
        let next = Arc::new(catalogue.edit().finish());
        assert_eq!(cache.of(&next).kept(), 0);
        assert!(Arc::ptr_eq(&cache.current.load().catalogue, &next));
        assert_eq!(cache.sweep(), 0);
        drop(first);
        assert_eq!(cache.sweep(), 1);
    }

    /// After a delta, the new version has the texts of the version before for every
    /// product the delta did not change (the same texts, not written again, in chunks
    /// shared where nothing changed), and writes the changed product's anew; texts
    /// written after that are taken over by the next delta's version too; a new base
    /// takes nothing over.
    #[test]
    fn a_delta_takes_over_the_texts_of_the_products_it_did_not_change() {
        let first = Arc::new(vitrine_engine::demo::catalogue().unwrap());
        let id = |idx: ProductIdx| first.product(idx).unwrap().id.to_string();
        // Two products in the first chunk, one in the second.
        let (kept, changed, far) = (0, 1, CHUNK as ProductIdx + 5);
        let cache = TextCache::new(Arc::clone(&first));
        let texts = cache.of(&first);
        let before_kept = render(&texts, &item(kept, "GBP", 500)).unwrap();
        let before_changed = render(&texts, &item(changed, "GBP", 500)).unwrap();
        render(&texts, &item(far, "GBP", 500)).unwrap();
        assert_eq!(texts.kept(), 3);

        let retitle = |catalogue: &Catalogue, idx: ProductIdx, title: &str| {
            let mut edit = catalogue.edit();
            let mut product = edit.product(&id(idx)).unwrap().unwrap();
            product.title = title.into();
            edit.upsert_product(product).unwrap();
            Arc::new(edit.finish())
        };
        let second = retitle(&first, changed, "Retitled by a delta");
        let next = cache.of(&second);
        assert_eq!(next.carried(), 2, "all but the changed product's");
        assert_eq!(next.kept(), 2);
        assert!(Arc::ptr_eq(
            next.kept_text(kept).unwrap(),
            texts.kept_text(kept).unwrap()
        ));
        assert!(next.kept_text(changed).is_none());
        assert!(
            Arc::ptr_eq(
                next.chunks[1].get().unwrap(),
                texts.chunks[1].get().unwrap()
            ),
            "a chunk without a changed product is shared"
        );
        assert!(!Arc::ptr_eq(
            next.chunks[0].get().unwrap(),
            texts.chunks[0].get().unwrap()
        ));
        assert_eq!(render(&next, &item(kept, "GBP", 500)).unwrap(), before_kept);
        let after_changed = render(&next, &item(changed, "GBP", 500)).unwrap();
        assert!(
            after_changed.contains("Retitled by a delta"),
            "{after_changed}"
        );
        assert_ne!(after_changed, before_changed);
        assert_eq!(next.kept(), 3);
        drop(texts);
        assert_eq!(cache.sweep(), 1, "the first version's texts freed");

        // The next delta takes over what the last version wrote, the changed text too.
        let third = retitle(&second, far, "Another delta");
        let last = cache.of(&third);
        assert_eq!(last.carried(), 2);
        assert!(Arc::ptr_eq(
            last.kept_text(changed).unwrap(),
            next.kept_text(changed).unwrap()
        ));
        assert!(last.kept_text(far).is_none());
        drop((next, last));

        // A delta that changed products in more chunks than may be copied: nothing
        // taken over.
        let wide = retitle(&retitle(&third, kept, "Wide"), far, "Wide too");
        // (Two edits from `third`: compared change by change.)
        let copied = ProductTexts::after(Arc::clone(&wide), &cache.of(&third), 2);
        assert_eq!(
            copied.carried(),
            1,
            "the retitled product's text, not the two changed"
        );
        let wide_texts = ProductTexts::after(Arc::clone(&wide), &cache.of(&third), 1);
        assert_eq!(wide_texts.carried(), 0);

        // Another base archive (a full feed): nothing taken over.
        let rebuilt = Arc::new(vitrine_engine::demo::catalogue().unwrap());
        let texts = cache.of(&rebuilt);
        assert_eq!(texts.carried(), 0);
        assert_eq!(texts.kept(), 0);
        assert_eq!(
            render(&texts, &item(kept, "GBP", 500)).unwrap(),
            before_kept
        );
    }

    /// Past its byte budget the cache keeps no more products, and those it does not
    /// keep are written the same.
    #[test]
    fn the_cache_keeps_texts_up_to_its_budget() {
        let catalogue = Arc::new(vitrine_engine::demo::catalogue().unwrap());
        let bounded = ProductTexts::with_budget(Arc::clone(&catalogue), 20_000);
        let unbounded = ProductTexts::new(Arc::clone(&catalogue));
        for (idx, _) in catalogue.iter() {
            let item = item(idx, "GBP", 999);
            assert_eq!(render(&bounded, &item), render(&unbounded, &item));
        }
        let kept = bounded.kept_bytes.load(Ordering::Relaxed);
        assert!((20_000..30_000).contains(&kept), "{kept}");
        assert!(bounded.kept() < catalogue.len() / 10, "{}", bounded.kept());
        assert_eq!(unbounded.kept(), catalogue.len());
    }

    /// A shared price cached for one currency is not served for another.
    #[test]
    fn shared_prices_are_kept_per_currency() {
        let catalogue = Arc::new(vitrine_engine::demo::catalogue().unwrap());
        let texts = ProductTexts::new(Arc::clone(&catalogue));
        let (idx, _) = catalogue.iter().next().unwrap();
        assert!(
            render(&texts, &item(idx, "GBP", 4399))
                .unwrap()
                .contains(r#""DisplayPrice":"£43.99""#)
        );
        assert!(
            render(&texts, &item(idx, "USD", 5000))
                .unwrap()
                .contains(r#""DisplayPrice":"$50.00""#)
        );
        assert!(
            render(&texts, &item(idx, "GBP", 4399))
                .unwrap()
                .contains(r#""CurrencySymbol":"£""#)
        );
    }
}
