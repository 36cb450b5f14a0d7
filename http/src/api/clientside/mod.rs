//! The browser integration: `GET /<accessKey>/cs.js` (the script), `POST
//! /api/clientside/<accessKey>` (a page's events and zones) and `POST
//! /api/clientside/<accessKey>/click` (a click, as a beacon), with their CORS
//! preflights.
//!
//! A browser proves nothing but the access key in the path: a body carrying a secret
//! key is refused, and so is every request from a page whose `Origin` is not one of the
//! account's `clientside.allowed_origins` (a preflight from another origin gets no CORS
//! headers). A page request is read as a serverside call is, by the same parser, with
//! the same 400s (`ip` is the client's address, `userAgent` its header); it is served by
//! the same `AccountJobs::serve` under the same durability, unless it is a crawler's or
//! carries `"tracking": false` (a page without consent): those are answered by
//! `AccountJobs::serve_anonymous`, which records nothing. The 200 is the serverside
//! answer with each zone's `html` for the page (see `html.rs`). Requests are limited per
//! client address and per visitor id (429 with `Retry-After`), and in events and zones.
//!
//! Files: `script.rs` (the script), `html.rs` (zone HTML), `bots.rs` (crawlers).

use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use hyper::Request;
use hyper::body::Incoming;
use serde_json::{Map, Value};
use vitrine_engine::account::ServeOutcome;
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::state::Clicked;
use vitrine_engine::zone::ZoneKind;
use vitrine_fields::{Errors, Fields, KeyMatch};

pub mod bots;
pub mod html;
pub mod limits;
pub mod script;

pub use limits::ClientsideState;
use limits::Keyed;

use crate::api::serverside::MAX_CLIENT_ID_LEN;
use crate::api::{LossWindow, Reply, render, serverside};
use crate::auth::{self, Presented};
use crate::config::{ClientsideConfig, Limits, RateLimit};
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::{AccountEntry, AppState, retry_seconds};

/// Headers of the browser request that the handlers read.
#[derive(Debug)]
struct Browser {
    origin: Option<String>,
    user_agent: String,
    host: Option<String>,
    if_none_match: Option<String>,
    client: IpAddr,
}

