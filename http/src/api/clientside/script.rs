//! `GET /<accessKey>/cs.js`: the browser script (`http/assets/cs.js`, written for
//! Vitrine, no dependencies) with the account's settings filled in: its access key, the
//! base address its requests go to (the host the page loaded the script from) and
//! whether tracking waits for consent. Cached by browsers for five minutes and
//! revalidated by `ETag`.

use sha2::{Digest, Sha256};

/// The script, with `__VITRINE_ARGS__` where the account's settings go.
pub const SCRIPT: &str = include_str!("../../../assets/cs.js");

/// How long a browser may use the script without asking again.
pub const CACHE_CONTROL: &str = "public, max-age=300";

/// The content type of the script.
pub const CONTENT_TYPE: &str = "text/javascript; charset=utf-8";

/// A script rendered for one account and host, with its entity tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The script's text.
    pub text: String,
    /// Its `ETag` (quoted).
    pub etag: String,
}

/// A JSON string literal that is also safe inside an HTML `<script>` element.
fn js_string(text: &str) -> String {
    serde_json::Value::from(text)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Whether a `Host` header names a host (and port) the script can call back: letters,
/// digits, `.`, `-`, `:` and brackets (IPv6), at most 255 bytes.
pub fn is_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
}

/// The script of the account `access_key` served from `host`.
pub fn render(access_key: &str, host: &str, consent_required: bool) -> Rendered {
    let args = format!(
        "{}, {}, {consent_required}",
        js_string(access_key),
        js_string(&format!("//{host}/"))
    );
    let text = SCRIPT.replacen("__VITRINE_ARGS__", &args, 1);
    let digest = Sha256::digest(text.as_bytes());
    let etag = digest
        .iter()
        .take(12)
        .fold(String::from("\""), |mut tag, byte| {
            tag.push_str(&format!("{byte:02x}"));
            tag
        })
        + "\"";
    Rendered { text, etag }
}

/// Whether an `If-None-Match` header names `etag` (or is `*`).
pub fn matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_carries_the_accounts_settings_and_a_tag_of_its_text() {
        let a = render("shop-1", "vitrine.example:7480", false);
        assert!(
            a.text
                .contains(r#"})("shop-1", "//vitrine.example:7480/", false);"#)
        );
        assert!(!a.text.contains("__VITRINE_ARGS__"));
        let b = render("shop-1", "vitrine.example:7480", true);
        assert_ne!(a.etag, b.etag);
        assert_eq!(a, render("shop-1", "vitrine.example:7480", false));
        assert!(matches(&format!("W/{}, \"x\"", a.etag), &a.etag));
        assert!(!matches("\"x\"", &a.etag));
        assert!(js_string("</script>").contains("\\u003c/script\\u003e"));
        assert!(
            is_host("127.0.0.1:7480") && is_host("[::1]:80") && !is_host("a b") && !is_host("")
        );
    }
}
