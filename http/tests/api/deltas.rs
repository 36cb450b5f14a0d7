//! `/api/delta` and `/api/deltastatus` end to end on a catalogue made only of deltas:
//! every part, every status, the write-ahead log across SIGKILL and a torn tail, and
//! compaction into a snapshot.

use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::records;

use crate::common::{Resp, Server, serverside_body, wait_for};

const KEY: &str = "delta-shop";
const SECRET: &str = "delta-shop-secret";

const CONFIG: &str = r#"
[[accounts]]
access_key = "delta-shop"
secret_key = "delta-shop-secret"
default_currency = "GBP"
  [[accounts.zones]]
  id = "CAT"
  title = "Top of the category"
  type = "recommender-product"
  strategy = "category_top"
  count = 20
  [[accounts.zones]]
  id = "RV"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 20
"#;

fn config_with(extra: &str) -> String {
    format!("{extra}\n{CONFIG}")
}

fn product(id: &str, title: &str, price: &str, categories: &[&str]) -> Value {
    let extra = json!({"Title": title, "Image": "//img/x.jpg", "Categories": categories});
    records::with(records::product(id, price), extra)
}

fn submit(server: &Server, parts: Value) -> String {
    let resp = post_delta(server, parts);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["Token"].as_str().unwrap().to_owned()
}

fn post_delta(server: &Server, parts: Value) -> Resp {
    let mut body = json!({"AppKey": KEY, "SecretKey": SECRET});
    crate::common::merge(&mut body, parts);
    server.post_json("/api/delta", &body)
}

