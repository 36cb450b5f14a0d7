//! The HTML the browser script puts into a page's zone elements: a product zone's items
//! as cards (the built-in card template, or the account's `clientside.card_template`),
//! an html zone's own template output, an image zone's images, a category or brand
//! zone's names as links.
//!
//! Every template is auto-escaped as HTML, and sees only the zone (`zone.id`,
//! `zone.title`, `zone.type`), its `items` (the item fields of the serverside answer)
//! and the `page` (`page.url`, `page.currency`): no file, global or function beyond
//! minijinja's built-in filters. Links and image addresses other than `http(s)://` or
//! site-relative ones are emptied first, so that a catalogue cannot put a `javascript:`
//! link into a store's page.

use minijinja::{AutoEscape, Environment, UndefinedBehavior, context};
use serde_json::Value;

/// The style of the built-in product card: a grid that fits the width it is given, with
/// no CSS needed from the store.
const CARD_STYLE: &str = "<style>.vitrine-zone{margin:1em 0;font:inherit}.vitrine-zone h3{font-size:1.15em;margin:0 0 .6em}.vitrine-items{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5em,1fr));gap:1em;list-style:none;margin:0;padding:0}.vitrine-item a{display:block;color:inherit;text-decoration:none}.vitrine-item img{display:block;width:100%;aspect-ratio:1/1;object-fit:cover;border-radius:6px;background:#f2f2f2}.vitrine-name{display:block;margin:.45em 0 .2em;line-height:1.3}.vitrine-price{font-weight:600}.vitrine-was{margin-left:.4em;color:#777;font-size:.9em}</style>";

/// One product of the built-in card.
#[derive(Debug, Clone)]
pub struct Card<'a> {
    /// Its id (`data-pc-item`, for clicks; `pureclarity-data-item`, the plugins' hook).
    pub id: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Its link (emptied unless a safe address).
    pub link: &'a str,
    /// Its image (left out unless a safe address).
    pub image: &'a str,
    /// `DisplayPrice` in the request's currency.
    pub price: String,
    /// `DisplayWasPrice`, when on sale.
    pub was: Option<String>,
}

/// How markup is written: as HTML, or as HTML inside a JSON string literal (each `"`
/// and `\\` escaped once more, as the answer's `html` carries it), in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escaping {
    /// HTML.
    Html,
    /// The contents of a JSON string holding the HTML.
    HtmlInJson,
}

/// The zone a run of built-in cards is written for.
#[derive(Debug, Clone, Copy)]
pub struct CardZone<'a> {
    /// Its id (`data-vitrine-zone`).
    pub id: &'a str,
    /// Its title (a heading when not empty).
    pub title: &'a str,
    /// Whether the cards' `<style>` goes with it (once per page is enough: a style
    /// element applies to the whole page).
    pub style: bool,
}

/// Where markup is written: a `String`, or the bytes of an answer.
pub trait Sink {
    /// Appends text.
    fn put(&mut self, text: &str);
}

impl Sink for String {
    fn put(&mut self, text: &str) {
        self.push_str(text);
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, text: &str) {
        self.extend_from_slice(text.as_bytes());
    }
}

/// Fixed markup onto `out`.
fn markup(out: &mut impl Sink, piece: &str, escaping: Escaping) {
    match escaping {
        Escaping::Html => out.put(piece),
        Escaping::HtmlInJson => replace_bytes(out, piece, |b| (b == b'"').then_some("\\\"")),
    }
}

/// `text` HTML-escaped (and JSON-escaped, for [`Escaping::HtmlInJson`]) onto `out`.
fn escape(out: &mut impl Sink, text: &str, escaping: Escaping) {
    let json = escaping == Escaping::HtmlInJson;
    replace_bytes(out, text, |b| match b {
        b'&' => Some("&amp;"),
        b'<' => Some("&lt;"),
        b'>' => Some("&gt;"),
        b'"' => Some("&quot;"),
        b'\'' => Some("&#x27;"),
        b'\\' if json => Some("\\\\"),
        0..=0x1f if json => CONTROLS.get(usize::from(b)).copied(),
        _ => None,
    });
}

/// The JSON escapes of the control characters.
const CONTROLS: [&str; 32] = [
    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007", "\\b",
    "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011", "\\u0012",
    "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019", "\\u001a",
    "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
];

