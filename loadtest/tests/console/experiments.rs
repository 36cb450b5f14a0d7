//! The experiments screen: an experiment made from the zone's live list and its saved
//! draft, a mistake named next to the form, started, its intervals drawn as shoppers
//! buy more from the draft, its timeline, ended; a viewer sees no controls.

use std::net::SocketAddr;

use fantoccini::Client;
use serde_json::{Value, json};
use vitrine_testkit::browser;

use super::helpers::*;

/// Opens the console and logs in with `token`, waiting for the experiments form's zones.
async fn open(browser: &Client, addr: SocketAddr, token: &str) {
    log_in_until(browser, addr, token, "#ex-zone option[value=\"HP-01\"]").await;
}

/// The experiment's status as the screen shows it.
const STATUS: &str = "const e = document.querySelector('.experiment[data-id=\"hp-test\"]'); return e ? e.dataset.status : null";

/// Whether variant B's interval of `metric` is drawn as excluding 0 (after the
/// experiments are read again).
fn significant(metric: &str) -> String {
    format!(
        "return window.vitrineExperiments.show().then(() => {{ const s = document.querySelector('.experiment[data-id=\"hp-test\"] tr[data-variant=\"B\"] svg.interval[data-metric=\"{metric}\"]'); return s ? s.classList.contains('significant') : null; }})"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_is_made_from_the_live_list_and_a_draft_started_read_and_ended() {
    let server = tokio::task::block_in_place(store);
    let addr = server.addr();
    tokio::task::block_in_place(|| {
        admin(
            addr,
            "PUT",
            "/zones/HP-01/campaigns",
            &json!({"campaigns": [manual("live", &["C01", "C02"])]}),
        );
        admin(
            addr,
            "PUT",
            "/zones/HP-01/draft",
            &json!({"campaigns": [manual("draft", &["C05", "C06"])]}),
        );
    });
    let driver = tokio::task::block_in_place(browser::Driver::start).expect("chromedriver");
    let editor = session(&driver).await;
    open(&editor, addr, EDITOR).await;

    // A mistake is named, with its path; nothing is made.
    type_into(&editor, "#ex-id", "hp-test").await;
    select(&editor, "ex-zone", "HP-01").await;
    select(&editor, "ex-b-kind", "strategy").await;
    type_into(&editor, "#ex-b-strategy", "nonsense").await;
    click(&editor, "#ex-create").await;
    let error = until(
        &editor,
        "return document.getElementById('ex-error').textContent",
        |v| v.as_str().is_some_and(|t| !t.is_empty()),
    )
    .await;
    assert!(
        error.as_str().unwrap().contains("variants[1].strategy"),
        "{error}"
    );
    assert_eq!(
        editor.execute(STATUS, Vec::new()).await.unwrap(),
        Value::Null
    );

    // The live list against the saved draft, half each.
    type_into(&editor, "#ex-id", "hp-test").await;
    type_into(&editor, "#ex-name", "Draft against live").await;
    select(&editor, "ex-zone", "HP-01").await;
    select(&editor, "ex-a-kind", "live").await;
    select(&editor, "ex-b-kind", "draft").await;
    click(&editor, "#ex-create").await;
    until(&editor, STATUS, |v| v == "draft").await;
    click(&editor, ".experiment[data-id=\"hp-test\"] .ex-start").await;
    until(&editor, STATUS, |v| v == "running").await;

    // Shoppers shown the draft buy one in two; those shown the live list one in ten.
    tokio::task::block_in_place(|| {
        for i in 0..400 {
            let visitor = format!("x-{i}");
            let shown = serve(addr, &visitor, json!([]));
            let rate = if shown == ["C05", "C06"] { 2 } else { 10 };
            if i % rate == 0 {
                let line = json!({"id": shown[0], "qty": 1, "unitprice": 20});
                let order = json!([{"name": "order", "data": {"orderid": format!("o-{visitor}"),
                    "email": format!("{visitor}@example.com"), "ordertotal": 20, "items": [line]}}]);
                serve(addr, &visitor, order);
            }
        }
    });
    until(&editor, &significant("conversion"), |v| v == true).await;
    let timeline = editor
        .execute(
            "return [...document.querySelectorAll('.experiment[data-id=\"hp-test\"] .timeline li')].map(l => l.textContent)",
            Vec::new(),
        )
        .await
        .unwrap();
    assert!(
        timeline.to_string().contains("experiment hp-test started"),
        "{timeline}"
    );
    screenshot(
        &editor,
        ".experiment[data-id=\"hp-test\"]",
        "experiment.png",
    )
    .await;

    // A change of the live list during the experiment is on its timeline; its results
    // read from that day on.
    tokio::task::block_in_place(|| {
        admin(
            addr,
            "PUT",
            "/zones/HP-01/campaigns",
            &json!({"campaigns": [manual("live", &["C02", "C01"])]}),
        );
    });
    let split =
        ".experiment[data-id=\"hp-test\"] .timeline li[data-kind=\"campaigns\"] button.split";
    until(
        &editor,
        &format!(
            "return window.vitrineExperiments.show().then(() => document.querySelector('{split}') !== null)"
        ),
        |v| v == true,
    )
    .await;
    // Unfolded by its summary, as a merchandiser would; a refresh of the list keeps it so.
    click(
        &editor,
        ".experiment[data-id=\"hp-test\"] .timeline summary",
    )
    .await;
    until(
        &editor,
        "return window.vitrineExperiments.show().then(() => document.querySelector('.experiment[data-id=\"hp-test\"] .timeline').open)",
        |v| v == true,
    )
    .await;
    click(&editor, split).await;
    let shown = until(
        &editor,
        "const p = document.getElementById('ex-split'); return p ? p.textContent : null",
        |v| !v.is_null(),
    )
    .await;
    assert!(
        shown.as_str().unwrap().starts_with("Results from "),
        "{shown}"
    );
    click(&editor, "#ex-whole").await;
    until(
        &editor,
        "return document.getElementById('ex-split') === null",
        |v| v == true,
    )
    .await;

    // A viewer reads the results and has no controls.
    let viewer = session(&driver).await;
    open(&viewer, addr, VIEWER).await;
    until(&viewer, STATUS, |v| v == "running").await;
    let hidden = viewer
        .execute(
            "return [getComputedStyle(document.getElementById('ex-form')).display, getComputedStyle(document.querySelector('.experiment[data-id=\"hp-test\"] .ex-stop')).display]",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(hidden, json!(["none", "none"]));
    viewer.close().await.unwrap();

    click(&editor, ".experiment[data-id=\"hp-test\"] .ex-end").await;
    until(&editor, STATUS, |v| v == "ended").await;
    editor.close().await.unwrap();
}

/// The holdout's status line.
const HOLDOUT_STATUS: &str = "return document.getElementById('ho-status').textContent";

/// Whether what personalization added to `metric` is drawn as excluding 0 (after the
/// holdout is read again).
fn added(metric: &str) -> String {
    format!(
        "return window.vitrineExperiments.show().then(() => {{ const s = document.querySelector('#ho-added svg.interval[data-metric=\"{metric}\"]'); return s ? s.classList.contains('significant') : null; }})"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holdout_is_switched_on_read_as_money_and_switched_off_from_the_dashboard() {
    use vitrine_engine::experiment::holdout::held_out;
    let server = tokio::task::block_in_place(store);
    let addr = server.addr();
    tokio::task::block_in_place(|| {
        admin(
            addr,
            "PUT",
            "/zones/HP-01/campaigns",
            &json!({"campaigns": [manual("live", &["C01", "C02"])]}),
        );
    });
    let driver = tokio::task::block_in_place(browser::Driver::start).expect("chromedriver");
    let editor = session(&driver).await;
    open(&editor, addr, EDITOR).await;
    until(&editor, HOLDOUT_STATUS, |v| v == "The holdout is off.").await;

    // A share out of range is named; nothing changes.
    type_into(&editor, "#ho-share", "90").await;
    editor
        .execute(
            "document.getElementById('ho-share').removeAttribute('max')",
            Vec::new(),
        )
        .await
        .unwrap();
    click(&editor, "#ho-on").await;
    let error = until(
        &editor,
        "return document.getElementById('ho-error').textContent",
        |v| v.as_str().is_some_and(|t| !t.is_empty()),
    )
    .await;
    assert!(error.as_str().unwrap().contains("share"), "{error}");

    // Half the shoppers held out, shown trending.
    type_into(&editor, "#ho-share", "50").await;
    select(&editor, "ho-strategy", "trending").await;
    click(&editor, "#ho-on").await;
    until(&editor, HOLDOUT_STATUS, |v| {
        v.as_str()
            .is_some_and(|t| t.starts_with("50 % of shoppers held out"))
    })
    .await;

    // Held-out shoppers see no list and buy one in ten; the others one in two.
    tokio::task::block_in_place(|| {
        for i in 0..300 {
            let visitor = format!("h-{i}");
            let shown = serve(addr, &visitor, json!([]));
            let held = held_out(50, &visitor);
            assert_eq!(shown == ["C01", "C02"], !held, "{visitor}: {shown:?}");
            if i % (if held { 10 } else { 2 }) == 0 {
                let line = json!({"id": "C03", "qty": 1, "unitprice": 20});
                let order = json!([{"name": "order", "data": {"orderid": format!("o-{visitor}"),
                    "userid": visitor, "ordertotal": 20, "items": [line]}}]);
                serve(addr, &visitor, order);
            }
        }
    });
    until(&editor, &added("conversion"), |v| v == true).await;
    until(&editor, &added("revenuePerVisitor"), |v| v == true).await;
    let groups = editor
        .execute(
            "return [...document.querySelectorAll('#ho-groups tbody tr')].map(r => r.dataset.group)",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(groups, json!(["personalized", "holdout"]));
    screenshot(&editor, "#holdout", "holdout.png").await;

    // A viewer reads it and cannot switch it.
    let viewer = session(&driver).await;
    open(&viewer, addr, VIEWER).await;
    until(&viewer, HOLDOUT_STATUS, |v| {
        v.as_str().is_some_and(|t| t.starts_with("50 %"))
    })
    .await;
    let hidden = viewer
        .execute(
            "return getComputedStyle(document.getElementById('ho-form')).display",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(hidden, json!("none"));
    viewer.close().await.unwrap();

    // Off: everyone sees the list again; the period's figures stay.
    click(&editor, "#ho-off").await;
    until(&editor, HOLDOUT_STATUS, |v| {
        v.as_str()
            .is_some_and(|t| t.starts_with("The holdout is off (it was on from"))
    })
    .await;
    let held = (0..300)
        .map(|i| format!("h-{i}"))
        .find(|v| held_out(50, v))
        .unwrap();
    let shown = tokio::task::block_in_place(|| serve(addr, &held, json!([])));
    assert_eq!(shown, ["C01", "C02"]);
    editor.close().await.unwrap();
}
