//! [`Json`]: a JSON document read in place, for request bodies read once.
//!
//! One pass over the bytes reads it where that is certain to read as `serde_json` does
//! (`scan.rs`), `serde_json` otherwise (so syntax errors read exactly as for a
//! `serde_json::Value`). Strings are not copied: they borrow from the body, and only a
//! string with escapes is written out, into the arena. The document's arrays and member lists live in an
//! arena the caller keeps (a per-thread [`Bump`] reset per request allocates nothing
//! once warm). For the readers it is the same document as a `serde_json::Value` of the
//! same text: the same numbers, the last of repeated keys, members in key order.

use std::fmt;

use bumpalo::Bump;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::JsonValue;

/// A parsed JSON value whose strings borrow from the input where they can and whose
/// other parts live in an arena.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Json<'a> {
    /// `null`.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number with a fraction or an exponent, as `serde_json::Value::as_f64` reads it.
    Number(f64),
    /// A number written as an integer literal (within 64 bits).
    Integer(i128),
    /// A string.
    String(&'a str),
    /// An array.
    Array(&'a [Json<'a>]),
    /// An object's members in document order (repeated keys included; the last counts).
    Object(&'a [(&'a str, Json<'a>)]),
}

impl<'a> Json<'a> {
    /// Parses `bytes` into `arena`, with `serde_json`'s errors: in one pass where that is
    /// certain to read as `serde_json` does (`scan`), else with `serde_json`.
    pub fn parse(bytes: &'a [u8], arena: &'a Bump) -> Result<Json<'a>, serde_json::Error> {
        match crate::scan::read(bytes, arena) {
            Some(json) => Ok(json),
            None => Json::parse_with_serde(bytes, arena),
        }
    }

    /// Parses `bytes` into `arena` with `serde_json` alone (the reference reading).
    pub fn parse_with_serde(
        bytes: &'a [u8],
        arena: &'a Bump,
    ) -> Result<Json<'a>, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        let value = Seed(arena).deserialize(&mut deserializer)?;
        deserializer.end()?;
        Ok(value)
    }
}

impl JsonValue for Json<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) | Json::Integer(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
    fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }
    fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }
    fn member(&self, key: &str) -> Option<&Self> {
        match self {
            Json::Object(members) => members
                .iter()
                .rev()
                .find(|(k, _)| same_key(k, key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
    fn members(&self) -> Vec<(&str, &Self)> {
        let Json::Object(members) = self else {
            return Vec::new();
        };
        // As a map would hold them: in key order, the last of repeated keys.
        let mut sorted: Vec<(&str, &Self)> = Vec::with_capacity(members.len());
        for (key, value) in members.iter().rev() {
            if !sorted.iter().any(|(k, _)| k == key) {
                sorted.push((key, value));
            }
        }
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        sorted
    }
    fn as_text(&self) -> Option<&str> {
        match self {
            Json::String(text) => Some(text),
            _ => None,
        }
    }
    fn as_boolean(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn as_number(&self) -> Option<f64> {
        match self {
            Json::Number(n) => Some(*n),
            Json::Integer(n) => Some(*n as f64),
            _ => None,
        }
    }
    fn as_integer(&self) -> Option<i128> {
        match self {
            Json::Integer(n) => Some(*n),
            _ => None,
        }
    }
    fn as_list(&self) -> Option<&[Self]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }
    fn empty_object() -> Self {
        Json::Object(&[])
    }
}

/// Reads one value into the arena.
#[derive(Clone, Copy)]
struct Seed<'a>(&'a Bump);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Seed<'a> {
    type Value = Json<'a>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json<'a>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Seed<'a> {
    type Value = Json<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, value: bool) -> Result<Json<'a>, E> {
        Ok(Json::Bool(value))
    }
    fn visit_i64<E>(self, value: i64) -> Result<Json<'a>, E> {
        Ok(Json::Integer(i128::from(value)))
    }
    fn visit_u64<E>(self, value: u64) -> Result<Json<'a>, E> {
        Ok(Json::Integer(i128::from(value)))
    }
    fn visit_f64<E>(self, value: f64) -> Result<Json<'a>, E> {
        Ok(Json::Number(value))
    }
    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Json<'a>, E> {
        Ok(Json::String(value))
    }
    fn visit_str<E>(self, value: &str) -> Result<Json<'a>, E> {
        Ok(Json::String(self.0.alloc_str(value)))
    }
    fn visit_none<E>(self) -> Result<Json<'a>, E> {
        Ok(Json::Null)
    }
    fn visit_unit<E>(self) -> Result<Json<'a>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json<'a>, D::Error> {
        self.deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'a>, A::Error> {
        let mut items = bumpalo::collections::Vec::new_in(self.0);
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Json::Array(items.into_bump_slice()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'a>, A::Error> {
        let mut members = bumpalo::collections::Vec::new_in(self.0);
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            members.push((key, map.next_value_seed(self)?));
        }
        Ok(Json::Object(members.into_bump_slice()))
    }
}

