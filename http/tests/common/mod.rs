//! Test support: the real `vitrine` binary on `127.0.0.1:0`, and a small HTTP/1.1
//! client that shows status, headers and body exactly as sent.

#![expect(
    unreachable_pub,
    reason = "each test binary uses part of the kit; items are pub for the modules of the binary"
)]

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use vitrine_testkit::{DEMO_KEY, DEMO_SECRET};
use vitrine_testkit::{TestServer, client};

/// A running server (the real binary, see `vitrine_testkit::TestServer`); killed when
/// dropped.
pub struct Server {
    pub addr: SocketAddr,
    inner: TestServer,
}

/// A response as received.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts `{"errors": [..]}` with one message containing `needle`; returns the messages.
    pub fn assert_errors(&self, status: u16, needle: &str) -> Vec<String> {
        assert_eq!(self.status, status, "status of {}", self.body);
        assert_eq!(self.header("content-type"), Some("application/json"));
        let json = self.json();
        let object = json.as_object().expect("error body is an object");
        assert_eq!(object.len(), 1, "only `errors` in {json}");
        let errors: Vec<String> = object["errors"]
            .as_array()
            .expect("errors is an array")
            .iter()
            .map(|e| e.as_str().expect("errors are strings").to_owned())
            .collect();
        assert!(
            errors.iter().any(|e| e.contains(needle)),
            "no error containing {needle:?} in {errors:?}"
        );
        errors
    }

    /// Asserts `{"Error": "..."}` containing `needle`; returns the message.
    pub fn assert_error(&self, status: u16, needle: &str) -> String {
        assert_eq!(self.status, status, "status of {}", self.body);
        assert_eq!(self.header("content-type"), Some("application/json"));
        let json = self.json();
        let object = json.as_object().expect("error body is an object");
        assert_eq!(object.len(), 1, "only `Error` in {json}");
        let message = object["Error"]
            .as_str()
            .expect("Error is a string")
            .to_owned();
        assert!(
            message.contains(needle),
            "{message:?} does not contain {needle:?}"
        );
        message
    }
}

/// An account's directory under a data directory (`accounts/<access key in hex>`).
pub fn account_dir(data: &Path, key: &str) -> PathBuf {
    let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    data.join("accounts").join(hex)
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_vitrine")
}

/// `vitrine import --account KEY --config FILE --data-dir DIR ARGS…`: its output.
pub fn import(
    account: &str,
    config: &Path,
    data: &Path,
    args: &[&std::ffi::OsStr],
) -> std::process::Output {
    std::process::Command::new(binary())
        .args(["import", "--account", account, "--config"])
        .arg(config)
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .expect("running vitrine import")
}

/// The stdout of a command that must have succeeded (its stderr in the failure).
pub fn succeeded(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

impl Server {
    /// The demo default (no --config).
    pub fn demo() -> Server {
        Server::start(None)
    }

    /// A server with this TOML config.
    pub fn with_config(toml: &str) -> Server {
        Server::start(Some(toml))
    }

    /// A server with this TOML config and extra environment variables.
    pub fn with_env(toml: &str, env: &[(&str, &str)]) -> Server {
        let dir = tempfile::Builder::new()
            .prefix("vitrine-test-")
            .tempdir()
            .expect("a temporary directory");
        Server::start_in_with_env(dir, Some(toml), env)
    }

    /// [`Server::start_in`] with extra environment variables.
    pub fn start_in_with_env(
        data_dir: tempfile::TempDir,
        config: Option<&str>,
        env: &[(&str, &str)],
    ) -> Server {
        Server::wrap(TestServer::start_in_with_env(
            Path::new(binary()),
            data_dir,
            config,
            env,
        ))
    }

    fn start(config: Option<&str>) -> Server {
        Server::wrap(TestServer::start(Path::new(binary()), config))
    }

    pub fn start_in(data_dir: tempfile::TempDir, config: Option<&str>) -> Server {
        Server::wrap(TestServer::start_in(Path::new(binary()), data_dir, config))
    }

    fn wrap(started: Result<TestServer, vitrine_testkit::SpawnError>) -> Server {
        let inner = started.unwrap_or_else(|e| panic!("{e}"));
        Server {
            addr: inner.addr(),
            inner,
        }
    }

    /// SIGKILLs the server and hands back its directory for a restart.
    pub fn kill9(self) -> tempfile::TempDir {
        self.inner.kill9()
    }

    pub fn child(&mut self) -> &mut std::process::Child {
        self.inner.child()
    }

    /// The server's directory (`data/`, `server.log`, `vitrine.toml`).
    pub fn dir(&self) -> &Path {
        self.inner.dir()
    }

    pub fn data_path(&self) -> PathBuf {
        self.inner.data_path()
    }

    pub fn log(&self) -> String {
        self.inner.log()
    }

    /// The lines it printed on stdout after its ready line, so far.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.inner.stdout_lines()
    }

    pub fn post(&self, path: &str, body: &str) -> Resp {
        request(self.addr, "POST", path, body.as_bytes(), &[])
    }

    pub fn post_json(&self, path: &str, body: &Value) -> Resp {
        self.post(path, &body.to_string())
    }

    pub fn get(&self, path: &str) -> Resp {
        request(self.addr, "GET", path, b"", &[])
    }

    /// A valid server-side body for the demo account, with `extra` merged in.
    pub fn serverside(&self, extra: Value) -> Resp {
        self.post_json("/api/serverside", &serverside_body(extra))
    }
}

