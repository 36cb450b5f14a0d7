//! `POST /api/serverside`: track events and fill zones in one call.
//!
//! The whole request is validated before anything is recorded; every problem is
//! reported with its JSON path in the `errors` of a 400. A valid request is handed to
//! [`vitrine_engine::Account::serve`] and its outcome written as the 200 body.

use std::cell::RefCell;
use std::net::IpAddr;

use vitrine_engine::account::{Notice, ServeRequest};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::money::Currency;
use vitrine_fields::{Bump, Errors, Fields, Json, JsonValue, KeyMatch, index_path, kind_of};

mod context;
mod events;

pub use context::{device_class, request_context};
pub use events::{EVENT_NAMES, MAX_FLAT_LINES, plugin_page_type};

use crate::api::{LossWindow, Reply, render};
use crate::auth;
use crate::config::Limits;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Longest visitor or session id accepted.
pub const MAX_CLIENT_ID_LEN: usize = 128;
/// Longest URL (currentUrl, referer) accepted.
pub const MAX_URL_LEN: usize = 8192;
/// Longest user agent accepted.
pub const MAX_USER_AGENT_LEN: usize = 4096;
/// Longest page label accepted in place of a `currentUrl` (`magento-admin`).
pub const MAX_LABEL_LEN: usize = 64;
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

/// Handles one request body, as received.
pub fn handle_bytes(state: &AppState, body: &[u8], now: UnixMillis) -> Result<Reply, ApiError> {
    in_place(body, |body| handle(state, body, now))
}

