//! The door of the browser's POST endpoints: a [`Visit`] let in (the account its path
//! names, the browser's headers) or refused, and what every handler behind it checks
//! first (the client address's limit, a body without a secret key).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http::{HeaderMap, header};
use vitrine_fields::{Fields, JsonValue};

use super::cors::Cors;
use super::limits::Keyed;
use crate::auth::{self, Presented, WithoutSecret};
use crate::config::RateLimit;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::{AccountEntry, AppState, retry_seconds};

/// Headers of the browser request that the handlers read.
#[derive(Debug)]
pub(super) struct Browser {
    pub(super) user_agent: String,
    pub(super) client: IpAddr,
}

impl Browser {
    fn of(headers: &HeaderMap, peer: SocketAddr) -> Browser {
        Browser {
            user_agent: text(headers, header::USER_AGENT).unwrap_or_default(),
            client: client_address(headers, peer.ip()),
        }
    }
}

pub(super) fn text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
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
    pub(super) entry: Arc<AccountEntry>,
    pub(super) browser: Browser,
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

/// A path segment with `%XX` escapes decoded (an access key may hold any character).
pub(super) fn percent_decoded(segment: &str) -> String {
    if !segment.contains('%') {
        return segment.to_owned();
    }
    form_urlencoded::parse(format!("k={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// Takes one request out of a keyed limit, or a 429 naming the limit.
pub(super) fn admit<K: std::hash::Hash + Eq + Clone>(
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
pub(super) fn browser_fields<'v, V: JsonValue>(
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
