//! The campaign screens: segments, campaigns, previews, shadow tests (drafts and
//! restores are `drafts`).

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
pub(super) async fn draft_by(browser: &Client, author: &str) {
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
pub(super) async fn move_up(browser: &Client, campaign: &str) {
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

/// The zone draft's banner: its state and text.
pub(super) const BANNER: &str =
    "const b = document.getElementById('cz-draft'); return [b.dataset.state || '', b.textContent]";
