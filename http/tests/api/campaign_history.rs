//! Campaigns kept: a change through a SIGKILL right after its 200, a restore of one
//! part from the audit log, an account without campaigns, campaigns in backups and
//! through a reload. The store and helpers are `campaigns`'.

use std::time::Duration;

use serde_json::json;

use crate::campaigns::{
    EDITOR, VIEWER, admin, config, manual, put_campaigns, put_segments, shown, store,
};
use crate::common::{Server, wait_for};

#[test]
fn a_change_survives_a_sigkill_right_after_its_200_and_restores_as_a_new_version() {
    let server = store(Vec::new());
    put_campaigns(&server, "HP-01", json!([manual("first", None, &["S2"])]));
    put_campaigns(&server, "HP-01", json!([manual("second", None, &["B2"])]));
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config()));
    assert_eq!(shown(&server, "v", "HP-01", json!([]), json!({})), ["B2"]);
    let history = admin(&server, "GET", "/campaigns/history", VIEWER, None, &[]).json();
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "{history}");
    assert_eq!(versions[0]["version"], 2);
    assert_eq!(versions[0]["author"], "tokens[0]");
    assert!(
        versions[0]["summary"]
            .as_str()
            .unwrap()
            .contains("zone HP-01"),
        "{history}"
    );
    let old = admin(&server, "GET", "/campaigns/history/1", VIEWER, None, &[]).json();
    assert_eq!(
        old["document"]["zones"]["HP-01"]["campaigns"][0]["id"],
        "first"
    );

    // Version 1 restored as version 3, itself durable.
    let restore = admin(
        &server,
        "POST",
        "/campaigns/restore",
        EDITOR,
        Some(&json!({"version": 1})),
        &[],
    );
    assert_eq!(restore.status, 200, "{}", restore.body);
    assert_eq!(restore.json()["version"], 3);
    assert_eq!(shown(&server, "v", "HP-01", json!([]), json!({})), ["S2"]);
    let missing = admin(
        &server,
        "POST",
        "/campaigns/restore",
        EDITOR,
        Some(&json!({"version": 99})),
        &[],
    );
    assert_eq!(missing.status, 404, "{}", missing.body);
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config()));
    assert_eq!(shown(&server, "v", "HP-01", json!([]), json!({})), ["S2"]);
    let history = admin(&server, "GET", "/campaigns/history", VIEWER, None, &[]).json();
    assert!(
        history["versions"][0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("restored the whole document of version 1"),
        "{history}"
    );
}

