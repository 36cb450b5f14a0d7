//! The readers: [`Fields`] over any [`JsonValue`], and [`Errors`] that name the JSON
//! path of each problem.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::check::Rejected;

/// What the readers need of a parsed JSON value.
pub trait JsonValue: Sized {
    /// The JSON type in words ("a string", "an object", ...).
    fn kind(&self) -> &'static str;
    /// Whether it is `null`.
    fn is_null(&self) -> bool;
    /// Whether it is an object.
    fn is_object(&self) -> bool;
    /// A member of an object (`None` for other types).
    fn member(&self, key: &str) -> Option<&Self>;
    /// The members of an object, in document order where the parser keeps it.
    fn members(&self) -> Vec<(&str, &Self)>;
    /// A string.
    fn as_text(&self) -> Option<&str>;
    /// A boolean.
    fn as_boolean(&self) -> Option<bool>;
    /// A number.
    fn as_number(&self) -> Option<f64>;
    /// A number written as an integer literal: an optional minus sign and digits, no
    /// fraction and no exponent (`5`, `-12`; not `5.0`, `1E+2` or `1e-400`), within
    /// 64 bits.
    fn as_integer(&self) -> Option<i128>;
    /// An array.
    fn as_list(&self) -> Option<&[Self]>;
    /// An empty object (what PHP's `[]` for an empty associative array stands for).
    fn empty_object() -> Self;
}

impl JsonValue for Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
    fn is_null(&self) -> bool {
        self.is_null()
    }
    fn is_object(&self) -> bool {
        self.is_object()
    }
    fn member(&self, key: &str) -> Option<&Value> {
        self.as_object()?.get(key)
    }
    fn members(&self) -> Vec<(&str, &Value)> {
        self.as_object().map_or_else(Vec::new, |o| {
            o.iter().map(|(k, v)| (k.as_str(), v)).collect()
        })
    }
    fn as_text(&self) -> Option<&str> {
        self.as_str()
    }
    fn as_boolean(&self) -> Option<bool> {
        self.as_bool()
    }
    fn as_number(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    fn as_integer(&self) -> Option<i128> {
        // serde_json keeps a literal with a fraction or an exponent as a float.
        match self {
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from)),
            _ => None,
        }
    }
    fn as_list(&self) -> Option<&[Value]> {
        self.as_array().map(Vec::as_slice)
    }
    fn empty_object() -> Value {
        Value::Object(serde_json::Map::new())
    }
}

impl JsonValue for simd_json::BorrowedValue<'_> {
    fn kind(&self) -> &'static str {
        use simd_json::{BorrowedValue as V, StaticNode as S};
        match self {
            V::Static(S::Null) => "null",
            V::Static(S::Bool(_)) => "a boolean",
            V::Static(_) => "a number",
            V::String(_) => "a string",
            V::Array(_) => "an array",
            V::Object(_) => "an object",
        }
    }
    fn is_null(&self) -> bool {
        matches!(
            self,
            simd_json::BorrowedValue::Static(simd_json::StaticNode::Null)
        )
    }
    fn is_object(&self) -> bool {
        matches!(self, simd_json::BorrowedValue::Object(_))
    }
    fn member(&self, key: &str) -> Option<&Self> {
        match self {
            simd_json::BorrowedValue::Object(o) => o.get(key),
            _ => None,
        }
    }
    fn members(&self) -> Vec<(&str, &Self)> {
        match self {
            simd_json::BorrowedValue::Object(o) => o.iter().map(|(k, v)| (k.as_ref(), v)).collect(),
            _ => Vec::new(),
        }
    }
    fn as_text(&self) -> Option<&str> {
        match self {
            simd_json::BorrowedValue::String(s) => Some(s),
            _ => None,
        }
    }
    fn as_boolean(&self) -> Option<bool> {
        match self {
            simd_json::BorrowedValue::Static(simd_json::StaticNode::Bool(b)) => Some(*b),
            _ => None,
        }
    }
    fn as_number(&self) -> Option<f64> {
        use simd_json::{BorrowedValue as V, StaticNode as S};
        match self {
            V::Static(S::I64(n)) => Some(*n as f64),
            V::Static(S::U64(n)) => Some(*n as f64),
            V::Static(S::F64(n)) => Some(*n),
            _ => None,
        }
    }
    fn as_integer(&self) -> Option<i128> {
        // simd-json keeps a literal with a fraction or an exponent as a float.
        use simd_json::{BorrowedValue as V, StaticNode as S};
        match self {
            V::Static(S::I64(n)) => Some(i128::from(*n)),
            V::Static(S::U64(n)) => Some(i128::from(*n)),
            _ => None,
        }
    }
    fn as_list(&self) -> Option<&[Self]> {
        match self {
            simd_json::BorrowedValue::Array(items) => Some(items.as_slice()),
            _ => None,
        }
    }
    fn empty_object() -> Self {
        simd_json::BorrowedValue::Object(Box::default())
    }
}

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
    format!("{path}[{index}]")
}

