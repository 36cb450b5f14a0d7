//! Validation of the records that feeds and deltas carry: products, users, account
//! prices and category assignments. Each reader takes a JSON value and its path and
//! returns the engine type, or records every problem in [`Errors`].
//!
//! Field names match feed-style: the first letter in either case (`newArrival`).
//!
//! `product`: products (prices, group prices, descriptions, stock, dates); here: users,
//! account prices, category assignments, categories, brands and the id readers they
//! share.

mod ids;
mod product;

use std::collections::HashSet;

use vitrine_engine::account::UserRecord;
use vitrine_engine::catalogue::{Brand, Category, PriceSet};

use vitrine_fields::{
    Errors, Fields, JsonValue, KeyMatch, Presence, check_id, looks_like_email, parse_user_dob,
};

use ids::required_id;
pub use product::product;
use product::{check_sales_have_prices, price_list, sale_prices};

/// Reads a user record (delta `Users` element).
pub fn user<V: JsonValue>(value: &V, path: &str, errors: &mut Errors) -> Option<UserRecord> {
    let before = errors.total();
    let fields = Fields::of(value, path, KeyMatch::FirstLetterEitherCase, errors)?;
    let user_id = required_id(&fields, "UserId", errors);
    let email = fields.opt_nonempty_str("Email", errors);
    if let Some(email) = email
        && !looks_like_email(email)
    {
        errors.push(
            fields.path_of("Email"),
            format!("{email:?} is not an email address"),
        );
    }
    let dob = match fields.opt_nonempty_str("DOB", errors) {
        Some(text) => match parse_user_dob(text) {
            Some(date) => Some(date),
            None => {
                errors.push(
                    fields.path_of("DOB"),
                    format!("expected a date as YYYY-MM-DD (or DD/MM/YYYY), got {text:?}"),
                );
                None
            }
        },
        None => None,
    };
    let text =
        |key: &str, errors: &mut Errors| fields.opt_nonempty_str(key, errors).map(str::to_owned);
    let record = UserRecord {
        user_id: user_id.unwrap_or_default().into_owned(),
        email: email.map(str::to_owned),
        first_name: text("FirstName", errors),
        last_name: text("LastName", errors),
        title: text("Title", errors),
        dob,
        gender: text("Gender", errors),
        city: text("City", errors),
        state: text("State", errors),
        country: text("Country", errors),
        group_id: text("GroupId", errors),
    };
    (errors.total() == before).then_some(record)
}

/// An account price of a delta: prices of one B2B account for one product.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountPrice {
    /// `AccountId`.
    pub account_id: String,
    /// `Id`: the product; or, with `by_sku`, the `Sku` the .NET SDK names it by.
    pub product_id: String,
    /// Whether `product_id` is a `Sku`: read as a product's id when one has it, else as
    /// the `Sku` of a product (the delta resolves it when applied).
    pub by_sku: bool,
    /// `Prices` and `SalePrices`.
    pub prices: PriceSet,
}

/// Reads an `AccountPrice`. For `DeleteAccountPrices` only `AccountId` and `Id` matter,
/// so its prices' `presence` is [`Presence::Optional`] there.
pub fn account_price<V: JsonValue>(
    value: &V,
    path: &str,
    presence: Presence,
    errors: &mut Errors,
) -> Option<AccountPrice> {
    let before = errors.total();
    let fields = Fields::of(value, path, KeyMatch::FirstLetterEitherCase, errors)?;
    let account_id = required_id(&fields, "AccountId", errors);
    // The product by `Id`, or by `Sku` as the .NET SDK names it.
    let by_sku = fields.get("Id").is_none() && fields.get("Sku").is_some();
    let product_id = required_id(&fields, if by_sku { "Sku" } else { "Id" }, errors);
    let list = match presence {
        Presence::Required => fields.req_array("Prices", errors),
        Presence::Optional => fields.opt_array("Prices", errors),
    };
    let prices = list
        .and_then(|items| price_list(items, &fields.path_of("Prices"), presence, errors))
        .unwrap_or_default();
    let sales = sale_prices(&fields, errors);
    if presence == Presence::Required {
        check_sales_have_prices(&prices, &sales, &fields.path_of("SalePrices"), errors);
    }
    let record = AccountPrice {
        account_id: account_id.unwrap_or_default().into_owned(),
        product_id: product_id.unwrap_or_default().into_owned(),
        by_sku,
        prices: PriceSet {
            prices,
            sale_prices: sales,
        },
    };
    (errors.total() == before).then_some(record)
}

