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

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http::{HeaderMap, StatusCode, header};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_fields::{Fields, JsonValue};

pub mod bots;
mod click;
mod cors;
pub mod html;
pub mod limits;
mod page;
pub mod script;

pub use cors::{Cors, preflight};
pub use limits::ClientsideState;
use limits::Keyed;

use crate::api::Reply;
use crate::auth::{self, Presented, WithoutSecret};
use crate::config::RateLimit;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::{AccountEntry, AppState, retry_seconds};

/// Headers of the browser request that the handlers read.
#[derive(Debug)]
struct Browser {
    user_agent: String,
    client: IpAddr,
}

impl Browser {
    fn of(headers: &HeaderMap, peer: SocketAddr) -> Browser {
        Browser {
            user_agent: text(headers, header::USER_AGENT).unwrap_or_default(),
            client: client_address(headers, peer.ip()),
        }
    }
}

fn text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The client's address: the connection's peer, or, when that peer is on loopback or a
/// private network (a proxy or TLS terminator in front of Vitrine), the first address of
/// its `X-Forwarded-For`.
fn client_address(headers: &HeaderMap, peer: IpAddr) -> IpAddr {
    let proxied = match peer {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private(),
        IpAddr::V6(v6) => v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00,
    };
    if !proxied {
        return peer;
    }
    headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .and_then(|list| list.split(',').next())
        .and_then(|first| first.trim().parse().ok())
        .unwrap_or(peer)
}

/// A browser's request let in: the account its path names, and the browser.
#[derive(Debug)]
pub struct Visit {
    entry: Arc<AccountEntry>,
    browser: Browser,
}

/// What the door of a request says.
#[derive(Debug)]
pub enum Door {
    /// Not a browser's POST endpoint: the router goes on as for any endpoint.
    NotBrowser,
    /// A browser's request, let in, and the CORS headers its answers carry.
    Visit(Visit, Cors),
    /// A browser's request, refused (unknown key, another region's account, a rate
    /// limit, an origin the account does not allow): answered with `Vary: Origin` and
    /// no other CORS header.
    Refused(ApiError),
}

/// The door of the browser's POST endpoints: the account of the access key in the path
/// (checked as every credential is: its region, the endpoint's rate limit), and the
/// page's origin against the account's allowed origins.
pub fn open(
    state: &AppState,
    endpoint: Endpoint,
    key: Option<&str>,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Door {
    let (Some(without_secret), Some(key)) = (WithoutSecret::of(endpoint), key) else {
        return Door::NotBrowser;
    };
    if !matches!(endpoint, Endpoint::ClientSide | Endpoint::ClientClick) {
        return Door::NotBrowser;
    }
    let key = percent_decoded(key);
    let entry = match auth::authenticate(state, Presented::access_key(without_secret, &key)) {
        Ok(entry) => entry,
        Err(error) => return Door::Refused(error),
    };
    let origin = text(headers, header::ORIGIN).map(|o| o.to_ascii_lowercase());
    match Cors::of(&entry.config.clientside, origin.as_deref()) {
        Some(cors) => Door::Visit(
            Visit {
                entry,
                browser: Browser::of(headers, peer),
            },
            cors,
        ),
        None => Door::Refused(ApiError::Forbidden(format!(
            "Origin: {:?} is not one of the account's clientside.allowed_origins",
            origin.unwrap_or_default()
        ))),
    }
}

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

/// A path segment with `%XX` escapes decoded (an access key may hold any character).
fn percent_decoded(segment: &str) -> String {
    if !segment.contains('%') {
        return segment.to_owned();
    }
    form_urlencoded::parse(format!("k={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
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

/// Takes one request out of a keyed limit, or a 429 naming the limit.
fn admit<K: std::hash::Hash + Eq + Clone>(
    limiter: &Keyed<K>,
    key: &K,
    what: &str,
    limit: RateLimit,
) -> Result<(), ApiError> {
    limiter.check_key(key).map_err(|not_until| {
        let seconds = retry_seconds(&not_until);
        ApiError::RateLimited(
            format!(
                "rate limit of {} requests per second per {what} exceeded; retry after {seconds} s",
                limit.per_second
            ),
            seconds,
        )
    })
}

/// The client address's limit, then the body's top level: an object without a secret
/// key, or the 400 a serverside body gets.
fn browser_fields<'v, V: JsonValue>(
    visit: &Visit,
    body: &'v V,
) -> Result<Fields<'v, 'static, V>, ApiError> {
    let config = &visit.entry.config.clientside;
    admit(
        &visit.entry.clientside.per_ip,
        &visit.browser.client,
        "client address",
        config.per_ip,
    )?;
    let mut errors = vitrine_fields::Errors::default();
    let Some(fields) = Fields::of(body, "", vitrine_fields::KeyMatch::Exact, &mut errors) else {
        return Err(errors.into());
    };
    let secret = body.members().into_iter().find_map(|(key, _)| {
        let lower = key.to_ascii_lowercase();
        (lower == "secretkey" || lower == "secret").then(|| key.to_owned())
    });
    match secret {
        Some(field) => Err(ApiError::Invalid(vec![format!(
            "{field}: a secret key must never be sent from a browser; the browser \
             endpoint takes the access key alone (keep the secret on the store's server)"
        )])),
        None => Ok(fields),
    }
}
