//! `POST /api/productfeed` and `POST /api/productfeedstatus`.
//!
//! A submitted feed URL becomes a job with a token: the 200 is `text/plain` with a
//! message containing the token, and the token is repeated in the `X-Feed-Token` header.

use serde::Serialize;
use serde_json::Value;
use vitrine_engine::catalogue::UnixMillis;
use vitrine_fields::Errors;
use vitrine_ingest::fetch::{Addresses, is_private_host};
use vitrine_ingest::jobs::FeedStatus;

use crate::api::Reply;
use crate::api::tokens;
use crate::auth::authenticated;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Longest feed URL accepted.
pub const MAX_FEED_URL_LEN: usize = 4096;

/// Handles `/api/productfeed`.
pub fn handle_submit(state: &AppState, body: &Value, now: UnixMillis) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated(state, body, Endpoint::ProductFeed)?;
    let mut errors = Errors::default();
    let url = fields.req_nonempty_str("url", &mut errors);
    if let Some(url) = url
        && let Err(message) = check_feed_url(url, state.config().feed_addresses)
    {
        errors.push("url", message.to_string());
    }
    let url = errors.into_result(url.unwrap_or_default())?;
    let token = entry.jobs.submit_feed(url, now)?;
    tracing::info!(account = %entry.config.access_key, %token, %url, "feed submitted");
    state.run_feed(&entry, token.clone());
    let mut reply = Reply::text(format!("Feed accepted for processing. Token: {token}\n"));
    reply.headers.push(("X-Feed-Token", token));
    Ok(reply)
}

/// Why a feed URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeedUrlError {
    /// Longer than [`MAX_FEED_URL_LEN`].
    #[error("must be at most {MAX_FEED_URL_LEN} bytes")]
    TooLong,
    /// Not a URL at all.
    #[error("{0:?} is not a valid URL")]
    Invalid(String),
    /// A scheme other than http or https.
    #[error("scheme {0:?} is not allowed; use http or https")]
    Scheme(String),
    /// No scheme.
    #[error("{0:?} is not an absolute URL; use http:// or https://")]
    NotAbsolute(String),
    /// No host.
    #[error("{0:?} has no host")]
    NoHost(String),
    /// `user:password@` in the URL.
    #[error("must not carry credentials (user:password@)")]
    Credentials,
    /// A literal private or loopback address, or `localhost`.
    #[error(
        "host {0:?} is a private or loopback address; such feeds are refused unless \
         feeds.allow_private_addresses = true"
    )]
    Private(String),
}

/// Checks a feed URL: http or https, a host, no credentials; a literal private or
/// loopback address (or `localhost`) only when `addresses` allows it. Host names are
/// checked again when they are resolved for the download.
pub fn check_feed_url(url: &str, addresses: Addresses) -> Result<(), FeedUrlError> {
    if url.len() > MAX_FEED_URL_LEN {
        return Err(FeedUrlError::TooLong);
    }
    let uri: http::Uri = url
        .parse()
        .map_err(|_| FeedUrlError::Invalid(url.to_owned()))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(FeedUrlError::Scheme(other.to_owned())),
        None => return Err(FeedUrlError::NotAbsolute(url.to_owned())),
    }
    let Some(authority) = uri.authority() else {
        return Err(FeedUrlError::NoHost(url.to_owned()));
    };
    if authority.as_str().contains('@') {
        return Err(FeedUrlError::Credentials);
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err(FeedUrlError::NoHost(url.to_owned()));
    }
    if addresses == Addresses::PublicOnly && is_private_host(host) {
        return Err(FeedUrlError::Private(host.to_owned()));
    }
    Ok(())
}

#[derive(Serialize)]
struct WireFeedStatus<'a> {
    #[serde(rename = "Token")]
    token: &'a str,
    #[serde(rename = "Status")]
    status: &'static str,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(rename = "Detail", skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

/// Handles `/api/productfeedstatus`: one item per token, in request order.
pub fn handle_status(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated(state, body, Endpoint::ProductFeedStatus)?;
    let tokens = tokens(&fields, state.config().limits.max_tokens)?;
    let items: Vec<WireFeedStatus<'_>> = tokens
        .iter()
        .map(|token| {
            let status = entry.jobs.feed_status(token);
            let name = status.name();
            let (error, detail) = match status {
                FeedStatus::Failed(reason) => (Some(reason), None),
                FeedStatus::Complete { detail } => (None, detail),
                FeedStatus::Processing => (None, None),
            };
            WireFeedStatus {
                token,
                status: name,
                error,
                detail,
            }
        })
        .collect();
    Ok(Reply::json(serde_json::to_vec(&items).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feed_urls_are_checked() {
        assert!(check_feed_url("https://shop.example/feed.json", Addresses::PublicOnly).is_ok());
        assert!(check_feed_url("http://shop.example:8080/f?x=1", Addresses::PublicOnly).is_ok());
        assert!(
            check_feed_url("ftp://shop.example/feed.json", Addresses::PublicOnly)
                .unwrap_err()
                .to_string()
                .contains("scheme \"ftp\"")
        );
        assert!(check_feed_url("shop.example/feed.json", Addresses::PublicOnly).is_err());
        assert!(
            check_feed_url("https://user:pw@shop.example/f", Addresses::PublicOnly)
                .unwrap_err()
                .to_string()
                .contains("credentials")
        );
        for private in [
            "http://127.0.0.1/f",
            "http://10.1.2.3/f",
            "http://localhost:80/f",
            "http://[::1]/f",
            "http://192.168.0.1/f",
        ] {
            assert!(
                check_feed_url(private, Addresses::PublicOnly)
                    .unwrap_err()
                    .to_string()
                    .contains("allow_private_addresses"),
                "{private}"
            );
            assert!(
                check_feed_url(private, Addresses::PrivateAllowed).is_ok(),
                "{private}"
            );
        }
    }
}