/// `text` onto `out` with each ASCII byte `replace` names replaced, the runs between
/// copied whole.
fn replace_bytes(out: &mut impl Sink, text: &str, replace: impl Fn(u8) -> Option<&'static str>) {
    let mut copied = 0;
    for (at, byte) in text.bytes().enumerate() {
        if let Some(replacement) = replace(byte) {
            // `at` is an ASCII byte's place: a char boundary.
            out.put(text.get(copied..at).unwrap_or_default());
            out.put(replacement);
            copied = at + 1;
        }
    }
    out.put(text.get(copied..).unwrap_or_default());
}

/// The built-in product cards of a zone as HTML: image, title, price, the was-price
/// when on sale, the link, with the cards' style.
pub fn write_cards<'a>(zone: &str, title: &str, cards: impl Iterator<Item = Card<'a>>) -> String {
    let mut out = String::with_capacity(4096);
    let zone = CardZone {
        id: zone,
        title,
        style: true,
    };
    write_cards_into(&mut out, Escaping::Html, zone, cards);
    out
}

/// The built-in product cards of a zone onto `out`, written directly (the hot path of
/// every browser request).
pub fn write_cards_into<'a>(
    out: &mut impl Sink,
    escaping: Escaping,
    zone: CardZone<'_>,
    cards: impl Iterator<Item = Card<'a>>,
) {
    open_zone(out, escaping, zone);
    for card in cards {
        card_head(out, escaping, card.id, card.title, card.link, card.image);
        card_tail(out, escaping, &card.price, card.was.as_deref());
    }
    close_zone(out, escaping);
}

/// The start of a zone's cards: its element, the style, its title, the list.
pub fn open_zone(out: &mut impl Sink, escaping: Escaping, zone: CardZone<'_>) {
    markup(
        out,
        "<div class=\"vitrine-zone\" data-vitrine-zone=\"",
        escaping,
    );
    escape(out, zone.id, escaping);
    markup(out, "\">", escaping);
    if zone.style {
        out.put(CARD_STYLE);
    }
    if !zone.title.is_empty() {
        markup(out, "<h3>", escaping);
        escape(out, zone.title, escaping);
        markup(out, "</h3>", escaping);
    }
    markup(out, "<ul class=\"vitrine-items\">", escaping);
}

/// What of a card is the product's alone (the same on every request until the product
/// changes): up to its price.
pub fn card_head(
    out: &mut impl Sink,
    escaping: Escaping,
    id: &str,
    title: &str,
    link: &str,
    image: &str,
) {
    markup(out, "<li class=\"vitrine-item\" data-pc-item=\"", escaping);
    escape(out, id, escaping);
    markup(out, "\" pureclarity-data-item=\"", escaping);
    escape(out, id, escaping);
    markup(out, "\"><a href=\"", escaping);
    if is_safe_address(link) {
        escape(out, link, escaping);
    }
    markup(out, "\">", escaping);
    if !image.is_empty() && is_safe_address(image) {
        markup(out, "<img src=\"", escaping);
        escape(out, image, escaping);
        markup(out, "\" alt=\"", escaping);
        escape(out, title, escaping);
        markup(out, "\" loading=\"lazy\">", escaping);
    }
    markup(out, "<span class=\"vitrine-name\">", escaping);
    escape(out, title, escaping);
    markup(out, "</span><span class=\"vitrine-price\">", escaping);
}

/// The rest of a card: its price in the request's currency, the was-price on sale.
pub fn card_tail(out: &mut impl Sink, escaping: Escaping, price: &str, was: Option<&str>) {
    escape(out, price, escaping);
    markup(out, "</span>", escaping);
    if let Some(was) = was {
        markup(out, "<s class=\"vitrine-was\">", escaping);
        escape(out, was, escaping);
        markup(out, "</s>", escaping);
    }
    markup(out, "</a></li>", escaping);
}

/// The built-in card as the browser's answer carries it (HTML inside a JSON string),
/// for the product texts' cache.
#[derive(Debug, Clone, Copy)]
pub struct CardInJson;

impl crate::api::render::CardMarkup for CardInJson {
    fn head(
        &self,
        catalogue: &vitrine_engine::catalogue::Catalogue,
        idx: vitrine_engine::catalogue::ProductIdx,
    ) -> String {
        let mut head = String::new();
        if let Some(product) = catalogue.product(idx) {
            card_head(
                &mut head,
                Escaping::HtmlInJson,
                product.id.as_str(),
                product.title.as_str(),
                product.link.as_str(),
                product.image.as_str(),
            );
        }
        head
    }