/// A category assignment of a delta: one category, several products.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryAssignment {
    /// `Category`.
    pub category: String,
    /// `Products`: product ids.
    pub products: Vec<String>,
}

/// Reads a `CategoryAssignment`.
pub fn category_assignment<V: JsonValue>(
    value: &V,
    path: &str,
    errors: &mut Errors,
) -> Option<CategoryAssignment> {
    let before = errors.total();
    let fields = Fields::of(value, path, KeyMatch::FirstLetterEitherCase, errors)?;
    let category = required_id(&fields, "Category", errors);
    let products = fields.req_string_array("Products", errors, check_id);
    let record = CategoryAssignment {
        category: category.unwrap_or_default().into_owned(),
        products: products.unwrap_or_default(),
    };
    (errors.total() == before).then_some(record)
}

/// Finds ids that occur more than once, for "ids unique" rules.
pub fn duplicate_ids<'a>(ids: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    let mut dups = Vec::new();
    for id in ids {
        if !seen.insert(id) && !dups.contains(&id) {
            dups.push(id);
        }
    }
    dups
}

/// The fields category and brand records share.
struct Named {
    id: String,
    display_name: String,
    image: String,
    link: String,
    description: String,
}

fn named<V: JsonValue>(fields: &Fields<'_, '_, V>, errors: &mut Errors) -> Named {
    let text =
        |key: &str, errors: &mut Errors| fields.opt_str(key, errors).unwrap_or_default().to_owned();
    Named {
        id: required_id(fields, "Id", errors)
            .unwrap_or_default()
            .into_owned(),
        display_name: fields
            .req_nonempty_str("DisplayName", errors)
            .unwrap_or_default()
            .to_owned(),
        image: text("Image", errors),
        link: text("Link", errors),
        description: text("Description", errors),
    }
}

/// Reads a category record: `Id, DisplayName, Image, Link, Description, ParentIds`.
pub fn category<V: JsonValue>(value: &V, path: &str, errors: &mut Errors) -> Option<Category> {
    let before = errors.total();
    let fields = Fields::of(value, path, KeyMatch::FirstLetterEitherCase, errors)?;
    let Named {
        id,
        display_name,
        image,
        link,
        description,
    } = named(&fields, errors);
    let parent_ids = fields
        .opt_string_array("ParentIds", errors, check_id)
        .unwrap_or_default();
    let record = Category {
        id,
        display_name,
        image,
        link,
        description,
        parent_ids,
    };
    (errors.total() == before).then_some(record)
}

/// Reads a brand record: `Id, DisplayName, Image, Link, Description`.
pub fn brand<V: JsonValue>(value: &V, path: &str, errors: &mut Errors) -> Option<Brand> {
    let before = errors.total();
    let fields = Fields::of(value, path, KeyMatch::FirstLetterEitherCase, errors)?;
    let Named {
        id,
        display_name,
        image,
        link,
        description,
    } = named(&fields, errors);
    let record = Brand {
        id,
        display_name,
        image,
        link,
        description,
    };
    (errors.total() == before).then_some(record)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_users_and_checks_dob() {
        let mut errors = Errors::default();
        let ok = json!({"UserId": "u1", "Email": "a@example.com", "DOB": "1996-01-17"});
        assert_eq!(user(&ok, "Users[0]", &mut errors).unwrap().user_id, "u1");
        let bad = json!({"Email": "nope", "DOB": "1996-13-45"});
        assert!(user(&bad, "Users[1]", &mut errors).is_none());
        let all = errors.joined();
        assert!(all.contains("Users[1].UserId: required"));
        assert!(all.contains("Users[1].Email: \"nope\" is not an email address"));
        assert!(all.contains("Users[1].DOB: expected a date as YYYY-MM-DD"));
    }

    #[test]
    fn finds_duplicates() {
        assert_eq!(
            duplicate_ids(["a", "b", "a", "a", "c", "b"]),
            vec!["a", "b"]
        );
    }
}
