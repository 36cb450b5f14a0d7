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

/// `text` HTML-escaped onto `out`.
fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            other => out.push(other),
        }
    }
}

/// The built-in product card of a zone: image, title, price, the was-price when on
/// sale, the link; written directly (the hot path of every browser request).
pub fn write_cards<'a>(zone: &str, title: &str, cards: impl Iterator<Item = Card<'a>>) -> String {
    let mut out = String::with_capacity(4096);
    out.push_str("<div class=\"vitrine-zone\" data-vitrine-zone=\"");
    escape(&mut out, zone);
    out.push_str("\">");
    out.push_str(CARD_STYLE);
    if !title.is_empty() {
        out.push_str("<h3>");
        escape(&mut out, title);
        out.push_str("</h3>");
    }
    out.push_str("<ul class=\"vitrine-items\">");
    for card in cards {
        out.push_str("<li class=\"vitrine-item\" data-pc-item=\"");
        escape(&mut out, card.id);
        out.push_str("\" pureclarity-data-item=\"");
        escape(&mut out, card.id);
        out.push_str("\"><a href=\"");
        if is_safe_address(card.link) {
            escape(&mut out, card.link);
        }
        out.push_str("\">");
        if !card.image.is_empty() && is_safe_address(card.image) {
            out.push_str("<img src=\"");
            escape(&mut out, card.image);
            out.push_str("\" alt=\"");
            escape(&mut out, card.title);
            out.push_str("\" loading=\"lazy\">");
        }
        out.push_str("<span class=\"vitrine-name\">");
        escape(&mut out, card.title);
        out.push_str("</span><span class=\"vitrine-price\">");
        escape(&mut out, &card.price);
        out.push_str("</span>");
        if let Some(was) = &card.was {
            out.push_str("<s class=\"vitrine-was\">");
            escape(&mut out, was);
            out.push_str("</s>");
        }
        out.push_str("</a></li>");
    }
    out.push_str("</ul></div>");
    out
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
/// `https://`, or site-relative (`/path`, not `//host`).
fn is_safe_address(text: &str) -> bool {
    let lower = text.trim_start().to_ascii_lowercase();
    lower.starts_with("https://")
        || lower.starts_with("http://")
        || (lower.starts_with('/') && !lower.starts_with("//"))
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
