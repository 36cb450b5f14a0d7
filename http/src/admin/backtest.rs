//! `POST /admin/api/accounts/{accessKey}/zones/{zone}/backtest`: a draft list (and draft
//! segments), `{"campaigns": [...], "segments": [...]}` as a shadow test takes it,
//! judged beside the live one on the judged moments the account keeps (see
//! `vitrine_engine::account::backtest`): paired hit rate and MRR with the draft's
//! differences and their 95 % intervals, each version's reach per campaign and segment,
//! the products that gain or lose the most exposure, and the share of shown products on
//! offer, new, or outside their date window. A read: any admin token; it runs on the
//! admin's blocking thread and rayon's, never on a request's path.

use std::time::Instant;

use serde_json::{Value, json};
use vitrine_engine::backtest::BacktestError;
use vitrine_engine::backtest::{Backtest, Exposure, Version};
use vitrine_engine::prequential::Tally;
use vitrine_engine::shadow::Difference;

use crate::error::ApiError;
use crate::state::AccountEntry;

/// Products listed among those gaining, and among those losing, the most exposure.
const EXPOSURE_LISTED: usize = 10;

/// `POST`: the backtest of the body's draft.
pub(super) fn run(entry: &AccountEntry, zone: &str, body: &Value) -> Result<Value, ApiError> {
    let set = super::preview::judged_draft(entry, zone, body)?;
    let started = Instant::now();
    let backtest = entry.account.backtest(zone, &set).map_err(|e| match e {
        BacktestError::NoZone(_) => ApiError::Invalid(vec![format!("zone: {e}")]),
    })?;
    let took = started.elapsed();
    Ok(figures(&backtest, took.as_secs_f64() * 1000.0))
}

fn figures(backtest: &Backtest, took_ms: f64) -> Value {
    let paired = &backtest.paired;
    let version = |tally: &Tally, version: &Version| {
        let (hit_rate, mrr) = tally.rates();
        let shares = &version.shares;
        json!({
            "hits": tally.hits,
            "hitRate": hit_rate,
            "mrr": mrr,
            "reach": version.reach.iter().map(|r| json!({
                "campaign": r.campaign,
                "segment": r.segment,
                "moments": r.moments,
            })).collect::<Vec<_>>(),
            "uncampaigned": version.uncampaigned,
            "shown": shares.shown,
            "onOffer": shares.share(shares.on_offer),
            "new": shares.share(shares.new),
            "outOfWindow": shares.share(shares.out_of_window),
        })
    };
    let difference = |d: Difference| json!({"estimate": d.estimate, "low": d.low, "high": d.high});
    let exposure = |e: &Exposure| json!({"product": e.product, "live": e.live, "draft": e.draft, "change": e.change()});
    let lost: Vec<Value> = backtest
        .exposure
        .iter()
        .take_while(|e| e.change() < 0)
        .take(EXPOSURE_LISTED)
        .map(exposure)
        .collect();
    let gained: Vec<Value> = backtest
        .exposure
        .iter()
        .rev()
        .take_while(|e| e.change() > 0)
        .take(EXPOSURE_LISTED)
        .map(exposure)
        .collect();
    json!({
        "zone": backtest.zone,
        "moments": backtest.moments,
        "trials": paired.live.trials,
        "tookMs": (took_ms * 10.0).round() / 10.0,
        "live": version(&paired.live, &backtest.live),
        "draft": version(&paired.draft, &backtest.draft),
        "difference": {
            "hitRate": difference(paired.hit_rate()),
            "mrr": difference(paired.mrr()),
        },
        "exposure": {"gained": gained, "lost": lost},
    })
}
