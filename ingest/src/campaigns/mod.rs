//! The campaign document: an account's segments and each zone's ordered campaign list,
//! as JSON. Read and validated whole (every problem with its JSON path, nothing
//! changed on any), then compiled into the engine's [`CampaignSet`]: typed predicates,
//! schedules in the account's time zone, zone definitions for the content, so that
//! nothing is parsed per request.
//!
//! The document as stored (in the log record of each change and in the history of
//! state snapshots):
//!
//! ```json
//! {"segments": {"version": 3, "list": [{"id": "...", "name": "...", "rule": {...}}]},
//!  "zones": {"HP-01": {"version": 5, "campaigns": [{...}]}}}
//! ```
//!
//! A part's `version` is the document version in which it last changed: its ETag.
//! `rules.rs` reads a segment's rule, `content.rs` a zone's campaign list and each
//! campaign's content, `diff.rs` says what changed between two versions; this file the
//! document's operations.

mod content;
pub mod diff;
mod filters;
mod rules;

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use vitrine_engine::campaign::{CampaignSet, Segment, ZoneCampaigns};
use vitrine_engine::catalogue::Catalogue;
use vitrine_engine::zone::ZoneSpec;
use vitrine_fields::{Errors, Fields, KeyMatch, index_path, kind_of};

use content::read_list;
pub use diff::summary;
pub use filters::FILTER_KINDS;
use rules::only;
pub use rules::{KINDS, MAX_CONDITIONS, MAX_DEPTH, read_rule};

/// Segments an account holds at most.
pub const MAX_SEGMENTS: usize = 200;
/// Campaigns a zone's list holds at most.
pub const MAX_CAMPAIGNS: usize = 50;
/// Filters (and boosts) a custom recommender holds at most.
pub const MAX_FILTERS: usize = 20;
/// Pins a custom recommender holds at most.
pub const MAX_PINS: usize = 50;
/// Items a campaign shows at most.
pub const MAX_ITEMS: usize = 100;
/// Names in one list (of categories, brands, products, values) at most.
pub const MAX_NAMES: usize = 1_000;
/// Longest id or name.
pub const MAX_NAME_LEN: usize = 256;
/// Largest number accepted anywhere in the document, in absolute value.
pub const MAX_NUMBER: f64 = 1e12;
/// Longest html template.
pub const MAX_TEMPLATE_LEN: usize = 64 * 1024;
/// Images of image content at most.
pub const MAX_IMAGES: usize = 20;

/// What a document is compiled against: the account's zones and time zone.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The account's zones (from its configuration).
    pub zones: &'a [ZoneSpec],
    /// The account's time zone.
    pub time_zone: &'a jiff::tz::TimeZone,
}

/// Sets `value` at `keys` in `document`, making each level an object (a level that is
/// not one is replaced): the stored document and a restored one are written this way,
/// so that no shape of a document makes it panic.
pub(crate) fn put(document: &mut Value, keys: &[&str], value: Value) {
    let mut at = document;
    for key in keys {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let Value::Object(map) = at else {
            return;
        };
        at = map.entry((*key).to_owned()).or_insert(Value::Null);
    }
    *at = value;
}

/// The value at `keys` in `document`, if there is one.
pub(crate) fn at<'a>(document: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(document, |value, key| value.get(key))
}

/// The document of an account that never changed its campaigns.
pub fn empty_document() -> Value {
    json!({"segments": {"version": 0, "list": []}, "zones": {}})
}

/// Compiles a stored document (errors name paths in the stored form).
pub fn compile(document: &Value, version: u64, target: Target<'_>) -> Result<CampaignSet, Errors> {
    let mut errors = Errors::default();
    let segments = document
        .get("segments")
        .and_then(|s| s.get("list"))
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let segments = read_segments(&segments, "segments.list", &mut errors);
    let mut zones = Vec::new();
    if let Some(map) = document.get("zones").and_then(Value::as_object) {
        for (zone, part) in map {
            let path = format!("zones.{zone}.campaigns");
            // A zone whose list was removed keeps its version, not a list.
            let Some(list) = part.get("campaigns").cloned() else {
                continue;
            };
            let part_version = part.get("version").and_then(Value::as_u64).unwrap_or(0);
            if let Some(list) = read_list(zone, &list, &path, &segments, target, &mut errors) {
                zones.push(ZoneCampaigns {
                    version: part_version,
                    ..list
                });
            }
        }
    }
    errors.into_result(CampaignSet {
        version,
        segments,
        zones,
    })
}

