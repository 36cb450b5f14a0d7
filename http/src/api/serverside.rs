//! `POST /api/serverside`: track events and fill zones in one call.
//!
//! The whole request is validated before anything is recorded; every problem is
//! reported with its JSON path in the `errors` of a 400. A valid request is handed to
//! [`vitrine_engine::Account::serve`] and its outcome written as the 200 body.

use std::net::IpAddr;

use serde_json::Value;
use vitrine_engine::account::{Notice, ServeRequest};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::event::{
    BasketLine, BirthDate, Event, Identity, Order, PageType, PersonalDetails,
};
use vitrine_engine::money::Currency;
use vitrine_fields::{Errors, Fields, KeyMatch, check_id, index_path, kind_of};
use vitrine_fields::{looks_like_email, parse_dob};

use crate::api::{Reply, render};
use crate::auth;
use crate::config::Limits;
use crate::error::{ApiError, Endpoint};
use crate::state::AppState;

/// Longest visitor or session id accepted.
pub const MAX_CLIENT_ID_LEN: usize = 128;
/// Longest URL (currentUrl, referer) accepted.
pub const MAX_URL_LEN: usize = 8192;
/// Longest user agent accepted.
pub const MAX_USER_AGENT_LEN: usize = 4096;
/// Longest free-text personal field (names, titles, postcodes) accepted.
pub const MAX_TEXT_LEN: usize = 256;

/// Event names of the contract.
pub const EVENT_NAMES: [&str; 6] = [
    "page_view",
    "product_view",
    "product_rate",
    "set_basket",
    "order",
    "customer_details",
];

/// Handles one request body.
pub fn handle(state: &AppState, body: &Value, now: UnixMillis) -> Result<Reply, ApiError> {
    let mut errors = Errors::default();
    let Some(fields) = Fields::of(body, "", KeyMatch::Exact, &mut errors) else {
        return Err(errors.into());
    };
    let presented = auth::read(&fields, Endpoint::Serverside, &mut errors);
    let entry = match presented {
        Some(presented) => Some(auth::authenticate(state, Endpoint::Serverside, presented)?),
        None => None,
    };
    let request = parse(&fields, &state.config.limits, now, &mut errors);
    let (Some(entry), Some(request), true) = (entry, request, errors.is_empty()) else {
        return Err(errors.into());
    };
    let currency = request.currency.unwrap_or(entry.config.default_currency);
    // Erased identities stripped, events applied, zones filled, then the events logged
    // as `durability.events_fsync` says, all in ingest's one call.
    let outcome = entry
        .jobs
        .serve(request)
        .map_err(|e| ApiError::from(e).context("the events could not be logged"))?;
    let errors = outcome.notices.iter().map(notice_message).collect();
    Ok(Reply::json(render::response(
        &outcome, errors, currency, entry,
    )))
}

