//! The browser endpoints as doors of the one router: the script served as a static
//! asset (kept per host, compressed when the browser accepts it, `Vary:
//! Accept-Encoding`); errors on the common path with their CORS headers (a 413 closes
//! the connection, a 405 names its method, a 5xx is logged); a page without consent
//! filled from its context alone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use serde_json::{Value, json};

use crate::common::{Resp, Server, request};

const KEY: &str = "door-shop";
const SECRET: &str = "door-shop-secret";
const ORIGIN: &str = "https://shop.test";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36";

fn config(card_template: Option<&str>) -> String {
    let card = card_template
        .map(|path| format!("card_template = {path:?}"))
        .unwrap_or_default();
    format!(
        r#"
[limits]
max_body_bytes = 4096
[[accounts]]
access_key = "{KEY}"
secret_key = "{SECRET}"
default_currency = "GBP"
demo_catalogue = true
  [accounts.clientside]
  allowed_origins = ["{ORIGIN}"]
  {card}
  [[accounts.zones]]
  id = "SIM"
  title = "Similar"
  type = "recommender-product"
  strategy = "similar"
  count = 4
  [[accounts.zones]]
  id = "TR"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 4
"#
    )
}

fn page_path() -> String {
    format!("/api/clientside/{KEY}")
}

fn post(server: &Server, method: &str, body: &[u8]) -> Resp {
    request(
        server.addr,
        method,
        &page_path(),
        body,
        &[("User-Agent", BROWSER), ("Origin", ORIGIN)],
    )
}

/// A GET of `path`, its head as text and its body as bytes (a compressed body is not
/// text).
fn raw_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
    (head, raw[at + 4..].to_vec())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}: ")))
}

#[test]
fn the_script_is_compressed_for_browsers_that_accept_it_and_varies_by_encoding() {
    let server = Server::with_config(&config(None));
    let path = format!("/{KEY}/cs.js");
    let (plain_head, plain) = raw_get(server.addr, &path, &[]);
    assert!(plain_head.starts_with("http/1.1 200"), "{plain_head}");
    assert_eq!(header(&plain_head, "content-encoding"), None);
    assert_eq!(header(&plain_head, "vary"), Some("accept-encoding"));
    let etag = header(&plain_head, "etag").unwrap().to_owned();
    let text = String::from_utf8(plain).unwrap();
    assert!(
        text.contains(&format!("\"//{}/\"", server.addr)),
        "the host is filled in"
    );

    let (br_head, br) = raw_get(
        server.addr,
        &path,
        &[("Accept-Encoding", "gzip, deflate, br, zstd")],
    );
    assert_eq!(
        header(&br_head, "content-encoding"),
        Some("br"),
        "{br_head}"
    );
    assert_eq!(header(&br_head, "vary"), Some("accept-encoding"));
    assert_eq!(header(&br_head, "etag"), Some(etag.as_str()));
    let mut unbrotlied = Vec::new();
    brotli::BrotliDecompress(&mut &br[..], &mut unbrotlied).unwrap();
    assert_eq!(String::from_utf8(unbrotlied).unwrap(), text);
    assert!(br.len() * 2 < text.len(), "{} of {}", br.len(), text.len());

    let (gz_head, gz) = raw_get(server.addr, &path, &[("Accept-Encoding", "gzip")]);
    assert_eq!(
        header(&gz_head, "content-encoding"),
        Some("gzip"),
        "{gz_head}"
    );
    let mut gunzipped = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut gunzipped)
        .unwrap();
    assert_eq!(gunzipped, text);

    // Revalidated by its tag whatever the encoding.
    let (not_modified, body) = raw_get(
        server.addr,
        &path,
        &[("Accept-Encoding", "br"), ("If-None-Match", &etag)],
    );
    assert!(not_modified.starts_with("http/1.1 304"), "{not_modified}");
    assert!(body.is_empty());
}

