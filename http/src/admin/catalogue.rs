//! `GET /admin/api/accounts/{accessKey}/catalogue?q=TEXT&kind=products|categories|brands&limit=N`:
//! the console's pickers find products, categories and brands by id or title in the
//! catalogue in memory (best matches first), so no catalogue is downloaded to a browser.
//! A product comes with what picking it by sight needs: its image, price now,
//! availability, categories and brand.

use serde_json::{Value, json};
use vitrine_engine::catalogue::search::{SearchKind, search};
use vitrine_engine::catalogue::{Catalogue, UnixMillis};
use vitrine_engine::money::Currency;

use super::request::Query;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// Matches answered when `limit` is not given.
const DEFAULT_LIMIT: usize = 20;
/// Matches answered at most.
const MAX_LIMIT: usize = 100;
/// The longest search text, in characters.
const MAX_TEXT: usize = 200;

/// The search answer.
pub(super) fn find(entry: &AccountEntry, query: &Query) -> Result<Value, ApiError> {
    let invalid = |message: String| ApiError::Invalid(vec![message]);
    let text = query.get("q").unwrap_or("");
    if text.trim().is_empty() {
        return Err(invalid(
            "q: required (the text to find in ids and titles)".to_owned(),
        ));
    }
    if text.chars().count() > MAX_TEXT {
        return Err(invalid(format!("q: at most {MAX_TEXT} characters")));
    }
    let kinds = || {
        SearchKind::ALL
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = match query.get("kind") {
        None | Some("") => SearchKind::Products,
        Some(name) => SearchKind::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, kind)| *kind)
            .ok_or_else(|| invalid(format!("kind: expected one of {}, got {name:?}", kinds())))?,
    };
    let limit = query.limit("limit", DEFAULT_LIMIT, MAX_LIMIT)?;
    let catalogue = entry.account.catalogue();
    let matches = search(&catalogue, kind, text, limit);
    let currency = entry.account.settings().default_currency;
    let now = crate::clock::now_millis();
    let found: Vec<Value> = matches
        .found
        .iter()
        .map(|f| {
            let mut answer = json!({"id": f.id, "title": f.title, "image": f.image});
            if kind == SearchKind::Products
                && let Some(fields) = answer.as_object_mut()
            {
                fields.extend(product_facts(&catalogue, &f.id, currency, now));
            }
            answer
        })
        .collect();
    Ok(json!({
        "kind": SearchKind::ALL.iter().find(|(_, k)| *k == kind).map(|(n, _)| *n),
        "q": text,
        "total": matches.total,
        "found": found,
    }))
}

/// What a picker shows of a product beside its title and image, to pick it by sight:
/// its price in the account's currency now (the sale price while its sale applies, with
/// the regular one as `wasPrice`), whether it is available now (inside its
/// `StartDate`..`EndDate`), its categories and brand.
fn product_facts(
    catalogue: &Catalogue,
    id: &str,
    currency: Currency,
    now: UnixMillis,
) -> serde_json::Map<String, Value> {
    let mut facts = serde_json::Map::new();
    let Some(idx) = catalogue.idx_of(id) else {
        return facts;
    };
    let Some(product) = catalogue.product(idx) else {
        return facts;
    };
    let (regular, sale) = catalogue.own_prices(idx, currency);
    let sale = sale.filter(|_| product.sale_applies_at(now));
    let price = sale.or(regular);
    facts.insert("price".to_owned(), json!(price.map(|p| p.display())));
    facts.insert(
        "wasPrice".to_owned(),
        json!(sale.and(regular).map(|p| p.display())),
    );
    facts.insert("available".to_owned(), json!(product.is_live_at(now)));
    facts.insert(
        "categories".to_owned(),
        json!(catalogue.categories_of(product).collect::<Vec<_>>()),
    );
    facts.insert("brand".to_owned(), json!(catalogue.brand_of(product)));
    facts
}
