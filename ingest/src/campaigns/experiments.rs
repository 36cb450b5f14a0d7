//! The campaign document's experiments: a `PUT` body read into an
//! [`ExperimentDefinition`] (every problem with its path), the life of an experiment
//! (start, stop, end, delete) as changes of the part, and the compiled
//! [`Experiment`]s with their variants' own campaign lists.
//!
//! Rules: two to [`MAX_VARIANTS`] variants with unique names; shares from 1 to 100
//! (relative); at most one experiment that has not ended per zone; a running or
//! stopped experiment's variants cannot change (its results would mix two tests), only
//! its name; only a draft can be deleted (an ended one keeps its results); an ended one
//! never starts again. Starting records the moment, and so does stopping or ending: the
//! runs are what the results read.

use serde_json::Value;
use vitrine_engine::campaign::document::CampaignDefinition;
use vitrine_engine::campaign::{ZoneCampaigns, zone_key};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::experiment::definition::{
    ExperimentDefinition, Run, Status, VariantDefinition, VariantKind,
};
use vitrine_engine::experiment::{Experiment, Variant};
use vitrine_engine::zone::{Strategy, ZoneKind};
use vitrine_fields::{Errors, Fields, KeyMatch, Presence, index_path};

use super::content::{product_strategy, read_list, strategies};
use super::grammar::{Against, MAX_NAME_LEN, definitions, display_name};
use super::rules::{only, whole};

/// Variants an experiment has at most.
pub const MAX_VARIANTS: usize = 4;
/// Experiments an account keeps at most (ended ones included).
pub const MAX_EXPERIMENTS: usize = 200;
/// Strategies a `none` variant may fill with: none of them reads the shopper.
pub const NON_PERSONAL: [&str; 5] = [
    "trending",
    "top_sellers",
    "new_arrivals",
    "on_offer",
    "category_top",
];

/// What is done to one experiment.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// Created, or edited (a `PUT` body).
    Put(&'a Value),
    /// Started, or started again after a stop.
    Start,
    /// Stopped: the zone filled as without it; it may start again.
    Stop,
    /// Ended for good.
    End,
    /// Deleted (a draft only).
    Delete,
}

impl Action<'_> {
    /// Its name, as the audit log says it.
    pub fn name(self) -> &'static str {
        match self {
            Action::Put(_) => "saved",
            Action::Start => "started",
            Action::Stop => "stopped",
            Action::End => "ended",
            Action::Delete => "deleted",
        }
    }
}

/// The experiments with `action` done to experiment `id` at `now`; errors name paths in
/// the body, or the rule broken.
pub fn act(
    current: &[ExperimentDefinition],
    id: &str,
    action: Action<'_>,
    now: UnixMillis,
    against: Against<'_>,
) -> Result<Vec<ExperimentDefinition>, Errors> {
    let mut errors = Errors::default();
    let mut list = current.to_vec();
    let at = list.iter().position(|e| e.id == id);
    let missing = |errors: &mut Errors| {
        errors.push("id", format!("no experiment {id:?}"));
        Err(std::mem::take(errors))
    };
    match action {
        Action::Put(body) => {
            let written = read_experiment(id, body, against, &mut errors);
            let Some(mut written) = written.filter(|_| errors.is_empty()) else {
                return Err(errors);
            };
            match at.and_then(|at| list.get_mut(at)) {
                Some(existing) => {
                    if existing.status != Status::Draft
                        && (existing.variants != written.variants || existing.zone != written.zone)
                    {
                        errors.push(
                            "variants",
                            format!(
                                "experiment {id:?} is {}: only its name can change (its results would mix two tests); end it and create another",
                                existing.status.name()
                            ),
                        );
                        return Err(errors);
                    }
                    existing.name = written.name;
                    if existing.status == Status::Draft {
                        existing.zone = written.zone;
                        existing.variants = written.variants;
                    }
                }
                None => {
                    if list.len() >= MAX_EXPERIMENTS {
                        errors.push(
                            "id",
                            format!("the account keeps at most {MAX_EXPERIMENTS} experiments"),
                        );
                        return Err(errors);
                    }
                    written.status = Status::Draft;
                    written.runs = Vec::new();
                    list.push(written);
                }
            }
        }
        Action::Delete => {
            let Some(at) = at else {
                return missing(&mut errors);
            };
            if list.get(at).is_some_and(|e| e.status != Status::Draft) {
                errors.push(
                    "status",
                    "only a draft can be deleted: end it instead (its results stay)",
                );
                return Err(errors);
            }
            list.remove(at);
        }
        Action::Start | Action::Stop | Action::End => {
            let Some(experiment) = at.and_then(|at| list.get_mut(at)) else {
                return missing(&mut errors);
            };
            let from = experiment.status;
            let allowed = match action {
                Action::Start => matches!(from, Status::Draft | Status::Stopped),
                Action::Stop => from == Status::Running,
                _ => matches!(from, Status::Running | Status::Stopped),
            };
            if !allowed {
                errors.push(
                    "status",
                    format!(
                        "experiment {id:?} is {}: it cannot be {}",
                        from.name(),
                        action.name()
                    ),
                );
                return Err(errors);
            }
            match action {
                Action::Start => {
                    experiment.status = Status::Running;
                    experiment.runs.push(Run {
                        from: now,
                        to: None,
                    });
                }
                _ => {
                    if let Some(run) = experiment.runs.last_mut()
                        && run.to.is_none()
                    {
                        run.to = Some(now);
                    }
                    experiment.status = if matches!(action, Action::Stop) {
                        Status::Stopped
                    } else {
                        Status::Ended
                    };
                }
            }
        }
    }
    // One experiment that has not ended per zone.
    for (i, experiment) in list.iter().enumerate() {
        let rival = list
            .iter()
            .take(i)
            .find(|e| e.zone == experiment.zone && e.status != Status::Ended);
        if experiment.status != Status::Ended
            && let Some(rival) = rival
        {
            errors.push(
                "zone",
                format!(
                    "zone {} already has experiment {:?} ({}): a zone runs one experiment at a time; end it first",
                    experiment.zone,
                    rival.id,
                    rival.status.name()
                ),
            );
            return Err(errors);
        }
    }
    Ok(list)
}

