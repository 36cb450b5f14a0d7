//! `POST /api/serverside`: track events and fill zones in one call.
//!
//! The whole request is validated before anything is recorded; every problem is
//! reported with its JSON path in the `errors` of a 400. A valid request is handed to
//! [`vitrine_engine::Account::serve`] and its outcome written as the 200 body.
//!
//! A body of the shapes every page sends is read in one pass straight into its request
//! ([`shape`]); any other body, and every one with a problem, is read whole into a
//! [`Json`] document and validated by [`parse`], whose errors are the answer's.

use std::cell::RefCell;

use vitrine_engine::account::{Notice, ServeRequest};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::money::Currency;
use vitrine_fields::{Bump, Errors, Fields, Json, JsonValue, KeyMatch, index_path, kind_of};

mod checks;
mod context;
mod events;
pub mod shape;

pub use context::{device_class, prepare, request_context};
pub use events::{EVENT_NAMES, MAX_FLAT_LINES, plugin_page_type};

use checks::{
    check_agent, check_ip, check_page, check_url, checked_client_id, currency_of, zone_id_fits,
};

use crate::api::{LossWindow, Reply, render};
use crate::auth;
use crate::config::Limits;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

pub use checks::{MAX_CLIENT_ID_LEN, MAX_LABEL_LEN, MAX_URL_LEN, MAX_USER_AGENT_LEN};
pub use events::MAX_TEXT_LEN;

/// Bytes a thread's body arena may keep between requests; one that grew past it (a
/// large body) is dropped after the request.
const ARENA_KEPT_BYTES: usize = 64 * 1024;

thread_local! {
    /// The arena each thread reads serverside bodies into, reset per request.
    static ARENA: RefCell<Bump> = RefCell::new(Bump::new());
    /// The two buffers each thread writes the JSON paths of events into (an event's,
    /// and its data's), kept between requests.
    static EVENT_PATHS: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
}

/// Handles one request body, as received: read in one pass where it has a shape the
/// plugins send on every page ([`shape`]), else read whole ([`handle`]).
pub fn handle_bytes(state: &AppState, body: &[u8], now: UnixMillis) -> Result<Reply, ApiError> {
    with_arena(|arena| {
        let Some(read) = shape::read(body, arena, &state.config().limits, now) else {
            return read_whole(body, arena, |body| handle(state, body, now));
        };
        let presented =
            auth::Presented::with_secret(Endpoint::Serverside, read.access_key, read.secret);
        let entry = auth::authenticate(state, presented)?;
        Ok(serve_and_write(&entry, read.request, Recording::Tracked, 0)?.reply)
    })
}

/// Reads a request body in place ([`Json`]: strings borrowed from the body, the rest in
/// this thread's arena) and hands it to `then`; a body that is not JSON gets the same
/// 400 as on every endpoint.
pub fn in_place<R>(
    body: &[u8],
    then: impl FnOnce(&Json<'_>) -> Result<R, ApiError>,
) -> Result<R, ApiError> {
    with_arena(|arena| read_whole(body, arena, then))
}

/// `body` read whole into `arena` and handed to `then`.
fn read_whole<'a, R>(
    body: &'a [u8],
    arena: &'a Bump,
    then: impl FnOnce(&Json<'_>) -> Result<R, ApiError>,
) -> Result<R, ApiError> {
    let body = Json::parse(body, arena)
        .map_err(|e| ApiError::Invalid(vec![format!("body: invalid JSON: {e}")]))?;
    then(&body)
}

/// Runs `read` with this thread's body arena, reset.
fn with_arena<R>(read: impl FnOnce(&Bump) -> R) -> R {
    ARENA.with(|arena| match arena.try_borrow_mut() {
        Ok(mut arena) => {
            arena.reset();
            let answer = read(&arena);
            if arena.allocated_bytes() > ARENA_KEPT_BYTES {
                *arena = Bump::new();
            }
            answer
        }
        // Not reached (a handler does not call another), but never a panic.
        Err(_) => read(&Bump::new()),
    })
}

/// Who sent a request to be served, as its parser reads it.
#[derive(Debug, Clone, Copy)]
pub enum Sender<'a> {
    /// A store's server (`/api/serverside`): `currentUrl` and `userAgent` in the body,
    /// `ip` optional.
    Store,
    /// A shopper's browser (the browser endpoint): the user agent from its header, the
    /// address from the connection (the body's are not read); `currentUrl` may be left
    /// out of a page the shopper has not consented to tracking on.
    Browser {
        /// The `User-Agent` header.
        user_agent: &'a str,
        /// Whether the page may be tracked.
        consent: Consent,
    },
}

