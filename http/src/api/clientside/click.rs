//! `POST /api/clientside/<key>/click`: a click on an item of a zone, counted for the
//! zone (and the visitor's variant of it); a crawler's is ignored. Answered 204.

use http::StatusCode;
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::state::Clicked;
use vitrine_fields::Errors;

use super::bots;
use super::visit::{Visit, admit, browser_fields};
use crate::api::Reply;
use crate::api::serverside::{self, MAX_CLIENT_ID_LEN};
use crate::error::ApiError;

pub(super) fn click(visit: &Visit, body: &[u8], now: UnixMillis) -> Result<Reply, ApiError> {
    serverside::in_place(body, |body| {
        let entry = &visit.entry;
        let fields = browser_fields(visit, body)?;
        let mut errors = Errors::default();
        let visitor = fields.req_nonempty_str("visitorId", &mut errors);
        if let Some(visitor) = visitor
            && (visitor.len() > MAX_CLIENT_ID_LEN || !visitor.bytes().all(|b| b.is_ascii_graphic()))
        {
            errors.push(
                "visitorId",
                format!(
                    "must be 1 to {MAX_CLIENT_ID_LEN} printable ASCII characters without spaces"
                ),
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
        let config = &entry.config.clientside;
        admit(
            &entry.clientside.per_visitor,
            &visitor.to_owned(),
            "visitor",
            config.per_visitor,
        )?;
        if !bots::is_crawler(&visit.browser.user_agent) {
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
    })
}
