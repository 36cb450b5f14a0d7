//! [`Json`]: a JSON document read in place, for request bodies read once.
//!
//! `serde_json` parses it (so syntax errors read exactly as for a `serde_json::Value`),
//! but strings without escapes borrow from the body instead of being copied, and objects
//! are member lists instead of maps: reading a serverside request allocates one vector
//! per object and array and nothing per field. For the readers it is the same document
//! as a `serde_json::Value` of the same text: the same numbers, the last of repeated
//! keys, members in key order.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::JsonValue;

/// A parsed JSON value whose strings borrow from the input where they can.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Json<'a> {
    /// `null`.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as `serde_json::Value::as_f64` would read it.
    Number(f64),
    /// A string.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object's members in document order (repeated keys included; the last counts).
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// Parses `bytes`, with `serde_json`'s errors.
    pub fn parse(bytes: &'a [u8]) -> Result<Json<'a>, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

impl JsonValue for Json<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
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
            Json::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
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
        Json::Object(Vec::new())
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json<'de>, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, value: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(value))
    }
    fn visit_i64<E>(self, value: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(value as f64))
    }
    fn visit_u64<E>(self, value: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(value as f64))
    }
    fn visit_f64<E>(self, value: f64) -> Result<Json<'de>, E> {
        Ok(Json::Number(value))
    }
    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(value)))
    }
    fn visit_str<E>(self, value: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(value.to_owned())))
    }
    fn visit_string<E>(self, value: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(value)))
    }
    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json<'de>, D::Error> {
        Deserialize::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(Key(key)) = map.next_key()? {
            members.push((key, map.next_value()?));
        }
        Ok(Json::Object(members))
    }
}

/// An object key, borrowed from the input where it can be.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(value)))
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(value.to_owned())))
    }
    fn visit_string<E>(self, value: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(value)))
    }
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
            r#""plain""#,
            "null",
        ];
        for text in texts {
            let json = Json::parse(text.as_bytes()).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            same(&json, &value);
        }
        let json = Json::parse(br#"{"k":"no escapes","e":"with \n escape"}"#).unwrap();
        assert!(matches!(
            json.member("k"),
            Some(Json::String(Cow::Borrowed(_)))
        ));
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
        for text in [r#"{"a":"#, "[1,]", r#"{"a" 1}"#, "", "nul", "1e400"] {
            let ours = Json::parse(text.as_bytes()).unwrap_err().to_string();
            let theirs = serde_json::from_str::<Value>(text).unwrap_err().to_string();
            assert_eq!(ours, theirs, "{text}");
        }
    }
}
