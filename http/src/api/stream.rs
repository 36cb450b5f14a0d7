//! Feeds streamed by the vendor's store plugins (beyond the contract): form posts
//! `POST /feed-create`, `/feed-append` (repeated) and `/feed-close` with the fields
//! `accessKey`, `secretKey`, `feedName` (`<type>-<hex>`), `payLoad` (absent on the
//! orders feed's close) and `php`. Pieces are spooled by `vitrine-ingest` as they
//! arrive; `feed-close` answers at once and the feed runner checks and applies the feed
//! in the background, under the feed's name as its token in `/api/productfeedstatus`.
//! The plugins only look for a 2xx, so every refusal is also logged.

use serde_json::{Map, Value};
use vitrine_fields::Errors;

use crate::api::Reply;
use crate::auth::authenticated;
use crate::clock::now_millis;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Handles one piece of a streamed feed.
pub fn handle(state: &AppState, endpoint: Endpoint, body: &[u8]) -> Result<Reply, ApiError> {
    let outcome = piece(state, endpoint, body);
    if let Err(error) = &outcome {
        tracing::warn!(endpoint = endpoint.name(), error = %error.messages().join("; "), "streamed feed piece refused");
    }
    outcome
}

fn piece(state: &AppState, endpoint: Endpoint, body: &[u8]) -> Result<Reply, ApiError> {
    let form = form_object(body);
    let (entry, fields) = authenticated(state, &form, endpoint)?;
    let mut errors = Errors::default();
    let name = fields.req_nonempty_str("feedName", &mut errors);
    let payload = match endpoint {
        Endpoint::FeedClose => fields.opt_str("payLoad", &mut errors),
        _ => fields.req_str("payLoad", &mut errors),
    };
    let name = errors.into_result(name.unwrap_or_default())?;
    let piece = payload.unwrap_or_default().as_bytes();
    let limit = state.config().feeds.max_bytes;
    let jobs = &entry.jobs;
    let account = &entry.config.access_key;
    match endpoint {
        Endpoint::FeedCreate => {
            let kind = jobs.stream_create(name, piece, limit)?;
            tracing::info!(%account, feed = %name, ?kind, "streamed feed opened");
            Ok(Reply::text(format!("Feed {name} opened\n")))
        }
        Endpoint::FeedAppend => {
            jobs.stream_append(name, piece, limit)?;
            Ok(Reply::text(format!("Feed {name} appended\n")))
        }
        _ => {
            let token = jobs.stream_close(name, payload.map(str::as_bytes), limit, now_millis())?;
            tracing::info!(%account, feed = %name, "streamed feed closed; processing");
            state.run_feed(&entry, token.clone());
            let mut reply = Reply::text(format!("Feed accepted for processing. Token: {token}\n"));
            reply.headers.push(("X-Feed-Token", token));
            Ok(reply)
        }
    }
}

/// An `application/x-www-form-urlencoded` body as a JSON object of strings (`+` is a
/// space, as PHP's `http_build_query` writes it; a repeated field keeps its last value),
/// so that credentials and fields are read like every other body.
pub fn form_object(body: &[u8]) -> Value {
    let mut object = Map::new();
    for (key, value) in form_urlencoded::parse(body) {
        object.insert(key.into_owned(), Value::String(value.into_owned()));
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use vitrine_fields::{Fields, KeyMatch};

    use super::*;

    #[test]
    fn a_php_form_body_reads_as_strings() {
        let form = form_object(
            b"accessKey=k&feedName=product-6b03e5f088f3e&payLoad=%7B%22Version%22%3A+2%2C+%22Products%22%3A%5B&php=8.2.36",
        );
        let mut errors = Errors::default();
        let fields = Fields::of(&form, "", KeyMatch::Exact, &mut errors).unwrap();
        assert_eq!(
            fields.req_str("payLoad", &mut errors),
            Some("{\"Version\": 2, \"Products\":[")
        );
        assert_eq!(fields.req_str("php", &mut errors), Some("8.2.36"));
        assert!(errors.is_empty());
    }
}
