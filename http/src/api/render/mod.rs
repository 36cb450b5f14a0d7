//! The 200 body of `/api/serverside`.
//!
//! Most of a response is the fixed text of its products (ids, titles, descriptions,
//! links, images, categories, brand, tags), which only changes with the product. That
//! text is escaped once per product and kept until the product changes ([`ProductText`],
//! cached per account and catalogue version in [`ProductTexts`], taken over by the next
//! version for the products a delta did not change) and copied into each response,
//! with the product's own prices in the currency it was first asked for: an item at
//! those prices is one copy, and only other prices (another currency, an account or
//! group price, a sale window) are written per request. The text is exactly what serializing [`WireItem`] gives (a test holds the
//! two together); html zones hand [`WireItem`]s to their templates. The texts and their
//! cache are in `texts`.

mod campaigns;
mod texts;
mod wire;
use wire::{WireEntry, WireImage, item_json, named_json, write_json, write_text};

use vitrine_engine::account::{RenderedItem, RenderedZone, ServeOutcome};
use vitrine_engine::catalogue::Catalogue;
use vitrine_engine::money::Currency;
use vitrine_engine::zone::{ZoneKind, ZoneSpec};

use crate::config::ZoneContent;
pub use campaigns::{CampaignTemplates, zone_title};
pub use texts::{
    CardMarkup, MAX_CACHED_BYTES, MAX_CACHED_CURRENCIES, ProductText, ProductTexts, TextCache,
};

/// What an account renders its zones with: its product texts, the templates of its
/// html zones (by zone id) and the content of its image zones (by zone id).
#[derive(Debug, Clone, Copy)]
pub struct Rendering<'a> {
    /// Product text of the catalogue versions served.
    pub texts: &'a TextCache,
    /// The templates of its html zones.
    pub templates: &'a minijinja::Environment<'static>,
    /// The images of its image zones.
    pub content: &'a std::collections::HashMap<String, ZoneContent>,
    /// The html templates of its campaigns.
    pub campaign_templates: &'a CampaignTemplates,
}

/// Bytes reserved for a response body up front (two zones of ten products fit).
const RESPONSE_CAPACITY: usize = 16 * 1024;

/// A served request written: the response body, and the HTML its html zones rendered.
#[derive(Debug)]
pub struct Written {
    /// The 200's body.
    pub body: Vec<u8>,
    /// The rendered template of each zone of the outcome that is an html zone, by its
    /// place in `outcome.zones` (empty when none is).
    pub html: Vec<Option<String>>,
}

/// The response body of a served request.
pub fn response(
    outcome: &ServeOutcome,
    errors: Vec<String>,
    currency: Currency,
    rendering: Rendering<'_>,
) -> Vec<u8> {
    written(outcome, errors, currency, rendering, 0).body
}

/// The response body of a served request, with its html zones' HTML; `room` is
/// reserved after it for what the caller appends (the browser's HTML), so that the body
/// is not copied to grow.
///
/// Never inlined: writing the answer stays one function in a profile
/// (`benches/README.md` measures it), at the cost of one call.
#[inline(never)]
pub fn written(
    outcome: &ServeOutcome,
    mut errors: Vec<String>,
    currency: Currency,
    rendering: Rendering<'_>,
    room: usize,
) -> Written {
    let catalogue = &outcome.catalogue;
    let texts = rendering.texts.of(catalogue);
    let any_html = outcome.zones.iter().any(|z| {
        outcome
            .spec(z)
            .is_some_and(|spec| campaigns::zone_type(outcome, z, spec) == ZoneKind::Html.name())
    });
    // The symbol is written into cached price texts: html zones only need it here.
    let symbol = if any_html { currency.symbol_str() } else { "" };
    // Templates first: their failures go into `errors`, which come before the zones.
    let zones_with_html = outcome.zones.iter().filter(|_| any_html);
    let html: Vec<Option<String>> = zones_with_html
        .map(|zone| {
            let spec = outcome.spec(zone)?;
            (campaigns::zone_type(outcome, zone, spec) == ZoneKind::Html.name()).then(|| {
                let items = entries(outcome, zone, symbol, rendering);
                let context = minijinja::context! {
                    title => campaigns::zone_title(outcome, zone, spec),
                    items => minijinja::Value::from_serialize(&items),
                };
                // A campaign's html content renders its own template.
                let shown = outcome.campaign(zone).filter(|c| {
                    matches!(
                        c.content,
                        vitrine_engine::campaign::content::Content::Html { .. }
                    )
                });
                let rendered = match (shown, outcome.campaigns.as_deref()) {
                    (Some(campaign), Some(set)) => rendering
                        .campaign_templates
                        .of(set)
                        .get_template(&campaigns::template_name(&spec.id, &campaign.id))
                        .and_then(|template| template.render(context)),
                    _ => rendering
                        .templates
                        .get_template(&spec.id)
                        .and_then(|template| template.render(context)),
                };
                rendered.unwrap_or_else(|error| {
                    errors.push(format!("zone {:?}: the template failed: {error}", spec.id));
                    String::new()
                })
            })
        })
        .collect();
    let mut out = Vec::with_capacity(RESPONSE_CAPACITY + room);
    out.extend_from_slice(b"{\"visitorId\":");
    write_text(&mut out, outcome.visitor_id());
    out.extend_from_slice(b",\"sessionId\":");
    write_text(&mut out, outcome.session_id());
    out.extend_from_slice(b",\"errors\":");
    write_json(&mut out, &errors);
    out.extend_from_slice(b",\"zones\":{");
    let mut written = 0;
    for (z, zone) in outcome.zones.iter().enumerate() {
        let Some(spec) = outcome.spec(zone) else {
            continue;
        };
        let html = html.get(z).and_then(Option::as_ref);
        written += 1;
        if written > 1 {
            out.push(b',');
        }
        write_text(&mut out, &spec.id);
        out.extend_from_slice(b":{\"title\":");
        write_text(&mut out, campaigns::zone_title(outcome, zone, spec));
        out.extend_from_slice(b",\"type\":");
        write_text(&mut out, campaigns::zone_type(outcome, zone, spec));
        out.extend_from_slice(b",\"items\":[");
        let mut first = true;
        let mut separate = |out: &mut Vec<u8>| {
            if !first {
                out.push(b',');
            }
            first = false;
        };
        // Items that are a zone cache list's first ones render as every request
        // showing them does: written once, copied since.
        match &zone.cached {
            Some(cached) => {
                let text = cached.text(|| {
                    let mut text = Vec::new();
                    write_items(&mut text, &texts, &zone.items);
                    text
                });
                if !text.is_empty() {
                    separate(&mut out);
                    out.extend_from_slice(text);
                }
            }
            None => {
                for item in &zone.items {
                    texts.with(item.product, currency, |text| {
                        separate(&mut out);
                        write_product(&mut out, text, item);
                    });
                }
            }
        }
        for other in other_entries(outcome, spec, zone, rendering) {
            separate(&mut out);
            write_json(&mut out, &other);
        }
        out.push(b']');
        if let Some(html) = html {
            out.extend_from_slice(b",\"html\":");
            write_json(&mut out, html);
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}}");
    Written { body: out, html }
}

