//! Checks of values that feeds, deltas and requests share: ids, emails and dates.

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, PrimitiveDateTime};

use crate::any_char_outside;

/// Milliseconds since the Unix epoch, UTC.
pub type UnixMillis = i64;

/// Why a value failed its check: what a 400 says after the field's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// An empty string.
    #[error("must not be empty")]
    Empty,
    /// Longer than [`MAX_ID_LEN`] bytes (its length).
    #[error("must be at most {MAX_ID_LEN} bytes, got {0}")]
    TooLong(usize),
    /// A control character.
    #[error("must not contain control characters")]
    ControlCharacter,
}

impl From<Rejected> for String {
    fn from(rejected: Rejected) -> String {
        rejected.to_string()
    }
}

/// Accepts any string.
pub fn any_string(_: &str) -> Result<(), Rejected> {
    Ok(())
}

/// Accepts any string but an empty one.
pub fn not_empty(text: &str) -> Result<(), Rejected> {
    if text.is_empty() {
        Err(Rejected::Empty)
    } else {
        Ok(())
    }
}

/// Maximum length of an id (product, category, brand, order, user, account).
pub const MAX_ID_LEN: usize = 256;

/// Checks an id of the store's: not empty, at most [`MAX_ID_LEN`] bytes, no control
/// characters.
pub fn check_id(id: &str) -> Result<(), Rejected> {
    if id.is_empty() {
        return Err(Rejected::Empty);
    }
    if id.len() > MAX_ID_LEN {
        return Err(Rejected::TooLong(id.len()));
    }
    if any_char_outside(id, 0x20, 0x7e, char::is_control) {
        return Err(Rejected::ControlCharacter);
    }
    Ok(())
}

/// Parses the date forms accepted for `StartDate` / `EndDate`.
pub fn parse_instant(text: &str) -> Option<UnixMillis> {
    let at = if let Ok(at) = OffsetDateTime::parse(text, &Rfc3339) {
        at
    } else if let Ok(at) = PrimitiveDateTime::parse(
        text,
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]"),
    ) {
        at.assume_utc()
    } else {
        Date::parse(text, format_description!("[year]-[month]-[day]"))
            .ok()?
            .midnight()
            .assume_utc()
    };
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Parses a date of birth: `YYYY-MM-DD` as the contract gives it.
pub fn parse_dob(text: &str) -> Option<Date> {
    Date::parse(text, format_description!("[year]-[month]-[day]")).ok()
}

/// Parses a user record's `DOB`: `YYYY-MM-DD`, or `DD/MM/YYYY` as the vendor's own user
/// feeds write it.
pub fn parse_user_dob(text: &str) -> Option<Date> {
    parse_dob(text).or_else(|| Date::parse(text, format_description!("[day]/[month]/[year]")).ok())
}

/// A light email check: one `@`, something on each side, a dot in the domain, no spaces.
pub fn looks_like_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
        && text.len() <= 320
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert!(check_id("P-1 blue").is_ok());
        assert!(check_id("").is_err());
        assert!(check_id("a\nb").is_err());
        assert!(check_id(&"x".repeat(MAX_ID_LEN + 1)).is_err());
    }

    /// An id has a control character where decoding it finds one, wherever it stands
    /// among printable ASCII, other text or word boundaries.
    #[test]
    fn control_characters_are_found_as_decoding_finds_them() {
        let mut random = crate::testing::xorshift(0x5851_f42d_4c95_7f2d);
        let mut next = |bound: usize| (random() % bound as u64) as usize;
        let pieces = [
            "a", "Z", " ", "~", "\u{7f}", "\t", "\0", "\u{85}", "\u{9f}", "\u{a0}", "\u{e9}",
            "\u{20ac}",
        ];
        for _ in 0..20_000 {
            let id: String = (0..1 + next(30))
                .map(|_| {
                    if next(3) == 0 {
                        pieces[next(pieces.len())]
                    } else {
                        "p"
                    }
                })
                .collect();
            assert_eq!(
                matches!(check_id(&id), Err(Rejected::ControlCharacter)),
                id.chars().any(char::is_control),
                "{id:?}"
            );
        }
    }
}