    fn prices(&self, price: &vitrine_engine::recommend::ItemPrice) -> String {
        let mut tail = String::new();
        let was = price.was.map(|was| was.display());
        card_tail(
            &mut tail,
            Escaping::HtmlInJson,
            &price.price.display(),
            was.as_deref(),
        );
        tail
    }
}

/// The end of a zone's cards.
pub fn close_zone(out: &mut impl Sink, escaping: Escaping) {
    markup(out, "</ul></div>", escaping);
}

/// An image or image-carousel zone.
const IMAGES: &str = r#"<div class="vitrine-zone vitrine-images" data-vitrine-zone="{{ zone.id }}">{% for item in items %}<a href="{{ item.Link }}" data-pc-item="{{ loop.index }}"><img src="{{ item.Image }}" alt="{{ item.Alt }}" style="max-width:100%;height:auto"></a>{% endfor %}</div>"#;

/// A category or brand zone.
const NAMES: &str = r#"<div class="vitrine-zone" data-vitrine-zone="{{ zone.id }}">{% if zone.title %}<h3>{{ zone.title }}</h3>{% endif %}<ul class="vitrine-names">{% for item in items %}<li data-pc-item="{{ item.Id }}"><a href="{{ item.Link }}">{{ item.DisplayName or item.Title }}</a></li>{% endfor %}</ul></div>"#;

/// The templates of one account's zones in the browser.
#[derive(Debug)]
pub struct Cards {
    env: Environment<'static>,
    /// Whether the account has its own card template (`card` in `env`).
    own_card: bool,
}

/// The page a zone is rendered for.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// `currentUrl`.
    pub url: &'a str,
    /// The currency of the prices.
    pub currency: &'a str,
}

impl Cards {
    /// The built-in templates, with `card` (checked when the configuration was read)
    /// in place of the built-in card.
    pub fn new(card: Option<&str>) -> Result<Cards, minijinja::Error> {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        env.set_undefined_behavior(UndefinedBehavior::Chainable);
        if let Some(card) = card {
            env.add_template_owned("card", card.to_owned())?;
        }
        env.add_template("images", IMAGES)?;
        env.add_template("names", NAMES)?;
        Ok(Cards {
            env,
            own_card: card.is_some(),
        })
    }

    /// Whether product zones use the account's own card template (else the built-in
    /// card, written by [`write_cards`]).
    pub fn has_own_card(&self) -> bool {
        self.own_card
    }

    /// The HTML of a filled zone; `None` when it shows nothing (the page keeps the
    /// element's fallback content).
    pub fn zone_html(
        &self,
        zone: &Zone<'_>,
        page: Page<'_>,
    ) -> Result<Option<String>, minijinja::Error> {
        let items: Vec<Value> = zone.items.iter().map(safe_links).collect();
        if items.is_empty() {
            return Ok(None);
        }
        let template = match zone.kind {
            "recommender-product" if !self.own_card => {
                let cards = items.iter().map(|item| {
                    let text =
                        |field: &str| item.get(field).and_then(Value::as_str).unwrap_or_default();
                    Card {
                        id: text("Id"),
                        title: text("Title"),
                        link: text("Link"),
                        image: text("Image"),
                        price: text("DisplayPrice").to_owned(),
                        was: item
                            .get("DisplayWasPrice")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    }
                });
                return Ok(Some(write_cards(zone.id, zone.title, cards)));
            }
            "html" => {
                return Ok(zone.html.filter(|html| !html.is_empty()).map(str::to_owned));
            }
            "image" | "image-carousel" => "images",
            "recommender-category" | "recommender-brand" => "names",
            _ => "card",
        };
        let html = self.env.get_template(template)?.render(context! {
            zone => context! { id => zone.id, title => zone.title, type => zone.kind },
            items => items,
            page => context! { url => page.url, currency => page.currency },
        })?;
        Ok(Some(html))
    }
}

