//! `[accounts.clientside]`: what the browser script and its endpoint may do for an
//! account: the store origins allowed to call it, whether tracking waits for consent, the
//! product-card template, and the per-client bounds.

use std::path::Path;

use super::checks::{Invalid, within};
use super::file::{FileClientside, FileRateLimit};
use super::rate_limits::{RateLimit, rate_limit};

/// `consent`: whether the browser script waits for the page's consent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsentPolicy {
    /// `"none"`: the script tracks from the start.
    None,
    /// `"required"`: nothing kept or sent but what fills the zones until
    /// `_pc('consent', true)`.
    Required,
}

/// `[accounts.clientside]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientsideConfig {
    /// The store origins (`scheme://host[:port]`) whose pages may call the browser
    /// endpoint; none: browser requests are refused.
    pub allowed_origins: Vec<String>,
    /// Whether the script keeps and sends nothing until the page gives consent.
    pub consent: ConsentPolicy,
    /// The product-card template (minijinja) replacing the built-in one, read at load.
    pub card_template: Option<String>,
    /// Requests per client IP address.
    pub per_ip: RateLimit,
    /// Requests per visitor id.
    pub per_visitor: RateLimit,
    /// Events per browser request at most.
    pub max_events: usize,
    /// Zones per browser request at most.
    pub max_zones: usize,
}

impl Default for ClientsideConfig {
    fn default() -> ClientsideConfig {
        ClientsideConfig {
            allowed_origins: Vec::new(),
            consent: ConsentPolicy::None,
            card_template: None,
            per_ip: RateLimit {
                per_second: 20,
                burst: 60,
            },
            per_visitor: RateLimit {
                per_second: 10,
                burst: 30,
            },
            max_events: 20,
            max_zones: 16,
        }
    }
}

/// Whether `origin` is a browser origin: `http` or `https`, a host, an optional port,
/// nothing after it.
fn is_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || rest.starts_with('[') => (host, Some(port)),
        _ => (rest, None),
    };
    matches!(scheme, "http" | "https")
        && !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.[]:".contains(&b))
        && port
            .is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// An account's `[accounts.clientside]`; `card_template` is read relative to `base`.
pub(super) fn clientside(
    file: &FileClientside,
    base: &Path,
    key: &impl Fn(&str) -> String,
) -> Result<ClientsideConfig, Invalid> {
    let defaults = ClientsideConfig::default();
    let mut origins = Vec::with_capacity(file.allowed_origins.len());
    for (i, origin) in file.allowed_origins.iter().enumerate() {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        if !is_origin(&origin) {
            return Err(Invalid::at(
                format!("{}[{i}]", key("allowed_origins")),
                format!(
                    "expected an origin such as \"https://shop.example\" (scheme, host and \
                     optional port, no path), got {:?}",
                    file.allowed_origins.get(i).map_or("", String::as_str)
                ),
            ));
        }
        origins.push(origin);
    }
    let consent = match file.consent.as_deref() {
        None | Some("none") => ConsentPolicy::None,
        Some("required") => ConsentPolicy::Required,
        Some(other) => {
            return Err(Invalid::at(
                key("consent"),
                format!("expected \"required\" or \"none\", got {other:?}"),
            ));
        }
    };
    let card_template = match &file.card_template {
        None => None,
        Some(path) => {
            let full = base.join(path);
            let text = std::fs::read_to_string(&full).map_err(|e| {
                Invalid::at(
                    key("card_template"),
                    format!("cannot read {}: {e}", full.display()),
                )
            })?;
            let mut env = minijinja::Environment::new();
            env.add_template("card", &text).map_err(|e| {
                Invalid::at(key("card_template"), format!("not a valid template: {e}"))
            })?;
            Some(text)
        }
    };
    let limit = |file: &Option<FileRateLimit>, name: &str, default: RateLimit| match file {
        None => Ok(default),
        Some(file) => rate_limit(file, &|field: &str| key(&format!("{name}{field}"))),
    };
    Ok(ClientsideConfig {
        allowed_origins: origins,
        consent,
        card_template,
        per_ip: limit(&file.per_ip, "per_ip", defaults.per_ip)?,
        per_visitor: limit(&file.per_visitor, "per_visitor", defaults.per_visitor)?,
        max_events: within(
            file.max_events.unwrap_or(defaults.max_events as u64),
            1,
            100,
        )
        .map_err(|m| Invalid::at(key("max_events"), m))? as usize,
        max_zones: within(file.max_zones.unwrap_or(defaults.max_zones as u64), 1, 32)
            .map_err(|m| Invalid::at(key("max_zones"), m))? as usize,
    })
}