/// An experiment from a `PUT` body: `{"name"?, "zone", "variants": [...]}`.
fn read_experiment(
    id: &str,
    body: &Value,
    against: Against<'_>,
    errors: &mut Errors,
) -> Option<ExperimentDefinition> {
    if id.is_empty() || id.len() > MAX_NAME_LEN || id.contains('/') {
        errors.push(
            "id",
            format!("expected 1 to {MAX_NAME_LEN} bytes without '/'"),
        );
    }
    let fields = Fields::of(body, "", KeyMatch::Exact, errors)?;
    only(&fields, body, &["name", "zone", "variants"], errors)?;
    let name = display_name(&fields, errors);
    let zone = fields.req_nonempty_str("zone", errors)?;
    let Some(spec) = against.target.zones.iter().find(|z| z.id == zone) else {
        errors.push("zone", format!("the account has no zone {zone:?}"));
        return None;
    };
    if spec.kind != ZoneKind::RecommenderProduct {
        errors.push(
            "zone",
            format!(
                "zone {zone} is a {} zone; experiments split product zones",
                spec.kind.name()
            ),
        );
        return None;
    }
    let items = fields.req_array("variants", errors)?;
    if !(2..=MAX_VARIANTS).contains(&items.len()) {
        errors.push(
            "variants",
            format!("expected 2 to {MAX_VARIANTS} variants, got {}", items.len()),
        );
        return None;
    }
    let mut variants: Vec<VariantDefinition> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = index_path("variants", i);
        let Some(variant) = read_variant(item, &path, zone, against, errors) else {
            continue;
        };
        if variants.iter().any(|v| v.name == variant.name) {
            errors.push(
                format!("{path}.name"),
                format!("variant {:?} is named twice", variant.name),
            );
        }
        variants.push(variant);
    }
    Some(ExperimentDefinition {
        id: id.to_owned(),
        name: (!name.is_empty()).then(|| name.to_owned()),
        zone: zone.to_owned(),
        status: Status::Draft,
        runs: Vec::new(),
        variants,
    })
}

fn read_variant(
    value: &Value,
    path: &str,
    zone: &str,
    against: Against<'_>,
    errors: &mut Errors,
) -> Option<VariantDefinition> {
    let fields = Fields::of(value, path, KeyMatch::Exact, errors)?;
    only(
        &fields,
        value,
        &[
            "name",
            "share",
            "kind",
            "strategy",
            "fallback",
            "count",
            "campaigns",
        ],
        errors,
    )?;
    let name = fields.req_nonempty_str("name", errors)?;
    if name.len() > MAX_NAME_LEN || name.contains('/') {
        errors.push(
            fields.path_of("name"),
            format!("expected 1 to {MAX_NAME_LEN} bytes without '/'"),
        );
    }
    let share = match fields.get("share") {
        Some(v) => whole(v, &fields.path_of("share"), 1, 100, errors)? as u32,
        None => {
            errors.push(fields.path_of("share"), "required");
            return None;
        }
    };
    let kind_name = fields.req_str("kind", errors)?;
    let kind = match kind_name {
        "live" => VariantKind::Live,
        "draft" => VariantKind::Draft,
        "strategy" => VariantKind::Strategy,
        "none" => VariantKind::None,
        other => {
            errors.push(
                fields.path_of("kind"),
                format!(
                    "expected one of {}, got {other:?}",
                    VariantKind::NAMES.join(", ")
                ),
            );
            return None;
        }
    };
    let allowed: &[&str] = match kind {
        VariantKind::Live => &[],
        VariantKind::Draft => &["campaigns"],
        VariantKind::Strategy => &["strategy", "fallback", "count"],
        VariantKind::None => &["strategy", "count"],
    };
    for key in ["strategy", "fallback", "count", "campaigns"] {
        if fields.get(key).is_some() && !allowed.contains(&key) {
            errors.push(
                fields.path_of(key),
                format!("not for a {kind_name} variant"),
            );
        }
    }
    let spec = against.target.zones.iter().find(|z| z.id == zone)?;
    let mut campaigns = None;
    match kind {
        VariantKind::Strategy => {
            strategies(&fields, spec, Presence::Required, "count", errors)?;
        }
        VariantKind::None => {
            if let Some(name) = fields.opt_str("strategy", errors)
                && !NON_PERSONAL.contains(&name)
            {
                errors.push(
                    fields.path_of("strategy"),
                    format!(
                        "expected a strategy that reads no shopper ({}), got {name:?}",
                        NON_PERSONAL.join(", ")
                    ),
                );
            }
            strategies(&fields, spec, Presence::Optional, "count", errors)?;
        }
        VariantKind::Draft => {
            let Some(list) = fields.get("campaigns") else {
                errors.push(fields.path_of("campaigns"), "required");
                return None;
            };
            let list_path = fields.path_of("campaigns");
            read_list(
                zone,
                list,
                &list_path,
                against.segments,
                against.target,
                errors,
            )?;
            campaigns = Some(definitions::<Vec<CampaignDefinition>>(list, &list_path).ok()?);
        }
        VariantKind::Live => {}
    }
    let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
    let fallback = fields
        .get("fallback")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        });
    Some(VariantDefinition {
        name: name.to_owned(),
        share,
        kind,
        strategy: text("strategy"),
        fallback,
        count: fields.get("count").and_then(Value::as_u64),
        campaigns,
    })
}

