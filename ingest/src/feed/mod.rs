//! Full feeds: parsing (simd-json), record validation on the ingest pool, and the rules
//! that decide whether a feed replaces the live catalogue.
//!
//! A feed is a bare JSON array of products, or an object with any of `Products`,
//! `Categories`, `Brands`, `Users` (first letter in either case; `Version` and unknown
//! members ignored). Each collection present replaces that collection of the account.
//! Invalid records are skipped and reported with their index, id, field and reason; a
//! feed whose products are all invalid, or more than half invalid (or any other
//! collection more than half invalid), is refused as a whole.

use std::collections::{HashMap, HashSet};
use std::fmt;

use rayon::prelude::*;
use vitrine_engine::account::UserRecord;
use vitrine_engine::catalogue::{
    Brand, Catalogue, CatalogueBuilder, CatalogueError, Category, Product,
};

use crate::record::{self, AccountPrice};
use vitrine_fields::{Errors, JsonValue, Presence, index_path};

/// Most record problems kept in a report (the counts are always complete).
pub const MAX_REPORTED_RECORDS: usize = 100;

/// The collections of a feed that were present, validated.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FeedDocument {
    /// `Products` (or the bare array).
    pub products: Option<Vec<Product>>,
    /// `Categories`.
    pub categories: Option<Vec<Category>>,
    /// `Brands`.
    pub brands: Option<Vec<Brand>>,
    /// `Users`.
    pub users: Option<Vec<UserRecord>>,
    /// `AccountPrices` beside `Products`: the B2B prices of the feed's products, each
    /// naming its product by id (a `Sku` is resolved to its product's id when read).
    pub account_prices: Option<Vec<AccountPrice>>,
}

/// Counts of one collection.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Records in the feed.
    pub total: usize,
    /// Records skipped as invalid.
    pub invalid: usize,
}

/// What validation found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FeedReport {
    /// Products.
    pub products: Counts,
    /// Categories.
    pub categories: Counts,
    /// Brands.
    pub brands: Counts,
    /// Users.
    pub users: Counts,
    /// Account prices.
    pub account_prices: Counts,
    /// One line per invalid record (first [`MAX_REPORTED_RECORDS`]), e.g.
    /// `Products[2] (id "P18316"): Prices: required`.
    pub problems: Vec<String>,
}

impl FeedReport {
    fn invalid(&self) -> usize {
        self.products.invalid
            + self.categories.invalid
            + self.brands.invalid
            + self.users.invalid
            + self.account_prices.invalid
    }

    /// A one-paragraph summary for the feed status: counts, then the problems.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (name, counts) in [
            ("products", self.products),
            ("categories", self.categories),
            ("brands", self.brands),
            ("users", self.users),
            ("account prices", self.account_prices),
        ] {
            if counts.total > 0 {
                parts.push(format!(
                    "{} of {} {name} valid",
                    counts.total - counts.invalid,
                    counts.total
                ));
            }
        }
        let mut text = parts.join(", ");
        if !self.problems.is_empty() {
            text.push_str("; skipped: ");
            text.push_str(&self.problems.join("; "));
            let invalid = self.invalid();
            if invalid > self.problems.len() {
                text.push_str(&format!("; and {} more", invalid - self.problems.len()));
            }
        }
        text
    }
}

/// Why a feed was refused as a whole; the text becomes the status `Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedError {
    /// Not JSON.
    Parse {
        /// Byte offset of the problem.
        offset: usize,
        /// The parser's message.
        message: String,
    },
    /// JSON, but not a feed document.
    Shape(String),
    /// Too many invalid records (or none valid).
    Rejected {
        /// Why.
        reason: String,
        /// The validation report.
        report: Box<FeedReport>,
    },
}

impl fmt::Display for FeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeedError::Parse { offset, message } => {
                write!(f, "the feed is not valid JSON: {message} at byte {offset}")
            }
            FeedError::Shape(message) => write!(f, "{message}"),
            FeedError::Rejected { reason, report } => write!(f, "{reason}: {}", report.summary()),
        }
    }
}

