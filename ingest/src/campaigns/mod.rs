//! Reading and compiling the campaign document (the engine's typed
//! [`CampaignDocument`]): a change's body is read and validated once (every problem with
//! its JSON path, nothing changed on any), its part compiled once into the engine's
//! [`CampaignSet`] (typed predicates, schedules in the account's time zone, zone
//! definitions for the content, so that nothing is parsed per request) while the other
//! parts keep what was compiled of them, and the document made with that part replaced.
//!
//! A part's `version` is the document version in which it last changed: its ETag.
//! `rules.rs` reads a segment's rule, `content.rs` a zone's campaign list and each
//! campaign's content, `diff.rs` says what changed between two versions; this file the
//! document's operations.

mod content;
pub mod diff;
pub mod experiments;
mod filters;
mod grammar;
pub mod holdout;
mod rules;

use serde_json::Value;
use vitrine_engine::campaign::document::{CampaignDocument, Part};
use vitrine_engine::campaign::{CampaignSet, Segment, ZoneCampaigns};
use vitrine_engine::catalogue::{Catalogue, UnixMillis};
use vitrine_fields::{Errors, Fields, KeyMatch, index_path, kind_of};

use content::read_list;
pub use diff::summary;
pub use filters::FILTER_KINDS;
pub use grammar::{
    Against, MAX_CAMPAIGNS, MAX_FILTERS, MAX_IMAGES, MAX_ITEMS, MAX_NAME_LEN, MAX_NAMES,
    MAX_NUMBER, MAX_PINS, MAX_SEGMENTS, MAX_TEMPLATE_LEN, Target,
};
use grammar::{definitions, display_name, identifier};
use rules::only;
pub use rules::{KINDS, MAX_CONDITIONS, MAX_DEPTH, read_rule};

/// Compiles a stored document (errors name paths in the stored form). Strict: any part
/// that does not compile refuses the whole.
pub fn compile(
    document: &CampaignDocument,
    version: u64,
    target: Target<'_>,
) -> Result<CampaignSet, Errors> {
    let (set, errors) = compile_parts(document, version, target);
    errors.into_result(set)
}

/// Compiles a stored document part by part: the set of every part that compiles, and
/// the errors of those that do not (left out, so that the others still apply: a zone
/// no longer configured, or no longer a product zone, after a reload).
pub fn compile_parts(
    document: &CampaignDocument,
    version: u64,
    target: Target<'_>,
) -> (CampaignSet, Errors) {
    let mut errors = Errors::default();
    let list = serde_json::to_value(&document.segments.list).unwrap_or_default();
    let segments = read_segments(&list, "segments.list", &mut errors);
    let set = compile_zones(document, segments, version, target, &mut errors);
    (set, errors)
}

