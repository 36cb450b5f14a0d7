//! The readers: [`Fields`] over any [`JsonValue`], recording each problem in
//! [`Errors`] with its JSON path.

use std::borrow::Cow;

use serde_json::Value;

use crate::check::Rejected;
use crate::errors::{Errors, index_path};
use crate::value::JsonValue;

/// How keys are matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyMatch {
    /// The key exactly as the contract spells it.
    Exact,
    /// Feed style: the first letter may be of either case (`newArrival` = `NewArrival`).
    FirstLetterEitherCase,
}

/// Whether a field must be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Required: its absence is an error naming it.
    Required,
    /// Optional.
    Optional,
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
        let value = self.required(key, errors)?;
        self.str_of(key, value, errors)
    }

    /// The value of a required field (its absence reported).
    fn required(&self, key: &str, errors: &mut Errors) -> Option<&'v V> {
        let value = self.get(key);
        if value.is_none() {
            errors.push(self.path_of(key), "required");
        }
        value
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
        self.str_of(key, value, errors)
    }

    /// `value` (of `key`) as a string.
    fn str_of(&self, key: &str, value: &'v V, errors: &mut Errors) -> Option<&'v str> {
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
        let value = self.required(key, errors)?;
        self.number_of(key, value, errors)
    }

    /// An optional finite number.
    pub fn opt_number(&self, key: &str, errors: &mut Errors) -> Option<f64> {
        let value = self.get(key)?;
        self.number_of(key, value, errors)
    }

    /// `value` (of `key`) as a finite number.
    fn number_of(&self, key: &str, value: &'v V, errors: &mut Errors) -> Option<f64> {
        match value.as_number() {
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
        let value = self.required(key, errors)?;
        self.id_text_of(key, value, errors)
    }

    /// An optional id: a string, or a JSON integer literal read as its decimal text.
    pub fn opt_id_text(&self, key: &str, errors: &mut Errors) -> Option<Cow<'v, str>> {
        let value = self.get(key)?;
        self.id_text_of(key, value, errors)
    }

    /// `value` (of `key`) as an id's text.
    fn id_text_of(&self, key: &str, value: &'v V, errors: &mut Errors) -> Option<Cow<'v, str>> {
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
        let value = self.required(key, errors)?;
        self.number_or_text_of(key, value, errors)
    }

    /// An optional finite number, or a string holding one.
    pub fn opt_number_or_text(&self, key: &str, errors: &mut Errors) -> Option<f64> {
        let value = self.get(key)?;
        self.number_or_text_of(key, value, errors)
    }

    /// `value` (of `key`) as a finite number, or a string holding one.
    fn number_or_text_of(&self, key: &str, value: &'v V, errors: &mut Errors) -> Option<f64> {
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
            None => self.number_of(key, value, errors),
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
        let value = self.required(key, errors)?;
        self.array_of(key, value, errors)
    }

    /// An optional array. An empty string in place of an array is refused with a hint,
    /// since feeds send `[]` for "none".
    pub fn opt_array(&self, key: &str, errors: &mut Errors) -> Option<&'v [V]> {
        let value = self.get(key)?;
        self.array_of(key, value, errors)
    }

    /// `value` (of `key`) as an array.
    fn array_of(&self, key: &str, value: &'v V, errors: &mut Errors) -> Option<&'v [V]> {
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
}
