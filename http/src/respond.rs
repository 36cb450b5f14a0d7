//! Turning what a handler returned into the HTTP response: an answer with its headers,
//! or an error with the status, body and headers its endpoint gives it, the CORS
//! headers of a browser's request added to either.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::Full;

use crate::api::Reply;
use crate::api::clientside::Cors;
use crate::error::ApiError;
use crate::routes::Endpoint;

/// An answer, with its CORS headers.
pub(crate) fn reply_response(reply: Reply, cors: &Cors) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(reply.body)));
    *response.status_mut() = reply.status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(reply.content_type),
    );
    for (name, value) in reply.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    cors.apply(response.headers_mut());
    response
}

/// An error as its endpoint answers it: the one place every error, from every door,
/// gets its status, body and headers (`Allow`, `WWW-Authenticate`, `Retry-After`,
/// `Connection: close` after a 413, and the CORS headers its origin is allowed).
pub(crate) fn error_response(
    endpoint: Endpoint,
    error: &ApiError,
    cors: &Cors,
) -> Response<Full<Bytes>> {
    let status = error.status(endpoint);
    let mut response = Response::new(Full::new(Bytes::from(error.body(endpoint))));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        let allow = if endpoint.method() == http::Method::GET {
            "GET"
        } else {
            "POST"
        };
        headers.insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"vitrine-admin\""),
        );
    }
    if let Some(seconds) = error.retry_after() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        // The rest of the body is not read; the connection cannot be reused.
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    cors.apply(headers);
    response
}

#[cfg(test)]
mod tests {
    use vitrine_ingest::jobs::SubmitError;

    use super::*;

    #[test]
    fn a_503_carries_retry_after() {
        let error = ApiError::from(SubmitError::Closed);
        let response = error_response(Endpoint::Delta, &error, &Cors::NotBrowser);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from(crate::error::RETRY_AFTER_SECS))
        );
        let internal = error_response(
            Endpoint::Delta,
            &ApiError::Internal("x".into()),
            &Cors::NotBrowser,
        );
        assert!(internal.headers().get(header::RETRY_AFTER).is_none());
    }
}
