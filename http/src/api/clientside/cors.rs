//! Cross-origin requests: which origins an account's pages may call from, the headers
//! every answer to a browser's POST endpoint carries, and the preflight.

use http::{HeaderMap, HeaderValue, StatusCode, header};

use crate::api::Reply;
use crate::config::ClientsideConfig;

/// The CORS headers of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cors {
    /// Not a browser endpoint's answer: none.
    NotBrowser,
    /// A browser endpoint's answer: `Vary: Origin`, and the origin named in
    /// `Access-Control-Allow-Origin` when it is one of the account's allowed origins.
    Browser {
        /// The origin allowed to read the answer.
        allow_origin: Option<String>,
    },
}

impl Cors {
    /// What a request's `Origin` allows: no origin (not a cross-origin browser request:
    /// a tool, a server) is served with no CORS header, one of the account's
    /// `clientside.allowed_origins` is served and named; any other is refused (`None`).
    pub(super) fn of(config: &ClientsideConfig, origin: Option<&str>) -> Option<Cors> {
        match origin {
            None => Some(Cors::Browser { allow_origin: None }),
            Some(origin) if config.allowed_origins.iter().any(|o| o == origin) => {
                Some(Cors::Browser {
                    allow_origin: Some(origin.to_owned()),
                })
            }
            Some(_) => None,
        }
    }

    /// Adds the headers to an answer's.
    pub fn apply(&self, headers: &mut HeaderMap) {
        let Cors::Browser { allow_origin } = self else {
            return;
        };
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
        if let Some(Ok(origin)) = allow_origin.as_deref().map(HeaderValue::from_str) {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        }
    }
}

/// A 204 to an allowed preflight: POST with a JSON body, for two hours.
pub fn preflight() -> Reply {
    Reply {
        status: StatusCode::NO_CONTENT,
        content_type: "text/plain",
        headers: vec![
            ("Access-Control-Allow-Methods", "POST".to_owned()),
            ("Access-Control-Allow-Headers", "Content-Type".to_owned()),
            ("Access-Control-Max-Age", "7200".to_owned()),
        ],
        body: Vec::new(),
        window: None,
    }
}
