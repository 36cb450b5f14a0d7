//! `GET /admin/api/accounts/{accessKey}/explain?zone=ZONE&visitor=ID&product=ID&category=ID&currency=XXX&pageType=TYPE&at=RFC3339&device=CLASS&userAgent=UA&referrer=URL&url=URL`:
//! a zone as the shopper would see it (items with title, image and price) with, beside
//! each item, the strategy that found it and the evidence; then the candidates the
//! filters removed and why. The request is the one given (`device` or `userAgent`,
//! `referrer`, the page's `url`), or with none of them the visitor's latest request.
//! Read-only: nothing is recorded.

use serde_json::{Value, json};
use vitrine_engine::account::{CampaignsExplained, ExplainRequest, Explanation};
use vitrine_engine::campaign::content::{Content, Placement};
use vitrine_engine::campaign::{DeviceClass, RequestContext, UtmParameter};
use vitrine_engine::catalogue::{ProductIdx, UnixMillis};
use vitrine_engine::event::PageType;
use vitrine_engine::money::Currency;
use vitrine_engine::recommend::Fact;

use super::request::Query;
use crate::api::serverside::request_context;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// The explain answer.
pub(super) fn zone(
    entry: &AccountEntry,
    query: &Query,
    now: UnixMillis,
) -> Result<Value, ApiError> {
    let invalid = |message: String| ApiError::Invalid(vec![message]);
    let zone = query
        .get("zone")
        .filter(|z| !z.is_empty())
        .ok_or_else(|| invalid("zone: required (a zone id of the account)".to_owned()))?;
    let non_empty = |name: &str| query.get(name).filter(|v| !v.is_empty()).map(str::to_owned);
    let currency = match query.get("currency") {
        None | Some("") => None,
        Some(code) => {
            Some(Currency::from_code(code).map_err(|e| invalid(format!("currency: {e}")))?)
        }
    };
    let page_type = match query.get("pageType") {
        None | Some("") => None,
        Some(name) => Some(PageType::from_name(name).ok_or_else(|| {
            invalid(format!(
                "pageType: expected one of {}, got {name:?}",
                PageType::ALL.map(PageType::name).join(", ")
            ))
        })?),
    };
    // A preview at another time (a schedule's start, next Saturday): `at` in RFC 3339.
    let now = match query.get("at") {
        None | Some("") => now,
        Some(text) => text
            .parse::<jiff::Timestamp>()
            .map(|t| t.as_millisecond())
            .map_err(|_| {
                invalid(format!(
                    "at: expected an RFC 3339 instant such as 2026-11-28T09:00:00Z, got {text:?}"
                ))
            })?,
    };
    let mut problems = Vec::new();
    let context = made_request(non_empty, &mut |name, message| {
        problems.push(format!("{name}: {message}"));
    });
    if !problems.is_empty() {
        return Err(ApiError::Invalid(problems));
    }
    let account = &entry.account;
    let product = non_empty("product");
    let request = ExplainRequest {
        zone: zone.to_owned(),
        visitor_id: non_empty("visitor"),
        page_type: page_type.or(product.is_some().then_some(PageType::ProductPage)),
        product,
        currency,
        now,
        category: non_empty("category"),
        context,
        campaigns: None,
        made_up: None,
    };
    let explanation = account.explain(&request).ok_or_else(|| {
        ApiError::NotFound(format!("zone: {}", super::request::no_zone(entry, zone)))
    })?;
    Ok(to_json(entry, &request, &explanation))
}

