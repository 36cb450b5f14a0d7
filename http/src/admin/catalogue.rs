//! `GET /admin/api/accounts/{accessKey}/catalogue?q=TEXT&kind=products|categories|brands&limit=N`:
//! the console's pickers find products, categories and brands by id or title in the
//! catalogue in memory (best matches first), so no catalogue is downloaded to a browser.

use serde_json::{Value, json};
use vitrine_engine::catalogue::search::{SearchKind, search};

use super::Query;
use crate::error::ApiError;
use crate::state::AccountEntry;

/// Matches answered when `limit` is not given.
const DEFAULT_LIMIT: usize = 20;
/// Matches answered at most.
const MAX_LIMIT: usize = 100;
/// The longest search text, in characters.
const MAX_TEXT: usize = 200;

/// The search answer.
pub(super) fn find(entry: &AccountEntry, query: &Query) -> Result<Value, ApiError> {
    let invalid = |message: String| ApiError::Invalid(vec![message]);
    let text = query.get("q").unwrap_or("");
    if text.trim().is_empty() {
        return Err(invalid(
            "q: required (the text to find in ids and titles)".to_owned(),
        ));
    }
    if text.chars().count() > MAX_TEXT {
        return Err(invalid(format!("q: at most {MAX_TEXT} characters")));
    }
    let kinds = || {
        SearchKind::ALL
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = match query.get("kind") {
        None | Some("") => SearchKind::Products,
        Some(name) => SearchKind::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, kind)| *kind)
            .ok_or_else(|| invalid(format!("kind: expected one of {}, got {name:?}", kinds())))?,
    };
    let limit = query.limit("limit", DEFAULT_LIMIT, MAX_LIMIT)?;
    let catalogue = entry.account.catalogue();
    let matches = search(&catalogue, kind, text, limit);
    let found: Vec<Value> = matches
        .found
        .iter()
        .map(|f| json!({"id": f.id, "title": f.title, "image": f.image}))
        .collect();
    Ok(json!({
        "kind": SearchKind::ALL.iter().find(|(_, k)| *k == kind).map(|(n, _)| *n),
        "q": text,
        "total": matches.total,
        "found": found,
    }))
}
