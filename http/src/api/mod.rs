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
pub mod serverside;
pub mod stream;

use std::sync::Arc;

use bytes::Bytes;
use http::{StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::Request;
use hyper::body::Incoming;
use vitrine_fields::Errors;
use vitrine_fields::Fields;

use crate::config::EventsFsync;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Status code (200 for every success of the contract).
    pub status: StatusCode,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
    /// The log whose `interval` loss window this answer must respect, when it
    /// acknowledges events logged under the log's policy.
    pub window: Option<LossWindow>,
}

/// An account's log, for an answer that acknowledges events logged under `interval`:
/// the answer goes out only while every event handed to that log more than
/// `fsync_interval_ms` earlier is on disk; when the log's writer is behind (starved of
/// CPU, a slow disk), the answer waits for an fsync instead of being given on credit
/// (`server::handle`, off the async workers).
#[derive(Clone)]
pub struct LossWindow(pub Arc<vitrine_ingest::jobs::AccountJobs>);

impl PartialEq for LossWindow {
    fn eq(&self, other: &LossWindow) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for LossWindow {}

impl std::fmt::Debug for LossWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LossWindow")
            .field(&self.0.account().access_key())
            .finish()
    }
}

impl LossWindow {
    /// Waits, on the blocking pool, until the log is within its window (at once when it
    /// is); an error when the log could not be synced.
    pub async fn kept(self) -> Result<(), ApiError> {
        if !self.0.behind_window() {
            return Ok(());
        }
        let jobs = self.0;
        tokio::task::spawn_blocking(move || jobs.keep_window())
            .await?
            .map_err(|e| ApiError::from(e).context("the events could not be logged"))
    }
}

impl Reply {
    /// A 200 with a JSON body.
    pub fn json(body: Vec<u8>) -> Reply {
        Reply {
            status: StatusCode::OK,
            content_type: "application/json",
            headers: Vec::new(),
            body,
            window: None,
        }
    }

    /// A 200 with a plain-text body.
    pub fn text(body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.into_bytes(),
            window: None,
        }
    }
}

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
