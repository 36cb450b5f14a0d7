//! The campaigns of an account through the admin API: its segments, each zone's ordered
//! campaign list, the history of versions and restores, and a segment's size.
//!
//! - `GET /admin/api/accounts/{key}/segments`, `PUT` the same to replace them all.
//! - `GET /admin/api/accounts/{key}/zones/{zone}/campaigns`, `PUT` to replace the list.
//! - `GET /admin/api/accounts/{key}/segments/{id}/size`; `POST
//!   /admin/api/accounts/{key}/segments/size` with `{"rule": {...}}` for a draft rule.
//! - `GET /admin/api/accounts/{key}/campaigns/history`, `GET
//!   .../campaigns/history/{version}`, `POST .../campaigns/restore` with `{"version": n}`
//!   (the whole document) or `{"version": n, "part": "segments" or "zone:<id>"}`, and
//!   `GET .../campaigns/restore?version=n&part=...`: what it would change.
//!
//! Each part's version is its `ETag`; a write with an `If-Match` that is no longer
//! current is refused with 412 and changes nothing. Validation errors are a 400 listing
//! each problem with its JSON path; ids the catalogue does not know are `warnings` in
//! the 200. Writes need an editor token and run on the blocking pool (they fsync).

use http::HeaderMap;
use serde_json::{Value, json};
use vitrine_engine::campaign::CampaignDocument;
use vitrine_engine::catalogue::UnixMillis;
use vitrine_ingest::campaigns;
use vitrine_ingest::jobs::{
    CampaignChange, ChangeRequest, ExperimentAction, HoldoutAction, RestorePart,
};

use super::request::Query;
use crate::api::Reply;
use crate::config::AdminToken;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// `GET .../segments`.
pub(super) fn segments(entry: &AccountEntry) -> Reply {
    let (document, _) = entry.jobs.campaign_document();
    let version = document.segments_version();
    with_etag(
        json!({"version": version, "segments": document.segments.list}),
        version,
    )
}

/// `GET .../zones/{zone}/campaigns`: the live list, or for a zone that never had one,
/// the automated campaign for everyone its configuration makes.
pub(super) fn zone_campaigns(entry: &AccountEntry, zone: &str) -> Result<Reply, ApiError> {
    let settings = entry.account.settings();
    let spec = settings
        .zones
        .iter()
        .find(|z| z.id == zone)
        .ok_or_else(|| no_zone(entry, zone))?;
    let (document, _) = entry.jobs.campaign_document();
    let version = document.zone_version(zone);
    let live = document.zone_list(zone).map(|list| json!(list));
    let (source, list) = match live {
        Some(list) => ("live", list),
        None => {
            // As a `PUT` takes it back: a zone without fallbacks has no `fallback`.
            let mut content = match spec.strategy {
                Some(strategy) => json!({
                    "type": "automated",
                    "strategy": strategy.name(),
                    "count": spec.count,
                }),
                None => Value::Null,
            };
            if !spec.fallback.is_empty()
                && let Some(fields) = content.as_object_mut()
            {
                let names: Vec<&str> = spec.fallback.iter().map(|s| s.name()).collect();
                fields.insert("fallback".to_owned(), json!(names));
            }
            let list = if content.is_null() {
                json!([])
            } else {
                json!([{"id": "configured", "name": format!("{} (from the configuration)", spec.title), "content": content}])
            };
            ("configuration", list)
        }
    };
    let mut answer = json!({
        "zone": zone,
        "type": spec.kind.name(),
        "version": version,
        "source": source,
        "campaigns": list,
        "timeZone": entry.config.time_zone_name,
    });
    // What each campaign is now: live, scheduled, ended or paused.
    if let Some(list) = entry.account.campaigns().compiled().zone(zone) {
        let now = crate::clock::now_millis();
        let status: Vec<Value> = list
            .campaigns
            .iter()
            .map(|c| {
                let status = if !c.enabled {
                    "paused"
                } else {
                    match c.schedule.as_ref().map(|s| s.runs_at(now)) {
                        None | Some(Ok(())) => "live",
                        Some(Err(vitrine_engine::campaign::schedule::Outside::Ended)) => "ended",
                        Some(Err(_)) => "scheduled",
                    }
                };
                // When it starts or stops running next, for the list.
                let next =
                    c.schedule.as_ref().and_then(|s| s.next_change(now)).map(
                        |(at, starts)| json!({"at": crate::clock::rfc3339(at), "starts": starts}),
                    );
                json!({"id": c.id, "status": status, "next": next})
            })
            .collect();
        if let Some(fields) = answer.as_object_mut() {
            fields.insert("status".to_owned(), Value::Array(status));
        }
    }
    Ok(with_etag(answer, version))
}

