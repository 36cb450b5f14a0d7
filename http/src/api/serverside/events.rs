//! The `events` of `/api/serverside`: the contract's six events, and the shapes the
//! vendor's own store plugins send, read into engine [`Event`]s.
//!
//! Beyond the contract (each only where the contract's reading would refuse the input,
//! so every request the contract calls valid reads as before):
//! - `order_track` is an `order` whose lines are flattened (`id1`, `qty1`, `unitprice1`,
//!   … up to `productcount`); `moto_order_track` is the same order placed by staff for a
//!   customer ([`Event::CustomerOrder`]: it counts for the customer and the product
//!   models, not for the staff member's browsing).
//! - `data` may be `[]` (PHP's empty array) for an empty object; `set_basket`'s `data`
//!   may be the bare list of lines; a `page_view` without `page_type` is `other`, and
//!   the Magento page types map to the nearest contract type ([`plugin_page_type`]).
//! - ids may be whole JSON numbers (`"userid": 5`), numbers may be numeric strings
//!   (`"qty": "1.0000"`), `customer_details` takes `groupid` as well as `group_id`.

use std::borrow::Cow;

use vitrine_engine::CompactString;
use vitrine_engine::event::{
    BasketLine, BirthDate, Event, Identity, Order, PageType, PersonalDetails,
};
use vitrine_fields::{
    Errors, Fields, JsonValue, KeyMatch, Presence, check_id, index_path, looks_like_email,
    parse_dob,
};

/// Longest free-text personal field (names, titles, postcodes) accepted.
pub const MAX_TEXT_LEN: usize = 256;

/// Event names: the contract's six, then the two order events of the vendor's plugins.
pub const EVENT_NAMES: [&str; 8] = [
    "page_view",
    "product_view",
    "product_rate",
    "set_basket",
    "order",
    "customer_details",
    "order_track",
    "moto_order_track",
];

/// Most lines read from a flattened `order_track` (`id1` … `idN`).
pub const MAX_FLAT_LINES: usize = 500;

/// The page type of a Magento page-type name the contract does not have: a product
/// listing is a category listing; content and account pages are `other`.
pub fn plugin_page_type(name: &str) -> Option<PageType> {
    match name {
        "product_listing_page" => Some(PageType::CategoryListingPage),
        "content_page" | "my_account" => Some(PageType::Other),
        _ => None,
    }
}

/// Reads one element of `events`.
/// `data_path` is a buffer for the path of its `data` (its content is replaced).
pub(super) fn event<V: JsonValue>(
    value: &V,
    path: &str,
    data_path: &mut String,
    errors: &mut Errors,
) -> Option<Event> {
    let fields = Fields::of(value, path, KeyMatch::Exact, errors)?;
    let name = fields.req_str("name", errors)?;
    if !EVENT_NAMES.contains(&name) {
        errors.push(
            fields.path_of("name"),
            format!(
                "unknown event {name:?}; expected one of {}",
                EVENT_NAMES.join(", ")
            ),
        );
        return None;
    }
    data_path.clear();
    data_path.push_str(path);
    data_path.push_str(".data");
    let data_path = &*data_path;
    let raw = fields.get("data");
    let list = raw.and_then(V::as_list);
    // PHP encodes an empty associative array as `[]`: read as `{}`.
    let empty = V::empty_object();
    let data = match (raw, list) {
        // `set_basket` with the bare list of lines, as the Magento module sends it.
        (_, Some(items)) if name == "set_basket" => {
            let before = errors.total();
            let items = lines(items, data_path, errors);
            return (errors.total() == before).then_some(Event::SetBasket { items });
        }
        (_, Some([])) => Some(Fields::of(&empty, data_path, KeyMatch::Exact, errors)?),
        (Some(data), _) => Some(Fields::of(data, data_path, KeyMatch::Exact, errors)?),
        (None, _) => None,
    };
    let Some(data) = data else {
        if name == "set_basket" {
            return Some(Event::SetBasket { items: Vec::new() });
        }
        errors.push(data_path, format!("required for {name}"));
        return None;
    };
    let before = errors.total();
    let event = match name {
        "page_view" => {
            let given = if list.is_some_and(<[V]>::is_empty) {
                PageData::EmptyList
            } else {
                PageData::Fields
            };
            page_view(&data, given, errors)
        }
        "product_view" => Event::ProductView {
            id: compact_id_field(&data, "id", Presence::Required, errors).unwrap_or_default(),
        },
        "product_rate" => Event::ProductRate {
            id: compact_id_field(&data, "id", Presence::Required, errors).unwrap_or_default(),
            rating: data
                .req_number_or_text("rating", errors)
                .unwrap_or_default(),
        },
        "set_basket" => Event::SetBasket {
            items: match data.opt_array("items", errors) {
                Some(items) => lines(items, &data.path_of("items"), errors),
                None => Vec::new(),
            },
        },
        "order" => {
            let items = data.req_array("items", errors).map(|items| {
                if items.is_empty() {
                    errors.push(data.path_of("items"), "an order needs at least one line");
                }
                lines(items, &data.path_of("items"), errors)
            });
            Event::Order(Box::new(order(&data, items, errors)))
        }
        "order_track" | "moto_order_track" => {
            let items = flat_lines(&data, errors);
            let order = order(&data, Some(items), errors);
            if name == "moto_order_track" {
                Event::CustomerOrder(Box::new(order))
            } else {
                Event::Order(Box::new(order))
            }
        }
        _ => {
            // `group_id` as the contract names it; `groupid` as the plugins send it.
            let group_key = if data.has("group_id") {
                "group_id"
            } else {
                "groupid"
            };
            Event::CustomerDetails {
                identity: Box::new(identity(&data, group_key, errors)),
                details: Box::new(details(&data, errors)),
            }
        }
    };
    (errors.total() == before).then_some(event)
}

