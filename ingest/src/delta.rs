//! Deltas: incremental changes to an account's products, category assignments,
//! account prices and users.
//!
//! [`parse`] checks the structure of a delta body (a 400 when anything is wrong, and
//! nothing is queued). [`apply_to`] applies one delta to an edit of a catalogue as a
//! whole or not at all, in the order the design fixes: deletes, upserts, category
//! removals, category sets, price deletes, price upserts; [`apply_users`] then its user
//! deletes and users.

use std::collections::{HashMap, HashSet};
use vitrine_engine::Account;
use vitrine_engine::account::UserRecord;

use vitrine_engine::catalogue::Product;
use vitrine_engine::overlay::CatalogueEdit;

use crate::record::{self, AccountPrice, CategoryAssignment, duplicate_ids};
use vitrine_fields::{Errors, Fields, JsonValue, Presence, check_id, index_path};

/// Part names of a delta body, in the order of the contract.
pub const PARTS: [&str; 8] = [
    "Products",
    "DeleteProducts",
    "SetCategoryOnProducts",
    "RemoveCategoryFromProducts",
    "AccountPrices",
    "DeleteAccountPrices",
    "Users",
    // Beyond the contract: the vendor's PHP SDK sends it.
    "DeleteUsers",
];

/// A structurally valid delta.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delta {
    /// `Products`: whole products to add or replace.
    pub products: Vec<Product>,
    /// `DeleteProducts`: product ids to remove.
    pub delete_products: Vec<String>,
    /// `SetCategoryOnProducts`.
    pub set_categories: Vec<CategoryAssignment>,
    /// `RemoveCategoryFromProducts`.
    pub remove_categories: Vec<CategoryAssignment>,
    /// `AccountPrices`: prices to add or replace.
    pub account_prices: Vec<AccountPrice>,
    /// `DeleteAccountPrices`.
    pub delete_account_prices: Vec<AccountPrice>,
    /// `Users`: user records to add or replace.
    pub users: Vec<UserRecord>,
    /// `DeleteUsers`: user ids whose records are removed (before `Users` are added).
    pub delete_users: Vec<String>,
}

impl Delta {
    /// Number of records of every part together.
    pub fn record_count(&self) -> usize {
        self.products.len()
            + self.delete_products.len()
            + self.set_categories.len()
            + self.remove_categories.len()
            + self.account_prices.len()
            + self.delete_account_prices.len()
            + self.users.len()
            + self.delete_users.len()
    }
}

/// Reads the parts of a delta body (credentials are the caller's business).
pub fn parse<V: JsonValue>(body: &Fields<'_, '_, V>) -> Result<Delta, Errors> {
    let mut errors = Errors::default();
    let mut delta = Delta::default();
    if !PARTS.iter().any(|part| body.has(part)) {
        errors.push(
            "",
            format!("a delta must carry at least one of {}", PARTS.join(", ")),
        );
        return Err(errors);
    }
    delta.products = records(body, "Products", &mut errors, record::product);
    let duplicates = duplicate_ids(delta.products.iter().map(|p| p.id.as_str()));
    if !duplicates.is_empty() {
        errors.push(
            "Products",
            format!("product ids sent twice: {}", list(&duplicates)),
        );
    }
    delta.delete_products = body
        .opt_id_array("DeleteProducts", &mut errors, check_id)
        .unwrap_or_default();
    delta.set_categories = records(
        body,
        "SetCategoryOnProducts",
        &mut errors,
        record::category_assignment,
    );
    delta.remove_categories = records(
        body,
        "RemoveCategoryFromProducts",
        &mut errors,
        record::category_assignment,
    );
    delta.account_prices = records(body, "AccountPrices", &mut errors, |v, p, e| {
        record::account_price(v, p, Presence::Required, e)
    });
    delta.delete_account_prices = records(body, "DeleteAccountPrices", &mut errors, |v, p, e| {
        record::account_price(v, p, Presence::Optional, e)
    });
    delta.users = records(body, "Users", &mut errors, record::user);
    delta.delete_users = body
        .opt_id_array("DeleteUsers", &mut errors, check_id)
        .unwrap_or_default();
    errors.into_result(delta)
}

