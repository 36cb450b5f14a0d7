//! Drafts on the server, through the real server: a zone's list and the segments saved
//! as they are edited, with who and when and the version they were based on, read by
//! any token and changed only by an editor's; kept through a SIGKILL right after the
//! 200; discarded explicitly, or by publishing them as they stand (a different publish
//! keeps the draft, now behind the live list); bad bodies refused with their path.

use serde_json::{Value, json};

use crate::campaigns::{EDITOR, VIEWER, admin, config, manual, put_campaigns, store};
use crate::common::Server;

fn draft(server: &Server, path: &str) -> Value {
    let resp = admin(server, "GET", path, VIEWER, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["draft"].clone()
}

#[test]
fn drafts_are_kept_on_the_server_until_published_or_discarded() {
    let server = store(Vec::new());
    assert!(draft(&server, "/zones/HP-01/draft").is_null());
    let list = json!([manual("picks", None, &["S2", "B3"])]);
    let resp = admin(
        &server,
        "PUT",
        "/zones/HP-01/draft",
        EDITOR,
        Some(&json!({"campaigns": list})),
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let saved = resp.json()["draft"].clone();
    assert_eq!(saved["body"]["campaigns"], list);
    assert_eq!(saved["zone"], "HP-01");
    assert_eq!(saved["part"], "zone:HP-01");
    assert_eq!(saved["basedOn"], 0);
    assert_eq!(saved["liveVersion"], 0);
    assert!(
        saved["author"].is_string() && saved["at"].is_string(),
        "{saved}"
    );
    let segments = json!([{"id": "buyers", "rule": {"orders": {"min": 1}}}]);
    let resp = admin(
        &server,
        "PUT",
        "/segments/draft",
        EDITOR,
        Some(&json!({"segments": segments})),
        &[],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);

    // A viewer reads drafts and cannot change them; bad bodies are named and change
    // nothing.
    let refused = admin(&server, "DELETE", "/zones/HP-01/draft", VIEWER, None, &[]);
    assert_eq!(refused.status, 403, "{}", refused.body);
    for (body, path) in [
        (json!({"campaigns": {}}), "campaigns"),
        (json!({"segments": []}), "segments"),
        (json!({"campaigns": [1]}), "campaigns[0]"),
        (json!([]), ""),
    ] {
        let resp = admin(
            &server,
            "PUT",
            "/zones/HP-01/draft",
            EDITOR,
            Some(&body),
            &[],
        );
        assert_eq!(resp.status, 400, "{body}: {}", resp.body);
        let paths: Vec<String> = resp.json()["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap_or("").to_owned())
            .collect();
        assert!(paths.contains(&path.to_owned()), "{body}: {}", resp.body);
    }
    let missing = admin(
        &server,
        "PUT",
        "/zones/NOPE/draft",
        EDITOR,
        Some(&json!({"campaigns": []})),
        &[],
    );
    assert_eq!(missing.status, 404, "{}", missing.body);
    let all = admin(&server, "GET", "/drafts", VIEWER, None, &[]);
    assert_eq!(
        all.json()["drafts"].as_array().unwrap().len(),
        2,
        "{}",
        all.body
    );
    assert_eq!(draft(&server, "/zones/HP-01/draft"), saved);

    // Kept through a SIGKILL right after the 200.
    let server = Server::start_in(server.kill9(), Some(&config()));
    assert_eq!(draft(&server, "/zones/HP-01/draft"), saved);
    assert_eq!(
        draft(&server, "/segments/draft")["body"]["segments"],
        segments
    );

    // Another list published: the draft stays, now behind the live list.
    put_campaigns(&server, "HP-01", json!([manual("other", None, &["S1"])]));
    let behind = draft(&server, "/zones/HP-01/draft");
    assert_eq!(behind["body"]["campaigns"], list);
    assert_eq!(
        (behind["basedOn"].as_u64(), behind["liveVersion"].as_u64()),
        (Some(0), Some(1))
    );
    // The draft published as it stands: gone.
    put_campaigns(&server, "HP-01", list.clone());
    assert!(draft(&server, "/zones/HP-01/draft").is_null());
    // Discarded explicitly.
    let resp = admin(&server, "DELETE", "/segments/draft", EDITOR, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(resp.json()["discarded"]["at"].is_string(), "{}", resp.body);
    assert!(draft(&server, "/segments/draft").is_null());
    let server = Server::start_in(server.kill9(), Some(&config()));
    assert!(draft(&server, "/segments/draft").is_null());
    assert!(draft(&server, "/zones/HP-01/draft").is_null());
}
