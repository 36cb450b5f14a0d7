//! `POST /api/clientside/<key>`: a page's events and zones, answered with the
//! serverside answer and each zone's HTML for the page.
//!
//! Besides the serverside fields, a browser's body may carry `tracking` (`false`: the
//! shopper has not consented; nothing is recorded, and `currentUrl` may be left out)
//! and `page` (`{"product_id", "category_id"}`: the page's context, which fills the
//! zones as a `page_view` of that page would when the request has no `page_view`, so
//! that a page without consent needs to send no event). `ip` and `userAgent` are the
//! connection's, whatever the body says.

use vitrine_engine::account::RenderedZone;
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::event::{Event, PageType};
use vitrine_engine::zone::ZoneKind;
use vitrine_fields::{Errors, Fields, Json, JsonValue, KeyMatch};

use super::visit::{Visit, admit, browser_fields};
use super::{bots, html};
use crate::api::render::ProductTexts;
use crate::api::serverside::{self, Answered, Consent, Recording, Sender};
use crate::api::{Reply, render};
use crate::config::Limits;
use crate::error::ApiError;
use crate::state::AppState;

/// Bytes reserved after the serverside answer for the zones' HTML (with the answer's
/// own room, two zones of ten cards fit).
const HTML_ROOM: usize = 4 * 1024;

pub(super) fn page(
    state: &AppState,
    visit: &Visit,
    body: &[u8],
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    serverside::in_place(body, |body| page_in(state, visit, body, now))
}

fn page_in(
    state: &AppState,
    visit: &Visit,
    body: &Json<'_>,
    now: UnixMillis,
) -> Result<Reply, ApiError> {
    let entry = &visit.entry;
    let config = &entry.config.clientside;
    let fields = browser_fields(visit, body)?;
    let mut errors = Errors::default();
    let consent = match fields.opt_bool("tracking", &mut errors) {
        Some(false) => Consent::NotGiven,
        Some(true) | None => Consent::Given,
    };
    let limits = Limits {
        max_events: config.max_events,
        max_zones: config.max_zones,
        ..state.config().limits
    };
    let user_agent = visit.browser.user_agent.as_str();
    let sender = Sender::Browser {
        user_agent,
        consent,
    };
    let request = serverside::parse(&fields, &limits, now, sender, &mut errors);
    let context = page_context(&fields, &mut errors);
    let (Some(mut request), true) = (request, errors.is_empty()) else {
        return Err(errors.into());
    };
    let viewed = request
        .events
        .iter()
        .any(|event| matches!(event, Event::PageView { .. }));
    if let Some(view) = context
        && !viewed
    {
        request.events.insert(0, view);
    }
    let text = |key: &str| fields.get(key).and_then(JsonValue::as_text);
    if let Some(visitor) = &request.visitor_id {
        admit(
            &entry.clientside.per_visitor,
            visitor,
            "visitor",
            config.per_visitor,
        )?;
    }
    let recording = if consent == Consent::Given && !bots::is_crawler(user_agent) {
        Recording::Tracked
    } else {
        Recording::Anonymous
    };
    let answered = serverside::serve_and_write(entry, request, recording, HTML_ROOM)?;
    let page = html::Page {
        url: text("currentUrl").unwrap_or_default(),
        currency: answered.currency.code(),
    };
    let Answered {
        mut reply,
        outcome,
        html,
        currency,
    } = answered;
    // The serverside answer with `"html": {zone id: its HTML, or null}` added, written
    // onto it.
    if reply.body.last() == Some(&b'}') {
        reply.body.pop();
        reply.body.extend_from_slice(b",\"html\":");
        let filled = Filled {
            outcome: &outcome,
            html: &html,
            currency,
        };
        zones_html(visit, &filled, page, &mut reply.body)?;
        reply.body.push(b'}');
    }
    Ok(reply)
}

/// What a served request filled, for its zones' HTML.
struct Filled<'a> {
    outcome: &'a vitrine_engine::account::ServeOutcome,
    html: &'a [Option<String>],
    currency: vitrine_engine::money::Currency,
}

