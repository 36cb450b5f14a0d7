//! `POST /api/user/forget`: erase everything tied to one identifier.
//!
//! The identifier may be an email (matched case-insensitively), a user id, a B2B
//! account id or a visitor id of the account. 404 when nothing matches; a 200 is
//! `text/plain`.

use serde_json::Value;
use vitrine_fields::Errors;

use crate::api::Reply;
use crate::auth::authenticated;
use crate::error::ApiError;
use crate::routes::Endpoint;
use crate::state::AppState;

/// Longest identifier accepted.
pub const MAX_IDENTIFIER_LEN: usize = 320;

/// Handles `/api/user/forget`.
pub fn handle(state: &AppState, body: &Value) -> Result<Reply, ApiError> {
    let (entry, fields) = authenticated(state, body, Endpoint::Forget)?;
    let mut errors = Errors::default();
    let identifier = fields.req_nonempty_str("Identifier", &mut errors);
    if let Some(id) = identifier
        && id.len() > MAX_IDENTIFIER_LEN
    {
        errors.push(
            "Identifier",
            format!("must be at most {MAX_IDENTIFIER_LEN} bytes"),
        );
    }
    let identifier = errors.into_result(identifier.unwrap_or_default())?;
    // The 200 follows the fsync of the erasure record, the rewritten user file and the
    // saved hash; the identifier leaves the log and snapshots in a flush started here.
    let erasure = entry
        .jobs
        .forget(identifier.trim())
        .map_err(|e| ApiError::from(e).context("the erasure could not be saved"))?;
    if !erasure.matched() {
        return Err(ApiError::NotFound(
            "Identifier: no email, user id, account id or visitor id of this account matches"
                .to_owned(),
        ));
    }
    // The identifier itself is not logged: it is what was erased.
    tracing::info!(
        account = %entry.config.access_key,
        visitors = erasure.visitors,
        users = erasure.users,
        "erasure recorded"
    );
    Ok(Reply::text(format!(
        "Erased: {} visitor(s) and {} user record(s) tied to the identifier.\n",
        erasure.visitors, erasure.users
    )))
}