/// Validates everything but the credentials.
pub fn parse(
    fields: &Fields<'_, '_>,
    limits: &Limits,
    now: UnixMillis,
    errors: &mut Errors,
) -> Option<ServeRequest> {
    let before = errors.total();
    if let Some(url) = fields.req_str("currentUrl", errors) {
        check_url(url, "currentUrl", errors);
    }
    if let Some(agent) = fields.req_str("userAgent", errors)
        && agent.len() > MAX_USER_AGENT_LEN
    {
        errors.push(
            "userAgent",
            format!("must be at most {MAX_USER_AGENT_LEN} bytes"),
        );
    }
    if let Some(ip) = fields.req_str("ip", errors)
        && ip.parse::<IpAddr>().is_err()
    {
        errors.push(
            "ip",
            format!("expected an IPv4 or IPv6 address, got {ip:?}"),
        );
    }
    if let Some(referer) = fields.opt_nonempty_str("referer", errors) {
        check_url(referer, "referer", errors);
    }
    let visitor_id = client_id(fields, "visitorId", errors);
    let session_id = client_id(fields, "sessionId", errors);
    let currency = match fields.opt_str("currency", errors) {
        Some(code) => match Currency::from_code(code) {
            Ok(currency) => Some(currency),
            Err(e) => {
                errors.push("currency", e.to_string());
                None
            }
        },
        None => None,
    };
    let mut events = Vec::new();
    if let Some(items) = fields.opt_array("events", errors) {
        if items.len() > limits.max_events {
            errors.push(
                "events",
                format!(
                    "at most {} events per request, got {}",
                    limits.max_events,
                    items.len()
                ),
            );
        } else {
            for (i, item) in items.iter().enumerate() {
                if let Some(event) = event(item, &index_path("events", i), errors) {
                    events.push(event);
                }
            }
        }
    }
    let mut zones = Vec::new();
    if let Some(items) = fields.opt_array("zones", errors) {
        if items.len() > limits.max_zones {
            errors.push(
                "zones",
                format!(
                    "at most {} zones per request, got {}",
                    limits.max_zones,
                    items.len()
                ),
            );
        } else {
            for (i, item) in items.iter().enumerate() {
                let path = index_path("zones", i);
                match item {
                    Value::String(id) if id.is_empty() || id.len() > 128 => {
                        errors.push(path, "expected a zone id of 1 to 128 characters");
                    }
                    Value::String(id) => zones.push(id.clone()),
                    other => {
                        errors.push(path, format!("expected a string, got {}", kind_of(other)))
                    }
                }
            }
        }
    }
    (errors.total() == before).then_some(ServeRequest {
        visitor_id,
        session_id,
        currency,
        events,
        zones,
        now,
    })
}

fn check_url(url: &str, path: &str, errors: &mut Errors) {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let has_scheme = lower.starts_with("http://") || lower.starts_with("https://");
    if url.len() > MAX_URL_LEN {
        errors.push(path, format!("must be at most {MAX_URL_LEN} bytes"));
    } else if !has_scheme
        || url
            .split_once("://")
            .is_none_or(|(_, rest)| rest.is_empty() || rest.starts_with('/'))
    {
        errors.push(
            path,
            format!("expected an absolute http or https URL, got {url:?}"),
        );
    } else if url.chars().any(|c| c.is_control() || c == ' ') {
        errors.push(path, "must not contain spaces or control characters");
    }
}

/// `visitorId` / `sessionId`: at most 128 printable ASCII characters; empty means absent.
fn client_id(fields: &Fields<'_, '_>, key: &str, errors: &mut Errors) -> Option<String> {
    let id = fields.opt_nonempty_str(key, errors)?;
    if id.len() > MAX_CLIENT_ID_LEN {
        errors.push(
            key,
            format!(
                "must be at most {MAX_CLIENT_ID_LEN} characters, got {}",
                id.len()
            ),
        );
        return None;
    }
    if !id.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        errors.push(key, "must be printable ASCII without spaces");
        return None;
    }
    Some(id.to_owned())
}

fn event(value: &Value, path: &str, errors: &mut Errors) -> Option<Event> {
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
    let data_path = fields.path_of("data");
    let data = match fields.get("data") {
        Some(data) => Some(Fields::of(data, &data_path, KeyMatch::Exact, errors)?),
        None => None,
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
            let page_type = data.req_str("page_type", errors).and_then(|p| {
                let page_type = PageType::from_name(p);
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
            });
            Event::PageView {
                page_type: page_type.unwrap_or(PageType::Other),
                product_id: id_field(&data, "product_id", false, errors),
                category_id: id_field(&data, "category_id", false, errors),
                brand_id: id_field(&data, "brand_id", false, errors),
            }
        }
        "product_view" => Event::ProductView {
            id: id_field(&data, "id", true, errors).unwrap_or_default(),
        },
        "product_rate" => Event::ProductRate {
            id: id_field(&data, "id", true, errors).unwrap_or_default(),
            rating: data.req_number("rating", errors).unwrap_or_default(),
        },
        "set_basket" => Event::SetBasket {
            items: match data.opt_array("items", errors) {
                Some(items) => lines(items, &data.path_of("items"), errors),
                None => Vec::new(),
            },
        },
        "order" => {
            let order_id = id_field(&data, "orderid", true, errors);
            let items = data.req_array("items", errors).map(|items| {
                if items.is_empty() {
                    errors.push(data.path_of("items"), "an order needs at least one line");
                }
                lines(items, &data.path_of("items"), errors)
            });
            let total = data.opt_number("ordertotal", errors);
            if total.is_some_and(|t| t < 0.0) {
                errors.push(data.path_of("ordertotal"), "must not be negative");
            }
            let identity = identity(&data, "groupid", errors);
            let mut details = details(&data, errors);
            let zipcode = text_field(&data, "zipcode", errors);
            let postcode = text_field(&data, "postcode", errors);
            details.zipcode = zipcode.or(postcode);
            Event::Order(Order {
                order_id: order_id.unwrap_or_default(),
                items: items.unwrap_or_default(),
                total,
                identity,
                details,
            })
        }
        _ => Event::CustomerDetails {
            identity: identity(&data, "group_id", errors),
            details: details(&data, errors),
        },
    };
    (errors.total() == before).then_some(event)
}