/// How keys are matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyMatch {
    /// The key exactly as the contract spells it.
    Exact,
    /// Feed style: the first letter may be of either case (`newArrival` = `NewArrival`).
    FirstLetterEitherCase,
}

/// A JSON object being read, with its path.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'v, 'p, V = Value> {
    object: &'v V,
    path: &'p str,
    keys: KeyMatch,
}

/// What JSON type a value has, in words.
pub fn kind_of<V: JsonValue>(value: &V) -> &'static str {
    value.kind()
}

impl<'v, 'p, V: JsonValue> Fields<'v, 'p, V> {
    /// Reads `value` as an object at `path`; records an error when it is not one.
    pub fn of(
        value: &'v V,
        path: &'p str,
        keys: KeyMatch,
        errors: &mut Errors,
    ) -> Option<Fields<'v, 'p, V>> {
        if value.is_object() {
            Some(Fields {
                object: value,
                path,
                keys,
            })
        } else {
            errors.push(path, format!("expected an object, got {}", value.kind()));
            None
        }
    }

    /// The path of this object.
    pub fn path(&self) -> &'p str {
        self.path
    }

    /// The path of a field of this object.
    pub fn path_of(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// The raw value of a field; `null` counts as absent.
    pub fn get(&self, key: &str) -> Option<&'v V> {
        let found = match self.object.member(key) {
            Some(v) => Some(v),
            None if self.keys == KeyMatch::FirstLetterEitherCase => {
                with_first_letter_swapped(key, |swapped| self.object.member(swapped))
            }
            None => None,
        };
        found.filter(|v| !v.is_null())
    }

    /// Whether a field is present and not `null`.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A required string.
    pub fn req_str(&self, key: &str, errors: &mut Errors) -> Option<&'v str> {
        match self.get(key) {
            None => {
                errors.push(self.path_of(key), "required");
                None
            }
            Some(_) => self.opt_str(key, errors),
        }
    }

    /// A required string that is not empty after trimming.
    pub fn req_nonempty_str(&self, key: &str, errors: &mut Errors) -> Option<&'v str> {
        let value = self.req_str(key, errors)?;
        if value.trim().is_empty() {
            errors.push(self.path_of(key), "must not be empty");
            return None;
        }
        Some(value)
    }

    /// An optional string.
    pub fn opt_str(&self, key: &str, errors: &mut Errors) -> Option<&'v str> {
        let value = self.get(key)?;
        match value.as_text() {
            Some(s) => Some(s),
            None => {
                let other = value;
                errors.push(
                    self.path_of(key),
                    format!("expected a string, got {}", kind_of(other)),
                );
                None
            }
        }
    }

    /// An optional string; an empty one counts as absent.
    pub fn opt_nonempty_str(&self, key: &str, errors: &mut Errors) -> Option<&'v str> {
        self.opt_str(key, errors).filter(|s| !s.is_empty())
    }

    /// A required finite number.
    pub fn req_number(&self, key: &str, errors: &mut Errors) -> Option<f64> {
        match self.get(key) {
            None => {
                errors.push(self.path_of(key), "required");
                None
            }
            Some(_) => self.opt_number(key, errors),
        }
    }

    /// An optional finite number.
    pub fn opt_number(&self, key: &str, errors: &mut Errors) -> Option<f64> {
        match self.get(key)?.as_number() {
            Some(f) if f.is_finite() => Some(f),
            Some(_) => {
                errors.push(self.path_of(key), "expected a finite number");
                None
            }
            None => {
                errors.push(self.path_of(key), "expected a number");
                None
            }
        }
    }

    /// A required id: a string, or a whole JSON number read as its decimal text (the
    /// vendor's plugins send `"userid": 5`).
    pub fn req_id_text(&self, key: &str, errors: &mut Errors) -> Option<Cow<'v, str>> {
        match self.get(key) {
            None => {
                errors.push(self.path_of(key), "required");
                None
            }
            Some(_) => self.opt_id_text(key, errors),
        }
    }

    /// An optional id: a string, or a JSON integer literal read as its decimal text.
    pub fn opt_id_text(&self, key: &str, errors: &mut Errors) -> Option<Cow<'v, str>> {
        let value = self.get(key)?;
        match id_text(value) {
            Some(text) => Some(text),
            None => {
                errors.push(self.path_of(key), not_an_id(value));
                None
            }
        }
    }

    /// A required finite number, or a string holding one (`"1.0000"`, as the vendor's
    /// plugins send database values).
    pub fn req_number_or_text(&self, key: &str, errors: &mut Errors) -> Option<f64> {
        match self.get(key) {
            None => {
                errors.push(self.path_of(key), "required");
                None
            }
            Some(_) => self.opt_number_or_text(key, errors),
        }
    }

    /// An optional finite number, or a string holding one.
    pub fn opt_number_or_text(&self, key: &str, errors: &mut Errors) -> Option<f64> {
        let value = self.get(key)?;
        match value.as_text() {
            Some(text) => match number_text(text) {
                Some(number) => Some(number),
                None => {
                    errors.push(
                        self.path_of(key),
                        format!("expected a number, got the string {text:?}"),
                    );
                    None
                }
            },
            None => self.opt_number(key, errors),
        }
    }

    /// An optional boolean.
    pub fn opt_bool(&self, key: &str, errors: &mut Errors) -> Option<bool> {
        let value = self.get(key)?;
        match value.as_boolean() {
            Some(b) => Some(b),
            None => {
                let other = value;
                errors.push(
                    self.path_of(key),
                    format!("expected a boolean, got {}", kind_of(other)),
                );
                None
            }
        }
    }

    /// A required array.
    pub fn req_array(&self, key: &str, errors: &mut Errors) -> Option<&'v [V]> {
        match self.get(key) {
            None => {
                errors.push(self.path_of(key), "required");
                None
            }
            Some(_) => self.opt_array(key, errors),
        }
    }

    /// An optional array. An empty string in place of an array is refused with a hint,
    /// since feeds send `[]` for "none".
    pub fn opt_array(&self, key: &str, errors: &mut Errors) -> Option<&'v [V]> {
        let value = self.get(key)?;
        if let Some(items) = value.as_list() {
            return Some(items);
        }
        if value.as_text() == Some("") {
            errors.push(
                self.path_of(key),
                "expected an array, got an empty string (send [] for none)",
            );
        } else {
            errors.push(
                self.path_of(key),
                format!("expected an array, got {}", value.kind()),
            );
        }
        None
    }

    /// An optional array of strings; each element is checked with `check`.
    pub fn opt_string_array(
        &self,
        key: &str,
        errors: &mut Errors,
        check: impl Fn(&str) -> Result<(), Rejected>,
    ) -> Option<Vec<String>> {
        let items = self.opt_array(key, errors)?;
        self.strings_of(key, items, errors, check)
    }

    /// A required array of strings; each element is checked with `check`.
    pub fn req_string_array(
        &self,
        key: &str,
        errors: &mut Errors,
        check: impl Fn(&str) -> Result<(), Rejected>,
    ) -> Option<Vec<String>> {
        let items = self.req_array(key, errors)?;
        self.strings_of(key, items, errors, check)
    }

    /// An optional array of ids: strings, or whole numbers read as their decimal text
    /// (the vendor's plugins send `"DeleteProducts": [2900, 2901]`); each is checked
    /// with `check`.
    pub fn opt_id_array(
        &self,
        key: &str,
        errors: &mut Errors,
        check: impl Fn(&str) -> Result<(), Rejected>,
    ) -> Option<Vec<String>> {
        let items = self.opt_array(key, errors)?;
        self.texts_of(key, items, errors, check, id_text)
    }

    fn strings_of(
        &self,
        key: &str,
        items: &[V],
        errors: &mut Errors,
        check: impl Fn(&str) -> Result<(), Rejected>,
    ) -> Option<Vec<String>> {
        self.texts_of(key, items, errors, check, |item| {
            item.as_text().map(Cow::Borrowed)
        })
    }

    /// The text of each element (`text`; `None` is a type error), checked with `check`.
    fn texts_of<'i>(
        &self,
        key: &str,
        items: &'i [V],
        errors: &mut Errors,
        check: impl Fn(&str) -> Result<(), Rejected>,
        text: impl Fn(&'i V) -> Option<Cow<'i, str>>,
    ) -> Option<Vec<String>> {
        let mut out = Vec::with_capacity(items.len());
        let before = errors.total();
        for (i, item) in items.iter().enumerate() {
            match text(item) {
                Some(s) => match check(&s) {
                    Ok(()) => out.push(s.into_owned()),
                    Err(rejected) => {
                        errors.push(index_path(&self.path_of(key), i), rejected.to_string());
                    }
                },
                None => errors.push(index_path(&self.path_of(key), i), not_an_id(item)),
            }
        }
        (errors.total() == before).then_some(out)
    }
}

