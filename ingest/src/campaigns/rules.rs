//! Reading a segment's rule: a tree of conditions, each an object with one key naming
//! its kind, bounded in depth and size so that a hostile document is refused whole.

use compact_str::CompactString;
use serde_json::Value;
use vitrine_engine::campaign::segment::{Condition, Names, Range, UserField};
use vitrine_engine::campaign::{DeviceClass, UtmParameter};
use vitrine_engine::event::PageType;
use vitrine_engine::money::Currency;
use vitrine_fields::{Errors, Fields, KeyMatch, index_path, kind_of};

use super::grammar::{MAX_NAME_LEN, MAX_NAMES, MAX_NUMBER};

/// Deepest nesting of `all`, `any` and `not` accepted.
pub const MAX_DEPTH: usize = 8;
/// Most conditions in one segment's rule.
pub const MAX_CONDITIONS: usize = 100;

/// The kinds of condition, as the document names them.
pub const KINDS: [&str; 26] = [
    "all",
    "any",
    "not",
    "visitor",
    "sessions",
    "daysSinceFirstSeen",
    "sessionPageViews",
    "loggedIn",
    "b2bAccount",
    "userGroup",
    "userField",
    "age",
    "orders",
    "revenue",
    "daysSinceLastOrder",
    "boughtCategory",
    "boughtBrand",
    "categoryAffinity",
    "brandAffinity",
    "basketValue",
    "basketCategory",
    "pageType",
    "device",
    "referrerHost",
    "utm",
    "currency",
];

