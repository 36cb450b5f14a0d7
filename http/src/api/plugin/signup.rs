//! The plugins' sign-up calls and next steps.
//!
//! A self-hosted server has no sign-up: accounts are written into its configuration.
//! `POST /api/plugin/signuprequest`, `/api/plugin/signupstatus` (WooCommerce, Magento)
//! and `/api/plugin/add-store` (Magento) answer 400 with `{"errors": [...]}`, the key the
//! vendor's SDK reads into the message the plugin shows, telling the admin to enter the
//! keys from Vitrine's configuration instead. No status call ever says "complete", so a
//! plugin never waits on one. `POST /api/next-steps/complete` (`{"appkey", "id"}`, no
//! secret) acknowledges a dashboard step: Vitrine lists none.

use serde_json::{Value, json};

use super::json_reply;
use crate::api::Reply;
use crate::auth::authenticated;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// What the sign-up calls answer, shown by the plugin to the store's admin.
pub const NO_SIGNUP: &str = "This store's recommendations are served by Vitrine, a \
    self-hosted server: there is no sign-up. Choose \"I already have an account\" and \
    enter the Access Key and Secret Key of this store's [[accounts]] entry in Vitrine's \
    configuration file (vitrine.toml), with the region it names.";

/// `signuprequest`, `signupstatus`, `add-store`: the refusal, whatever the body.
pub fn handle_signup(_body: &[u8]) -> Result<Reply, ApiError> {
    Err(ApiError::Invalid(vec![NO_SIGNUP.to_owned()]))
}

/// `next-steps/complete`: `{}` for a step of a known account.
pub fn handle_next_step(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (_, fields) = authenticated(state, body, Endpoint::NextStepsComplete)?;
    let mut errors = vitrine_fields::Errors::default();
    fields.req_nonempty_str("id", &mut errors);
    errors.into_result(())?;
    Ok(json_reply(&json!({})))
}