/// An id as text: a string, or an integer literal's decimal text (never a number with
/// a fraction or an exponent, whose value is not what was written: `1e-400` reads as 0).
fn id_text<V: JsonValue>(value: &V) -> Option<Cow<'_, str>> {
    match value.as_text() {
        Some(text) => Some(Cow::Borrowed(text)),
        None => value.as_integer().map(|n| Cow::Owned(n.to_string())),
    }
}

/// Why a value is not an id.
fn not_an_id<V: JsonValue>(value: &V) -> String {
    if value.as_number().is_some() {
        "expected a string, or a number written as digits only (no fraction, no exponent)"
            .to_owned()
    } else {
        format!("expected a string, got {}", value.kind())
    }
}

/// A decimal number written as text: optional sign, digits, optional `.` and digits,
/// nothing else (no exponent, no spaces, no `inf`).
pub fn number_text(text: &str) -> Option<f64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// Calls `f` with `key` whose first letter's case is swapped: in a stack buffer for the
/// short ASCII names fields have, so a lookup allocates nothing.
fn with_first_letter_swapped<R>(key: &str, f: impl FnOnce(&str) -> R) -> R {
    const SHORT: usize = 64;
    let mut buffer = [0u8; SHORT];
    if let Some(copy) = buffer.get_mut(..key.len())
        && let Some(first) = key.as_bytes().first()
        && first.is_ascii_alphabetic()
    {
        copy.copy_from_slice(key.as_bytes());
        if let Some(first) = copy.first_mut() {
            *first ^= 0x20;
        }
        if let Ok(swapped) = std::str::from_utf8(copy) {
            return f(swapped);
        }
    }
    f(&swap_first_letter_case(key))
}

