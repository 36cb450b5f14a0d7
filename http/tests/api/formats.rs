//! Files written by an earlier release open in this one: a data directory left by the
//! `vitrine` of commit `140dc99` (a state snapshot written at a graceful stop, then a
//! write-ahead log of three more requests cut by SIGKILL; fixtures/files-140dc99) is
//! restored with every visitor's history and the co-view counts of its time (pairs
//! without the inherited counts kept since). Ids in events and visitor state are now
//! inline strings and a request's events a small vector; both must archive exactly as
//! the strings and vectors they replaced.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ZoneToml};

use crate::common::Server;

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
    // The account the fixture was written for: its access key names its directory.
    let config = ConfigToml::default()
        .account(
            AccountToml::new("k1", "secret-1234", CatalogueStart::Demo)
                .zone(ZoneToml::new("RV", "recently_viewed", 5))
                .zone(ZoneToml::new("VT", "viewed_together", 5)),
        )
        .to_toml();
    let server = Server::start_in_with_env(dir, Some(&config), &[("VITRINE_LOG_FORMAT", "json")]);
    let zone = |visitor: &str, zone: &str, events: Value| -> Vec<String> {
        let answer = server
            .post_json(
                "/api/serverside",
                &json!({
                    "appId": "k1", "secretKey": "secret-1234",
                    "currentUrl": "https://s/", "userAgent": "x", "ip": "198.51.100.1",
                    "visitorId": visitor, "zones": [zone], "events": events,
                }),
            )
            .json();
        answer["zones"][zone]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["Id"].as_str().unwrap().to_owned())
            .collect()
    };
    let recently_viewed = |visitor: &str| zone(visitor, "RV", json!([]));
    // From the state snapshot.
    assert_eq!(recently_viewed("in-snapshot"), ["P00005", "P00004"]);
    // From the write-ahead log after it.
    assert_eq!(recently_viewed("in-log"), ["P00003", "P00002", "P00001"]);
    // The snapshot was read (not skipped as unreadable, which would replay all five
    // requests from the log instead of the three after it).
    let log = server.log();
    let field = |message: &str, name: &str| -> Option<u64> {
        log.lines().find_map(|line| {
            let entry: Value = serde_json::from_str(line).ok()?;
            (entry["message"] == message).then(|| entry[name].as_u64())?
        })
    };
    assert_eq!(
        field("tracking state restored", "entries"),
        Some(14),
        "{log}"
    );
    assert_eq!(field("account ready", "events"), Some(3), "{log}");
    // The snapshot's co-view pair (P00004 then P00005, by "in-snapshot") is counted:
    // a new visitor on P00004's page is shown P00005 once the lists are rebuilt.
    let view = json!([{"name": "product_view", "data": {"id": "P00004"}}]);
    let shown = crate::common::wait_for("the restored co-views", Duration::from_secs(60), || {
        let shown = zone("newcomer", "VT", view.clone());
        (!shown.is_empty()).then_some(shown)
    });
    assert_eq!(shown, ["P00005"]);
}