fn statuses(server: &Server, tokens: &[&str]) -> Vec<Value> {
    let resp = server.post_json(
        "/api/deltastatus",
        &json!({"AppKey": KEY, "SecretKey": SECRET, "Tokens": tokens}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json().as_array().unwrap().clone()
}

fn settled(server: &Server, token: &str) -> Value {
    wait_for("delta status", Duration::from_secs(240), || {
        let item = statuses(server, &[token]).remove(0);
        (item["Status"] != 0).then_some(item)
    })
}

fn applied(server: &Server, parts: Value) {
    let token = submit(server, parts);
    let status = settled(server, &token);
    assert_eq!(status["Status"], 1, "{status}");
}

fn serverside(server: &Server, visitor: &str, events: Value, zones: &[&str]) -> Value {
    let body = serverside_body(
        json!({"appId": KEY, "secretKey": SECRET, "visitorId": visitor,
        "events": events, "zones": zones}),
    );
    let resp = server.post_json("/api/serverside", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

/// Ids of the category page's top products.
fn category(server: &Server, category: &str) -> Vec<String> {
    let events = json!([{"name": "page_view", "data": {"page_type": "category_listing_page", "category_id": category}}]);
    ids(&serverside(server, "browser", events, &["CAT"]), "CAT")
}

fn ids(resp: &Value, zone: &str) -> Vec<String> {
    resp["zones"][zone]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{zone} in {resp}"))
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect()
}

/// The items of the recently-viewed zone after `visitor` views `products` in order.
fn viewed(server: &Server, visitor: &str, products: &[&str], accid: Option<&str>) -> Vec<Value> {
    let mut events: Vec<Value> = products
        .iter()
        .map(|id| json!({"name": "product_view", "data": {"id": id}}))
        .collect();
    if let Some(accid) = accid {
        events.push(json!({"name": "customer_details", "data": {"accid": accid}}));
    }
    events.push(json!({"name": "page_view", "data": {"page_type": "homepage"}}));
    serverside(server, visitor, Value::Array(events), &["RV"])["zones"]["RV"]["items"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn every_delta_part_changes_what_the_zones_show() {
    let server = Server::with_config(CONFIG);
    // Products: added, shown in their category.
    applied(
        &server,
        json!({"Products": [
            product("A", "Alpha", "10.00 GBP", &["shoes"]),
            product("B", "Beta", "20.00 GBP", &["shoes"]),
            product("C", "Gamma", "30.00 GBP", &["hats"]),
        ]}),
    );
    assert_eq!(category(&server, "shoes"), ["A", "B"]);
    assert_eq!(category(&server, "hats"), ["C"]);

    // Products: a whole replacement (title, price and categories).
    applied(
        &server,
        json!({"Products": [product("A", "Alpha v2", "12.50 GBP", &["hats"])]}),
    );
    assert_eq!(category(&server, "shoes"), ["B"]);
    assert_eq!(category(&server, "hats"), ["A", "C"]);
    let items = viewed(&server, "v1", &["A", "C"], None);
    assert_eq!(items[0]["Id"], "A");
    assert_eq!(items[0]["Title"], "Alpha v2");
    assert_eq!(items[0]["Price"], 12.5);

    // SetCategoryOnProducts and RemoveCategoryFromProducts (removals first).
    applied(
        &server,
        json!({
            "SetCategoryOnProducts": [{"Category": "sale", "Products": ["B", "C"]}],
            "RemoveCategoryFromProducts": [{"Category": "hats", "Products": ["C"]}]
        }),
    );
    // The members, in either order: the zone ranks them by popularity, which the
    // background model rebuild may or may not have counted in yet.
    let mut sale = category(&server, "sale");
    sale.sort();
    assert_eq!(sale, ["B", "C"]);
    assert_eq!(category(&server, "hats"), ["A"]);

    // AccountPrices show for that accid only; DeleteAccountPrices takes them away.
    applied(
        &server,
        json!({"AccountPrices": [{"AccountId": "acme", "Id": "B", "Prices": ["15.00 GBP"]}]}),
    );
    let acme = viewed(&server, "acme-buyer", &["B", "C"], Some("acme"));
    assert_eq!(
        (acme[0]["Id"].as_str(), acme[0]["Price"].as_f64()),
        (Some("B"), Some(15.0))
    );
    let other = viewed(&server, "someone", &["B", "C"], None);
    assert_eq!(other[0]["Price"], 20.0);
    applied(
        &server,
        json!({"DeleteAccountPrices": [{"AccountId": "acme", "Id": "B"}]}),
    );
    let acme = viewed(&server, "acme-buyer", &["B", "C"], Some("acme"));
    assert_eq!(acme[0]["Price"], 20.0);

    // DeleteProducts: gone from every zone.
    applied(&server, json!({"DeleteProducts": ["B"]}));
    assert_eq!(category(&server, "sale"), ["C"]);
    let items = viewed(&server, "v1", &["B", "C"], None);
    assert!(items.iter().all(|i| i["Id"] != "B"), "{items:?}");

    // Users: the record exists (erasure finds it by email).
    applied(
        &server,
        json!({"Users": [{"UserId": "u-9", "Email": "nine@example.com", "DOB": "1990-02-03"}]}),
    );
    let resp = server.post_json(
        "/api/user/forget",
        &json!({"AccessKey": KEY, "SecretKey": SECRET, "Identifier": "NINE@example.com"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(resp.body.contains("1 user record"), "{}", resp.body);
}

#[test]
fn deltastatus_reports_pending_applied_failed_and_unknown_in_request_order() {
    let server = Server::with_config(CONFIG);
    // A large delta keeps the worker busy; the small one behind it is pending.
    let many: Vec<Value> = (0..15_000)
        .map(|i| product(&format!("BULK-{i}"), "bulk", "1.00 GBP", &["bulk"]))
        .collect();
    let bulk = submit(&server, json!({ "Products": many }));
    let behind = submit(&server, json!({"DeleteProducts": ["BULK-1"]}));
    let failing = submit(
        &server,
        json!({"SetCategoryOnProducts": [{"Category": "x", "Products": ["BULK-2", "NOPE-1"]}]}),
    );
    let early = statuses(&server, &[&behind, "dlt_never_issued", &bulk]);
    assert_eq!(early[0], json!({"Token": behind, "Status": 0}));
    assert_eq!(
        early[1],
        json!({"Token": "dlt_never_issued", "Status": 2, "Reason": "unknown token"})
    );
    assert_eq!(early[2]["Token"], bulk.as_str());
    settled(&server, &failing);
    let late = statuses(&server, &[&failing, &behind, &bulk]);
    assert_eq!(
        late,
        [
            json!({"Token": failing, "Status": 2, "Reason": "unknown product ids in SetCategoryOnProducts: NOPE-1"}),
            json!({"Token": behind, "Status": 1}),
            json!({"Token": bulk, "Status": 1}),
        ]
    );
    // The failed delta changed nothing: BULK-2 is in no category "x".
    assert!(category(&server, "x").is_empty());
}

/// Bytes of every file under the account's log directory.
fn wal_files(server: &Server) -> Vec<std::path::PathBuf> {
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    let dir = server.data_path().join("accounts").join(hex).join("wal");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn acknowledged_deltas_survive_sigkill_right_after_their_200s() {
    let server = Server::with_config(CONFIG);
    let tokens: Vec<(String, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let server = &server;
                scope.spawn(move || {
                    (0..10)
                        .map(|i| {
                            let id = format!("K-{w}-{i}");
                            let token = submit(
                                server,
                                json!({"Products": [product(&id, "kept", "5.00 GBP", &["kept"])],
                                       "AccountPrices": [{"AccountId": "acme", "Id": id, "Prices": ["4.00 GBP"]}]}),
                            );
                            (token, id)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    // SIGKILL right after the last 200, applied or not.
    let server = Server::start_in(server.kill9(), Some(CONFIG));
    let all: Vec<&str> = tokens.iter().map(|(t, _)| t.as_str()).collect();
    for chunk in all.chunks(4) {
        for item in statuses(&server, chunk) {
            assert_eq!(item["Status"], 1, "{item}");
        }
    }
    // Every product is there: a delta naming them all succeeds (unknown ids would fail it).
    let ids: Vec<&str> = tokens.iter().map(|(_, id)| id.as_str()).collect();
    applied(
        &server,
        json!({"SetCategoryOnProducts": [{"Category": "checked", "Products": ids}]}),
    );
    assert_eq!(category(&server, "checked").len(), 20, "the zone's count");
    let items = viewed(&server, "acme-buyer", &["K-3-9", "K-0-0"], Some("acme"));
    assert_eq!(
        (items[0]["Id"].as_str(), items[0]["Price"].as_f64()),
        (Some("K-3-9"), Some(4.0))
    );
}

#[test]
fn a_torn_log_tail_is_cut_on_restart_and_earlier_deltas_kept() {
    let server = Server::with_config(CONFIG);
    let first = submit(
        &server,
        json!({"Products": [product("T1", "one", "1.00 GBP", &["torn"])]}),
    );
    let second = submit(
        &server,
        json!({"Products": [product("T2", "two", "1.00 GBP", &["torn"])]}),
    );
    let segment = wal_files(&server).pop().unwrap();
    let dir = server.kill9();
    let path = dir.path().join("data").join(
        segment
            .strip_prefix(dir.path().join("data"))
            .unwrap_or(&segment),
    );
    let intact = std::fs::metadata(&path).unwrap().len();
    // Half a record: a length and a CRC, then the file ends.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&[64, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3]);
    std::fs::write(&path, bytes).unwrap();

    let server = Server::start_in(dir, Some(CONFIG));
    let log = server.log();
    assert!(
        log.contains("write-ahead log") && log.contains("cut there"),
        "{log}"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), intact);
    for item in statuses(&server, &[&first, &second]) {
        assert_eq!(item["Status"], 1, "{item}");
    }
    assert_eq!(category(&server, "torn"), ["T1", "T2"]);
    // The log goes on after the cut.
    applied(&server, json!({"DeleteProducts": ["T1"]}));
    let server = Server::start_in(server.kill9(), Some(CONFIG));
    assert_eq!(category(&server, "torn"), ["T2"]);
}

#[test]
fn the_overlay_is_compacted_into_a_snapshot_that_a_restart_serves() {
    let config = config_with(
        // Compactions at the process's priority: this test waits for them, and must not
        // depend on what else the machine is doing.
        "[deltas]\ncompact_after_changes = 5\n[durability]\nwal_segment_bytes = 4096\n\
         [feeds]\nbackground_priority = \"normal\"\n",
    );
    let server = Server::with_config(&config);
    let mut tokens = Vec::new();
    for i in 0..30 {
        tokens.push(submit(
            &server,
            json!({"Products": [product(&format!("S{i:02}"), &"long title ".repeat(40), "1.00 GBP", &["snap"])]}),
        ));
    }
    for token in &tokens {
        assert_eq!(settled(&server, token)["Status"], 1);
    }
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    let account = server.data_path().join("accounts").join(hex);
    wait_for("a catalogue snapshot", Duration::from_secs(240), || {
        std::fs::read_dir(&account)
            .unwrap()
            .any(|e| {
                e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("catalogue")
            })
            .then_some(())
    });
    // Segments go once both kept catalogue snapshots are past them. Compactions follow
    // the deltas, not the clock, so the wait keeps the overlay growing (a title change
    // of one product) until enough of them have run: it ends however slow the machine.
    let mut nudge = 0;
    // Compactions run on the lowest-priority ingest pool: on a machine busy with other
    // work they get the CPU last, hence the bound.
    wait_for("log segments deleted", Duration::from_secs(240), || {
        let first = wal_files(&server).first().cloned()?;
        let deleted = !first
            .file_name()?
            .to_string_lossy()
            .starts_with("00000000000000000001");
        if !deleted {
            nudge += 1;
            submit(
                &server,
                json!({"Products": [product("S00", &format!("retitled {nudge}"), "1.00 GBP", &["snap"])]}),
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        deleted.then_some(())
    });
    let server = Server::start_in(server.kill9(), Some(&config));
    assert!(
        server.log().contains("catalogue restored"),
        "{}",
        server.log()
    );
    for chunk in tokens.chunks(4) {
        let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
        for item in statuses(&server, &chunk) {
            assert_eq!(item["Status"], 1, "{item}");
        }
    }
    assert_eq!(category(&server, "snap").len(), 20, "the zone's count");
    let ids: Vec<String> = (0..30).map(|i| format!("S{i:02}")).collect();
    applied(&server, json!({"DeleteProducts": ids}));
    assert!(category(&server, "snap").is_empty());
}

#[test]
fn items_carry_every_field_for_default_group_and_account_prices_with_and_without_sale() {
    let server = Server::with_config(CONFIG);
    applied(
        &server,
        json!({
            "Products": [
                {"Id": "PLAIN", "Sku": "SKU-PLAIN", "Title": "Plain", "Description": "A plain one",
                 "Link": "/p/plain", "Image": "//img/plain.jpg", "ImageOverlay": "//img/new.png",
                 "AllImages": ["//img/plain.jpg", "//img/plain-2.jpg"], "Prices": ["10.00 GBP"],
                 "Categories": ["c1", "c2"], "Brand": "br1", "SearchTags": ["basic"],
                 "NewArrival": true},
                {"Id": "SALE", "Title": "Sale", "Link": "/p/sale", "Image": "//img/sale.jpg",
                 "Prices": ["20.00 GBP"], "SalePrices": ["15.00 GBP"], "Categories": []},
                {"Id": "GROUPED", "Title": "Grouped", "Link": "/p/g", "Image": "//img/g.jpg",
                 "Prices": ["30.00 GBP"], "Categories": [],
                 "GroupPrices": {"vip": {"Prices": ["25.00 GBP"]},
                                 "vipsale": {"Prices": ["25.00 GBP"], "SalePrices": ["22.50 GBP"]}}},
                {"Id": "ACCOUNT", "Title": "Account", "Link": "/p/a", "Image": "//img/a.jpg",
                 "Prices": ["40.00 GBP"], "Categories": [],
                 "GroupPrices": {"vip": {"Prices": ["38.00 GBP"]}}}
            ],
            "AccountPrices": [
                {"AccountId": "acme", "Id": "ACCOUNT", "Prices": ["35.00 GBP"]},
                {"AccountId": "acme-sale", "Id": "ACCOUNT", "Prices": ["35.00 GBP"], "SalePrices": ["28.00 GBP"]}
            ]
        }),
    );
    let items = |visitor: &str, identity: Value| -> Vec<Value> {
        let events = json!([
            {"name": "customer_details", "data": identity},
            {"name": "product_view", "data": {"id": "PLAIN"}},
            {"name": "product_view", "data": {"id": "SALE"}},
            {"name": "product_view", "data": {"id": "GROUPED"}},
            {"name": "product_view", "data": {"id": "ACCOUNT"}}
        ]);
        serverside(&server, visitor, events, &[]);
        let home = json!([{"name": "page_view", "data": {"page_type": "homepage"}}]);
        serverside(&server, visitor, home, &["RV"])["zones"]["RV"]["items"]
            .as_array()
            .unwrap()
            .clone()
    };
    let price = |item: &Value| {
        (
            item["Id"].as_str().unwrap().to_owned(),
            item["Price"].as_f64().unwrap(),
            item.get("WasPrice").and_then(Value::as_f64),
            item.get("SavingPercent")
                .and_then(Value::as_str)
                .map(str::to_owned),
        )
    };

    let anyone = items("anyone", json!({"userid": "u-anyone"}));
    assert_eq!(
        anyone[3],
        json!({"Id": "PLAIN", "Sku": "SKU-PLAIN", "Title": "Plain", "Description": "A plain one",
            "Link": "/p/plain", "Image": "//img/plain.jpg", "ImageOverlay": "//img/new.png",
            "AllImages": ["//img/plain.jpg", "//img/plain-2.jpg"], "Price": 10.0,
            "DisplayPrice": "£10.00", "CurrencySymbol": "£", "Categories": ["c1", "c2"],
            "Brand": {"Id": "br1"}, "SearchTags": ["basic"], "OnOffer": false, "NewArrival": true})
    );
    assert_eq!(
        anyone[2],
        json!({"Id": "SALE", "Sku": "SALE", "Title": "Sale", "Description": "", "Link": "/p/sale",
            "Image": "//img/sale.jpg", "AllImages": ["//img/sale.jpg"], "Price": 15.0,
            "WasPrice": 20.0, "SavingPrice": 5.0, "DisplayPrice": "£15.00",
            "DisplayWasPrice": "£20.00", "SavingDisplayPrice": "£5.00", "CurrencySymbol": "£",
            "SavingPercent": "25%", "Categories": [], "SearchTags": [], "OnOffer": true,
            "NewArrival": false})
    );
    assert_eq!(price(&anyone[1]), ("GROUPED".into(), 30.0, None, None));
    assert_eq!(price(&anyone[0]), ("ACCOUNT".into(), 40.0, None, None));

    let vip = items("vip", json!({"userid": "u-vip", "group_id": "vip"}));
    assert_eq!(price(&vip[1]), ("GROUPED".into(), 25.0, None, None));
    assert_eq!(price(&vip[0]), ("ACCOUNT".into(), 38.0, None, None));
    let vipsale = items("vipsale", json!({"userid": "u-vs", "group_id": "vipsale"}));
    assert_eq!(
        price(&vipsale[1]),
        ("GROUPED".into(), 22.5, Some(25.0), Some("10%".into()))
    );
    assert_eq!(vipsale[1]["DisplayWasPrice"], "£25.00");
    assert_eq!(vipsale[1]["SavingDisplayPrice"], "£2.50");
    assert_eq!(vipsale[1]["OnOffer"], true);
    // The group's sale leaves a product's own prices alone for others.
    assert_eq!(
        price(&vipsale[2]),
        ("SALE".into(), 15.0, Some(20.0), Some("25%".into()))
    );

    // Account prices win over group prices.
    let acme = items(
        "acme",
        json!({"userid": "u-acme", "accid": "acme", "group_id": "vip"}),
    );
    assert_eq!(price(&acme[0]), ("ACCOUNT".into(), 35.0, None, None));
    assert_eq!(acme[0]["DisplayPrice"], "£35.00");
    assert!(acme[0].get("SavingPrice").is_none());
    let acme_sale = items("acme-sale", json!({"userid": "u-as", "accid": "acme-sale"}));
    assert_eq!(
        price(&acme_sale[0]),
        ("ACCOUNT".into(), 28.0, Some(35.0), Some("20%".into()))
    );
    assert_eq!(acme_sale[0]["SavingPrice"], 7.0);
    assert_eq!(acme_sale[0]["SavingDisplayPrice"], "£7.00");
}