fn records<T, V: JsonValue>(
    body: &Fields<'_, '_, V>,
    part: &str,
    errors: &mut Errors,
    read: impl Fn(&V, &str, &mut Errors) -> Option<T>,
) -> Vec<T> {
    let Some(items) = body.opt_array(part, errors) else {
        return Vec::new();
    };
    let path = body.path_of(part);
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| read(item, &index_path(&path, i), errors))
        .collect()
}

/// Why a delta was not applied; the text becomes the `Reason` of Status 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    /// The next catalogue version could not be produced.
    #[error("{0}")]
    Catalogue(String),
    /// The delta references products the catalogue does not have.
    #[error("unknown product ids in {part}: {ids}")]
    UnknownProducts {
        /// The part that references them.
        part: &'static str,
        /// The ids, listed.
        ids: String,
    },
}

/// What an applied delta changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Products removed (deleting an unknown product is a no-op).
    pub deleted: usize,
    /// Products added or replaced.
    pub upserted: usize,
    /// Users added or replaced.
    pub users: usize,
}

/// How [`apply_to`] treats references to products the catalogue does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A first application: unknown references fail the whole delta.
    Strict,
    /// Applying again a delta that succeeded once, on a catalogue rebuilt under it (a
    /// full feed that arrived meanwhile): references the new base no longer has are
    /// skipped, the rest applies.
    Reapply,
}

/// Removes the delta's `DeleteUsers`, then adds or replaces its `Users` (account state,
/// not catalogue). Removing a user id the account does not have is not a failure.
pub fn apply_users(account: &Account, delta: &Delta) {
    for user_id in &delta.delete_users {
        account.remove_user(user_id);
    }
    for user in &delta.users {
        account.upsert_user(user.clone());
    }
}

