//! The serverside answer's item shapes on the wire: a product item's fixed parts and
//! its prices, a category, brand or image item, as the contract's Recommender item
//! table orders their fields; and the writers that put JSON text straight into an
//! answer (a string, an item's prices, its flags) exactly as `serde_json` writes it.

use serde::Serialize;
use vitrine_engine::account::RenderedItem;
use vitrine_engine::catalogue::{Catalogue, ProductIdx};
use vitrine_engine::money::{Money, saved_percent};
use vitrine_engine::recommend::ItemPrice;
use vitrine_engine::zone::ZoneKind;

pub(super) fn to_vec(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

pub(super) fn write_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    // Serializing these types into a Vec cannot fail.
    let _ = serde_json::to_writer(out, value);
}

/// `text` as a JSON string, as `serde_json` writes it: copied between quotes when
/// nothing in it is escaped (a control character, `"` or `\`; most ids and titles
/// have none), else written by `serde_json`.
pub(super) fn write_text(out: &mut Vec<u8>, text: &str) {
    if !escaped(text.as_bytes()) {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        write_json(out, text);
    }
}

/// Whether `bytes` hold one that JSON escapes (below 0x20, `"` or `\`), read eight at a
/// time ([`vitrine_fields::first_escaped`], which also finds where a body's string ends).
fn escaped(bytes: &[u8]) -> bool {
    vitrine_fields::first_escaped(bytes).is_some()
}

/// An image of an image or image-carousel zone.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireImage<'a> {
    pub(super) image: &'a str,
    pub(super) link: &'a str,
    pub(super) alt: &'a str,
}

/// An item of a zone: a product, or a category or brand.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum WireEntry<'a> {
    Product(Box<WireItem<'a>>),
    Named(WireNamed<'a>),
    Image(WireImage<'a>),
}

/// A category item (`recommender-category`) or brand item (`recommender-brand`), from
/// the category or brand record; `Title` and `DisplayName` fall back to the id when the
/// store sent no record.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireNamed<'a> {
    pub(super) id: &'a str,
    pub(super) title: &'a str,
    pub(super) display_name: &'a str,
    pub(super) link: &'a str,
    pub(super) image: &'a str,
    pub(super) description: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireBrand<'a> {
    pub(super) id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) display_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) image: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) link: Option<&'a str>,
}

/// A product item, fields in the order of the contract's Recommender item table.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireItem<'a> {
    #[serde(flatten)]
    pub(super) head: WireHead<'a>,
    #[serde(flatten)]
    pub(super) prices: WirePrices<'a>,
    #[serde(flatten)]
    pub(super) tail: WireTail<'a>,
    pub(super) on_offer: bool,
    pub(super) new_arrival: bool,
}

/// The fixed fields of a product item before its prices.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireHead<'a> {
    pub(super) id: &'a str,
    pub(super) sku: &'a str,
    pub(super) title: &'a str,
    pub(super) description: &'a str,
    pub(super) link: &'a str,
    pub(super) image: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) image_overlay: Option<&'a str>,
    pub(super) all_images: Vec<&'a str>,
}

/// The price fields of a product item, for one visitor and currency.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WirePrices<'a> {
    pub(super) price: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) was_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) saving_price: Option<f64>,
    pub(super) display_price: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) display_was_price: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) saving_display_price: Option<String>,
    pub(super) currency_symbol: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) saving_percent: Option<String>,
}