/// Every zone's list of `document` compiled against `segments`, the errors of the
/// lists left out in `errors`.
fn compile_zones(
    document: &CampaignDocument,
    segments: Vec<Segment>,
    version: u64,
    target: Target<'_>,
    errors: &mut Errors,
) -> CampaignSet {
    let mut zones = Vec::new();
    for (zone, part) in &document.zones {
        // A zone whose list was removed keeps its version, not a list.
        let Some(list) = &part.campaigns else {
            continue;
        };
        let list = serde_json::to_value(list).unwrap_or_default();
        let path = format!("zones.{zone}.campaigns");
        if let Some(list) = read_list(zone, &list, &path, &segments, target, errors) {
            zones.push(ZoneCampaigns {
                version: part.version,
                ..list
            });
        }
    }
    let (experiments, lists) = experiments::compile(
        &document.experiments.list,
        zones.len(),
        Against {
            segments: &segments,
            target,
        },
        errors,
    );
    zones.extend(lists);
    CampaignSet {
        version,
        segments,
        zones,
        experiments,
        holdout: holdout::compile(document.experiments.holdout.as_ref()),
    }
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

/// A new document with the segments of a `PUT` body (`{"segments": [...]}`) at
/// `version`, and its set: the segments read and compiled once, every zone's list
/// compiled against them (a segment still used cannot go; a list that no longer
/// compiles for another reason is left out, as a reload leaves it). Errors name paths
/// in the body.
pub fn with_segments(
    current: &CampaignDocument,
    body: &Value,
    version: u64,
    target: Target<'_>,
) -> Result<(CampaignDocument, CampaignSet), Errors> {
    let mut errors = Errors::default();
    let list = member(body, "segments", &mut errors)?;
    let segments = read_segments(list, "segments", &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    // Every zone's list against the new segments: a removed one still in use is named.
    for (zone, part) in &current.zones {
        for (i, campaign) in part.campaigns.iter().flatten().enumerate() {
            if let Some(segment) = &campaign.segment
                && !segments.iter().any(|s| s.id == *segment)
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
    let document = current.with_segments(definitions(list, "segments")?, version);
    let set = compile_zones(&document, segments, version, target, &mut Errors::default());
    Ok((document, set))
}

/// The campaigns an account has now: its stored document and the set compiled from it,
/// which a change starts from.
#[derive(Debug, Clone, Copy)]
pub struct Installed<'a> {
    /// The stored document.
    pub document: &'a CampaignDocument,
    /// The set compiled from it.
    pub set: &'a CampaignSet,
}

/// A new document with the campaign list of a `PUT` body (`{"campaigns": [...]}`) for
/// `zone`, at `version`, and its set: the list read and compiled once, against the
/// segments of `set` (compiled from `current`), the other zones' lists as `set` has
/// them. Errors name paths in the body.
pub fn with_campaigns(
    Installed {
        document: current,
        set,
    }: Installed<'_>,
    zone: &str,
    body: &Value,
    version: u64,
    target: Target<'_>,
) -> Result<(CampaignDocument, CampaignSet), Errors> {
    let mut errors = Errors::default();
    let list = member(body, "campaigns", &mut errors)?;
    let compiled = read_list(zone, list, "campaigns", &set.segments, target, &mut errors);
    let Some(compiled) = compiled.filter(|_| errors.is_empty()) else {
        return Err(errors);
    };
    let document = current.with_zone(zone, Some(definitions(list, "campaigns")?), version);
    let set = with_zone(
        set,
        zone,
        Some(ZoneCampaigns {
            version,
            ..compiled
        }),
        version,
    );
    Ok((document, set))
}

/// A new document without `zone`'s list (the zone is filled as configured again), at
/// `version`, and its set (nothing compiled).
pub fn without_campaigns(
    Installed {
        document: current,
        set,
    }: Installed<'_>,
    zone: &str,
    version: u64,
) -> (CampaignDocument, CampaignSet) {
    (
        current.with_zone(zone, None, version),
        with_zone(set, zone, None, version),
    )
}

/// `set` with `zone`'s compiled list replaced (none: removed), as `version`; the lists
/// stay in the order of their zone ids, as [`compile`] makes them, the experiments'
/// lists after them (their positions moved with them).
fn with_zone(
    set: &CampaignSet,
    zone: &str,
    list: Option<ZoneCampaigns>,
    version: u64,
) -> CampaignSet {
    let own = set.zones.len() - experiment_lists(set);
    let mut zones: Vec<ZoneCampaigns> = set
        .zones
        .iter()
        .take(own)
        .filter(|z| z.zone != zone)
        .cloned()
        .collect();
    if let Some(list) = list {
        let at = zones.partition_point(|z| z.zone.as_str() < zone);
        zones.insert(at, list);
    }
    let moved = zones.len() as isize - own as isize;
    zones.extend(set.zones.iter().skip(own).cloned());
    let experiments = set
        .experiments
        .iter()
        .map(|experiment| {
            let mut experiment = experiment.clone();
            for variant in &mut experiment.variants {
                variant.list = variant.list.map(|at| at.saturating_add_signed(moved));
            }
            experiment
        })
        .collect();
    CampaignSet {
        version,
        segments: set.segments.clone(),
        zones,
        experiments,
        holdout: set.holdout.clone(),
    }
}

/// How many of `set`'s lists are experiments' (at its end).
fn experiment_lists(set: &CampaignSet) -> usize {
    set.experiments
        .iter()
        .flat_map(|e| &e.variants)
        .filter(|v| v.list.is_some())
        .count()
}

/// A new document with `action` done to experiment `id` at `now`, at `version`, and its
/// set: the experiments compiled again against `set`'s segments, the zones' lists as
/// `set` has them. Errors name paths in the body, or the rule broken.
pub fn with_experiment(
    Installed {
        document: current,
        set,
    }: Installed<'_>,
    id: &str,
    action: experiments::Action<'_>,
    version: u64,
    now: UnixMillis,
    target: Target<'_>,
) -> Result<(CampaignDocument, CampaignSet), Errors> {
    let list = experiments::act(
        &current.experiments.list,
        id,
        action,
        now,
        Against {
            segments: &set.segments,
            target,
        },
    )?;
    let document = current.with_experiments(list, version);
    Ok((
        document.clone(),
        with_experiments(set, &document, version, target),
    ))
}

/// `set` with the experiments of `document` compiled again (against `set`'s segments).
fn with_experiments(
    set: &CampaignSet,
    document: &CampaignDocument,
    version: u64,
    target: Target<'_>,
) -> CampaignSet {
    let own = set.zones.len() - experiment_lists(set);
    let mut zones: Vec<ZoneCampaigns> = set.zones.iter().take(own).cloned().collect();
    let (experiments, lists) = experiments::compile(
        &document.experiments.list,
        zones.len(),
        Against {
            segments: &set.segments,
            target,
        },
        &mut Errors::default(),
    );
    zones.extend(lists);
    CampaignSet {
        version,
        segments: set.segments.clone(),
        zones,
        experiments,
        holdout: holdout::compile(document.experiments.holdout.as_ref()),
    }
}

/// A new document with `action` done to the store-wide holdout at `now`, at `version`,
/// and its set (the experiments part compiled again). Errors name the body's fields.
pub fn with_holdout(
    Installed {
        document: current,
        set,
    }: Installed<'_>,
    action: holdout::Action<'_>,
    version: u64,
    now: UnixMillis,
    target: Target<'_>,
) -> Result<(CampaignDocument, CampaignSet), Errors> {
    let holdout = holdout::act(current.experiments.holdout.as_ref(), action, now)?;
    let document = current.with_holdout(holdout, version);
    let set = with_experiments(set, &document, version, target);
    Ok((document, set))
}

/// The set of a stored document that changed only in `part` from the one `previous`
/// was compiled from: for a zone's list, that list compiled against `previous`'s
/// segments and the other lists kept; otherwise the whole document, part by part (a
/// part that does not compile is left out).
pub fn compile_change(
    document: &CampaignDocument,
    previous: &CampaignSet,
    part: Option<Part<'_>>,
    version: u64,
    target: Target<'_>,
) -> CampaignSet {
    match part {
        Some(Part::Zone(zone)) => {
            let list = document.zone_list(zone).map(|list| {
                let list = serde_json::to_value(list).unwrap_or_default();
                let path = format!("zones.{zone}.campaigns");
                let mut errors = Errors::default();
                read_list(zone, &list, &path, &previous.segments, target, &mut errors)
            });
            let compiled = list.flatten().map(|compiled| ZoneCampaigns {
                version: document.zone_version(zone),
                ..compiled
            });
            with_zone(previous, zone, compiled, version)
        }
        Some(Part::Experiments) => with_experiments(previous, document, version, target),
        _ => compile_parts(document, version, target).0,
    }
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

#[cfg(test)]
mod tests {
    use serde_json::json;
    use vitrine_engine::zone::Strategy;

    use super::*;

    /// A change's part compiled alone, the others kept, makes the set a whole compile
    /// of the new document makes (what a replica and a restart's replay rely on).
    #[test]
    fn a_part_compiled_alone_makes_the_set_the_whole_document_makes() {
        let zones = [
            vitrine_testkit::zone("CP-01", Strategy::Trending, 8),
            vitrine_testkit::zone("HP-01", Strategy::Trending, 8),
            vitrine_testkit::zone("PP-01", Strategy::Similar, 4),
        ];
        let time_zone = jiff::tz::TimeZone::UTC;
        let target = Target {
            zones: &zones,
            time_zone: &time_zone,
        };
        let campaign = |id: &str| json!({"id": id, "segment": "vip", "content": {"type": "automated", "strategy": "trending"}});
        let segments = json!({"segments": [{"id": "vip", "rule": {"orders": {"min": 2}}}]});
        let empty = CampaignDocument::default();
        let (document, set) = with_segments(&empty, &segments, 1, target).expect("segments");
        let (document, set) = with_campaigns(
            Installed {
                document: &document,
                set: &set,
            },
            "PP-01",
            &json!({"campaigns": [campaign("p")]}),
            2,
            target,
        )
        .expect("PP-01");
        let (document, set) = with_campaigns(
            Installed {
                document: &document,
                set: &set,
            },
            "CP-01",
            &json!({"campaigns": [campaign("c")]}),
            3,
            target,
        )
        .expect("CP-01");
        let (next, changed) = with_campaigns(
            Installed {
                document: &document,
                set: &set,
            },
            "HP-01",
            &json!({"campaigns": [campaign("h1"), campaign("h2")]}),
            4,
            target,
        )
        .expect("HP-01");
        let whole = compile(&next, 4, target).expect("compiles");
        assert_eq!(changed, whole);
        let replica = compile_change(&next, &set, Some(Part::Zone("HP-01")), 4, target);
        assert_eq!(replica, whole);
        assert_eq!(
            whole
                .zones
                .iter()
                .map(|z| z.zone.as_str())
                .collect::<Vec<_>>(),
            ["CP-01", "HP-01", "PP-01"]
        );
        // A list removed: nothing compiled, the same set as a whole compile.
        let (gone, without) = without_campaigns(
            Installed {
                document: &next,
                set: &changed,
            },
            "CP-01",
            5,
        );
        assert_eq!(without, compile(&gone, 5, target).expect("compiles"));
        assert_eq!(gone.zone_version("CP-01"), 5);
        assert_eq!(gone.zone_list("CP-01"), None);
        // The stored document reads back as the same typed document.
        assert_eq!(CampaignDocument::from_text(&gone.to_text()), gone);
    }

    /// A segment still used cannot go; the document and set are untouched.
    #[test]
    fn a_segment_in_use_cannot_be_removed() {
        let zones = [vitrine_testkit::zone("HP-01", Strategy::Trending, 8)];
        let time_zone = jiff::tz::TimeZone::UTC;
        let target = Target {
            zones: &zones,
            time_zone: &time_zone,
        };
        let segments = json!({"segments": [{"id": "vip", "rule": {"orders": {"min": 2}}}]});
        let (document, set) =
            with_segments(&CampaignDocument::default(), &segments, 1, target).expect("segments");
        let body = json!({"campaigns": [{"id": "h", "segment": "vip", "content": {"type": "automated", "strategy": "trending"}}]});
        let (document, _) = with_campaigns(
            Installed {
                document: &document,
                set: &set,
            },
            "HP-01",
            &body,
            2,
            target,
        )
        .expect("list");
        let errors =
            with_segments(&document, &json!({"segments": []}), 3, target).expect_err("in use");
        assert!(
            errors
                .joined()
                .contains("used by zone HP-01 (campaigns[0])")
        );
    }
}
