//! The browser integration: `GET /<accessKey>/cs.js` (the script), `POST
//! /api/clientside/<accessKey>` (a page's events and zones) and `POST
//! /api/clientside/<accessKey>/click` (a click, as a beacon), with their CORS
//! preflights.
//!
//! They go through the router as every endpoint does (`server::route`: one method
//! check, one body reader, one decision to wait on the disk, one error path). What is
//! theirs is the door, [`open`]: a browser proves nothing but the access key in the
//! path, checked as every credential is, and a request from a page whose `Origin` is
//! not one of the account's `clientside.allowed_origins` is refused. Every answer of the
//! two POST endpoints, errors included, carries the CORS headers its origin is allowed
//! ([`Cors`]).
//!
//! A page request is read in place and parsed as a serverside call is, by the same
//! parser, with the same 400s, and served by the same tail
//! ([`serverside::serve_and_write`]) under the same durability, unless it is a
//! crawler's or carries `"tracking": false` (a page without consent): those are served
//! anonymously, recording nothing. The 200 is the serverside answer with each zone's
//! `html` for the page (`page.rs`). Requests are limited per client address and per
//! visitor id (429 with `Retry-After`), and in events and zones.
//!
//! Files: `page.rs` (a page's request), `click.rs` (a click), `cors.rs` (origins and
//! preflights), `script.rs` (the script), `html.rs` (zone HTML), `bots.rs` (crawlers),
//! `limits.rs` (what an account keeps for browsers).

use http::{HeaderMap, StatusCode, header};
use vitrine_engine::catalogue::UnixMillis;

pub mod bots;
mod click;
mod cors;
pub mod html;
pub mod limits;
mod page;
pub mod script;
mod visit;

pub use cors::{Cors, preflight};
pub use limits::ClientsideState;
pub use visit::{Door, Visit, open};
use visit::{percent_decoded, text};

use crate::api::Reply;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Runs the handler of a browser's POST endpoint on its body.
pub fn dispatch(
    state: &AppState,
    endpoint: Endpoint,
    visit: &Visit,
    body: &[u8],
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    match endpoint {
        Endpoint::ClientClick => click::click(visit, body, now),
        _ => page::page(state, visit, body, now),
    }
}

/// `GET /<accessKey>/cs.js`: the script of the account, kept per host and sent in the
/// best encoding the browser accepts, or a 404 saying why as a JavaScript comment.
pub fn serve_script(state: &AppState, key: &str, headers: &HeaderMap) -> Reply {
    let key = percent_decoded(key);
    let entry = state
        .account(&key)
        .filter(|entry| entry.config.region == state.config().region);
    let Some(entry) = entry else {
        let quoted = serde_json::Value::from(key.as_str())
            .to_string()
            .replace("*/", "*\\/");
        return script::refusal(
            StatusCode::NOT_FOUND,
            format!("/* vitrine: no account of this server has the access key {quoted} */\n"),
        );
    };
    let host = text(headers, header::HOST);
    let Some(host) = host.as_deref().filter(|h| script::is_host(h)) else {
        return script::refusal(
            StatusCode::BAD_REQUEST,
            "/* vitrine: the request has no usable Host header */\n".to_owned(),
        );
    };
    let rendered = entry
        .clientside
        .scripts
        .of(&key, host, entry.config.clientside.consent);
    let accepted = text(headers, header::ACCEPT_ENCODING);
    script::reply(
        &rendered,
        text(headers, header::IF_NONE_MATCH).as_deref(),
        script::Encoding::accepted(accepted.as_deref()),
    )
}
