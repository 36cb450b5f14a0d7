//! The demo catalogue: a deterministic generated store (homeware) with categories,
//! brands, prices in GBP and USD, sale prices, new arrivals and a few B2B-only products,
//! so that every demo zone answers as soon as the server starts.

use crate::catalogue::{
    Brand, Catalogue, CatalogueBuilder, CatalogueError, Category, PriceSet, Product, Visibility,
};
use crate::money::{Currency, Money};

/// Number of products in the demo catalogue.
pub const DEMO_PRODUCTS: usize = 3_000;
/// Number of categories of the demo catalogue (ids from [`category_id`]).
pub const DEMO_CATEGORIES: usize = CATEGORIES.len();

const CATEGORIES: [&str; 16] = [
    "Bedding",
    "Lighting",
    "Rugs",
    "Cushions",
    "Curtains",
    "Tableware",
    "Glassware",
    "Cookware",
    "Storage",
    "Mirrors",
    "Clocks",
    "Vases",
    "Candles",
    "Throws",
    "Towels",
    "Frames",
];
const BRANDS: [&str; 12] = [
    "Aspire",
    "Kilner",
    "Northwind",
    "Harbour & Co",
    "Linden",
    "Oakridge",
    "Maris",
    "Fennel",
    "Saltmarsh",
    "Brightwell",
    "Corvid",
    "Alder",
];
const ADJECTIVES: [&str; 12] = [
    "Classic",
    "Modern",
    "Rustic",
    "Nordic",
    "Vintage",
    "Coastal",
    "Urban",
    "Heritage",
    "Minimal",
    "Botanical",
    "Luxe",
    "Everyday",
];
const MATERIALS: [&str; 10] = [
    "Cotton",
    "Linen",
    "Oak",
    "Ceramic",
    "Glass",
    "Brass",
    "Wool",
    "Bamboo",
    "Velvet",
    "Stoneware",
];

/// SplitMix64: a small deterministic sequence, so the demo (and generated benchmark
/// feeds) are the same on every run.
#[derive(Debug)]
pub struct Sequence(u64);

impl Sequence {
    /// A sequence starting from `seed`.
    pub fn new(seed: u64) -> Sequence {
        Sequence(seed)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % (n as u64).max(1)) as usize
    }

    /// One of `items` (empty when there are none).
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items
            .get(self.below(items.len()))
            .copied()
            .unwrap_or_default()
    }
}

/// Category id of the demo category at `index`.
pub fn category_id(index: usize) -> String {
    format!("cat-{:02}", index + 1)
}

/// Product id of the demo product at `index`.
pub fn product_id(index: usize) -> String {
    format!("P{:05}", index + 1)
}

/// Builds the demo catalogue.
pub fn catalogue() -> Result<Catalogue, CatalogueError> {
    demo_builder().build()
}