impl std::error::Error for FeedError {}

/// Parses and validates a feed. `bytes` is used as simd-json's working buffer.
pub fn parse(bytes: &mut [u8]) -> Result<(FeedDocument, FeedReport), FeedError> {
    parse_with_progress(bytes, &|_| {})
}

/// Counts records as they are validated, for progress displays.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// [`parse`], calling `progress` with the number of records validated since its last
/// call (from the ingest pool's threads).
pub fn parse_with_progress(
    bytes: &mut [u8],
    progress: Progress<'_>,
) -> Result<(FeedDocument, FeedReport), FeedError> {
    let value = simd_json::to_borrowed_value(bytes).map_err(|e| FeedError::Parse {
        offset: e.index(),
        message: format!("{:?}", e.error()),
    })?;
    validate(&value, progress)
}

/// Validates a parsed feed document.
pub fn validate<V: JsonValue + Sync>(
    value: &V,
    progress: Progress<'_>,
) -> Result<(FeedDocument, FeedReport), FeedError> {
    let mut report = FeedReport::default();
    let mut document = FeedDocument::default();
    let lookup = |name: &str| {
        value
            .member(name)
            .or_else(|| value.member(&name.to_lowercase()))
            .or_else(|| value.member(&format!("{}{}", name[..1].to_lowercase(), &name[1..])))
            .filter(|v| !v.is_null())
    };
    let mut account_prices: Option<&[V]> = None;
    let (products, categories, brands, users) = if let Some(items) = value.as_list() {
        (Some(items), None, None, None)
    } else if value.is_object() {
        let list = |name: &str| -> Result<Option<&[V]>, FeedError> {
            match lookup(name) {
                None => Ok(None),
                Some(v) => v.as_list().map(Some).ok_or_else(|| {
                    FeedError::Shape(format!("{name}: expected an array, got {}", v.kind()))
                }),
            }
        };
        account_prices = list("AccountPrices")?;
        let collections = (
            list("Products")?,
            list("Categories")?,
            list("Brands")?,
            list("Users")?,
        );
        if collections.0.is_none()
            && collections.1.is_none()
            && collections.2.is_none()
            && collections.3.is_none()
        {
            return Err(FeedError::Shape(
                "the feed has none of Products, Categories, Brands, Users (nor is it an array of products)".to_owned(),
            ));
        }
        collections
    } else {
        return Err(FeedError::Shape(format!(
            "expected an array of products or an object with Products, Categories, Brands or Users, got {}",
            value.kind()
        )));
    };

    if let Some(items) = products {
        let (mut valid, counts) = read_all(
            items,
            progress,
            "Products",
            &mut report.problems,
            record::product,
        );
        report.products = counts;
        // Ids are unique across the feed: a later record with a used id is skipped.
        let mut first_seen: HashMap<String, usize> = HashMap::with_capacity(valid.len());
        let mut kept = Vec::with_capacity(valid.len());
        for (index, product) in valid.drain(..) {
            if let Some(first) = first_seen.get(&product.id) {
                report.products.invalid += 1;
                note(
                    &mut report.problems,
                    format!(
                        "Products[{index}] (id {:?}): Id: already used by Products[{first}]",
                        product.id
                    ),
                );
            } else {
                first_seen.insert(product.id.clone(), index);
                kept.push(product);
            }
        }
        document.products = Some(kept);
    }
    if let Some(items) = categories {
        let (valid, counts) = read_all(
            items,
            progress,
            "Categories",
            &mut report.problems,
            record::category,
        );
        report.categories = counts;
        document.categories = Some(unique(
            valid,
            "Categories",
            &mut report,
            |c: &Category| &c.id,
            |r| &mut r.categories,
        ));
    }
    if let Some(items) = brands {
        let (valid, counts) = read_all(
            items,
            progress,
            "Brands",
            &mut report.problems,
            record::brand,
        );
        report.brands = counts;
        document.brands = Some(unique(
            valid,
            "Brands",
            &mut report,
            |b: &Brand| &b.id,
            |r| &mut r.brands,
        ));
    }
    if let Some(items) = users {
        let (valid, counts) =
            read_all(items, progress, "Users", &mut report.problems, record::user);
        report.users = counts;
        document.users = Some(unique(
            valid,
            "Users",
            &mut report,
            |u: &UserRecord| &u.user_id,
            |r| &mut r.users,
        ));
    }

    if let Some(items) = account_prices {
        let Some(products) = &document.products else {
            return Err(FeedError::Shape(
                "AccountPrices: only in a product feed, beside Products".to_owned(),
            ));
        };
        let (valid, counts) = read_all(
            items,
            progress,
            "AccountPrices",
            &mut report.problems,
            |v, p, e| record::account_price(v, p, Presence::Required, e),
        );
        report.account_prices = counts;
        document.account_prices = Some(resolve_account_prices(valid, products, &mut report));
    }

    if let Some(products) = &document.products
        && products.is_empty()
    {
        let reason = if report.products.total == 0 {
            "the feed holds no products"
        } else {
            "no product record is valid"
        };
        return Err(FeedError::Rejected {
            reason: reason.to_owned(),
            report: Box::new(report),
        });
    }
    for (name, counts) in [
        ("products", report.products),
        ("categories", report.categories),
        ("brands", report.brands),
        ("users", report.users),
        ("account prices", report.account_prices),
    ] {
        if counts.invalid * 2 > counts.total {
            return Err(FeedError::Rejected {
                reason: format!(
                    "more than half of the {name} are invalid ({} of {})",
                    counts.invalid, counts.total
                ),
                report: Box::new(report),
            });
        }
    }
    Ok((document, report))
}