/// The item of `product` in the recently viewed zone `PP-02`, on the home page, of a
/// visitor who sent `extra` events and then viewed it.
pub fn viewed_item(server: &Server, visitor: &str, extra: Vec<Value>, product: &str) -> Value {
    let mut events = extra;
    events.push(serde_json::json!({"name": "product_view", "data": {"id": product}}));
    server.serverside(serde_json::json!({"visitorId": visitor, "events": events}));
    let resp = server.serverside(serde_json::json!({
        "visitorId": visitor,
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
        "zones": ["PP-02"],
    }));
    resp.json()["zones"]["PP-02"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["Id"] == product)
        .cloned()
        .unwrap_or_else(|| panic!("{product} not in PP-02: {}", resp.body))
}

pub fn serverside_body(extra: Value) -> Value {
    let mut body = serde_json::json!({
        "appId": DEMO_KEY,
        "secretKey": DEMO_SECRET,
        "currentUrl": "https://shop.example/",
        "userAgent": "Mozilla/5.0 (test)",
        "ip": "203.0.113.7",
    });
    merge(&mut body, extra);
    body
}

pub fn merge(body: &mut Value, extra: Value) {
    if let (Some(target), Value::Object(extra)) = (body.as_object_mut(), extra) {
        for (k, v) in extra {
            target.insert(k, v);
        }
    }
}

/// One request on a new connection (`Connection: close`).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &[u8],
    headers: &[(&str, &str)],
) -> Resp {
    client::request(addr, method, path, body, headers)
        .map(Resp::from)
        .unwrap_or_else(|| panic!("no whole response to {method} {path}"))
}

/// A POST that may find the server gone (killed mid-test): `None` when the connection
/// fails or no whole response comes back.
pub fn try_post(addr: SocketAddr, path: &str, body: &Value) -> Option<Resp> {
    client::post_json(addr, path, body).map(Resp::from)
}

/// Parses one response from the front of `raw`; returns it and the bytes it used.
pub fn parse_response(raw: &[u8]) -> (Resp, usize) {
    let (response, used) = client::parse_response(raw)
        .unwrap_or_else(|| panic!("no complete response in {:?}", String::from_utf8_lossy(raw)));
    (Resp::from(response), used)
}

impl From<client::Response> for Resp {
    fn from(response: client::Response) -> Resp {
        Resp {
            status: response.status,
            headers: response.headers,
            body: response.body,
        }
    }
}

