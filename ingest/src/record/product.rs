//! Product records: the fields of a feed entry or a delta's `Products` element, their
//! prices per currency and customer group, description, stock and dates.

use std::borrow::Cow;

use vitrine_engine::catalogue::{GroupPrice, PriceSet, Product, UnixMillis, Visibility};
use vitrine_engine::money::Money;

use vitrine_fields::{
    Errors, Fields, JsonValue, KeyMatch, Presence, any_string, check_id, index_path, parse_instant,
};

use super::ids::{optional_id, required_id};

/// Reads a product record (feed entry or delta `Products` element).
///
/// `Id` may be absent when `Sku` is present: the SKU is then the id, as the vendor's
/// own example feeds rely on.
pub fn product<V: JsonValue>(value: &V, path: &str, errors: &mut Errors) -> Option<Product> {
    let before = errors.total();
    let fields = Fields::of(value, path, KeyMatch::FirstLetterEitherCase, errors)?;
    let sku = optional_id(&fields, "Sku", errors);
    let sku_given = fields
        .get("Sku")
        .and_then(JsonValue::as_text)
        .is_some_and(|s| !s.is_empty());
    let id = if fields.has("Id") || !sku_given {
        required_id(&fields, "Id", errors)
    } else {
        sku.clone()
    };
    let title = fields.req_nonempty_str("Title", errors);
    let link = fields.req_str("Link", errors);
    let image = fields.req_str("Image", errors);
    let prices = fields
        .req_array("Prices", errors)
        .and_then(|items| price_list(items, &fields.path_of("Prices"), Presence::Required, errors));
    let sale_prices = sale_prices(&fields, errors);
    if let Some(prices) = &prices {
        check_sales_have_prices(prices, &sale_prices, &fields.path_of("SalePrices"), errors);
    }
    let categories = fields.req_string_array("Categories", errors, check_id);
    let group_prices = group_prices(&fields, errors);
    let inclusions = fields.opt_string_array("AccountInclusions", errors, check_id);
    let exclusions = fields.opt_string_array("AccountExclusions", errors, check_id);
    let visibility = match (inclusions, exclusions) {
        (Some(_), Some(_)) => {
            errors.push(
                fields.path_of("AccountInclusions"),
                "AccountInclusions and AccountExclusions are mutually exclusive",
            );
            Visibility::Everyone
        }
        (Some(ids), None) if !ids.is_empty() => Visibility::OnlyAccounts(ids),
        (None, Some(ids)) if !ids.is_empty() => Visibility::ExceptAccounts(ids),
        _ => Visibility::Everyone,
    };
    let brand = optional_id(&fields, "Brand", errors);
    let product = Product {
        id: id.unwrap_or_default().into_owned(),
        sku: sku.map(Cow::into_owned),
        title: title.unwrap_or_default().to_owned(),
        description: description(&fields, errors),
        link: link.unwrap_or_default().to_owned(),
        image: image.unwrap_or_default().to_owned(),
        image_overlay: fields
            .opt_nonempty_str("ImageOverlay", errors)
            .map(str::to_owned),
        all_images: fields
            .opt_string_array("AllImages", errors, any_string)
            .unwrap_or_default(),
        prices: PriceSet {
            prices: prices.unwrap_or_default(),
            sale_prices,
        },
        group_prices,
        categories: categories.unwrap_or_default(),
        brand: brand.map(Cow::into_owned),
        search_tags: fields
            .opt_string_array("SearchTags", errors, any_string)
            .unwrap_or_default(),
        associated_skus: fields
            .opt_string_array("AssociatedSkus", errors, check_id)
            .unwrap_or_default(),
        // Ids as strings, or as whole numbers (the WooCommerce plugin's `[1041, 1042]`).
        associated_ids: fields
            .opt_id_array("AssociatedIds", errors, check_id)
            .unwrap_or_default(),
        related_products: fields
            .opt_string_array("RelatedProducts", errors, check_id)
            .unwrap_or_default(),
        visibility,
        // A product out of stock (`InStock`, as the vendor's Magento module sends it)
        // cannot be bought: it is kept, and left out of recommendations.
        exclude_from_recommenders: fields
            .opt_bool("ExcludeFromRecommenders", errors)
            .unwrap_or(false)
            || in_stock(&fields, errors) == Some(false),
        on_offer: fields.opt_bool("OnOffer", errors).unwrap_or(false),
        new_arrival: fields.opt_bool("NewArrival", errors).unwrap_or(false),
        available_from: instant(&fields, "StartDate", errors),
        available_until: instant(&fields, "EndDate", errors),
        sale_from: instant(&fields, "SalePriceStartDate", errors),
        sale_until: instant(&fields, "SalePriceEndDate", errors),
    };
    if let (Some(from), Some(until)) = (product.available_from, product.available_until)
        && until < from
    {
        errors.push(fields.path_of("EndDate"), "is before StartDate");
    }
    if let (Some(from), Some(until)) = (product.sale_from, product.sale_until)
        && until < from
    {
        errors.push(
            fields.path_of("SalePriceEndDate"),
            "is before SalePriceStartDate",
        );
    }
    (errors.total() == before).then_some(product)
}