/// Names each account price's product by its id: an `Id` (or a `Sku` that is some
/// product's id) as it is; else the `Sku` of a product of the feed. A price whose
/// product is not in the feed is skipped and reported, as is a second price for the
/// same account and product.
fn resolve_account_prices(
    valid: Vec<(usize, AccountPrice)>,
    products: &[Product],
    report: &mut FeedReport,
) -> Vec<AccountPrice> {
    let ids: HashSet<&str> = products.iter().map(|p| p.id.as_str()).collect();
    let by_sku: HashMap<&str, &str> = products
        .iter()
        .filter_map(|p| p.sku.as_deref().map(|sku| (sku, p.id.as_str())))
        .collect();
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    let mut kept = Vec::with_capacity(valid.len());
    for (index, mut price) in valid {
        let id = if ids.contains(price.product_id.as_str()) {
            Some(price.product_id.clone())
        } else if price.by_sku {
            by_sku
                .get(price.product_id.as_str())
                .map(|id| (*id).to_owned())
        } else {
            None
        };
        let Some(id) = id else {
            report.account_prices.invalid += 1;
            let key = if price.by_sku { "Sku" } else { "Id" };
            note(
                &mut report.problems,
                format!(
                    "AccountPrices[{index}] (account {:?}): {key}: no product {:?} in the feed",
                    price.account_id, price.product_id
                ),
            );
            continue;
        };
        let key = (price.account_id.clone(), id.clone());
        if let Some(first) = seen.get(&key) {
            report.account_prices.invalid += 1;
            note(
                &mut report.problems,
                format!(
                    "AccountPrices[{index}] (account {:?}): already priced by AccountPrices[{first}]",
                    price.account_id
                ),
            );
            continue;
        }
        seen.insert(key, index);
        price.product_id = id;
        price.by_sku = false;
        kept.push(price);
    }
    kept
}

