//! `POST /admin/api/accounts/{accessKey}/zones/{zone}/preview`: "show this zone as…",
//! for the console. A zone as a shopper would see it, live or with a draft campaign
//! list (and draft segments) that is not published, for a visitor of the account or a
//! made-up shopper (new or returning) on a page (its type, product, category), in a
//! currency, at a moment: the campaign shown and why each other one was skipped, the
//! items with why each is there (the explain answer), and the zone's HTML as the
//! browser script would put it into the page. Read-only: nothing is recorded.
//!
//! `GET /admin/api/accounts/{accessKey}/visitors/recent?limit=N`: the visitors seen
//! last, to preview as.
//!
//! The body, every member optional: `{"campaigns": [...], "segments": [...],
//! "shopper": {"visitor": "ID"} or {"returning": true}, "pageType", "product",
//! "category", "currency", "at", "device" or "userAgent", "referrer", "url"}`: the
//! request's device (or a user agent whose device class serving would read), referrer
//! and page URL (its UTM parameters); with none of them, a visitor's latest request.

use serde_json::{Map, Value, json};
use vitrine_engine::account::{ExplainRequest, Explanation, MadeUpShopper};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::event::PageType;
use vitrine_engine::money::Currency;
use vitrine_fields::FieldError;
use vitrine_ingest::campaigns::{self, Installed, Target};

use crate::api::clientside::html;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// The members a preview body may have.
const MEMBERS: [&str; 12] = [
    "campaigns",
    "segments",
    "shopper",
    "pageType",
    "product",
    "category",
    "currency",
    "at",
    "device",
    "userAgent",
    "referrer",
    "url",
];

/// A body's problems, each with its path.
#[derive(Default)]
pub(super) struct Problems(Vec<FieldError>);

