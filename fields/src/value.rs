//! [`JsonValue`]: what the readers need of a parsed JSON value, for `serde_json`'s
//! values and simd-json's borrowed ones.

use serde_json::Value;

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
