//! The client-side integration in a real browser: headless Chromium (Debian `chromium`
//! and `chromium-driver`, which `scripts/test` installs) loads store pages shaped like
//! the vendor plugins' (`tests/fixtures/clientside/`) from a loopback web server of
//! their own, so that every call to `vitrine` is cross-origin, with the script loaded
//! from `vitrine` as the plugins load it (`PURECLARITY_SCRIPT_URL` + key + `/cs.js`).
//! The test checks what reaches the visitor's state (through the admin API and a later
//! serverside call), the filled zones against the admin explain endpoint, a counted
//! click, `callback_event`, the visitor id across pages, consent, and a refused origin;
//! and that a page with the loader twice sends one request and keeps a five-minute
//! session cookie.
//! It writes a screenshot of a filled page and prints the median time from
//! `DOMContentLoaded` to zones filled over 20 loads (a figure, never asserted).

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly where its setup does not hold"
)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};
use vitrine_testkit::{TestServer, browser, client};

const KEY: &str = "cs-shop";
const SECRET: &str = "cs-shop-secret";
const CONSENT_KEY: &str = "consent-shop";
const ADMIN_TOKEN: &str = "clientside-browser-admin-token";
const LIMIT: Duration = Duration::from_secs(60);

/// The demo's zones, for each of the test's accounts.
fn demo_zones() -> &'static str {
    let demo = include_str!("../../http/src/demo.toml");
    let at = demo.find("  [[accounts.zones]]").unwrap();
    &demo[at..]
}

fn config(store: &str) -> String {
    let account = |key: &str, secret: &str, consent: &str| {
        format!(
            "[[accounts]]\naccess_key = \"{key}\"\nsecret_key = \"{secret}\"\n\
             default_currency = \"GBP\"\ndemo_catalogue = true\n\
             [accounts.clientside]\nallowed_origins = [\"{store}\"]\nconsent = \"{consent}\"\n{}\n",
            demo_zones()
        )
    };
    format!(
        "[admin]\ntokens = [\"{ADMIN_TOKEN}\"]\n\n{}{}",
        account(KEY, SECRET, "none"),
        account(CONSENT_KEY, "consent-shop-secret", "required")
    )
}

/// A store's web server: the fixture pages with the script's base and the access key
/// (`?key=`, else the first account's) filled in, 404 for anything else.
fn store_server(vitrine: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve_page(stream, vitrine));
        }
    });
    addr
}

