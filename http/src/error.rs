//! API errors, their status codes and their bodies.
//!
//! Every handler fails with an [`ApiError`]; [`ApiError::status`] is the one place that
//! chooses a status code, by an exhaustive `match` over endpoint and variant, so a new
//! variant forces a decision for every endpoint. Bodies follow the contract:
//! `{"errors":[...]}` on `/api/serverside`, `{"Error":"..."}` everywhere else.

use http::StatusCode;
use vitrine_ingest::json::Errors;

/// The endpoints of the contract, plus routes outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /api/serverside`
    Serverside,
    /// `POST /api/productfeed`
    ProductFeed,
    /// `POST /api/delta`
    Delta,
    /// `POST /api/deltastatus`
    DeltaStatus,
    /// `POST /api/productfeedstatus`
    ProductFeedStatus,
    /// `POST /api/user/forget`
    Forget,
    /// `GET /healthz`
    Health,
    /// Any other path.
    Unrouted,
}

impl Endpoint {
    /// The endpoint of a path.
    pub fn of_path(path: &str) -> Endpoint {
        match path {
            "/api/serverside" => Endpoint::Serverside,
            "/api/productfeed" => Endpoint::ProductFeed,
            "/api/delta" => Endpoint::Delta,
            "/api/deltastatus" => Endpoint::DeltaStatus,
            "/api/productfeedstatus" => Endpoint::ProductFeedStatus,
            "/api/user/forget" => Endpoint::Forget,
            "/healthz" => Endpoint::Health,
            _ => Endpoint::Unrouted,
        }
    }

    /// The method the endpoint answers.
    pub fn method(self) -> http::Method {
        match self {
            Endpoint::Health => http::Method::GET,
            _ => http::Method::POST,
        }
    }
}

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
    /// Something failed inside the server.
    Internal(String),
}

impl From<Errors> for ApiError {
    fn from(errors: Errors) -> ApiError {
        ApiError::Invalid(errors.messages())
    }
}

impl ApiError {
    /// The status code of this error on `endpoint`.
    pub fn status(&self, endpoint: Endpoint) -> StatusCode {
        use Endpoint as E;
        match (self, endpoint) {
            (ApiError::Invalid(_), _) => StatusCode::BAD_REQUEST,
            (ApiError::Credentials(_), E::Serverside | E::Forget) => StatusCode::FORBIDDEN,
            (
                ApiError::Credentials(_),
                E::ProductFeed
                | E::Delta
                | E::DeltaStatus
                | E::ProductFeedStatus
                | E::Health
                | E::Unrouted,
            ) => StatusCode::BAD_REQUEST,
            (ApiError::NotFound(_), _) => StatusCode::NOT_FOUND,
            (ApiError::TooLarge(_), _) => StatusCode::PAYLOAD_TOO_LARGE,
            (ApiError::NoRoute(_), _) => StatusCode::NOT_FOUND,
            (ApiError::WrongMethod(_), _) => StatusCode::METHOD_NOT_ALLOWED,
            (ApiError::Internal(_), _) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The messages of the error.
    pub fn messages(&self) -> Vec<String> {
        match self {
            ApiError::Invalid(messages) => messages.clone(),
            ApiError::Credentials(m)
            | ApiError::NotFound(m)
            | ApiError::TooLarge(m)
            | ApiError::NoRoute(m)
            | ApiError::WrongMethod(m)
            | ApiError::Internal(m) => vec![m.clone()],
        }
    }

    /// The JSON body of this error on `endpoint`.
    pub fn body(&self, endpoint: Endpoint) -> Vec<u8> {
        let messages = self.messages();
        let value = match endpoint {
            Endpoint::Serverside => serde_json::json!({ "errors": messages }),
            Endpoint::ProductFeed
            | Endpoint::Delta
            | Endpoint::DeltaStatus
            | Endpoint::ProductFeedStatus
            | Endpoint::Forget
            | Endpoint::Health
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