/// Reads a rule at `path`; `count` counts the conditions read so far.
pub(super) fn condition(
    value: &Value,
    path: &str,
    depth: usize,
    count: &mut usize,
    errors: &mut Errors,
) -> Option<Condition> {
    *count += 1;
    if *count > MAX_CONDITIONS {
        if *count == MAX_CONDITIONS + 1 {
            errors.push(
                path,
                format!("a rule may hold at most {MAX_CONDITIONS} conditions"),
            );
        }
        return None;
    }
    if depth > MAX_DEPTH {
        errors.push(
            path,
            format!("conditions may be nested at most {MAX_DEPTH} deep"),
        );
        return None;
    }
    let fields = Fields::of(value, path, KeyMatch::Exact, errors)?;
    let members = value.as_object().map(|o| o.len()).unwrap_or(0);
    let Some((kind, inner)) = value.as_object().and_then(|o| o.iter().next()) else {
        errors.push(
            path,
            format!(
                "expected one condition, such as {{\"visitor\": \"returning\"}}; kinds: {}",
                KINDS.join(", ")
            ),
        );
        return None;
    };
    if members != 1 {
        errors.push(path, "expected exactly one key naming the condition's kind");
        return None;
    }
    let at = fields.path_of(kind);
    let at = at.as_str();
    let list = |errors: &mut Errors, count: &mut usize| -> Option<Vec<Condition>> {
        let Some(items) = inner.as_array() else {
            errors.push(
                at,
                format!("expected an array of conditions, got {}", kind_of(inner)),
            );
            return None;
        };
        let before = errors.total();
        let conditions: Vec<Condition> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| condition(item, &index_path(at, i), depth + 1, count, errors))
            .collect();
        (errors.total() == before).then_some(conditions)
    };
    Some(match kind.as_str() {
        "all" => Condition::All(list(errors, count)?),
        "any" => Condition::Any(list(errors, count)?),
        "not" => Condition::Not(Box::new(condition(inner, at, depth + 1, count, errors)?)),
        "visitor" => match inner.as_str() {
            Some("new") => Condition::Returning(false),
            Some("returning") => Condition::Returning(true),
            _ => {
                errors.push(at, "expected \"new\" or \"returning\"");
                return None;
            }
        },
        "sessions" => Condition::Sessions(range(inner, at, errors)?),
        "daysSinceFirstSeen" => Condition::DaysSinceFirstSeen(range(inner, at, errors)?),
        "sessionPageViews" => Condition::SessionPageViews(range(inner, at, errors)?),
        "loggedIn" => Condition::LoggedIn(boolean(inner, at, errors)?),
        "b2bAccount" => Condition::B2bAccount(names(inner, at, errors)?),
        "userGroup" => Condition::UserGroup(names(inner, at, errors)?),
        "userField" => {
            let fields = Fields::of(inner, at, KeyMatch::Exact, errors)?;
            only(&fields, inner, &["field", "in"], errors)?;
            let name = fields.req_str("field", errors)?;
            let Some(field) = UserField::ALL
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, f)| *f)
            else {
                errors.push(
                    fields.path_of("field"),
                    format!("expected one of Country, State, City, Gender, got {name:?}"),
                );
                return None;
            };
            let values = names(fields.get("in")?, &fields.path_of("in"), errors)?;
            Condition::UserField { field, values }
        }
        "age" => Condition::Age(range(inner, at, errors)?),
        "orders" => Condition::Orders(range(inner, at, errors)?),
        "revenue" => {
            let fields = Fields::of(inner, at, KeyMatch::Exact, errors)?;
            only(&fields, inner, &["min", "max", "days"], errors)?;
            let days = match fields.get("days") {
                None => None,
                Some(days) => Some(whole(days, &fields.path_of("days"), 1, 36_500, errors)?),
            };
            Condition::Revenue {
                range: range_of(&fields, errors)?,
                days: days.and_then(|d| u32::try_from(d).ok()),
            }
        }
        "daysSinceLastOrder" => Condition::DaysSinceLastOrder(range(inner, at, errors)?),
        "boughtCategory" => Condition::BoughtCategory(names(inner, at, errors)?),
        "boughtBrand" => Condition::BoughtBrand(names(inner, at, errors)?),
        "categoryAffinity" | "brandAffinity" => {
            let fields = Fields::of(inner, at, KeyMatch::Exact, errors)?;
            let key = if kind == "categoryAffinity" {
                "category"
            } else {
                "brand"
            };
            only(&fields, inner, &[key, "minViews"], errors)?;
            let name = fields.req_nonempty_str(key, errors)?;
            if name.len() > MAX_NAME_LEN {
                errors.push(
                    fields.path_of(key),
                    format!("must be at most {MAX_NAME_LEN} bytes"),
                );
                return None;
            }
            let min_views = match fields.get("minViews") {
                None => 1,
                Some(v) => whole(v, &fields.path_of("minViews"), 1, 1_000_000, errors)?,
            } as f64;
            let name = CompactString::from(name);
            if kind == "categoryAffinity" {
                Condition::CategoryAffinity {
                    category: name,
                    min_views,
                }
            } else {
                Condition::BrandAffinity {
                    brand: name,
                    min_views,
                }
            }
        }
        "basketValue" => Condition::BasketValue(range(inner, at, errors)?),
        "basketCategory" => Condition::BasketCategory(names(inner, at, errors)?),
        "pageType" => Condition::PageType(one_of(inner, at, errors, PageType::from_name, || {
            PageType::ALL.map(PageType::name).join(", ")
        })?),
        "device" => Condition::Device(one_of(
            inner,
            at,
            errors,
            |n| {
                DeviceClass::ALL
                    .iter()
                    .find(|(name, _)| *name == n)
                    .map(|(_, d)| *d)
            },
            || "mobile, tablet, desktop".to_owned(),
        )?),
        "referrerHost" => Condition::ReferrerHost(names(inner, at, errors)?),
        "utm" => {
            let fields = Fields::of(inner, at, KeyMatch::Exact, errors)?;
            only(&fields, inner, &["parameter", "in"], errors)?;
            let name = fields.req_str("parameter", errors)?;
            let Some(parameter) = UtmParameter::ALL
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, p)| *p)
            else {
                errors.push(
                    fields.path_of("parameter"),
                    format!(
                        "expected one of source, medium, campaign, term, content, got {name:?}"
                    ),
                );
                return None;
            };
            let values = names(fields.get("in")?, &fields.path_of("in"), errors)?;
            Condition::Utm { parameter, values }
        }
        "currency" => Condition::Currency(one_of(
            inner,
            at,
            errors,
            |code| Currency::from_code(code).ok(),
            || "ISO 4217 codes such as GBP".to_owned(),
        )?),
        other => {
            errors.push(
                path,
                format!(
                    "unknown condition kind {other:?}; kinds: {}",
                    KINDS.join(", ")
                ),
            );
            return None;
        }
    })
}

/// Refuses keys of an object other than `allowed`.
pub(super) fn only(
    fields: &Fields<'_, '_>,
    value: &Value,
    allowed: &[&str],
    errors: &mut Errors,
) -> Option<()> {
    let before = errors.total();
    for key in value.as_object().into_iter().flat_map(|o| o.keys()) {
        if !allowed.contains(&key.as_str()) {
            errors.push(
                fields.path_of(key),
                format!("unknown field; expected {}", allowed.join(", ")),
            );
        }
    }
    (errors.total() == before).then_some(())
}

