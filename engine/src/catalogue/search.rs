//! Finding products, categories and brands of a catalogue version by id or title, for
//! the console's pickers: a scan of the version in memory, without case, best matches
//! first (the id itself, then ids and title words that begin with the text, then ids
//! and titles that contain it), so that nothing of the catalogue is sent to a browser
//! but what it asked for.

use super::Catalogue;
use crate::recommend::contains_lowercase;

/// What to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchKind {
    /// Products, by id, SKU and title.
    Products,
    /// Category ids products name, and category records' display names.
    Categories,
    /// Brand ids products name, and brand records' display names.
    Brands,
}

impl SearchKind {
    /// Each kind by its name in the admin API.
    pub const ALL: [(&'static str, SearchKind); 3] = [
        ("products", SearchKind::Products),
        ("categories", SearchKind::Categories),
        ("brands", SearchKind::Brands),
    ];
}

/// One match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The id.
    pub id: String,
    /// The title (a product's), or the display name of the category or brand record
    /// (its id when it has none).
    pub title: String,
    /// The image URL, when it has one.
    pub image: Option<String>,
}

/// The best matches and how many there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matches {
    /// At most the limit asked for, best first (then in catalogue order).
    pub found: Vec<Found>,
    /// Every match of the version.
    pub total: usize,
}

/// How well a name matches: lower is better.
fn rank(id: &str, title: &str, term: &str) -> Option<u8> {
    if id.eq_ignore_ascii_case(term) || id.to_lowercase() == term {
        return Some(0);
    }
    let begins = |text: &str| {
        text.get(..term.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(term))
            || (!text.is_ascii() && text.to_lowercase().starts_with(term))
    };
    if begins(id) {
        return Some(1);
    }
    if title
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| !word.is_empty() && begins(word))
    {
        return Some(2);
    }
    if contains_lowercase(id, term) {
        return Some(3);
    }
    contains_lowercase(title, term).then_some(4)
}

/// The `limit` best matches of `text` among `kind` in `catalogue`. An empty text
/// matches nothing.
pub fn search(catalogue: &Catalogue, kind: SearchKind, text: &str, limit: usize) -> Matches {
    let term = text.trim().to_lowercase();
    if term.is_empty() {
        return Matches {
            found: Vec::new(),
            total: 0,
        };
    }
    // (rank, position in the scan): a position is a product's dense id, or a name's
    // place among the version's names.
    let mut ranked: Vec<(u8, u32)> = Vec::new();
    match kind {
        SearchKind::Products => {
            for (idx, product) in catalogue.iter() {
                let by_sku = product
                    .sku
                    .as_ref()
                    .and_then(|sku| rank(sku.as_str(), "", &term).filter(|r| *r <= 1));
                let by_id = rank(product.id.as_str(), product.title.as_str(), &term);
                if let Some(best) = by_id.into_iter().chain(by_sku).min() {
                    ranked.push((best, idx));
                }
            }
        }
        SearchKind::Categories | SearchKind::Brands => {
            for (at, id) in names(catalogue, kind).enumerate() {
                let title = display_name(catalogue, kind, id);
                if let Some(best) = rank(id, title.unwrap_or(""), &term) {
                    ranked.push((best, at as u32));
                }
            }
        }
    }
    let total = ranked.len();
    ranked.sort_unstable();
    ranked.truncate(limit);
    let found = match kind {
        SearchKind::Products => ranked
            .iter()
            .filter_map(|(_, idx)| catalogue.product(*idx))
            .map(|p| Found {
                id: p.id.to_string(),
                title: p.title.to_string(),
                image: Some(p.image.to_string()).filter(|i| !i.is_empty()),
            })
            .collect(),
        SearchKind::Categories | SearchKind::Brands => {
            let all: Vec<&str> = names(catalogue, kind).collect();
            ranked
                .iter()
                .filter_map(|(_, at)| all.get(*at as usize).copied())
                .map(|id| Found {
                    id: id.to_owned(),
                    title: display_name(catalogue, kind, id).unwrap_or(id).to_owned(),
                    image: image(catalogue, kind, id),
                })
                .collect()
        }
    };
    Matches { found, total }
}

/// The category or brand ids of the version.
fn names(catalogue: &Catalogue, kind: SearchKind) -> Box<dyn Iterator<Item = &str> + '_> {
    match kind {
        SearchKind::Brands => Box::new(catalogue.brand_names()),
        _ => Box::new(catalogue.category_names()),
    }
}

/// The display name of a category or brand record, when it has one.
fn display_name<'c>(catalogue: &'c Catalogue, kind: SearchKind, id: &str) -> Option<&'c str> {
    let name = match kind {
        SearchKind::Brands => catalogue.brand(id).map(|b| b.display_name.as_str()),
        _ => catalogue.category(id).map(|c| c.display_name.as_str()),
    };
    name.filter(|n| !n.is_empty())
}

/// The image of a category or brand record, when it has one.
fn image(catalogue: &Catalogue, kind: SearchKind, id: &str) -> Option<String> {
    let image = match kind {
        SearchKind::Brands => catalogue.brand(id).map(|b| b.image.to_string()),
        _ => catalogue.category(id).map(|c| c.image.to_string()),
    };
    image.filter(|i| !i.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{Category, Product};
    use crate::testing;

    fn catalogue() -> Catalogue {
        let product = |id: &str, title: &str, category: &str| Product {
            title: title.to_owned(),
            categories: testing::names(&[category]),
            brand: Some(format!("brand-{category}")),
            ..testing::product(id)
        };
        let mut builder = crate::catalogue::CatalogueBuilder::new();
        for p in [
            product("SHOE-1", "Red running shoe", "shoes"),
            product("HAT-1", "Wool hat", "hats"),
            product("shoe", "Shoehorn", "tools"),
            product("X-9", "Trail shoe", "shoes"),
        ] {
            builder.upsert_product(p);
        }
        builder.set_categories(vec![Category {
            id: "hats".to_owned(),
            display_name: "Winter hats".to_owned(),
            ..Category::default()
        }]);
        builder.build().expect("a catalogue")
    }

    fn ids(matches: &Matches) -> Vec<&str> {
        matches.found.iter().map(|f| f.id.as_str()).collect()
    }

    #[test]
    fn products_rank_the_id_then_beginnings_then_containing() {
        let catalogue = catalogue();
        let shoe = search(&catalogue, SearchKind::Products, "SHOE", 10);
        // The id itself; an id that begins with it; titles whose word begins with it.
        assert_eq!(ids(&shoe), ["shoe", "SHOE-1", "X-9"]);
        assert_eq!(shoe.total, 3);
        let limited = search(&catalogue, SearchKind::Products, "shoe", 1);
        assert_eq!((ids(&limited), limited.total), (vec!["shoe"], 3));
        assert_eq!(search(&catalogue, SearchKind::Products, "  ", 10).total, 0);
        assert_eq!(
            search(&catalogue, SearchKind::Products, "boot", 10).total,
            0
        );
    }

    #[test]
    fn categories_and_brands_match_ids_and_display_names() {
        let catalogue = catalogue();
        let winter = search(&catalogue, SearchKind::Categories, "winter", 10);
        assert_eq!(ids(&winter), ["hats"]);
        assert_eq!(winter.found[0].title, "Winter hats");
        let shoes = search(&catalogue, SearchKind::Categories, "sho", 10);
        assert_eq!(ids(&shoes), ["shoes"]);
        assert_eq!(shoes.found[0].title, "shoes");
        let brands = search(&catalogue, SearchKind::Brands, "brand-t", 10);
        assert_eq!(ids(&brands), ["brand-tools"]);
    }
}
