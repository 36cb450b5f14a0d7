//! `[tls]`: HTTPS on the main and streamed-feed listeners, with a certificate made for
//! the test (rcgen) and a real client that checks it (Python's `ssl` and `urllib`), as a
//! store whose SDK's host names point at Vitrine needs.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::common::{DEMO_KEY, DEMO_SECRET, Server, binary};

/// A certificate for `localhost` and 127.0.0.1 and its key, as PEM files in `dir`.
fn certificate(dir: &Path) -> (String, String) {
    let issued =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, issued.cert.pem()).unwrap();
    std::fs::write(&key, issued.signing_key.serialize_pem()).unwrap();
    (cert.display().to_string(), key.display().to_string())
}

fn config(cert: &str, key: &str) -> String {
    format!(
        r#"
[tls]
cert = "{cert}"
key = "{key}"
[feeds]
stream_listen = "127.0.0.1:0"
[[accounts]]
access_key = "{DEMO_KEY}"
secret_key = "{DEMO_SECRET}"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "TR"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 3
"#
    )
}

/// Posts `body` to `url` with Python's urllib, trusting only `ca`; prints the status and
/// the body, or the error.
fn python_post(url: &str, body: &str, ca: &str) -> String {
    let script = r#"
import ssl, sys, urllib.request
context = ssl.create_default_context(cafile=sys.argv[3])
request = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(),
    headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, context=context, timeout=60) as answer:
        print(answer.status, answer.read().decode())
except Exception as error:
    print("error", error)
"#;
    let out = Command::new("python3")
        .args(["-c", script, url, body, ca])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn the_listeners_serve_https_with_the_configured_certificate() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(certs.path());
    let server = Server::with_config(&config(&cert, &key));
    let body = json!({"appId": DEMO_KEY, "secretKey": DEMO_SECRET, "visitorId": "tls-visitor",
        "currentUrl": "https://shop.example/", "userAgent": "test", "ip": "198.51.100.9",
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}], "zones": ["TR"]})
    .to_string();
    let url = format!("https://localhost:{}/api/serverside", server.addr.port());
    let answer = python_post(&url, &body, &cert);
    assert!(answer.starts_with("200 "), "{answer}");
    assert!(answer.contains("\"TR\""), "{answer}");

    // A client that does not trust the certificate refuses it.
    let other = tempfile::tempdir().unwrap();
    let (other_cert, _) = certificate(other.path());
    let refused = python_post(&url, &body, &other_cert);
    assert!(refused.starts_with("error"), "{refused}");
    assert!(refused.contains("CERTIFICATE_VERIFY_FAILED"), "{refused}");

    // Plain HTTP on the TLS port gets no answer.
    let plain = crate::common::try_post(
        server.addr,
        "/api/serverside",
        &serde_json::from_str(&body).unwrap(),
    );
    assert!(plain.is_none_or(|resp| resp.status != 200));
}

#[test]
fn a_key_that_does_not_match_the_certificate_stops_the_start() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, _) = certificate(certs.path());
    let other = tempfile::tempdir().unwrap();
    let (_, wrong_key) = certificate(other.path());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vitrine.toml");
    std::fs::write(&path, config(&cert, &wrong_key)).unwrap();
    let out = Command::new(binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("tls"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
}
