//! A generator of realistic product feeds for benchmarks and load tests: field sizes
//! and shapes like a mid-size store's (titles of 3–6 words, descriptions of 150–300
//! characters, 1–3 categories of 300, 800 brands, GBP and USD prices, 20 % on sale,
//! images, tags, associated products, B2B group prices and account visibility),
//! deterministic for a given seed.

use std::fmt::Write;

use vitrine_engine::demo::Sequence;

const WORDS: [&str; 48] = [
    "oak",
    "linen",
    "classic",
    "modern",
    "rustic",
    "nordic",
    "velvet",
    "cotton",
    "brass",
    "ceramic",
    "glass",
    "woven",
    "striped",
    "matte",
    "glazed",
    "hand-made",
    "recycled",
    "organic",
    "soft",
    "large",
    "small",
    "round",
    "square",
    "vintage",
    "coastal",
    "urban",
    "heritage",
    "minimal",
    "botanical",
    "luxe",
    "everyday",
    "grey",
    "blue",
    "green",
    "sand",
    "white",
    "black",
    "lamp",
    "rug",
    "throw",
    "cushion",
    "vase",
    "mirror",
    "clock",
    "chair",
    "table",
    "shelf",
    "basket",
];

/// The demo's deterministic sequence, with the draws a feed needs.
/// A deterministic random sequence for generated data.
#[derive(Debug)]
pub struct Rng(Sequence);

impl Rng {
    /// A sequence starting from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(Sequence::new(seed))
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n as usize) as u64
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A number in `0..n` skewed towards 0 (log-uniform: roughly Zipf-like popularity).
    pub fn skewed(&mut self, n: usize) -> usize {
        let u = self.unit();
        ((n as f64).powf(u) as usize).saturating_sub(1) % n.max(1)
    }

    fn word(&mut self) -> &'static str {
        self.0.pick(&WORDS)
    }
}

/// Number of categories in generated feeds.
pub const CATEGORIES: u64 = 300;
/// Number of brands in generated feeds.
pub const BRANDS: u64 = 800;
/// B2B account ids `acc-0`... named by `AccountInclusions`/`AccountExclusions`.
pub const B2B_ACCOUNTS: usize = 50;

/// Product id of the generated product at `index`.
pub fn product_id(index: usize) -> String {
    format!("P{:07}", index + 1)
}

/// A feed document `{"Products": [...], "Categories": [...], "Brands": [...]}`.
pub fn generate_feed(products: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(Sequence::new(seed));
    let mut out = String::with_capacity(products * 900 + 100_000);
    out.push_str("{\"Version\":2,\"Categories\":[");
    for c in 0..CATEGORIES {
        if c > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"Id":"c{c}","DisplayName":"{} {}","Image":"//cdn.shop.example/c/{c}.jpg","Link":"/c/{c}","ParentIds":[]}}"#,
            rng.word(),
            rng.word()
        );
    }
    out.push_str("],\"Brands\":[");
    for b in 0..BRANDS {
        if b > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"Id":"b{b}","DisplayName":"{} & {}","Image":"//cdn.shop.example/b/{b}.png","Link":"/b/{b}"}}"#,
            rng.word(),
            rng.word()
        );
    }
    out.push_str("],\"Products\":[");
    for i in 0..products {
        if i > 0 {
            out.push(',');
        }
        write_product(&mut out, &mut rng, i, products);
    }
    out.push_str("]}");
    out.into_bytes()
}

fn write_product(out: &mut String, rng: &mut Rng, i: usize, products: usize) {
    let id = product_id(i);
    let title_words = 3 + rng.below(4);
    let mut title = String::new();
    for w in 0..title_words {
        if w > 0 {
            title.push(' ');
        }
        title.push_str(rng.word());
    }
    let mut description = String::new();
    let description_len = 150 + rng.below(150) as usize;
    while description.len() < description_len {
        description.push_str(rng.word());
        description.push(' ');
    }
    let pence = 199 + rng.below(30_000);
    let cents = pence * 127 / 100;
    let on_sale = rng.below(5) == 0;
    let _ = write!(
        out,
        r#"{{"Id":"{id}","Sku":"SKU-{i:07}","Title":"{title}","Description":"{}","Link":"/product/{id}","Image":"//cdn.shop.example/p/{id}.jpg","#,
        description.trim_end()
    );
    let _ = write!(
        out,
        r#""Prices":["{}.{:02} GBP","{}.{:02} USD"]"#,
        pence / 100,
        pence % 100,
        cents / 100,
        cents % 100
    );
    if on_sale {
        let (sp, sc) = (pence * 4 / 5, cents * 4 / 5);
        let _ = write!(
            out,
            r#","SalePrices":["{}.{:02} GBP","{}.{:02} USD"],"ImageOverlay":"//cdn.shop.example/badges/sale.png","OnOffer":true"#,
            sp / 100,
            sp % 100,
            sc / 100,
            sc % 100
        );
    }
    out.push_str(",\"Categories\":[");
    for c in 0..1 + rng.below(3) {
        if c > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"c{}\"", rng.below(CATEGORIES));
    }
    let _ = write!(
        out,
        "],\"Brand\":\"b{}\",\"SearchTags\":[",
        rng.below(BRANDS)
    );
    for t in 0..2 + rng.below(4) {
        if t > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"{}\"", rng.word());
    }
    out.push_str("],\"AllImages\":[");
    for m in 0..1 + rng.below(3) {
        if m > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"//cdn.shop.example/p/{id}-{m}.jpg\"");
    }
    out.push_str("],\"AssociatedIds\":[");
    for a in 0..rng.below(3) {
        if a > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "\"{}\"",
            product_id(rng.below(products as u64) as usize)
        );
    }
    out.push(']');
    // B2B: every 20th product has a `trade` group price, every 50th is visible to one
    // account only, every 70th hidden from one.
    if i % 20 == 7 {
        let (gp, gc) = (pence * 9 / 10, cents * 9 / 10);
        let _ = write!(
            out,
            r#","GroupPrices":{{"trade":{{"Prices":["{}.{:02} GBP","{}.{:02} USD"]}}}}"#,
            gp / 100,
            gp % 100,
            gc / 100,
            gc % 100
        );
    }
    if i % 50 == 11 {
        let _ = write!(out, r#","AccountInclusions":["acc-{}"]"#, i % B2B_ACCOUNTS);
    } else if i % 70 == 13 {
        let _ = write!(out, r#","AccountExclusions":["acc-{}"]"#, i % B2B_ACCOUNTS);
    }
    let _ = write!(out, ",\"NewArrival\":{}}}", rng.below(10) == 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_feeds_are_valid_and_deterministic() {
        let mut feed = generate_feed(500, 7);
        assert_eq!(feed, generate_feed(500, 7));
        let (document, report) = vitrine_ingest::feed::parse(&mut feed).unwrap();
        assert_eq!(document.products.unwrap().len(), 500, "{report:?}");
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(document.brands.unwrap().len(), BRANDS as usize);
        let text = String::from_utf8(generate_feed(500, 7)).unwrap();
        assert_eq!(text.matches("\"GroupPrices\"").count(), 25);
        assert_eq!(text.matches("\"AccountInclusions\"").count(), 10);
        assert!(text.contains("\"AccountExclusions\":[\"acc-"));
    }
}
