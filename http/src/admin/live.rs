//! `GET /admin/api/live`: the server now: serverside calls per second and latency
//! percentiles since the previous call of this endpoint (the dashboard polls it), and
//! per account its visitors, calls, and the deltas and feeds in progress.

use serde_json::{Value, json};
use vitrine_engine::catalogue::UnixMillis;

use crate::state::AppState;

/// The live answer.
pub(super) fn figures(state: &AppState, now: UnixMillis) -> Value {
    let window = state.metrics.live();
    let millis = |seconds: f64| (seconds * 1e6).round() / 1e3;
    let accounts: Vec<Value> = state
        .accounts()
        .iter()
        .map(|entry| {
            let activity = entry.account.activity(now);
            let feeds: Vec<Value> = entry
                .jobs
                .queued_feeds()
                .iter()
                .map(|job| {
                    json!({
                        "token": job.token,
                        "streamed": job.streamed,
                        "submittedAt": job.submitted_at,
                    })
                })
                .collect();
            json!({
                "accessKey": entry.config.access_key,
                "visitors": entry.account.visitor_count(),
                "sessions": entry.account.session_count(),
                "requests": activity.requests,
                "requestsToday": activity.requests_today,
                "itemsShown": activity.items_shown,
                "deltasPending": entry.jobs.deltas_pending(),
                "feedsInProgress": feeds,
            })
        })
        .collect();
    json!({
        "serverside": {
            "windowSeconds": (window.seconds * 1000.0).round() / 1000.0,
            "requests": window.requests,
            "perSecond": (window.per_second * 10.0).round() / 10.0,
            "p50Ms": window.percentiles.map(|p| millis(p.0)),
            "p90Ms": window.percentiles.map(|p| millis(p.1)),
            "p99Ms": window.percentiles.map(|p| millis(p.2)),
        },
        "accounts": accounts,
    })
}