impl Problems {
    pub(super) fn add(&mut self, path: &str, message: impl Into<String>) {
        self.0.push(FieldError {
            path: path.to_owned(),
            message: message.into(),
        });
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `400` naming each problem.
    pub(super) fn into_error(self) -> ApiError {
        ApiError::Fields(self.0)
    }
}

/// Visitors answered when `limit` is not given.
const DEFAULT_RECENT: usize = 20;
/// Visitors answered at most.
const MAX_RECENT: usize = 200;

/// The recent visitors answer.
pub(super) fn recent_visitors(
    entry: &AccountEntry,
    query: &super::request::Query,
) -> Result<Value, ApiError> {
    let limit = query.limit("limit", DEFAULT_RECENT, MAX_RECENT)?;
    let visitors: Vec<Value> = entry
        .account
        .recent_visitors(limit)
        .into_iter()
        .map(|v| {
            json!({
                "visitorId": v.id,
                "lastSeen": crate::clock::rfc3339(v.last_seen),
                "sessions": v.sessions,
                "viewed": v.viewed,
                "basket": v.basket,
                "orders": v.orders,
                "identified": v.identified,
            })
        })
        .collect();
    Ok(json!({ "visitors": visitors }))
}

/// The preview answer.
pub(super) fn zone(
    entry: &AccountEntry,
    zone: &str,
    body: &Value,
    now: UnixMillis,
) -> Result<Value, ApiError> {
    let settings = entry.account.settings();
    let Some(spec) = settings.zones.iter().find(|z| z.id == zone) else {
        return Err(ApiError::NotFound(super::request::no_zone(entry, zone)));
    };
    let mut problems = Problems::default();
    let empty = Map::new();
    let members = match body {
        Value::Object(members) => members,
        Value::Null => &empty,
        _ => {
            problems.add("", "expected an object");
            &empty
        }
    };
    for name in members.keys() {
        if !MEMBERS.contains(&name.as_str()) {
            problems.add(
                name,
                format!("unknown member (expected one of {})", MEMBERS.join(", ")),
            );
        }
    }
    let text = |name: &str, problems: &mut Problems| match members.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::String(_)) => None,
        Some(_) => {
            problems.add(name, "expected a string");
            None
        }
    };
    let product = text("product", &mut problems);
    let category = text("category", &mut problems);
    let currency = text("currency", &mut problems).and_then(|code| {
        Currency::from_code(&code)
            .map_err(|e| problems.add("currency", e.to_string()))
            .ok()
    });
    let page_type = text("pageType", &mut problems).and_then(|name| {
        let found = PageType::from_name(&name);
        if found.is_none() {
            problems.add(
                "pageType",
                format!(
                    "expected one of {}, got {name:?}",
                    PageType::ALL.map(PageType::name).join(", ")
                ),
            );
        }
        found
    });
    let at = text("at", &mut problems).map_or(Some(now), |text| {
        let parsed = text.parse::<jiff::Timestamp>().ok();
        if parsed.is_none() {
            problems.add(
                "at",
                format!("expected an RFC 3339 instant such as 2026-11-28T09:00:00Z, got {text:?}"),
            );
        }
        parsed.map(|t| t.as_millisecond())
    });
    let mut texts = Problems::default();
    let mut invalid = Problems::default();
    let context =
        super::explain::made_request(|name| text(name, &mut texts), &mut |name, message| {
            invalid.add(name, message)
        });
    problems.0.extend(texts.0);
    problems.0.extend(invalid.0);
    let (visitor, made_up) = shopper(members.get("shopper"), &mut problems);
    let draft = draft(entry, zone, members, &mut problems);
    if !problems.is_empty() {
        return Err(problems.into_error());
    }
    let request = ExplainRequest {
        zone: zone.to_owned(),
        visitor_id: visitor,
        page_type: page_type.or(product.is_some().then_some(PageType::ProductPage)),
        product,
        currency,
        now: at.unwrap_or(now),
        category,
        context,
        campaigns: draft.map(std::sync::Arc::new),
        made_up,
    };
    let explanation = entry
        .account
        .explain(&request)
        .ok_or_else(|| ApiError::NotFound(super::request::no_zone(entry, zone)))?;
    let mut answer = super::explain::to_json(entry, &request, &explanation);
    // The shown campaign's own title, as serving writes it.
    let shown_title = explanation.campaigns.as_ref().and_then(|c| {
        let campaign = c.set.zone(zone)?.campaigns.get(c.shown?)?;
        campaign.title.clone()
    });
    let html = zone_html(
        entry,
        shown_title.as_deref().unwrap_or(&spec.title),
        zone,
        &explanation,
    );
    if let Value::Object(fields) = &mut answer {
        fields.insert("draft".to_owned(), json!(request.campaigns.is_some()));
        fields.insert("madeUp".to_owned(), json!(made_up.is_some()));
        fields.insert("html".to_owned(), json!(html));
    }
    Ok(answer)
}

/// The shopper: a visitor id, or a made-up shopper; neither: a new shopper without
/// history.
fn shopper(
    value: Option<&Value>,
    problems: &mut Problems,
) -> (Option<String>, Option<MadeUpShopper>) {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return (None, None);
    };
    let Some(members) = value.as_object() else {
        problems.add(
            "shopper",
            "expected an object: {\"visitor\": ID} or {\"returning\": true}",
        );
        return (None, None);
    };
    for name in members.keys() {
        if name != "visitor" && name != "returning" {
            problems.add(
                &format!("shopper.{name}"),
                "unknown member (expected visitor or returning)",
            );
        }
    }
    match (members.get("visitor"), members.get("returning")) {
        (Some(_), Some(_)) => {
            problems.add(
                "shopper",
                "either visitor (a visitor of the account) or returning (a made-up shopper), not both",
            );
            (None, None)
        }
        (Some(Value::String(id)), None) if !id.is_empty() => (Some(id.clone()), None),
        (Some(_), None) => {
            problems.add("shopper.visitor", "expected a visitor id");
            (None, None)
        }
        (None, Some(Value::Bool(returning))) => (
            None,
            Some(MadeUpShopper {
                returning: *returning,
            }),
        ),
        (None, Some(_)) => {
            problems.add("shopper.returning", "expected true or false");
            (None, None)
        }
        (None, None) => (None, None),
    }
}