impl<'a> WirePrices<'a> {
    pub(super) fn of(price: &ItemPrice, symbol: &'a str) -> WirePrices<'a> {
        WirePrices {
            price: price.price.as_f64(),
            was_price: price.was.map(|m| m.as_f64()),
            saving_price: price.saving().map(|m| m.as_f64()),
            display_price: price.price.display(),
            display_was_price: price.was.map(|m| m.display()),
            saving_display_price: price.saving().map(|m| m.display()),
            currency_symbol: symbol,
            saving_percent: price.saving_percent(),
        }
    }
}

/// Writes the price fields of `price` as [`WirePrices`] serializes them, in its order,
/// without its braces and each followed by a comma (`"Price":2.49,…,"CurrencySymbol":"£",`):
/// straight into the answer, with no string made for a display price or a percentage.
pub(super) fn write_prices(out: &mut Vec<u8>, price: &ItemPrice) {
    let symbol = price.price.currency.symbol_str();
    let saving = price.saving();
    let amount = |out: &mut Vec<u8>, key: &[u8], money: Option<Money>| {
        if let Some(money) = money {
            out.extend_from_slice(key);
            write_json(out, &money.as_f64());
            out.push(b',');
        }
    };
    // A symbol JSON would escape is written through `serde_json` (none of ISO's is).
    let plain = !escaped(symbol.as_bytes());
    let display = |out: &mut Vec<u8>, key: &[u8], money: Option<Money>| {
        if let Some(money) = money {
            out.extend_from_slice(key);
            if plain {
                out.push(b'"');
                money.write_display(out);
                out.push(b'"');
            } else {
                write_json(out, &money.display());
            }
            out.push(b',');
        }
    };
    amount(out, br#""Price":"#, Some(price.price));
    amount(out, br#""WasPrice":"#, price.was);
    amount(out, br#""SavingPrice":"#, saving);
    display(out, br#""DisplayPrice":"#, Some(price.price));
    display(out, br#""DisplayWasPrice":"#, price.was);
    display(out, br#""SavingDisplayPrice":"#, saving);
    out.extend_from_slice(br#""CurrencySymbol":"#);
    write_text(out, symbol);
    out.push(b',');
    if let Some(was) = price.was {
        out.extend_from_slice(br#""SavingPercent":""#);
        out.extend_from_slice(
            itoa::Buffer::new()
                .format(saved_percent(was, price.price))
                .as_bytes(),
        );
        out.extend_from_slice(br#"%","#);
    }
}

/// An item's last two fields.
#[derive(Debug, Clone, Copy)]
pub(super) struct Flags {
    pub(super) on_offer: bool,
    pub(super) new_arrival: bool,
}

impl Flags {
    /// The fields' text with the item's closing brace.
    pub(super) fn text(self) -> &'static [u8] {
        match (self.on_offer, self.new_arrival) {
            (true, true) => br#""OnOffer":true,"NewArrival":true}"#,
            (true, false) => br#""OnOffer":true,"NewArrival":false}"#,
            (false, true) => br#""OnOffer":false,"NewArrival":true}"#,
            (false, false) => br#""OnOffer":false,"NewArrival":false}"#,
        }
    }
}

/// The fixed fields of a product item after its prices.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireTail<'a> {
    pub(super) categories: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) brand: Option<WireBrand<'a>>,
    pub(super) search_tags: Vec<&'a str>,
}

/// What of a product item is fixed per catalogue version.
pub(super) struct Fixed<'a> {
    pub(super) head: WireHead<'a>,
    pub(super) tail: WireTail<'a>,
    pub(super) on_offer: bool,
    pub(super) new_arrival: bool,
}

pub(super) fn fixed_parts(catalogue: &Catalogue, idx: ProductIdx) -> Option<Fixed<'_>> {
    let product = catalogue.product(idx)?;
    let brand = catalogue
        .brand_of(product)
        .map(|id| match catalogue.brand(id) {
            Some(b) => WireBrand {
                id,
                display_name: Some(b.display_name.as_str()),
                image: Some(b.image.as_str()),
                link: Some(b.link.as_str()),
            },
            None => WireBrand {
                id,
                display_name: None,
                image: None,
                link: None,
            },
        });
    let mut all_images: Vec<&str> = product.all_images.iter().map(|s| s.as_str()).collect();
    if all_images.is_empty() && !product.image.is_empty() {
        all_images.push(product.image.as_str());
    }
    let head = WireHead {
        id: product.id.as_str(),
        sku: product.sku_or_id(),
        title: product.title.as_str(),
        description: product.description.as_str(),
        link: product.link.as_str(),
        image: product.image.as_str(),
        image_overlay: product.image_overlay.as_ref().map(|s| s.as_str()),
        all_images,
    };
    let tail = WireTail {
        categories: catalogue.categories_of(product).collect(),
        brand,
        search_tags: product.search_tags.iter().map(|t| t.as_str()).collect(),
    };
    Some(Fixed {
        head,
        tail,
        on_offer: product.on_offer,
        new_arrival: product.new_arrival,
    })
}

pub(super) fn item_json<'a>(
    catalogue: &'a Catalogue,
    item: &RenderedItem,
    symbol: &'a str,
) -> Option<WireItem<'a>> {
    let fixed = fixed_parts(catalogue, item.product)?;
    Some(WireItem {
        head: fixed.head,
        prices: WirePrices::of(&item.price, symbol),
        tail: fixed.tail,
        on_offer: fixed.on_offer || item.price.was.is_some(),
        new_arrival: fixed.new_arrival,
    })
}

pub(super) fn named_json<'a>(
    catalogue: &'a Catalogue,
    kind: ZoneKind,
    id: &'a str,
) -> WireNamed<'a> {
    let record = match kind {
        ZoneKind::RecommenderBrand => catalogue.brand(id).map(|b| {
            (
                b.display_name.as_str(),
                b.link.as_str(),
                b.image.as_str(),
                b.description.as_str(),
            )
        }),
        _ => catalogue.category(id).map(|c| {
            (
                c.display_name.as_str(),
                c.link.as_str(),
                c.image.as_str(),
                c.description.as_str(),
            )
        }),
    };
    let (display_name, link, image, description) = record.unwrap_or((id, "", "", ""));
    let display_name = if display_name.is_empty() {
        id
    } else {
        display_name
    };
    WireNamed {
        id,
        title: display_name,
        display_name,
        link,
        image,
        description,
    }
}

#[cfg(test)]
mod tests {
    use vitrine_engine::money::{Currency, Money};
    use vitrine_engine::recommend::ItemPrice;

