//! The dashboard in a real browser: headless Chromium (Debian `chromium` and
//! `chromium-driver`, which `.ci/run` installs) driven through WebDriver. A store gets a
//! catalogue whose images a loopback server serves, a seeded harness run shops it, and
//! the page, logged in with an admin token, must show the server's own numbers in its
//! zone table, charts and experiment table, live figures, and a zone preview whose items
//! have loaded images and explanations. A screenshot is written next to the test's
//! temporary files.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly where its setup does not hold"
)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fantoccini::{ClientBuilder, Locator};
use serde_json::{Value, json};
use vitrine_testkit::{TestServer, browser, client};

const ADMIN_TOKEN: &str = "dashboard-test-admin-token";
const KEY: &str = "dash-shop";
const SECRET: &str = "dash-shop-secret";
const PRODUCTS: usize = 40;
/// A 2×2 PNG (red), the image of every product.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd, 0xd4, 0x9a,
    0x73, 0x00, 0x00, 0x00, 0x12, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x42, 0x0c, 0x0c, 0x0c, 0x00, 0x16, 0xf4, 0x03, 0xfd, 0x99, 0x07, 0x8f, 0x6f, 0x00, 0x00, 0x00,
    0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

fn product_id(i: usize) -> String {
    format!("D{i:03}")
}

/// The feed a [`asset_server`] serves, set once its address (in the image URLs) is known.
type FeedSlot = Arc<Mutex<Vec<u8>>>;

/// Serves the feed at `/feed.json` and the PNG at any other path, HTTP/1.0, until the
/// test ends.
fn asset_server() -> (SocketAddr, FeedSlot) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let slot: FeedSlot = Arc::default();
    let served = Arc::clone(&slot);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let feed = served.lock().unwrap().clone();
            std::thread::spawn(move || answer(stream, &feed));
        }
    });
    (addr, slot)
}

