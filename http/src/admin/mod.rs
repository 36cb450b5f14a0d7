//! `/admin/`: the operators' API, on the main listener, opened by the deployment's
//! admin tokens (`[admin] tokens`, sent as `Authorization: Bearer <token>`, compared in
//! constant time); a store's access or secret key never opens it. Answers are JSON with
//! camelCase fields; errors are `{"error": "..."}` (401 without a bearer token, 403 with
//! one that is not an admin token or when no token is configured, 404 for an unknown
//! path or account, 400 naming the query parameter that is wrong).
//!
//! - `GET /admin/api/accounts`: every account, its catalogue, visitors and zones, and
//!   the caller's token (its label and role).
//! - `GET /admin/api/live`: serverside calls per second and latency now, deltas and
//!   feeds in progress.
//! - `GET /admin/api/campaigns/vocabulary`: the names the campaign document takes
//!   (strategies, filter and condition kinds, page types, ...), for the console.
//! - `GET /admin/api/accounts/{accessKey}/analytics?from=YYYY-MM-DD&to=YYYY-MM-DD`: each
//!   zone's counters per variant, in total and per day (default: the last 30 days).
//! - `GET /admin/api/accounts/{accessKey}/experiments`: each experiment's variants,
//!   compared with its control.
//! - `GET`, `PUT` and `DELETE /admin/api/accounts/{accessKey}/holdout`: the store-wide
//!   holdout, its periods, and what personalization added over it: `holdout.rs`.
//! - `GET /admin/api/accounts/{accessKey}/explain?zone=&visitor=&product=&category=&currency=&pageType=&at=&device=&userAgent=&referrer=&url=`:
//!   a zone as a shopper would see it on a page and from a request, with why each item
//!   is there.
//! - `GET /admin/api/accounts/{accessKey}/catalogue?q=&kind=&limit=`: products,
//!   categories or brands found by id or title, for the console's pickers.
//! - The campaign endpoints (segments, zones' campaign lists, history): `campaigns.rs`;
//!   `POST /admin/api/accounts/{accessKey}/zones/{zone}/preview`, a zone shown as a
//!   shopper would see it with a draft list, and `GET .../visitors/recent?limit=`, the
//!   visitors seen last to preview as: `preview.rs`.
//! - `POST`, `GET` and `DELETE /admin/api/accounts/{accessKey}/zones/{zone}/shadow`: a
//!   draft list judged beside the live one on live traffic: `shadow.rs`.
//! - `POST /admin/api/accounts/{accessKey}/zones/{zone}/backtest`: a draft list judged
//!   beside the live one on the judged moments kept: `backtest.rs`.
//! - `GET /admin/api/accounts/{accessKey}/drafts`; `GET`, `PUT` and `DELETE
//!   .../zones/{zone}/draft` and `.../segments/draft`: drafts kept on the server:
//!   `drafts.rs`.

mod analytics;
mod backtest;
mod campaigns;
mod catalogue;
mod drafts;
mod experiments;
use campaigns::ExperimentWrite;
use constant_time_eq::constant_time_eq;
mod explain;
mod holdout;
mod live;
mod models;
mod preview;
mod request;
use request::{Query, body_json};
mod shadow;

use http::header::{self, HeaderMap};
use serde_json::{Value, json};
use vitrine_engine::catalogue::UnixMillis;

use vitrine_ingest::jobs::DraftPart;

use crate::api::Reply;
use crate::config::AdminToken;
use crate::error::ApiError;
use crate::state::{AccountEntry, AppState};

