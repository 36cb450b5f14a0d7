//! The account calls of the vendor's store plugins (Magento module, WooCommerce plugin,
//! PHP SDK), beyond the contract: `POST /api/plugin/validate-account`, `/delete` and
//! `/feedback` here, with `{"AccessKey", "SecretKey"}` bodies; the admin page's
//! figures in [`dashboard`]; sign-up, add-store and next steps in [`signup`].

pub mod dashboard;
pub mod signup;

use serde_json::{Value, json};

use crate::api::Reply;
use crate::auth::authenticated;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Longest uninstall or deactivation feedback kept in the log.
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

/// `feedback` (WooCommerce, on deactivation): `{"AccessKey", "SecretKey", "Feedback",
/// "Platform"}`, logged with its text; `{}`.
pub fn handle_feedback(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated(state, body, Endpoint::PluginFeedback)?;
    let mut errors = vitrine_fields::Errors::default();
    let feedback = fields.opt_str("Feedback", &mut errors).unwrap_or_default();
    let platform = fields.opt_str("Platform", &mut errors).unwrap_or_default();
    errors.into_result(())?;
    let feedback: String = feedback.chars().take(MAX_FEEDBACK_LEN).collect();
    let platform: String = platform.chars().take(64).collect();
    tracing::warn!(
        account = %entry.config.access_key,
        %platform,
        %feedback,
        "the store deactivated the plugin, with feedback"
    );
    Ok(json_reply(&json!({})))
}

pub(crate) fn json_reply(value: &Value) -> Reply {
    Reply::json(serde_json::to_vec(value).unwrap_or_default())
}
