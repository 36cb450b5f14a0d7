//! The six endpoints of the contract, one module each. A handler takes the shared state
//! and the parsed JSON body and returns a [`Reply`] or an [`crate::error::ApiError`].

pub mod clientside;
pub mod delta;
pub mod feed;
pub mod forget;
pub mod plugin;
pub mod render;
pub mod serverside;
pub mod stream;

use http::StatusCode;
use vitrine_fields::Errors;
use vitrine_fields::Fields;

use crate::error::ApiError;

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Status code (200 for every success of the contract).
    pub status: StatusCode,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// A 200 with a JSON body.
    pub fn json(body: Vec<u8>) -> Reply {
        Reply {
            status: StatusCode::OK,
            content_type: "application/json",
            headers: Vec::new(),
            body,
        }
    }

    /// A 200 with a plain-text body.
    pub fn text(body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.into_bytes(),
        }
    }
}

/// A request body as JSON; a 400 naming the syntax error otherwise.
pub fn parse_json(body: &[u8]) -> Result<serde_json::Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::Invalid(vec![format!("body: invalid JSON: {e}")]))
}

/// `Tokens`: a required, non-empty array of strings, at most `max` of them.
pub fn tokens(fields: &Fields<'_, '_>, max: usize) -> Result<Vec<String>, ApiError> {
    let mut errors = Errors::default();
    let tokens = fields.req_string_array("Tokens", &mut errors, vitrine_fields::not_empty);
    if let Some(tokens) = &tokens {
        if tokens.is_empty() {
            errors.push("Tokens", "must hold at least one token");
        } else if tokens.len() > max {
            errors.push(
                "Tokens",
                format!("at most {max} tokens per request, got {}", tokens.len()),
            );
        }
    }
    errors
        .into_result(tokens.unwrap_or_default())
        .map_err(ApiError::from)
}
