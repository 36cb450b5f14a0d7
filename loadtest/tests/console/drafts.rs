//! The campaign screens' drafts and restores: a draft kept across zones, a restart and
//! editors until published; a restore of one zone confirmed against the live version.

use std::net::SocketAddr;
use std::path::Path;

use serde_json::{Value, json};
use vitrine_testkit::{TestServer, browser, client};

use super::campaigns::{BANNER, draft_by, move_up};
use super::helpers::*;

/// The campaign ids of the list shown, in order.
const ORDER: &str = "return [...document.querySelectorAll('#cz-table tr[data-campaign]')].map(r => r.dataset.campaign)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_is_kept_across_zones_a_restart_and_editors_until_published() {
    let server = tokio::task::block_in_place(store);
    let addr = server.addr();
    let campaigns: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|id| json!({"id": id, "content": {"type": "custom", "source": {"manual": {"products": ["C01"]}}}}))
        .collect();
    let list = json!({ "campaigns": campaigns });
    let response = tokio::task::block_in_place(|| {
        client::request(
            addr,
            "PUT",
            &format!("/admin/api/accounts/{KEY}/zones/HP-01/campaigns"),
            &serde_json::to_vec(&list).unwrap(),
            &[("authorization", &format!("Bearer {EDITOR}"))],
        )
    })
    .expect("an answer");
    assert_eq!(response.status, 200, "{}", response.body);
    let driver = tokio::task::block_in_place(browser::Driver::start)
        .expect("chromedriver (Debian chromium-driver; scripts/test installs it)");
    let editor = session(&driver).await;
    log_in(&editor, addr, EDITOR).await;
    until(&editor, ORDER, |v| v == &json!(["a", "b", "c"])).await;

    // A reorder by keyboard, saved as the zone's draft a moment later (here held back
    // until told); until it is saved, leaving the page asks first.
    editor
        .execute("zoneDraft.delay = 600000;", Vec::new())
        .await
        .unwrap();
    move_up(&editor, "c").await;
    let asks = editor
        .execute(
            "const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e);              return e.defaultPrevented",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        asks, true,
        "a change not saved yet does not ask before leaving"
    );
    editor
        .execute("zoneDraft.flush();", Vec::new())
        .await
        .unwrap();
    until(&editor, ORDER, |v| v == &json!(["a", "c", "b"])).await;
    draft_by(&editor, "merchandiser").await;
    let asks = editor
        .execute(
            "const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e);              return e.defaultPrevented",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(asks, false, "a saved draft still asks before leaving");

    // Another zone, then back: the draft is there.
    select(&editor, "cz-zone", "PP-01").await;
    until(&editor, ORDER, |v| v == &json!(["configured"])).await;
    select(&editor, "cz-zone", "HP-01").await;
    until(&editor, ORDER, |v| v == &json!(["a", "c", "b"])).await;
    editor.close().await.unwrap();

    // After a SIGKILL and a restart, and for another account's token (a viewer, who
    // reads drafts and cannot change them).
    let server = tokio::task::block_in_place(|| {
        TestServer::start_in(
            Path::new(env!("CARGO_BIN_EXE_vitrine-loadtest"))
                .with_file_name("vitrine")
                .as_path(),
            server.kill9(),
            Some(&config()),
        )
        .unwrap()
    });
    let addr = server.addr();
    let viewer = session(&driver).await;
    log_in(&viewer, addr, VIEWER).await;
    until(&viewer, ORDER, |v| v == &json!(["a", "c", "b"])).await;
    draft_by(&viewer, "merchandiser").await;
    viewer.close().await.unwrap();

    // Published: the draft is gone, for everyone.
    let editor = session(&driver).await;
    log_in(&editor, addr, EDITOR).await;
    until(&editor, ORDER, |v| v == &json!(["a", "c", "b"])).await;
    click(&editor, "#cz-publish").await;
    until(
        &editor,
        "return document.getElementById('cz-message').textContent",
        |v| v.as_str().is_some_and(|t| t.starts_with("Published")),
    )
    .await;
    until(&editor, BANNER, |v| v[0] == "none").await;
    let draft = tokio::task::block_in_place(|| {
        client::request(
            addr,
            "GET",
            &format!("/admin/api/accounts/{KEY}/zones/HP-01/draft"),
            b"",
            &[("authorization", &format!("Bearer {VIEWER}"))],
        )
    })
    .expect("an answer");
    assert_eq!(draft.body, r#"{"draft":null}"#);
    editor.close().await.unwrap();
    drop(driver);
    drop(server);
}

/// A PUT of a zone's campaign list of manual picks of C01 through the admin API, as
/// `token`.
fn put_list(addr: SocketAddr, zone: &str, ids: &[&str], token: &str) {
    let campaigns: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "content": {"type": "custom", "source": {"manual": {"products": ["C01"]}}}}))
        .collect();
    put_campaigns(addr, zone, &json!({ "campaigns": campaigns }), token);
}