fn serve_page(mut stream: TcpStream, vitrine: SocketAddr) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let key = query.strip_prefix("key=").unwrap_or(KEY);
    let name = path.trim_start_matches('/');
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/clientside")
        .join(name);
    let (status, body) = match std::fs::read_to_string(&file) {
        Ok(page) if name.ends_with(".html") && !name.contains('/') => (
            "200 OK",
            page.replace("{{SCRIPT_BASE}}", &format!("http://{vitrine}/"))
                .replace("{{ACCESS_KEY}}", key),
        ),
        _ => ("404 Not Found", "<h1>Not found</h1>".to_owned()),
    };
    let head = format!(
        "HTTP/1.0 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

fn admin(addr: SocketAddr, path: &str) -> Value {
    let response = client::request(
        addr,
        "GET",
        path,
        b"",
        &[("Authorization", &format!("Bearer {ADMIN_TOKEN}"))],
    )
    .expect("an answer");
    assert_eq!(response.status, 200, "{path}: {}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

fn visitors(addr: SocketAddr, key: &str) -> u64 {
    let accounts = admin(addr, "/admin/api/accounts");
    accounts["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["accessKey"] == key)
        .map(|a| a["visitors"].as_u64().unwrap())
        .unwrap()
}

fn explain(addr: SocketAddr, zone: &str, visitor: &str, product: &str) -> Value {
    admin(
        addr,
        &format!(
            "/admin/api/accounts/{KEY}/explain?zone={zone}&visitor={visitor}&product={product}"
        ),
    )
}

async fn run(browser: &Client, script: &str) -> Value {
    browser.execute(script, vec![]).await.unwrap()
}

/// Waits (up to a minute) until `script` returns something other than null or false.
async fn until(browser: &Client, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + LIMIT;
    loop {
        let value = run(browser, script).await;
        if !value.is_null() && value != Value::Bool(false) {
            return value;
        }
        assert!(Instant::now() < deadline, "{what} within {LIMIT:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the server's answer `check` holds.
async fn until_server<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(found) = tokio::task::block_in_place(&mut check) {
            return found;
        }
        assert!(Instant::now() < deadline, "{what} within {LIMIT:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The state a zone element is in once the script is done with it.
fn state_of(selector: &str) -> String {
    format!(
        "const el = document.querySelector({selector:?}); return el && el.getAttribute('data-vitrine-state');"
    )
}

fn items_of(selector: &str) -> String {
    format!(
        "return [...document.querySelectorAll({:?})].map(e => e.getAttribute('data-pc-item'));",
        format!("{selector} [data-pc-item]")
    )
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_pages_track_and_fill_their_zones_in_a_real_browser() {
    let Shop {
        server,
        store,
        // Kept to the end: dropping it stops chromedriver.
        driver: _driver,
        browser,
    } = shop().await;
    let addr = server.addr();
    // A store the account does not allow.
    let other = store_server(addr);

    // A WooCommerce product page: page view, product view, customer details and basket.
    let product_page = format!("http://{store}/woocommerce-product.html");
    browser.goto(&product_page).await.unwrap();
    let pp01 = ".pureclarity_bmz_PP-01";
    assert_eq!(
        until(&browser, "PP-01 filled", &state_of(pp01)).await,
        "filled"
    );
    let visitor = until(
        &browser,
        "the visitor id kept",
        &format!("return localStorage.getItem('pc_v_{KEY}');"),
    )
    .await
    .as_str()
    .unwrap()
    .to_owned();
    assert!(
        run(&browser, "return document.cookie;")
            .await
            .as_str()
            .unwrap()
            .contains(&format!("pc_v_{KEY}={visitor}"))
    );
    // The zone shows what explain says serving gives this visitor on this page.
    let shown = strings(&run(&browser, &items_of(pp01)).await);
    let explained = explain(addr, "PP-01", &visitor, "P00042");
    let expected: Vec<String> = explained["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(shown, expected);
    assert!(!shown.is_empty());
    // The visitor's state has the view and the basket (118 is no product of the demo);
    // P00007, in the basket without a view of its page, is a step of the visit too,
    // the latest.
    let history = &explained["history"];
    assert_eq!(history["recentViews"], json!(["P00007", "P00042"]));
    assert_eq!(history["basket"], json!(["P00007"]));
    // A later serverside call for the same visitor sees the view.
    let serverside = client::post_json(
        addr,
        "/api/serverside",
        &json!({"appId": KEY, "secretKey": SECRET, "currentUrl": "https://shop.example/",
                "userAgent": "test", "ip": "198.51.100.9", "visitorId": visitor,
                "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
                "zones": ["PP-02"]}),
    )
    .unwrap();
    let answer: Value = serde_json::from_str(&serverside.body).unwrap();
    assert_eq!(
        answer["zones"]["PP-02"]["items"][0]["Id"], "P00042",
        "{answer}"
    );

    // A click on an item is counted for its zone.
    run(
        &browser,
        &format!(
            "document.querySelector({:?}).click(); return true;",
            format!("{pp01} [data-pc-item]")
        ),
    )
    .await;
    until_server("the click counted", || {
        let analytics = admin(addr, &format!("/admin/api/accounts/{KEY}/analytics"));
        analytics["zones"]
            .as_array()
            .unwrap()
            .iter()
            .find(|z| z["zone"] == "PP-01" && z["totals"]["clicked"] == 1)
            .map(|_| ())
    })
    .await;

    // The screenshot of a filled page.
    let png = browser.screenshot().await.unwrap();
    let shot = std::env::temp_dir().join("vitrine-clientside.png");
    std::fs::write(&shot, png).unwrap();
    println!("screenshot of a filled store page: {}", shot.display());

    // The visitor id survives a reload and a second page, whose order is recorded.
    browser.refresh().await.unwrap();
    until(&browser, "PP-01 filled again", &state_of(pp01)).await;
    let again = run(
        &browser,
        &format!("return localStorage.getItem('pc_v_{KEY}');"),
    )
    .await;
    assert_eq!(again, visitor);
    browser
        .goto(&format!("http://{store}/woocommerce-order-complete.html"))
        .await
        .unwrap();
    let oc01 = ".pureclarity_bmz_OC-01";
    assert_eq!(
        until(&browser, "OC-01 filled", &state_of(oc01)).await,
        "filled"
    );
    // OC-02 is no zone of the account: it keeps what it had.
    assert_eq!(
        run(&browser, &state_of(".pureclarity_bmz_OC-02")).await,
        "empty"
    );
    let third = run(
        &browser,
        &format!("return localStorage.getItem('pc_v_{KEY}');"),
    )
    .await;
    assert_eq!(third, visitor);
    until_server("the order in the visitor's purchases", || {
        let history = explain(addr, "PP-01", &visitor, "")["history"].clone();
        (history["purchased"] == json!(["P00042"])).then_some(())
    })
    .await;

    // Magento's home page: a hidden zone is shown once filled, an unknown one stays
    // hidden with its fallback, and callback_event runs after filling.
    browser
        .goto(&format!("http://{store}/magento-home.html"))
        .await
        .unwrap();
    let hp01 = "[data-pureclarity-bmz-id=\"HP-01\"]";
    assert_eq!(
        until(&browser, "HP-01 filled", &state_of(hp01)).await,
        "filled"
    );
    let display =
        |selector: &str| format!("return document.querySelector({selector:?}).style.display;");
    assert_eq!(run(&browser, &display(hp01)).await, "");
    let hp02 = "[data-pureclarity-bmz-id=\"HP-02\"]";
    assert_eq!(run(&browser, &display(hp02)).await, "none");
    let fallback = format!("return document.querySelector({hp02:?}).textContent;");
    assert!(
        run(&browser, &fallback)
            .await
            .as_str()
            .unwrap()
            .contains("Spring collection")
    );
    let count = strings(&run(&browser, &items_of(hp01)).await).len();
    let log = until(
        &browser,
        "callback_event to run",
        "return document.getElementById('callback-log').textContent || null;",
    )
    .await;
    assert_eq!(log, format!("callback bmz: {count} items"));

    // Magento's basket page: the shopper logged out (a new visitor), then a set_basket
    // after load is sent on its own.
    browser
        .goto(&format!("http://{store}/magento-basket.html"))
        .await
        .unwrap();
    let bp01 = "[data-pureclarity-bmz-id=\"BP-01\"]";
    assert_eq!(
        until(&browser, "BP-01 filled", &state_of(bp01)).await,
        "filled"
    );
    let shopper = until(
        &browser,
        "a new visitor id",
        &format!("return localStorage.getItem('pc_v_{KEY}');"),
    )
    .await
    .as_str()
    .unwrap()
    .to_owned();
    assert_ne!(shopper, visitor, "a logout starts a new visitor");
    run(
        &browser,
        "document.getElementById('add-to-cart').click(); return true;",
    )
    .await;
    until_server("the basket after load", || {
        let history = explain(addr, "PP-01", &shopper, "")["history"].clone();
        (history["basket"] == json!(["P00007", "P00118"])).then_some(())
    })
    .await;

    // Consent required: the zones are filled, nothing is kept or tracked until the page
    // gives consent.
    let before = visitors(addr, CONSENT_KEY);
    browser
        .goto(&format!(
            "http://{store}/woocommerce-product.html?key={CONSENT_KEY}"
        ))
        .await
        .unwrap();
    assert_eq!(
        until(&browser, "PP-01 filled without consent", &state_of(pp01)).await,
        "filled"
    );
    let kept = format!(
        "return document.cookie.includes('{CONSENT_KEY}') || Object.keys(localStorage).some(k => k.includes('{CONSENT_KEY}'));"
    );
    assert_eq!(run(&browser, &kept).await, false);
    assert_eq!(visitors(addr, CONSENT_KEY), before);
    run(&browser, "_pc('consent', true); return true;").await;
    until(
        &browser,
        "the visitor id kept once consent is given",
        &format!("return localStorage.getItem('pc_v_{CONSENT_KEY}');"),
    )
    .await;
    assert_eq!(visitors(addr, CONSENT_KEY), before + 1);

    // A page from an origin the account does not allow: refused, nothing filled.
    browser
        .goto(&format!("http://{other}/woocommerce-product.html"))
        .await
        .unwrap();
    assert_eq!(
        until(&browser, "PP-01 refused", &state_of(pp01)).await,
        "failed"
    );
    let pp02 = ".pureclarity_bmz_PP-02";
    let fallback = format!("return document.querySelector({pp02:?}).textContent;");
    assert!(
        run(&browser, &fallback)
            .await
            .as_str()
            .unwrap()
            .contains("You may also like our bestsellers")
    );

    // From DOMContentLoaded to the zones filled, over 20 loads of the product page.
    let mut took = Vec::new();
    for _ in 0..20 {
        browser.goto(&product_page).await.unwrap();
        let ms = until(
            &browser,
            "the zones filled",
            "const m = performance.getEntriesByName('vitrine:zones-filled')[0];\
             const n = performance.getEntriesByType('navigation')[0];\
             return m && n ? m.startTime - n.domContentLoadedEventStart : null;",
        )
        .await;
        took.push(ms.as_f64().unwrap());
    }
    took.sort_by(f64::total_cmp);
    println!(
        "DOMContentLoaded to zones filled, 20 loads: median {:.1} ms (min {:.1}, max {:.1})",
        (took[9] + took[10]) / 2.0,
        took[0],
        took[19]
    );
    browser.close().await.unwrap();
}

/// A Vitrine server, a store serving the fixture pages from the origin it allows, and a
/// Chromium session.
struct Shop {
    server: TestServer,
    store: SocketAddr,
    driver: browser::Driver,
    browser: Client,
}

async fn shop() -> Shop {
    // The store's origin is known before the server starts: its listener is bound first.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let store = listener.local_addr().unwrap();
    let server = TestServer::start(
        Path::new(env!("CARGO_BIN_EXE_vitrine-loadtest"))
            .with_file_name("vitrine")
            .as_path(),
        Some(&config(&format!("http://{store}"))),
    )
    .unwrap();
    let addr = server.addr();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve_page(stream, addr));
        }
    });
    let driver = tokio::task::block_in_place(browser::Driver::start)
        .expect("chromedriver (Debian chromium-driver; scripts/test installs it)");
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(browser::chromium(1200, 1600))
        .connect(&driver.url)
        .await
        .expect("a Chromium session");
    Shop {
        server,
        store,
        driver,
        browser,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loader_included_twice_sends_one_request_and_the_session_cookie_lasts_five_minutes() {
    let Shop {
        server,
        store,
        driver,
        browser,
    } = shop().await;
    let addr = server.addr();
    browser
        .goto(&format!("http://{store}/magento-home-twice.html"))
        .await
        .unwrap();
    assert_eq!(
        until(
            &browser,
            "HP-01 filled",
            &state_of("[data-pureclarity-bmz-id='HP-01']")
        )
        .await,
        "filled"
    );
    // Both script elements ran; one request left the page.
    let scripts = run(
        &browser,
        "return document.querySelectorAll('script[src$=\"/cs.js\"]').length;",
    )
    .await;
    assert_eq!(scripts, 2);
    // Give a second request (had there been one) time to be sent: the page's own
    // debounce is 250 ms, so wait until a full second has passed since the fill.
    until(
        &browser,
        "a second after the fill",
        "const m = performance.getEntriesByName('vitrine:zones-filled')[0]; \
         return m && performance.now() - m.startTime > 1000;",
    )
    .await;
    let requests = run(
        &browser,
        "return performance.getEntriesByType('resource')\
           .filter(e => e.name.includes('/api/clientside/')).length;",
    )
    .await;
    assert_eq!(requests, 1, "requests to the browser endpoint");
    let callbacks = run(
        &browser,
        "return document.getElementById('callback-log').textContent;",
    )
    .await;
    assert!(
        callbacks.as_str().unwrap().starts_with("callback bmz"),
        "{callbacks}"
    );
    // The server answered HP-01 once.
    let answers = || {
        let analytics = admin(addr, &format!("/admin/api/accounts/{KEY}/analytics"));
        analytics["zones"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|z| z["zone"] == "HP-01")
            .map(|z| z["totals"]["answers"].as_u64().unwrap())
            .sum::<u64>()
    };
    until_server("HP-01's answer counted", || (answers() > 0).then_some(())).await;
    assert_eq!(tokio::task::block_in_place(answers), 1);

    // The session cookie expires five minutes after the answer that set it.
    let cookies = browser.get_all_cookies().await.unwrap();
    let session = cookies
        .iter()
        .find(|c| c.name() == format!("pc_sessid_{KEY}"))
        .expect("the session cookie");
    let expires = session
        .expires_datetime()
        .expect("an expiry")
        .unix_timestamp();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let left = expires - now;
    assert!(
        (240..=300).contains(&left),
        "{left} s left of the session cookie"
    );
    browser.close().await.unwrap();
    drop(driver);
    drop(server);
}

/// Consent required: before the shopper accepts, the one request the page sends holds
/// only what fills its zones (their ids, the page's product, the currency); after, the
/// page's events go, and tracking starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_consent_only_what_fills_the_zones_leaves_the_page() {
    let Shop {
        server,
        store,
        driver,
        browser,
    } = shop().await;
    let addr = server.addr();
    let before = visitors(addr, CONSENT_KEY);
    browser
        .goto(&format!(
            "http://{store}/woocommerce-product-consent.html?key={CONSENT_KEY}"
        ))
        .await
        .unwrap();
    let pp01 = ".pureclarity_bmz_PP-01";
    assert_eq!(
        until(&browser, "PP-01 filled without consent", &state_of(pp01)).await,
        "filled"
    );
    let sent = || async {
        let bodies = run(&browser, "return window.sentBodies;").await;
        strings(&bodies)
            .iter()
            .map(|body| serde_json::from_str::<Value>(body).unwrap())
            .collect::<Vec<Value>>()
    };
    let bodies = sent().await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let first = bodies[0].as_object().unwrap();
    let mut fields: Vec<&str> = first.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["page", "tracking", "zones"], "{first:?}");
    assert_eq!(first["page"], json!({"product_id": "P00042"}));
    assert_eq!(first["tracking"], false);
    assert_eq!(first["zones"], json!(["PP-01", "PP-02"]));
    assert_eq!(visitors(addr, CONSENT_KEY), before, "nothing tracked");

    // The shopper accepts: the page's events go, with the page's address.
    browser
        .find(fantoccini::Locator::Id("accept"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let second = until(
        &browser,
        "the page's events after consent",
        "return window.sentBodies.length > 1 ? window.sentBodies[1] : null;",
    )
    .await;
    let second: Value = serde_json::from_str(second.as_str().unwrap()).unwrap();
    let names: Vec<&str> = second["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "page_view",
            "product_view",
            "customer_details",
            "set_basket"
        ],
        "{second}"
    );
    assert!(second["currentUrl"].as_str().unwrap().contains("consent"));
    assert!(second.get("tracking").is_none(), "{second}");
    until_server("the visitor tracked once consent is given", || {
        (visitors(addr, CONSENT_KEY) == before + 1).then_some(())
    })
    .await;
    browser.close().await.unwrap();
    drop(driver);
    drop(server);
}
