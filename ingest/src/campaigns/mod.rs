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
//! `rules.rs` reads a segment's rule; this file the rest.

mod rules;

use std::collections::BTreeMap;

use compact_str::CompactString;
use serde_json::{Map, Value, json};
use vitrine_engine::campaign::content::{Boost, Content, Custom, Filter, Image, Pin, Source};
use vitrine_engine::campaign::schedule::{DAY_NAMES, EVERY_DAY, EVERY_HOUR, Schedule};
use vitrine_engine::campaign::segment::Reads;
use vitrine_engine::campaign::{Campaign, CampaignSet, Segment, ZoneCampaigns};
use vitrine_engine::catalogue::{Catalogue, UnixMillis};
use vitrine_engine::zone::{Strategy, ZoneKind, ZoneSpec};
use vitrine_fields::{Errors, Fields, KeyMatch, index_path, kind_of};

pub use rules::{KINDS, MAX_CONDITIONS, MAX_DEPTH};
use rules::{bounded, name_list, names, only, whole};

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
            let list = part.get("campaigns").cloned().unwrap_or(Value::Null);
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
    let Some(fields) = Fields::of(body, "", KeyMatch::Exact, &mut errors) else {
        return Err(errors);
    };
    if only(&fields, body, &["segments"], &mut errors).is_none() {
        return Err(errors);
    }
    let Some(list) = fields.get("segments") else {
        errors.push("segments", "required");
        return Err(errors);
    };
    let segments = read_segments(list, "segments", &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut document = current.clone();
    document["segments"] = json!({"version": version, "list": list});
    // Every zone's list against the new segments: a removed one still in use is named.
    let ids: Vec<&str> = segments.iter().map(|s| s.id.as_str()).collect();
    for (zone, part) in document["zones"].as_object().into_iter().flatten() {
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
    let Some(fields) = Fields::of(body, "", KeyMatch::Exact, &mut errors) else {
        return Err(errors);
    };
    if only(&fields, body, &["campaigns"], &mut errors).is_none() {
        return Err(errors);
    }
    let Some(list) = fields.get("campaigns") else {
        errors.push("campaigns", "required");
        return Err(errors);
    };
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
    if !document["zones"].is_object() {
        document["zones"] = Value::Object(Map::new());
    }
    document["zones"][zone] = json!({"version": version, "campaigns": list});
    let set = compile(&document, version, target)?;
    Ok((document, set))
}

/// A document with the content of `old` and the versions of the parts that differ from
/// `current` moved to `version` (a restore).
pub fn restored(current: &Value, old: &Value, version: u64) -> Value {
    let mut document = old.clone();
    if old.pointer("/segments/list") != current.pointer("/segments/list") {
        document["segments"]["version"] = json!(version);
    } else {
        document["segments"]["version"] = json!(segments_version(current));
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
                document["zones"][zone.as_str()] = json!({"version": version, "campaigns": list});
            }
            Some(_) => {
                document["zones"][zone.as_str()]["version"] = json!(zone_version(current, zone));
            }
            // A zone without a list in the old version goes back to its configuration.
            None => {}
        }
    }
    document
}

/// Ids of products, categories and brands the document names that `catalogue` does not
/// know: warnings, not errors (a feed may bring them later).
pub fn unknown_ids(document: &Value, catalogue: &Catalogue) -> Vec<String> {
    let mut warnings = Vec::new();
    let known_category =
        |id: &str| catalogue.category(id).is_some() || !catalogue.in_category(id).is_empty();
    let known_brand =
        |id: &str| catalogue.brand(id).is_some() || !catalogue.of_brand(id).is_empty();
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
        for key in [
            "categoryIn",
            "categoryNotIn",
            "boughtCategory",
            "basketCategory",
        ] {
            if let Some(list) = value.get(key).and_then(Value::as_array) {
                for (i, id) in list
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((i, v.as_str()?)))
                {
                    if !known_category(id) {
                        warnings.push(format!(
                            "{path}.{key}[{i}]: no category {id:?} in the catalogue"
                        ));
                    }
                }
            }
        }
        for key in ["brandIn", "brandNotIn", "boughtBrand"] {
            if let Some(list) = value.get(key).and_then(Value::as_array) {
                for (i, id) in list
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((i, v.as_str()?)))
                {
                    if !known_brand(id) {
                        warnings.push(format!(
                            "{path}.{key}[{i}]: no brand {id:?} in the catalogue"
                        ));
                    }
                }
            }
        }
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

