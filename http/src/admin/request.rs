//! What every admin endpoint reads of its request, and says when it is wrong: the
//! query string ([`Query`]), a JSON body, and a zone the account does not have.

use serde_json::Value;

use crate::error::ApiError;
use crate::state::AccountEntry;

/// A request body as JSON (an empty one is `null`); a 400 naming the problem otherwise.
pub(super) fn body_json(body: &[u8]) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::Fields(vec![vitrine_fields::FieldError {
            path: String::new(),
            message: format!("invalid JSON: {e}"),
        }])
    })
}

/// That the account has no zone `zone`, with the zones it has.
pub(super) fn no_zone(entry: &AccountEntry, zone: &str) -> String {
    let ids: Vec<String> = entry
        .account
        .settings()
        .zones
        .iter()
        .map(|z| z.id.clone())
        .collect();
    format!("no zone {zone:?}; the account's zones: {}", ids.join(", "))
}

/// A query string's parameters.
pub(super) struct Query(Vec<(String, String)>);

impl Query {
    pub(super) fn parse(text: &str) -> Query {
        Query(
            form_urlencoded::parse(text.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// Refuses parameters other than `known`, and any given twice.
    pub(super) fn only(&self, known: &[&str]) -> Result<(), ApiError> {
        for (i, (name, _)) in self.0.iter().enumerate() {
            if !known.contains(&name.as_str()) {
                let expected = if known.is_empty() {
                    "this endpoint takes none".to_owned()
                } else {
                    format!("expected one of {}", known.join(", "))
                };
                return Err(ApiError::Invalid(vec![format!(
                    "{name}: unknown query parameter ({expected})"
                )]));
            }
            if self.0.iter().skip(i + 1).any(|(other, _)| other == name) {
                return Err(ApiError::Invalid(vec![format!("{name}: given twice")]));
            }
        }
        Ok(())
    }

    /// The whole number `name` gives, from 1 to `max`; `default` when it is not given.
    pub(super) fn limit(&self, name: &str, default: usize, max: usize) -> Result<usize, ApiError> {
        match self.get(name) {
            None | Some("") => Ok(default),
            Some(n) => n
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| {
                    ApiError::Invalid(vec![format!("{name}: expected 1 to {max}, got {n:?}")])
                }),
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}