/// `GET /admin/api/campaigns/vocabulary`: the names the campaign document takes, as this
/// server reads them, so that the console offers exactly these: the strategies that
/// fill product zones, the filter kinds, the segment condition kinds, page types,
/// device classes, UTM parameters, user-record fields and days.
pub(super) fn vocabulary() -> Value {
    use vitrine_engine::campaign::segment::UserField;
    use vitrine_engine::campaign::{DeviceClass, UtmParameter};
    use vitrine_engine::event::PageType;
    use vitrine_engine::zone::{Strategy, ZoneKind};
    let products: Vec<&str> = Strategy::AVAILABLE
        .iter()
        .filter(|(_, s)| s.kind() == ZoneKind::RecommenderProduct)
        .map(|(name, _)| *name)
        .collect();
    json!({
        "strategies": products,
        "filterKinds": campaigns::FILTER_KINDS,
        "conditionKinds": campaigns::KINDS,
        "pageTypes": PageType::ALL.map(PageType::name),
        "devices": DeviceClass::ALL.map(|(name, _)| name),
        "utmParameters": UtmParameter::ALL.map(|(name, _)| name),
        "userFields": UserField::ALL.map(|(name, _)| name),
        "days": vitrine_engine::campaign::schedule::DAY_NAMES,
    })
}

/// `GET .../segments/{id}/size`.
pub(super) fn named_size(
    entry: &AccountEntry,
    id: &str,
    now: UnixMillis,
) -> Result<Value, ApiError> {
    let set = entry.account.campaigns().compiled();
    let (_, segment) = set
        .segment(id)
        .ok_or_else(|| ApiError::NotFound(format!("no segment {id:?}")))?;
    let size = entry.account.segment_size(&segment.rule, now);
    Ok(size_json(id, size))
}

fn size_json(id: &str, size: vitrine_engine::campaign::audiences::SegmentSize) -> Value {
    json!({
        "segment": id,
        "matching": size.matching,
        "activeLast24h": size.active,
        "visitors": size.visitors,
    })
}

/// `GET .../campaigns/history`: every version kept, newest first, without documents:
/// who and when, the sentence written then, and the changes from the version before it.
pub(super) fn history(entry: &AccountEntry) -> Value {
    let history = entry.account.campaigns().history();
    let empty = CampaignDocument::default();
    let mut before = &empty;
    let mut versions: Vec<Value> = Vec::with_capacity(history.versions.len());
    for v in &history.versions {
        versions.push(json!({
            "version": v.version,
            "at": crate::clock::rfc3339(v.at),
            "author": v.author,
            "summary": v.summary,
            "changes": campaigns::diff::changes(before, &v.document),
        }));
        before = &v.document;
    }
    versions.reverse();
    json!({"versions": versions})
}

/// `GET .../campaigns/history/{version}`: one version with its document.
pub(super) fn version(entry: &AccountEntry, version: &str) -> Result<Value, ApiError> {
    let number: u64 = version.parse().map_err(|_| {
        ApiError::Invalid(vec![format!(
            "version: expected a whole number, got {version:?}"
        )])
    })?;
    let found = entry
        .account
        .campaigns()
        .version(number)
        .ok_or_else(|| ApiError::NotFound(format!("no version {number} in the history")))?;
    Ok(json!({
        "version": found.version,
        "at": crate::clock::rfc3339(found.at),
        "author": found.author,
        "summary": found.summary,
        "document": *found.document,
    }))
}