/// Whether a browser page's shopper consented to tracking (`"tracking": false` says
/// not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consent {
    /// Tracked as a store's server call is.
    Given,
    /// Nothing recorded, and nothing needed beyond what fills the zones.
    NotGiven,
}

/// Whether a served request's events are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recording {
    /// Applied and logged under the account's durability.
    Tracked,
    /// Applied to a scratch copy only (a crawler's page, a page without consent).
    Anonymous,
}

/// A valid request served and written: the 200 (waiting for the log's window when it
/// acknowledges logged events), the outcome it was written from, and its html zones'
/// HTML.
#[derive(Debug)]
pub struct Answered {
    /// The answer.
    pub reply: Reply,
    /// What was served.
    pub outcome: Box<vitrine_engine::account::ServeOutcome>,
    /// The rendered template of each html zone, by place in `outcome.zones`.
    pub html: Vec<Option<String>>,
    /// The currency the prices are in.
    pub currency: Currency,
}

/// Serves a valid request for an account and writes its answer: the tail every served
/// request shares, from a store's server or a browser (`room`: bytes to reserve after
/// the answer for what the caller appends).
pub fn serve_and_write(
    entry: &std::sync::Arc<crate::state::AccountEntry>,
    request: ServeRequest,
    recording: Recording,
    room: usize,
) -> Result<Answered, ApiError> {
    let currency = request.currency.unwrap_or(entry.config.default_currency);
    // Erased identities stripped, events applied, zones filled, then the events logged
    // as `durability.events_fsync` says, all in ingest's one call.
    let outcome = match recording {
        Recording::Tracked => entry
            .jobs
            .serve(request)
            .map_err(|e| ApiError::from(e).context("the events could not be logged"))?,
        Recording::Anonymous => entry.jobs.serve_anonymous(&request),
    };
    let notices = outcome.notices.iter().map(notice_message).collect();
    let logged = recording == Recording::Tracked && !outcome.served.tracked.events.is_empty();
    let written = render::written(&outcome, notices, currency, entry.rendering(), room);
    Ok(Answered {
        reply: Reply {
            window: logged.then(|| LossWindow(std::sync::Arc::clone(&entry.jobs))),
            ..Reply::json(written.body)
        },
        outcome,
        html: written.html,
        currency,
    })
}

/// Handles one parsed request body.
pub fn handle<V: JsonValue>(
    state: &AppState,
    body: &V,
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let mut errors = Errors::default();
    let Some(fields) = Fields::of(body, "", KeyMatch::Exact, &mut errors) else {
        return Err(errors.into());
    };
    let presented = auth::read(&fields, Endpoint::Serverside, &mut errors);
    let entry = match presented {
        Some(presented) => Some(auth::authenticate(state, presented)?),
        None => None,
    };
    let request = parse(
        &fields,
        &state.config().limits,
        now,
        Sender::Store,
        &mut errors,
    );
    let (Some(entry), Some(request), true) = (entry, request, errors.is_empty()) else {
        return Err(errors.into());
    };
    Ok(serve_and_write(&entry, request, Recording::Tracked, 0)?.reply)
}