/// `{"min": x, "max": y}`, either optional, at least one given, min ≤ max.
fn range(value: &Value, path: &str, errors: &mut Errors) -> Option<Range> {
    let fields = Fields::of(value, path, KeyMatch::Exact, errors)?;
    only(&fields, value, &["min", "max"], errors)?;
    range_of(&fields, errors)
}

fn range_of(fields: &Fields<'_, '_>, errors: &mut Errors) -> Option<Range> {
    let min = bounded(fields, "min", errors)?;
    let max = bounded(fields, "max", errors)?;
    if min.is_none() && max.is_none() {
        errors.push(fields.path(), "expected \"min\", \"max\" or both");
        return None;
    }
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        errors.push(
            fields.path_of("min"),
            format!("must not be above max ({max})"),
        );
        return None;
    }
    Some(Range { min, max })
}

/// An optional finite number within ±[`MAX_NUMBER`]: `Some(None)` when absent.
pub(super) fn bounded(
    fields: &Fields<'_, '_>,
    key: &str,
    errors: &mut Errors,
) -> Option<Option<f64>> {
    let Some(value) = fields.get(key) else {
        return Some(None);
    };
    let path = fields.path_of(key);
    match value.as_f64() {
        Some(n) if n.is_finite() && n.abs() <= MAX_NUMBER => Some(Some(n)),
        Some(_) => {
            errors.push(path, format!("must be a number within ±{MAX_NUMBER}"));
            None
        }
        None => {
            errors.push(path, format!("expected a number, got {}", kind_of(value)));
            None
        }
    }
}

/// A whole number in `min..=max`.
pub(super) fn whole(
    value: &Value,
    path: &str,
    min: i64,
    max: i64,
    errors: &mut Errors,
) -> Option<i64> {
    match value.as_i64() {
        Some(n) if (min..=max).contains(&n) => Some(n),
        _ => {
            errors.push(path, format!("expected a whole number from {min} to {max}"));
            None
        }
    }
}

fn boolean(value: &Value, path: &str, errors: &mut Errors) -> Option<bool> {
    let b = value.as_bool();
    if b.is_none() {
        errors.push(
            path,
            format!("expected true or false, got {}", kind_of(value)),
        );
    }
    b
}

/// A non-empty array of names (ids), each 1 to [`MAX_NAME_LEN`] bytes, at most
/// [`MAX_NAMES`].
pub(super) fn name_list(value: &Value, path: &str, errors: &mut Errors) -> Option<Vec<String>> {
    let Some(items) = value.as_array() else {
        errors.push(
            path,
            format!("expected an array of strings, got {}", kind_of(value)),
        );
        return None;
    };
    if items.is_empty() || items.len() > MAX_NAMES {
        errors.push(
            path,
            format!("expected 1 to {MAX_NAMES} names, got {}", items.len()),
        );
        return None;
    }
    let before = errors.total();
    let mut names = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(name) if !name.is_empty() && name.len() <= MAX_NAME_LEN => {
                names.push(name.to_owned())
            }
            Some(_) => errors.push(
                index_path(path, i),
                format!("expected 1 to {MAX_NAME_LEN} bytes"),
            ),
            None => errors.push(
                index_path(path, i),
                format!("expected a string, got {}", kind_of(item)),
            ),
        }
    }
    (errors.total() == before).then_some(names)
}

pub(super) fn names(value: &Value, path: &str, errors: &mut Errors) -> Option<Names> {
    let list = name_list(value, path, errors)?;
    Some(Names::folded(list.iter().map(String::as_str)))
}

/// A non-empty array of names each of which `read` knows.
fn one_of<T>(
    value: &Value,
    path: &str,
    errors: &mut Errors,
    read: impl Fn(&str) -> Option<T>,
    expected: impl Fn() -> String,
) -> Option<Vec<T>> {
    let list = name_list(value, path, errors)?;
    let before = errors.total();
    let mut out = Vec::with_capacity(list.len());
    for (i, name) in list.iter().enumerate() {
        match read(name) {
            Some(v) => out.push(v),
            None => errors.push(
                index_path(path, i),
                format!("unknown value {name:?}; expected {}", expected()),
            ),
        }
    }
    (errors.total() == before).then_some(out)
}

/// The rule of a draft segment, from a body `{"rule": {...}}` (for its size).
pub fn read_rule(body: &Value, errors: &mut Errors) -> Option<Condition> {
    let fields = Fields::of(body, "", KeyMatch::Exact, errors)?;
    only(&fields, body, &["rule"], errors)?;
    let Some(rule) = fields.get("rule") else {
        errors.push("rule", "required");
        return None;
    };
    condition(rule, "rule", 1, &mut 0, errors)
}
