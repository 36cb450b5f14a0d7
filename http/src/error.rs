//! API errors, their status codes and their bodies.
//!
//! Every handler fails with an [`ApiError`]; [`ApiError::status`] is the one place that
//! chooses a status code, by an exhaustive `match` over endpoint and variant, so a new
//! variant forces a decision for every endpoint. Bodies follow the contract:
//! `{"errors":[...]}` on `/api/serverside`, `{"Error":"..."}` everywhere else.
//!
//! Errors of the crates below become an [`ApiError`] only through the `From`
//! conversions here, each an exhaustive `match` over the typed error: a server that is
//! stopping answers 503 with `Retry-After`, a log or journal that cannot be written
//! 500, and a new variant of `SubmitError` or `RebuildError` forces a decision.

use http::StatusCode;
use vitrine_fields::{Errors, FieldError};
use vitrine_ingest::jobs::{CampaignError, DraftError, RebuildError, StreamError, SubmitError};
use vitrine_ingest::store::StoreError;

use crate::routes::Endpoint;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The request is malformed: each message names the JSON path.
    Invalid(Vec<String>),
    /// The access key is unknown, of another region, or the secret does not match.
    Credentials(String),
    /// `/api/user/forget`: nothing matches the identifier.
    NotFound(String),
    /// The body is larger than the endpoint allows.
    TooLarge(String),
    /// No such path.
    NoRoute(String),
    /// The path exists, the method does not.
    WrongMethod(String),
    /// The server is shutting down (or a worker it needs has stopped, or its log writer
    /// is behind): try again shortly, on this or another instance.
    Unavailable(String),
    /// The account sent more requests to the endpoint than its rate limit allows: try
    /// again after the seconds given.
    RateLimited(String, u32),
    /// Something failed inside the server.
    Internal(String),
    /// `/admin/`: no bearer token was given.
    Unauthorized(String),
    /// `/admin/`: the token given opens nothing, or may not write.
    Forbidden(String),
    /// A document is not valid: each problem with the JSON path of its field (the
    /// admin API answers them as a list of `{path, message}`).
    Fields(Vec<FieldError>),
    /// `/admin/`: `If-Match` names a version that is no longer current; nothing changed.
    PreconditionFailed(String),
}

/// Seconds a client is asked to wait before retrying a 503.
pub const RETRY_AFTER_SECS: u32 = 1;

impl From<SubmitError> for ApiError {
    fn from(error: SubmitError) -> ApiError {
        match error {
            SubmitError::Closed | SubmitError::Busy(_) | SubmitError::Replication(_) => {
                ApiError::Unavailable(error.to_string())
            }
            SubmitError::Journal(_) => ApiError::Internal(error.to_string()),
        }
    }
}

impl From<CampaignError> for ApiError {
    fn from(error: CampaignError) -> ApiError {
        match error {
            CampaignError::Invalid(errors) => ApiError::Fields(errors.list().to_vec()),
            CampaignError::Conflict { .. } | CampaignError::Overtaken(_) => {
                ApiError::PreconditionFailed(error.to_string())
            }
            CampaignError::NoVersion(_) => ApiError::NotFound(error.to_string()),
            CampaignError::Submit(submit) => ApiError::from(submit),
        }
    }
}

impl From<DraftError> for ApiError {
    fn from(error: DraftError) -> ApiError {
        match error {
            DraftError::Invalid(errors) => ApiError::Fields(errors.list().to_vec()),
            DraftError::Submit(submit) => ApiError::from(submit),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        ApiError::from(SubmitError::from(error))
    }
}

impl From<RebuildError> for ApiError {
    fn from(error: RebuildError) -> ApiError {
        match error {
            RebuildError::Build(_) | RebuildError::Save(_) => ApiError::Internal(error.to_string()),
        }
    }
}

impl From<StreamError> for ApiError {
    fn from(error: StreamError) -> ApiError {
        match error {
            StreamError::BadName(_) => ApiError::Invalid(vec![error.to_string()]),
            StreamError::Unknown(_) => ApiError::NotFound(error.to_string()),
            StreamError::TooLarge { .. } => ApiError::TooLarge(error.to_string()),
            StreamError::Journal(_) => ApiError::Internal(error.to_string()),
            StreamError::Replication(_) => ApiError::Unavailable(error.to_string()),
        }
    }
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(error: tokio::task::JoinError) -> ApiError {
        ApiError::Internal(format!("the request's worker failed: {error}"))
    }
}

impl From<Errors> for ApiError {
    fn from(errors: Errors) -> ApiError {
        ApiError::Invalid(errors.messages())
    }
}

impl ApiError {
    /// The same error with `context` before its message (`context: message`), for the
    /// errors that say what was being done; other errors are returned as they are.
    pub fn context(self, context: &str) -> ApiError {
        match self {
            ApiError::Internal(m) => ApiError::Internal(format!("{context}: {m}")),
            ApiError::Unavailable(m) => ApiError::Unavailable(format!("{context}: {m}")),
            other @ (ApiError::Invalid(_)
            | ApiError::Fields(_)
            | ApiError::PreconditionFailed(_)
            | ApiError::Unauthorized(_)
            | ApiError::Forbidden(_)
            | ApiError::RateLimited(..)
            | ApiError::Credentials(_)
            | ApiError::NotFound(_)
            | ApiError::TooLarge(_)
            | ApiError::NoRoute(_)
            | ApiError::WrongMethod(_)) => other,
        }
    }

