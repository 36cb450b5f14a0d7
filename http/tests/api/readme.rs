//! The README's examples, replayed against the demo.

use super::*;

/// Every `curl` example of the README, replayed against the demo (with `$ADMIN_TOKEN`
/// one of its admin tokens): the status it documents (`# → NNN`) and a JSON body where
/// the endpoint answers JSON.
#[test]
fn readme_examples_give_the_documented_answers() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let admin_token = "readme-example-admin-token";
    let server = Server::with_config(&format!(
        "{}\n[admin]\ntokens = [\"{admin_token}\"]\n",
        include_str!("../../src/demo.toml")
    ));
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
