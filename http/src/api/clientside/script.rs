//! `GET /<accessKey>/cs.js`: the browser script (`http/assets/cs.js`, written for
//! Vitrine, no dependencies) with the account's settings filled in: its access key, the
//! base address its requests go to (the host the page loaded the script from) and
//! whether tracking waits for consent.
//!
//! Served as a static asset is: rendered, hashed and compressed (gzip and brotli) once
//! per host the account's pages load it from, and kept with the account (at most
//! [`MAX_HOSTS`] hosts; a script for a further host is rendered per request, never
//! kept). Each answer names its encoding and `Vary: Accept-Encoding`; browsers cache it
//! for five minutes and revalidate it by `ETag`.

use std::io::Write as _;
use std::sync::Arc;

use dashmap::DashMap;
use http::StatusCode;
use sha2::{Digest, Sha256};

use crate::api::reply::Reply;
use crate::config::ConsentPolicy;

/// The script, with `__VITRINE_ARGS__` where the account's settings go.
pub const SCRIPT: &str = include_str!("../../../assets/cs.js");

/// How long a browser may use the script without asking again.
pub const CACHE_CONTROL: &str = "public, max-age=300";

/// The content type of the script.
pub const CONTENT_TYPE: &str = "text/javascript; charset=utf-8";

/// Hosts whose script an account keeps (a store serves its pages from a few).
pub const MAX_HOSTS: usize = 16;

/// A script rendered for one account and host, with its entity tag and its compressed
/// forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The script's text.
    pub text: String,
    /// Its `ETag` (quoted), the same for every encoding of it.
    pub etag: String,
    /// The text gzip-compressed (empty for a script not kept).
    pub gzip: Vec<u8>,
    /// The text brotli-compressed (empty for a script not kept).
    pub brotli: Vec<u8>,
}

/// An encoding of the script a browser accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `br`
    Brotli,
    /// `gzip`
    Gzip,
    /// The text as it is.
    Identity,
}

