//! The checks of a serverside request's top-level values, shared by the whole reader
//! ([`super::parse`]) and the one-pass reader ([`super::shape`]): each records its
//! problem in [`Errors`] under the field's name.

use std::net::IpAddr;

use vitrine_engine::money::Currency;
use vitrine_fields::{Errors, any_char_outside, first_outside};

/// Longest visitor or session id accepted.
pub const MAX_CLIENT_ID_LEN: usize = 128;
/// Longest URL (currentUrl, referer) accepted.
pub const MAX_URL_LEN: usize = 8192;
/// Longest user agent accepted.
pub const MAX_USER_AGENT_LEN: usize = 4096;
/// Longest page label accepted in place of a `currentUrl` (`magento-admin`).
pub const MAX_LABEL_LEN: usize = 64;

/// Whether a zone id is of 1 to 128 characters.
pub(super) fn zone_id_fits(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128
}

/// `userAgent`: at most [`MAX_USER_AGENT_LEN`] bytes.
pub(super) fn check_agent(agent: &str, errors: &mut Errors) {
    if agent.len() > MAX_USER_AGENT_LEN {
        errors.push(
            "userAgent",
            format!("must be at most {MAX_USER_AGENT_LEN} bytes"),
        );
    }
}

/// `ip`: an IPv4 or IPv6 address.
pub(super) fn check_ip(ip: &str, errors: &mut Errors) {
    if ip.parse::<IpAddr>().is_err() {
        errors.push(
            "ip",
            format!("expected an IPv4 or IPv6 address, got {ip:?}"),
        );
    }
}

/// `currency`: an ISO 4217 code.
pub(super) fn currency_of(code: &str, errors: &mut Errors) -> Option<Currency> {
    match Currency::from_code(code) {
        Ok(currency) => Some(currency),
        Err(e) => {
            errors.push("currency", e.to_string());
            None
        }
    }
}

/// `currentUrl`: an absolute http(s) URL, or a page label without spaces such as the
/// `magento-admin` that the vendor's module sends from the store's back office.
pub(super) fn check_page(url: &str, errors: &mut Errors) {
    // A label holds no `/`, so neither starts with one nor holds `://`; a URL is told
    // from one at its first `/`.
    let label = !url.is_empty()
        && url.len() <= MAX_LABEL_LEN
        && url.bytes().all(
            |b| matches!(b, b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b':'),
        );
    if !label {
        check_url(url, "currentUrl", errors);
    }
}

pub(super) fn check_url(url: &str, path: &str, errors: &mut Errors) {
    let rest = after_scheme(url);
    if url.len() > MAX_URL_LEN {
        errors.push(path, format!("must be at most {MAX_URL_LEN} bytes"));
    } else if rest.is_none_or(|rest| rest.is_empty() || rest.starts_with('/')) {
        errors.push(
            path,
            format!("expected an absolute http or https URL, got {url:?}"),
        );
    } else if has_space_or_control(url) {
        errors.push(path, "must not contain spaces or control characters");
    }
}

/// What follows a URL's `http://` or `https://` (in any case), when it starts with one.
fn after_scheme(url: &str) -> Option<&str> {
    let bytes = url.as_bytes();
    if !bytes.get(..4)?.eq_ignore_ascii_case(b"http") {
        return None;
    }
    let end = 4 + usize::from(matches!(bytes.get(4), Some(b's' | b'S')));
    (bytes.get(end..end + 3)? == b"://").then(|| url.get(end + 3..))?
}

/// Whether `text` holds a space or a control character (printable ASCII, most URLs,
/// passed sixteen bytes at a time).
fn has_space_or_control(text: &str) -> bool {
    any_char_outside(text, 0x21, 0x7e, |c| c.is_control() || c == ' ')
}

/// A `visitorId` or `sessionId` given (not empty), checked.
pub(super) fn checked_client_id(id: &str, key: &str, errors: &mut Errors) -> Option<String> {
    if id.len() > MAX_CLIENT_ID_LEN {
        errors.push(
            key,
            format!(
                "must be at most {MAX_CLIENT_ID_LEN} characters, got {}",
                id.len()
            ),
        );
        return None;
    }
    if first_outside(id.as_bytes(), 0x21, 0x7e).is_some() {
        errors.push(key, "must be printable ASCII without spaces");
        return None;
    }
    Some(id.into())
}

#[cfg(test)]
mod tests {
    use super::{check_url, has_space_or_control};
    use vitrine_fields::Errors;

    /// A URL is judged as when the part after its scheme was found by searching for
    /// `://`: the same errors for every shape of scheme and rest.
    #[test]
    fn a_url_is_judged_by_what_follows_its_scheme() {
        fn searched(url: &str) -> bool {
            let scheme = |prefix: &str| {
                url.get(..prefix.len())
                    .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
            };
            (scheme("http://") || scheme("https://"))
                && url
                    .split_once("://")
                    .is_some_and(|(_, rest)| !rest.is_empty() && !rest.starts_with('/'))
        }
        for url in [
            "http://",
            "https://",
            "HTTP://shop.example",
            "HtTpS://shop.example/p?x=1",
            "https:/shop.example",
            "http:///shop.example",
            "https:///",
            "ftp://shop.example",
            "httpx://shop.example",
            "https//shop.example",
            "http://shop.example://again",
            "https://caf\u{e9}.example/",
            "HTTPs://shop.example",
            "httpss://shop.example",
            "https:x",
            "http:/",
            "http",
            "h",
            "",
        ] {
            let mut errors = Errors::default();
            check_url(url, "currentUrl", &mut errors);
            assert_eq!(errors.is_empty(), searched(url), "{url:?}");
        }
    }

    /// Read byte by byte or decoded, a text is judged as `char::is_control` judges it.
    #[test]
    fn spaces_and_control_characters_are_found_in_ascii_and_other_text() {
        for text in [
            "https://shop.example/p.html",
            "https://shop.example/a b",
            "https://shop.example/\t",
            "https://shop.example/\u{7f}",
            "https://shop.example/\u{85}",
            "https://shop.example/\u{9f}x",
            "https://shop.example/caf\u{e9}",
            "https://shop.example/\u{a0}",
            "a\tcaf\u{e9}",
            "caf\u{e9}\t",
            "caf\u{e9}\u{85}",
            "https://shop.example/catalogue/products/p.html",
            "https://shop.example/catalogue/prod cts/p.html",
            "https://shop.example/catalogue/products/p.html\u{7f}",
            "https://shop.example/catalogue/products/\u{e9}/p html",
            "https://shop.example/catalogue/products/\u{e9}/p.html",
            "",
        ] {
            assert_eq!(
                has_space_or_control(text),
                text.chars().any(|c| c.is_control() || c == ' '),
                "{text:?}"
            );
        }
    }
}