fn id_field(
    data: &Fields<'_, '_>,
    key: &str,
    required: bool,
    errors: &mut Errors,
) -> Option<String> {
    let id = if required {
        data.req_str(key, errors)?
    } else {
        data.opt_nonempty_str(key, errors)?
    };
    match check_id(id) {
        Ok(()) => Some(id.to_owned()),
        Err(message) => {
            errors.push(data.path_of(key), message);
            None
        }
    }
}

fn text_field(data: &Fields<'_, '_>, key: &str, errors: &mut Errors) -> Option<String> {
    let text = data.opt_nonempty_str(key, errors)?;
    if text.len() > MAX_TEXT_LEN || text.chars().any(char::is_control) {
        errors.push(
            data.path_of(key),
            format!("must be at most {MAX_TEXT_LEN} bytes without control characters"),
        );
        return None;
    }
    Some(text.to_owned())
}

/// userid / email / accid (+ the group field, named differently per event); one of the
/// first three is required.
fn identity(data: &Fields<'_, '_>, group_key: &str, errors: &mut Errors) -> Identity {
    let user_id = id_field(data, "userid", false, errors);
    let account_id = id_field(data, "accid", false, errors);
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
        .any(|k| data.get(k).is_some_and(|v| v.as_str() != Some("")));
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
        group_id: id_field(data, group_key, false, errors),
    }
}

fn details(data: &Fields<'_, '_>, errors: &mut Errors) -> PersonalDetails {
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

fn lines(items: &[Value], path: &str, errors: &mut Errors) -> Vec<BasketLine> {
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = index_path(path, i);
        let Some(fields) = Fields::of(item, &item_path, KeyMatch::Exact, errors) else {
            continue;
        };
        let id = id_field(&fields, "id", true, errors);
        let qty = fields.req_number("qty", errors);
        if let Some(q) = qty
            && q <= 0.0
        {
            errors.push(
                fields.path_of("qty"),
                format!("must be greater than 0, got {q}"),
            );
        }
        let unit_price = fields.req_number("unitprice", errors);
        if let Some(p) = unit_price
            && p < 0.0
        {
            errors.push(
                fields.path_of("unitprice"),
                format!("must not be negative, got {p}"),
            );
        }
        if let (Some(id), Some(qty), Some(unit_price)) = (id, qty, unit_price) {
            out.push(BasketLine {
                id,
                qty,
                unit_price,
            });
        }
    }
    out
}

fn notice_message(notice: &Notice) -> String {
    match notice {
        Notice::DuplicateOrder { event, order_id } => format!(
            "events[{event}].data.orderid: order {order_id:?} was already recorded; it was not counted again"
        ),
        Notice::UnknownZone { zone, id } => format!("zones[{zone}]: unknown zone {id:?}"),
        Notice::ZoneNotOnPage {
            zone,
            id,
            page_type,
        } => {
            format!(
                "zones[{zone}]: zone {id:?} is not shown on {} pages",
                page_type.name()
            )
        }
    }
}