/// A change of the campaigns.
#[derive(Debug, Clone, Copy)]
pub(super) enum Write<'a> {
    /// `PUT .../segments`.
    Segments,
    /// `PUT .../zones/{zone}/campaigns`.
    Zone(&'a str),
    /// `DELETE .../zones/{zone}/campaigns`.
    RemoveZone(&'a str),
    /// `POST .../campaigns/restore`.
    Restore,
    /// `PUT` or `DELETE .../experiments/{id}`, `POST .../experiments/{id}/start`,
    /// `stop` or `end`.
    Experiment(&'a str, ExperimentWrite),
    /// `PUT .../holdout` (true) or `DELETE .../holdout` (false).
    Holdout(bool),
}

/// What a write does to an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExperimentWrite {
    /// Created or edited (`PUT`).
    Put,
    /// `POST .../start`.
    Start,
    /// `POST .../stop`.
    Stop,
    /// `POST .../end`.
    End,
    /// `DELETE`.
    Delete,
}

/// `POST .../segments/size`: the size of a draft rule `{"rule": {...}}` (a read: any
/// admin token may ask).
pub(super) fn draft_size(
    entry: &AccountEntry,
    body: &Value,
    now: UnixMillis,
) -> Result<Value, ApiError> {
    let mut errors = vitrine_fields::Errors::default();
    let rule = campaigns::read_rule(body, &mut errors);
    let Some(rule) = rule.filter(|_| errors.is_empty()) else {
        return Err(ApiError::Fields(errors.list().to_vec()));
    };
    Ok(size_json("", entry.account.segment_size(&rule, now)))
}

/// A change of the campaigns, by an editor (`caller`).
pub(super) fn write(
    entry: &AccountEntry,
    caller: &AdminToken,
    write: Write<'_>,
    headers: &HeaderMap,
    body: &[u8],
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let body = match write {
        Write::RemoveZone(_) => Value::Null,
        Write::Experiment(_, action) if action != ExperimentWrite::Put => Value::Null,
        Write::Holdout(false) => Value::Null,
        _ => super::request::body_json(body)?,
    };
    let if_match = if_match(headers)?;
    let change = match write {
        Write::Segments => CampaignChange::Segments(&body),
        Write::Zone(zone) => {
            if !entry.account.settings().zones.iter().any(|z| z.id == zone) {
                return Err(no_zone(entry, zone));
            }
            CampaignChange::Zone { zone, body: &body }
        }
        Write::RemoveZone(zone) => {
            if !entry.account.settings().zones.iter().any(|z| z.id == zone) {
                return Err(no_zone(entry, zone));
            }
            CampaignChange::RemoveZone(zone)
        }
        Write::Restore => {
            let (version, part) = restore_of(entry, &body)?;
            CampaignChange::Restore { version, part }
        }
        Write::Experiment(id, action) => CampaignChange::Experiment {
            id,
            action: match action {
                ExperimentWrite::Put => ExperimentAction::Put(&body),
                ExperimentWrite::Start => ExperimentAction::Start,
                ExperimentWrite::Stop => ExperimentAction::Stop,
                ExperimentWrite::End => ExperimentAction::End,
                ExperimentWrite::Delete => ExperimentAction::Delete,
            },
        },
        Write::Holdout(true) => CampaignChange::Holdout(HoldoutAction::Put(&body)),
        Write::Holdout(false) => CampaignChange::Holdout(HoldoutAction::Off),
    };
    let changed = entry.jobs.change_campaigns(ChangeRequest {
        change,
        if_match,
        author: &caller.label,
        now,
    })?;
    let (document, _) = entry.jobs.campaign_document();
    let etag = match (write, change) {
        (Write::Segments, _)
        | (
            Write::Restore,
            CampaignChange::Restore {
                part: Some(RestorePart::Segments),
                ..
            },
        ) => document.segments_version(),
        (Write::Zone(zone) | Write::RemoveZone(zone), _)
        | (
            Write::Restore,
            CampaignChange::Restore {
                part: Some(RestorePart::Zone(zone)),
                ..
            },
        ) => document.zone_version(zone),
        (Write::Restore, _) => changed.version,
        (Write::Experiment(..) | Write::Holdout(_), _) => document.experiments.version,
    };
    Ok(with_etag(
        json!({"version": changed.version, "etag": etag.to_string(), "warnings": changed.warnings}),
        etag,
    ))
}

/// The version and part a restore names: `{"version": n, "part": "segments" or
/// "zone:<id>"}` (no part: the whole document).
fn restore_of<'a>(
    entry: &AccountEntry,
    body: &'a Value,
) -> Result<(u64, Option<RestorePart<'a>>), ApiError> {
    let problem = |path: &str, message: String| {
        ApiError::Fields(vec![vitrine_fields::FieldError {
            path: path.to_owned(),
            message,
        }])
    };
    if let Some(members) = body.as_object()
        && let Some(unknown) = members.keys().find(|k| *k != "version" && *k != "part")
    {
        return Err(problem(
            unknown,
            "unknown member (expected version and part)".to_owned(),
        ));
    }
    let version = body.get("version").and_then(Value::as_u64).ok_or_else(|| {
        problem(
            "version",
            "required: the whole number of a version in the history".to_owned(),
        )
    })?;
    let part = match body.get("part") {
        None | Some(Value::Null) => None,
        Some(Value::String(part)) => {
            Some(restore_part(entry, part).map_err(|m| problem("part", m))?)
        }
        Some(_) => {
            return Err(problem(
                "part",
                "expected \"segments\" or \"zone:<id>\"".to_owned(),
            ));
        }
    };
    Ok((version, part))
}

