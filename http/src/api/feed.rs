//! `POST /api/productfeed` and `POST /api/productfeedstatus`.
//!
//! A submitted feed URL becomes a job with a token: the 200 is `text/plain` with a
//! message containing the token, and the token is repeated in the `X-Feed-Token` header.

use serde::Serialize;
use serde_json::Value;
use vitrine_engine::catalogue::UnixMillis;
use vitrine_fields::Errors;
use vitrine_ingest::fetch::is_private_host;
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
        && let Err(message) = check_feed_url(url, state.config().allow_private_feed_addresses)
    {
        errors.push("url", message);
    }
    let url = errors.into_result(url.unwrap_or_default())?;
    let token = entry.jobs.submit_feed(url, now)?;
    tracing::info!(account = %entry.config.access_key, %token, %url, "feed submitted");
    state.run_feed(&entry, token.clone());
    let mut reply = Reply::text(format!("Feed accepted for processing. Token: {token}\n"));
    reply.headers.push(("X-Feed-Token", token));
    Ok(reply)
}

/// Checks a feed URL: http or https, a host, no credentials; a literal private or
/// loopback address (or `localhost`) only when the configuration allows it. Host names
/// are checked again when they are resolved for the download.
pub fn check_feed_url(url: &str, allow_private: bool) -> Result<(), String> {
    if url.len() > MAX_FEED_URL_LEN {
        return Err(format!("must be at most {MAX_FEED_URL_LEN} bytes"));
    }
    let uri: http::Uri = url
        .parse()
        .map_err(|_| format!("{url:?} is not a valid URL"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => {
            return Err(format!(
                "scheme {other:?} is not allowed; use http or https"
            ));
        }
        None => {
            return Err(format!(
                "{url:?} is not an absolute URL; use http:// or https://"
            ));
        }
    }
    let Some(authority) = uri.authority() else {
        return Err(format!("{url:?} has no host"));
    };
    if authority.as_str().contains('@') {
        return Err("must not carry credentials (user:password@)".to_owned());
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("{url:?} has no host"));
    }
    if !allow_private && is_private_host(host) {
        return Err(format!(
            "host {host:?} is a private or loopback address; such feeds are refused unless \
             feeds.allow_private_addresses = true"
        ));
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
        assert!(check_feed_url("https://shop.example/feed.json", false).is_ok());
        assert!(check_feed_url("http://shop.example:8080/f?x=1", false).is_ok());
        assert!(
            check_feed_url("ftp://shop.example/feed.json", false)
                .unwrap_err()
                .contains("scheme \"ftp\"")
        );
        assert!(check_feed_url("shop.example/feed.json", false).is_err());
        assert!(
            check_feed_url("https://user:pw@shop.example/f", false)
                .unwrap_err()
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
                check_feed_url(private, false)
                    .unwrap_err()
                    .contains("allow_private_addresses"),
                "{private}"
            );
            assert!(check_feed_url(private, true).is_ok(), "{private}");
        }
    }
}
