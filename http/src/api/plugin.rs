//! The account calls of the vendor's store plugins (Magento module, PHP SDK), beyond the
//! contract: `POST /api/plugin/validate-account`, `/api/plugin/dashboard` and
//! `/api/plugin/delete`, with `{"AccessKey", "SecretKey"}` bodies.

use serde_json::{Value, json};

use crate::api::Reply;
use crate::auth::authenticated;
use crate::clock::now_millis;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Longest uninstall feedback kept in the log.
pub const MAX_FEEDBACK_LEN: usize = 2_000;

/// `validate-account`: `{"IsValid": true}` for credentials of an account of this
/// server, `{"IsValid": false}` for any other (the module then says "Account not
/// found"); a body without the fields is a 400.
pub fn handle_validate(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let valid = match authenticated(state, body, Endpoint::PluginValidate) {
        Ok(_) => true,
        Err(ApiError::Credentials(_)) => false,
        Err(other) => return Err(other),
    };
    Ok(json_reply(&json!({ "IsValid": valid })))
}

/// `dashboard`: the account and the figures Vitrine has for it.
pub fn handle_dashboard(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (entry, _) = authenticated(state, body, Endpoint::PluginDashboard)?;
    let account = &entry.account;
    let activity = account.activity(now_millis());
    let reply = json!({
        "Account": {
            "Name": entry.config.access_key,
            "Region": entry.config.region.name(),
            "Currency": entry.config.default_currency.code(),
        },
        "Stats": {
            "Products": account.catalogue().len(),
            "Visitors": account.visitor_count(),
            "Orders": account.order_count(),
            "RequestsToday": activity.requests_today,
            "Requests": activity.requests,
            "ZoneImpressions": activity.items_shown,
        },
        "NextSteps": [],
    });
    Ok(json_reply(&reply))
}

/// `delete`: the plugin was uninstalled. Logged with the store's feedback; the
/// account's data stays (an uninstall is not an erasure request).
pub fn handle_delete(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated(state, body, Endpoint::PluginDelete)?;
    let mut errors = vitrine_fields::Errors::default();
    let feedback = fields.opt_str("Feedback", &mut errors).unwrap_or_default();
    errors.into_result(())?;
    let feedback: String = feedback.chars().take(MAX_FEEDBACK_LEN).collect();
    tracing::warn!(
        account = %entry.config.access_key,
        %feedback,
        "the store uninstalled the plugin; its data is kept"
    );
    Ok(json_reply(&json!({})))
}

fn json_reply(value: &Value) -> Reply {
    Reply::json(serde_json::to_vec(value).unwrap_or_default())
}