/// A PUT of a zone's campaign list (`{"campaigns": [...]}`) through the admin API.
fn put_campaigns(addr: SocketAddr, zone: &str, list: &Value, token: &str) {
    let response = client::request(
        addr,
        "PUT",
        &format!("/admin/api/accounts/{KEY}/zones/{zone}/campaigns"),
        &serde_json::to_vec(list).unwrap(),
        &[("authorization", &format!("Bearer {token}"))],
    )
    .expect("an answer");
    assert_eq!(response.status, 200, "{}", response.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_of_one_zone_is_confirmed_against_the_live_version_and_leaves_the_others() {
    let server = tokio::task::block_in_place(store);
    let addr = server.addr();
    tokio::task::block_in_place(|| {
        put_list(addr, "HP-01", &["a", "b"], EDITOR);
        put_list(addr, "HP-01", &["b", "a", "c"], EDITOR);
        // Another editor's later change to another zone.
        put_list(addr, "PP-01", &["pp"], EDITOR);
    });
    let driver = tokio::task::block_in_place(browser::Driver::start)
        .expect("chromedriver (Debian chromium-driver; scripts/test installs it)");
    let editor = session(&driver).await;
    log_in(&editor, addr, EDITOR).await;
    // The audit log names each change.
    let changes = until(
        &editor,
        "return [...document.querySelectorAll('#ch-table tr[data-version=\"2\"] ul.changes li')].map(l => l.textContent)",
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
    )
    .await;
    assert_eq!(
        changes,
        json!([
            "zone HP-01: campaign c added at place 3",
            "zone HP-01: campaign b moved from place 2 to 1"
        ])
    );
    let caption = editor
        .execute(
            "return document.querySelector('#ch-table caption').textContent",
            Vec::new(),
        )
        .await
        .unwrap();
    assert!(caption.as_str().is_some_and(|c| !c.is_empty()));

    // Restore… on version 1: HP-01's list is chosen, and what it would change is shown
    // before anything is changed.
    click(&editor, "#ch-table tr[data-version=\"1\"] button").await;
    let shown = until(
        &editor,
        "const d = document.getElementById('ch-restore-diff'); \
         return d.dataset.changes ? [document.getElementById('ch-restore-part').value, d.textContent] : null",
        |v| !v.is_null(),
    )
    .await;
    assert_eq!(shown[0], "zone:HP-01");
    assert!(
        shown[1]
            .as_str()
            .unwrap()
            .contains("campaign c removed from place 3"),
        "{shown}"
    );
    click(&editor, "#ch-restore-confirm").await;
    until(
        &editor,
        "return document.getElementById('cz-message').textContent",
        |v| {
            v.as_str()
                .is_some_and(|t| t.contains("restored as version 4"))
        },
    )
    .await;
    let lists = tokio::task::block_in_place(|| {
        ["HP-01", "PP-01"].map(|zone| {
            let answer = client::request(
                addr,
                "GET",
                &format!("/admin/api/accounts/{KEY}/zones/{zone}/campaigns"),
                b"",
                &[("authorization", &format!("Bearer {VIEWER}"))],
            )
            .expect("an answer");
            let body: Value = serde_json::from_str(&answer.body).unwrap();
            body["campaigns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        })
    });
    assert_eq!(lists, [vec!["a", "b"], vec!["pp"]]);

    // A pin's product field suggests products in its own list, never as manual picks.
    click(&editor, "#cz-new").await;
    click(&editor, "#ce-add-pin").await;
    type_into(&editor, "#ce-pins .pin-product", "Console product 5").await;
    until(
        &editor,
        "return document.querySelectorAll('#ce-product-options option').length",
        |v| v.as_u64().is_some_and(|n| n > 0),
    )
    .await;
    let picks = editor
        .execute(
            "return document.querySelectorAll('#ce-pick-products .results li').length",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(picks, 0);

    // Schedules in the account's time zone (Europe/London: BST in July), with presets.
    let zoned = editor
        .execute(
            "return [toZonedInput('2026-07-01T08:00:00Z', 'Europe/London'),                fromZonedInput('2026-07-01T09:00', 'Europe/London'),                fromZonedInput('2026-12-01T09:00', 'Europe/London'),                presetRange('weekend', 'America/New_York', Date.parse('2026-12-02T12:00:00Z')),                presetRange('today', 'Europe/London', Date.parse('2026-07-01T23:30:00Z'))]",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        zoned,
        json!([
            "2026-07-01T09:00",
            "2026-07-01T08:00:00Z",
            "2026-12-01T09:00:00Z",
            ["2026-12-05T00:00", "2026-12-07T00:00"],
            ["2026-07-02T00:00", "2026-07-03T00:00"]
        ])
    );
    click(&editor, "#ce-presets button[data-preset=week]").await;
    let read = editor
        .execute("return readEditor().schedule", Vec::new())
        .await
        .unwrap();
    assert!(
        read["start"].is_string() && read["end"].is_string(),
        "{read}"
    );
    editor.close().await.unwrap();

    // A scheduled campaign's next start is in the list, in the account's time zone.
    tokio::task::block_in_place(|| {
        let list = json!({"campaigns": [{"id": "later", "schedule": {"start": "2099-07-01T08:00:00Z"},
            "content": {"type": "custom", "source": {"manual": {"products": ["C01"]}}}}]});
        put_campaigns(addr, "PP-01", &list, EDITOR);
    });
    let editor = session(&driver).await;
    log_in(&editor, addr, EDITOR).await;
    select(&editor, "cz-zone", "PP-01").await;
    let next = until(
        &editor,
        "const n = document.querySelector('#cz-table tr[data-campaign=later] small.next'); return n ? n.textContent : null",
        |v| !v.is_null(),
    )
    .await;
    assert_eq!(next, "starts Wed, 1 Jul 2099, 09:00");

    // From the preview: a product hidden from the campaign shown and another pinned at
    // the first place, both into the zone's draft.
    tokio::task::block_in_place(|| {
        let list = json!({"campaigns": [{"id": "mix", "minItems": 1,
            "content": {"type": "custom", "source": {"manual": {"products": ["C01", "C02", "C03"]}}}}]});
        put_campaigns(addr, "HP-01", &list, EDITOR);
    });
    select(&editor, "cz-zone", "HP-01").await;
    until(&editor, ORDER, |v| v == &json!(["mix"])).await;
    let items = "return [...document.querySelectorAll('#pv-items li')].map(l => l.dataset.id)";
    click(&editor, "#pv-show").await;
    until(&editor, items, |v| v == &json!(["C01", "C02", "C03"])).await;
    click(&editor, "#pv-items li[data-id=C02] button.hide").await;
    until(&editor, items, |v| v == &json!(["C01", "C03"])).await;
    editor
        .execute(
            "const s = document.querySelector('#pv-items li[data-id=C03] select'); s.value = '1';",
            Vec::new(),
        )
        .await
        .unwrap();
    click(&editor, "#pv-items li[data-id=C03] button.pin").await;
    until(&editor, items, |v| v == &json!(["C03", "C01"])).await;
    draft_by(&editor, "merchandiser").await;
    let draft = until(
        &editor,
        "return fetch('/admin/api/accounts/console-shop/zones/HP-01/draft',            {headers: {Authorization: 'Bearer ' + state.token}}).then(r => r.json())            .then(a => a.draft && a.draft.body.campaigns[0].content)",
        |v| v.get("pins").is_some(),
    )
    .await;
    assert_eq!(
        draft["pins"],
        json!([{"product": "C03", "place": 1}]),
        "{draft}"
    );
    assert_eq!(
        draft["filters"],
        json!([{"productNotIn": ["C02"]}]),
        "{draft}"
    );
    editor.close().await.unwrap();

    // A viewer's segment fields take no typing.
    let viewer = session(&driver).await;
    log_in(&viewer, addr, VIEWER).await;
    let disabled = until(
        &viewer,
        "return [document.getElementById('sb-id').disabled, \
           [...document.querySelectorAll('#sb-rule input, #sb-rule select')].every(f => f.disabled)]",
        |v| v[0] == true,
    )
    .await;
    assert_eq!(disabled, json!([true, true]));
    viewer.close().await.unwrap();
    drop(driver);
    drop(server);
}
