//! The campaign screens: segments, campaigns, previews, shadow tests, drafts, restores.

use std::net::SocketAddr;
use std::path::Path;

use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use vitrine_testkit::{TestServer, browser, client};

use super::helpers::*;

/// Waits until the segment builder's size says `matching` visitors match.
async fn size_is(browser: &Client, matching: &str) {
    until(
        browser,
        "return document.getElementById('sb-size').dataset.matching",
        |v| v == matching,
    )
    .await;
}

/// Waits until the zone's draft banner says who saved the draft.
async fn draft_by(browser: &Client, author: &str) {
    let banner = until(browser, BANNER, |v| v[0] == "draft").await;
    assert!(
        banner[1]
            .as_str()
            .unwrap()
            .starts_with(&format!("Draft by {author}")),
        "{banner}"
    );
}

/// Moves a campaign's row up a place with the keyboard (Alt+↑ on the focused row).
async fn move_up(browser: &Client, campaign: &str) {
    browser
        .execute(
            "document.querySelector('#cz-table tr[data-campaign=\"' + arguments[0] + '\"]').focus();",
            vec![json!(campaign)],
        )
        .await
        .unwrap();
    browser
        .active_element()
        .await
        .unwrap()
        .send_keys(&format!(
            "{}{}",
            fantoccini::key::Key::Alt,
            fantoccini::key::Key::Up
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merchandiser_builds_previews_tests_and_publishes_a_campaign_in_the_browser() {
    let server = tokio::task::block_in_place(store);
    let addr = server.addr();
    let driver = tokio::task::block_in_place(browser::Driver::start)
        .expect("chromedriver (Debian chromium-driver; scripts/test installs it)");
    let editor = session(&driver).await;
    log_in(&editor, addr, EDITOR).await;
    // A second editor loads the same version now, to publish later on a stale ETag.
    let rival = session(&driver).await;
    log_in(&rival, addr, EDITOR).await;

    // A segment: everyone at first (three shoppers), then returning shoppers only
    // (none: each had one session).
    click(&editor, "#sb-new").await;
    type_into(&editor, "#sb-id", "returning").await;
    type_into(&editor, "#sb-name", "Returning shoppers").await;
    size_is(&editor, "3").await;
    click(&editor, "#sb-rule .add-condition").await;
    size_is(&editor, "0").await;
    click(&editor, "#sb-save").await;
    until(
        &editor,
        "return document.getElementById('sb-message').textContent",
        |v| v.as_str().is_some_and(|t| t.contains("saved")),
    )
    .await;

    // A campaign: manual picks (C05 found by the catalogue search), a price filter that
    // keeps C05, a pin of C02 at the first place, a schedule around now.
    click(&editor, "#cz-new").await;
    type_into(&editor, "#ce-id", "autumn").await;
    type_into(&editor, "#ce-name", "Autumn picks").await;
    type_into(&editor, "#ce-zone-title", "Picked for autumn").await;
    select(&editor, "ce-source", "manual").await;
    type_into(&editor, "#ce-pick-products input", "Console product 5").await;
    // Picked by sight: the result shows the product's price and availability.
    let result = until(
        &editor,
        "const b = document.querySelector(\"#ce-pick-products .results button[data-id='C05']\"); \
         return b ? b.textContent : null",
        |v| !v.is_null(),
    )
    .await;
    assert!(
        result.as_str().unwrap().contains("£50.00 · available"),
        "{result}"
    );
    click(&editor, "#ce-pick-products .results button[data-id='C05']").await;
    click(&editor, "#ce-add-filter").await;
    type_into(
        &editor,
        "#ce-filters li:first-child input[data-path='max']",
        "80",
    )
    .await;
    click(&editor, "#ce-add-pin").await;
    type_into(&editor, "#ce-pins .pin-product", "C02").await;
    for (id, days) in [("ce-start", -1), ("ce-end", 10)] {
        // A datetime-local input takes its value from script (typing depends on locale).
        editor
            .execute(
                "document.getElementById(arguments[0]).value = \
                   new Date(Date.now() + arguments[1] * 86400000).toISOString().slice(0, 16);",
                vec![json!(id), json!(days)],
            )
            .await
            .unwrap();
    }
    // Bad values first: the server's 400 is shown next to the field its path names (a
    // negative price, then too many items).
    type_into(
        &editor,
        "#ce-filters li:first-child input[data-path='min']",
        "-5",
    )
    .await;
    click(&editor, "#ce-apply").await;
    let error = until(
        &editor,
        "const e = document.querySelector('#ce-form .field-error'); return e ? e.textContent : null",
        |v| !v.is_null(),
    )
    .await;
    assert!(
        error
            .as_str()
            .unwrap()
            .contains("a price is never negative"),
        "{error}"
    );
    type_into(
        &editor,
        "#ce-filters li:first-child input[data-path='min']",
        "",
    )
    .await;
    type_into(&editor, "#ce-min", "1000").await;
    click(&editor, "#ce-apply").await;
    let error = until(
        &editor,
        "const e = document.querySelector('#ce-form .field-error'); \
         return e ? {text: e.textContent, after: e.previousElementSibling.textContent} : null",
        |v| !v.is_null(),
    )
    .await;
    assert!(
        error["after"].as_str().unwrap().contains("Minimum items"),
        "{error}"
    );
    type_into(&editor, "#ce-min", "1").await;
    click(&editor, "#ce-apply").await;
    let status = until(
        &editor,
        "return document.querySelector('#cz-table tr[data-campaign=autumn] .status')?.textContent \
           || document.getElementById('ce-error').textContent || null",
        |v| !v.is_null(),
    )
    .await;
    assert_eq!(status, "draft", "the campaign in the draft list");
    // Ahead of the configured campaign, by keyboard.
    move_up(&editor, "autumn").await;
    let order = until(
        &editor,
        "return [...document.querySelectorAll('#cz-table tr[data-campaign]')].map(r => r.dataset.campaign)",
        |v| v[0] == "autumn",
    )
    .await;
    assert_eq!(order, json!(["autumn", "configured"]));

    // The preview, as a returning shopper: the campaign, and the browser script's cards
    // with the pin first.
    editor
        .find(Locator::Id("pv-shopper"))
        .await
        .unwrap()
        .select_by_value("returning")
        .await
        .unwrap();
    click(&editor, "#pv-show").await;
    let cards = until(
        &editor,
        "const f = document.getElementById('pv-cards'); \
         return {shown: document.getElementById('pv-shown').dataset.campaign, items: f.dataset.items, \
                 html: f.srcdoc};",
        |v| v["shown"] == "autumn",
    )
    .await;
    assert_eq!(cards["items"], "C02,C05", "{cards}");
    let html = cards["html"].as_str().unwrap();
    assert!(
        html.contains("class=\"vitrine-items\"") && html.find("C02") < html.find("C05"),
        "{html}"
    );
    screenshot(&editor, "#campaigns", "console-campaigns.png").await;
    screenshot(&editor, "#campaign-preview", "console-preview.png").await;
    screenshot(&editor, "#segment-builder", "console-segment.png").await;

    // A shadow test of the draft: sampled shoppers who view C05 count trials.
    click(&editor, "#sh-start").await;
    until(
        &editor,
        "return !document.getElementById('sh-running').hidden",
        |v| v == true,
    )
    .await;
    let sampled: Vec<String> = (0..)
        .map(|n| format!("sampled-{n}"))
        .filter(|v| vitrine_engine::prequential::sampled(v))
        .take(2)
        .collect();
    tokio::task::block_in_place(|| {
        for visitor in &sampled {
            serve(
                addr,
                visitor,
                json!([{"name": "product_view", "data": {"id": "C07"}}]),
            );
            serve(
                addr,
                visitor,
                json!([{"name": "product_view", "data": {"id": "C05"}}]),
            );
        }
    });
    let trials = until(
        &editor,
        "return Number(document.getElementById('sh-trials').textContent)",
        |v| v.as_u64() >= Some(4),
    )
    .await;
    assert_eq!(trials, 4);
    screenshot(&editor, "#shadow", "console-shadow.png").await;

    // Published: the server serves it.
    click(&editor, "#cz-publish").await;
    until(
        &editor,
        "return document.getElementById('cz-message').textContent",
        |v| v.as_str().is_some_and(|t| t.starts_with("Published")),
    )
    .await;
    let shown = tokio::task::block_in_place(|| serve(addr, "after-publish", json!([])));
    assert_eq!(shown, ["C02", "C05"]);
    // With the campaign's own title over the zone.
    let answer = tokio::task::block_in_place(|| {
        post(
            addr,
            "/api/serverside",
            &json!({"appId": KEY, "secretKey": SECRET, "visitorId": "after-publish",
                "currentUrl": "https://shop.example/", "userAgent": "test", "ip": "198.51.100.30",
                "events": [], "zones": ["HP-01"]}),
        )
    });
    assert_eq!(answer["zones"]["HP-01"]["title"], "Picked for autumn");

    // The rival editor's list is stale: its publish shows the conflict and what changed.
    click(&rival, "#cz-new").await;
    type_into(&rival, "#ce-id", "late").await;
    click(&rival, "#ce-apply").await;
    until(
        &rival,
        "return !!document.querySelector('#cz-table tr[data-campaign=late]')",
        |v| v == true,
    )
    .await;
    click(&rival, "#cz-publish").await;
    let conflict = until(
        &rival,
        "const c = document.getElementById('cz-conflict'); return c.hidden ? null : c.textContent",
        |v| !v.is_null(),
    )
    .await;
    assert!(
        conflict.as_str().unwrap().contains("by merchandiser"),
        "{conflict}"
    );
    let still = tokio::task::block_in_place(|| serve(addr, "after-conflict", json!([])));
    assert_eq!(still, ["C02", "C05"], "the stale publish changed nothing");
    rival.close().await.unwrap();

    // A viewer sees no edit controls, and the list as published.
    editor.close().await.unwrap();
    let viewer = session(&driver).await;
    log_in(&viewer, addr, VIEWER).await;
    let visible = viewer
        .execute(
            "return [...document.querySelectorAll('button, #ce-form')].filter(b => b.offsetParent !== null \
               && (b.classList.contains('edit') || b.closest('.edit') || b.closest('td.actions') \
               || ['cz-new', 'cz-publish', 'sb-save', 'sh-start'].includes(b.id))).map(b => b.id || b.textContent)",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(visible, json!([]), "edit controls a viewer sees");
    let actions = viewer
        .execute(
            "return document.querySelectorAll('#cz-table td.actions, #ch-table button').length",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(actions, 0);
    screenshot(&viewer, "#campaigns", "console-viewer.png").await;
    viewer.close().await.unwrap();
    drop(driver);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_opens_its_console_from_the_address_it_prints() {
    // The embedded demo (no configuration file) prints its console's address with the
    // token of its data directory after the ready line.
    let server = tokio::task::block_in_place(|| {
        TestServer::start(
            Path::new(env!("CARGO_BIN_EXE_vitrine-loadtest"))
                .with_file_name("vitrine")
                .as_path(),
            None,
        )
        .unwrap()
    });
    let address = wait_until("the console line", || {
        server
            .stdout_lines()
            .into_iter()
            .find_map(|line| line.strip_prefix("console: ").map(str::to_owned))
    });
    assert!(
        address.starts_with(&format!("http://{}/admin/#token=", server.addr())),
        "{address}"
    );
    let driver = tokio::task::block_in_place(browser::Driver::start)
        .expect("chromedriver (Debian chromium-driver; scripts/test installs it)");
    let browser = session(&driver).await;
    browser.goto(&address).await.unwrap();
    // Logged in as an editor, with no token typed, and the token gone from the address.
    browser
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("#cz-table tbody tr[data-campaign]"))
        .await
        .expect("the campaign table");
    let state = browser
        .execute(
            "return [location.hash, document.body.classList.contains('viewer'), \
             document.getElementById('dashboard').hidden]",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(state, json!(["", false, false]));
    // The sign-in field is labelled.
    let label = browser
        .execute(
            "return document.querySelector('label[for=token]').textContent",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(label, "Admin token");
    browser.close().await.unwrap();
    drop(driver);
    drop(server);
}

/// An iPhone's user agent.
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_targeted_audience_is_sized_and_previewed_in_the_browser() {
    let server = tokio::task::block_in_place(store);
    let addr = server.addr();
    // Two returning phone shoppers (two sessions each, the latest from an iPhone) and a
    // returning shopper of no known device.
    for (visitor, latest) in [
        ("phone-0", IPHONE),
        ("phone-1", IPHONE),
        ("other-0", "test"),
    ] {
        for agent in ["test", latest] {
            tokio::task::block_in_place(|| {
                post(
                    addr,
                    "/api/serverside",
                    &json!({"appId": KEY, "secretKey": SECRET, "visitorId": visitor,
                        "currentUrl": "https://shop.example/", "userAgent": agent, "ip": "198.51.100.31",
                        "events": [], "zones": ["HP-01"]}),
                )
            });
        }
    }
    // Live: a campaign for returning phone shoppers, then one for everyone.
    let put = |path: &str, body: Value| {
        let response = client::request(
            addr,
            "PUT",
            &format!("/admin/api/accounts/{KEY}{path}"),
            &serde_json::to_vec(&body).unwrap(),
            &[
                ("authorization", &format!("Bearer {EDITOR}")),
                ("content-type", "application/json"),
            ],
        )
        .expect("an answer");
        assert_eq!(response.status, 200, "{path}: {}", response.body);
    };
    tokio::task::block_in_place(|| {
        put(
            "/segments",
            json!({"segments": [{"id": "phones", "rule": {"all": [{"visitor": "returning"}, {"device": ["mobile"]}]}}]}),
        );
        put(
            "/zones/HP-01/campaigns",
            json!({"campaigns": [
                {"id": "phones", "segment": "phones", "content": {"type": "custom", "source": {"manual": {"products": ["C05"]}}}},
                {"id": "everyone", "content": {"type": "custom", "source": {"manual": {"products": ["C01"]}}}}]}),
        );
    });
    let driver = tokio::task::block_in_place(browser::Driver::start)
        .expect("chromedriver (Debian chromium-driver; scripts/test installs it)");
    let editor = session(&driver).await;
    log_in(&editor, addr, EDITOR).await;

    // A new segment: returning (the three who came twice), then on a mobile device: the
    // two phone shoppers, counted by their latest requests.
    click(&editor, "#sb-new").await;
    type_into(&editor, "#sb-id", "returning-phones").await;
    click(&editor, "#sb-rule .add-condition").await;
    size_is(&editor, "3").await;
    click(&editor, "#sb-rule .add-condition").await;
    editor
        .execute(
            "const rows = document.querySelectorAll('#sb-rule li.condition'); \
             const select = rows[rows.length - 1].querySelector('select'); \
             select.value = 'device'; select.dispatchEvent(new Event('change'));",
            Vec::new(),
        )
        .await
        .unwrap();
    type_into(
        &editor,
        "#sb-rule li.condition[data-kind=device] input.list",
        "mobile",
    )
    .await;
    until(
        &editor,
        "return [document.getElementById('sb-json').value.includes('device'), \
           document.getElementById('sb-size').dataset.matching]",
        |v| v == &json!([true, "2"]),
    )
    .await;
    let note = editor
        .execute(
            "const n = document.getElementById('sb-size-note'); return n.offsetParent !== null && n.textContent",
            Vec::new(),
        )
        .await
        .unwrap();
    assert!(
        note.as_str().is_some_and(|t| t.contains("latest request")),
        "{note}"
    );

    // The preview as a made-up returning shopper on a phone shows the phones' campaign;
    // on a desktop, the campaign for everyone.
    let preview_as = |device: &'static str| {
        let editor = editor.clone();
        async move {
            select(&editor, "pv-shopper", "returning").await;
            select(&editor, "pv-device", device).await;
            editor
                .execute(
                    "document.getElementById('pv-shown').dataset.campaign = 'waiting';",
                    Vec::new(),
                )
                .await
                .unwrap();
            click(&editor, "#pv-show").await;
            until(
                &editor,
                "const s = document.getElementById('pv-shown').dataset.campaign; \
                 return s === 'waiting' ? null : [s, document.getElementById('pv-request').textContent]",
                |v| !v.is_null(),
            )
            .await
        }
    };
    let phone = preview_as("mobile").await;
    assert_eq!(phone[0], "phones", "{phone}");
    assert!(
        phone[1].as_str().unwrap().contains("a mobile device"),
        "{phone}"
    );
    let desktop = preview_as("desktop").await;
    assert_eq!(desktop[0], "everyone", "{desktop}");
    editor.close().await.unwrap();
    drop(driver);
    drop(server);
}

/// The campaign ids of the list shown, in order.
const ORDER: &str = "return [...document.querySelectorAll('#cz-table tr[data-campaign]')].map(r => r.dataset.campaign)";

/// The zone draft's banner: its state and text.
const BANNER: &str =
    "const b = document.getElementById('cz-draft'); return [b.dataset.state || '', b.textContent]";

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
