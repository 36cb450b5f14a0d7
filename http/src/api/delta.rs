//! `POST /api/delta` and `POST /api/deltastatus`.
//!
//! A delta is authenticated, checked for structure (400 naming the path), then queued on
//! the account's delta worker; its token comes back as `{"Token": "..."}`. The size
//! limit (413) is enforced by the server before the body is buffered.

use serde::Serialize;
use serde_json::Value;
use vitrine_ingest::delta;
use vitrine_ingest::jobs::DeltaStatus;
use vitrine_ingest::json::{Errors, Fields, KeyMatch};

use crate::api::Reply;
use crate::auth;
use crate::error::{ApiError, Endpoint};
use crate::state::{AccountEntry, AppState};

/// Handles `/api/delta`.
pub fn handle_delta(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated(state, body, Endpoint::Delta)?;
    let delta = delta::parse(&fields)?;
    // The journal keeps the parts, never the credentials.
    let mut record = body.clone();
    if let Some(object) = record.as_object_mut() {
        object.remove("AppKey");
        object.remove("SecretKey");
    }
    let record = serde_json::to_vec(&record).map_err(|e| ApiError::Internal(e.to_string()))?;
    let token = entry
        .jobs
        .submit_delta(delta, &record)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let body = serde_json::to_vec(&serde_json::json!({ "Token": token })).unwrap_or_default();
    Ok(Reply::json(body))
}

#[derive(Serialize)]
struct WireDeltaStatus<'a> {
    #[serde(rename = "Token")]
    token: &'a str,
    #[serde(rename = "Status")]
    status: u8,
    #[serde(rename = "Reason", skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// Handles `/api/deltastatus`: one item per token, in request order.
pub fn handle_status(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated(state, body, Endpoint::DeltaStatus)?;
    let tokens = tokens(&fields, state.config.limits.max_tokens)?;
    let items: Vec<WireDeltaStatus<'_>> = tokens
        .iter()
        .map(|token| {
            let status = entry.jobs.delta_status(token);
            let code = status.code();
            let reason = match status {
                DeltaStatus::Failed(reason) => Some(reason),
                DeltaStatus::Pending | DeltaStatus::Applied => None,
            };
            WireDeltaStatus {
                token,
                status: code,
                reason,
            }
        })
        .collect();
    Ok(Reply::json(serde_json::to_vec(&items).unwrap_or_default()))
}

/// Reads and checks the credentials of a body, reporting other missing credential
/// fields together.
pub(crate) fn authenticated<'s, 'v>(
    state: &'s AppState,
    body: &'v Value,
    endpoint: Endpoint,
) -> Result<(&'s AccountEntry, Fields<'v, 'static>), ApiError> {
    let mut errors = Errors::default();
    let Some(fields) = Fields::of(body, "", KeyMatch::Exact, &mut errors) else {
        return Err(errors.into());
    };
    let Some(presented) = auth::read(&fields, endpoint, &mut errors) else {
        return Err(errors.into());
    };
    let entry = auth::authenticate(state, endpoint, presented)?;
    Ok((entry, fields))
}

/// `Tokens`: a required, non-empty array of strings, at most `max` of them.
pub(crate) fn tokens(fields: &Fields<'_, '_>, max: usize) -> Result<Vec<String>, ApiError> {
    let mut errors = Errors::default();
    let tokens = fields.req_string_array("Tokens", &mut errors, |t| {
        if t.is_empty() {
            Err("must not be empty".to_owned())
        } else {
            Ok(())
        }
    });
    if let Some(tokens) = &tokens {
        if tokens.is_empty() {
            errors.push("Tokens", "must hold at least one token");
        } else if tokens.len() > max {
            errors.push(
                "Tokens",
                format!("at most {max} tokens per request, got {}", tokens.len()),
            );
        }
    }
    errors
        .into_result(tokens.unwrap_or_default())
        .map_err(ApiError::from)
}
