//! `[[accounts.experiments]]`: A/B tests of a zone's strategy, each variant checked as
//! the zone it fills would be.

use vitrine_engine::experiment::{Experiment, Variant};
use vitrine_engine::zone::{ZoneKind, ZoneSpec};

use super::checks::Invalid;
use super::file::FileAccount;
use super::zones::zone_spec;

/// Longest experiment id or variant name.
pub(super) const MAX_EXPERIMENT_NAME: usize = 64;

/// An experiment id or variant name that is not 1 to [`MAX_EXPERIMENT_NAME`] letters,
/// digits, `-` or `_`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BadName(String);

impl std::fmt::Display for BadName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "must be 1 to {MAX_EXPERIMENT_NAME} letters, digits, '-' or '_', got {:?}",
            self.0
        )
    }
}

/// An experiment id or variant name: 1 to [`MAX_EXPERIMENT_NAME`] letters, digits, `-`
/// or `_`.
pub(super) fn check_experiment_name(name: &str) -> Result<(), BadName> {
    let fine = !name.is_empty()
        && name.len() <= MAX_EXPERIMENT_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if fine {
        Ok(())
    } else {
        Err(BadName(name.to_owned()))
    }
}

/// An account's `[[accounts.experiments]]`, validated against its zones: a product zone
/// each, 2 to 8 variants with unique names and weights 1..10000 (a variant's strategy,
/// fallback, count and history default to the zone's and are checked as the zone's
/// are), a start before the end, and no two experiments on one zone at the same time.
pub(super) fn experiments(
    account: &FileAccount,
    zones: &[ZoneSpec],
    i: usize,
) -> Result<Vec<Experiment>, Invalid> {
    let mut experiments: Vec<Experiment> = Vec::with_capacity(account.experiments.len());
    for (e, file) in account.experiments.iter().enumerate() {
        let key = |field: &str| format!("accounts[{i}].experiments[{e}].{field}");
        check_experiment_name(&file.id).map_err(|m| Invalid::at(key("id"), m))?;
        if experiments.iter().any(|x| x.id == file.id) {
            return Err(Invalid::at(
                key("id"),
                format!("experiment {:?} is defined twice", file.id),
            ));
        }
        let Some((z, zone)) = account
            .zones
            .iter()
            .enumerate()
            .find(|(_, z)| z.id == file.zone)
        else {
            let ids: Vec<&str> = zones.iter().map(|z| z.id.as_str()).collect();
            return Err(Invalid::at(
                key("zone"),
                format!(
                    "no zone {:?}; the account's zones: {}",
                    file.zone,
                    ids.join(", ")
                ),
            ));
        };
        let spec = zones
            .get(z)
            .ok_or_else(|| Invalid::at(key("zone"), "not found"))?;
        if !matches!(spec.kind, ZoneKind::RecommenderProduct | ZoneKind::Html)
            || spec.strategy.is_none()
        {
            return Err(Invalid::at(
                key("zone"),
                format!(
                    "zone {:?} shows no products from a strategy; experiments compare product strategies",
                    file.zone
                ),
            ));
        }
        let instant = |field: &str, text: &Option<String>| -> Result<Option<i64>, Invalid> {
            text.as_deref()
                .map(|t| {
                    vitrine_fields::parse_instant(t).ok_or_else(|| {
                        Invalid::at(
                            key(field),
                            format!("expected a date (YYYY-MM-DD) or an RFC 3339 time, got {t:?}"),
                        )
                    })
                })
                .transpose()
        };
        let start = instant("start", &file.start)?;
        let end = instant("end", &file.end)?;
        if let (Some(start), Some(end)) = (start, end)
            && start >= end
        {
            return Err(Invalid::at(key("end"), "must be after start".to_owned()));
        }
        if !(2..=8).contains(&file.variants.len()) {
            return Err(Invalid::at(
                key("variants"),
                format!("expected 2 to 8 variants, got {}", file.variants.len()),
            ));
        }
        let mut variants: Vec<Variant> = Vec::with_capacity(file.variants.len());
        for (v, variant) in file.variants.iter().enumerate() {
            let variant_key = |field: &str| format!("{}[{v}].{field}", key("variants"));
            check_experiment_name(&variant.name)
                .map_err(|m| Invalid::at(variant_key("name"), m))?;
            if variants.iter().any(|x| x.name == variant.name) {
                return Err(Invalid::at(
                    variant_key("name"),
                    format!("variant {:?} is given twice", variant.name),
                ));
            }
            let weight = variant.weight.unwrap_or(1);
            if !(1..=10_000).contains(&weight) {
                return Err(Invalid::at(
                    variant_key("weight"),
                    format!("must be between 1 and 10000, got {weight}"),
                ));
            }
            // The zone as this variant fills it, checked as a zone is.
            let mut as_zone = zone.clone();
            let recipe = match &variant.strategy {
                Some(strategy) => {
                    as_zone.strategy = Some(strategy.clone());
                    // A variant with its own strategy has its own recipe.
                    variant.recipe()
                }
                None => variant.recipe().or(zone.recipe()),
            };
            if let Some(fallback) = &variant.fallback {
                as_zone.fallback = fallback.clone();
            }
            if variant.count.is_some() {
                as_zone.count = variant.count;
            }
            let spec = zone_spec(&as_zone, recipe, &variant_key)?;
            variants.push(Variant {
                name: variant.name.clone(),
                weight: weight as u32,
                spec,
                campaigns: variant.campaigns.unwrap_or(false),
                list: None,
            });
        }
        let overlaps = |other: &Experiment| {
            other.zone == file.zone
                && other.start.is_none_or(|s| end.is_none_or(|e| s < e))
                && start.is_none_or(|s| other.end.is_none_or(|e| s < e))
        };
        if let Some(other) = experiments.iter().find(|x| overlaps(x)) {
            return Err(Invalid::at(
                key("zone"),
                format!(
                    "zone {:?} is already in experiment {:?} at the same time; give them \
                     start and end dates that do not overlap",
                    file.zone, other.id
                ),
            ));
        }
        experiments.push(Experiment {
            id: file.id.clone(),
            zone: file.zone.clone(),
            start,
            end,
            variants,
            split: vitrine_engine::experiment::Split::Sha256,
        });
    }
    Ok(experiments)
}