/// `page`: the page's product and category, as the `page_view` they stand for.
fn page_context<V: JsonValue>(fields: &Fields<'_, '_, V>, errors: &mut Errors) -> Option<Event> {
    let page = fields.get("page")?;
    let page = Fields::of(page, "page", KeyMatch::Exact, errors)?;
    let id = |key: &str, errors: &mut Errors| {
        let id = page.opt_id_text(key, errors)?;
        match vitrine_fields::check_id(&id) {
            Ok(()) => Some(vitrine_engine::CompactString::from(id.as_ref())),
            Err(rejected) => {
                errors.push(page.path_of(key), rejected);
                None
            }
        }
    };
    let product_id = id("product_id", errors);
    let category_id = id("category_id", errors);
    let page_type = match (&product_id, &category_id) {
        (Some(_), _) => PageType::ProductPage,
        (None, Some(_)) => PageType::CategoryListingPage,
        (None, None) => return None,
    };
    Some(Event::PageView {
        page_type,
        product_id,
        category_id,
        brand_id: None,
    })
}

/// Each filled zone's HTML for the page, as a JSON object `{zone id: its HTML, or
/// null}`, from what filled it: a product zone's built-in cards straight from the
/// catalogue version it was filled from (written as JSON string contents in one pass,
/// the cards' style with the first of them only), other zones (and product zones with
/// the account's own card template) by their templates.
fn zones_html(
    visit: &Visit,
    answered: &Filled<'_>,
    page: html::Page<'_>,
    out: &mut Vec<u8>,
) -> Result<(), ApiError> {
    let entry = &visit.entry;
    let cards = &entry.clientside.cards;
    let outcome = answered.outcome;
    out.push(b'{');
    let mut written: Vec<&str> = Vec::with_capacity(outcome.zones.len());
    let mut styled = false;
    let texts = entry.rendering().texts.of(&outcome.catalogue);
    for (z, zone) in outcome.zones.iter().enumerate() {
        let Some(spec) = outcome.spec(zone) else {
            continue;
        };
        // A zone asked for twice is written once (as a JSON object's key must be).
        if written.contains(&spec.id.as_str()) {
            continue;
        }
        if !written.is_empty() {
            out.push(b',');
        }
        written.push(&spec.id);
        push_json(out, &spec.id);
        out.push(b':');
        let kind = render::zone_type(outcome, zone, spec);
        if kind == ZoneKind::RecommenderProduct.name() && !cards.has_own_card() {
            if zone.items.is_empty() {
                out.extend_from_slice(b"null");
                continue;
            }
            let card_zone = html::CardZone {
                id: &spec.id,
                title: render::zone_title(outcome, zone, spec),
                style: !styled,
            };
            styled = true;
            out.push(b'"');
            built_in_cards(out, &texts, card_zone, zone);
            out.push(b'"');
            continue;
        }
        let templated = html::Zone {
            id: &spec.id,
            title: render::zone_title(outcome, zone, spec),
            kind,
            items: render::item_values(
                outcome,
                zone,
                answered.currency.symbol_str(),
                entry.rendering(),
            ),
            html: answered.html.get(z).and_then(Option::as_deref),
        };
        let html = cards.zone_html(&templated, page).map_err(|e| {
            ApiError::Internal(format!("zone {:?}: the template failed: {e}", spec.id))
        })?;
        push_json(out, &html);
    }
    out.push(b'}');
    Ok(())
}

/// A value as JSON onto `out`.
fn push_json(out: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    // Writing strings, or options of them, into a Vec cannot fail.
    let _ = serde_json::to_writer(out, value);
}

/// A product zone as the built-in cards, as JSON string contents: each product's
/// markup kept with its text (written once per product, catalogue version and
/// currency), an account or group price written now.
fn built_in_cards(
    out: &mut Vec<u8>,
    texts: &ProductTexts,
    card_zone: html::CardZone<'_>,
    zone: &RenderedZone,
) {
    let escaping = html::Escaping::HtmlInJson;
    html::open_zone(out, escaping, card_zone);
    let cards = |out: &mut Vec<u8>| {
        for item in &zone.items {
            texts.with_card(item, &html::CardInJson, |head, prices| {
                out.extend_from_slice(head.as_bytes());
                out.extend_from_slice(prices.as_bytes());
            });
        }
    };
    // Items that are a zone cache list's first ones are the same cards on every page
    // showing them: written once, copied since.
    match &zone.cached {
        Some(cached) => out.extend_from_slice(cached.markup(|| {
            let mut markup = Vec::new();
            cards(&mut markup);
            markup
        })),
        None => cards(out),
    }
    html::close_zone(out, escaping);
}