pub(super) fn to_json(entry: &AccountEntry, request: &ExplainRequest, e: &Explanation) -> Value {
    let id = |idx: ProductIdx| {
        e.catalogue
            .product(idx)
            .map_or(String::new(), |p| p.id.to_string())
    };
    let ids = |list: &[ProductIdx]| list.iter().map(|i| id(*i)).collect::<Vec<_>>();
    let items: Vec<Value> = e
        .items
        .iter()
        .map(|item| {
            let idx = item.item.product;
            let product = e.catalogue.product(idx);
            let facts: Vec<Value> = item.facts.iter().map(|f| fact_json(f, &id)).collect();
            json!({
                "id": id(idx),
                "title": product.map(|p| p.title.to_string()),
                "image": product.map(|p| p.image.to_string()).filter(|i| !i.is_empty()),
                "link": product.map(|p| p.link.to_string()).filter(|l| !l.is_empty()),
                "price": item.item.price.price.decimal(),
                "displayPrice": item.item.price.price.display(),
                "wasPrice": item.item.price.was.map(|w| w.display()),
                "strategy": item.strategy.name(),
                "fallback": item.fallback,
                "score": item.score,
                "evidence": facts,
                "placedBy": item.placement.as_ref().map(|p| placement_json(p, e)),
            })
        })
        .collect();
    let filtered: Vec<Value> = e
        .rejected
        .iter()
        .map(|(idx, strategy, why)| {
            json!({"id": id(*idx), "strategy": strategy.name(), "reason": why.reason()})
        })
        .collect();
    json!({
        "accessKey": entry.config.access_key,
        "zone": request.zone,
        "visitor": request.visitor_id,
        "product": request.product,
        "visitorKnown": e.visitor_known,
        "request": {
            "device": e.context.device.map(DeviceClass::name),
            "referrerHost": e.context.referrer_host.as_deref(),
            "utm": UtmParameter::ALL
                .iter()
                .filter_map(|(name, p)| Some((*name, e.context.utm(*p)?)))
                .collect::<std::collections::BTreeMap<_, _>>(),
        },
        "variant": e.variant.as_ref().map(|(experiment, name)| json!({"experiment": experiment, "name": name})),
        "strategy": e.spec.strategy.map(|s| s.name()),
        // The chain after the strategy, each strategy once: a variant whose strategy is
        // also a fallback does not read "trending then trending".
        "fallback": fallback_names(e.spec.strategy.map(|s| s.name()), e.spec.fallback.iter().map(|s| s.name())),
        "count": e.spec.count,
        "currency": e.currency.code(),
        "history": {
            "recentViews": ids(&e.history.0),
            "basket": ids(&e.history.1),
            "purchased": ids(&e.history.2),
        },
        "items": items,
        "filtered": filtered,
        "campaigns": e.campaigns.as_ref().map(|c| campaigns_json(&request.zone, c)),
    })
}

/// The zone's campaigns: which one was shown and why each other one was skipped.
fn campaigns_json(zone: &str, explained: &CampaignsExplained) -> Value {
    let Some(list) = explained.set.zone(zone) else {
        return Value::Null;
    };
    let campaigns: Vec<Value> = list
        .campaigns
        .iter()
        .enumerate()
        .map(|(position, campaign)| {
            let skipped = explained
                .skipped
                .iter()
                .find(|(p, _)| *p == position)
                .map(|(_, why)| why.reason());
            let segment = campaign
                .segment
                .and_then(|s| explained.set.segments.get(s))
                .map(|s| s.id.as_str());
            json!({
                "id": campaign.id,
                "name": campaign.name,
                "segment": segment,
                "content": campaign.content.name(),
                "shown": explained.shown == Some(position),
                "skipped": skipped,
            })
        })
        .collect();
    let shown = explained
        .shown
        .and_then(|p| list.campaigns.get(p))
        .map(|c| c.id.as_str());
    json!({
        "version": list.version,
        "shown": shown,
        "list": campaigns,
    })
}

/// The rule of a custom recommender that placed an item.
fn placement_json(placement: &Placement, e: &Explanation) -> Value {
    match placement {
        Placement::Pinned(place) => json!({
            "kind": "pin", "place": place, "text": format!("pinned at place {place}"),
        }),
        Placement::Sourced { boosts, score } => {
            let custom = e.campaigns.as_ref().and_then(|c| {
                let list = c.set.zone(&e.spec.id)?;
                match &list.campaigns.get(c.shown?)?.content {
                    Content::Custom(custom) => Some(custom.clone()),
                    _ => None,
                }
            });
            let matched: Vec<Value> = boosts
                .iter()
                .filter_map(|at| {
                    let boost = custom.as_ref()?.boosts.get(*at)?;
                    Some(
                        json!({"boost": at, "filter": boost.filter.name(), "factor": boost.factor}),
                    )
                })
                .collect();
            let text = if matched.is_empty() {
                "found by the source; passed every filter".to_owned()
            } else {
                format!(
                    "found by the source; passed every filter; boosted by {} rule(s)",
                    matched.len()
                )
            };
            json!({"kind": "source", "score": score, "boosts": matched, "text": text})
        }
    }
}