/// The demo catalogue's records, not yet built.
pub fn demo_builder() -> CatalogueBuilder {
    let mut seq = Sequence(0x005E_ED0F_D3A0);
    let mut builder = CatalogueBuilder::new();
    builder.set_categories(
        CATEGORIES
            .iter()
            .enumerate()
            .map(|(i, name)| Category {
                id: category_id(i),
                display_name: (*name).to_owned(),
                image: format!("//cdn.demo.vitrine.invalid/categories/{}.jpg", i + 1),
                link: format!("/category/{}", category_id(i)),
                description: format!("Our range of {}", name.to_lowercase()),
                parent_ids: Vec::new(),
            })
            .collect(),
    );
    builder.set_brands(
        BRANDS
            .iter()
            .enumerate()
            .map(|(i, name)| Brand {
                id: format!("brand-{:02}", i + 1),
                display_name: (*name).to_owned(),
                image: format!("//cdn.demo.vitrine.invalid/brands/{}.png", i + 1),
                link: format!("/brand/brand-{:02}", i + 1),
                description: format!("Products by {name}"),
            })
            .collect(),
    );
    let (Ok(gbp), Ok(usd)) = (Currency::from_code("GBP"), Currency::from_code("USD")) else {
        return builder;
    };
    for i in 0..DEMO_PRODUCTS {
        let category = seq.below(CATEGORIES.len());
        let noun = CATEGORIES.get(category).copied().unwrap_or("Item");
        let mut categories = vec![category_id(category)];
        if seq.below(4) == 0 {
            categories.push(category_id(seq.below(CATEGORIES.len())));
            categories.dedup();
        }
        let brand = seq.below(BRANDS.len());
        let adjective = seq.pick(&ADJECTIVES);
        let material = seq.pick(&MATERIALS);
        let pence = 299 + (seq.below(200) as i64) * 50;
        let cents = pence * 127 / 100;
        let on_sale = seq.below(5) == 0;
        let gbp_only = seq.below(20) == 0;
        let mut prices = PriceSet {
            prices: vec![Money {
                minor: pence,
                currency: gbp,
            }],
            sale_prices: Vec::new(),
        };
        if !gbp_only {
            prices.prices.push(Money {
                minor: cents,
                currency: usd,
            });
        }
        if on_sale {
            prices.sale_prices.push(Money {
                minor: pence * 3 / 4,
                currency: gbp,
            });
            if !gbp_only {
                prices.sale_prices.push(Money {
                    minor: cents * 3 / 4,
                    currency: usd,
                });
            }
        }
        let id = product_id(i);
        let visibility = if i % 100 == 99 {
            Visibility::OnlyAccounts(vec!["trade-account-1".to_owned()])
        } else {
            Visibility::Everyone
        };
        builder.upsert_product(Product {
            sku: Some(format!("SKU-{:05}", i + 1)),
            title: format!("{adjective} {material} {}", singular(noun)),
            description: format!(
                "{adjective} {} by {}, made of {}.",
                singular(noun).to_lowercase(),
                BRANDS.get(brand).copied().unwrap_or_default(),
                material.to_lowercase()
            ),
            link: format!("/product/{id}"),
            image: format!("//cdn.demo.vitrine.invalid/products/{id}.jpg"),
            image_overlay: on_sale.then(|| "//cdn.demo.vitrine.invalid/badges/sale.png".to_owned()),
            all_images: vec![
                format!("//cdn.demo.vitrine.invalid/products/{id}.jpg"),
                format!("//cdn.demo.vitrine.invalid/products/{id}-2.jpg"),
            ],
            prices,
            categories,
            brand: Some(format!("brand-{:02}", brand + 1)),
            search_tags: vec![adjective.to_lowercase(), material.to_lowercase()],
            visibility,
            on_offer: on_sale,
            new_arrival: seq.below(8) == 0,
            id,
            ..Product::default()
        });
    }
    builder
}

fn singular(noun: &str) -> &str {
    match noun {
        "Bedding" | "Lighting" | "Storage" | "Tableware" | "Glassware" | "Cookware" => noun,
        _ => noun.strip_suffix('s').unwrap_or(noun),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_catalogue_is_complete_and_deterministic() {
        let a = catalogue().unwrap();
        let b = catalogue().unwrap();
        assert_eq!(a.len(), DEMO_PRODUCTS);
        assert!(
            a.to_data().unwrap().products() == b.to_data().unwrap().products(),
            "the demo is deterministic"
        );
        assert_eq!(a.category_count(), CATEGORIES.len());
        assert_eq!(a.brand_count(), BRANDS.len());
        let gbp = Currency::from_code("GBP").unwrap();
        let usd = Currency::from_code("USD").unwrap();
        let gbp_priced = (0..DEMO_PRODUCTS as u32)
            .filter(|&i| a.own_prices(i, gbp).0.is_some())
            .count();
        assert_eq!(gbp_priced, DEMO_PRODUCTS);
        let usd_priced = (0..DEMO_PRODUCTS as u32)
            .filter(|&i| a.own_prices(i, usd).0.is_some())
            .count();
        assert!(usd_priced > DEMO_PRODUCTS * 9 / 10 && usd_priced < DEMO_PRODUCTS);
        assert!(a.iter().any(|(_, p)| p.new_arrival));
        assert!((0..DEMO_PRODUCTS as u32).any(|i| a.own_prices(i, gbp).1.is_some()));
        for i in 0..CATEGORIES.len() {
            assert!(!a.in_category(&category_id(i)).is_empty());
        }
    }
}
