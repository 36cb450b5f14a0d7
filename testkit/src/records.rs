//! Products as the JSON records that feeds and deltas carry (`Id`, `Title`, `Link`,
//! `Image`, `Prices`, `Categories`), to be extended with [`with`].

use serde_json::{Value, json};

/// A valid product record: `Title` `Product <id>`, one price, no categories.
pub fn product(id: &str, price: &str) -> Value {
    json!({
        "Id": id,
        "Title": format!("Product {id}"),
        "Link": format!("/p/{id}"),
        "Image": format!("/i/{id}.jpg"),
        "Prices": [price],
        "Categories": [],
    })
}

/// `record` with the members of `extra` set (added or replaced).
pub fn with(mut record: Value, extra: Value) -> Value {
    if let (Some(target), Value::Object(extra)) = (record.as_object_mut(), extra) {
        for (key, value) in extra {
            target.insert(key, value);
        }
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_members_replace_and_add() {
        let record = with(
            product("a", "1 GBP"),
            json!({"Title": "Other", "Brand": "b"}),
        );
        assert_eq!(record["Title"], "Other");
        assert_eq!(record["Brand"], "b");
        assert_eq!(record["Prices"], json!(["1 GBP"]));
    }
}
