//! The vendor's .NET SDK: deltas and their statuses with the access key alone, let in
//! only from the networks an account names (`deltas_without_secret`), and account
//! prices named by `Sku`; bodies exactly as the SDK sends them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Server, wait_for};

const KEY: &str = "dotnet-shop";
const SECRET: &str = "dotnet-shop-secret";

fn config(networks: Option<&str>) -> String {
    let trusted = networks
        .map(|n| format!("deltas_without_secret = {{ networks = [{n}] }}\n"))
        .unwrap_or_default();
    format!(
        r#"
[[accounts]]
access_key = "{KEY}"
secret_key = "{SECRET}"
default_currency = "GBP"
demo_catalogue = true
{trusted}
  [[accounts.zones]]
  id = "RV"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 5
"#
    )
}

/// A delta as the .NET SDK posts it: no secret, account prices by `Sku`.
fn sdk_delta() -> Value {
    json!({
        "AppKey": KEY,
        "Products": [{"Id": "NET-1", "Sku": "NET-SKU-1", "Title": "Net product",
            "Link": "/p/net-1", "Image": "https://shop.example/n1.png",
            "Prices": ["20.00 GBP"], "Categories": ["c1"]}],
        "DeleteProducts": [],
        "AccountPrices": [{"AccountId": "b2b-7", "Sku": "NET-SKU-1", "Prices": ["15.00 GBP"]}],
        "DeleteAccountPrices": []
    })
}

#[test]
fn deltas_without_the_secret_pass_only_from_the_accounts_networks() {
    // Not opted in: the secret is required, as before.
    let closed = Server::with_config(&config(None));
    closed
        .post_json("/api/productdelta", &sdk_delta())
        .assert_error(400, "Secret: required");
    closed
        .post_json(
            "/api/productdeltastatus",
            &json!({"AppKey": KEY, "Tokens": ["x"]}),
        )
        .assert_error(400, "Secret: required");
    // Opted in for other networks: still required from loopback.
    let elsewhere = Server::with_config(&config(Some("\"10.0.0.0/8\", \"192.0.2.7\"")));
    elsewhere
        .post_json("/api/productdelta", &sdk_delta())
        .assert_error(400, "Secret: required");

    let server = Server::with_config(&config(Some("\"127.0.0.0/8\"")));
    let resp = server.post_json("/api/productdelta", &sdk_delta());
    assert_eq!(resp.status, 200, "{}", resp.body);
    let token = resp.json()["Token"].as_str().unwrap().to_owned();
    // The SDK's status call, without the secret either.
    let status = wait_for("the delta applied", Duration::from_secs(120), || {
        let resp = server.post_json(
            "/api/productdeltastatus",
            &json!({"AppKey": KEY, "Tokens": [token]}),
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        let item = resp.json()[0].clone();
        (item["Status"] != 0).then_some(item)
    });
    assert_eq!(status["Status"], 1, "{status}");
    // A wrong secret is refused even from a trusted network.
    let mut wrong = sdk_delta();
    wrong["Secret"] = json!("not-the-secret");
    server
        .post_json("/api/productdelta", &wrong)
        .assert_error(400, "Secret: does not match the access key");
    // The product is served, at its account price to its B2B visitor.
    let viewed = |extra: Vec<Value>| {
        let mut events = extra;
        events.push(json!({"name": "product_view", "data": {"id": "NET-1"}}));
        let body = json!({"appId": KEY, "secretKey": SECRET, "currentUrl": "https://shop.example/",
            "userAgent": "test", "ip": "198.51.100.3", "visitorId": "b2b-buyer", "events": events});
        assert_eq!(server.post_json("/api/serverside", &body).status, 200);
        let page = json!({"appId": KEY, "secretKey": SECRET, "currentUrl": "https://shop.example/",
            "userAgent": "test", "ip": "198.51.100.3", "visitorId": "b2b-buyer",
            "events": [{"name": "page_view", "data": {"page_type": "homepage"}}], "zones": ["RV"]});
        server.post_json("/api/serverside", &page).json()["zones"]["RV"]["items"][0].clone()
    };
    let item = viewed(vec![
        json!({"name": "customer_details", "data": {"userid": "u-7", "accid": "b2b-7"}}),
    ]);
    assert_eq!(item["Id"], "NET-1", "{item}");
    assert_eq!(item["DisplayPrice"], "£15.00", "{item}");
}

#[test]
fn trusted_networks_are_checked_in_the_configuration() {
    let out = std::process::Command::new(crate::common::binary())
        .arg("check-config")
        .arg({
            let dir = tempfile::tempdir().unwrap().keep();
            let path = dir.join("vitrine.toml");
            std::fs::write(&path, config(Some("\"10.0.0.0/33\""))).unwrap();
            path
        })
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("accounts[0].deltas_without_secret.networks[0]: expected a network"),
        "{stderr}"
    );
}