/// A filled zone, as its template sees it.
#[derive(Debug, Clone)]
pub struct Zone<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Its type as the answer names it (`recommender-product`, `html`, `image`, ...).
    pub kind: &'a str,
    /// Its items, with the fields of the serverside answer's items.
    pub items: Vec<Value>,
    /// An html zone's rendered template.
    pub html: Option<&'a str>,
}

/// Whether an address may be a link or an image in a store's page: `http://`,
/// `https://`, or site-relative (`/path`, not `//host`), after leading ASCII
/// whitespace; compared without allocating (it is asked twice per card).
fn is_safe_address(text: &str) -> bool {
    let rest = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let starts = |prefix: &str| {
        rest.as_bytes()
            .get(..prefix.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(prefix.as_bytes()))
    };
    starts("https://") || starts("http://") || (rest.starts_with('/') && !rest.starts_with("//"))
}

/// An item with its `Link` and `Image` emptied where they are not safe addresses.
fn safe_links(item: &Value) -> Value {
    let mut item = item.clone();
    if let Some(object) = item.as_object_mut() {
        for field in ["Link", "Image"] {
            if let Some(Value::String(address)) = object.get_mut(field)
                && !is_safe_address(address)
            {
                address.clear();
            }
        }
    }
    item
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page() -> Page<'static> {
        Page {
            url: "https://shop.example/p/1",
            currency: "GBP",
        }
    }

    #[test]
    fn a_card_escapes_product_text_and_keeps_only_safe_links() {
        let zone = Zone {
            id: "PP-01",
            title: "You <b>may</b> like",
            kind: "recommender-product",
            items: vec![json!({"Id": "p\"1", "Title": "<script>alert(1)</script>",
                "Link": "javascript:alert(1)", "Image": "https://img.example/1.png",
                "DisplayPrice": "£9.50", "DisplayWasPrice": "£12.00"})],
            html: None,
        };
        let html = Cards::new(None)
            .unwrap()
            .zone_html(&zone, page())
            .unwrap()
            .unwrap();
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("You &lt;b&gt;may&lt;/b&gt; like"), "{html}");
        assert!(
            html.contains(r#"href="""#) && !html.contains("javascript:"),
            "{html}"
        );
        assert!(html.contains(r#"data-pc-item="p&quot;1""#), "{html}");
        assert!(html.contains("£9.50") && html.contains("<s class=\"vitrine-was\">£12.00</s>"));
    }

    /// The cards written as JSON string contents read back as exactly the HTML, for
    /// text with quotes, backslashes, control characters and markup.
    #[test]
    fn cards_written_inside_json_read_back_as_the_html() {
        let card = || Card {
            id: "p\"1\\x",
            title: "<b>Tab\tand\nline</b> & 'quotes' \u{1}",
            link: "https://shop.example/a?b=\"c\"",
            image: " HTTPS://img.example/1.png",
            price: "£9.50".to_owned(),
            was: Some("£12.00".to_owned()),
        };
        let zone = CardZone {
            id: "Z\"1",
            title: "T\\",
            style: true,
        };
        let mut html = String::new();
        write_cards_into(&mut html, Escaping::Html, zone, [card()].into_iter());
        let mut json = String::from("\"");
        write_cards_into(&mut json, Escaping::HtmlInJson, zone, [card()].into_iter());
        json.push('"');
        let read: String = serde_json::from_str(&json).unwrap();
        assert_eq!(read, html);
        assert!(
            html.contains("src=\" HTTPS://img.example/1.png\""),
            "{html}"
        );
        assert!(!is_safe_address("JavaScript:alert(1)") && !is_safe_address("//evil.example"));
        assert!(is_safe_address("/p/1") && is_safe_address("Http://x"));
    }

    #[test]
    fn an_empty_zone_shows_nothing_and_an_account_template_replaces_the_card() {
        let empty = Zone {
            id: "Z",
            title: "T",
            kind: "recommender-product",
            items: Vec::new(),
            html: None,
        };
        let cards = Cards::new(Some(
            "{% for item in items %}[{{ item.Title }} in {{ page.currency }}]{% endfor %}",
        ))
        .unwrap();
        assert_eq!(cards.zone_html(&empty, page()).unwrap(), None);
        let zone = Zone {
            items: vec![json!({"Title": "A&B"})],
            ..empty
        };
        assert_eq!(
            cards.zone_html(&zone, page()).unwrap().unwrap(),
            "[A&amp;B in GBP]"
        );
    }
}