    /// Seconds to put in `Retry-After`, for the errors that have one.
    pub fn retry_after(&self) -> Option<u32> {
        match self {
            ApiError::Unavailable(_) => Some(RETRY_AFTER_SECS),
            ApiError::RateLimited(_, seconds) => Some(*seconds),
            ApiError::Invalid(_)
            | ApiError::Fields(_)
            | ApiError::PreconditionFailed(_)
            | ApiError::Credentials(_)
            | ApiError::NotFound(_)
            | ApiError::TooLarge(_)
            | ApiError::NoRoute(_)
            | ApiError::WrongMethod(_)
            | ApiError::Unauthorized(_)
            | ApiError::Forbidden(_)
            | ApiError::Internal(_) => None,
        }
    }

    /// The status code of this error on `endpoint`.
    pub fn status(&self, endpoint: Endpoint) -> StatusCode {
        use Endpoint as E;
        match (self, endpoint) {
            (ApiError::Invalid(_) | ApiError::Fields(_), _) => StatusCode::BAD_REQUEST,
            (ApiError::PreconditionFailed(_), _) => StatusCode::PRECONDITION_FAILED,
            (
                ApiError::Credentials(_),
                E::Serverside | E::Forget | E::ClientSide | E::ClientClick,
            ) => StatusCode::FORBIDDEN,
            (ApiError::Credentials(_), E::ClientScript) => StatusCode::NOT_FOUND,
            (
                ApiError::Credentials(_),
                E::ProductFeed
                | E::Delta
                | E::DeltaStatus
                | E::ProductDeltaStatus
                | E::ProductFeedStatus
                | E::ProductDelta
                | E::PluginValidate
                | E::PluginDashboard
                | E::PluginDelete
                | E::PluginFeedback
                | E::PluginSignupRequest
                | E::PluginSignupStatus
                | E::PluginAddStore
                | E::NextStepsComplete
                | E::Health
                | E::Metrics
                | E::OpenApi
                | E::Admin
                | E::Unrouted,
            ) => StatusCode::BAD_REQUEST,
            (ApiError::Credentials(_), E::FeedCreate | E::FeedAppend | E::FeedClose) => {
                StatusCode::FORBIDDEN
            }
            (ApiError::NotFound(_), _) => StatusCode::NOT_FOUND,
            (ApiError::TooLarge(_), _) => StatusCode::PAYLOAD_TOO_LARGE,
            (ApiError::NoRoute(_), _) => StatusCode::NOT_FOUND,
            (ApiError::WrongMethod(_), _) => StatusCode::METHOD_NOT_ALLOWED,
            (ApiError::Unavailable(_), _) => StatusCode::SERVICE_UNAVAILABLE,
            (ApiError::RateLimited(..), _) => StatusCode::TOO_MANY_REQUESTS,
            (ApiError::Internal(_), _) => StatusCode::INTERNAL_SERVER_ERROR,
            (ApiError::Unauthorized(_), _) => StatusCode::UNAUTHORIZED,
            (ApiError::Forbidden(_), _) => StatusCode::FORBIDDEN,
        }
    }

    /// The messages of the error.
    pub fn messages(&self) -> Vec<String> {
        match self {
            ApiError::Invalid(messages) => messages.clone(),
            ApiError::Fields(errors) => errors.iter().map(ToString::to_string).collect(),
            ApiError::PreconditionFailed(m)
            | ApiError::Credentials(m)
            | ApiError::NotFound(m)
            | ApiError::TooLarge(m)
            | ApiError::NoRoute(m)
            | ApiError::WrongMethod(m)
            | ApiError::Unavailable(m)
            | ApiError::RateLimited(m, _)
            | ApiError::Unauthorized(m)
            | ApiError::Forbidden(m)
            | ApiError::Internal(m) => vec![m.clone()],
        }
    }