pub(super) fn price_list<V: JsonValue>(
    items: &[V],
    path: &str,
    presence: Presence,
    errors: &mut Errors,
) -> Option<Vec<Money>> {
    let before = errors.total();
    if presence == Presence::Required && items.is_empty() {
        errors.push(path, "must hold at least one price");
        return None;
    }
    let mut prices: Vec<Money> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = index_path(path, i);
        match item.as_text() {
            // Several prices in one currency (a product with variants): equal ones are
            // one price, and of different ones the lowest is kept, the "from" price.
            Some(text) => match Money::parse(text) {
                Ok(money) => match prices.iter_mut().find(|p| p.currency == money.currency) {
                    Some(kept) if money.minor < kept.minor => *kept = money,
                    Some(_) => {}
                    None => prices.push(money),
                },
                Err(e) => errors.push(item_path, e.to_string()),
            },
            None => errors.push(item_path, format!("expected a string, got {}", item.kind())),
        }
    }
    (errors.total() == before).then_some(prices)
}

/// A price set's optional `SalePrices` (none: an empty list).
pub(super) fn sale_prices<V: JsonValue>(
    fields: &Fields<'_, '_, V>,
    errors: &mut Errors,
) -> Vec<Money> {
    fields
        .opt_array("SalePrices", errors)
        .and_then(|items| {
            price_list(
                items,
                &fields.path_of("SalePrices"),
                Presence::Optional,
                errors,
            )
        })
        .unwrap_or_default()
}

pub(super) fn check_sales_have_prices(
    prices: &[Money],
    sales: &[Money],
    path: &str,
    errors: &mut Errors,
) {
    for (i, sale) in sales.iter().enumerate() {
        if !prices.iter().any(|p| p.currency == sale.currency) {
            errors.push(
                index_path(path, i),
                format!(
                    "sale price in {} without a regular price in {}",
                    sale.currency, sale.currency
                ),
            );
        }
    }
}

/// `GroupPrices: {"group1": {"Prices": [...], "SalePrices": [...]}}`, or a list whose
/// index is the group id.
fn group_prices<V: JsonValue>(fields: &Fields<'_, '_, V>, errors: &mut Errors) -> Vec<GroupPrice> {
    let Some(value) = fields.get("GroupPrices") else {
        return Vec::new();
    };
    let path = fields.path_of("GroupPrices");
    // The vendor's Magento module sends a list whose index is the group id (`[]` for
    // none); entries that are `[]` or `null` give that group no price.
    let groups: Vec<(Cow<'_, str>, &V)> = if let Some(list) = value.as_list() {
        list.iter()
            .enumerate()
            .filter(|(_, set)| !set.is_null() && !set.as_list().is_some_and(<[V]>::is_empty))
            .map(|(i, set)| (Cow::Owned(i.to_string()), set))
            .collect()
    } else if value.is_object() {
        value
            .members()
            .into_iter()
            .map(|(group, set)| (Cow::Borrowed(group), set))
            .collect()
    } else {
        errors.push(
            path,
            format!("expected an object of group ids, got {}", value.kind()),
        );
        return Vec::new();
    };
    let mut out = Vec::with_capacity(groups.len());
    for (group, set) in groups {
        let group = group.as_ref();
        let group_path = if value.is_object() {
            format!("{path}.{group}")
        } else {
            format!("{path}[{group}]")
        };
        if let Err(message) = check_id(group) {
            errors.push(group_path.clone(), format!("group id {message}"));
            continue;
        }
        let Some(set_fields) =
            Fields::of(set, &group_path, KeyMatch::FirstLetterEitherCase, errors)
        else {
            continue;
        };
        let prices = set_fields.req_array("Prices", errors).and_then(|items| {
            price_list(
                items,
                &set_fields.path_of("Prices"),
                Presence::Required,
                errors,
            )
        });
        let sales = sale_prices(&set_fields, errors);
        if let Some(prices) = prices {
            check_sales_have_prices(&prices, &sales, &set_fields.path_of("SalePrices"), errors);
            out.push(GroupPrice {
                group: group.to_owned(),
                prices: PriceSet {
                    prices,
                    sale_prices: sales,
                },
            });
        }
    }
    out
}