/// The campaigns with a judged draft, from a body `{"campaigns": [...], "segments":
/// [...]}` as a shadow test and a backtest take it (the list required); every problem
/// named with its path, and a zone the account lacks a 404.
pub(super) fn judged_draft(
    entry: &AccountEntry,
    zone: &str,
    body: &Value,
) -> Result<vitrine_engine::campaign::CampaignSet, ApiError> {
    if !entry.account.settings().zones.iter().any(|z| z.id == zone) {
        return Err(ApiError::NotFound(super::request::no_zone(entry, zone)));
    }
    let empty = Map::new();
    let members = body.as_object().unwrap_or(&empty);
    let mut problems = Problems::default();
    if !body.is_object() {
        problems.add("", "expected an object: {\"campaigns\": [...]}");
    }
    for name in members.keys() {
        if name != "campaigns" && name != "segments" {
            problems.add(name, "unknown member (expected campaigns or segments)");
        }
    }
    if body.is_object() && members.get("campaigns").is_none_or(Value::is_null) {
        problems.add("campaigns", "required: the draft list to judge");
    }
    let draft = draft(entry, zone, members, &mut problems);
    if !problems.is_empty() {
        return Err(problems.into_error());
    }
    draft.ok_or_else(|| ApiError::Internal("a draft without a set".to_owned()))
}

/// The campaigns compiled with the body's draft segments and draft list of `zone`, when
/// it has either; errors name paths in the body.
pub(super) fn draft(
    entry: &AccountEntry,
    zone: &str,
    members: &Map<String, Value>,
    problems: &mut Problems,
) -> Option<vitrine_engine::campaign::CampaignSet> {
    let segments = members.get("segments").filter(|v| !v.is_null());
    let list = members.get("campaigns").filter(|v| !v.is_null());
    if segments.is_none() && list.is_none() {
        return None;
    }
    let settings = entry.account.settings();
    let target = Target {
        zones: &settings.zones,
        time_zone: &settings.time_zone,
    };
    let (document, version) = entry.jobs.campaign_document();
    let mut document = (*document).clone();
    let mut set = (*entry.account.campaigns().compiled()).clone();
    let mut failed = |errors: vitrine_fields::Errors| {
        for error in errors.list() {
            problems.add(&error.path, error.message.clone());
        }
    };
    if let Some(segments) = segments {
        match campaigns::with_segments(
            &document,
            &json!({"segments": segments}),
            version + 1,
            target,
        ) {
            Ok((next, compiled)) => (document, set) = (next, compiled),
            Err(errors) => {
                failed(errors);
                return None;
            }
        }
    }
    if let Some(list) = list {
        match campaigns::with_campaigns(
            Installed {
                document: &document,
                set: &set,
            },
            zone,
            &json!({"campaigns": list}),
            version + 1,
            target,
        ) {
            Ok((_, compiled)) => set = compiled,
            Err(errors) => {
                failed(errors);
                return None;
            }
        }
    }
    Some(set)
}

/// The zone's HTML as the browser script would put it into the page: the account's
/// card template or the built-in cards, for product content (none for image and html
/// content, or an empty zone).
fn zone_html(entry: &AccountEntry, title: &str, zone: &str, e: &Explanation) -> Option<String> {
    let product_content = e.campaigns.as_ref().is_none_or(|c| {
        c.shown
            .and_then(|at| c.set.zone(zone)?.campaigns.get(at))
            .is_some_and(|campaign| {
                matches!(
                    campaign.content,
                    vitrine_engine::campaign::content::Content::Automated(_)
                        | vitrine_engine::campaign::content::Content::Custom(_)
                )
            })
    });
    if !product_content || e.spec.kind.name() != "recommender-product" {
        return None;
    }
    let items: Vec<Value> = e
        .items
        .iter()
        .filter_map(|item| {
            let product = e.catalogue.product(item.item.product)?;
            Some(json!({
                "Id": product.id.as_str(),
                "Title": product.title.as_str(),
                "Link": product.link.as_str(),
                "Image": product.image.as_str(),
                "DisplayPrice": item.item.price.price.display(),
                "DisplayWasPrice": item.item.price.was.map(|w| w.display()),
            }))
        })
        .collect();
    let zone = html::Zone {
        id: zone,
        title,
        kind: "recommender-product",
        items,
        html: None,
    };
    let page = html::Page {
        url: "",
        currency: e.currency.code(),
    };
    entry.clientside.cards.zone_html(&zone, page).ok().flatten()
}
