//! [`Errors`]: the problems found in one document, each with the JSON path of its
//! field, kept up to [`MAX_REPORTED_ERRORS`] and counted beyond.

use std::fmt;

/// One problem of one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// JSON path, e.g. `events[1].data.items[0].qty`; empty for the whole body.
    pub path: String,
    /// What is wrong, e.g. `expected a number`.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "body: {}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Most errors kept per document; beyond that only the count grows.
pub const MAX_REPORTED_ERRORS: usize = 100;

/// The errors found while validating one document.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Errors {
    list: Vec<FieldError>,
    total: usize,
}

impl Errors {
    /// Records an error at `path`.
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.total += 1;
        if self.list.len() < MAX_REPORTED_ERRORS {
            self.list.push(FieldError {
                path: path.into(),
                message: message.into(),
            });
        }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Number of errors found, including those beyond [`MAX_REPORTED_ERRORS`].
    pub fn total(&self) -> usize {
        self.total
    }

    /// The errors kept, in the order found.
    pub fn list(&self) -> &[FieldError] {
        &self.list
    }

    /// Every kept error as `path: message`, with a last line counting the rest.
    pub fn messages(&self) -> Vec<String> {
        let mut out: Vec<String> = self.list.iter().map(ToString::to_string).collect();
        if self.total > self.list.len() {
            out.push(format!(
                "... and {} more errors",
                self.total - self.list.len()
            ));
        }
        out
    }

    /// Every message joined with `; `, for bodies that carry a single `Error` string.
    pub fn joined(&self) -> String {
        self.messages().join("; ")
    }

    /// `Ok(value)` when nothing was recorded.
    pub fn into_result<T>(self, value: T) -> Result<T, Errors> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

/// The path of an element of an array field: `items[3]`.
pub fn index_path(path: &str, index: usize) -> String {
    let mut out = String::with_capacity(path.len() + 8);
    push_index_path(&mut out, path, index);
    out
}

/// Writes `path[index]` into `out` after what it holds (without the formatting
/// machinery: the serverside events write one per event).
pub fn push_index_path(out: &mut String, path: &str, index: usize) {
    out.push_str(path);
    out.push('[');
    let mut divisor = 1usize;
    while index / divisor >= 10 {
        divisor *= 10;
    }
    loop {
        let digit = u8::try_from(index / divisor % 10).unwrap_or(0);
        out.push(char::from(b'0' + digit));
        if divisor == 1 {
            break;
        }
        divisor /= 10;
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_paths_are_written_as_formatting_writes_them() {
        for index in [0, 1, 9, 10, 11, 99, 100, 12_345, usize::MAX] {
            assert_eq!(index_path("events", index), format!("events[{index}]"));
        }
        let mut out = String::from("x.");
        push_index_path(&mut out, "items", 7);
        assert_eq!(out, "x.items[7]");
    }

    #[test]
    fn caps_reported_errors_but_counts_all() {
        let mut errors = Errors::default();
        for i in 0..(MAX_REPORTED_ERRORS + 5) {
            errors.push(format!("f{i}"), "bad");
        }
        assert_eq!(errors.total(), MAX_REPORTED_ERRORS + 5);
        assert_eq!(errors.list().len(), MAX_REPORTED_ERRORS);
        assert_eq!(errors.messages().last().unwrap(), "... and 5 more errors");
    }
}
