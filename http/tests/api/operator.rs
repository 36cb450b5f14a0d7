//! The operator interface: the ready line, signals, the command line, configuration
//! errors, the data directory lock, routing and keep-alive.

use super::*;

#[test]
fn ready_line_healthz_and_clean_sigterm() {
    let mut server = Server::demo();
    let resp = server.get("/healthz");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json(), json!({"status": "ok"}));
    // SIGTERM stops it cleanly (exit status 0).
    let pid = server.child().id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = wait_for("exit after SIGTERM", Duration::from_secs(240), || {
        server.child().try_wait().unwrap()
    });
    assert!(
        exit.success(),
        "exit status {exit:?}; log: {}",
        server.log()
    );
    assert!(
        server.log().contains("SIGTERM received"),
        "{}",
        server.log()
    );
}

#[test]
fn sigint_stops_the_server_too() {
    let mut server = Server::demo();
    let pid = server.child().id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let exit = wait_for("exit after SIGINT", Duration::from_secs(240), || {
        server.child().try_wait().unwrap()
    });
    assert!(exit.success(), "exit status {exit:?}");
}

#[test]
fn help_lists_the_serve_options() {
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in ["--config", "--listen", "--data-dir"] {
        assert!(text.contains(flag), "{flag} missing from {text}");
    }
}

#[test]
fn config_errors_name_file_and_key_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        CONFIG.replace("strategy = \"recently_viewed\"", "strategy = \"mystery\""),
    )
    .unwrap();
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml: accounts[0].zones[1].strategy: unknown strategy \"mystery\""),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no ready line on error");

    let out = std::process::Command::new(common::binary())
        .args(["serve", "--config"])
        .arg(dir.path().join("missing.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.toml: cannot read the file"));

    // Under VITRINE_LOG_FORMAT=json the error is one JSON log line, still exit status 2.
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .env("VITRINE_LOG_FORMAT", "json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let entry: Value = serde_json::from_str(lines[0]).expect("a JSON line");
    assert_eq!(entry["level"], "ERROR", "{entry}");
    assert_eq!(entry["exit_status"], 2, "{entry}");
    assert!(
        entry["message"]
            .as_str()
            .unwrap()
            .contains("bad.toml: accounts[0].zones[1].strategy: unknown strategy \"mystery\""),
        "{entry}"
    );
    assert!(entry["timestamp"].is_string(), "{entry}");
}

#[test]
fn environment_overrides_the_listen_address() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(common::binary())
        .args(["serve", "--data-dir"])
        .arg(dir.path().join("data"))
        .env("VITRINE_LISTEN", "127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr = vitrine_testkit::server::read_ready_line(&mut child, READY_TIMEOUT).unwrap();
    assert_ne!(addr.port(), 7480);
    assert_eq!(request(addr, "GET", "/healthz", b"", &[]).status, 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_locked_data_directory_refuses_a_second_server() {
    let server = Server::demo();
    let out = std::process::Command::new(common::binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(server.data_path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use by another process"));
}

#[test]
fn unknown_path_is_404_and_wrong_method_is_405_with_json_bodies() {
    let server = Server::demo();
    let resp = server.post("/api/nothing", "{}");
    resp.assert_error(404, "no endpoint at /api/nothing");
    let resp = server.get("/api/delta");
    resp.assert_error(405, "method GET is not allowed on /api/delta; use POST");
    assert_eq!(resp.header("allow"), Some("POST"));
    // The serverside shape holds for its routing errors too.
    server.get("/api/serverside").assert_errors(405, "use POST");
    let resp = server.post("/healthz", "");
    assert_eq!(resp.status, 405);
    assert_eq!(resp.header("allow"), Some("GET"));
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = Server::demo();
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = serverside_body(json!({"zones": ["HP-01"]})).to_string();
    let one = format!(
        "POST /api/serverside HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(format!("{one}{one}").as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let mut seen = 0;
    while seen < 2 {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed after {seen} responses");
        raw.extend_from_slice(&buf[..n]);
        seen = 0;
        let mut offset = 0;
        while raw[offset..].windows(4).any(|w| w == b"\r\n\r\n") {
            let head_end = offset
                + raw[offset..]
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .unwrap();
            let head = String::from_utf8_lossy(&raw[offset..head_end]).to_ascii_lowercase();
            let len: usize = head
                .split("content-length:")
                .nth(1)
                .unwrap()
                .split("\r\n")
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            if raw.len() < head_end + 4 + len {
                break;
            }
            let (resp, used) = parse_response(&raw[offset..]);
            assert_eq!(resp.status, 200);
            offset += used;
            seen += 1;
        }
    }
}