/// Polls `check` until it returns `Some`, failing loudly after `limit`.
pub fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A loopback HTTP server for feed files: `/name` serves `files[name]`; the behaviour of
/// a few names is special: `stall*` never answers, `redirect-*` answers 302 to the rest
/// of the name, `delay-*` waits 1.5 s and then serves the rest of the name,
/// `once-stall-*` never answers the first request and serves the later ones. It counts
/// the requests for each name.
pub struct FeedServer {
    pub addr: SocketAddr,
    hits: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

impl FeedServer {
    pub fn start(files: Vec<(&'static str, Vec<u8>)>) -> FeedServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind feed server");
        let addr = listener.local_addr().expect("addr");
        let files = std::sync::Arc::new(files);
        let hits = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
        let counted = std::sync::Arc::clone(&hits);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let files = std::sync::Arc::clone(&files);
                let hits = std::sync::Arc::clone(&counted);
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    let n = stream.read(&mut buf).unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let path = head
                        .split_whitespace()
                        .nth(1)
                        .unwrap_or("/")
                        .trim_start_matches('/')
                        .to_owned();
                    let seen = {
                        let mut hits = hits.lock().unwrap();
                        let count = hits.entry(path.clone()).or_insert(0);
                        *count += 1;
                        *count
                    };
                    let path = match path.strip_prefix("once-stall-") {
                        Some(_) if seen == 1 => {
                            std::thread::sleep(Duration::from_secs(120));
                            return;
                        }
                        Some(rest) => rest.to_owned(),
                        None => path,
                    };
                    if path.starts_with("stall") {
                        std::thread::sleep(Duration::from_secs(30));
                        return;
                    }
                    if let Some(target) = path.strip_prefix("redirect-") {
                        let _ = stream.write_all(format!("HTTP/1.1 302 Found\r\nLocation: /{target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes());
                        return;
                    }
                    let name = match path.strip_prefix("delay-") {
                        Some(rest) => {
                            std::thread::sleep(Duration::from_millis(1500));
                            rest.to_owned()
                        }
                        None => path,
                    };
                    match files.iter().find(|(n, _)| *n == name) {
                        Some((_, body)) => {
                            let _ = stream.write_all(format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).as_bytes());
                            let _ = stream.write_all(body);
                        }
                        None => {
                            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        }
                    }
                });
            }
        });
        FeedServer { addr, hits }
    }

    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// Requests for `/name` so far.
    pub fn hits(&self, name: &str) -> usize {
        self.hits.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

/// A vendor fixture file of `ingest/fixtures/vendor-examples`.
pub fn vendor_fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../ingest/fixtures/vendor-examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A `POST /api/serverside` request with `body`, as bytes for an open connection.
pub fn serverside_request(body: &str) -> Vec<u8> {
    format!(
        "POST /api/serverside HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Writes `requests` (whole HTTP requests, back to back) on an open connection and reads
/// `count` responses, in order.
pub fn pipeline(stream: &mut std::net::TcpStream, requests: &[u8], count: usize) -> Vec<Resp> {
    stream
        .write_all(requests)
        .expect("the requests are written");
    let mut raw: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut answers = Vec::with_capacity(count);
    while answers.len() < count {
        match client::parse_response(&raw) {
            Some((response, used)) => {
                raw.drain(..used);
                answers.push(Resp::from(response));
            }
            None => {
                let n = stream.read(&mut buf).expect("the connection is readable");
                assert!(
                    n > 0,
                    "the connection closed after {} answers",
                    answers.len()
                );
                raw.extend_from_slice(buf.get(..n).unwrap_or_default());
            }
        }
    }
    answers
}

/// Order ids of `ids` that a server already holds, asked by sending their orders again
/// (`post` sends a chunk of `order` events and returns the server-side answer): a
/// repeated order id is reported in `errors` as already recorded and counts nothing. A
/// missing one is recorded by the check.
pub fn present_orders(
    ids: &[String],
    order: impl Fn(&str) -> Value,
    mut post: impl FnMut(Vec<Value>) -> Value,
) -> Vec<String> {
    let mut present = Vec::new();
    for chunk in ids.chunks(50) {
        let answer = post(chunk.iter().map(|id| order(id)).collect());
        let errors = answer["errors"].as_array().cloned().unwrap_or_default();
        for (i, id) in chunk.iter().enumerate() {
            let repeated = errors.iter().any(|e| {
                e.as_str().is_some_and(|e| {
                    e.starts_with(&format!("events[{i}].")) && e.contains("already recorded")
                })
            });
            if repeated {
                present.push(id.clone());
            }
        }
    }
    present
}

/// Every file under `dir` whose bytes contain `needle` (ASCII case-insensitive).
pub fn files_containing(dir: &std::path::Path, needle: &str) -> Vec<std::path::PathBuf> {
    let needle = needle.to_ascii_lowercase().into_bytes();
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                stack.extend(entries.flatten().map(|entry| entry.path()));
            }
        } else if let Ok(bytes) = std::fs::read(&path) {
            let lower = bytes.to_ascii_lowercase();
            if lower.windows(needle.len()).any(|w| w == needle.as_slice()) {
                found.push(path);
            }
        }
    }
    found
}