/// One fact as JSON: its kind, its figures, and a sentence.
fn fact_json(fact: &Fact, id: &impl Fn(ProductIdx) -> String) -> Value {
    match fact {
        Fact::Popularity { rank, score } => json!({
            "kind": "popularity", "rank": rank, "score": score,
            "text": format!("number {} in trending", u64::from(*rank) + 1),
        }),
        Fact::UnitsSold(units) => json!({
            "kind": "unitsSold", "units": units, "text": format!("{units} units sold"),
        }),
        Fact::ViewedWith {
            with,
            strength,
            weight,
        } => json!({
            "kind": "viewedWith", "product": id(*with), "strength": strength, "weight": weight,
            "text": format!("viewed with {} (strength {strength:.2}, weight {weight:.2})", id(*with)),
        }),
        Fact::BoughtWith {
            with,
            strength,
            weight,
        } => json!({
            "kind": "boughtWith", "product": id(*with), "strength": strength, "weight": weight,
            "text": format!("bought with {} (strength {strength:.2}, weight {weight:.2})", id(*with)),
        }),
        Fact::RecentlyViewed(at) => json!({
            "kind": "recentlyViewed", "position": at,
            "text": format!("viewed by the visitor ({} back)", at + 1),
        }),
        Fact::BoughtBefore(orders) => json!({
            "kind": "boughtBefore", "orders": orders,
            "text": format!("bought by the visitor before (in {orders} order{})", if *orders == 1 { "" } else { "s" }),
        }),
        Fact::SimilarTo(with) => json!({
            "kind": "similarTo", "product": id(*with),
            "text": format!("shares categories, brand or tags with {}", id(*with)),
        }),
        Fact::TopInCategory(category) => json!({
            "kind": "topInCategory", "category": category,
            "text": format!("among the most popular of {category}"),
        }),
        Fact::ListedBy(by) => json!({
            "kind": "listedBy", "product": id(*by),
            "text": format!("listed by {}", id(*by)),
        }),
        Fact::NewArrival => json!({"kind": "newArrival", "text": "a new arrival"}),
        Fact::OnOffer => json!({"kind": "onOffer", "text": "on offer"}),
        Fact::InSimilarSessions { score, weight } => json!({
            "kind": "inSimilarSessions", "score": score, "weight": weight,
            "text": format!("in sessions like the shopper's (similarity {score:.2}, weight {weight:.2})"),
        }),
        Fact::MatchesSearch(term) => json!({
            "kind": "matchesSearch", "term": term,
            "text": format!("matches the search {term:?}"),
        }),
    }
}

/// The names of a zone's fallback chain, without its own strategy and without repeats.
fn fallback_names<'a>(
    strategy: Option<&'a str>,
    fallback: impl Iterator<Item = &'a str>,
) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for name in fallback {
        if Some(name) != strategy && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The request a preview or explain is made as, from its `device` (mobile, tablet or
/// desktop) or `userAgent` (its device class read as serving reads it), `referrer` and
/// page `url` (its UTM parameters); none of them given: `None` (the visitor's latest
/// request). Each problem goes to `problem` with the member's name.
pub(super) fn made_request(
    mut get: impl FnMut(&str) -> Option<String>,
    problem: &mut dyn FnMut(&str, String),
) -> Option<RequestContext> {
    let (device, agent, referrer, url) =
        (get("device"), get("userAgent"), get("referrer"), get("url"));
    if device.is_none() && agent.is_none() && referrer.is_none() && url.is_none() {
        return None;
    }
    let absolute = |name: &str, value: &Option<String>, problem: &mut dyn FnMut(&str, String)| {
        if let Some(text) = value
            && text
                .parse::<http::Uri>()
                .ok()
                .and_then(|uri| uri.host().map(str::len))
                .is_none_or(|len| len == 0)
        {
            problem(
                name,
                format!("expected an absolute URL such as https://www.example.com/, got {text:?}"),
            );
        }
    };
    absolute("referrer", &referrer, problem);
    absolute("url", &url, problem);
    let mut context = request_context(agent.as_deref(), referrer.as_deref(), url.as_deref());
    if let Some(name) = device {
        match DeviceClass::from_name(&name) {
            Some(class) => context.device = Some(class),
            None => problem(
                "device",
                format!(
                    "expected one of {}, got {name:?}",
                    DeviceClass::ALL.map(|(n, _)| n).join(", ")
                ),
            ),
        }
    }
    Some(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fallback_that_repeats_the_strategy_is_named_once() {
        let chain = ["trending", "top_sellers", "trending"];
        assert_eq!(
            fallback_names(Some("trending"), chain.into_iter()),
            ["top_sellers"]
        );
        assert_eq!(
            fallback_names(None, chain.into_iter()),
            ["trending", "top_sellers"]
        );
    }
}
