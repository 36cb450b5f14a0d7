//! `buy_again` end to end: a shopper's orders through `/api/serverside`, the zone of the
//! products they bought (most orders first), other zones without them, and the same
//! zone after a SIGKILL and a restart (the log replayed, acknowledged orders kept).

use serde_json::{Value, json};

use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ZoneToml};

use crate::common::{DEMO_KEY, DEMO_SECRET, Server};

fn config() -> String {
    let account = AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo)
        .zone(ZoneToml::new("AGAIN", "buy_again", 5).titled("Buy it again"))
        .zone(ZoneToml::new("TREND", "trending", 50).titled("Trending"));
    ConfigToml::new("[durability]\nevents_fsync = \"always\"")
        .account(account)
        .to_toml()
}

fn order(server: &Server, id: &str, products: &[&str]) {
    let items: Vec<Value> = products
        .iter()
        .map(|p| json!({"id": p, "qty": 1, "unitprice": 9.99}))
        .collect();
    let resp = server.serverside(json!({
        "visitorId": "regular",
        "events": [{"name": "order", "data": {"orderid": id, "userid": "u-regular", "items": items}}]
    }));
    assert_eq!(resp.status, 200, "{}", resp.body);
}

/// The ids each zone shows the shopper.
fn zones(server: &Server) -> (Vec<String>, Vec<String>) {
    let resp = server.serverside(json!({
        "visitorId": "regular", "events": [], "zones": ["AGAIN", "TREND"]
    }));
    assert_eq!(resp.status, 200, "{}", resp.body);
    let json: Value = resp.json();
    let ids = |zone: &str| -> Vec<String> {
        json["zones"][zone]["items"]
            .as_array()
            .unwrap_or_else(|| panic!("zone {zone}: {json}"))
            .iter()
            .map(|item| item["Id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    (ids("AGAIN"), ids("TREND"))
}

#[test]
fn buy_again_shows_what_the_shopper_bought_most_and_survives_a_sigkill() {
    let server = Server::with_config(&config());
    order(&server, "o-1", &["P00001", "P00002"]);
    order(&server, "o-2", &["P00003", "P00001"]);
    order(&server, "o-3", &["P00004", "P00003", "P00001"]);
    let (again, trending) = zones(&server);
    // P00001 in three orders, P00003 in two, then P00004 (latest) and P00002.
    assert_eq!(again, ["P00001", "P00003", "P00004", "P00002"]);
    assert!(
        trending.iter().all(|id| !again.contains(id)),
        "other zones leave bought products out: {trending:?}"
    );

    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config()));
    assert_eq!(zones(&server).0, again);
}