/// Applies the catalogue parts of a delta to an edit, in the design's order. In
/// [`Mode::Strict`] every reference is checked before anything changes, so a failed
/// delta leaves the edit as it was.
pub fn apply_to(
    edit: &mut CatalogueEdit,
    delta: &Delta,
    mode: Mode,
) -> Result<Applied, DeltaError> {
    let deleted: HashSet<&str> = delta.delete_products.iter().map(String::as_str).collect();
    let upserted: HashSet<&str> = delta.products.iter().map(|p| p.id.as_str()).collect();
    let known =
        |id: &str| upserted.contains(id) || (!deleted.contains(id) && edit.contains_product(id));
    // An account price by `Sku`: a product with that id, else one with that SKU (in this
    // delta, or in the catalogue and not deleted by it).
    let known_price = |price: &AccountPrice| {
        known(&price.product_id)
            || (price.by_sku
                && (delta
                    .products
                    .iter()
                    .any(|p| p.sku.as_deref() == Some(price.product_id.as_str()))
                    || edit
                        .view()
                        .idx_of_sku(&price.product_id)
                        .and_then(|idx| edit.view().product(idx))
                        .is_some_and(|p| !deleted.contains(p.id.as_str()))))
    };
    if mode == Mode::Strict {
        let parts: [(&'static str, Vec<&str>); 4] = [
            (
                "RemoveCategoryFromProducts",
                assignment_ids(&delta.remove_categories).collect(),
            ),
            (
                "SetCategoryOnProducts",
                assignment_ids(&delta.set_categories).collect(),
            ),
            (
                "DeleteAccountPrices",
                delta
                    .delete_account_prices
                    .iter()
                    .filter(|p| !known_price(p))
                    .map(|p| p.product_id.as_str())
                    .collect(),
            ),
            (
                "AccountPrices",
                delta
                    .account_prices
                    .iter()
                    .filter(|p| !known_price(p))
                    .map(|p| p.product_id.as_str())
                    .collect(),
            ),
        ];
        for (part, ids) in parts {
            let mut unknown: Vec<&str> = Vec::new();
            for id in ids {
                if !known(id) && !unknown.contains(&id) {
                    unknown.push(id);
                }
            }
            if !unknown.is_empty() {
                return Err(DeltaError::UnknownProducts {
                    part,
                    ids: list(&unknown),
                });
            }
        }
    }
    let failed =
        |e: vitrine_engine::catalogue::CatalogueError| DeltaError::Catalogue(e.to_string());

    let mut applied = Applied::default();
    for id in &delta.delete_products {
        if edit.remove_product(id) {
            applied.deleted += 1;
        }
    }
    for product in &delta.products {
        edit.upsert_product(product.clone()).map_err(failed)?;
        applied.upserted += 1;
    }
    // Category changes: each product is loaded once, changed by every assignment that
    // names it (removals first), and stored once.
    let mut changed: Vec<Product> = Vec::new();
    let mut slots: HashMap<&str, usize> = HashMap::new();
    let assignments = delta
        .remove_categories
        .iter()
        .map(|a| (a, false))
        .chain(delta.set_categories.iter().map(|a| (a, true)));
    for (assignment, set) in assignments {
        for id in &assignment.products {
            let slot = match slots.get(id.as_str()) {
                Some(&slot) => slot,
                None => {
                    let Some(product) = edit.product(id).map_err(failed)? else {
                        continue;
                    };
                    changed.push(product);
                    slots.insert(id, changed.len() - 1);
                    changed.len() - 1
                }
            };
            let Some(product) = changed.get_mut(slot) else {
                continue;
            };
            if set {
                if !product.categories.contains(&assignment.category) {
                    product.categories.push(assignment.category.clone());
                }
            } else {
                product.categories.retain(|c| *c != assignment.category);
            }
        }
    }
    for product in changed {
        edit.upsert_product(product).map_err(failed)?;
    }
    for price in &delta.delete_account_prices {
        if let Some(id) = product_of(edit, price) {
            edit.remove_account_prices(&price.account_id, &id);
        }
    }
    for price in &delta.account_prices {
        if let Some(id) = product_of(edit, price) {
            edit.set_account_prices(&price.account_id, &id, &price.prices)
                .map_err(failed)?;
        }
    }
    applied.users = delta.users.len();
    Ok(applied)
}

/// The id of the product an account price names: by `Id`; by `Sku`, the product with
/// that id if there is one (stores whose SKU is their id), else the product with that
/// SKU.
fn product_of(edit: &CatalogueEdit, price: &AccountPrice) -> Option<String> {
    if edit.contains_product(&price.product_id) {
        return Some(price.product_id.clone());
    }
    if !price.by_sku {
        return None;
    }
    let catalogue = edit.view();
    let idx = catalogue.idx_of_sku(&price.product_id)?;
    catalogue.product(idx).map(|p| p.id.to_string())
}

fn assignment_ids(assignments: &[CategoryAssignment]) -> impl Iterator<Item = &str> {
    assignments
        .iter()
        .flat_map(|a| a.products.iter().map(String::as_str))
}

/// Lists ids for a message: the first 20, then a count of the rest.
fn list(ids: &[&str]) -> String {
    const SHOWN: usize = 20;
    let mut text = ids
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        text.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use vitrine_engine::catalogue::Product;
    use vitrine_testkit as testkit;

    use super::*;
    use vitrine_fields::KeyMatch;

    /// Applies a delta to the account's catalogue and users, all or nothing, as the
    /// account's worker does for a batch of one.
    fn apply(account: &Account, delta: &Delta) -> Result<Applied, DeltaError> {
        let writer = account.writer();
        let mut edit = account.catalogue().edit();
        let applied = apply_to(&mut edit, delta, Mode::Strict)?;
        writer.swap_catalogue(edit.finish());
        apply_users(account, delta);
        Ok(applied)
    }

    fn account() -> Account {
        let products = ["a", "b"].map(|id| Product {
            title: id.to_owned(),
            link: "/".into(),
            image: "/i".into(),
            prices: testkit::priced(100, "GBP"),
            categories: testkit::names(&["c1"]),
            ..testkit::product(id)
        });
        testkit::account(Vec::new(), testkit::catalogue(products))
    }

    fn delta(body: Value) -> Result<Delta, Errors> {
        let mut errors = Errors::default();
        let fields = Fields::of(&body, "", KeyMatch::Exact, &mut errors).unwrap();
        parse(&fields)
    }

    /// The .NET SDK names the product of an account price by `Sku`: a product with that
    /// id, else the product with that SKU; an unknown one fails the delta.
    #[test]
    fn account_prices_by_sku_name_the_product_by_id_or_sku() {
        let account = account();
        let priced = |id: &str| {
            let catalogue = account.catalogue();
            catalogue
                .account_prices("acc", id)
                .and_then(|set| set.price_in(testkit::currency("GBP")))
                .map(|m| m.minor)
        };
        let delta1 = delta(json!({
            "Products": [{"Id": "c", "Sku": "SKU-C", "Title": "c", "Link": "/", "Image": "/i",
                "Prices": ["2.00 GBP"], "Categories": []}],
            "AccountPrices": [
                {"AccountId": "acc", "Sku": "SKU-C", "Prices": ["1.50 GBP"]},
                {"AccountId": "acc", "Sku": "a", "Prices": ["0.75 GBP"]}
            ]
        }))
        .unwrap();
        apply(&account, &delta1).unwrap();
        assert_eq!(priced("c"), Some(150));
        assert_eq!(priced("a"), Some(75));
        let removal =
            delta(json!({"DeleteAccountPrices": [{"AccountId": "acc", "Sku": "SKU-C"}]})).unwrap();
        apply(&account, &removal).unwrap();
        assert_eq!(priced("c"), None);
        let unknown = delta(
            json!({"AccountPrices": [{"AccountId": "acc", "Sku": "NOPE", "Prices": ["1.00 GBP"]}]}),
        )
        .unwrap();
        let error = apply(&account, &unknown).unwrap_err().to_string();
        assert!(error.contains("NOPE"), "{error}");
    }

    #[test]
    fn applies_every_part_in_order() {
        let account = account();
        let delta = delta(json!({
            "DeleteProducts": ["a", "zzz"],
            "Products": [{"Id": "c", "Title": "c", "Link": "/", "Image": "/i",
                "Prices": ["2.00 GBP"], "Categories": []}],
            "RemoveCategoryFromProducts": [{"Category": "c1", "Products": ["b"]}],
            "SetCategoryOnProducts": [{"Category": "c2", "Products": ["b", "c"]}],
            "AccountPrices": [{"AccountId": "acc", "Id": "c", "Prices": ["1.50 GBP"]}],
            "Users": [{"UserId": "u1", "Email": "u1@example.com"}]
        }))
        .unwrap();
        let applied = apply(&account, &delta).unwrap();
        assert_eq!(
            applied,
            Applied {
                deleted: 1,
                upserted: 1,
                users: 1
            }
        );
        let catalogue = account.catalogue();
        assert!(catalogue.idx_of("a").is_none());
        assert_eq!(catalogue.in_category("c2").len(), 2);
        assert!(catalogue.in_category("c1").is_empty());
        assert!(catalogue.account_prices("acc", "c").is_some());
        assert!(account.user("u1").is_some());

        let removal = delta_of(json!({"DeleteAccountPrices": [{"AccountId": "acc", "Id": "c"}]}));
        apply(&account, &removal).unwrap();
        assert!(account.catalogue().account_prices("acc", "c").is_none());
    }

    fn delta_of(body: Value) -> Delta {
        delta(body).unwrap()
    }

    #[test]
    fn unknown_references_fail_the_whole_delta() {
        let account = account();
        let before = account.catalogue();
        let delta = delta_of(json!({
            "DeleteProducts": ["a"],
            "SetCategoryOnProducts": [{"Category": "c9", "Products": ["b", "x1", "x2"]}],
            "Users": [{"UserId": "u1"}]
        }));
        let error = apply(&account, &delta).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown product ids in SetCategoryOnProducts: x1, x2"
        );
        assert!(std::sync::Arc::ptr_eq(&before, &account.catalogue()));
        assert!(account.user("u1").is_none());
    }

    #[test]
    fn structural_errors_name_the_path() {
        let errors = delta(json!({
            "Products": [{"Id": "p", "Title": "t", "Link": "/", "Image": "/i",
                "Prices": ["1 GBP"], "Categories": [], "AccountInclusions": ["x"],
                "AccountExclusions": ["y"]}],
            "SetCategoryOnProducts": [{"Products": ["a"]}],
            "AccountPrices": [{"AccountId": "acc", "Id": "a", "Prices": "1 GBP"}]
        }))
        .unwrap_err()
        .joined();
        assert!(errors.contains("Products[0].AccountInclusions: AccountInclusions and AccountExclusions are mutually exclusive"), "{errors}");
        assert!(
            errors.contains("SetCategoryOnProducts[0].Category: required"),
            "{errors}"
        );
        assert!(
            errors.contains("AccountPrices[0].Prices: expected an array"),
            "{errors}"
        );
        assert!(
            delta(json!({}))
                .unwrap_err()
                .joined()
                .contains("at least one of Products")
        );
    }
}