/// A restore's part by name: `segments`, or `zone:<id>` of a zone of the account.
pub(super) fn restore_part<'a>(
    entry: &AccountEntry,
    name: &'a str,
) -> Result<RestorePart<'a>, String> {
    if name == "segments" {
        return Ok(RestorePart::Segments);
    }
    match name.strip_prefix("zone:") {
        Some(zone) if entry.account.settings().zones.iter().any(|z| z.id == zone) => {
            Ok(RestorePart::Zone(zone))
        }
        Some(_) => Err(super::request::no_zone(
            entry,
            name.trim_start_matches("zone:"),
        )),
        None => Err(format!(
            "expected \"segments\" or \"zone:<id>\", got {name:?}"
        )),
    }
}

/// `GET .../campaigns/restore?version=N&part=P`: what a restore would change, without
/// making it: the summary and the changes from the live document.
pub(super) fn restore_preview(entry: &AccountEntry, query: &Query) -> Result<Value, ApiError> {
    let version = query
        .get("version")
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| {
            ApiError::Invalid(vec![
                "version: required, the whole number of a version in the history".to_owned(),
            ])
        })?;
    let part = match query.get("part").filter(|p| !p.is_empty()) {
        None => None,
        Some(name) => Some(
            restore_part(entry, name).map_err(|m| ApiError::Invalid(vec![format!("part: {m}")]))?,
        ),
    };
    let (live, restored) = entry.jobs.restore_preview(version, part)?;
    let changes = campaigns::diff::changes(&live, &restored);
    Ok(json!({
        "version": version,
        "part": query.get("part").filter(|p| !p.is_empty()),
        "summary": campaigns::diff::sentence(&changes),
        "changes": changes,
    }))
}

/// The version `If-Match` names: `"5"`, `W/"5"` or `5`; `*` or none: no check.
fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(http::header::IF_MATCH) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("").trim();
    if text == "*" {
        return Ok(None);
    }
    let bare = text.trim_start_matches("W/").trim_matches('"');
    bare.parse().map(Some).map_err(|_| {
        ApiError::Invalid(vec![format!(
            "If-Match: expected the ETag of the version loaded, such as \"3\", got {text:?}"
        )])
    })
}

pub(super) fn with_etag(value: Value, version: u64) -> Reply {
    let mut reply = Reply::json(serde_json::to_vec(&value).unwrap_or_default());
    reply.headers.push(("etag", format!("\"{version}\"")));
    reply.headers.push(("cache-control", "no-store".to_owned()));
    reply
}

fn no_zone(entry: &AccountEntry, zone: &str) -> ApiError {
    ApiError::NotFound(super::request::no_zone(entry, zone))
}

/// Parameters a campaigns endpoint takes (none).
pub(super) fn no_query(query: &Query) -> Result<(), ApiError> {
    query.only(&[])
}