    use super::{WirePrices, to_vec, write_prices};

    /// `write_prices` writes what `serde_json` makes of [`WirePrices`], braces taken off
    /// and a comma after: for currencies of 0, 2 and 3 minor digits and with symbols
    /// before and after a space, for amounts from nothing to the largest a feed takes,
    /// on sale and not.
    #[test]
    fn prices_are_written_as_serde_writes_them() {
        let codes = [
            "GBP", "EUR", "USD", "JPY", "KWD", "CHF", "SEK", "INR", "PLN", "BHD",
        ];
        let mut amounts: Vec<i64> = vec![0, 1, 5, 9, 10, 99, 100, 101, 999, 1_000, 1_005];
        amounts.extend([12_345, 99_999, 100_000, 123_456_789, 1_000_000_000_000_000]);
        amounts.extend((0..2_000).map(|n| n * 7_919 % 1_000_003));
        let mut written = 0;
        for code in codes {
            let currency = Currency::from_code(code).unwrap();
            let money = |minor: i64| Money { minor, currency };
            for (n, minor) in amounts.iter().copied().enumerate() {
                let was = match n % 4 {
                    0 => None,
                    1 => Some(minor + 1),
                    2 => Some(minor.saturating_mul(3) + 7),
                    _ => Some(minor),
                };
                let price = ItemPrice {
                    price: money(minor),
                    was: was.map(money),
                };
                let mut expected = to_vec(&WirePrices::of(&price, currency.symbol_str()));
                expected.pop();
                expected.remove(0);
                expected.push(b',');
                let mut text = b"{".to_vec();
                write_prices(&mut text, &price);
                assert_eq!(
                    String::from_utf8_lossy(text.get(1..).unwrap()),
                    String::from_utf8_lossy(&expected),
                    "{code} {minor} was {was:?}"
                );
                written += 1;
            }
        }
        assert_eq!(written, codes.len() * amounts.len());
    }
}
