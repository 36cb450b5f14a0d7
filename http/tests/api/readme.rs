//! The README's examples, replayed against the demo.

use super::*;

/// Every `curl` example of the README, replayed against the embedded demo (with
/// `$ADMIN_TOKEN` read as the README says, from the demo's `data/admin-token`): the
/// status it documents (`# → NNN`) and a JSON body where the endpoint answers JSON.
#[test]
fn readme_examples_give_the_documented_answers() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let server = Server::demo();
    assert!(
        readme.contains("ADMIN_TOKEN=$(cat data/admin-token)"),
        "the README no longer reads the demo's token"
    );
    let admin_token = std::fs::read_to_string(server.data_path().join("admin-token")).unwrap();
    let admin_token = admin_token.trim();
    let mut replayed = Vec::new();
    for block in readme.split("```sh").skip(1) {
        let block = block.split("```").next().unwrap();
        if !block.contains("curl ") {
            continue;
        }
        let command = block
            .replace("\\\n", " ")
            .replace("$ADMIN_TOKEN", admin_token);
        let expected: u16 = command
            .split("# → ")
            .nth(1)
            .and_then(|s| s.trim().get(..3))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("example without `# → STATUS`: {block}"));
        let url = command
            .split_whitespace()
            .map(|w| w.trim_matches('"'))
            .find(|w| w.starts_with("http://127.0.0.1:7480"))
            .unwrap();
        let path = url.trim_start_matches("http://127.0.0.1:7480");
        let body = command
            .split(" -d '")
            .nth(1)
            .map(|rest| rest.split('\'').next().unwrap().to_owned());
        // Headers in double quotes, or in single quotes (to hold a quoted ETag).
        let headers: Vec<(&str, &str)> = command
            .split(" -H \"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next()?.split_once(": "))
            .chain(
                command
                    .split(" -H '")
                    .skip(1)
                    .filter_map(|rest| rest.split('\'').next()?.split_once(": ")),
            )
            .collect();
        // `-X PUT` (and the like) names the method; otherwise a body is a POST.
        let method = command
            .split(" -X ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or(if body.is_some() { "POST" } else { "GET" });
        let resp = request(
            server.addr,
            method,
            path,
            body.as_deref().unwrap_or("").as_bytes(),
            &headers,
        );
        assert_eq!(
            resp.status, expected,
            "README example for {path}: {}",
            resp.body
        );
        if resp.header("content-type") == Some("application/json") {
            resp.json();
        }
        replayed.push(path.to_owned());
    }
    for endpoint in [
        "/api/serverside",
        "/api/productfeed",
        "/api/productfeedstatus",
        "/api/delta",
        "/api/deltastatus",
        "/api/user/forget",
        "/healthz",
        "/admin/api/accounts/demo-access-key/segments",
        "/admin/api/accounts/demo-access-key/zones/HP-01/campaigns",
        "/admin/api/accounts/demo-access-key/campaigns/history",
    ] {
        assert!(
            replayed.iter().any(|p| p == endpoint),
            "no README example for {endpoint}"
        );
    }
}

/// The demo prints its console's address with a token that opens it: the same token on
/// every start on one data directory, another on another data directory, and the admin
/// API answers it as an editor.
#[test]
fn the_demo_prints_a_console_address_that_opens_the_console() {
    let console_token = |server: &Server| -> String {
        let line = wait_for(
            "the console line",
            std::time::Duration::from_secs(60),
            || {
                server
                    .stdout_lines()
                    .into_iter()
                    .find(|l| l.starts_with("console: "))
            },
        );
        let prefix = format!("console: http://{}/admin/#token=", server.addr);
        line.strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{line:?} does not start with {prefix:?}"))
            .to_owned()
    };
    let server = Server::demo();
    let token = console_token(&server);
    assert_eq!(token.len(), 64, "{token}");
    let on_disk = std::fs::read_to_string(server.data_path().join("admin-token")).unwrap();
    assert_eq!(on_disk.trim(), token);
    let page = server.get("/admin/");
    assert_eq!(page.status, 200);
    let accounts = |server: &Server| {
        let auth = format!("Bearer {token}");
        request(
            server.addr,
            "GET",
            "/admin/api/accounts",
            b"",
            &[("authorization", &auth)],
        )
    };
    let resp = accounts(&server);
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.json()["token"]["role"], "editor");

    let restarted = Server::start_in(server.kill9(), None);
    assert_eq!(console_token(&restarted), token);
    let other = Server::demo();
    assert_ne!(console_token(&other), token);
    // A configuration file's server has only its own tokens, and prints no console line.
    let configured = Server::with_config(include_str!("../../src/demo.toml"));
    let resp = accounts(&configured);
    assert_eq!(resp.status, 403, "{}", resp.body);
    assert!(configured.stdout_lines().is_empty());
}
