//! Backtests through the admin API, with the real server: sampled shoppers who view one
//! shoe and then another are kept as judged moments; a draft that pins what they viewed
//! next beats the live list, one that empties the zone loses to it, each with its reach,
//! exposure and shares; a hostile body is refused by name; an erasure removes the
//! shopper's moments.

use std::time::Duration;

use serde_json::{Value, json};
use vitrine_engine::prequential::sampled;

use crate::campaigns::{VIEWER, admin, config, load, manual, put_campaigns, shown};
use crate::common::{Server, wait_for};

fn backtest(server: &Server, zone: &str, body: &Value) -> crate::common::Resp {
    admin(
        server,
        "POST",
        &format!("/zones/{zone}/backtest"),
        VIEWER,
        Some(body),
        &[],
    )
}

fn view(server: &Server, visitor: &str, product: &str) {
    let events = json!([{"name": "product_view", "data": {"id": product}}]);
    shown(server, visitor, "HP-01", events, json!({}));
}

#[test]
fn a_draft_that_shows_what_shoppers_wanted_next_beats_the_live_list_and_an_empty_one_loses() {
    let server = Server::with_config(&config());
    load(&server, Vec::new());
    // The live list on the home page shows bags; the shoppers want shoes.
    put_campaigns(
        &server,
        "HP-01",
        json!([manual("bags", None, &["B2", "B3"])]),
    );
    let pins = json!({"campaigns": [manual("shoes", None, &["S5", "S1"])]});

    // Sampled shoppers view S1, then S5 (judged requests, at most ten a second).
    let mut shoppers = (0..).map(|i| format!("judged-{i}")).filter(|v| sampled(v));
    let mut planted = Vec::new();
    let answer = wait_for("forty judged moments", Duration::from_secs(240), || {
        let shopper = shoppers.next().unwrap();
        view(&server, &shopper, "S1");
        view(&server, &shopper, "S5");
        planted.push(shopper);
        let resp = backtest(&server, "HP-01", &pins);
        assert_eq!(resp.status, 200, "{}", resp.body);
        let answer = resp.json();
        (answer["moments"].as_u64().unwrap() >= 40).then_some(answer)
    });
    let difference = &answer["difference"]["hitRate"];
    assert!(
        difference["low"].as_f64().unwrap() > 0.0,
        "the pins should win: {answer}"
    );
    assert_eq!(answer["live"]["hits"], 0, "{answer}");
    assert_eq!(answer["draft"]["reach"][0]["campaign"], "shoes", "{answer}");
    assert_eq!(answer["live"]["reach"][0]["campaign"], "bags", "{answer}");
    let gained: Vec<&str> = answer["exposure"]["gained"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["product"].as_str().unwrap())
        .collect();
    let lost: Vec<&str> = answer["exposure"]["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["product"].as_str().unwrap())
        .collect();
    assert_eq!((gained.len(), lost.len()), (2, 2), "{answer}");
    assert!(gained.contains(&"S5") && lost.contains(&"B2"), "{answer}");
    // S3 is the one product on offer: neither version shows it.
    assert_eq!(answer["draft"]["onOffer"], 0.0, "{answer}");
    assert!(answer["tookMs"].is_number(), "{answer}");

    // The alternatives as configured (similar shoes) against a list that shows nothing.
    let empty = json!({"campaigns": [manual("nothing", Some("nobody"), &["S5"])],
        "segments": [{"id": "nobody", "rule": {"orders": {"min": 1000}}}]});
    let resp = backtest(&server, "PP-01", &empty);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let answer = resp.json();
    let difference = &answer["difference"]["hitRate"];
    assert!(
        difference["high"].as_f64().unwrap() < 0.0,
        "an empty zone should lose: {answer}"
    );
    assert_eq!(answer["draft"]["hits"], 0, "{answer}");
    assert_eq!(
        answer["draft"]["uncampaigned"], answer["moments"],
        "{answer}"
    );

    // A hostile body is refused by name; an unknown zone is a 404.
    let resp = backtest(
        &server,
        "HP-01",
        &json!({"campaigns": [{"id": 7}], "colour": 1}),
    );
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(
        resp.body.contains("colour") && resp.body.contains("campaigns[0]"),
        "{}",
        resp.body
    );
    assert_eq!(backtest(&server, "NOPE", &pins).status, 404);

    // An erased shopper's moments are gone with them.
    let before = backtest(&server, "HP-01", &pins).json()["moments"]
        .as_u64()
        .unwrap();
    let erased = &planted[0];
    let resp = server.post_json(
        "/api/user/forget",
        &json!({"AccessKey": crate::campaigns::KEY, "SecretKey": crate::campaigns::SECRET,
            "Identifier": erased}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let after = backtest(&server, "HP-01", &pins).json()["moments"]
        .as_u64()
        .unwrap();
    assert!(after < before, "{before} then {after}");
}