/// The page type a `page_view` names: the contract's, or a plugin's ([`plugin_page_type`]).
pub(super) fn page_type_named(name: &str) -> Option<PageType> {
    PageType::from_name(name).or_else(|| plugin_page_type(name))
}

/// What a `page_view`'s `data` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageData {
    /// The plugin's `data: []`, which names no page.
    EmptyList,
    /// An object of fields.
    Fields,
}

/// A `page_view`. `page_type` is required, except in the plugin's `data: []`, which
/// names no page: that is `other`.
fn page_view<V: JsonValue>(
    data: &Fields<'_, '_, V>,
    given: PageData,
    errors: &mut Errors,
) -> Event {
    let page_type = if given == PageData::EmptyList {
        Some(PageType::Other)
    } else {
        data.req_str("page_type", errors).and_then(|p| {
            let page_type = page_type_named(p);
            if page_type.is_none() {
                let all: Vec<&str> = PageType::ALL.iter().map(|t| t.name()).collect();
                errors.push(
                    data.path_of("page_type"),
                    format!(
                        "unknown page type {p:?}; expected one of {}",
                        all.join(", ")
                    ),
                );
            }
            page_type
        })
    };
    Event::PageView {
        page_type: page_type.unwrap_or(PageType::Other),
        product_id: compact_id_field(data, "product_id", Presence::Optional, errors),
        category_id: compact_id_field(data, "category_id", Presence::Optional, errors),
        brand_id: compact_id_field(data, "brand_id", Presence::Optional, errors),
    }
}

/// The order fields shared by `order` and the plugins' `order_track`.
fn order<V: JsonValue>(
    data: &Fields<'_, '_, V>,
    items: Option<Vec<BasketLine>>,
    errors: &mut Errors,
) -> Order {
    let order_id = id_field(data, "orderid", Presence::Required, errors);
    let total = data.opt_number_or_text("ordertotal", errors);
    if total.is_some_and(|t| t < 0.0) {
        errors.push(data.path_of("ordertotal"), "must not be negative");
    }
    let identity = identity(data, "groupid", errors);
    let mut details = details(data, errors);
    let zipcode = text_field(data, "zipcode", errors);
    let postcode = text_field(data, "postcode", errors);
    details.zipcode = zipcode.or(postcode);
    Order {
        order_id: order_id.unwrap_or_default(),
        items: items.unwrap_or_default(),
        total,
        identity,
        details,
    }
}

/// The lines of an `order_track`: `id1`, `qty1`, `unitprice1` (`refid1`, `children1`
/// ignored) … for `productcount` lines, or while `idN` is present when the count is
/// absent. At least one line.
fn flat_lines<V: JsonValue>(data: &Fields<'_, '_, V>, errors: &mut Errors) -> Vec<BasketLine> {
    let count = data.opt_number_or_text("productcount", errors);
    let count = match count {
        Some(n) if n.fract() != 0.0 || !(0.0..=MAX_FLAT_LINES as f64).contains(&n) => {
            errors.push(
                data.path_of("productcount"),
                format!("expected a whole number from 0 to {MAX_FLAT_LINES}, got {n}"),
            );
            return Vec::new();
        }
        Some(n) => Some(n as usize),
        None => None,
    };
    let mut out = Vec::new();
    for n in 1..=count.unwrap_or(MAX_FLAT_LINES) {
        let id_key = format!("id{n}");
        if count.is_none() && !data.has(&id_key) {
            break;
        }
        let line = line(
            data,
            &id_key,
            &format!("qty{n}"),
            &format!("unitprice{n}"),
            errors,
        );
        out.extend(line);
    }
    if out.is_empty() && !data.has("id1") {
        errors.push(data.path_of("id1"), "an order needs at least one line");
    }
    out
}

/// A list of basket or order lines `{"id", "qty", "unitprice"}` (a `children` member,
/// as the plugins send, is ignored).
fn lines<V: JsonValue>(items: &[V], path: &str, errors: &mut Errors) -> Vec<BasketLine> {
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = index_path(path, i);
        let Some(fields) = Fields::of(item, &item_path, KeyMatch::Exact, errors) else {
            continue;
        };
        out.extend(line(&fields, "id", "qty", "unitprice", errors));
    }
    out
}