/// The type a filled zone is shown as: its own, or `html` when a campaign shows html
/// content in it.
pub fn zone_type(outcome: &ServeOutcome, zone: &RenderedZone, spec: &ZoneSpec) -> &'static str {
    campaigns::zone_type(outcome, zone, spec)
}

/// The items of a zone (products, categories or brands, images) as the answer writes
/// them, as JSON values, for a browser template.
pub fn item_values(
    outcome: &ServeOutcome,
    zone: &RenderedZone,
    symbol: &str,
    rendering: Rendering<'_>,
) -> Vec<serde_json::Value> {
    entries(outcome, zone, symbol, rendering)
        .iter()
        .filter_map(|entry| serde_json::to_value(entry).ok())
        .collect()
}

/// Product items, comma-separated (those without a text left out).
fn write_items(out: &mut Vec<u8>, texts: &ProductTexts, items: &[RenderedItem]) {
    for item in items {
        texts.with(item.product, item.price.price.currency, |text| {
            if !out.is_empty() {
                out.push(b',');
            }
            write_product(out, text, item);
        });
    }
}

/// One product item: its fixed text around this request's prices (the product's own
/// prices rendered once per currency, an account or group price rendered now).
fn write_product(out: &mut Vec<u8>, text: &ProductText, item: &RenderedItem) {
    if item.shared_price
        && let Some(whole) = text.whole(&item.price)
    {
        out.extend_from_slice(whole);
        return;
    }
    out.extend_from_slice(text.head());
    let sale = if item.shared_price {
        text.with_own_prices(&item.price, |prices| {
            out.extend_from_slice(&prices.text);
            prices.sale
        })
    } else {
        // An account or group price, or one in a sale window: written for this answer.
        wire::write_prices(out, &item.price);
        item.price.was.is_some()
    };
    out.extend_from_slice(text.tail());
    let flags = wire::Flags {
        on_offer: text.on_offer || sale,
        new_arrival: text.new_arrival,
    };
    out.extend_from_slice(flags.text());
}

/// The items of a zone as values, for its template.
fn entries<'a>(
    outcome: &'a ServeOutcome,
    zone: &'a RenderedZone,
    symbol: &'a str,
    rendering: Rendering<'a>,
) -> Vec<WireEntry<'a>> {
    let catalogue = &outcome.catalogue;
    let mut items: Vec<WireEntry<'a>> = zone
        .items
        .iter()
        .filter_map(|item| item_json(catalogue, item, symbol))
        .map(|item| WireEntry::Product(Box::new(item)))
        .collect();
    if let Some(spec) = outcome.spec(zone) {
        items.extend(other_entries(outcome, spec, zone, rendering));
    }
    items
}

