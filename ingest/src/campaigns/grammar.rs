//! What every part of the campaign document's grammar shares: its bounds, what a
//! document is compiled against ([`Target`]), and the readers of ids, display names
//! and typed definitions.

use serde_json::Value;
use vitrine_engine::campaign::Segment;
use vitrine_engine::zone::ZoneSpec;
use vitrine_fields::{Errors, Fields};

/// Segments an account holds at most.
pub const MAX_SEGMENTS: usize = 200;
/// Campaigns a zone's list holds at most.
pub const MAX_CAMPAIGNS: usize = 50;
/// Filters (and boosts) a custom recommender holds at most.
pub const MAX_FILTERS: usize = 20;
/// Pins a custom recommender holds at most.
pub const MAX_PINS: usize = 50;
/// Items a campaign shows at most.
pub const MAX_ITEMS: usize = 100;
/// Names in one list (of categories, brands, products, values) at most.
pub const MAX_NAMES: usize = 1_000;
/// Longest id or name.
pub const MAX_NAME_LEN: usize = 256;
/// Largest number accepted anywhere in the document, in absolute value.
pub const MAX_NUMBER: f64 = 1e12;
/// Longest html template.
pub const MAX_TEMPLATE_LEN: usize = 64 * 1024;
/// Images of image content at most.
pub const MAX_IMAGES: usize = 20;

/// What a document is compiled against: the account's zones and time zone.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The account's zones (from its configuration).
    pub zones: &'a [ZoneSpec],
    /// The account's time zone.
    pub time_zone: &'a jiff::tz::TimeZone,
}

/// What an experiment's lists are read against: the account, and the segments the
/// document's lists may name (compiled).
#[derive(Debug, Clone, Copy)]
pub struct Against<'a> {
    /// The document's segments, compiled.
    pub segments: &'a [Segment],
    /// The account.
    pub target: Target<'a>,
}

/// The typed definitions of a list already read without error.
pub(super) fn definitions<T: serde::de::DeserializeOwned>(
    list: &Value,
    path: &str,
) -> Result<T, Errors> {
    T::deserialize(list).map_err(|e| {
        let mut errors = Errors::default();
        errors.push(path, e.to_string());
        errors
    })
}

/// A display name: `name` when given (at most [`MAX_NAME_LEN`] bytes), else empty.
pub(super) fn display_name<'v>(fields: &Fields<'v, '_>, errors: &mut Errors) -> &'v str {
    let name = fields.opt_str("name", errors).unwrap_or_default();
    if name.len() > MAX_NAME_LEN {
        errors.push(
            fields.path_of("name"),
            format!("must be at most {MAX_NAME_LEN} bytes"),
        );
    }
    name
}

/// An id: 1 to 128 printable ASCII characters.
pub(super) fn identifier(
    fields: &Fields<'_, '_>,
    key: &str,
    errors: &mut Errors,
) -> Option<String> {
    let id = fields.req_str(key, errors)?;
    if id.is_empty() || id.len() > 128 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        errors.push(
            fields.path_of(key),
            "expected 1 to 128 printable ASCII characters without spaces",
        );
        return None;
    }
    Some(id.to_owned())
}