/// Validates everything but the credentials.
pub fn parse<V: JsonValue>(
    fields: &Fields<'_, '_, V>,
    limits: &Limits,
    now: UnixMillis,
    sender: Sender<'_>,
    errors: &mut Errors,
) -> Option<ServeRequest> {
    let before = errors.total();
    let url = match sender {
        Sender::Browser {
            consent: Consent::NotGiven,
            ..
        } => fields.opt_str("currentUrl", errors),
        Sender::Store
        | Sender::Browser {
            consent: Consent::Given,
            ..
        } => fields.req_str("currentUrl", errors),
    };
    if let Some(url) = url {
        check_page(url, errors);
    }
    let agent = match sender {
        Sender::Store => fields.req_str("userAgent", errors),
        Sender::Browser { user_agent, .. } => Some(user_agent),
    };
    if let Some(agent) = agent {
        check_agent(agent, errors);
    }
    // Absent or empty: the vendor's plugins leave it out of admin and some storefront
    // calls, which know no shopper's address. A browser's is its connection's.
    if let Sender::Store = sender
        && let Some(ip) = fields.opt_nonempty_str("ip", errors)
    {
        check_ip(ip, errors);
    }
    let referer = fields.opt_nonempty_str("referer", errors);
    if let Some(referer) = referer {
        check_url(referer, "referer", errors);
    }
    let visitor_id = client_id(fields, "visitorId", errors);
    let session_id = client_id(fields, "sessionId", errors);
    let currency = fields
        .opt_str("currency", errors)
        .and_then(|code| currency_of(code, errors));
    let mut events = vitrine_engine::event::Events::new();
    if let Some(items) = fields.opt_array("events", errors) {
        if items.len() > limits.max_events {
            errors.push(
                "events",
                format!(
                    "at most {} events per request, got {}",
                    limits.max_events,
                    items.len()
                ),
            );
        } else {
            // The JSON paths of each event and its data, written into two buffers that
            // every event, and every request of this thread, reuses.
            let mut read = |path: &mut String, data_path: &mut String| {
                for (i, item) in items.iter().enumerate() {
                    path.clear();
                    vitrine_fields::push_index_path(path, "events", i);
                    if let Some(event) = events::event(item, path, data_path, errors) {
                        events.push(event);
                    }
                }
            };
            EVENT_PATHS.with(|paths| match paths.try_borrow_mut() {
                Ok(mut paths) => {
                    let (path, data_path) = &mut *paths;
                    read(path, data_path);
                }
                Err(_) => read(&mut String::new(), &mut String::new()),
            });
        }
    }
    let mut zones = vitrine_engine::account::ZoneIds::new();
    if let Some(items) = fields.opt_array("zones", errors) {
        if items.len() > limits.max_zones {
            errors.push(
                "zones",
                format!(
                    "at most {} zones per request, got {}",
                    limits.max_zones,
                    items.len()
                ),
            );
        } else {
            for (i, item) in items.iter().enumerate() {
                if let Some(id) = zone_id(item, i, errors) {
                    zones.push(id);
                }
            }
        }
    }
    let search = events::text_field(fields, "searchterm", errors);
    (errors.total() == before).then_some(ServeRequest {
        search,
        visitor_id,
        session_id,
        currency,
        events,
        zones,
        now,
        // What segments read of where the request comes from, from the fields read
        // above (never looked up again).
        context: request_context(agent, referer, url),
    })
}

/// A zone id: a string, or as the vendor's Magento module sends it, an object
/// `{"id": "HP-01", "data": {...}}` (its `data` is not used).
/// `index` is the item's place in `zones`; its JSON path is written only for an error.
fn zone_id<V: JsonValue>(
    item: &V,
    index: usize,
    errors: &mut Errors,
) -> Option<vitrine_engine::CompactString> {
    let path = || index_path("zones", index);
    let (id, id_path) = if let Some(id) = item.as_text() {
        (id, None)
    } else if item.is_object() {
        let path = path();
        let fields = Fields::of(item, &path, KeyMatch::Exact, errors)?;
        (fields.req_str("id", errors)?, Some(fields.path_of("id")))
    } else {
        errors.push(path(), format!("expected a string, got {}", kind_of(item)));
        return None;
    };
    if !zone_id_fits(id) {
        errors.push(
            id_path.unwrap_or_else(path),
            "expected a zone id of 1 to 128 characters",
        );
        return None;
    }
    Some(id.into())
}

/// `visitorId` / `sessionId`: at most 128 printable ASCII characters; empty means absent.
fn client_id<V: JsonValue>(
    fields: &Fields<'_, '_, V>,
    key: &str,
    errors: &mut Errors,
) -> Option<String> {
    let id = fields.opt_nonempty_str(key, errors)?;
    checked_client_id(id, key, errors)
}

pub fn notice_message(notice: &Notice) -> String {
    match notice {
        Notice::DuplicateOrder { event, order_id } => format!(
            "events[{event}].data.orderid: order {order_id:?} was already recorded; it was not counted again"
        ),
        Notice::UnknownZone { zone, id } => format!("zones[{zone}]: unknown zone {id:?}"),
        Notice::ZoneNotOnPage {
            zone,
            id,
            page_type,
        } => {
            format!(
                "zones[{zone}]: zone {id:?} is not shown on {} pages",
                page_type.name()
            )
        }
    }
}