    /// The JSON body of this error on `endpoint`.
    pub fn body(&self, endpoint: Endpoint) -> Vec<u8> {
        let messages = self.messages();
        let value = match endpoint {
            // The plugins' sign-up calls are read by the same key.
            Endpoint::Serverside
            | Endpoint::ClientSide
            | Endpoint::ClientClick
            | Endpoint::PluginSignupRequest
            | Endpoint::PluginSignupStatus
            | Endpoint::PluginAddStore => serde_json::json!({ "errors": messages }),
            Endpoint::Admin => match self {
                ApiError::Fields(errors) => serde_json::json!({
                    "error": messages.join("; "),
                    "errors": errors
                        .iter()
                        .map(|e| serde_json::json!({"path": e.path, "message": e.message}))
                        .collect::<Vec<_>>(),
                }),
                _ => serde_json::json!({ "error": messages.join("; ") }),
            },
            Endpoint::ProductFeed
            | Endpoint::Delta
            | Endpoint::DeltaStatus
            | Endpoint::ProductDeltaStatus
            | Endpoint::ProductFeedStatus
            | Endpoint::Forget
            | Endpoint::ProductDelta
            | Endpoint::FeedCreate
            | Endpoint::FeedAppend
            | Endpoint::FeedClose
            | Endpoint::PluginValidate
            | Endpoint::PluginDashboard
            | Endpoint::PluginDelete
            | Endpoint::PluginFeedback
            | Endpoint::NextStepsComplete
            | Endpoint::Health
            | Endpoint::Metrics
            | Endpoint::OpenApi
            | Endpoint::ClientScript
            | Endpoint::Unrouted => serde_json::json!({ "Error": messages.join("; ") }),
        };
        serde_json::to_vec(&value).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_status_depends_on_the_endpoint() {
        let e = ApiError::Credentials("appId: unknown access key".into());
        assert_eq!(e.status(Endpoint::Serverside), StatusCode::FORBIDDEN);
        assert_eq!(e.status(Endpoint::Forget), StatusCode::FORBIDDEN);
        for endpoint in [
            Endpoint::ProductFeed,
            Endpoint::Delta,
            Endpoint::DeltaStatus,
            Endpoint::ProductFeedStatus,
        ] {
            assert_eq!(e.status(endpoint), StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn a_server_that_is_stopping_answers_503_in_each_endpoints_body_shape() {
        let error = ApiError::from(SubmitError::Closed).context("the events could not be logged");
        assert_eq!(error.retry_after(), Some(RETRY_AFTER_SECS));
        for endpoint in [
            Endpoint::Serverside,
            Endpoint::Delta,
            Endpoint::ProductFeed,
            Endpoint::Forget,
        ] {
            assert_eq!(error.status(endpoint), StatusCode::SERVICE_UNAVAILABLE);
        }
        assert_eq!(
            error.body(Endpoint::Serverside),
            br#"{"errors":["the events could not be logged: the server is shutting down and takes no more jobs"]}"#
        );
        assert_eq!(
            ApiError::from(SubmitError::Closed).body(Endpoint::Delta),
            br#"{"Error":"the server is shutting down and takes no more jobs"}"#
        );
    }

    #[test]
    fn a_log_writer_behind_is_a_503_with_retry_after_and_a_rate_limit_a_429() {
        let busy = ApiError::from(SubmitError::from(vitrine_snapshots::Error::Backlog {
            waiting: 7,
            limit: 7,
        }))
        .context("the events could not be logged");
        assert_eq!(
            busy.status(Endpoint::Serverside),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(busy.retry_after(), Some(RETRY_AFTER_SECS));
        assert_eq!(
            busy.body(Endpoint::Serverside),
            br#"{"errors":["the events could not be logged: the log writer is behind: 7 records are waiting to be written (the limit is 7)"]}"#
        );
        let limited = ApiError::RateLimited("slow down".into(), 3);
        for endpoint in Endpoint::ALL {
            assert_eq!(limited.status(endpoint), StatusCode::TOO_MANY_REQUESTS);
        }
        assert_eq!(limited.retry_after(), Some(3));
        assert_eq!(limited.body(Endpoint::Delta), br#"{"Error":"slow down"}"#);
        assert_eq!(
            limited.body(Endpoint::Serverside),
            br#"{"errors":["slow down"]}"#
        );
    }

    #[test]
    fn a_log_that_cannot_be_written_is_a_500_without_retry_after() {
        let error = ApiError::from(SubmitError::Journal(vitrine_snapshots::Error::Wal(
            vitrine_snapshots::wal::WalError::Io {
                action: "writing",
                path: "wal/00000000000000000001.wal".into(),
                reason: "disk full".into(),
            },
        )));
        assert_eq!(
            error.status(Endpoint::Delta),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(error.retry_after(), None);
        assert!(
            error.messages()[0].contains("could not be saved: "),
            "{error:?}"
        );
    }

    #[test]
    fn body_shape_depends_on_the_endpoint() {
        let e = ApiError::Invalid(vec!["a: required".into(), "b: required".into()]);
        assert_eq!(
            e.body(Endpoint::Serverside),
            br#"{"errors":["a: required","b: required"]}"#
        );
        assert_eq!(
            e.body(Endpoint::Delta),
            br#"{"Error":"a: required; b: required"}"#
        );
    }
}
