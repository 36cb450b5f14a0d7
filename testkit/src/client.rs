//! A small blocking HTTP/1.1 client, one request per connection (`Connection: close`),
//! that shows status, headers and body exactly as sent; it returns `None` instead of
//! failing when the server is gone (killed mid-request), so crash tools can tell.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// How long a request may wait for its answer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A response as received; header names lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Body, as text.
    pub body: String,
}

impl Response {
    /// The body as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One request; `None` when the connection fails or no whole response comes back
/// (the server may answer early, e.g. 413, and close before the body is sent).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &[u8],
    headers: &[(&str, &str)],
) -> Option<Response> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("transfer-encoding") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    if !has("content-type") && !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body));
    read_answer(&mut stream)
}

/// The answer read from `stream`: taken as soon as it is whole by its `Content-Length`
/// (a server may keep the connection open after answering despite `Connection: close`,
/// as chromedriver does), else what came before the close or the read timeout.
fn read_answer(stream: &mut TcpStream) -> Option<Response> {
    let mut raw = Vec::new();
    let mut chunk = [0_u8; 4096];
    while let Ok(read @ 1..) = stream.read(&mut chunk) {
        raw.extend_from_slice(chunk.get(..read)?);
        if let Some((response, _)) = parse_response(&raw)
            && response.header("content-length").is_some()
        {
            return Some(response);
        }
    }
    parse_response(&raw).map(|(response, _)| response)
}

/// A JSON POST; `None` as for [`request`].
pub fn post_json(addr: SocketAddr, path: &str, body: &Value) -> Option<Response> {
    request(addr, "POST", path, body.to_string().as_bytes(), &[])
}

/// Parses one whole response from the front of `raw`; returns it and the bytes it used,
/// or `None` when the head or the body (by `Content-Length`) is incomplete.
pub fn parse_response(raw: &[u8]) -> Option<(Response, usize)> {
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(raw.get(..head_end)?).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            l.split_once(':')
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        })
        .collect();
    let start = head_end + 4;
    let length = match headers.iter().find(|(n, _)| n == "content-length") {
        Some((_, v)) => v.parse::<usize>().ok()?,
        None => raw.len().checked_sub(start)?,
    };
    let body = String::from_utf8_lossy(raw.get(start..start + length)?).into_owned();
    Some((
        Response {
            status,
            headers,
            body,
        },
        start + length,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_whole_responses_only() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\r\n\r\n{}HTTP/1.1";
        let (response, used) = parse_response(raw).unwrap();
        assert_eq!((response.status, response.body.as_str()), (200, "{}"));
        assert_eq!(response.header("x-a"), Some("b"));
        assert_eq!(used, raw.len() - "HTTP/1.1".len());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}").is_none());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_none());
    }

    #[test]
    fn an_answer_is_taken_while_the_server_keeps_the_connection_open() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0_u8; 1024];
            let _ = stream.read(&mut request).unwrap();
            // In two writes, the body after the head.
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ready\":")
                .unwrap();
            stream.write_all(b"1}").unwrap();
            // Open until the client has its answer: waiting for the close would time out.
            let _ = finished.recv();
        });
        // Asked from another thread: a client waiting for the close would answer only
        // after its read timeout.
        let (answered, answer) = std::sync::mpsc::channel();
        std::thread::spawn(move || answered.send(request(addr, "GET", "/status", b"", &[])));
        let answer = answer.recv_timeout(READ_TIMEOUT / 2);
        done.send(()).unwrap();
        server.join().unwrap();
        let answer = answer
            .expect("the answer, before the connection closes")
            .expect("a whole answer");
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (200, "{\"ready\":1}")
        );
    }
}