/// Reads a request body in place ([`Json`]: strings borrowed from the body, the rest in
/// this thread's arena) and hands it to `then`; a body that is not JSON gets the same
/// 400 as on every endpoint.
pub fn in_place<R>(
    body: &[u8],
    then: impl FnOnce(&Json<'_>) -> Result<R, ApiError>,
) -> Result<R, ApiError> {
    let read = |arena: &Bump| {
        let body = Json::parse(body, arena)
            .map_err(|e| ApiError::Invalid(vec![format!("body: invalid JSON: {e}")]))?;
        then(&body)
    };
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
    if agent.is_some_and(|agent| agent.len() > MAX_USER_AGENT_LEN) {
        errors.push(
            "userAgent",
            format!("must be at most {MAX_USER_AGENT_LEN} bytes"),
        );
    }
    // Absent or empty: the vendor's plugins leave it out of admin and some storefront
    // calls, which know no shopper's address. A browser's is its connection's.
    if let Sender::Store = sender
        && let Some(ip) = fields.opt_nonempty_str("ip", errors)
        && ip.parse::<IpAddr>().is_err()
    {
        errors.push(
            "ip",
            format!("expected an IPv4 or IPv6 address, got {ip:?}"),
        );
    }
    let referer = fields.opt_nonempty_str("referer", errors);
    if let Some(referer) = referer {
        check_url(referer, "referer", errors);
    }
    let visitor_id = client_id(fields, "visitorId", errors);
    let session_id = client_id(fields, "sessionId", errors);
    let currency = match fields.opt_str("currency", errors) {
        Some(code) => match Currency::from_code(code) {
            Ok(currency) => Some(currency),
            Err(e) => {
                errors.push("currency", e.to_string());
                None
            }
        },
        None => None,
    };
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
    if id.is_empty() || id.len() > 128 {
        errors.push(
            id_path.unwrap_or_else(path),
            "expected a zone id of 1 to 128 characters",
        );
        return None;
    }
    Some(id.into())
}

/// `currentUrl`: an absolute http(s) URL, or a page label without spaces such as the
/// `magento-admin` that the vendor's module sends from the store's back office.
fn check_page(url: &str, errors: &mut Errors) {
    let label = !url.is_empty()
        && !url.contains("://")
        && !url.starts_with('/')
        && url.len() <= MAX_LABEL_LEN
        && url
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    if !label {
        check_url(url, "currentUrl", errors);
    }
}

fn check_url(url: &str, path: &str, errors: &mut Errors) {
    // What follows the scheme, when the URL starts with one (in any case).
    let after = |prefix: &str| {
        url.get(..prefix.len())
            .filter(|start| start.eq_ignore_ascii_case(prefix))
            .and_then(|_| url.get(prefix.len()..))
    };
    let rest = after("http://").or_else(|| after("https://"));
    if url.len() > MAX_URL_LEN {
        errors.push(path, format!("must be at most {MAX_URL_LEN} bytes"));
    } else if rest.is_none_or(|rest| rest.is_empty() || rest.starts_with('/')) {
        errors.push(
            path,
            format!("expected an absolute http or https URL, got {url:?}"),
        );
    } else if has_space_or_control(url) {
        errors.push(path, "must not contain spaces or control characters");
    }
}

/// Whether `text` holds a space or a control character: read byte by byte, in one
/// pass, while it is ASCII (most URLs are), and decoded from its first other byte on.
fn has_space_or_control(text: &str) -> bool {
    for (at, b) in text.bytes().enumerate() {
        if b <= b' ' || b == 0x7f {
            return true;
        }
        if !b.is_ascii() {
            return text
                .get(at..)
                .is_some_and(|rest| rest.chars().any(|c| c.is_control() || c == ' '));
        }
    }
    false
}

/// `visitorId` / `sessionId`: at most 128 printable ASCII characters; empty means absent.
fn client_id<V: JsonValue>(
    fields: &Fields<'_, '_, V>,
    key: &str,
    errors: &mut Errors,
) -> Option<String> {
    let id = fields.opt_nonempty_str(key, errors)?;
    if id.len() > MAX_CLIENT_ID_LEN {
        errors.push(
            key,
            format!(
                "must be at most {MAX_CLIENT_ID_LEN} characters, got {}",
                id.len()
            ),
        );
        return None;
    }
    if !id.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        errors.push(key, "must be printable ASCII without spaces");
        return None;
    }
    Some(id.into())
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

#[cfg(test)]
mod tests {
    use super::{Errors, check_url, has_space_or_control};

    /// A URL is judged as when the part after its scheme was found by searching for
    /// `://`: the same errors for every shape of scheme and rest.
    #[test]
    fn a_url_is_judged_by_what_follows_its_scheme() {
        fn searched(url: &str) -> bool {
            let scheme = |prefix: &str| {
                url.get(..prefix.len())
                    .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
            };
            (scheme("http://") || scheme("https://"))
                && url
                    .split_once("://")
                    .is_some_and(|(_, rest)| !rest.is_empty() && !rest.starts_with('/'))
        }
        for url in [
            "http://",
            "https://",
            "HTTP://shop.example",
            "HtTpS://shop.example/p?x=1",
            "https:/shop.example",
            "http:///shop.example",
            "https:///",
            "ftp://shop.example",
            "httpx://shop.example",
            "https//shop.example",
            "http://shop.example://again",
            "https://caf\u{e9}.example/",
            "h",
            "",
        ] {
            let mut errors = Errors::default();
            check_url(url, "currentUrl", &mut errors);
            assert_eq!(errors.is_empty(), searched(url), "{url:?}");
        }
    }

    /// Read byte by byte or decoded, a text is judged as `char::is_control` judges it.
    #[test]
    fn spaces_and_control_characters_are_found_in_ascii_and_other_text() {
        for text in [
            "https://shop.example/p.html",
            "https://shop.example/a b",
            "https://shop.example/\t",
            "https://shop.example/\u{7f}",
            "https://shop.example/\u{85}",
            "https://shop.example/\u{9f}x",
            "https://shop.example/caf\u{e9}",
            "https://shop.example/\u{a0}",
            "a\tcaf\u{e9}",
            "caf\u{e9}\t",
            "caf\u{e9}\u{85}",
            "",
        ] {
            assert_eq!(
                has_space_or_control(text),
                text.chars().any(|c| c.is_control() || c == ' '),
                "{text:?}"
            );
        }
    }
}