/// Answers a request under `/admin`.
pub fn handle(
    state: &AppState,
    uri: &http::Uri,
    headers: &HeaderMap,
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let path = uri.path();
    let Some(rest) = path.strip_prefix("/admin/api/") else {
        // The dashboard's page and assets: no data in them, no token needed.
        return page(path);
    };
    let caller = authorize(state, headers)?;
    let query = Query::parse(uri.query().unwrap_or(""));
    let segments: Vec<&str> = rest.split('/').collect();
    let answer = match segments.as_slice() {
        ["accounts"] => {
            query.only(&[])?;
            overview(state, &caller)
        }
        ["campaigns", "vocabulary"] => {
            query.only(&[])?;
            campaigns::vocabulary()
        }
        ["live"] => {
            query.only(&[])?;
            live::figures(state, now)
        }
        ["accounts", key, "analytics"] => {
            query.only(&["from", "to"])?;
            analytics::zones(&*account(state, key)?, &query, now)?
        }
        ["accounts", key, "predictions"] => {
            query.only(&[])?;
            analytics::predictions(&*account(state, key)?)
        }
        ["accounts", key, "models"] => {
            query.only(&[])?;
            models::tuning(&*account(state, key)?)
        }
        ["accounts", key, "experiments"] => {
            query.only(&["lift", "from", "to"])?;
            return experiments::results(&*account(state, key)?, &query, now);
        }
        ["accounts", key, "holdout"] => {
            query.only(&[])?;
            return holdout::results(&*account(state, key)?, now);
        }
        ["accounts", key, "segments"] => {
            campaigns::no_query(&query)?;
            return Ok(campaigns::segments(&*account(state, key)?));
        }
        ["accounts", key, "segments", id, "size"] => {
            campaigns::no_query(&query)?;
            campaigns::named_size(&*account(state, key)?, id, now)?
        }
        ["accounts", key, "zones", zone, "campaigns"] => {
            campaigns::no_query(&query)?;
            return campaigns::zone_campaigns(&*account(state, key)?, zone);
        }
        ["accounts", key, "drafts"] => {
            query.only(&[])?;
            drafts::all(&*account(state, key)?)
        }
        ["accounts", key, "zones", zone, "draft"] => {
            query.only(&[])?;
            drafts::one(&*account(state, key)?, DraftPart::Zone(zone))?
        }
        ["accounts", key, "segments", "draft"] => {
            query.only(&[])?;
            drafts::one(&*account(state, key)?, DraftPart::Segments)?
        }
        ["accounts", key, "campaigns", "history"] => {
            campaigns::no_query(&query)?;
            campaigns::history(&*account(state, key)?)
        }
        ["accounts", key, "campaigns", "restore"] => {
            query.only(&["version", "part"])?;
            campaigns::restore_preview(&*account(state, key)?, &query)?
        }
        ["accounts", key, "campaigns", "history", version] => {
            campaigns::no_query(&query)?;
            campaigns::version(&*account(state, key)?, version)?
        }
        ["accounts", key, "catalogue"] => {
            query.only(&["q", "kind", "limit"])?;
            catalogue::find(&*account(state, key)?, &query)?
        }
        ["accounts", key, "zones", zone, "shadow"] => {
            query.only(&[])?;
            shadow::read(&*account(state, key)?, zone)?
        }
        ["accounts", key, "visitors", "recent"] => {
            query.only(&["limit"])?;
            preview::recent_visitors(&*account(state, key)?, &query)?
        }
        ["accounts", key, "explain"] => {
            query.only(&[
                "zone",
                "visitor",
                "product",
                "category",
                "currency",
                "pageType",
                "at",
                "device",
                "userAgent",
                "referrer",
                "url",
            ])?;
            explain::zone(&*account(state, key)?, &query, now)?
        }
        _ => return Err(ApiError::NoRoute(format!("no admin endpoint at {path}"))),
    };
    Ok(Reply::json(serde_json::to_vec(&answer).unwrap_or_default()))
}