impl Browser {
    fn of(headers: &HeaderMap, peer: SocketAddr) -> Browser {
        let text = |name: header::HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Browser {
            origin: text(header::ORIGIN).map(|o| o.to_ascii_lowercase()),
            user_agent: text(header::USER_AGENT).unwrap_or_default(),
            host: text(header::HOST),
            if_none_match: text(header::IF_NONE_MATCH),
            client: client_address(headers, peer.ip()),
        }
    }
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

/// The access key in a browser path: `/<key>/cs.js`, `/api/clientside/<key>[/click]`.
fn access_key(endpoint: Endpoint, path: &str) -> &str {
    let key = match endpoint {
        Endpoint::ClientScript => path
            .strip_prefix('/')
            .and_then(|p| p.strip_suffix("/cs.js")),
        Endpoint::ClientClick => path
            .strip_prefix("/api/clientside/")
            .and_then(|p| p.strip_suffix("/click")),
        _ => path.strip_prefix("/api/clientside/"),
    };
    key.unwrap_or_default()
}

/// Answers a request to one of the browser endpoints; every answer, errors included,
/// carries the CORS headers its origin is allowed.
pub async fn route(
    state: &std::sync::Arc<AppState>,
    endpoint: Endpoint,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Result<Reply, ApiError> {
    let path = request.uri().path().to_owned();
    let key = percent_decoded(access_key(endpoint, &path));
    let browser = Browser::of(request.headers(), peer);
    let method = request.method().clone();
    if endpoint == Endpoint::ClientScript {
        if method != Method::GET {
            return Err(ApiError::WrongMethod(format!(
                "method {method} is not allowed on {path}; use GET"
            )));
        }
        return Ok(serve_script(state, &key, &browser));
    }
    let entry = auth::authenticate(state, endpoint, Presented::access_key(&key));
    let entry = match entry {
        Ok(entry) => entry,
        Err(error) => return Ok(failed(endpoint, &error, None)),
    };
    let cors = Cors::of(&entry.config.clientside, browser.origin.as_deref());
    if cors == Cors::Refused {
        let origin = browser.origin.unwrap_or_default();
        let error = ApiError::Forbidden(format!(
            "Origin: {origin:?} is not one of the account's clientside.allowed_origins"
        ));
        return Ok(failed(endpoint, &error, None));
    }
    if method == Method::OPTIONS {
        return Ok(preflight(cors.origin()));
    }
    if method != Method::POST {
        let error = ApiError::WrongMethod(format!(
            "method {method} is not allowed on {path}; use POST"
        ));
        return Ok(failed(endpoint, &error, cors.origin()));
    }
    let limit = state.config().limits.max_body_bytes;
    let body = match crate::api::read_body(request, limit).await {
        Ok(body) => body,
        Err(error) => return Ok(failed(endpoint, &error, cors.origin())),
    };
    let now = crate::clock::now_millis();
    let answered = if endpoint == Endpoint::ClientClick {
        click(&entry, &browser, &body, now)
    } else if crate::api::may_fsync(state, endpoint) {
        let state = std::sync::Arc::clone(state);
        let entry = std::sync::Arc::clone(&entry);
        tokio::task::spawn_blocking(move || page(&state, &entry, &browser, &body, now))
            .await
            .map_err(ApiError::from)
            .and_then(|answer| answer)
    } else {
        page(state, &entry, &browser, &body, now)
    };
    Ok(match answered {
        Ok(reply) => with_cors(reply, cors.origin()),
        Err(error) => failed(endpoint, &error, cors.origin()),
    })
}

/// A path segment with `%XX` escapes decoded (an access key may hold any character).
fn percent_decoded(segment: &str) -> String {
    form_urlencoded::parse(format!("k={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// What a request's `Origin` allows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cors {
    /// No `Origin`: not a cross-origin browser request (a tool, a server); served, with
    /// no CORS headers.
    NotCrossOrigin,
    /// One of the account's `clientside.allowed_origins`: served, and named in
    /// `Access-Control-Allow-Origin`.
    Allowed(String),
    /// Any other origin: refused.
    Refused,
}

impl Cors {
    fn of(config: &ClientsideConfig, origin: Option<&str>) -> Cors {
        match origin {
            None => Cors::NotCrossOrigin,
            Some(origin) if config.allowed_origins.iter().any(|o| o == origin) => {
                Cors::Allowed(origin.to_owned())
            }
            Some(_) => Cors::Refused,
        }
    }

    /// The origin to name in `Access-Control-Allow-Origin`.
    fn origin(&self) -> Option<&str> {
        match self {
            Cors::Allowed(origin) => Some(origin),
            Cors::NotCrossOrigin | Cors::Refused => None,
        }
    }
}

fn with_cors(mut reply: Reply, origin: Option<&str>) -> Reply {
    reply.headers.push(("Vary", "Origin".to_owned()));
    if let Some(origin) = origin {
        reply
            .headers
            .push(("Access-Control-Allow-Origin", origin.to_owned()));
    }
    reply
}

/// A 204 to an allowed preflight: POST with a JSON body, for two hours.
fn preflight(origin: Option<&str>) -> Reply {
    let mut reply = with_cors(
        Reply {
            status: StatusCode::NO_CONTENT,
            content_type: "text/plain",
            headers: Vec::new(),
            body: Vec::new(),
            window: None,
        },
        origin,
    );
    reply
        .headers
        .push(("Access-Control-Allow-Methods", "POST".to_owned()));
    reply
        .headers
        .push(("Access-Control-Allow-Headers", "Content-Type".to_owned()));
    reply
        .headers
        .push(("Access-Control-Max-Age", "7200".to_owned()));
    reply
}

/// An error as its endpoint answers it, with the CORS headers the origin is allowed.
fn failed(endpoint: Endpoint, error: &ApiError, origin: Option<&str>) -> Reply {
    let mut headers = Vec::new();
    if let Some(seconds) = error.retry_after() {
        headers.push(("Retry-After", seconds.to_string()));
    }
    with_cors(
        Reply {
            status: error.status(endpoint),
            content_type: "application/json",
            headers,
            body: error.body(endpoint),
            window: None,
        },
        origin,
    )
}

/// The script of the account, or a 404 saying why as a JavaScript comment.
fn serve_script(state: &AppState, key: &str, browser: &Browser) -> Reply {
    let script = |status, text: String, headers| Reply {
        status,
        content_type: script::CONTENT_TYPE,
        headers,
        body: text.into_bytes(),
        window: None,
    };
    let entry = state
        .account(key)
        .filter(|entry| entry.config.region == state.config().region);
    let Some(entry) = entry else {
        let quoted = serde_json::Value::from(key)
            .to_string()
            .replace("*/", "*\\/");
        return script(
            StatusCode::NOT_FOUND,
            format!("/* vitrine: no account of this server has the access key {quoted} */\n"),
            Vec::new(),
        );
    };
    let Some(host) = browser.host.as_deref().filter(|h| script::is_host(h)) else {
        return script(
            StatusCode::BAD_REQUEST,
            "/* vitrine: the request has no usable Host header */\n".to_owned(),
            Vec::new(),
        );
    };
    let rendered = script::render(key, host, entry.config.clientside.consent_required);
    let headers = vec![
        ("ETag", rendered.etag.clone()),
        ("Cache-Control", script::CACHE_CONTROL.to_owned()),
    ];
    if browser
        .if_none_match
        .as_deref()
        .is_some_and(|tags| script::matches(tags, &rendered.etag))
    {
        return script(StatusCode::NOT_MODIFIED, String::new(), headers);
    }
    script(StatusCode::OK, rendered.text, headers)
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

/// A browser's body, once its client address is within its limit: a JSON object
/// without a secret key.
fn browser_body(
    entry: &AccountEntry,
    browser: &Browser,
    body: &Bytes,
) -> Result<Map<String, Value>, ApiError> {
    let config = &entry.config.clientside;
    admit(
        &entry.clientside.per_ip,
        &browser.client,
        "client address",
        config.per_ip,
    )?;
    let object = object(body)?;
    refuse_secrets(&object)?;
    Ok(object)
}

/// The body as a JSON object, or the 400 a serverside body gets.
fn object(body: &Bytes) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(ApiError::Invalid(vec![format!(
            "body: expected a JSON object, got {}",
            vitrine_fields::kind_of(&other)
        )])),
        Err(e) => Err(ApiError::Invalid(vec![format!("body: invalid JSON: {e}")])),
    }
}

/// A secret key in a browser's body: refused, naming the field.
fn refuse_secrets(object: &Map<String, Value>) -> Result<(), ApiError> {
    let secret = object.keys().find(|key| {
        let lower = key.to_ascii_lowercase();
        lower == "secretkey" || lower == "secret"
    });
    match secret {
        Some(field) => Err(ApiError::Invalid(vec![format!(
            "{field}: a secret key must never be sent from a browser; the browser \
             endpoint takes the access key alone (keep the secret on the store's server)"
        )])),
        None => Ok(()),
    }
}

/// `POST /api/clientside/<key>`: the page's events and zones.
fn page(
    state: &AppState,
    entry: &AccountEntry,
    browser: &Browser,
    body: &Bytes,
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let config = &entry.config.clientside;
    let mut object = browser_body(entry, browser, body)?;
    let tracking = match object.remove("tracking") {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Bool(false)) => false,
        Some(other) => {
            return Err(ApiError::Invalid(vec![format!(
                "tracking: expected a boolean, got {}",
                vitrine_fields::kind_of(&other)
            )]));
        }
    };
    // What a store's server would send of the browser, from the connection.
    object.insert("ip".to_owned(), Value::from(browser.client.to_string()));
    object.insert(
        "userAgent".to_owned(),
        Value::from(browser.user_agent.as_str()),
    );
    let body = Value::Object(object);
    let mut errors = Errors::default();
    let limits = Limits {
        max_events: config.max_events,
        max_zones: config.max_zones,
        ..state.config().limits
    };
    let request = Fields::of(&body, "", KeyMatch::Exact, &mut errors).and_then(|fields| {
        let mut request = serverside::parse(&fields, &limits, now, &mut errors)?;
        if entry.account.campaigns_read_request() {
            request.context = serverside::request_context(&fields);
        }
        Some(request)
    });
    let (Some(request), true) = (request, errors.is_empty()) else {
        return Err(errors.into());
    };
    if let Some(visitor) = &request.visitor_id {
        admit(
            &entry.clientside.per_visitor,
            visitor,
            "visitor",
            config.per_visitor,
        )?;
    }
    let currency = request.currency.unwrap_or(entry.config.default_currency);
    let url = body
        .get("currentUrl")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let tracked = tracking && !bots::is_crawler(&browser.user_agent);
    let outcome = if tracked {
        entry
            .jobs
            .serve(request)
            .map_err(|e| ApiError::from(e).context("the events could not be logged"))?
    } else {
        entry.jobs.serve_anonymous(&request)
    };
    let logged = tracked && !outcome.served.tracked.events.is_empty();
    let notices = outcome
        .notices
        .iter()
        .map(serverside::notice_message)
        .collect();
    let answer = render::response(&outcome, notices, currency, entry.rendering());
    let page = html::Page {
        url: &url,
        currency: currency.code(),
    };
    let fast = !entry.clientside.cards.has_own_card()
        && outcome.zones.iter().all(|zone| {
            outcome
                .spec(zone)
                .is_some_and(|spec| spec.kind == ZoneKind::RecommenderProduct)
        });
    let zones_html = if fast {
        built_in_cards(&outcome)
    } else {
        templated(&entry.clientside.cards, &answer, page)?
    };
    Ok(Reply {
        window: logged.then(|| LossWindow(std::sync::Arc::clone(&entry.jobs))),
        ..Reply::json(with_html(answer, &zones_html))
    })
}

/// Each product zone of the outcome as the built-in card, straight from the catalogue
/// version it was filled from (no template, no JSON read back).
fn built_in_cards(outcome: &ServeOutcome) -> Vec<(String, Option<String>)> {
    outcome
        .zones
        .iter()
        .filter_map(|zone| {
            let spec = outcome.spec(zone)?;
            if zone.items.is_empty() {
                return Some((spec.id.clone(), None));
            }
            let cards = zone.items.iter().filter_map(|item| {
                let product = outcome.catalogue.product(item.product)?;
                Some(html::Card {
                    id: product.id.as_str(),
                    title: product.title.as_str(),
                    link: product.link.as_str(),
                    image: product.image.as_str(),
                    price: item.price.price.display(),
                    was: item.price.was.map(|was| was.display()),
                })
            });
            Some((
                spec.id.clone(),
                Some(html::write_cards(&spec.id, &spec.title, cards)),
            ))
        })
        .collect()
}

/// Each zone of the serverside answer rendered by the account's templates.
fn templated(
    cards: &html::Cards,
    answer: &[u8],
    page: html::Page<'_>,
) -> Result<Vec<(String, Option<String>)>, ApiError> {
    let answer: Value = serde_json::from_slice(answer)
        .map_err(|e| ApiError::Internal(format!("the answer could not be read back: {e}")))?;
    let mut rendered = Vec::new();
    if let Some(zones) = answer.get("zones").and_then(Value::as_object) {
        for (id, zone) in zones {
            let html = cards.zone_html(id, zone, page).map_err(|e| {
                ApiError::Internal(format!("zone {id:?}: the template failed: {e}"))
            })?;
            rendered.push((id.clone(), html));
        }
    }
    Ok(rendered)
}

/// The serverside answer with `"html": {zone id: its HTML, or null}` added.
fn with_html(mut answer: Vec<u8>, zones: &[(String, Option<String>)]) -> Vec<u8> {
    let html: Map<String, Value> = zones
        .iter()
        .map(|(id, html)| (id.clone(), html.clone().map_or(Value::Null, Value::from)))
        .collect();
    if answer.last() == Some(&b'}') {
        answer.pop();
        answer.extend_from_slice(b",\"html\":");
        answer.extend_from_slice(Value::Object(html).to_string().as_bytes());
        answer.push(b'}');
    }
    answer
}

/// `POST /api/clientside/<key>/click`: a click on an item of a zone, counted for the
/// zone (and the visitor's variant of it); a crawler's is ignored. Answered 204.
fn click(
    entry: &AccountEntry,
    browser: &Browser,
    body: &Bytes,
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let config = &entry.config.clientside;
    let body = Value::Object(browser_body(entry, browser, body)?);
    let mut errors = Errors::default();
    let Some(fields) = Fields::of(&body, "", KeyMatch::Exact, &mut errors) else {
        return Err(errors.into());
    };
    let visitor = fields.req_nonempty_str("visitorId", &mut errors);
    if let Some(visitor) = visitor
        && (visitor.len() > MAX_CLIENT_ID_LEN || !visitor.bytes().all(|b| b.is_ascii_graphic()))
    {
        errors.push(
            "visitorId",
            format!("must be 1 to {MAX_CLIENT_ID_LEN} printable ASCII characters without spaces"),
        );
    }
    let zone = fields.req_nonempty_str("zone", &mut errors);
    if let Some(zone) = zone
        && zone.len() > 128
    {
        errors.push("zone", "must be 1 to 128 characters");
    }
    let product = fields.opt_nonempty_str("product", &mut errors);
    if let Some(Err(rejected)) = product.map(vitrine_fields::check_id) {
        errors.push("product", rejected);
    }
    let _ = fields.opt_str("sessionId", &mut errors);
    let (Some(visitor), Some(zone), true) = (visitor, zone, errors.is_empty()) else {
        return Err(errors.into());
    };
    admit(
        &entry.clientside.per_visitor,
        &visitor.to_owned(),
        "visitor",
        config.per_visitor,
    )?;
    if !bots::is_crawler(&browser.user_agent) {
        let clicked = Clicked {
            visitor_id: visitor.to_owned(),
            zone: zone.to_owned(),
            now,
        };
        let counted = entry
            .jobs
            .record_click(&clicked)
            .map_err(|e| ApiError::from(e).context("the click could not be logged"))?;
        if !counted && !entry.config.zones.iter().any(|z| z.id == zone) {
            return Err(ApiError::Invalid(vec![format!(
                "zone: unknown zone {zone:?}"
            )]));
        }
    }
    Ok(Reply {
        status: StatusCode::NO_CONTENT,
        content_type: "text/plain",
        headers: Vec::new(),
        body: Vec::new(),
        window: None,
    })
}
