//! `/admin/api/accounts/{accessKey}/zones/{zone}/shadow`: a draft campaign list judged
//! beside the live one on the self-evaluation sample, before it is published (see
//! `vitrine_engine::shadow`).
//!
//! - `POST` `{"campaigns": [...], "segments": [...]}` (an editor's; the draft read as
//!   a `PUT` of them reads it): starts a test, in place of the zone's running one.
//! - `GET`: its trials so far, the live list's and the draft's hit rate and MRR, and
//!   the draft's difference with its 95 % interval.
//! - `DELETE`: stops it.

use std::sync::Arc;

use serde_json::{Value, json};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::prequential::Tally;
use vitrine_engine::shadow::ShadowError;
use vitrine_engine::shadow::{Difference, Shadow};

use crate::error::ApiError;
use crate::state::AccountEntry;

/// `POST`: starts a shadow test of the body's draft.
pub(super) fn start(
    entry: &AccountEntry,
    zone: &str,
    body: &Value,
    now: UnixMillis,
) -> Result<Value, ApiError> {
    let set = super::preview::judged_draft(entry, zone, body)?;
    let shadow = entry
        .account
        .start_shadow(zone, Arc::new(set), now)
        .map_err(|e| match e {
            ShadowError::NoZone(_) | ShadowError::TooMany => {
                ApiError::Invalid(vec![format!("zone: {e}")])
            }
        })?;
    Ok(figures(&shadow))
}

/// `GET`: the zone's running test.
pub(super) fn read(entry: &AccountEntry, zone: &str) -> Result<Value, ApiError> {
    let shadow = entry
        .account
        .shadow(zone)
        .ok_or_else(|| ApiError::NotFound(format!("no shadow test runs on zone {zone:?}")))?;
    Ok(figures(&shadow))
}

/// `DELETE`: stops the zone's test.
pub(super) fn stop(entry: &AccountEntry, zone: &str) -> Result<Value, ApiError> {
    if !entry.account.stop_shadow(zone) {
        return Err(ApiError::NotFound(format!(
            "no shadow test runs on zone {zone:?}"
        )));
    }
    Ok(json!({ "zone": zone, "stopped": true }))
}

fn figures(shadow: &Shadow) -> Value {
    let paired = shadow.paired();
    let side = |tally: &Tally| {
        let (hit_rate, mrr) = tally.rates();
        json!({"hits": tally.hits, "hitRate": hit_rate, "mrr": mrr})
    };
    let difference = |d: Difference| json!({"estimate": d.estimate, "low": d.low, "high": d.high});
    let campaigns: Vec<&str> = shadow
        .set
        .zone(&shadow.zone)
        .map(|list| list.campaigns.iter().map(|c| c.id.as_str()).collect())
        .unwrap_or_default();
    json!({
        "zone": shadow.zone,
        "started": crate::clock::rfc3339(shadow.started),
        "campaigns": campaigns,
        "trials": paired.live.trials,
        "live": side(&paired.live),
        "draft": side(&paired.draft),
        "difference": {
            "hitRate": difference(paired.hit_rate()),
            "mrr": difference(paired.mrr()),
        },
    })
}