/// A short account of what changed between two documents, for the audit log.
pub fn summary(before: &Value, after: &Value) -> String {
    let mut parts = Vec::new();
    let count = |d: &Value, p: &str| d.pointer(p).and_then(Value::as_array).map_or(0, Vec::len);
    if before.pointer("/segments/list") != after.pointer("/segments/list") {
        parts.push(format!(
            "segments: {} → {}",
            count(before, "/segments/list"),
            count(after, "/segments/list")
        ));
    }
    let mut zones: Vec<&String> = Vec::new();
    for map in [before, after]
        .iter()
        .filter_map(|d| d.get("zones").and_then(Value::as_object))
    {
        for key in map.keys() {
            if !zones.contains(&key) {
                zones.push(key);
            }
        }
    }
    zones.sort();
    for zone in zones {
        let pointer = format!(
            "/zones/{}/campaigns",
            zone.replace('~', "~0").replace('/', "~1")
        );
        if before.pointer(&pointer) != after.pointer(&pointer) {
            let ids = |d: &Value| -> Vec<String> {
                d.pointer(&pointer)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("id").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            };
            let (was, now) = (ids(before), ids(after));
            let added: Vec<&String> = now.iter().filter(|id| !was.contains(id)).collect();
            let removed: Vec<&String> = was.iter().filter(|id| !now.contains(id)).collect();
            let mut text = format!("zone {zone}: {} campaign(s)", now.len());
            if !added.is_empty() {
                text.push_str(&format!(", added {}", join(&added)));
            }
            if !removed.is_empty() {
                text.push_str(&format!(", removed {}", join(&removed)));
            }
            if added.is_empty() && removed.is_empty() {
                text.push_str(", changed");
            }
            parts.push(text);
        }
    }
    if parts.is_empty() {
        "no change".to_owned()
    } else {
        parts.join("; ")
    }
}

