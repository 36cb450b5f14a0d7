//! Id fields of a record: required or optional, checked with [`check_id`], whole JSON
//! numbers read as their decimal text.

use std::borrow::Cow;

use vitrine_fields::{Errors, Fields, JsonValue, check_id};

/// A required id field, checked with [`check_id`].
/// Ids may be whole JSON numbers (the vendor's plugins send `"Brand": 7`), read as
/// their decimal text.
pub(super) fn required_id<'v, V: JsonValue>(
    fields: &Fields<'v, '_, V>,
    key: &str,
    errors: &mut Errors,
) -> Option<Cow<'v, str>> {
    let id = fields.req_id_text(key, errors)?;
    valid_id(fields, key, id, errors)
}

/// An optional id field (empty counts as absent), checked with [`check_id`].
pub(super) fn optional_id<'v, V: JsonValue>(
    fields: &Fields<'v, '_, V>,
    key: &str,
    errors: &mut Errors,
) -> Option<Cow<'v, str>> {
    let id = fields
        .opt_id_text(key, errors)
        .filter(|id| !id.is_empty())?;
    valid_id(fields, key, id, errors)
}

fn valid_id<'v, V: JsonValue>(
    fields: &Fields<'v, '_, V>,
    key: &str,
    id: Cow<'v, str>,
    errors: &mut Errors,
) -> Option<Cow<'v, str>> {
    match check_id(&id) {
        Ok(()) => Some(id),
        Err(message) => {
            errors.push(fields.path_of(key), message.to_string());
            None
        }
    }
}