/// A zone's items that are not products: its categories or brands, then its
/// configured images.
fn other_entries<'a>(
    outcome: &'a ServeOutcome,
    spec: &'a ZoneSpec,
    zone: &'a RenderedZone,
    rendering: Rendering<'a>,
) -> impl Iterator<Item = WireEntry<'a>> {
    let catalogue: &'a Catalogue = &outcome.catalogue;
    let kind = spec.kind;
    let named = zone
        .names
        .iter()
        .map(move |id| WireEntry::Named(named_json(catalogue, kind, id)));
    // A zone a campaign fills shows the campaign's images, never the configured ones.
    let configured = if campaigns::by_campaign(zone) {
        None
    } else {
        rendering.content.get(&spec.id)
    };
    let images = configured.into_iter().flat_map(|c| &c.images).map(|image| {
        WireEntry::Image(WireImage {
            image: &image.url,
            link: &image.link,
            alt: &image.alt,
        })
    });
    let campaign_images = campaigns::images(outcome, zone)
        .unwrap_or_default()
        .iter()
        .map(|image| {
            WireEntry::Image(WireImage {
                image: &image.url,
                link: &image.link,
                alt: &image.alt,
            })
        });
    named.chain(images).chain(campaign_images)
}

#[cfg(test)]
mod cache_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use vitrine_engine::money::Money;
    use vitrine_engine::recommend::ItemPrice;

    /// A text is written byte for byte as `serde_json` writes it, with or without
    /// what it escapes.
    #[test]
    fn a_text_is_written_as_serde_json_writes_it() {
        for text in [
            "",
            "HP-01",
            "Customers also viewed",
            "0f8fad5b-d9cb-469f-a165-70867728950e",
            "say \"hi\"",
            "back\\slash",
            "tab\there",
            "line\nbreak",
            "\u{1}",
            "\u{1f}",
            "\u{7f} is not escaped",
            "caf\u{e9} \u{2028} \u{1f600}",
            "</script>",
        ] {
            let mut ours = Vec::new();
            write_text(&mut ours, text);
            assert_eq!(ours, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
        // Each escaped byte, and its neighbours, at every place of a text read a word
        // at a time and then a byte at a time.
        for special in [0u8, 0x1f, 0x20, b'"', b'\\', b'!', b'#', b'[', b']', 0x7f] {
            for at in 0..20 {
                let mut bytes = vec![b'a'; 20];
                bytes[at] = special;
                let text = String::from_utf8(bytes).unwrap();
                let mut ours = Vec::new();
                write_text(&mut ours, &text);
                assert_eq!(ours, serde_json::to_vec(&text).unwrap(), "{text:?}");
            }
        }
    }

    /// The cached text with this request's prices is, byte for byte, the serialized
    /// [`WireItem`], for every product of the demo catalogue, with and without a sale,
    /// in three currencies, with shared (cached) and personal (rendered now) prices,
    /// and with the product's own prices (in the text's currency, a copy of it).
    #[test]
    fn product_text_is_the_serialized_item() {
        let catalogue = Arc::new(vitrine_engine::demo::catalogue().unwrap());
        let texts = ProductTexts::new(Arc::clone(&catalogue));
        let own = ProductTexts::new(Arc::clone(&catalogue));
        let mut checked = 0;
        let mut copied = 0;
        for (idx, _) in catalogue.iter() {
            for (code, was) in [
                ("GBP", None),
                ("USD", Some(200_001)),
                ("JPY", Some(150_000)),
            ] {
                for shared_price in [true, false] {
                    let currency = Currency::from_code(code).unwrap();
                    let money = |minor| Money { minor, currency };
                    let item = RenderedItem {
                        product: idx,
                        price: ItemPrice {
                            price: money(123_450),
                            was: was.map(money),
                        },
                        shared_price,
                    };
                    assert_written_as_serde(&catalogue, &texts, &item);
                    checked += 1;
                }
            }
            // The product's own prices (texts of their own: the items above call made-up
            // prices shared): the text made in pounds holds them, and an item in pounds
            // is a copy of it.
            for code in ["GBP", "USD", "JPY"] {
                let currency = Currency::from_code(code).unwrap();
                let Some(price) =
                    vitrine_engine::recommend::shared_price(&catalogue, idx, currency)
                else {
                    continue;
                };
                let item = RenderedItem {
                    product: idx,
                    price,
                    shared_price: true,
                };
                assert_written_as_serde(&catalogue, &own, &item);
                let whole = own.with(idx, currency, |text| text.whole(&price).is_some());
                assert_eq!(whole, Some(code == "GBP"), "{code}");
                copied += usize::from(code == "GBP");
            }
        }
        assert!(checked > 6000, "{checked}");
        assert!(copied > 1000, "{copied}");
    }

    fn assert_written_as_serde(catalogue: &Catalogue, texts: &ProductTexts, item: &RenderedItem) {
        let currency = item.price.price.currency;
        let symbol = currency.symbol();
        let fast = texts
            .with(item.product, currency, |text| {
                let mut fast = Vec::new();
                write_product(&mut fast, text, item);
                fast
            })
            .unwrap();
        let serde = serde_json::to_vec(&item_json(catalogue, item, &symbol).unwrap()).unwrap();
        assert_eq!(
            String::from_utf8(fast).unwrap(),
            String::from_utf8(serde).unwrap()
        );
    }
}