/// Answers a `PUT` or `POST` under `/admin/api/` (on the blocking pool: a change is
/// fsynced before its answer).
pub fn handle_write(
    state: &AppState,
    method: &http::Method,
    uri: &http::Uri,
    headers: &HeaderMap,
    body: &[u8],
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let path = uri.path();
    let Some(rest) = path.strip_prefix("/admin/api/") else {
        return Err(ApiError::WrongMethod(format!(
            "method {method} is not allowed on {path}; use GET"
        )));
    };
    let caller = authorize(state, headers)?;
    Query::parse(uri.query().unwrap_or("")).only(&[])?;
    let segments: Vec<&str> = rest.split('/').collect();
    let allowed = |expected: &[http::Method]| {
        if expected.contains(method) {
            return Ok(());
        }
        let names: Vec<&str> = expected.iter().map(http::Method::as_str).collect();
        Err(ApiError::WrongMethod(format!(
            "method {method} is not allowed on {path}; use {}",
            names.join(" or ")
        )))
    };
    let json = |reply: Value| Ok(Reply::json(serde_json::to_vec(&reply).unwrap_or_default()));
    // A change of the campaigns, by an editor.
    let change = |key: &str, write: campaigns::Write<'_>| {
        campaigns::write(
            &*account(state, key)?,
            editor(&caller)?,
            write,
            headers,
            body,
            now,
        )
    };
    use http::Method;
    match segments.as_slice() {
        // Reads with a body: any admin token.
        ["accounts", key, "segments", "size"] => {
            allowed(&[Method::POST])?;
            json(campaigns::draft_size(
                &*account(state, key)?,
                &body_json(body)?,
                now,
            )?)
        }
        ["accounts", key, "zones", zone, "backtest"] => {
            allowed(&[Method::POST])?;
            json(backtest::run(
                &*account(state, key)?,
                zone,
                &body_json(body)?,
            )?)
        }
        ["accounts", key, "zones", zone, "preview"] => {
            allowed(&[Method::POST])?;
            json(preview::zone(
                &*account(state, key)?,
                zone,
                &body_json(body)?,
                now,
            )?)
        }
        // Changes: an editor's token.
        ["accounts", key, "zones", zone, "draft"] => {
            allowed(&[Method::PUT, Method::DELETE])?;
            let part = DraftPart::Zone(zone);
            drafts::write(
                &*account(state, key)?,
                editor(&caller)?,
                part,
                method,
                body,
                now,
            )
        }
        ["accounts", key, "segments", "draft"] => {
            allowed(&[Method::PUT, Method::DELETE])?;
            let part = DraftPart::Segments;
            drafts::write(
                &*account(state, key)?,
                editor(&caller)?,
                part,
                method,
                body,
                now,
            )
        }
        ["accounts", key, "zones", zone, "shadow"] => {
            allowed(&[Method::POST, Method::DELETE])?;
            let entry = account(state, key)?;
            editor(&caller)?;
            if *method == Method::DELETE {
                json(shadow::stop(&entry, zone)?)
            } else {
                json(shadow::start(&entry, zone, &body_json(body)?, now)?)
            }
        }
        ["accounts", key, "segments"] => {
            allowed(&[Method::PUT])?;
            change(key, campaigns::Write::Segments)
        }
        ["accounts", key, "zones", zone, "campaigns"] => {
            allowed(&[Method::PUT, Method::DELETE])?;
            if *method == Method::DELETE {
                change(key, campaigns::Write::RemoveZone(zone))
            } else {
                change(key, campaigns::Write::Zone(zone))
            }
        }
        ["accounts", key, "campaigns", "restore"] => {
            allowed(&[Method::POST])?;
            change(key, campaigns::Write::Restore)
        }
        ["accounts", key, "holdout"] => {
            allowed(&[Method::PUT, Method::DELETE])?;
            change(key, campaigns::Write::Holdout(*method == Method::PUT))
        }
        ["accounts", key, "experiments", id] => {
            allowed(&[Method::PUT, Method::DELETE])?;
            let action = if *method == Method::DELETE {
                ExperimentWrite::Delete
            } else {
                ExperimentWrite::Put
            };
            change(key, campaigns::Write::Experiment(id, action))
        }
        [
            "accounts",
            key,
            "experiments",
            id,
            action @ ("start" | "stop" | "end"),
        ] => {
            allowed(&[Method::POST])?;
            let action = match *action {
                "start" => ExperimentWrite::Start,
                "stop" => ExperimentWrite::Stop,
                _ => ExperimentWrite::End,
            };
            change(key, campaigns::Write::Experiment(id, action))
        }
        _ => Err(ApiError::WrongMethod(format!(
            "method {method} is not allowed on {path}"
        ))),
    }
}

/// The caller, when its token is an editor's (a viewer's change is a 403).
fn editor(caller: &AdminToken) -> Result<&AdminToken, ApiError> {
    if caller.role == crate::config::AdminRole::Editor {
        Ok(caller)
    } else {
        Err(ApiError::Forbidden(format!(
            "the token {:?} is a viewer's: it may read, not change",
            caller.label
        )))
    }
}