/// Reads an object key, borrowed from the input where it can be, else into the arena.
struct KeySeed<'a>(&'a Bump);

impl<'de: 'a, 'a> DeserializeSeed<'de> for KeySeed<'a> {
    type Value = &'a str;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<&'a str, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for KeySeed<'a> {
    type Value = &'a str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<&'a str, E> {
        Ok(value)
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<&'a str, E> {
        Ok(self.0.alloc_str(value))
    }
}

/// Whether two keys are the same, their lengths and first bytes compared before their
/// bytes: a lookup passes most members of an object on those two (a body's keys of one
/// length, `visitorId` and `sessionId`, would otherwise each cost a `memcmp` call).
fn same_key(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().first() == b.as_bytes().first() && a == b
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Every reader sees the same document as through a `serde_json::Value`.
    #[test]
    fn reads_like_a_serde_json_value() {
        let texts = [
            r#"{"a":1,"b":"x\"y","c":[1,2.5,-3,null,true],"d":{"e":"f"},"a":"last"}"#,
            r#"[18446744073709551615, -9223372036854775808, 1e300, 0.1, "\u00e9"]"#,
            r#"{"k\u0041":{"nested":[[],{}]}}"#,
            r#""plain""#,
            "null",
        ];
        for text in texts {
            let arena = Bump::new();
            let json = Json::parse(text.as_bytes(), &arena).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            same(&json, &value);
        }
        let input = br#"{"k":"no escapes","e":"with \n escape"}"#;
        let arena = Bump::new();
        let json = Json::parse_with_serde(input, &arena).unwrap();
        let borrowed = json.member("k").and_then(Json::as_text).unwrap();
        assert!(input.as_ptr_range().contains(&borrowed.as_ptr()));
        assert_eq!(
            json.member("e").and_then(Json::as_text),
            Some("with \n escape")
        );
    }

    fn same(json: &Json<'_>, value: &Value) {
        assert_eq!(json.kind(), JsonValue::kind(value));
        assert_eq!(json.as_text(), value.as_str());
        assert_eq!(json.as_boolean(), value.as_bool());
        assert_eq!(json.as_number(), JsonValue::as_number(value));
        assert_eq!(json.as_integer(), JsonValue::as_integer(value));
        assert_eq!(json.is_null(), value.is_null());
        let members = json.members();
        let value_members = JsonValue::members(value);
        assert_eq!(members.len(), value_members.len());
        for ((k, v), (vk, vv)) in members.iter().zip(&value_members) {
            assert_eq!(k, vk);
            same(v, vv);
            same(
                json.member(k).unwrap(),
                JsonValue::member(value, k).unwrap(),
            );
        }
        let items = json.as_list().unwrap_or_default();
        let value_items = value.as_array().map(Vec::as_slice).unwrap_or_default();
        assert_eq!(items.len(), value_items.len());
        for (item, value_item) in items.iter().zip(value_items) {
            same(item, value_item);
        }
    }

    /// Syntax errors are `serde_json`'s own.
    #[test]
    fn syntax_errors_are_serde_jsons() {
        for text in [r#"{"a":"#, "[1,]", r#"{"a" 1}"#, "", "nul", "1e400", "{} x"] {
            let arena = Bump::new();
            let ours = Json::parse(text.as_bytes(), &arena)
                .unwrap_err()
                .to_string();
            let theirs = serde_json::from_str::<Value>(text).unwrap_err().to_string();
            assert_eq!(ours, theirs, "{text}");
        }
    }
}
