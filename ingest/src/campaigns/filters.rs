//! Reading a custom recommender's filters (also a boost's filter): each kind with its
//! value, every problem with its path.

use serde_json::Value;
use vitrine_engine::campaign::content::{Filter, Ids};
use vitrine_fields::{Errors, Fields, KeyMatch, kind_of};

use super::rules::{bounded, name_list, names, only};

/// The kinds of filter, as the document names them.
pub const FILTER_KINDS: [&str; 12] = [
    "categoryIn",
    "categoryNotIn",
    "brandIn",
    "brandNotIn",
    "price",
    "onOffer",
    "newArrival",
    "sameCategory",
    "sameBrand",
    "priceWithin",
    "searchTag",
    "productNotIn",
];

pub(super) fn filter(value: &Value, path: &str, errors: &mut Errors) -> Option<Filter> {
    let fields = Fields::of(value, path, KeyMatch::Exact, errors)?;
    let object = value.as_object()?;
    let (Some((kind, inner)), 1) = (object.iter().next(), object.len()) else {
        errors.push(
            path,
            format!(
                "expected exactly one key naming the filter's kind: {}",
                FILTER_KINDS.join(", ")
            ),
        );
        return None;
    };
    let at = fields.path_of(kind);
    let flag = |errors: &mut Errors| -> Option<bool> {
        let b = inner.as_bool();
        if b.is_none() {
            errors.push(
                &at,
                format!("expected true or false, got {}", kind_of(inner)),
            );
        }
        b
    };
    Some(match kind.as_str() {
        "categoryIn" => Filter::CategoryIn(ids(inner, &at, errors)?),
        "categoryNotIn" => Filter::CategoryNotIn(ids(inner, &at, errors)?),
        "brandIn" => Filter::BrandIn(ids(inner, &at, errors)?),
        "brandNotIn" => Filter::BrandNotIn(ids(inner, &at, errors)?),
        "searchTag" => Filter::SearchTag(names(inner, &at, errors)?),
        "productNotIn" => Filter::ProductNotIn(ids(inner, &at, errors)?),
        "price" => {
            let range = Fields::of(inner, &at, KeyMatch::Exact, errors)?;
            only(&range, inner, &["min", "max"], errors)?;
            let min = bounded(&range, "min", errors)?;
            let max = bounded(&range, "max", errors)?;
            if min.is_none() && max.is_none() {
                errors.push(&at, "expected \"min\", \"max\" or both");
                return None;
            }
            for (key, bound) in [("min", min), ("max", max)] {
                if let Some(bound) = bound.filter(|b| *b < 0.0) {
                    errors.push(
                        range.path_of(key),
                        format!("a price is never negative: expected 0 or more, got {bound}"),
                    );
                }
            }
            if min.is_some_and(|b| b < 0.0) || max.is_some_and(|b| b < 0.0) {
                return None;
            }
            if let (Some(min), Some(max)) = (min, max)
                && min > max
            {
                errors.push(
                    range.path_of("min"),
                    format!("must not be above max ({max})"),
                );
                return None;
            }
            Filter::Price { min, max }
        }
        "onOffer" => Filter::OnOffer(flag(errors)?),
        "newArrival" => Filter::NewArrival(flag(errors)?),
        "sameCategory" | "sameBrand" => {
            if !flag(errors)? {
                errors.push(&at, "expected true (leave the filter out otherwise)");
                return None;
            }
            if kind == "sameCategory" {
                Filter::SameCategory
            } else {
                Filter::SameBrand
            }
        }
        "priceWithin" => match inner.as_f64() {
            Some(p) if (0.0..=1000.0).contains(&p) => Filter::PriceWithin { percent: p },
            _ => {
                errors.push(&at, "expected a percentage from 0 to 1000");
                return None;
            }
        },
        other => {
            errors.push(
                path,
                format!(
                    "unknown filter kind {other:?}; kinds: {}",
                    FILTER_KINDS.join(", ")
                ),
            );
            return None;
        }
    })
}

/// Category or brand ids, matched exactly.
fn ids(value: &Value, path: &str, errors: &mut Errors) -> Option<Ids> {
    let list = name_list(value, path, errors)?;
    Some(Ids::of(list.iter().map(String::as_str)))
}