#[test]
fn browser_errors_take_the_common_path_with_their_cors_headers() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("card.html");
    // Renders nothing wrong until a zone has items: then it calls a method a string
    // does not have, and the template fails as it is rendered.
    std::fs::write(
        &template,
        "{% for item in items %}{{ item.Title.no_such_method() }}{% endfor %}",
    )
    .unwrap();
    let server = Server::with_config(&config(Some(&template.display().to_string())));

    // 413: the rest of the body is not read, so the connection is closed.
    let big = json!({"currentUrl": "https://shop.test/", "zones": ["x".repeat(8000)]});
    let resp = post(&server, "POST", big.to_string().as_bytes());
    assert_eq!(resp.status, 413, "{}", resp.body);
    assert_eq!(resp.header("connection"), Some("close"));
    assert_eq!(resp.header("access-control-allow-origin"), Some(ORIGIN));
    assert_eq!(resp.header("vary"), Some("Origin"));

    // 405 names the method the endpoint takes, with the CORS headers.
    let resp = post(&server, "PUT", b"{}");
    assert_eq!(resp.status, 405, "{}", resp.body);
    assert_eq!(resp.header("allow"), Some("POST"));
    assert_eq!(resp.header("access-control-allow-origin"), Some(ORIGIN));

    // A 5xx (the account's template fails) is logged, and still carries the headers.
    let body = json!({"currentUrl": "https://shop.test/", "zones": ["TR"]});
    let resp = post(&server, "POST", body.to_string().as_bytes());
    assert_eq!(resp.status, 500, "{}", resp.body);
    assert_eq!(resp.header("access-control-allow-origin"), Some(ORIGIN));
    assert!(resp.body.contains("the template failed"), "{}", resp.body);
    let log = server.log();
    assert!(
        log.lines().any(|line| line.contains("request failed")
            && line.contains("/api/clientside/{accessKey}")
            && line.contains("the template failed")),
        "{log}"
    );

    // A refused origin: 403 with `Vary: Origin` and no allowed origin.
    let resp = request(
        server.addr,
        "POST",
        &page_path(),
        body.to_string().as_bytes(),
        &[
            ("User-Agent", BROWSER),
            ("Origin", "https://elsewhere.test"),
        ],
    );
    assert_eq!(resp.status, 403, "{}", resp.body);
    assert_eq!(resp.header("access-control-allow-origin"), None);
    assert_eq!(resp.header("vary"), Some("Origin"));
}

fn ids(answer: &Value, zone: &str) -> Vec<String> {
    answer["zones"][zone]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["Id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_page_without_consent_is_filled_from_its_context_alone() {
    let server = Server::with_config(&config(None));
    // What the script sends before consent: zone ids, the page's product, nothing else.
    let before_consent = json!({"zones": ["SIM", "TR"], "tracking": false,
        "page": {"product_id": "P00042"}, "currency": "GBP"});
    let resp = post(&server, "POST", before_consent.to_string().as_bytes());
    assert_eq!(resp.status, 200, "{}", resp.body);
    let answer = resp.json();
    assert_eq!(answer["visitorId"], "", "nothing tracked: {answer}");
    let similar = ids(&answer, "SIM");
    assert!(
        !similar.is_empty(),
        "the page's product fills SIM: {answer}"
    );
    assert!(!similar.contains(&"P00042".to_owned()));
    assert!(
        answer["html"]["SIM"]
            .as_str()
            .unwrap()
            .contains("vitrine-item")
    );

    // Without the context, nothing is similar to anything.
    let bare = json!({"zones": ["SIM"], "tracking": false});
    let resp = post(&server, "POST", bare.to_string().as_bytes());
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(ids(&resp.json(), "SIM").is_empty(), "{}", resp.body);

    // The context is checked as an id is; and a tracked page still needs its URL.
    let bad = json!({"zones": ["SIM"], "tracking": false, "page": {"product_id": ["x"]}});
    let resp = post(&server, "POST", bad.to_string().as_bytes());
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(resp.body.contains("page.product_id"), "{}", resp.body);
    let tracked = json!({"zones": ["SIM"], "page": {"product_id": "P00042"}});
    let resp = post(&server, "POST", tracked.to_string().as_bytes());
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(resp.body.contains("currentUrl"), "{}", resp.body);

    // With consent, the context stands for the page view the page did not send.
    let consented = json!({"currentUrl": "https://shop.test/p/P00042", "zones": ["SIM"],
        "page": {"product_id": "P00042"}});
    let resp = post(&server, "POST", consented.to_string().as_bytes());
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(ids(&resp.json(), "SIM"), similar);
}