/// One line: a product id, a quantity above 0, a unit price not below 0.
fn line<V: JsonValue>(
    fields: &Fields<'_, '_, V>,
    id_key: &str,
    qty_key: &str,
    price_key: &str,
    errors: &mut Errors,
) -> Option<BasketLine> {
    let id = id_field(fields, id_key, Presence::Required, errors);
    let qty = fields.req_number_or_text(qty_key, errors);
    if let Some(q) = qty
        && q <= 0.0
    {
        errors.push(
            fields.path_of(qty_key),
            format!("must be greater than 0, got {q}"),
        );
    }
    let unit_price = fields.req_number_or_text(price_key, errors);
    if let Some(p) = unit_price
        && p < 0.0
    {
        errors.push(
            fields.path_of(price_key),
            format!("must not be negative, got {p}"),
        );
    }
    match (id, qty, unit_price) {
        (Some(id), Some(qty), Some(unit_price)) => basket_line(id, qty, unit_price),
        _ => None,
    }
}

/// A line of a product id, a quantity above 0 and a unit price not below 0.
pub(super) fn basket_line(id: String, qty: f64, unit_price: f64) -> Option<BasketLine> {
    (qty > 0.0 && unit_price >= 0.0).then_some(BasketLine {
        id,
        qty,
        unit_price,
    })
}

/// An id field: a string, or a whole number read as its decimal text; checked with
/// [`check_id`]. An optional one that is empty counts as absent.
fn id_field<V: JsonValue>(
    data: &Fields<'_, '_, V>,
    key: &str,
    presence: Presence,
    errors: &mut Errors,
) -> Option<String> {
    checked_id(data, key, presence, errors).map(Cow::into_owned)
}

/// [`id_field`] as a [`CompactString`]: ids of up to 24 bytes (most store ids) are kept
/// inline, without a heap allocation.
fn compact_id_field<V: JsonValue>(
    data: &Fields<'_, '_, V>,
    key: &str,
    presence: Presence,
    errors: &mut Errors,
) -> Option<CompactString> {
    checked_id(data, key, presence, errors).map(|id| CompactString::from(id.as_ref()))
}

/// The text of an id field, borrowed from the body where it can be, once checked.
fn checked_id<'v, V: JsonValue>(
    data: &Fields<'v, '_, V>,
    key: &str,
    presence: Presence,
    errors: &mut Errors,
) -> Option<Cow<'v, str>> {
    let id = match presence {
        Presence::Required => data.req_id_text(key, errors)?,
        Presence::Optional => data.opt_id_text(key, errors).filter(|id| !id.is_empty())?,
    };
    match check_id(&id) {
        Ok(()) => Some(id),
        Err(message) => {
            errors.push(data.path_of(key), message);
            None
        }
    }
}

/// An optional free-text field of at most [`MAX_TEXT_LEN`] bytes without control
/// characters; empty counts as absent.
pub(super) fn text_field<V: JsonValue>(
    data: &Fields<'_, '_, V>,
    key: &str,
    errors: &mut Errors,
) -> Option<String> {
    let text = data.opt_nonempty_str(key, errors)?;
    if !text_fits(text) {
        errors.push(
            data.path_of(key),
            format!("must be at most {MAX_TEXT_LEN} bytes without control characters"),
        );
        return None;
    }
    Some(text.to_owned())
}

/// Whether a free-text field is at most [`MAX_TEXT_LEN`] bytes without control
/// characters.
pub(super) fn text_fits(text: &str) -> bool {
    text.len() <= MAX_TEXT_LEN && !text.chars().any(char::is_control)
}

/// userid / email / accid (+ the group field, named differently per event); one of the
/// first three is required.
fn identity<V: JsonValue>(
    data: &Fields<'_, '_, V>,
    group_key: &str,
    errors: &mut Errors,
) -> Identity {
    let user_id = id_field(data, "userid", Presence::Optional, errors);
    let account_id = id_field(data, "accid", Presence::Optional, errors);
    let email = data.opt_nonempty_str("email", errors).and_then(|email| {
        if looks_like_email(email) {
            Some(email.to_owned())
        } else {
            errors.push(
                data.path_of("email"),
                format!("{email:?} is not an email address"),
            );
            None
        }
    });
    let given = ["userid", "email", "accid"]
        .iter()
        .any(|k| data.get(k).is_some_and(|v| v.as_text() != Some("")));
    if !given {
        errors.push(
            data.path_of("userid"),
            "one of userid, email or accid is required",
        );
    }
    Identity {
        user_id,
        email,
        account_id,
        group_id: id_field(data, group_key, Presence::Optional, errors),
    }
}

fn details<V: JsonValue>(data: &Fields<'_, '_, V>, errors: &mut Errors) -> PersonalDetails {
    let dob = data.opt_nonempty_str("dob", errors).and_then(|text| {
        let date = parse_dob(text);
        if date.is_none() {
            errors.push(
                data.path_of("dob"),
                format!("expected a date as YYYY-MM-DD, got {text:?}"),
            );
        }
        date.map(BirthDate::of)
    });
    PersonalDetails {
        title: text_field(data, "title", errors),
        first_name: text_field(data, "firstname", errors),
        last_name: text_field(data, "lastname", errors),
        zipcode: None,
        dob,
    }
}