fn swap_first_letter_case(key: &str) -> String {
    let mut chars = key.chars();
    match chars.next() {
        Some(first) if first.is_uppercase() => first.to_lowercase().chain(chars).collect(),
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn first_letter_swaps_case_for_ascii_and_other_names() {
        let swapped = |key: &str| with_first_letter_swapped(key, str::to_owned);
        assert_eq!(swapped("productId"), "ProductId");
        assert_eq!(swapped("ProductId"), "productId");
        assert_eq!(swapped("éclair"), "Éclair");
        assert_eq!(swapped("1st"), "1st");
        assert_eq!(swapped(""), "");
        let long = format!("a{}", "b".repeat(100));
        assert_eq!(swapped(&long), format!("A{}", "b".repeat(100)));
    }

    #[test]
    fn plugin_readers_take_whole_numbers_as_ids_and_numeric_strings_as_numbers() {
        let doc = json!({"id": 42, "big": 1.5, "name": "a", "qty": "1.0000", "neg": "-2",
            "bad": "1e3", "words": "one", "flag": true});
        let mut errors = Errors::default();
        let f = Fields::of(&doc, "d", KeyMatch::Exact, &mut errors).unwrap();
        assert_eq!(f.opt_id_text("id", &mut errors).as_deref(), Some("42"));
        assert_eq!(f.opt_id_text("name", &mut errors).as_deref(), Some("a"));
        assert_eq!(f.opt_number_or_text("qty", &mut errors), Some(1.0));
        assert_eq!(f.opt_number_or_text("neg", &mut errors), Some(-2.0));
        assert_eq!(f.opt_number_or_text("id", &mut errors), Some(42.0));
        assert!(errors.is_empty());
        assert_eq!(f.opt_id_text("big", &mut errors), None);
        assert_eq!(f.opt_id_text("flag", &mut errors), None);
        assert_eq!(f.opt_number_or_text("bad", &mut errors), None);
        assert_eq!(f.opt_number_or_text("words", &mut errors), None);
        assert_eq!(f.req_id_text("missing", &mut errors), None);
        assert_eq!(
            errors.messages(),
            [
                "d.big: expected a string, or a number written as digits only (no fraction, no exponent)",
                "d.flag: expected a string, got a boolean",
                "d.bad: expected a number, got the string \"1e3\"",
                "d.words: expected a number, got the string \"one\"",
                "d.missing: required",
            ]
        );
    }

    /// Only integer literals are ids: a fraction or an exponent is refused whatever the
    /// value it stands for, by every parser the server reads bodies with.
    #[test]
    fn only_integer_literals_are_read_as_ids() {
        let text = r#"{"a": 5, "b": -12, "c": 18446744073709551615, "d": 1e-400, "e": 1E+2,
            "f": 100.0, "g": 1.5, "h": 123456789012345678901234567890, "l": [7, 7.0, 7e0]}"#;
        let accepted = ["5", "-12", "18446744073709551615"];
        let check = |errors: &mut Errors, ids: Vec<Option<String>>, list: Option<Vec<String>>| {
            assert_eq!(
                ids,
                accepted
                    .iter()
                    .map(|s| Some((*s).to_owned()))
                    .chain([None, None, None, None, None])
                    .collect::<Vec<_>>()
            );
            assert_eq!(list, None);
            let messages = errors.messages();
            assert_eq!(messages.len(), 7, "{messages:?}");
            for key in ["t.d", "t.e", "t.f", "t.g", "t.h", "t.l[1]", "t.l[2]"] {
                assert!(
                    messages.iter().any(|m| m.starts_with(&format!(
                        "{key}: expected a string, or a number written as digits only"
                    ))),
                    "{key}: {messages:?}"
                );
            }
        };
        let keys = ["a", "b", "c", "d", "e", "f", "g", "h"];
        // serde_json::Value
        let value: Value = serde_json::from_str(text).unwrap();
        let mut errors = Errors::default();
        let f = Fields::of(&value, "t", KeyMatch::Exact, &mut errors).unwrap();
        let ids = keys
            .iter()
            .map(|k| f.opt_id_text(k, &mut errors).map(Cow::into_owned))
            .collect();
        let list = f.opt_id_array("l", &mut errors, |_| Ok(()));
        check(&mut errors, ids, list);
        // The server's own in-place reader.
        let arena = bumpalo::Bump::new();
        let json = crate::Json::parse(text.as_bytes(), &arena).unwrap();
        let mut errors = Errors::default();
        let f = Fields::of(&json, "t", KeyMatch::Exact, &mut errors).unwrap();
        let ids = keys
            .iter()
            .map(|k| f.opt_id_text(k, &mut errors).map(Cow::into_owned))
            .collect();
        let list = f.opt_id_array("l", &mut errors, |_| Ok(()));
        check(&mut errors, ids, list);
        // simd-json, the feed reader (which refuses an integer beyond 64 bits outright).
        let mut bytes = text
            .replace("123456789012345678901234567890", "2.5e3")
            .into_bytes();
        let borrowed = simd_json::to_borrowed_value(&mut bytes).unwrap();
        let mut errors = Errors::default();
        let f = Fields::of(&borrowed, "t", KeyMatch::Exact, &mut errors).unwrap();
        let ids = keys
            .iter()
            .map(|k| f.opt_id_text(k, &mut errors).map(Cow::into_owned))
            .collect();
        let list = f.opt_id_array("l", &mut errors, |_| Ok(()));
        check(&mut errors, ids, list);
    }

    #[test]
    fn reports_paths_and_types() {
        let doc = json!({"a": "x", "n": "3", "arr": "", "nested": {"q": true}});
        let mut errors = Errors::default();
        let fields = Fields::of(&doc, "root", KeyMatch::Exact, &mut errors).unwrap();
        assert_eq!(fields.req_str("a", &mut errors), Some("x"));
        assert_eq!(fields.req_number("n", &mut errors), None);
        assert_eq!(fields.req_str("missing", &mut errors), None);
        assert_eq!(fields.opt_array("arr", &mut errors), None);
        let messages = errors.messages();
        assert_eq!(messages[0], "root.n: expected a number");
        assert_eq!(messages[1], "root.missing: required");
        assert!(messages[2].starts_with("root.arr: expected an array, got an empty string"));
    }

    #[test]
    fn feed_keys_match_first_letter_either_case() {
        let doc = json!({"newArrival": true, "Title": "t", "x": null});
        let mut errors = Errors::default();
        let lenient = Fields::of(&doc, "", KeyMatch::FirstLetterEitherCase, &mut errors).unwrap();
        assert_eq!(lenient.opt_bool("NewArrival", &mut errors), Some(true));
        assert_eq!(lenient.req_str("title", &mut errors), Some("t"));
        let exact = Fields::of(&doc, "", KeyMatch::Exact, &mut errors).unwrap();
        assert_eq!(exact.opt_bool("NewArrival", &mut errors), None);
        assert_eq!(exact.req_str("x", &mut errors), None);
        assert_eq!(errors.messages(), vec!["x: required"]);
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