/// `Description`: a string, or as the vendor's Magento module sends it, the list
/// `[description, short_description]`: the first non-empty entry, its HTML tags removed
/// (the contract's description is plain text; Magento's long description is HTML).
fn description<V: JsonValue>(fields: &Fields<'_, '_, V>, errors: &mut Errors) -> String {
    let Some(value) = fields.get("Description") else {
        return String::new();
    };
    if let Some(list) = value.as_list() {
        let mut texts = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            match item.as_text() {
                Some(text) => texts.push(text),
                None => errors.push(
                    index_path(&fields.path_of("Description"), i),
                    format!("expected a string, got {}", item.kind()),
                ),
            }
        }
        let first = texts.into_iter().find(|t| !t.trim().is_empty());
        return first.map(strip_tags).unwrap_or_default();
    }
    fields
        .opt_str("Description", errors)
        .unwrap_or_default()
        .to_owned()
}

/// Text with every `<…>` tag removed and runs of white space folded.
fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `InStock`: a boolean, or `"true"`/`"false"` as the vendor's Magento module sends it.
fn in_stock<V: JsonValue>(fields: &Fields<'_, '_, V>, errors: &mut Errors) -> Option<bool> {
    let value = fields.get("InStock")?;
    match value.as_text() {
        Some("true" | "1") => Some(true),
        Some("false" | "0") => Some(false),
        Some(other) => {
            errors.push(
                fields.path_of("InStock"),
                format!("expected true or false, got {other:?}"),
            );
            None
        }
        None => fields.opt_bool("InStock", errors),
    }
}

