//! The HTTP contract, tested against the real `vitrine` binary on `127.0.0.1:0`:
//! every row of the spec's Errors table, every authentication rule, every required-field
//! rule, and the success shapes of all six endpoints.

#![expect(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    reason = "a test fails loudly where its setup does not hold"
)]

#[path = "api/analytics.rs"]
mod analytics;
#[path = "api/auth.rs"]
mod auth;
#[path = "api/backtest.rs"]
mod backtest;
#[path = "api/backup.rs"]
mod backup;
#[path = "api/busy.rs"]
mod busy;
#[path = "api/buy_again.rs"]
mod buy_again;
#[path = "api/campaign_analytics.rs"]
mod campaign_analytics;
#[path = "api/campaign_content.rs"]
mod campaign_content;
#[path = "api/campaign_drafts.rs"]
mod campaign_drafts;
#[path = "api/campaign_history.rs"]
mod campaign_history;
#[path = "api/campaign_segments.rs"]
mod campaign_segments;
#[path = "api/campaigns.rs"]
mod campaigns;
#[path = "api/clientside.rs"]
mod clientside;
#[path = "api/clientside_doors.rs"]
mod clientside_doors;
#[path = "api/cluster.rs"]
mod cluster;
#[path = "api/cluster_campaigns.rs"]
mod cluster_campaigns;
#[path = "api/cluster_faults.rs"]
mod cluster_faults;
#[path = "api/cluster_feeds.rs"]
mod cluster_feeds;
#[path = "api/cluster_kills.rs"]
mod cluster_kills;
#[path = "api/cluster_trim.rs"]
mod cluster_trim;
mod common;
#[path = "api/console.rs"]
mod console;
#[path = "api/cpu_layout.rs"]
mod cpu_layout;
#[path = "api/crash.rs"]
mod crash;
#[path = "api/delta.rs"]
mod delta;
#[path = "api/deltas.rs"]
mod deltas;
#[path = "api/deploy.rs"]
mod deploy;
#[path = "api/dotnet.rs"]
mod dotnet;
#[path = "api/experiments_console.rs"]
mod experiments_console;
#[path = "api/feeds.rs"]
mod feeds;
#[path = "api/forget.rs"]
mod forget;
#[path = "api/formats.rs"]
mod formats;
#[path = "api/holdout.rs"]
mod holdout;
#[path = "api/hygiene.rs"]
mod hygiene;
#[path = "api/memory.rs"]
mod memory;
#[path = "api/openapi.rs"]
mod openapi;
#[path = "api/openapi_admin.rs"]
mod openapi_admin;
#[path = "api/operations.rs"]
mod operations;
#[path = "api/operator.rs"]
mod operator;
#[path = "api/php_sdk.rs"]
mod php_sdk;
#[path = "api/plugin_calls.rs"]
mod plugin_calls;
#[path = "api/plugins.rs"]
mod plugins;
#[path = "api/productfeed.rs"]
mod productfeed;
#[path = "api/readme.rs"]
mod readme;
#[path = "api/reload.rs"]
mod reload;
#[path = "api/serverside.rs"]
mod serverside;
#[path = "api/sftp.rs"]
mod sftp;
#[path = "api/tls.rs"]
mod tls;
#[path = "api/tuning.rs"]
mod tuning;
#[path = "api/woocommerce.rs"]
mod woocommerce;
#[path = "api/zone_cache.rs"]
mod zone_cache;
#[path = "api/zones.rs"]
mod zones;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{
    DEMO_KEY, DEMO_SECRET, Resp, Server, parse_response, request, serverside_body, wait_for,
};
use serde_json::{Value, json};
use vitrine_testkit::records;
use vitrine_testkit::server::READY_TIMEOUT;

const CONFIG: &str = r#"
region = "eu"
[limits]
max_body_bytes = 16384
max_delta_bytes = 65536
max_events = 5
max_zones = 3
max_tokens = 4

[[accounts]]
access_key = "shop-eu"
secret_key = "shop-eu-secret"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "HP-01"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 4
  [[accounts.zones]]
  id = "RV-01"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 5
  [[accounts.zones]]
  id = "HOME-ONLY"
  title = "Homepage only"
  type = "recommender-product"
  strategy = "trending"
  page_types = ["homepage"]

[[accounts]]
access_key = "shop-us"
secret_key = "shop-us-secret"
region = "us"
default_currency = "USD"

[[accounts]]
access_key = "shop-two"
secret_key = "shop-two-secret"
default_currency = "GBP"
"#;

fn configured() -> Server {
    Server::with_config(CONFIG)
}

fn delta_body(parts: Value) -> Value {
    let mut body = json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET});
    common::merge(&mut body, parts);
    body
}

fn product(id: &str, prices: &[&str]) -> Value {
    let extra =
        json!({"Image": format!("//img/{id}.jpg"), "Prices": prices, "Categories": ["cat-01"]});
    records::with(records::product(id, ""), extra)
}

fn submit_delta(server: &Server, parts: Value) -> String {
    let resp = server.post_json("/api/delta", &delta_body(parts));
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json = resp.json();
    assert_eq!(json.as_object().unwrap().len(), 1, "only Token in {json}");
    json["Token"]
        .as_str()
        .expect("Token is a string")
        .to_owned()
}

fn delta_status(server: &Server, tokens: &[&str]) -> Vec<Value> {
    let resp = server.post_json(
        "/api/deltastatus",
        &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": tokens}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
        .as_array()
        .expect("array of status items")
        .clone()
}

fn wait_delta(server: &Server, token: &str) -> Value {
    wait_for("delta status", Duration::from_secs(240), || {
        let item = delta_status(server, &[token]).remove(0);
        (item["Status"] != 0).then_some(item)
    })
}

fn zone_ids(resp: &Resp, zone: &str) -> Vec<String> {
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["zones"][zone]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("zone {zone} has items: {}", resp.body))
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect()
}

fn common_account_dir(server: &Server, key: &str) -> std::path::PathBuf {
    common::account_dir(&server.data_path(), key)
}
