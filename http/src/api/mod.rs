//! The endpoints, one module each: the six of the contract, the vendor plugins' calls and
//! the browser's. A handler takes the shared state and the parsed JSON body and returns
//! a [`Reply`] or an [`crate::error::ApiError`]; here too, what every handler shares:
//! reading a body within its limit, and which handlers may wait on the disk.

pub mod clientside;
pub mod delta;
pub mod feed;
pub mod forget;
pub mod plugin;
pub mod render;
mod reply;
pub mod serverside;
pub mod stream;

use bytes::Bytes;
use http::header;
use http_body_util::{BodyExt, Limited};
use hyper::Request;
use hyper::body::Incoming;
use vitrine_fields::Errors;
use vitrine_fields::Fields;

use crate::config::EventsFsync;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;
pub use reply::{LossWindow, Reply};

/// A request body as JSON; a 400 naming the syntax error otherwise.
pub fn parse_json(body: &[u8]) -> Result<serde_json::Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::Invalid(vec![format!("body: invalid JSON: {e}")]))
}

/// `Tokens`: a required, non-empty array of strings, at most `max` of them.
pub fn tokens(fields: &Fields<'_, '_>, max: usize) -> Result<Vec<String>, ApiError> {
    let mut errors = Errors::default();
    let tokens = fields.req_string_array("Tokens", &mut errors, vitrine_fields::not_empty);
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

/// Whether a request to `endpoint` may wait for an fsync (or parse a large body): such
/// requests run on tokio's blocking pool, so that no async worker thread, and none of
/// the connections it drives, waits on the disk. Deltas (fsynced, and parsed bodies
/// up to `max_delta_bytes`), feed submissions (a journal file), erasures (fsynced) and,
/// under `events_fsync = "always"`, serverside calls that log events.
pub fn may_fsync(state: &AppState, endpoint: Endpoint) -> bool {
    match endpoint {
        Endpoint::Delta
        | Endpoint::ProductDelta
        | Endpoint::ProductFeed
        | Endpoint::Forget
        | Endpoint::FeedCreate
        | Endpoint::FeedAppend
        | Endpoint::FeedClose => true,
        Endpoint::Serverside | Endpoint::ClientSide => {
            state.config().events_fsync == EventsFsync::Always
        }
        Endpoint::ClientScript | Endpoint::ClientClick => false,
        Endpoint::DeltaStatus
        | Endpoint::ProductDeltaStatus
        | Endpoint::ProductFeedStatus
        | Endpoint::PluginValidate
        | Endpoint::PluginDashboard
        | Endpoint::PluginDelete
        | Endpoint::PluginFeedback
        | Endpoint::PluginSignupRequest
        | Endpoint::PluginSignupStatus
        | Endpoint::PluginAddStore
        | Endpoint::NextStepsComplete
        | Endpoint::Health
        | Endpoint::Metrics
        | Endpoint::OpenApi
        | Endpoint::Admin
        | Endpoint::Unrouted => false,
    }
}

/// Reads the whole body, refusing (413) anything over `limit` bytes: at once when
/// `Content-Length` says so, otherwise as soon as the stream passes the limit.
pub async fn read_body(request: Request<Incoming>, limit: usize) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::TooLarge(format!(
            "request body is larger than the limit of {limit} bytes"
        ))
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(too_large());
    }
    match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(error) => Err(ApiError::Invalid(vec![format!(
            "body: could not be read: {error}"
        )])),
    }
}
