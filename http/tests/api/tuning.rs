//! Self-tuning of the co-view lists end to end, with the real server: shoppers whose
//! next step follows a view 5 steps back move the lists from a window of 1 to 10; the
//! choice is kept in `tuned-models.json` and survives a SIGKILL; pinned values and
//! `tuning = "off"` win over it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{DEMO_KEY, DEMO_SECRET, Resp, Server, account_dir, request, wait_for};

const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef";

fn config(models: &str) -> String {
    format!(
        r#"
[admin]
tokens = ["{ADMIN_TOKEN}"]
[[accounts]]
access_key = "{DEMO_KEY}"
secret_key = "{DEMO_SECRET}"
default_currency = "GBP"
demo_catalogue = true
  [accounts.models]
  tuning_trials_per_second = 1000
  {models}
  [[accounts.zones]]
  id = "PZ"
  title = "For you"
  type = "recommender-product"
  strategy = "personalized"
"#
    )
}

fn models(server: &Server) -> Value {
    let header = format!("Bearer {ADMIN_TOKEN}");
    let path = format!("/admin/api/accounts/{DEMO_KEY}/models");
    let resp: Resp = request(
        server.addr,
        "GET",
        &path,
        b"",
        &[("authorization", header.as_str())],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

fn views(server: &Server, visitor: &str, ids: &[String]) {
    let events: Vec<Value> = ids
        .iter()
        .map(|id| json!({"name": "product_view", "data": {"id": id}}))
        .collect();
    let resp = server.serverside(json!({"visitorId": visitor, "events": events}));
    assert_eq!(resp.status, 200, "{}", resp.body);
}

/// A unit of the planted shopping: a product of a chain of 40, 4 of 2,000 others, then
/// the chain's next product; which ones, drawn from `n` by a hash (no order among
/// units, nor among the others, for a window to learn). The others are many, so that
/// no setting ranks them: only the chain's steps tell the windows apart, and a switch
/// comes after some 130 trials (290 with 200 others, 13 of whose 58 disagreements went
/// the wrong way by chance), which a busy machine's rebuild rounds score late.
fn unit(n: usize) -> Vec<String> {
    let id = |i: usize| format!("P{:05}", i + 1);
    let draw = |k: usize| {
        let mut z = (n as u64) << 8 | k as u64;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as usize
    };
    let link = draw(0) % 40;
    let mut unit = vec![id(link)];
    unit.extend((1..=4).map(|k| id(100 + draw(k) % 2000)));
    unit.push(id((link + 1) % 40));
    unit
}

#[test]
fn tuning_moves_the_lists_to_the_window_that_predicts_and_a_restart_keeps_it() {
    let dir = tempfile::Builder::new()
        .prefix("vitrine-test-")
        .tempdir()
        .unwrap();
    // Start from a window of 1, as a setting chosen before would.
    let account = account_dir(&dir.path().join("data"), DEMO_KEY);
    std::fs::create_dir_all(&account).unwrap();
    std::fs::write(
        account.join("tuned-models.json"),
        r#"{"coViewWindow":1,"partnerDamping":0.5}"#,
    )
    .unwrap();
    let auto = config("");
    let server = Server::start_in(dir, Some(&auto));
    let before = models(&server);
    assert_eq!(before["tuning"], "auto", "{before}");
    // A file written before the weight on direction was tuned reads as 0.
    assert_eq!(
        before["active"],
        json!({"coViewWindow": 1, "partnerDamping": 0.5, "coViewForward": 0.0})
    );
    // Window by damping by weight on direction, 3 × 3 × 3.
    assert_eq!(
        before["settings"].as_array().map(Vec::len),
        Some(27),
        "{before}"
    );
    // The co-purchase lists tune theirs, 3 × 4 × 3, read at a window of 1 (an
    // order's own lines) until tuned.
    assert_eq!(
        before["purchases"]["settings"].as_array().map(Vec::len),
        Some(36),
        "{before}"
    );
    assert_eq!(
        before["purchases"]["active"],
        json!({"coPurchaseWindow": 1, "partnerDamping": 0.5, "coPurchaseForward": 0.0})
    );
    // personalized's recipe: 3 histories × 2 long-term parts × 2 session weights × 2
    // popularity weights × 2 purchases' weights, from the configured one.
    let recipe = &before["recipe"];
    assert_eq!(recipe["zone"], "PZ", "{before}");
    assert_eq!(recipe["tuning"], "auto", "{before}");
    assert_eq!(
        recipe["settings"].as_array().map(Vec::len),
        Some(48),
        "{before}"
    );
    assert_eq!(
        recipe["active"],
        json!({"history": 10, "longTerm": 2.0, "sessions": 0.0, "popularity": 0.0, "purchases": 0.25})
    );
    assert_eq!(recipe["trialsDropped"], 0, "{before}");
    // similar_sessions' neighbourhood: 3 numbers of neighbours × 2 of steps.
    let sessions = &before["sessions"];
    assert_eq!(sessions["tuning"], "auto", "{before}");
    assert_eq!(
        sessions["settings"].as_array().map(Vec::len),
        Some(6),
        "{before}"
    );
    assert_eq!(sessions["active"], json!({"neighbours": 100, "steps": 10}));
    assert_eq!(
        sessions["pinned"],
        json!({"neighbours": null, "steps": null})
    );

    // Shoppers who are not sampled teach the counts, a whole visit per request.
    let trainers = (0..)
        .map(|n| format!("trainer-{n}"))
        .filter(|v| !vitrine_engine::prequential::sampled(v));
    for (n, trainer) in trainers.take(400).enumerate() {
        let visit: Vec<String> = (0..4).flat_map(|k| unit(n * 4 + k)).collect();
        views(&server, &trainer, &visit);
    }
    // Shoppers view one product per request: one view in 20 new to them is a trial,
    // scored on the next rebuild round, until a setting wins.
    let mut shoppers = (0..).map(|n| format!("shopper-{n}"));
    let mut n = 10_000;
    let switched = wait_for("a switch", Duration::from_secs(600), || {
        let visitor = shoppers.next()?;
        for _ in 0..4 {
            for id in unit(n) {
                views(&server, &visitor, &[id]);
            }
            n += 1;
        }
        let now = models(&server);
        (now["switches"].as_array().is_some_and(|s| !s.is_empty())).then_some(now)
    });
    assert_eq!(switched["active"]["coViewWindow"], 10, "{switched}");
    let switch = &switched["switches"][0];
    assert_eq!(
        switch["from"],
        json!({"coViewWindow": 1, "partnerDamping": 0.5, "coViewForward": 0.0})
    );
    assert!(
        switch["evidence"].as_f64() >= switched["threshold"].as_f64(),
        "{switched}"
    );
    // Kept once the next rebuild round has run (every second; a busy machine scores
    // the trials queued before it first, so the bound is generous). Trials taken before
    // the switch may still be scored and switch again (a busy machine scores them
    // later): what is kept is what is active once the two agree.
    let file = account.join("tuned-models.json");
    let (kept, active) = wait_for("the choice kept", Duration::from_secs(300), || {
        let active = models(&server)["active"].clone();
        let text = std::fs::read_to_string(&file).ok()?;
        let kept: Value = serde_json::from_str(&text).ok()?;
        (kept["coViewWindow"] == active["coViewWindow"]
            && kept["partnerDamping"] == active["partnerDamping"]
            && kept["coViewForward"] == active["coViewForward"])
            .then_some((kept, active))
    });
    assert_eq!(active["coViewWindow"], 10, "{active}");
    assert_eq!(kept["purchasePartnerDamping"], 0.5, "{kept}");
    assert_eq!(kept["coPurchaseWindow"], 1, "{kept}");
    assert_eq!(kept["coPurchaseForward"], 0.0, "{kept}");
    assert!(kept["recipe"]["history"].is_u64(), "{kept}");
    assert!(kept["sessions"]["neighbours"].is_u64(), "{kept}");

    // A restart reads both lists' settings back (the co-purchase one edited here, as
    // if tuning had chosen it).
    let dir = server.kill9();
    let mut edited = kept.clone();
    edited["purchasePartnerDamping"] = json!(0.25);
    edited["coPurchaseWindow"] = json!(10);
    edited["coPurchaseForward"] = json!(1.0);
    // The recipe as a file written before the purchases' weight was tuned has it: the
    // default is read, and the rest of the recipe kept.
    let chosen = json!({"history": 1, "longTerm": 0.0, "sessions": 0.0, "popularity": 0.1});
    edited["recipe"] = chosen.clone();
    let chosen = json!({
        "history": 1, "longTerm": 0.0, "sessions": 0.0, "popularity": 0.1, "purchases": 0.25
    });
    edited["sessions"] = json!({"neighbours": 200, "steps": 5});
    std::fs::write(&file, edited.to_string()).unwrap();
    let server = Server::start_in(dir, Some(&auto));
    let restarted = models(&server);
    assert_eq!(restarted["active"], active);
    assert_eq!(
        restarted["purchases"]["active"],
        json!({"coPurchaseWindow": 10, "partnerDamping": 0.25, "coPurchaseForward": 1.0}),
        "{restarted}"
    );
    assert_eq!(restarted["recipe"]["active"], chosen, "{restarted}");
    assert_eq!(
        restarted["sessions"]["active"],
        json!({"neighbours": 200, "steps": 5}),
        "{restarted}"
    );

    // A pinned window wins over the file; the damping is still tuned.
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config("co_view_window = 3\nsession_steps = 10")));
    let pinned = models(&server);
    // A pinned number of steps leaves the file's 200 neighbours and 5 steps out of the
    // grid: the configured setting is read.
    assert_eq!(
        pinned["sessions"]["active"],
        json!({"neighbours": 100, "steps": 10}),
        "{pinned}"
    );
    assert_eq!(pinned["sessions"]["pinned"]["steps"], 10, "{pinned}");
    assert_eq!(
        pinned["sessions"]["settings"].as_array().map(Vec::len),
        Some(3),
        "{pinned}"
    );
    assert_eq!(pinned["active"]["coViewWindow"], 3, "{pinned}");
    assert_eq!(pinned["pinned"]["coViewWindow"], 3, "{pinned}");
    assert_eq!(
        pinned["settings"].as_array().map(Vec::len),
        Some(9),
        "{pinned}"
    );
    // The co-view lists' pins leave the co-purchase lists' grid whole.
    assert_eq!(
        pinned["pinned"]["coPurchaseWindow"],
        Value::Null,
        "{pinned}"
    );
    assert_eq!(
        pinned["purchases"]["settings"].as_array().map(Vec::len),
        Some(36),
        "{pinned}"
    );

    // The co-purchase lists' own pins win over the file's 10, 0.25 and 1.
    let dir = server.kill9();
    let server = Server::start_in(
        dir,
        Some(&config(
            "co_purchase_window = 1\npurchase_partner_damping = 0\nco_purchase_forward = 0.5",
        )),
    );
    let pinned = models(&server);
    assert_eq!(
        pinned["purchases"]["active"],
        json!({"coPurchaseWindow": 1, "partnerDamping": 0.0, "coPurchaseForward": 0.5}),
        "{pinned}"
    );
    assert_eq!(pinned["pinned"]["coPurchaseWindow"], 1, "{pinned}");
    assert_eq!(pinned["pinned"]["purchasePartnerDamping"], 0.0, "{pinned}");
    assert_eq!(pinned["pinned"]["coPurchaseForward"], 0.5, "{pinned}");
    assert_eq!(
        pinned["purchases"]["settings"].as_array().map(Vec::len),
        Some(1),
        "{pinned}"
    );

    // Off: the configured setting, nothing scored.
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config("tuning = \"off\"")));
    let off = models(&server);
    assert_eq!(off["tuning"], "off", "{off}");
    assert_eq!(
        off["active"],
        json!({"coViewWindow": 10, "partnerDamping": 0.5, "coViewForward": 0.0})
    );
    assert_eq!(off["settings"].as_array().map(Vec::len), Some(1), "{off}");
    // Nor is the recipe tuned: the zone is filled as configured.
    assert_eq!(off["recipe"]["tuning"], "off", "{off}");
    assert_eq!(off["sessions"]["tuning"], "off", "{off}");
    assert_eq!(
        off["sessions"]["settings"].as_array().map(Vec::len),
        Some(1),
        "{off}"
    );
    assert_eq!(
        off["recipe"]["active"],
        json!({"history": 10, "longTerm": 2.0, "sessions": 0.0, "popularity": 0.0, "purchases": 0.25})
    );
    assert_eq!(
        off["purchases"]["settings"].as_array().map(Vec::len),
        Some(1),
        "{off}"
    );
}
