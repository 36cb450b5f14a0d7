//! The backtest beside the shadow test: sampled shoppers who view one product and then
//! another are kept as judged moments; the zone's saved draft, which shows what they
//! viewed next, is backtested from the console, with its figures and the exposure each
//! product gains or loses drawn as bars.

use serde_json::json;
use vitrine_testkit::browser;

use super::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_draft_is_backtested_from_the_console_with_its_exposure_drawn() {
    let server = tokio::task::block_in_place(store);
    let addr = server.addr();
    let draft = json!({"campaigns": [manual("next", &["C05", "C06"])]});
    tokio::task::block_in_place(|| {
        admin(
            addr,
            "PUT",
            "/zones/HP-01/campaigns",
            &json!({"campaigns": [manual("live", &["C01", "C02"])]}),
        );
        admin(addr, "PUT", "/zones/HP-01/draft", &draft);
        // Sampled shoppers view C07, then C05 (judged, at most ten a second).
        let mut shoppers = (0..)
            .map(|n| format!("sampled-{n}"))
            .filter(|v| vitrine_engine::prequential::sampled(v));
        wait_until("ten judged moments", || {
            let shopper = shoppers.next().unwrap();
            for product in ["C07", "C05"] {
                serve(
                    addr,
                    &shopper,
                    json!([{"name": "product_view", "data": {"id": product}}]),
                );
            }
            let answer = admin(addr, "POST", "/zones/HP-01/backtest", &draft);
            (answer["moments"].as_u64() >= Some(10)).then_some(())
        });
    });
    let driver = tokio::task::block_in_place(browser::Driver::start).expect("chromedriver");
    let editor = session(&driver).await;
    log_in(&editor, addr, EDITOR).await;
    until(
        &editor,
        "return [...document.querySelectorAll('#cz-table tr[data-campaign]')].map(r => r.dataset.campaign)",
        |v| v == &json!(["next"]),
    )
    .await;
    click(&editor, "#bt-run").await;
    let figures = until(
        &editor,
        "return document.getElementById('bt-result').hidden ? null : \
           {moments: document.getElementById('bt-moments').textContent, \
            hits: document.getElementById('bt-diff-hits').textContent, \
            reach: document.getElementById('bt-reach-draft').textContent, \
            bars: [...document.querySelectorAll('#bt-exposure rect')].map(r => [r.dataset.product, Number(r.dataset.change), r.getAttribute('class')])}",
        |v| !v.is_null(),
    )
    .await;
    let moments: u64 = figures["moments"]
        .as_str()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(moments >= 10, "{figures}");
    // The draft shows C05, which every judged shopper viewed next: a gain whose
    // interval excludes 0.
    let hits = figures["hits"].as_str().unwrap();
    assert!(
        hits.starts_with('+') && hits.contains("95 %: +"),
        "{figures}"
    );
    assert!(
        figures["reach"].as_str().unwrap().starts_with("next: "),
        "{figures}"
    );
    let bars = figures["bars"].as_array().unwrap();
    let bar = |product: &str| {
        bars.iter()
            .find(|b| b[0] == product)
            .unwrap_or_else(|| panic!("no bar for {product}: {figures}"))
    };
    assert!(bar("C05")[1].as_i64().unwrap() > 0 && bar("C05")[2] == "gained");
    assert!(bar("C01")[1].as_i64().unwrap() < 0 && bar("C01")[2] == "lost");
    screenshot(&editor, "#bt-result", "console-backtest.png").await;
    editor.close().await.unwrap();
}
