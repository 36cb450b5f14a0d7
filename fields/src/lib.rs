//! Typed reading of JSON objects with errors that name the JSON path of the field.
//!
//! Every wire and feed validator reads through a [`Fields`] view: it looks a key up,
//! checks its type, and on failure records a [`FieldError`] such as
//! `events[1].data.items[0].qty: expected a number` instead of stopping, so that one
//! response lists every problem of a request.
//!
//! `null` counts as absent: an optional field that is `null` is skipped, a required one
//! is reported as `required`.
//!
//! The readers work on any [`JsonValue`]: `serde_json::Value` for request bodies and
//! `simd_json::BorrowedValue` for feeds, so feed and delta records share one validator.
//!
//! One place for the field readers and value checks that every parser of outside JSON
//! uses: `vitrine-http` for request bodies, `vitrine-ingest` for feeds and deltas.
//!
//! Modules:
//! - `read`: [`Fields`], key matching and paths.
//! - `errors`: [`Errors`] and [`FieldError`].
//! - `value`: [`JsonValue`], for `serde_json` and `simd_json` values.
//! - `json`: [`Json`], a document whose strings borrow from the body (serverside);
//!   `scan` reads it in one pass over the bytes where that reads as `serde_json` does,
//!   and its [`Reader`] reads a body value by value for readers that build no document.
//! - `words`: searches of bytes sixteen at a time ([`first_escaped`],
//!   [`first_escaped_from`], [`first_byte`], [`first_outside`], [`any_char_outside`]).
//! - `check`: ids ([`check_id`]), emails ([`looks_like_email`]), dates
//!   ([`parse_instant`], [`parse_dob`], [`parse_user_dob`]).

#![forbid(unsafe_code)]

mod check;
mod errors;
mod json;
mod read;
mod scan;
mod value;
mod words;

pub use bumpalo::Bump;
pub use check::*;
pub use errors::*;
pub use json::Json;
pub use read::*;
pub use scan::Reader;
pub use value::*;
pub use words::{any_char_outside, first_byte, first_escaped, first_outside};

/// What the crate's tests share.
#[cfg(test)]
mod testing {
    /// A reproducible stream of numbers (xorshift64) from `seed`.
    pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }
}
