//! `POST /api/delta` and `POST /api/deltastatus`.
//!
//! A delta is authenticated, checked for structure (400 naming the path), then queued on
//! the account's delta worker; its token comes back as `{"Token": "..."}`. The size
//! limit (413) is enforced by the server before the body is buffered.

use serde::Serialize;
use serde_json::Value;
use vitrine_ingest::delta;
use vitrine_ingest::jobs::DeltaStatus;

use crate::api::{Reply, tokens};
use crate::auth::{CredentialFields, authenticated_or_trusted};
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Handles `/api/delta`.
///
/// `endpoint` is [`Endpoint::Delta`], or [`Endpoint::ProductDelta`] for the same delta
/// as the vendor's PHP SDK sends it (`Secret` for the secret key, a `Format` that is
/// ignored).
pub fn handle_delta(
    state: &AppState,
    body: &Value,
    endpoint: Endpoint,
    sender: std::net::IpAddr,
) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated_or_trusted(state, body, endpoint, sender)?;
    let delta = delta::parse(&fields)?;
    // The journal keeps the parts, never the credentials.
    let mut record = body.clone();
    if let Some(object) = record.as_object_mut() {
        let names = CredentialFields::of(endpoint);
        object.remove(names.access_key);
        if let Some(secret) = names.secret_key {
            object.remove(secret);
        }
        object.remove("Format");
    }
    // A JSON value's text (its `Display` cannot fail, unlike a serializer's).
    let record = record.to_string().into_bytes();
    let token = entry.jobs.submit_delta(delta, &record)?;
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
///
/// `endpoint` is [`Endpoint::DeltaStatus`], or [`Endpoint::ProductDeltaStatus`] as the
/// vendor's .NET SDK asks (`AppKey` and `Tokens`; the secret as for its deltas).
pub fn handle_status(
    state: &AppState,
    body: &Value,
    endpoint: Endpoint,
    sender: std::net::IpAddr,
) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated_or_trusted(state, body, endpoint, sender)?;
    let tokens = tokens(&fields, state.config().limits.max_tokens)?;
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