/// Validates every record of a collection on the current rayon pool, in order.
fn read_all<V: JsonValue + Sync, T: Send>(
    items: &[V],
    progress: Progress<'_>,
    collection: &str,
    problems: &mut Vec<String>,
    read: impl Fn(&V, &str, &mut Errors) -> Option<T> + Sync,
) -> (Vec<(usize, T)>, Counts) {
    let results: Vec<Result<T, Errors>> = items
        .par_iter()
        .map(|item| {
            progress(1);
            let mut errors = Errors::default();
            // Paths are relative to the record; the report line names the record.
            match read(item, "", &mut errors) {
                Some(record) if errors.is_empty() => Ok(record),
                _ => Err(errors),
            }
        })
        .collect();
    let mut counts = Counts {
        total: items.len(),
        invalid: 0,
    };
    let mut valid = Vec::with_capacity(items.len());
    for (i, (result, item)) in results.into_iter().zip(items).enumerate() {
        match result {
            Ok(record) => valid.push((i, record)),
            Err(errors) => {
                counts.invalid += 1;
                let detail: Vec<String> = errors.messages();
                note(
                    problems,
                    format!(
                        "{} ({}): {}",
                        index_path(collection, i),
                        record_id(item),
                        detail.join(", ")
                    ),
                );
            }
        }
    }
    (valid, counts)
}

fn unique<T>(
    records: Vec<(usize, T)>,
    collection: &str,
    report: &mut FeedReport,
    id: impl Fn(&T) -> &String,
    counts: impl Fn(&mut FeedReport) -> &mut Counts,
) -> Vec<T> {
    let mut first_seen: HashMap<String, usize> = HashMap::with_capacity(records.len());
    let mut kept = Vec::with_capacity(records.len());
    for (index, record) in records {
        let key = id(&record).clone();
        if let Some(first) = first_seen.get(&key) {
            counts(report).invalid += 1;
            let line = format!(
                "{collection}[{index}] (id {key:?}): Id: already used by {collection}[{first}]"
            );
            note(&mut report.problems, line);
        } else {
            first_seen.insert(key, index);
            kept.push(record);
        }
    }
    kept
}

fn note(problems: &mut Vec<String>, line: String) {
    if problems.len() < MAX_REPORTED_RECORDS {
        problems.push(line);
    }
}

/// How a record names itself in a report: its `Id`, else its `Sku` or `UserId`.
fn record_id<V: JsonValue>(item: &V) -> String {
    let text = |keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| item.member(k).and_then(JsonValue::as_text))
    };
    if let Some(id) = text(["Id", "id"]) {
        return format!("id {id:?}");
    }
    if let Some(sku) = text(["Sku", "sku"]) {
        return format!("Sku {sku:?}");
    }
    if let Some(user) = text(["UserId", "userId"]) {
        return format!("UserId {user:?}");
    }
    "no id".to_owned()
}

/// Builds the next catalogue version: the feed's collections replace the current ones;
/// collections the feed does not carry are kept. A product feed's `AccountPrices`
/// replace every account price; without them, account prices of products that remain
/// are kept.
pub fn build(current: &Catalogue, document: &FeedDocument) -> Result<Catalogue, CatalogueError> {
    let mut builder = match &document.products {
        Some(products) => {
            let mut builder = current.to_builder_without_products()?;
            for product in products {
                builder.upsert_product(product.clone());
            }
            match &document.account_prices {
                // The feed's account prices are all of them.
                Some(prices) => {
                    builder.clear_account_prices();
                    for price in prices {
                        builder.set_account_prices(
                            &price.account_id,
                            &price.product_id,
                            price.prices.clone(),
                        );
                    }
                }
                None => builder.retain_account_prices_of_products(),
            }
            builder
        }
        None => current.to_builder()?,
    };
    if let Some(categories) = &document.categories {
        builder.set_categories(categories.clone());
    }
    if let Some(brands) = &document.brands {
        builder.set_brands(brands.clone());
    }
    builder.build()
}

/// Builds a fresh catalogue from a feed alone (offline import, first feed).
pub fn build_new(document: &FeedDocument) -> Result<Catalogue, CatalogueError> {
    build(&CatalogueBuilder::new().build()?, document)
}

#[cfg(test)]
mod tests;