/// The ETag version of the segments.
pub fn segments_version(document: &Value) -> u64 {
    document
        .pointer("/segments/version")
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The ETag version of a zone's list (0: it never had one).
pub fn zone_version(document: &Value, zone: &str) -> u64 {
    document
        .get("zones")
        .and_then(|z| z.get(zone))
        .and_then(|p| p.get("version"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The one member of a `PUT` body, `{"<key>": ...}`; the errors otherwise.
fn member<'v>(body: &'v Value, key: &str, errors: &mut Errors) -> Result<&'v Value, Errors> {
    let refused = |errors: &mut Errors| Err(std::mem::take(errors));
    let Some(fields) = Fields::of(body, "", KeyMatch::Exact, errors) else {
        return refused(errors);
    };
    if only(&fields, body, &[key], errors).is_none() {
        return refused(errors);
    }
    match fields.get(key) {
        Some(value) => Ok(value),
        None => {
            errors.push(key, "required");
            refused(errors)
        }
    }
}

/// A display name: `name` when given (at most [`MAX_NAME_LEN`] bytes), else empty.
pub(super) fn display_name<'v>(fields: &Fields<'v, '_>, errors: &mut Errors) -> &'v str {
    let name = fields.opt_str("name", errors).unwrap_or_default();
    if name.len() > MAX_NAME_LEN {
        errors.push(
            fields.path_of("name"),
            format!("must be at most {MAX_NAME_LEN} bytes"),
        );
    }
    name
}

/// A new document with the segments of a `PUT` body (`{"segments": [...]}`) at
/// `version`: validated whole, with every zone's list compiled against them (a segment
/// still used cannot go). Errors name paths in the body.
pub fn with_segments(
    current: &Value,
    body: &Value,
    version: u64,
    target: Target<'_>,
) -> Result<(Value, CampaignSet), Errors> {
    let mut errors = Errors::default();
    let list = member(body, "segments", &mut errors)?;
    let segments = read_segments(list, "segments", &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut document = current.clone();
    put(
        &mut document,
        &["segments"],
        json!({"version": version, "list": list}),
    );
    // Every zone's list against the new segments: a removed one still in use is named.
    let ids: Vec<&str> = segments.iter().map(|s| s.id.as_str()).collect();
    for (zone, part) in at(&document, &["zones"])
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let used = part["campaigns"].as_array().into_iter().flatten();
        for (i, campaign) in used.enumerate() {
            if let Some(segment) = campaign.get("segment").and_then(Value::as_str)
                && !ids.contains(&segment)
            {
                errors.push(
                    "segments",
                    format!("segment {segment:?} is used by zone {zone} (campaigns[{i}]) and cannot be removed"),
                );
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let set = compile(&document, version, target)?;
    Ok((document, set))
}

/// A new document with the campaign list of a `PUT` body (`{"campaigns": [...]}`) for
/// `zone`, at `version`. Errors name paths in the body.
pub fn with_campaigns(
    current: &Value,
    zone: &str,
    body: &Value,
    version: u64,
    target: Target<'_>,
) -> Result<(Value, CampaignSet), Errors> {
    let mut errors = Errors::default();
    let list = member(body, "campaigns", &mut errors)?;
    let segments_list = current
        .pointer("/segments/list")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let segments = read_segments(&segments_list, "segments.list", &mut Errors::default());
    read_list(zone, list, "campaigns", &segments, target, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut document = current.clone();
    put(
        &mut document,
        &["zones", zone],
        json!({"version": version, "campaigns": list}),
    );
    let set = compile(&document, version, target)?;
    Ok((document, set))
}

/// A new document without `zone`'s list (the zone is filled as configured again), at
/// `version`.
pub fn without_campaigns(
    current: &Value,
    zone: &str,
    version: u64,
    target: Target<'_>,
) -> Result<(Value, CampaignSet), Errors> {
    let mut document = current.clone();
    put(&mut document, &["zones", zone], json!({"version": version}));
    let set = compile(&document, version, target)?;
    Ok((document, set))
}

/// A document with the content of `old` and the versions of the parts that differ from
/// `current` moved to `version` (a restore).
pub fn restored(current: &Value, old: &Value, version: u64) -> Value {
    let mut document = old.clone();
    if old.pointer("/segments/list") != current.pointer("/segments/list") {
        put(&mut document, &["segments", "version"], json!(version));
    } else {
        put(
            &mut document,
            &["segments", "version"],
            json!(segments_version(current)),
        );
    }
    let mut zones: BTreeMap<String, ()> = BTreeMap::new();
    for map in [current, old]
        .iter()
        .filter_map(|d| d.get("zones").and_then(Value::as_object))
    {
        zones.extend(map.keys().map(|k| (k.clone(), ())));
    }
    for zone in zones.keys() {
        let was = current
            .get("zones")
            .and_then(|z| z.get(zone))
            .and_then(|p| p.get("campaigns"));
        let now = old
            .get("zones")
            .and_then(|z| z.get(zone))
            .and_then(|p| p.get("campaigns"));
        match now {
            Some(list) if Some(list) != was => {
                put(
                    &mut document,
                    &["zones", zone],
                    json!({"version": version, "campaigns": list}),
                );
            }
            Some(_) => {
                put(
                    &mut document,
                    &["zones", zone, "version"],
                    json!(zone_version(current, zone)),
                );
            }
            // A zone without a list in the old version goes back to its configuration.
            None if was.is_some() => {
                put(&mut document, &["zones", zone], json!({"version": version}));
            }
            None => {
                put(
                    &mut document,
                    &["zones", zone],
                    json!({"version": zone_version(current, zone)}),
                );
            }
        }
    }
    document
}

/// `current` with one part (`["segments"]`, or `["zones", id]`) as it was in `old`,
/// that part's version moved to `version` when it differs (a restore of one part: the
/// others, and their versions, stay as they are now).
pub fn restored_part(current: &Value, old: &Value, keys: &[&str], version: u64) -> Value {
    let mut document = current.clone();
    let (was, now) = (at(current, keys), at(old, keys));
    let content = |part: Option<&Value>| {
        let mut part = part.cloned().unwrap_or(Value::Null);
        if let Some(map) = part.as_object_mut() {
            map.remove("version");
        }
        part
    };
    if content(was) == content(now) {
        return document;
    }
    let mut part = content(now);
    if !part.is_object() {
        // A zone without a list then: filled as configured again.
        part = json!({});
    }
    if let Some(map) = part.as_object_mut() {
        map.insert("version".to_owned(), json!(version));
    }
    put(&mut document, keys, part);
    document
}

/// Ids of products, categories and brands `document` (a request's body, or a stored
/// document) names that `catalogue` does not know, judged as serving judges them: a
/// content's sources and filters match ids exactly, a segment's conditions compare
/// names without regard to case. Warnings, not errors (a feed may bring them later),
/// each with its path in `document`.
pub fn unknown_ids(document: &Value, catalogue: &Catalogue) -> Vec<String> {
    let mut warnings = Vec::new();
    let known_category =
        |id: &str| catalogue.category(id).is_some() || !catalogue.in_category(id).is_empty();
    let known_brand =
        |id: &str| catalogue.brand(id).is_some() || !catalogue.of_brand(id).is_empty();
    // What segments compare without case: every name products of the catalogue carry.
    let folded = |names: &mut dyn Iterator<Item = &str>| -> std::collections::HashSet<String> {
        names.map(str::to_lowercase).collect()
    };
    let categories = std::cell::OnceCell::new();
    let brands = std::cell::OnceCell::new();
    let any_case_category = |id: &str| {
        known_category(id)
            || categories
                .get_or_init(|| folded(&mut catalogue.category_names()))
                .contains(&id.to_lowercase())
    };
    let any_case_brand = |id: &str| {
        known_brand(id)
            || brands
                .get_or_init(|| folded(&mut catalogue.brand_names()))
                .contains(&id.to_lowercase())
    };
    let mut walk = |path: &str, value: &Value| {
        let check =
            |key: &str, known: &dyn Fn(&str) -> bool, what: &str, warnings: &mut Vec<String>| {
                if let Some(list) = value.get(key).and_then(Value::as_array) {
                    for (i, id) in list
                        .iter()
                        .enumerate()
                        .filter_map(|(i, v)| Some((i, v.as_str()?)))
                    {
                        if !known(id) {
                            warnings.push(format!(
                                "{path}.{key}[{i}]: no {what} {id:?} in the catalogue"
                            ));
                        }
                    }
                }
            };
        check(
            "products",
            &|id| catalogue.idx_of(id).is_some(),
            "product",
            &mut warnings,
        );
        check("categories", &known_category, "category", &mut warnings);
        check("brands", &known_brand, "brand", &mut warnings);
        check("categoryIn", &known_category, "category", &mut warnings);
        check("categoryNotIn", &known_category, "category", &mut warnings);
        check(
            "boughtCategory",
            &any_case_category,
            "category",
            &mut warnings,
        );
        check(
            "basketCategory",
            &any_case_category,
            "category",
            &mut warnings,
        );
        check(
            "productNotIn",
            &|id| catalogue.idx_of(id).is_some(),
            "product",
            &mut warnings,
        );
        check("brandIn", &known_brand, "brand", &mut warnings);
        check("brandNotIn", &known_brand, "brand", &mut warnings);
        check("boughtBrand", &any_case_brand, "brand", &mut warnings);
        if let Some(id) = value.get("product").and_then(Value::as_str)
            && catalogue.idx_of(id).is_none()
        {
            warnings.push(format!(
                "{path}.product: no product {id:?} in the catalogue"
            ));
        }
    };
    visit(document, "", &mut walk);
    warnings
}

/// Calls `f` with every object of `value` and its path.
fn visit(value: &Value, path: &str, f: &mut dyn FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => {
            f(path, value);
            for (key, inner) in map {
                let inner_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                visit(inner, &inner_path, f);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                visit(inner, &index_path(path, i), f);
            }
        }
        _ => {}
    }
}

fn read_segments(list: &Value, path: &str, errors: &mut Errors) -> Vec<Segment> {
    let Some(items) = list.as_array() else {
        errors.push(
            path,
            format!("expected an array of segments, got {}", kind_of(list)),
        );
        return Vec::new();
    };
    if items.len() > MAX_SEGMENTS {
        errors.push(
            path,
            format!("at most {MAX_SEGMENTS} segments, got {}", items.len()),
        );
        return Vec::new();
    }
    let mut segments: Vec<Segment> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = index_path(path, i);
        let Some(fields) = Fields::of(item, &at, KeyMatch::Exact, errors) else {
            continue;
        };
        if only(&fields, item, &["id", "name", "rule"], errors).is_none() {
            continue;
        }
        let id = identifier(&fields, "id", errors);
        let name = display_name(&fields, errors);
        let rule = match fields.get("rule") {
            Some(rule) => rules::condition(rule, &fields.path_of("rule"), 1, &mut 0, errors),
            None => {
                errors.push(fields.path_of("rule"), "required");
                None
            }
        };
        if let Some(id) = &id
            && segments.iter().any(|s| s.id == *id)
        {
            errors.push(
                fields.path_of("id"),
                format!("segment {id:?} is given twice"),
            );
            continue;
        }
        if let (Some(id), Some(rule)) = (id, rule) {
            segments.push(Segment {
                name: if name.is_empty() {
                    id.clone()
                } else {
                    name.to_owned()
                },
                id,
                rule,
            });
        }
    }
    segments
}

/// An id: 1 to 128 printable ASCII characters.
pub(super) fn identifier(
    fields: &Fields<'_, '_>,
    key: &str,
    errors: &mut Errors,
) -> Option<String> {
    let id = fields.req_str(key, errors)?;
    if id.is_empty() || id.len() > 128 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        errors.push(
            fields.path_of(key),
            "expected 1 to 128 printable ASCII characters without spaces",
        );
        return None;
    }
    Some(id.to_owned())
}