fn answer(mut stream: TcpStream, feed: &[u8]) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    // The rest of the head.
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let (body, kind) = if line.contains("/feed.json") {
        (feed, "application/json")
    } else {
        (PNG, "image/png")
    };
    let head = format!(
        "HTTP/1.0 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

fn config() -> String {
    let zone = |id: &str, strategy: &str, fallback: &str| {
        format!(
            "\n  [[accounts.zones]]\n  id = \"{id}\"\n  title = \"{id}\"\n  type = \"recommender-product\"\n  \
             strategy = \"{strategy}\"\n  fallback = [{fallback}]\n  count = 4\n"
        )
    };
    format!(
        "[feeds]\nallow_private_addresses = true\n\n[admin]\ntokens = [\"{ADMIN_TOKEN}\"]\n\n\
         [[accounts]]\naccess_key = \"{KEY}\"\nsecret_key = \"{SECRET}\"\ndefault_currency = \"GBP\"\n{}{}{}\n  \
         [[accounts.experiments]]\n  id = \"home-test\"\n  zone = \"HP-01\"\n    \
         [[accounts.experiments.variants]]\n    name = \"A\"\n    \
         [[accounts.experiments.variants]]\n    name = \"B\"\n    strategy = \"top_sellers\"\n    fallback = [\"trending\"]\n",
        zone("HP-01", "trending", ""),
        zone("PP-01", "viewed_together", "\"trending\""),
        zone("PZ-01", "personalized", "\"trending\""),
    )
}

fn post(addr: SocketAddr, path: &str, body: &Value) -> Value {
    let response = client::post_json(addr, path, body).expect("an answer");
    assert_eq!(response.status, 200, "{path}: {}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

fn admin(addr: SocketAddr, path: &str) -> Value {
    let auth = format!("Bearer {ADMIN_TOKEN}");
    let response = client::request(addr, "GET", path, b"", &[("authorization", auth.as_str())])
        .expect("an answer");
    assert_eq!(response.status, 200, "{path}: {}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

fn wait_until<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A store with the catalogue submitted and Complete, shopped by a seeded harness run.
fn shopped_store(dir: &Path) -> TestServer {
    let server = TestServer::start(
        Path::new(env!("CARGO_BIN_EXE_vitrine-loadtest"))
            .with_file_name("vitrine")
            .as_path(),
        Some(&config()),
    )
    .unwrap();
    let addr = server.addr();
    let (assets, feed) = asset_server();
    let products: Vec<Value> = (0..PRODUCTS)
        .map(|i| {
            let id = product_id(i);
            json!({
                "Id": id,
                "Title": format!("Dashboard product {i}"),
                "Link": format!("/p/{id}"),
                "Image": format!("http://{assets}/img/{id}.png"),
                "Prices": [format!("{}.99 GBP", 5 + i)],
                "Categories": [format!("cat-{}", i % 4)],
            })
        })
        .collect();
    *feed.lock().unwrap() = serde_json::to_vec(&json!({ "Products": products })).unwrap();
    let submitted = client::post_json(
        addr,
        "/api/productfeed",
        &json!({"appKey": KEY, "secretKey": SECRET, "url": format!("http://{assets}/feed.json")}),
    )
    .expect("an answer");
    assert_eq!(submitted.status, 200, "{}", submitted.body);
    let token = submitted
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("x-feed-token"))
        .map(|(_, value)| value.clone())
        .expect("X-Feed-Token");
    wait_until("the feed to be Complete", Duration::from_secs(120), || {
        let status = post(
            addr,
            "/api/productfeedstatus",
            &json!({"AppKey": KEY, "Tokens": [token]}),
        );
        (status[0]["Status"] == "Complete").then_some(())
    });
    let ids = dir.join("ids.txt");
    let list: Vec<String> = (0..PRODUCTS).map(product_id).collect();
    std::fs::write(&ids, list.join("\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vitrine-loadtest"))
        .args(["run", "--server", &format!("http://{addr}")])
        .args(["--access-key", KEY, "--secret-key", SECRET])
        .arg("--product-ids")
        .arg(&ids)
        .args(["--sessions", "40", "--connections", "2", "--seed", "1"])
        .args(["--visitors", "60", "--usd-share", "0"])
        .args([
            "--zones",
            "homepage=HP-01;category_listing_page=HP-01;search_results=HP-01;\
             product_page=PP-01;basket_page=PP-01;order_complete_page=HP-01",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "harness run failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // One big order of a product a zone showed: revenue in the thousands, whose axis
    // labels must fit.
    let page = |events: Value| {
        post(
            addr,
            "/api/serverside",
            &json!({"appId": KEY, "secretKey": SECRET, "visitorId": "big-spender",
                "currentUrl": "https://shop.example/", "userAgent": "test", "ip": "198.51.100.20",
                "events": events, "zones": ["HP-01"]}),
        )
    };
    let shown = page(json!([{"name": "page_view", "data": {"page_type": "homepage"}}]));
    let first = shown["zones"]["HP-01"]["items"][0]["Id"]
        .as_str()
        .unwrap()
        .to_owned();
    page(
        json!([{"name": "order", "data": {"orderid": "big-1", "userid": "big-spender",
        "items": [{"id": first, "qty": 1, "unitprice": 12345.67}]}}]),
    );
    // A shopper judged by the zones' self-evaluation views what HP-01 showed.
    let judged = (0..)
        .map(|n| format!("judged-{n}"))
        .find(|v| vitrine_engine::prequential::sampled(v))
        .unwrap();
    post(
        addr,
        "/api/serverside",
        &json!({"appId": KEY, "secretKey": SECRET, "visitorId": judged,
            "currentUrl": "https://shop.example/", "userAgent": "test", "ip": "198.51.100.22",
            "events": [{"name": "product_view", "data": {"id": first}}]}),
    );
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_servers_numbers_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let server = tokio::task::block_in_place(|| shopped_store(dir.path()));
    let addr = server.addr();
    let driver = tokio::task::block_in_place(browser::Driver::start)
        .expect("chromedriver (Debian chromium-driver; scripts/test installs it)");
    let capabilities = browser::chromium(1400, 2400);
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&driver.url)
        .await
        .expect("a Chromium session");
    let wait = |what: &'static str| (what, Duration::from_secs(60));

    browser
        .goto(&format!("http://{addr}/admin/"))
        .await
        .unwrap();
    // A store key does not open it.
    let token = browser.find(Locator::Id("token")).await.unwrap();
    token.send_keys(SECRET).await.unwrap();
    click(&browser, "login-button").await;
    let (_, limit) = wait("the refusal");
    let refusal = browser
        .wait()
        .at_most(limit)
        .for_element(Locator::Css("#login-error:not(:empty)"))
        .await
        .unwrap();
    assert!(refusal.text().await.unwrap().contains("not an admin token"));
    token.clear().await.unwrap();
    token.send_keys(ADMIN_TOKEN).await.unwrap();
    click(&browser, "login-button").await;
    browser
        .wait()
        .at_most(limit)
        .for_element(Locator::Css("#zones-table tbody tr[data-zone]"))
        .await
        .expect("the zone table");

    // The zone table shows the analytics the API gives for the same range.
    let from = value(&browser, "from").await;
    let to = value(&browser, "to").await;
    let analytics = tokio::task::block_in_place(|| {
        admin(
            addr,
            &format!("/admin/api/accounts/{KEY}/analytics?from={from}&to={to}"),
        )
    });
    let zones = analytics["zones"].as_array().unwrap();
    assert!(
        zones.len() >= 3,
        "HP-01 (two variants) and PP-01: {analytics}"
    );
    let variant_b = zones
        .iter()
        .find(|z| z["zone"] == "HP-01" && z["variant"] == "B")
        .unwrap();
    assert_eq!(
        variant_b["strategy"], "top_sellers",
        "a variant's row shows its own strategy"
    );
    let mut total_answers = 0;
    for zone in zones {
        let selector = format!(
            "#zones-table tr[data-zone=\"{}\"][data-variant=\"{}\"]",
            zone["zone"].as_str().unwrap(),
            zone["variant"].as_str().unwrap()
        );
        let row = browser.find(Locator::Css(&selector)).await.unwrap();
        for (cell, key) in [
            ("answers", "answers"),
            ("impressions", "impressions"),
            ("viewed", "viewed"),
        ] {
            let shown = cell_text(&row, &format!(".{cell}")).await;
            assert_eq!(shown, zone["totals"][key].to_string(), "{selector} {cell}");
        }
        let strategy = row
            .find(Locator::Css("td:nth-child(3)"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(strategy, zone["strategy"].as_str().unwrap(), "{selector}");
        total_answers += zone["totals"]["answers"].as_u64().unwrap();
    }
    assert!(total_answers > 100, "{analytics}");
    // The charts are drawn, over the same numbers.
    let chart = browser.find(Locator::Id("chart-answers")).await.unwrap();
    assert!(
        chart.find(Locator::Css("canvas")).await.is_ok(),
        "no canvas in the answers chart"
    );
    assert_eq!(
        chart.attr("data-total").await.unwrap().unwrap(),
        total_answers.to_string()
    );
    assert_eq!(
        chart.attr("data-series").await.unwrap().unwrap(),
        zones.len().to_string()
    );
    // The revenue axis is as wide as its longest label (thousands, with decimals).
    let fit = browser
        .execute(
            r#"const chart = state.charts[2];
               const axis = chart.axes[1];
               const ctx = document.createElement("canvas").getContext("2d");
               ctx.font = axis.font[0];
               const labels = (axis._values || []).map(String);
               const widest = Math.max(...labels.map((l) => ctx.measureText(l).width)) / devicePixelRatio;
               return { labels, widest, size: axis._size, room: axis._size - axis.ticks.size - axis.gap };"#,
            Vec::new(),
        )
        .await
        .unwrap();
    let labels = fit["labels"].as_array().unwrap();
    assert!(
        labels.iter().any(|l| l.as_str().unwrap().len() >= 8),
        "revenue labels in the thousands expected: {fit}"
    );
    assert!(
        fit["widest"].as_f64().unwrap() <= fit["room"].as_f64().unwrap() + 0.5,
        "the revenue axis cuts its labels: {fit}"
    );

    // The experiment table shows the API's verdicts.
    let experiments = tokio::task::block_in_place(|| {
        admin(addr, &format!("/admin/api/accounts/{KEY}/experiments"))
    });
    let variant_b = &experiments["experiments"][0]["variants"][1];
    let row = browser
        .find(Locator::Css(
            ".experiment[data-id=\"home-test\"] tr[data-variant=\"B\"]",
        ))
        .await
        .unwrap();
    let verdicts: Vec<String> = futures_text(&row, ".verdict").await;
    let expected: Vec<String> = variant_b["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(verdicts, expected);
    assert_eq!(
        cell_text(&row, ".visitors").await,
        variant_b["counts"]["visitors"].to_string()
    );

    // The predictions table shows what the API gives for each judged zone.
    let predictions = tokio::task::block_in_place(|| {
        admin(addr, &format!("/admin/api/accounts/{KEY}/predictions"))
    });
    let judged = predictions["zones"].as_array().unwrap();
    assert!(!judged.is_empty(), "a judged shopper: {predictions}");
    for zone in judged {
        let selector = format!(
            "#predictions-table tr[data-zone=\"{}\"]",
            zone["zone"].as_str().unwrap()
        );
        let row = browser.find(Locator::Css(&selector)).await.unwrap();
        for (cell, key) in [("trials", "trials"), ("hits-total", "hitsTotal")] {
            let shown = cell_text(&row, &format!(".{cell}")).await;
            assert_eq!(shown, zone[key].to_string(), "{selector} .{cell}");
        }
    }

    // The self-tuning table shows what the models endpoint gives: the lists' and
    // personalized's active settings, their trials and switches.
    let models =
        tokio::task::block_in_place(|| admin(addr, &format!("/admin/api/accounts/{KEY}/models")));
    let number = |v: &Value| {
        let x = v.as_f64().unwrap();
        if x.fract() == 0.0 {
            format!("{x:.0}")
        } else {
            x.to_string()
        }
    };
    let recipe = &models["recipe"]["active"];
    let co_view = &models["active"];
    for (kind, report, active) in [
        (
            "recipe",
            &models["recipe"],
            format!(
                "history {}, long-term {}, sessions {}, popularity {}, purchases {}",
                number(&recipe["history"]),
                number(&recipe["longTerm"]),
                number(&recipe["sessions"]),
                number(&recipe["popularity"]),
                number(&recipe["purchases"])
            ),
        ),
        (
            "co-view",
            &models,
            format!(
                "window {}, damping {}, direction {}",
                number(&co_view["coViewWindow"]),
                number(&co_view["partnerDamping"]),
                number(&co_view["coViewForward"])
            ),
        ),
    ] {
        let selector = format!("#tuning-table tr[data-kind=\"{kind}\"]");
        let row = browser.find(Locator::Css(&selector)).await.unwrap();
        assert_eq!(
            cell_text(&row, ".active").await,
            active,
            "{selector}: {models}"
        );
        assert_eq!(
            cell_text(&row, ".switches").await,
            report["switches"].as_array().unwrap().len().to_string(),
            "{selector}"
        );
    }
    assert_eq!(models["recipe"]["zone"], "PZ-01", "{models}");

    // Live figures arrive: each poll covers the requests since the one before, so
    // requests keep coming while the page polls (a slow machine polls more than once
    // before the check).
    let traffic = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sender = {
        let traffic = std::sync::Arc::clone(&traffic);
        std::thread::spawn(move || {
            while traffic.load(std::sync::atomic::Ordering::Relaxed) {
                post(
                    addr,
                    "/api/serverside",
                    &json!({"appId": KEY, "secretKey": SECRET, "visitorId": "live-traffic",
                        "currentUrl": "https://shop.example/", "userAgent": "test",
                        "ip": "198.51.100.21", "zones": ["HP-01"]}),
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let live = browser
        .wait()
        .at_most(limit)
        .for_element(Locator::XPath(
            "//dd[@id='live-p50' and contains(text(), 'ms')]",
        ))
        .await;
    traffic.store(false, std::sync::atomic::Ordering::Relaxed);
    sender.join().unwrap();
    live.expect("live latency");

    // The zone preview: PP-01 on a product's page, items with loaded images and reasons.
    let product = product_id(3);
    browser
        .find(Locator::Id("preview-product"))
        .await
        .unwrap()
        .send_keys(&product)
        .await
        .unwrap();
    let select = browser.find(Locator::Id("preview-zone")).await.unwrap();
    select.select_by_value("PP-01").await.unwrap();
    click(&browser, "preview-button").await;
    browser
        .wait()
        .at_most(limit)
        .for_element(Locator::Css("#preview-items .item"))
        .await
        .expect("preview items");
    let explain = tokio::task::block_in_place(|| {
        admin(
            addr,
            &format!("/admin/api/accounts/{KEY}/explain?zone=PP-01&product={product}"),
        )
    });
    let expected: Vec<String> = explain["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(expected.len(), 4, "{explain}");
    // Every image loaded (from the loopback image server), every item explained.
    let loaded = wait_for_script(
        &browser,
        "return Array.from(document.querySelectorAll('#preview-items .item')).map(li => ({
            id: li.dataset.id,
            image: li.querySelector('img') ? li.querySelector('img').naturalWidth : 0,
            title: li.querySelector('.title').textContent,
            evidence: li.querySelectorAll('.evidence li').length,
        }))",
        |v| {
            v.as_array()
                .is_some_and(|a| a.iter().all(|i| i["image"].as_u64() > Some(0)))
        },
    )
    .await;
    let items = loaded.as_array().unwrap();
    let ids: Vec<String> = items
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, expected);
    for (item, explained) in items.iter().zip(explain["items"].as_array().unwrap()) {
        assert_eq!(item["title"], explained["title"]);
        assert_eq!(
            item["evidence"].as_u64().unwrap() as usize,
            explained["evidence"].as_array().unwrap().len()
        );
    }

    let png = browser.screenshot().await.unwrap();
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    std::fs::write(&shot, png).unwrap();
    println!("screenshot: {}", shot.display());
    browser.close().await.unwrap();
    drop(driver);
    drop(server);
}

/// The value of the input with id `id`.
async fn value(browser: &fantoccini::Client, id: &str) -> String {
    browser
        .find(Locator::Id(id))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap()
}

/// Clicks the element with id `id`.
async fn click(browser: &fantoccini::Client, id: &str) {
    browser
        .find(Locator::Id(id))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// The text of the first element under `row` matching `css`.
async fn cell_text(row: &fantoccini::elements::Element, css: &str) -> String {
    row.find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The text of every element under `parent` matching `css`.
async fn futures_text(parent: &fantoccini::elements::Element, css: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for element in parent.find_all(Locator::Css(css)).await.unwrap() {
        texts.push(element.text().await.unwrap());
    }
    texts
}

/// Runs `script` until `done` says its value is ready (within a minute).
async fn wait_for_script(
    browser: &fantoccini::Client,
    script: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let value = browser.execute(script, Vec::new()).await.unwrap();
        if done(&value) {
            return value;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "script never ready: {value}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