#[test]
fn a_restore_of_one_part_undoes_only_that_part_and_says_what_it_will_change() {
    let server = store(Vec::new());
    // v1, v2: HP-01's list; v3: another editor changes PP-01; v4: a pause on HP-01.
    let first = json!([manual("a", None, &["S2"]), manual("b", None, &["B2"])]);
    put_campaigns(&server, "HP-01", first.clone());
    put_campaigns(
        &server,
        "HP-01",
        json!([
            manual("b", None, &["B2"]),
            manual("a", None, &["S2"]),
            manual("c", None, &["S3"])
        ]),
    );
    put_campaigns(&server, "PP-01", json!([manual("pp", None, &["S5"])]));
    let mut paused = json!([
        manual("b", None, &["B2"]),
        manual("a", None, &["S2"]),
        manual("c", None, &["S3"])
    ]);
    paused[0]["enabled"] = json!(false);
    paused[2]["content"]["filters"] = json!([{"price": {"max": 100}}]);
    put_campaigns(&server, "HP-01", paused);

    // The history names each change, with a structured diff beside the sentence.
    let history = admin(&server, "GET", "/campaigns/history", VIEWER, None, &[]).json();
    let latest = &history["versions"][0];
    assert_eq!(
        latest["summary"], "zone HP-01: campaign b paused, campaign c changed (filters)",
        "{history}"
    );
    assert_eq!(
        latest["changes"],
        json!([
            {"part": "zone:HP-01", "zone": "HP-01", "change": "paused", "campaign": "b"},
            {"part": "zone:HP-01", "zone": "HP-01", "change": "changed", "campaign": "c", "fields": ["filters"]}
        ])
    );
    assert_eq!(
        history["versions"][2]["summary"],
        "zone HP-01: campaign c added at place 3, campaign b moved from place 2 to 1"
    );

    // What restoring HP-01 of version 1 would change, before it is made.
    let preview = admin(
        &server,
        "GET",
        "/campaigns/restore?version=1&part=zone:HP-01",
        VIEWER,
        None,
        &[],
    );
    assert_eq!(preview.status, 200, "{}", preview.body);
    assert_eq!(
        preview.json()["summary"],
        "zone HP-01: campaign c removed from place 3, campaign a moved from place 2 to 1, campaign b resumed"
    );
    let bad = admin(
        &server,
        "GET",
        "/campaigns/restore?version=1&part=zone:NOPE",
        VIEWER,
        None,
        &[],
    );
    assert_eq!(bad.status, 400, "{}", bad.body);

    // Restored: HP-01 as in version 1, PP-01 as the other editor left it; a stale
    // If-Match on HP-01 is refused, and one on HP-01's version now is taken whatever
    // PP-01 did meanwhile.
    let stale = admin(
        &server,
        "POST",
        "/campaigns/restore",
        EDITOR,
        Some(&json!({"version": 1, "part": "zone:HP-01"})),
        &[("if-match", "\"2\"")],
    );
    assert_eq!(stale.status, 412, "{}", stale.body);
    let restore = admin(
        &server,
        "POST",
        "/campaigns/restore",
        EDITOR,
        Some(&json!({"version": 1, "part": "zone:HP-01"})),
        &[("if-match", "\"4\"")],
    );
    assert_eq!(restore.status, 200, "{}", restore.body);
    assert_eq!(restore.json()["version"], 5);
    assert_eq!(restore.header("etag"), Some("\"5\""));
    let zone = |zone: &str| {
        admin(
            &server,
            "GET",
            &format!("/zones/{zone}/campaigns"),
            VIEWER,
            None,
            &[],
        )
        .json()
    };
    assert_eq!(zone("HP-01")["campaigns"], first);
    assert_eq!(zone("PP-01")["campaigns"][0]["id"], "pp");
    assert_eq!(zone("PP-01")["version"], 3);
    let history = admin(&server, "GET", "/campaigns/history", VIEWER, None, &[]).json();
    assert!(
        history["versions"][0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("restored zone HP-01 of version 1: zone HP-01: "),
        "{history}"
    );
    let wrong = admin(
        &server,
        "POST",
        "/campaigns/restore",
        EDITOR,
        Some(&json!({"version": 1, "part": "everything"})),
        &[],
    );
    assert_eq!(wrong.status, 400, "{}", wrong.body);
    assert!(wrong.body.contains("\"path\":\"part\""), "{}", wrong.body);
}

#[test]
fn an_account_without_campaigns_answers_as_its_configuration_says() {
    let server = store(Vec::new());
    // Trending is ranked off the request path once the catalogue is in: the zone as
    // configured, once it shows something.
    let before = wait_for("the zone filled", Duration::from_secs(120), || {
        let items = shown(&server, "same", "HP-01", json!([]), json!({}));
        (!items.is_empty()).then_some(items)
    });
    // Segments alone change no zone.
    put_segments(&server, json!([{"id": "all", "rule": {"all": []}}]));
    assert_eq!(
        shown(&server, "same", "HP-01", json!([]), json!({})),
        before
    );
    // An automated campaign for everyone is the configuration's zone.
    put_campaigns(
        &server,
        "HP-01",
        json!([{"id": "auto", "content": {"type": "automated", "strategy": "trending"}}]),
    );
    assert_eq!(
        shown(&server, "same", "HP-01", json!([]), json!({})),
        before
    );
}

#[test]
fn campaigns_are_in_backups_and_stay_through_a_reload() {
    let server = store(Vec::new());
    put_campaigns(
        &server,
        "HP-01",
        json!([manual("kept", None, &["B2", "S4"])]),
    );
    // A reload with the zone's count changed: the live list stays, compiled against the
    // new zone (its count is the most items a campaign for it shows by default).
    let reloaded = config().replacen("count = 4", "count = 1", 1);
    std::fs::write(server.dir().join("vitrine.toml"), &reloaded).unwrap();
    let data = server.data_path();
    let (code, out, err) =
        crate::reload::vitrine(&["reload", "--data-dir", data.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    wait_for("the reloaded zone", Duration::from_secs(60), || {
        (shown(&server, "v", "HP-01", json!([]), json!({})) == ["B2"]).then_some(())
    });
    let read = admin(&server, "GET", "/zones/HP-01/campaigns", VIEWER, None, &[]);
    assert_eq!(read.json()["source"], "live", "{}", read.body);

    // A backup holds the campaigns and their history; a restored server serves them.
    let backup = tempfile::tempdir().unwrap();
    let out_dir = backup.path().join("backup");
    let (code, out, err) = crate::reload::vitrine(&[
        "backup",
        "--data-dir",
        data.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    drop(server);
    let restored = tempfile::tempdir().unwrap();
    let (code, out, err) = crate::reload::vitrine(&[
        "restore",
        out_dir.to_str().unwrap(),
        "--data-dir",
        restored.path().join("data").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let server = Server::start_in(restored, Some(&reloaded));
    assert_eq!(shown(&server, "w", "HP-01", json!([]), json!({})), ["B2"]);
    let history = admin(&server, "GET", "/campaigns/history", VIEWER, None, &[]).json();
    assert_eq!(
        history["versions"].as_array().unwrap().len(),
        1,
        "{history}"
    );
}