fn join(ids: &[&String]) -> String {
    ids.iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
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
        let name = fields.opt_str("name", errors).unwrap_or_default();
        if name.len() > MAX_NAME_LEN {
            errors.push(
                fields.path_of("name"),
                format!("must be at most {MAX_NAME_LEN} bytes"),
            );
        }
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
fn identifier(fields: &Fields<'_, '_>, key: &str, errors: &mut Errors) -> Option<String> {
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

/// A zone's campaign list.
fn read_list(
    zone: &str,
    list: &Value,
    path: &str,
    segments: &[Segment],
    target: Target<'_>,
    errors: &mut Errors,
) -> Option<ZoneCampaigns> {
    let Some(spec) = target.zones.iter().find(|z| z.id == zone) else {
        errors.push(path, format!("the account has no zone {zone:?}"));
        return None;
    };
    if matches!(
        spec.kind,
        ZoneKind::RecommenderCategory | ZoneKind::RecommenderBrand
    ) {
        errors.push(
            path,
            format!(
                "zone {zone} is a {} zone; campaigns fill product, image and html zones",
                spec.kind.name()
            ),
        );
        return None;
    }
    let Some(items) = list.as_array() else {
        errors.push(
            path,
            format!("expected an array of campaigns, got {}", kind_of(list)),
        );
        return None;
    };
    if items.len() > MAX_CAMPAIGNS {
        errors.push(
            path,
            format!(
                "at most {MAX_CAMPAIGNS} campaigns per zone, got {}",
                items.len()
            ),
        );
        return None;
    }
    let before = errors.total();
    let mut campaigns: Vec<Campaign> = Vec::with_capacity(items.len());
    let mut reads = Reads::default();
    for (i, item) in items.iter().enumerate() {
        let at = index_path(path, i);
        if let Some(campaign) = read_campaign(item, &at, spec, segments, target, errors) {
            if campaigns.iter().any(|c| c.id == campaign.id) {
                errors.push(
                    format!("{at}.id"),
                    format!("campaign {:?} is given twice", campaign.id),
                );
                continue;
            }
            if let Some(segment) = campaign.segment.and_then(|s| segments.get(s)) {
                reads = reads.with(segment.rule.reads());
            }
            campaigns.push(campaign);
        }
    }
    (errors.total() == before).then(|| ZoneCampaigns {
        zone: zone.to_owned(),
        version: 0,
        campaigns,
        reads,
    })
}

fn read_campaign(
    item: &Value,
    path: &str,
    spec: &ZoneSpec,
    segments: &[Segment],
    target: Target<'_>,
    errors: &mut Errors,
) -> Option<Campaign> {
    let fields = Fields::of(item, path, KeyMatch::Exact, errors)?;
    only(
        &fields,
        item,
        &[
            "id", "name", "enabled", "segment", "schedule", "minItems", "content",
        ],
        errors,
    )?;
    let before = errors.total();
    let id = identifier(&fields, "id", errors);
    let name = fields.opt_str("name", errors).unwrap_or_default();
    if name.len() > MAX_NAME_LEN {
        errors.push(
            fields.path_of("name"),
            format!("must be at most {MAX_NAME_LEN} bytes"),
        );
    }
    let enabled = fields.opt_bool("enabled", errors).unwrap_or(true);
    let segment = match fields.opt_str("segment", errors) {
        None => None,
        Some(wanted) => match segments.iter().position(|s| s.id == wanted) {
            Some(at) => Some(at),
            None => {
                errors.push(
                    fields.path_of("segment"),
                    format!(
                        "no segment {wanted:?}; the account's segments: {}",
                        segments
                            .iter()
                            .map(|s| s.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                None
            }
        },
    };
    let schedule = match fields.get("schedule") {
        None => None,
        Some(value) => schedule(value, &fields.path_of("schedule"), target, errors),
    };
    let content = match fields.get("content") {
        Some(value) => content(value, &fields.path_of("content"), spec, errors),
        None => {
            errors.push(fields.path_of("content"), "required");
            None
        }
    };
    // Product content wants one item by default; html and images show with none.
    let default_min = match content {
        Some(Content::Html { .. } | Content::Image(_)) => 0,
        _ => 1,
    };
    let min_items = match fields.get("minItems") {
        None => default_min,
        Some(v) => whole(v, &fields.path_of("minItems"), 0, MAX_ITEMS as i64, errors)
            .map_or(default_min, |n| n as usize),
    };
    if let Some(content) = &content
        && let Some(content_spec) = content.spec()
        && min_items > content_spec.count
    {
        errors.push(
            fields.path_of("minItems"),
            format!(
                "must not be above the most items shown ({})",
                content_spec.count
            ),
        );
    }
    if errors.total() != before {
        return None;
    }
    Some(Campaign {
        name: if name.is_empty() {
            id.clone()?
        } else {
            name.to_owned()
        },
        id: id?,
        enabled,
        segment,
        schedule,
        content: content?,
        min_items,
    })
}

fn schedule(
    value: &Value,
    path: &str,
    target: Target<'_>,
    errors: &mut Errors,
) -> Option<Schedule> {
    let fields = Fields::of(value, path, KeyMatch::Exact, errors)?;
    only(&fields, value, &["start", "end", "days", "hours"], errors)?;
    let instant = |key: &str, errors: &mut Errors| -> Option<Option<UnixMillis>> {
        let Some(text) = fields.opt_str(key, errors) else {
            return Some(None);
        };
        match text.parse::<jiff::Timestamp>() {
            Ok(at) => Some(Some(at.as_millisecond())),
            Err(_) => {
                errors.push(
                    fields.path_of(key),
                    format!(
                        "expected an RFC 3339 instant such as 2026-11-28T00:00:00Z, got {text:?}"
                    ),
                );
                None
            }
        }
    };
    let start = instant("start", errors)?;
    let end = instant("end", errors)?;
    if let (Some(start), Some(end)) = (start, end)
        && end <= start
    {
        errors.push(fields.path_of("end"), "must be after start");
        return None;
    }
    let days = match fields.get("days") {
        None => EVERY_DAY,
        Some(value) => {
            let list = name_list(value, &fields.path_of("days"), errors)?;
            let mut days = 0u8;
            for (i, day) in list.iter().enumerate() {
                match DAY_NAMES.iter().position(|d| d.eq_ignore_ascii_case(day)) {
                    Some(at) => days |= 1 << at,
                    None => errors.push(
                        index_path(&fields.path_of("days"), i),
                        format!("expected one of {}, got {day:?}", DAY_NAMES.join(", ")),
                    ),
                }
            }
            days
        }
    };
    let hours = match fields.get("hours") {
        None => EVERY_HOUR,
        Some(value) => {
            let path = fields.path_of("hours");
            let Some(items) = value.as_array().filter(|a| !a.is_empty() && a.len() <= 24) else {
                errors.push(path, "expected an array of 1 to 24 hours (0 to 23)");
                return None;
            };
            let mut hours = 0u32;
            for (i, item) in items.iter().enumerate() {
                if let Some(hour) = whole(item, &index_path(&path, i), 0, 23, errors) {
                    hours |= 1 << hour;
                }
            }
            hours
        }
    };
    Some(Schedule {
        start,
        end,
        days,
        hours,
        zone: target.time_zone.clone(),
    })
}

fn content(value: &Value, path: &str, zone: &ZoneSpec, errors: &mut Errors) -> Option<Content> {
    let fields = Fields::of(value, path, KeyMatch::Exact, errors)?;
    let kind = fields.req_str("type", errors)?;
    let before = errors.total();
    let content = match kind {
        "automated" => {
            only(
                &fields,
                value,
                &["type", "strategy", "fallback", "count"],
                errors,
            )?;
            Content::Automated(strategies(&fields, zone, true, "count", errors)?)
        }
        "custom" => {
            only(
                &fields,
                value,
                &["type", "source", "filters", "boosts", "pins", "maxItems"],
                errors,
            )?;
            custom(&fields, zone, errors)?
        }
        "image" => {
            only(&fields, value, &["type", "images"], errors)?;
            let items = fields.req_array("images", errors)?;
            if items.is_empty() || items.len() > MAX_IMAGES {
                errors.push(
                    fields.path_of("images"),
                    format!("expected 1 to {MAX_IMAGES} images"),
                );
                return None;
            }
            let mut images = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let at = index_path(&fields.path_of("images"), i);
                let Some(image) = Fields::of(item, &at, KeyMatch::Exact, errors) else {
                    continue;
                };
                if only(&image, item, &["url", "link", "alt"], errors).is_none() {
                    continue;
                }
                let text = |key: &str, errors: &mut Errors| {
                    let value = image.opt_str(key, errors).unwrap_or_default();
                    if value.len() > 8192 {
                        errors.push(image.path_of(key), "must be at most 8192 bytes");
                    }
                    value.to_owned()
                };
                let url = image.req_nonempty_str("url", errors).map(str::to_owned);
                let link = text("link", errors);
                let alt = text("alt", errors);
                if let Some(url) = url {
                    images.push(Image { url, link, alt });
                }
            }
            Content::Image(images)
        }
        "html" => {
            only(
                &fields,
                value,
                &["type", "template", "strategy", "fallback", "count"],
                errors,
            )?;
            let template = fields.req_str("template", errors)?;
            if template.len() > MAX_TEMPLATE_LEN {
                errors.push(
                    fields.path_of("template"),
                    format!("must be at most {MAX_TEMPLATE_LEN} bytes"),
                );
                return None;
            }
            if let Err(e) = minijinja::Environment::new().template_from_str(template) {
                errors.push(
                    fields.path_of("template"),
                    format!("the template does not compile: {e}"),
                );
                return None;
            }
            Content::Html {
                template: template.to_owned(),
                spec: strategies(&fields, zone, false, "count", errors)?,
            }
        }
        other => {
            errors.push(
                fields.path_of("type"),
                format!("expected automated, custom, image or html, got {other:?}"),
            );
            return None;
        }
    };
    (errors.total() == before).then_some(content)
}

/// The zone's definition with a content's strategy, fallbacks and item count.
fn strategies(
    fields: &Fields<'_, '_>,
    zone: &ZoneSpec,
    required: bool,
    count_key: &str,
    errors: &mut Errors,
) -> Option<ZoneSpec> {
    let strategy = match fields.opt_str("strategy", errors) {
        Some(name) => Some(product_strategy(name, &fields.path_of("strategy"), errors)?),
        None if required => {
            errors.push(fields.path_of("strategy"), "required");
            return None;
        }
        None => None,
    };
    let mut fallback = Vec::new();
    if let Some(list) = fields.get("fallback") {
        let path = fields.path_of("fallback");
        let names = name_list(list, &path, errors)?;
        for (i, name) in names.iter().enumerate() {
            fallback.push(product_strategy(name, &index_path(&path, i), errors)?);
        }
    }
    let count = match fields.get(count_key) {
        None => zone.count,
        Some(v) => whole(v, &fields.path_of(count_key), 1, MAX_ITEMS as i64, errors)? as usize,
    };
    Some(ZoneSpec {
        strategy,
        fallback,
        count,
        ..zone.clone()
    })
}

fn product_strategy(name: &str, path: &str, errors: &mut Errors) -> Option<Strategy> {
    match Strategy::from_name(name) {
        Some(s) if s.kind() == ZoneKind::RecommenderProduct => Some(s),
        _ => {
            let names: Vec<&str> = Strategy::AVAILABLE
                .iter()
                .filter(|(_, s)| s.kind() == ZoneKind::RecommenderProduct)
                .map(|(n, _)| *n)
                .collect();
            errors.push(
                path,
                format!(
                    "expected a product strategy ({}), got {name:?}",
                    names.join(", ")
                ),
            );
            None
        }
    }
}

fn custom(fields: &Fields<'_, '_>, zone: &ZoneSpec, errors: &mut Errors) -> Option<Content> {
    let source_value = fields.get("source");
    let Some(source_value) = source_value else {
        errors.push(fields.path_of("source"), "required");
        return None;
    };
    let source_path = fields.path_of("source");
    let source_fields = Fields::of(source_value, &source_path, KeyMatch::Exact, errors)?;
    let (source, mut spec) = if let Some(manual) = source_fields.get("manual") {
        only(&source_fields, source_value, &["manual"], errors)?;
        let path = source_fields.path_of("manual");
        let manual_fields = Fields::of(manual, &path, KeyMatch::Exact, errors)?;
        only(
            &manual_fields,
            manual,
            &["products", "categories", "brands"],
            errors,
        )?;
        let list = |key: &str, errors: &mut Errors| -> Option<Vec<CompactString>> {
            match manual_fields.get(key) {
                None => Some(Vec::new()),
                Some(v) => Some(
                    name_list(v, &manual_fields.path_of(key), errors)?
                        .into_iter()
                        .map(CompactString::from)
                        .collect(),
                ),
            }
        };
        let products = list("products", errors)?;
        let categories = list("categories", errors)?;
        let brands = list("brands", errors)?;
        if products.is_empty() && categories.is_empty() && brands.is_empty() {
            errors.push(path, "expected products, categories or brands");
            return None;
        }
        (
            Source::Manual {
                products,
                categories,
                brands,
            },
            ZoneSpec {
                strategy: None,
                fallback: Vec::new(),
                ..zone.clone()
            },
        )
    } else {
        only(
            &source_fields,
            source_value,
            &["strategy", "fallback"],
            errors,
        )?;
        (
            Source::Strategy,
            strategies(&source_fields, zone, true, "-", errors)?,
        )
    };
    spec.count = match fields.get("maxItems") {
        None => zone.count,
        Some(v) => whole(v, &fields.path_of("maxItems"), 1, MAX_ITEMS as i64, errors)? as usize,
    };
    let mut filters = Vec::new();
    if let Some(list) = fields.get("filters") {
        let path = fields.path_of("filters");
        let items = limited(list, &path, MAX_FILTERS, errors)?;
        for (i, item) in items.iter().enumerate() {
            if let Some(f) = filter(item, &index_path(&path, i), errors) {
                filters.push(f);
            }
        }
    }
    let mut boosts = Vec::new();
    if let Some(list) = fields.get("boosts") {
        let path = fields.path_of("boosts");
        let items = limited(list, &path, MAX_FILTERS, errors)?;
        for (i, item) in items.iter().enumerate() {
            let at = index_path(&path, i);
            let Some(boost) = Fields::of(item, &at, KeyMatch::Exact, errors) else {
                continue;
            };
            if only(&boost, item, &["filter", "factor"], errors).is_none() {
                continue;
            }
            let factor = match boost.get("factor") {
                Some(v) => match v.as_f64() {
                    Some(f) if f.is_finite() && f > 0.0 && f <= 1000.0 => Some(f),
                    _ => {
                        errors.push(
                            boost.path_of("factor"),
                            "expected a number above 0 and at most 1000 (below 1 buries)",
                        );
                        None
                    }
                },
                None => {
                    errors.push(boost.path_of("factor"), "required");
                    None
                }
            };
            let f = match boost.get("filter") {
                Some(v) => filter(v, &boost.path_of("filter"), errors),
                None => {
                    errors.push(boost.path_of("filter"), "required");
                    None
                }
            };
            if let (Some(filter), Some(factor)) = (f, factor) {
                boosts.push(Boost { filter, factor });
            }
        }
    }
    let mut pins: Vec<Pin> = Vec::new();
    if let Some(list) = fields.get("pins") {
        let path = fields.path_of("pins");
        let items = limited(list, &path, MAX_PINS, errors)?;
        for (i, item) in items.iter().enumerate() {
            let at = index_path(&path, i);
            let Some(pin) = Fields::of(item, &at, KeyMatch::Exact, errors) else {
                continue;
            };
            if only(&pin, item, &["product", "place"], errors).is_none() {
                continue;
            }
            let product = identifier(&pin, "product", errors);
            let place = match pin.get("place") {
                Some(v) => whole(v, &pin.path_of("place"), 1, spec.count as i64, errors),
                None => {
                    errors.push(pin.path_of("place"), "required");
                    None
                }
            };
            if let (Some(product), Some(place)) = (product, place) {
                if pins.iter().any(|p| p.product == product.as_str()) {
                    errors.push(
                        pin.path_of("product"),
                        format!("product {product:?} is pinned twice"),
                    );
                    continue;
                }
                if pins.iter().any(|p| p.place == place as usize) {
                    errors.push(
                        pin.path_of("place"),
                        format!("place {place} is pinned twice"),
                    );
                    continue;
                }
                pins.push(Pin {
                    product: product.into(),
                    place: place as usize,
                });
            }
        }
    }
    pins.sort_by_key(|p| p.place);
    Some(Content::Custom(Box::new(Custom {
        source,
        filters,
        boosts,
        pins,
        spec,
    })))
}

fn limited<'v>(
    value: &'v Value,
    path: &str,
    max: usize,
    errors: &mut Errors,
) -> Option<&'v Vec<Value>> {
    match value.as_array() {
        Some(items) if items.len() <= max => Some(items),
        Some(items) => {
            errors.push(path, format!("at most {max}, got {}", items.len()));
            None
        }
        None => {
            errors.push(path, format!("expected an array, got {}", kind_of(value)));
            None
        }
    }
}

/// The kinds of filter, as the document names them.
pub const FILTER_KINDS: [&str; 11] = [
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
];

fn filter(value: &Value, path: &str, errors: &mut Errors) -> Option<Filter> {
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
        "categoryIn" => Filter::CategoryIn(names(inner, &at, errors)?),
        "categoryNotIn" => Filter::CategoryNotIn(names(inner, &at, errors)?),
        "brandIn" => Filter::BrandIn(names(inner, &at, errors)?),
        "brandNotIn" => Filter::BrandNotIn(names(inner, &at, errors)?),
        "searchTag" => Filter::SearchTag(names(inner, &at, errors)?),
        "price" => {
            let range = Fields::of(inner, &at, KeyMatch::Exact, errors)?;
            only(&range, inner, &["min", "max"], errors)?;
            let min = bounded(&range, "min", errors)?;
            let max = bounded(&range, "max", errors)?;
            if min.is_none() && max.is_none() {
                errors.push(&at, "expected \"min\", \"max\" or both");
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
            if flag(errors)? != true {
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
            Some(p) if p.is_finite() && p >= 0.0 && p <= 1000.0 => {
                Filter::PriceWithin { percent: p }
            }
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

/// The rule of a draft segment, from a body `{"rule": {...}}` (for its size).
pub fn read_rule(
    body: &Value,
    errors: &mut Errors,
) -> Option<vitrine_engine::campaign::segment::Condition> {
    let fields = Fields::of(body, "", KeyMatch::Exact, errors)?;
    only(&fields, body, &["rule"], errors)?;
    let Some(rule) = fields.get("rule") else {
        errors.push("rule", "required");
        return None;
    };
    rules::condition(rule, "rule", 1, &mut 0, errors)
}
