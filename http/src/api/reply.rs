//! A handler's successful answer ([`Reply`]), and the log window an answer that
//! acknowledges events must respect ([`LossWindow`]).

use std::sync::Arc;

use http::StatusCode;

use crate::error::ApiError;

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
