//! What the console's browser tests share: the store, its requests and the browser's steps.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use vitrine_testkit::{TestServer, browser, client, records};

pub(crate) const EDITOR: &str = "console-editor-token-0123456789";
pub(crate) const VIEWER: &str = "console-viewer-token-0123456789";
pub(crate) const KEY: &str = "console-shop";
pub(crate) const SECRET: &str = "console-shop-secret";
pub(crate) const WAIT: Duration = Duration::from_secs(60);

pub(crate) fn config() -> String {
    format!(
        r#"
[admin]
tokens = [{{ token = "{EDITOR}", label = "merchandiser" }}, {{ token = "{VIEWER}", role = "viewer", label = "analyst" }}]
[[accounts]]
access_key = "{KEY}"
secret_key = "{SECRET}"
default_currency = "GBP"
time_zone = "Europe/London"
  [[accounts.zones]]
  id = "HP-01"
  title = "For you"
  type = "recommender-product"
  strategy = "trending"
  count = 4
  [[accounts.zones]]
  id = "PP-01"
  title = "Also viewed"
  type = "recommender-product"
  strategy = "trending"
  count = 4
"#
    )
}

pub(crate) fn post(addr: SocketAddr, path: &str, body: &Value) -> Value {
    let response = client::post_json(addr, path, body).expect("an answer");
    assert_eq!(response.status, 200, "{path}: {}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

pub(crate) fn wait_until<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(started.elapsed() < WAIT * 2, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A store of twelve products by delta, and three shoppers seen once.
pub(crate) fn store() -> TestServer {
    let server = TestServer::start(
        Path::new(env!("CARGO_BIN_EXE_vitrine-loadtest"))
            .with_file_name("vitrine")
            .as_path(),
        Some(&config()),
    )
    .unwrap();
    let addr = server.addr();
    let products: Vec<Value> = (1..=12)
        .map(|i| {
            records::with(
                records::product(&format!("C{i:02}"), &format!("{}.00 GBP", 10 * i)),
                json!({"Title": format!("Console product {i}"), "Categories": [format!("cat-{}", i % 3)]}),
            )
        })
        .collect();
    let delta = post(
        addr,
        "/api/delta",
        &json!({"AppKey": KEY, "SecretKey": SECRET, "Products": products}),
    );
    let token = delta["Token"].as_str().unwrap().to_owned();
    wait_until("the delta", || {
        let status = post(
            addr,
            "/api/deltastatus",
            &json!({"AppKey": KEY, "SecretKey": SECRET, "Tokens": [token]}),
        );
        (status[0]["Status"].as_i64().unwrap_or(0) != 0).then_some(())
    });
    for visitor in ["shopper-1", "shopper-2", "shopper-3"] {
        serve(addr, visitor, json!([]));
    }
    server
}

/// A serverside request of `visitor` with `events`, for HP-01; the ids it shows.
pub(crate) fn serve(addr: SocketAddr, visitor: &str, events: Value) -> Vec<String> {
    let answer = post(
        addr,
        "/api/serverside",
        &json!({"appId": KEY, "secretKey": SECRET, "visitorId": visitor,
            "currentUrl": "https://shop.example/", "userAgent": "test", "ip": "198.51.100.30",
            "events": events, "zones": ["HP-01"]}),
    );
    answer["zones"]["HP-01"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) async fn session(driver: &browser::Driver) -> Client {
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(browser::chromium(1400, 3200))
        .connect(&driver.url)
        .await
        .expect("a Chromium session")
}

/// Opens the dashboard and logs in with `token`, waiting for the campaign table.
pub(crate) async fn log_in(browser: &Client, addr: SocketAddr, token: &str) {
    log_in_until(browser, addr, token, "#cz-table tbody tr[data-campaign]").await;
}

/// Opens the dashboard and logs in with `token`, waiting for the element `css` selects
/// and for every part of the page to have loaded (nothing then moves what is clicked).
pub(crate) async fn log_in_until(browser: &Client, addr: SocketAddr, token: &str, css: &str) {
    browser
        .goto(&format!("http://{addr}/admin/"))
        .await
        .unwrap();
    browser
        .find(Locator::Id("token"))
        .await
        .unwrap()
        .send_keys(token)
        .await
        .unwrap();
    click(browser, "#login-button").await;
    browser
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .expect(css);
    until(
        browser,
        "return document.body.dataset.loading || null",
        Value::is_null,
    )
    .await;
}

/// Clicks the element `css` selects, once it is there.
pub(crate) async fn click(browser: &Client, css: &str) {
    browser
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .expect(css)
        .click()
        .await
        .expect(css);
}

/// Chooses `value` in the select element with id `id`.
pub(crate) async fn select(browser: &Client, id: &str, value: &str) {
    browser
        .find(Locator::Id(id))
        .await
        .unwrap()
        .select_by_value(value)
        .await
        .unwrap();
}

pub(crate) async fn type_into(browser: &Client, css: &str, text: &str) {
    let field = browser.find(Locator::Css(css)).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys(text).await.unwrap();
}

/// Runs `script` until `done` holds of its value (within [`WAIT`]).
pub(crate) async fn until(browser: &Client, script: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let value = browser.execute(script, Vec::new()).await.unwrap();
        if done(&value) {
            return value;
        }
        let timed_out = started.elapsed() >= WAIT;
        let said = if timed_out {
            page_says(browser).await
        } else {
            Value::Null
        };
        assert!(
            !timed_out,
            "never ready: {script} gave {value}; the page says {said}"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// What the page tells its user at the moment: every status line, error line and draft
/// banner with text (by id), for a failure's message.
async fn page_says(browser: &Client) -> Value {
    browser
        .execute(
            "const said = {}; \
             for (const e of document.querySelectorAll('[id$=\"-error\"], [id$=\"-message\"], \
                  [id$=\"-draft\"], [role=\"status\"], [role=\"alert\"]')) { \
               if (e.textContent.trim()) said[e.id || e.tagName] = e.textContent.trim(); \
             } \
             return said;",
            Vec::new(),
        )
        .await
        .unwrap_or_else(|error| json!(format!("(not read: {error})")))
}

/// A screenshot of the element `css` selects, written as `name`.
pub(crate) async fn screenshot(browser: &Client, css: &str, name: &str) {
    let element = browser.find(Locator::Css(css)).await.unwrap();
    let png = element.screenshot().await.unwrap();
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&shot, png).unwrap();
    println!("screenshot: {}", shot.display());
}

/// An admin call with the editor's token; the answer's JSON (a 200 expected).
pub(crate) fn admin(addr: SocketAddr, method: &str, path: &str, body: &Value) -> Value {
    let response = client::request(
        addr,
        method,
        &format!("/admin/api/accounts/{KEY}{path}"),
        &serde_json::to_vec(body).unwrap(),
        &[("authorization", &format!("Bearer {EDITOR}"))],
    )
    .expect("an answer");
    assert_eq!(response.status, 200, "{path}: {}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

/// A campaign showing exactly `products`.
pub(crate) fn manual(id: &str, products: &[&str]) -> Value {
    json!({"id": id, "content": {"type": "custom", "source": {"manual": {"products": products}}}})
}
