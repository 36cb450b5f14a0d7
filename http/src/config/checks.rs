//! What reading the configuration reports: a [`ConfigError`] (the source, the key and
//! the problem), a key's [`Invalid`] value before the file's name is attached, and the
//! range checks every part of the file uses.

use std::fmt;

/// A configuration error: the source, the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (or other source) the value came from.
    pub source: String,
    /// The key, e.g. `accounts[0].zones[1].strategy`; empty for the whole file.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.source, self.message)
        } else {
            write!(f, "{}: {}: {}", self.source, self.key, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// `value` as an `f32` if it lies in `min..=max`, else the message saying it does not.
pub(super) fn fraction(value: f64, min: f64, max: f64) -> Result<f32, OutOfRange<f64>> {
    if (min..=max).contains(&value) {
        Ok(value as f32)
    } else {
        Err(OutOfRange {
            min,
            max,
            got: value,
        })
    }
}

/// `value` when it lies in `min..=max`, else the message saying it does not.
pub(super) fn within(value: u64, min: u64, max: u64) -> Result<u64, OutOfRange<u64>> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(OutOfRange {
            min,
            max,
            got: value,
        })
    }
}

/// What is wrong with one key of the file, before the file's name is attached (a
/// [`ConfigError`] then).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Invalid {
    /// The key, e.g. `accounts[0].zones[1].count`.
    pub(super) key: String,
    /// What is wrong.
    pub(super) message: String,
}

impl Invalid {
    /// `message` about `key`.
    pub(super) fn at(key: String, message: impl fmt::Display) -> Invalid {
        Invalid {
            key,
            message: message.to_string(),
        }
    }
}

/// A number outside the range its key allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct OutOfRange<T> {
    min: T,
    max: T,
    got: T,
}

impl<T: fmt::Display> fmt::Display for OutOfRange<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "must be between {} and {}, got {}",
            self.min, self.max, self.got
        )
    }
}