/// `StartDate` / `EndDate` (and the sale window's dates): RFC 3339 (`2016-12-25T09:00:00Z`), a date-time without offset
/// (taken as UTC), or a bare `YYYY-MM-DD` (midnight UTC).
fn instant<V: JsonValue>(
    fields: &Fields<'_, '_, V>,
    key: &str,
    errors: &mut Errors,
) -> Option<UnixMillis> {
    let text = fields.opt_nonempty_str(key, errors)?;
    match parse_instant(text) {
        Some(at) => Some(at),
        None => {
            errors.push(
                fields.path_of(key),
                format!("expected a date such as 2016-12-25T09:00:00Z or 2016-12-25, got {text:?}"),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn valid() -> Value {
        json!({
            "Id": "1", "Title": "Bed set", "Link": "/p/1", "Image": "//img/1.jpg",
            "Prices": ["3.49 GBP", "4.99 USD"], "SalePrices": ["2.49 GBP"],
            "Categories": ["4822"], "newArrival": true,
            "StartDate": "2016-12-25T09:00:00Z",
            "GroupPrices": {"group1": {"Prices": ["10.99 GBP"], "SalePrices": ["9.99 GBP"]}}
        })
    }

    #[test]
    fn reads_a_valid_product() {
        let mut errors = Errors::default();
        let product = product(&valid(), "Products[0]", &mut errors).unwrap();
        assert!(errors.is_empty());
        assert_eq!(product.id, "1");
        assert!(product.new_arrival);
        assert_eq!(product.prices.prices.len(), 2);
        assert_eq!(product.group_prices.len(), 1);
        assert_eq!(product.available_from, Some(1_482_656_400_000));
    }

    #[test]
    fn sku_stands_in_for_a_missing_id() {
        let mut record = valid();
        record.as_object_mut().unwrap().remove("Id");
        record["Sku"] = json!("P31175");
        let mut errors = Errors::default();
        assert_eq!(product(&record, "p", &mut errors).unwrap().id, "P31175");
    }

    #[test]
    fn reports_every_broken_field() {
        let record = json!({
            "Title": "", "Link": 3, "Prices": [], "Categories": "",
            "AccountInclusions": ["a"], "AccountExclusions": ["b"],
            "SalePrices": ["1.00 EUR"], "OnOffer": "yes", "EndDate": "tomorrow"
        });
        let mut errors = Errors::default();
        assert!(product(&record, "Products[2]", &mut errors).is_none());
        let all = errors.joined();
        for expected in [
            "Products[2].Id: required",
            "Products[2].Title: must not be empty",
            "Products[2].Link: expected a string, got a number",
            "Products[2].Image: required",
            "Products[2].Prices: must hold at least one price",
            "Products[2].Categories: expected an array, got an empty string",
            "Products[2].AccountInclusions: AccountInclusions and AccountExclusions are mutually exclusive",
            "Products[2].OnOffer: expected a boolean",
            "Products[2].EndDate: expected a date",
        ] {
            assert!(all.contains(expected), "missing {expected:?} in {all}");
        }
    }

    #[test]
    fn refuses_bad_prices() {
        let mut record = valid();
        record["Prices"] = json!(["3.49 GBP", "1.00 GBP", "abc"]);
        let mut errors = Errors::default();
        assert!(product(&record, "p", &mut errors).is_none());
        let all = errors.joined();
        assert!(!all.contains("p.Prices[1]"), "{all}");
        assert!(
            all.contains("p.Prices[2]: expected \"<amount> <ISO 4217 code>\""),
            "{all}"
        );
    }

    /// A product with variants: several prices in one currency. Equal ones collapse,
    /// different ones keep the lowest (the "from" price), in regular and sale prices.
    #[test]
    fn several_prices_in_one_currency_keep_the_lowest() {
        let mut record = valid();
        record["Prices"] = json!([
            "9.50 GBP",
            "9.50 GBP",
            "12.00 EUR",
            "11.00 EUR",
            "13.00 EUR"
        ]);
        record["SalePrices"] = json!(["8.00 GBP", "7.50 GBP"]);
        let mut errors = Errors::default();
        let read = product(&record, "p", &mut errors).unwrap();
        assert!(errors.is_empty(), "{}", errors.joined());
        let text = |prices: &[vitrine_engine::Money]| -> Vec<String> {
            prices
                .iter()
                .map(|m| format!("{} {}", m.decimal(), m.currency.code()))
                .collect()
        };
        assert_eq!(text(&read.prices.prices), ["9.50 GBP", "11.00 EUR"]);
        assert_eq!(text(&read.prices.sale_prices), ["7.50 GBP"]);
    }

    /// The WooCommerce plugin's associated products are numbers.
    #[test]
    fn associated_ids_may_be_whole_numbers() {
        let mut record = valid();
        record["AssociatedIds"] = json!([1041, "1042"]);
        let mut errors = Errors::default();
        let read = product(&record, "p", &mut errors).unwrap();
        assert_eq!(read.associated_ids, ["1041", "1042"]);
    }

    #[test]
    fn magento_product_rows_read_as_the_module_means_them() {
        let row = json!({
            "Id": 2001, "Sku": "MB-2001", "Title": "Bag", "Link": "//shop/bag.html",
            "Image": "//img", "Prices": ["45.00 GBP"], "SalePrices": [], "Categories": ["3"],
            "Description": ["", "Long <b>description</b>\n  here", "Short"],
            "Brand": 7, "InStock": "false", "Color": ["Black"], "MagentoProductType": "simple",
            "jsonconfig": "{}", "AssociatedTitles": ["x"],
            "GroupPrices": [{"Prices": ["45.00 GBP"], "SalePrices": []}, [],
                null, {"Prices": ["40.00 GBP"], "SalePrices": ["38.00 GBP"]}]
        });
        let mut errors = Errors::default();
        let product = product(&row, "Products[0]", &mut errors).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(product.id, "2001");
        assert_eq!(product.description, "Long description here");
        assert_eq!(product.brand.as_deref(), Some("7"));
        assert!(product.exclude_from_recommenders, "out of stock");
        let groups: Vec<&str> = product
            .group_prices
            .iter()
            .map(|g| g.group.as_str())
            .collect();
        assert_eq!(groups, ["0", "3"]);
        assert_eq!(product.group_prices[1].prices.sale_prices[0].minor, 3800);

        let in_stock = json!({"Id": "a", "Title": "t", "Link": "/", "Image": "/i",
            "Prices": ["1 GBP"], "Categories": [], "InStock": true, "GroupPrices": []});
        let product = super::product(&in_stock, "", &mut errors).unwrap();
        assert!(!product.exclude_from_recommenders && product.group_prices.is_empty());

        let wrong = json!({"Id": 1.5, "Title": "t", "Link": "/", "Image": "/i",
            "Prices": ["1 GBP"], "Categories": [], "InStock": "maybe",
            "Description": [3], "GroupPrices": [{"Prices": []}]});
        assert!(super::product(&wrong, "P", &mut errors).is_none());
        assert_eq!(
            errors.messages(),
            [
                "P.Id: expected a string, or a number written as digits only (no fraction, no exponent)",
                "P.GroupPrices[0].Prices: must hold at least one price",
                "P.Description[0]: expected a string, got a number",
                "P.InStock: expected true or false, got \"maybe\"",
            ]
        );
    }
}