impl Encoding {
    /// The best encoding an `Accept-Encoding` header allows: brotli, then gzip (a
    /// coding given `q=0` is refused), else the text itself.
    pub fn accepted(header: Option<&str>) -> Encoding {
        let Some(header) = header else {
            return Encoding::Identity;
        };
        let allows = |name: &str| {
            header.split(',').any(|part| {
                let mut pieces = part.split(';');
                let coding = pieces.next().unwrap_or_default().trim();
                let refused = pieces.any(|p| {
                    p.trim()
                        .strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                (coding.eq_ignore_ascii_case(name) || coding == "*") && !refused
            })
        };
        if allows("br") {
            Encoding::Brotli
        } else if allows("gzip") {
            Encoding::Gzip
        } else {
            Encoding::Identity
        }
    }
}

/// The scripts an account has served, by host.
#[derive(Debug, Default)]
pub struct Scripts {
    by_host: DashMap<String, Arc<Rendered>>,
}

impl Scripts {
    /// The script of `access_key` for `host`: the kept one, or rendered now (and kept
    /// while fewer than [`MAX_HOSTS`] are).
    pub fn of(&self, access_key: &str, host: &str, consent: ConsentPolicy) -> Arc<Rendered> {
        if let Some(kept) = self.by_host.get(host) {
            return Arc::clone(&kept);
        }
        if self.by_host.len() >= MAX_HOSTS {
            // Not kept: the text alone, so that a stream of made-up hosts costs no
            // compression.
            return Arc::new(render_text(access_key, host, consent));
        }
        let rendered = Arc::new(render(access_key, host, consent));
        self.by_host.insert(host.to_owned(), Arc::clone(&rendered));
        rendered
    }

    /// How many hosts' scripts are kept.
    pub fn kept(&self) -> usize {
        self.by_host.len()
    }
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

/// The script of the account `access_key` served from `host`, with its compressed forms.
pub fn render(access_key: &str, host: &str, consent: ConsentPolicy) -> Rendered {
    let mut rendered = render_text(access_key, host, consent);
    rendered.gzip = {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing into a Vec cannot fail.
        let _ = encoder.write_all(rendered.text.as_bytes());
        encoder.finish().unwrap_or_default()
    };
    rendered.brotli = {
        let mut out = Vec::new();
        let params = brotli::enc::BrotliEncoderParams {
            quality: 11,
            ..Default::default()
        };
        let _ = brotli::BrotliCompress(&mut rendered.text.as_bytes(), &mut out, &params);
        out
    };
    rendered
}

/// The script's text and tag, without compressed forms.
fn render_text(access_key: &str, host: &str, consent: ConsentPolicy) -> Rendered {
    let consent_required = consent == ConsentPolicy::Required;
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
    Rendered {
        text,
        etag,
        gzip: Vec::new(),
        brotli: Vec::new(),
    }
}

/// Whether an `If-None-Match` header names `etag` (or is `*`).
pub fn matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

/// The answer with the script: a 304 when the browser has it (`If-None-Match`), else
/// the script in the best encoding the browser accepts.
pub fn reply(rendered: &Rendered, if_none_match: Option<&str>, encoding: Encoding) -> Reply {
    let mut headers = vec![
        ("ETag", rendered.etag.clone()),
        ("Cache-Control", CACHE_CONTROL.to_owned()),
        ("Vary", "Accept-Encoding".to_owned()),
    ];
    if if_none_match.is_some_and(|tags| matches(tags, &rendered.etag)) {
        return Reply {
            status: StatusCode::NOT_MODIFIED,
            content_type: CONTENT_TYPE,
            headers,
            body: Vec::new(),
            window: None,
        };
    }
    let body = match encoding {
        Encoding::Brotli if !rendered.brotli.is_empty() => {
            headers.push(("Content-Encoding", "br".to_owned()));
            rendered.brotli.clone()
        }
        Encoding::Gzip if !rendered.gzip.is_empty() => {
            headers.push(("Content-Encoding", "gzip".to_owned()));
            rendered.gzip.clone()
        }
        Encoding::Brotli | Encoding::Gzip | Encoding::Identity => {
            rendered.text.clone().into_bytes()
        }
    };
    Reply {
        status: StatusCode::OK,
        content_type: CONTENT_TYPE,
        headers,
        body,
        window: None,
    }
}

/// A 404 or 400 saying why, as a JavaScript comment (a page's console shows it).
pub fn refusal(status: StatusCode, text: String) -> Reply {
    Reply {
        status,
        content_type: CONTENT_TYPE,
        headers: Vec::new(),
        body: text.into_bytes(),
        window: None,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    #[test]
    fn the_script_carries_the_accounts_settings_and_a_tag_of_its_text() {
        let a = render("shop-1", "vitrine.example:7480", ConsentPolicy::None);
        assert!(
            a.text
                .contains(r#"})("shop-1", "//vitrine.example:7480/", false);"#)
        );
        assert!(!a.text.contains("__VITRINE_ARGS__"));
        let b = render("shop-1", "vitrine.example:7480", ConsentPolicy::Required);
        assert_ne!(a.etag, b.etag);
        assert_eq!(
            a,
            render("shop-1", "vitrine.example:7480", ConsentPolicy::None)
        );
        assert!(matches(&format!("W/{}, \"x\"", a.etag), &a.etag));
        assert!(!matches("\"x\"", &a.etag));
        assert!(js_string("</script>").contains("\\u003c/script\\u003e"));
        assert!(
            is_host("127.0.0.1:7480") && is_host("[::1]:80") && !is_host("a b") && !is_host("")
        );
    }

    #[test]
    fn both_compressed_forms_decompress_to_the_text() {
        let a = render("shop-1", "vitrine.example", ConsentPolicy::None);
        let mut gunzipped = String::new();
        flate2::read::GzDecoder::new(&a.gzip[..])
            .read_to_string(&mut gunzipped)
            .unwrap();
        assert_eq!(gunzipped, a.text);
        let mut unbrotlied = Vec::new();
        brotli::BrotliDecompress(&mut &a.brotli[..], &mut unbrotlied).unwrap();
        assert_eq!(unbrotlied, a.text.as_bytes());
        assert!(a.brotli.len() < a.text.len() / 2 && a.gzip.len() < a.text.len() / 2);
    }

    #[test]
    fn the_best_accepted_encoding_is_chosen() {
        use Encoding::*;
        assert_eq!(Encoding::accepted(None), Identity);
        assert_eq!(Encoding::accepted(Some("gzip, deflate, br, zstd")), Brotli);
        assert_eq!(Encoding::accepted(Some("gzip, deflate")), Gzip);
        assert_eq!(Encoding::accepted(Some("br;q=0, gzip;q=0.5")), Gzip);
        assert_eq!(Encoding::accepted(Some("identity")), Identity);
        assert_eq!(Encoding::accepted(Some("*")), Brotli);
    }

    #[test]
    fn an_account_keeps_one_script_per_host_and_no_more_than_the_bound() {
        let scripts = Scripts::default();
        let a = scripts.of("k", "a.example", ConsentPolicy::None);
        assert!(Arc::ptr_eq(
            &a,
            &scripts.of("k", "a.example", ConsentPolicy::None)
        ));
        for i in 0..MAX_HOSTS * 2 {
            scripts.of("k", &format!("h{i}.example"), ConsentPolicy::None);
        }
        assert_eq!(scripts.kept(), MAX_HOSTS);
        let unkept = scripts.of("k", "another.example", ConsentPolicy::None);
        assert!(unkept.brotli.is_empty());
        let reply = reply(&unkept, None, Encoding::Brotli);
        assert_eq!(reply.body, unkept.text.as_bytes());
        assert!(
            !reply
                .headers
                .iter()
                .any(|(name, _)| *name == "Content-Encoding")
        );
    }
}
