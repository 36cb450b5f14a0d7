//! Reading a zone's campaign list: each campaign's audience, schedule and content, its
//! custom recommender's source, filters, boosts and pins, every problem with its path.

use compact_str::CompactString;
use serde_json::Value;
use vitrine_engine::campaign::content::{Boost, Content, Custom, Image, Pin, Source};
use vitrine_engine::campaign::schedule::{DAY_NAMES, EVERY_DAY, EVERY_HOUR, Schedule};
use vitrine_engine::campaign::segment::Reads;
use vitrine_engine::campaign::{Campaign, Segment, ZoneCampaigns};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::zone::{Strategy, ZoneKind, ZoneSpec};
use vitrine_fields::{Errors, Fields, KeyMatch, Presence, index_path, kind_of};

use super::filters::filter;
use super::grammar::{
    MAX_CAMPAIGNS, MAX_FILTERS, MAX_IMAGES, MAX_ITEMS, MAX_NAME_LEN, MAX_PINS, MAX_TEMPLATE_LEN,
    Target, display_name, identifier,
};
use super::rules::{name_list, only, whole};

/// A zone's campaign list.
pub(super) fn read_list(
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
        key: vitrine_engine::campaign::zone_key(zone),
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
            "id", "name", "title", "enabled", "segment", "schedule", "minItems", "content",
        ],
        errors,
    )?;
    let before = errors.total();
    let id = identifier(&fields, "id", errors);
    let name = display_name(&fields, errors);
    let title = zone_title(&fields, errors);
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
    let id = id?;
    Some(Campaign {
        name: if name.is_empty() {
            id.clone()
        } else {
            name.to_owned()
        },
        variant: vitrine_engine::account::campaign_variant(&id),
        id,
        title,
        enabled,
        segment,
        schedule,
        content: content?,
        min_items,
    })
}

/// A campaign's `title`, the zone's title while it is shown: at most
/// [`MAX_NAME_LEN`] bytes, no control characters; empty or absent: none.
fn zone_title(fields: &Fields<'_, '_>, errors: &mut Errors) -> Option<String> {
    let title = fields.opt_str("title", errors)?;
    if title.len() > MAX_NAME_LEN || title.chars().any(char::is_control) {
        errors.push(
            fields.path_of("title"),
            format!("expected at most {MAX_NAME_LEN} bytes without control characters"),
        );
        return None;
    }
    (!title.trim().is_empty()).then(|| title.to_owned())
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
            Content::Automated(strategies(
                &fields,
                zone,
                Presence::Required,
                "count",
                errors,
            )?)
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
            if let Err(e) = crate::templates::check(template) {
                errors.push(
                    fields.path_of("template"),
                    format!("the template does not compile: {e}"),
                );
                return None;
            }
            Content::Html {
                template: template.to_owned(),
                spec: strategies(&fields, zone, Presence::Optional, "count", errors)?,
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
pub(super) fn strategies(
    fields: &Fields<'_, '_>,
    zone: &ZoneSpec,
    strategy: Presence,
    count_key: &str,
    errors: &mut Errors,
) -> Option<ZoneSpec> {
    let strategy = match fields.opt_str("strategy", errors) {
        Some(name) => Some(product_strategy(name, &fields.path_of("strategy"), errors)?),
        None if strategy == Presence::Required => {
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

pub(super) fn product_strategy(name: &str, path: &str, errors: &mut Errors) -> Option<Strategy> {
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
            strategies(&source_fields, zone, Presence::Required, "-", errors)?,
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
        interned: Default::default(),
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
