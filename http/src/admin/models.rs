//! The account's model settings and their self-tuning (`vitrine_engine::tuning`): the
//! setting the co-view lists are read at, what is pinned, each setting of the grid with
//! its trials since the last switch, and the latest switches; the same for the
//! co-purchase lists (`purchases`). A setting is a window, a partner damping and a
//! weight on the pairs' direction. And `personalized`'s recipe (`recipe`): its grid,
//! the active recipe, the pins and the switches; and `similar_sessions`'
//! neighbourhood (`sessions`) the same way.

use serde_json::{Value, json};
use vitrine_engine::models::{ListSetting, SessionSetting};
use vitrine_engine::tuning::recipe::{Recipe, RecipeReport};
use vitrine_engine::tuning::sessions::SessionReport;
use vitrine_engine::tuning::{Switch, Tally, TuningReport, evidence};

use crate::state::AccountEntry;

/// The answer of `GET /admin/api/accounts/{key}/models`.
pub(super) fn tuning(entry: &AccountEntry) -> Value {
    let report = entry.account.model_tuning();
    let co_view = |s: &ListSetting| {
        json!({
            "coViewWindow": s.window.steps(),
            "partnerDamping": s.partner_damping,
            "coViewForward": s.forward,
        })
    };
    let (settings, switches) = tallies(&report, co_view);
    let purchases = entry.account.purchase_model_tuning();
    let co_purchase = |s: &ListSetting| {
        json!({
            "coPurchaseWindow": s.window.steps(),
            "partnerDamping": s.partner_damping,
            "coPurchaseForward": s.forward,
        })
    };
    let (purchase_settings, purchase_switches) = tallies(&purchases, co_purchase);
    let recipes = entry.account.recipe_tuning();
    let models = &entry.config.models;
    json!({
        "accessKey": entry.config.access_key,
        "tuning": if report.tuning { "auto" } else { "off" },
        "pinned": {
            "coViewWindow": report.pins.co_view_window.map(|w| w.steps()),
            "partnerDamping": report.pins.partner_damping,
            "coPurchaseWindow": report.pins.co_purchase_window.map(|w| w.steps()),
            "purchasePartnerDamping": report.pins.purchase_partner_damping,
            "coViewForward": report.pins.co_view_forward,
            "coPurchaseForward": report.pins.co_purchase_forward,
        },
        "active": co_view(&report.active),
        "configured": {
            "partners": models.partners,
            "neighbours": models.neighbours,
            "seedDamping": models.seed_damping,
            "purchaseSeedDamping": models.purchase_seed_damping,
        },
        "threshold": report.threshold,
        "trialsPerSecond": models.tuning_trials_per_second,
        "trialsDropped": report.dropped,
        "settings": settings,
        "switches": switches,
        "purchases": {
            "active": co_purchase(&purchases.active),
            "threshold": purchases.threshold,
            "trialsDropped": purchases.dropped,
            "settings": purchase_settings,
            "switches": purchase_switches,
        },
        "recipe": recipe_json(&recipes),
        "sessions": sessions_json(&entry.account.session_tuning()),
    })
}

/// A setting of `similar_sessions`' neighbourhood as JSON.
fn session_setting(setting: &SessionSetting) -> Value {
    json!({
        "neighbours": setting.neighbours,
        "steps": setting.steps,
    })
}

/// What self-tuning of `similar_sessions`' neighbourhood knows, as JSON.
fn sessions_json(report: &SessionReport) -> Value {
    let (settings, switches) = grid_json(
        &report.settings,
        &report.switches,
        |s| *s == report.active,
        session_setting,
    );
    json!({
        "tuning": if report.tuning { "auto" } else { "off" },
        "pinned": {
            "neighbours": report.pins.0,
            "steps": report.pins.1,
        },
        "active": session_setting(&report.active),
        "threshold": report.threshold,
        "trialsDropped": report.dropped,
        "settings": settings,
        "switches": switches,
    })
}

/// A recipe of `personalized` as JSON.
fn recipe(recipe: &Recipe) -> Value {
    json!({
        "history": recipe.history,
        "longTerm": recipe.long_term,
        "sessions": recipe.sessions,
        "popularity": recipe.popularity,
        "purchases": recipe.purchases,
    })
}

/// What self-tuning of `personalized`'s recipe knows, as JSON.
fn recipe_json(report: &RecipeReport) -> Value {
    let (settings, switches) = grid_json(
        &report.settings,
        &report.switches,
        |r| Some(*r) == report.active,
        recipe,
    );
    json!({
        "zone": report.zone,
        "tuning": if report.tuning { "auto" } else { "off" },
        "pinned": {
            "history": report.pins.history,
            "longTerm": report.pins.long_term,
            "sessions": report.pins.sessions,
            "popularity": report.pins.popularity,
            "purchases": report.pins.purchases,
        },
        "active": report.active.as_ref().map(recipe),
        "threshold": report.threshold,
        "trialsDropped": report.dropped,
        "settings": settings,
        "switches": switches,
    })
}

/// Each setting of a report's grid with its tallies, and the report's switches, each
/// setting written by `setting`.
fn tallies(
    report: &TuningReport,
    setting: impl Fn(&ListSetting) -> Value,
) -> (Vec<Value>, Vec<Value>) {
    grid_json(
        &report.settings,
        &report.switches,
        |s| *s == report.active,
        setting,
    )
}

/// A grid's settings with their tallies (which one is `active`), and its switches, each
/// setting written by `setting`.
fn grid_json<S>(
    settings: &[(S, Tally)],
    switches: &[Switch<S>],
    active: impl Fn(&S) -> bool,
    setting: impl Fn(&S) -> Value,
) -> (Vec<Value>, Vec<Value>) {
    let settings = settings
        .iter()
        .map(|(s, tally)| {
            let mut value = trial_json(setting(s), tally);
            if let Some(fields) = value.as_object_mut() {
                fields.insert("active".into(), json!(active(s)));
            }
            value
        })
        .collect();
    let switches = switches
        .iter()
        .map(|switch| {
            json!({
                "atUnixMillis": switch.at,
                "from": setting(&switch.from),
                "to": setting(&switch.to),
                "trials": switch.trials,
                "wins": switch.wins,
                "losses": switch.losses,
                "evidence": switch.evidence,
            })
        })
        .collect();
    (settings, switches)
}

/// A setting of a grid (`value`, an object) with its trials since the last switch.
fn trial_json(mut value: Value, tally: &Tally) -> Value {
    let (hit_rate, mrr) = tally.scored.rates();
    if let Some(fields) = value.as_object_mut() {
        fields.insert("trials".into(), json!(tally.scored.trials));
        fields.insert("hits".into(), json!(tally.scored.hits));
        fields.insert("hitRate".into(), json!(hit_rate));
        fields.insert("mrr".into(), json!(mrr));
        fields.insert("wins".into(), json!(tally.wins));
        fields.insert("losses".into(), json!(tally.losses));
        fields.insert("evidence".into(), json!(evidence(tally.wins, tally.losses)));
    }
    value
}
