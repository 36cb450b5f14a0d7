//! Files written by an earlier release open in this one: a data directory left by the
//! `vitrine` of commit `140dc99` (a state snapshot written at a graceful stop, then a
//! write-ahead log of three more requests cut by SIGKILL; fixtures/files-140dc99) is
//! restored with every visitor's history. Ids in events and visitor state are now
//! inline strings and a request's events a small vector; both must archive exactly as
//! the strings and vectors they replaced.

use std::path::Path;

use serde_json::json;

use crate::common::Server;

const CONFIG: &str = r#"
[[accounts]]
access_key = "k1"
secret_key = "secret-1234"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "RV"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 5
"#;

/// `text` without terminal colour sequences.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_data_directory_of_an_earlier_release_is_restored() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/files-140dc99/data");
    copy_tree(&fixture, &dir.path().join("data"));
    let server = Server::start_in(dir, Some(CONFIG));
    let recently_viewed = |visitor: &str| -> Vec<String> {
        let answer = server
            .post_json(
                "/api/serverside",
                &json!({
                    "appId": "k1", "secretKey": "secret-1234",
                    "currentUrl": "https://s/", "userAgent": "x", "ip": "198.51.100.1",
                    "visitorId": visitor, "zones": ["RV"], "events": [],
                }),
            )
            .json();
        answer["zones"]["RV"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["Id"].as_str().unwrap().to_owned())
            .collect()
    };
    // From the state snapshot.
    assert_eq!(recently_viewed("in-snapshot"), ["P00005", "P00004"]);
    // From the write-ahead log after it.
    assert_eq!(recently_viewed("in-log"), ["P00003", "P00002", "P00001"]);
    let log = plain(&server.log());
    // The snapshot was read (not skipped as unreadable, which would replay all five
    // requests from the log instead of the three after it).
    assert!(log.contains("tracking state restored"), "{log}");
    assert!(
        log.contains("entries=14") && log.contains("events=3"),
        "{log}"
    );
}