/// The compiled experiments of the part (those running), and the lists of
/// their `draft` variants, to be placed in the set's zones from `first_list` on. An
/// experiment that no longer compiles (its zone gone after a reload) is left out, its
/// problems in `errors`.
pub fn compile(
    list: &[ExperimentDefinition],
    first_list: usize,
    against: Against<'_>,
    errors: &mut Errors,
) -> (Vec<Experiment>, Vec<ZoneCampaigns>) {
    let mut experiments = Vec::new();
    let mut lists = Vec::new();
    for (e, definition) in list.iter().enumerate() {
        // Only a running experiment fills its zone: the others, however many ended
        // ones an account keeps, cost a request nothing (their results are read from
        // the analytics by the definition).
        if definition.status != Status::Running {
            continue;
        }
        let Some(start) = definition.runs.last().map(|run| run.from) else {
            continue;
        };
        let path = format!("experiments.list[{e}]");
        let Some(spec) = against
            .target
            .zones
            .iter()
            .find(|z| z.id == definition.zone)
        else {
            errors.push(
                path,
                format!("the account has no zone {:?}", definition.zone),
            );
            continue;
        };
        let mut variants = Vec::with_capacity(definition.variants.len());
        let mut own_lists = Vec::new();
        for (i, variant) in definition.variants.iter().enumerate() {
            let at = format!("{path}.variants[{i}]");
            let named = variant
                .strategy
                .as_deref()
                .map(|name| product_strategy(name, &format!("{at}.strategy"), errors));
            let fallback: Vec<Strategy> = variant
                .fallback
                .iter()
                .flatten()
                .filter_map(|name| Strategy::from_name(name))
                .collect();
            let count = variant
                .count
                .map_or(spec.count, |c| usize::try_from(c).unwrap_or(spec.count));
            let mut compiled = Variant {
                name: definition.counted_as(&variant.name),
                weight: variant.share,
                spec: spec.clone(),
                campaigns: false,
                list: None,
            };
            match variant.kind {
                VariantKind::Live => compiled.campaigns = true,
                VariantKind::Strategy => {
                    compiled.spec.strategy = named.unwrap_or(spec.strategy);
                    compiled.spec.fallback = fallback;
                    compiled.spec.count = count;
                }
                VariantKind::None => {
                    compiled.spec.strategy = named.unwrap_or(Some(Strategy::Trending));
                    compiled.spec.fallback = Vec::new();
                    compiled.spec.count = count;
                }
                VariantKind::Draft => {
                    let value = serde_json::to_value(variant.campaigns.as_deref().unwrap_or(&[]))
                        .unwrap_or_default();
                    let list_path = format!("{at}.campaigns");
                    let Some(list) = read_list(
                        &definition.zone,
                        &value,
                        &list_path,
                        against.segments,
                        against.target,
                        errors,
                    ) else {
                        continue;
                    };
                    let name = format!("{}#{}", definition.zone, compiled.name);
                    compiled.list = Some(first_list + lists.len() + own_lists.len());
                    own_lists.push(ZoneCampaigns {
                        key: zone_key(&name),
                        zone: name,
                        ..list
                    });
                }
            }
            variants.push(compiled);
        }
        if variants.len() != definition.variants.len() {
            continue;
        }
        lists.extend(own_lists);
        experiments.push(Experiment {
            id: definition.id.clone(),
            zone: definition.zone.clone(),
            start: Some(start),
            end: definition.runs.last().and_then(|run| run.to),
            variants,
            split: vitrine_engine::experiment::Split::Xxh3,
        });
    }
    (experiments, lists)
}
