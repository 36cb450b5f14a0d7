//! Drafts through the admin API: a zone's campaign list, or the segments, as an editor
//! left them without publishing, kept on the server (logged and fsynced, replicated as
//! the lists are; see `vitrine_ingest::jobs::DraftRequest`).
//!
//! - `GET /admin/api/accounts/{key}/drafts`: every draft of the account.
//! - `GET /admin/api/accounts/{key}/zones/{zone}/draft` and `.../segments/draft`:
//!   `{"draft": null}` or `{"draft": {...}}`.
//! - `PUT` the same with `{"campaigns": [...]}` (or `{"segments": [...]}`): saves it;
//!   `DELETE`: discards it. An editor's token only.
//!
//! A draft answers its `part`, `zone`, `body`, `author`, `at` (RFC 3339), `basedOn` (the
//! part's version it was made from) and `liveVersion` (the part's version now: when they
//! differ, the live list changed since). Publishing a part with exactly its draft's body
//! discards the draft.

use serde_json::{Value, json};
use vitrine_engine::campaign::CampaignDocument;
use vitrine_engine::campaign::draft::Draft;
use vitrine_engine::catalogue::UnixMillis;
use vitrine_ingest::jobs::{DraftPart, DraftRequest};

use crate::api::Reply;
use crate::config::AdminToken;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// `GET .../drafts`.
pub(super) fn all(entry: &AccountEntry) -> Value {
    let drafts = entry.jobs.campaign_drafts();
    let (document, _) = entry.jobs.campaign_document();
    let list: Vec<Value> = drafts.drafts().map(|d| draft_json(d, &document)).collect();
    json!({"drafts": list})
}

/// `GET .../zones/{zone}/draft` or `.../segments/draft`.
pub(super) fn one(entry: &AccountEntry, part: DraftPart<'_>) -> Result<Value, ApiError> {
    known(entry, part)?;
    let (document, _) = entry.jobs.campaign_document();
    let draft = entry
        .account
        .campaigns()
        .draft(&part.name())
        .filter(|d| d.body.is_some())
        .map_or(Value::Null, |d| draft_json(&d, &document));
    Ok(json!({"draft": draft}))
}

/// `PUT` (save) or `DELETE` (discard) of a part's draft.
pub(super) fn write(
    entry: &AccountEntry,
    caller: &AdminToken,
    part: DraftPart<'_>,
    method: &http::Method,
    body: &[u8],
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let body = match *method {
        http::Method::PUT => Some(serde_json::from_slice::<Value>(body).map_err(|e| {
            ApiError::Fields(vec![vitrine_fields::FieldError {
                path: String::new(),
                message: format!("invalid JSON: {e}"),
            }])
        })?),
        http::Method::DELETE => None,
        _ => {
            return Err(ApiError::WrongMethod(format!(
                "method {method} is not allowed on a draft; use GET, PUT or DELETE"
            )));
        }
    };
    known(entry, part)?;
    let saved = entry.jobs.save_draft(DraftRequest {
        part,
        body: body.as_ref(),
        author: &caller.label,
        now,
    })?;
    let (document, _) = entry.jobs.campaign_document();
    let answer = match saved.body {
        Some(_) => json!({"draft": draft_json(&saved, &document)}),
        None => {
            json!({"draft": null, "discarded": {"author": saved.author, "at": crate::clock::rfc3339(saved.at)}})
        }
    };
    let mut reply = Reply::json(serde_json::to_vec(&answer).unwrap_or_default());
    reply.headers.push(("cache-control", "no-store".to_owned()));
    Ok(reply)
}

/// A 404 for a zone the account does not have.
fn known(entry: &AccountEntry, part: DraftPart<'_>) -> Result<(), ApiError> {
    match part {
        DraftPart::Zone(zone) if !entry.account.settings().zones.iter().any(|z| z.id == zone) => {
            Err(ApiError::NotFound(super::request::no_zone(entry, zone)))
        }
        _ => Ok(()),
    }
}

fn draft_json(draft: &Draft, document: &CampaignDocument) -> Value {
    let zone = draft.part.strip_prefix("zone:");
    let live = match zone {
        Some(zone) => document.zone_version(zone),
        None => document.segments_version(),
    };
    let body: Value = draft
        .body
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    json!({
        "part": draft.part,
        "zone": zone,
        "body": body,
        "author": draft.author,
        "at": crate::clock::rfc3339(draft.at),
        "basedOn": draft.based_on,
        "liveVersion": live,
    })
}