/// The dashboard: its page and assets, embedded in the binary.
const PAGES: [(&str, &str, &[u8]); 13] = [
    (
        "/admin/",
        "text/html; charset=utf-8",
        include_bytes!("../../assets/admin/index.html"),
    ),
    (
        "/admin/assets/app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/app.js"),
    ),
    (
        "/admin/assets/experiments.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/experiments.js"),
    ),
    (
        "/admin/assets/console.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/console.js"),
    ),
    (
        "/admin/assets/drafts.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/drafts.js"),
    ),
    (
        "/admin/assets/zoned.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/zoned.js"),
    ),
    (
        "/admin/assets/editor.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/editor.js"),
    ),
    (
        "/admin/assets/merchandise.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/merchandise.js"),
    ),
    (
        "/admin/assets/history.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/history.js"),
    ),
    (
        "/admin/assets/segments.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/admin/segments.js"),
    ),
    (
        "/admin/assets/app.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/admin/app.css"),
    ),
    (
        "/admin/assets/uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/vendor/uPlot-1.6.32/uPlot.iife.min.js"),
    ),
    (
        "/admin/assets/uPlot.min.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/vendor/uPlot-1.6.32/uPlot.min.css"),
    ),
];

/// A page or asset of the dashboard (`/admin` goes to `/admin/`).
fn page(path: &str) -> Result<Reply, ApiError> {
    if path == "/admin" {
        let mut reply = Reply::text("see /admin/".to_owned());
        reply.status = http::StatusCode::MOVED_PERMANENTLY;
        reply.headers.push(("location", "/admin/".to_owned()));
        return Ok(reply);
    }
    let (_, content_type, body) = PAGES
        .iter()
        .find(|(p, _, _)| *p == path)
        .ok_or_else(|| ApiError::NoRoute(format!("no admin page at {path}")))?;
    Ok(Reply {
        status: http::StatusCode::OK,
        content_type,
        headers: vec![
            (
                "content-security-policy",
                "default-src 'self'; img-src * data:; style-src 'self' 'unsafe-inline'; \
                 frame-ancestors 'none'"
                    .to_owned(),
            ),
            ("x-content-type-options", "nosniff".to_owned()),
            ("cache-control", "no-cache".to_owned()),
        ],
        body: body.to_vec(),
        window: None,
    })
}

/// Checks the bearer token against every admin token (each compared in full, in
/// constant time).
fn authorize(state: &AppState, headers: &HeaderMap) -> Result<AdminToken, ApiError> {
    let config = state.config();
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .ok_or_else(|| {
            ApiError::Unauthorized(
                "Authorization: expected \"Bearer <admin token>\" (an admin token from [admin] tokens)"
                    .to_owned(),
            )
        })?;
    if config.admin_tokens.is_empty() {
        return Err(ApiError::Forbidden(
            "the admin API is closed: no [admin] tokens are configured".to_owned(),
        ));
    }
    // Every token compared in full, in constant time; the last that matches is kept.
    let mut matched = None;
    for token in &config.admin_tokens {
        if constant_time_eq(token.token.as_bytes(), given.as_bytes()) {
            matched = Some(token.clone());
        }
    }
    matched.ok_or_else(|| {
        ApiError::Forbidden(
            "Authorization: the bearer token is not an admin token of this server".to_owned(),
        )
    })
}

fn account(state: &AppState, key: &str) -> Result<std::sync::Arc<AccountEntry>, ApiError> {
    state
        .account(key)
        .ok_or_else(|| ApiError::NotFound(format!("no account with access key {key:?}")))
}

/// `GET /admin/api/accounts`, with the caller's token's label and role (the console
/// shows a viewer no edit controls).
fn overview(state: &AppState, caller: &AdminToken) -> Value {
    let accounts: Vec<Value> = state
        .accounts()
        .iter()
        .map(|entry| {
            let account = &entry.account;
            let settings = account.settings();
            let zones: Vec<Value> = settings
                .zones
                .iter()
                .map(|zone| {
                    json!({
                        "id": zone.id,
                        "title": zone.title,
                        "type": zone.kind.name(),
                        "strategy": zone.strategy.map(|s| s.name()),
                        "fallback": zone.fallback.iter().map(|s| s.name()).collect::<Vec<_>>(),
                        "count": zone.count,
                    })
                })
                .collect();
            json!({
                "accessKey": entry.config.access_key,
                "region": entry.config.region.name(),
                "defaultCurrency": settings.default_currency.code(),
                "products": account.catalogue().len(),
                "visitors": account.visitor_count(),
                "sessions": account.session_count(),
                "attributionDays": settings.attribution_days,
                "zones": zones,
            })
        })
        .collect();
    json!({
        "accounts": accounts,
        "token": {"label": caller.label, "role": caller.role.name()},
    })
}
