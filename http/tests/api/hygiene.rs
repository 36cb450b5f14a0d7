//! Connection hygiene against the real server: half-closed requests are answered, slow
//! and idle clients are closed after the header timeout, and a crowd of slow clients
//! does not keep `/healthz` or a serverside request from being answered.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ZoneToml};

use crate::common::{DEMO_KEY, DEMO_SECRET, Server, parse_response, serverside_body, wait_for};

fn config(preamble: &str) -> String {
    let account = AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo)
        .zone(ZoneToml::new("HP-01", "trending", 4));
    ConfigToml::new(preamble).account(account).to_toml()
}

#[test]
fn a_request_whose_sender_half_closes_is_answered_and_executed() {
    let server = Server::with_config(&config(""));
    for n in 0..20 {
        let body = serverside_body(json!({"visitorId": format!("half-{n}"),
            "events": [{"name": "product_view", "data": {"id": "P00005"}}], "zones": ["HP-01"]}))
        .to_string();
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let head = format!(
            "POST /api/serverside HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        stream.shutdown(Shutdown::Write).unwrap();
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let (resp, _) = parse_response(&raw);
        assert_eq!(resp.status, 200, "request {n}: {}", resp.body);
    }
}

#[test]
fn slow_clients_are_closed_and_do_not_lock_anyone_out() {
    // 1,100 slow clients, or as many as the machine's hard open-file limit leaves room
    // for beside the server's own files (the test and the server each raise their soft
    // limit to it).
    let hard = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(_, hard)| hard);
    let _ = rlimit::increase_nofile_limit(hard);
    let count = 1_100.min(usize::try_from(hard).unwrap_or(1024).saturating_sub(400));
    eprintln!("{count} slow clients (hard open-file limit {hard})");
    let server = Server::with_config(&config("[limits]\nheader_read_timeout_ms = 2000"));
    let slow: Vec<TcpStream> = (0..count)
        .map(|_| {
            let mut stream = TcpStream::connect(server.addr).unwrap();
            stream
                .write_all(b"POST /api/serverside HTTP/1.1\r\nHost: slow\r\n")
                .unwrap();
            stream
        })
        .collect();
    // Each trickles one header line every 500 ms, never finishing its header.
    let stop = Arc::new(AtomicBool::new(false));
    let trickle = {
        let stop = Arc::clone(&stop);
        let mut streams: Vec<TcpStream> = slow.iter().map(|s| s.try_clone().unwrap()).collect();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for stream in &mut streams {
                    let _ = stream.write_all(b"X-Slow: 1\r\n");
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        })
    };
    let mut health = Vec::new();
    let mut serverside = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        assert_eq!(server.get("/healthz").status, 200);
        health.push(started.elapsed());
        let started = Instant::now();
        let resp = server.serverside(json!({"zones": ["HP-01"]}));
        assert_eq!(resp.status, 200, "{}", resp.body);
        serverside.push(started.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    health.sort();
    serverside.sort();
    eprintln!(
        "with {count} slow clients: /healthz median {:?} max {:?}; serverside median {:?} max {:?}",
        health[5], health[9], serverside[5], serverside[9]
    );
    // Generous bounds for a loaded machine; the figures above are what was measured.
    assert!(health[9] < Duration::from_secs(2), "{health:?}");
    assert!(serverside[9] < Duration::from_secs(2), "{serverside:?}");

    // The header timeout closes every slow client, trickling or not.
    let mut first = slow.into_iter().next().unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut raw = Vec::new();
    let closed_after = Instant::now();
    let _ = first.read_to_end(&mut raw);
    stop.store(true, Ordering::Relaxed);
    trickle.join().unwrap();
    assert!(
        closed_after.elapsed() < Duration::from_secs(25),
        "the server closed the slow connection"
    );
    wait_for(
        "the server to be answering normally",
        Duration::from_secs(240),
        || (server.get("/healthz").status == 200).then_some(()),
    );
}

#[test]
fn an_idle_kept_alive_connection_is_closed_after_the_header_timeout() {
    let server = Server::with_config(&config("[limits]\nheader_read_timeout_ms = 500"));
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 4096];
    let n = stream.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // Nothing more is sent: the server closes the connection.
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    assert!(started.elapsed() < Duration::from_secs(25));
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
}
