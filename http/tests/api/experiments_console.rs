//! Experiments written through the admin API (what the console sends), with the real
//! server: created, checked field by field, started, stopped, started again and ended;
//! each shopper kept in one variant; kept across a SIGKILL; a variant that earns more
//! found better, and an A/A pair not.

use serde_json::{Value, json};

use crate::campaigns::{EDITOR, VIEWER, admin, config, load, manual, shown};
use crate::common::Server;

fn put(server: &Server, id: &str, body: &Value, headers: &[(&str, &str)]) -> crate::common::Resp {
    admin(
        server,
        "PUT",
        &format!("/experiments/{id}"),
        EDITOR,
        Some(body),
        headers,
    )
}

fn act(server: &Server, id: &str, action: &str) -> crate::common::Resp {
    admin(
        server,
        "POST",
        &format!("/experiments/{id}/{action}"),
        EDITOR,
        None,
        &[],
    )
}

fn results(server: &Server) -> Value {
    let resp = admin(server, "GET", "/experiments", VIEWER, None, &[]);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

fn experiment<'a>(results: &'a Value, id: &str) -> &'a Value {
    results["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no experiment {id} in {results}"))
}

/// A list against the zone as configured (trending), half each.
fn list_against_trending() -> Value {
    json!({"name": "Bags list against trending", "zone": "HP-01", "variants": [
        {"name": "A", "share": 50, "kind": "live"},
        {"name": "B", "share": 50, "kind": "draft",
         "campaigns": [manual("bags", None, &["B2", "B3"])]},
    ]})
}

/// Views of shoes until the zone as configured (trending) shows them.
fn popular(server: &Server) {
    for (i, id) in ["S1", "S3", "S4", "S5", "S4"].iter().enumerate() {
        let view = json!([{"name": "product_view", "data": {"id": id}}]);
        shown(server, &format!("seed-{i}"), "HP-01", view, json!({}));
    }
    crate::common::wait_for(
        "trending to show the viewed shoes",
        std::time::Duration::from_secs(120),
        || {
            let ids = shown(server, "seed-check", "HP-01", json!([]), json!({}));
            (!ids.is_empty() && ids.iter().all(|id| id.starts_with('S'))).then_some(())
        },
    );
}

fn problems(resp: &crate::common::Resp) -> Vec<String> {
    assert_eq!(resp.status, 400, "{}", resp.body);
    resp.json()["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", resp.body))
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e["path"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn an_experiment_is_written_started_stopped_and_ended_and_each_shopper_keeps_their_variant() {
    let server = Server::with_config(&config());
    load(&server, Vec::new());
    popular(&server);

    // A viewer reads, never writes.
    let resp = admin(
        &server,
        "PUT",
        "/experiments/x",
        VIEWER,
        Some(&list_against_trending()),
        &[],
    );
    assert_eq!(resp.status, 403, "{}", resp.body);

    // Every field is checked, with its path; nothing is stored.
    let bad = |body: Value, path: &str| {
        let found = problems(&put(&server, "bad", &body, &[]));
        assert!(
            found.iter().any(|p| p.starts_with(&format!("{path}: "))),
            "{path} not named in {found:?}"
        );
    };
    bad(
        json!({"zone": "HP-01", "variants": [{"name": "A", "share": 1, "kind": "live"}]}),
        "variants",
    );
    bad(json!({"zone": "NOPE", "variants": []}), "zone");
    bad(json!({"zone": "CAT-01", "variants": []}), "zone");
    bad(
        json!({"zone": "HP-01", "variants": [{"name": "A", "share": 1, "kind": "live"},
        {"name": "B", "share": 1, "kind": "magic"}]}),
        "variants[1].kind",
    );
    bad(
        json!({"zone": "HP-01", "variants": [{"name": "A", "share": 0, "kind": "live"},
        {"name": "B", "share": 1, "kind": "live"}]}),
        "variants[0].share",
    );
    bad(
        json!({"zone": "HP-01", "variants": [{"name": "A", "share": 1, "kind": "live"},
        {"name": "A", "share": 1, "kind": "live"}]}),
        "variants[1].name",
    );
    bad(
        json!({"zone": "HP-01", "variants": [{"name": "A", "share": 1, "kind": "live"},
        {"name": "B", "share": 1, "kind": "none", "strategy": "personalized"}]}),
        "variants[1].strategy",
    );
    bad(
        json!({"zone": "HP-01", "variants": [{"name": "A", "share": 1, "kind": "live"},
        {"name": "B", "share": 1, "kind": "strategy", "strategy": "nonsense"}]}),
        "variants[1].strategy",
    );
    bad(
        json!({"zone": "HP-01", "variants": [{"name": "A", "share": 1, "kind": "live", "campaigns": []},
        {"name": "B", "share": 1, "kind": "draft"}]}),
        "variants[0].campaigns",
    );
    bad(
        json!({"zone": "HP-01", "variants": [{"name": "A", "share": 1, "kind": "live"},
        {"name": "B", "share": 1, "kind": "draft", "campaigns": [{"id": "x", "content": {"type": "what"}}]}]}),
        "variants[1].campaigns[0].content.type",
    );
    bad(
        json!({"zone": "HP-01", "colour": "red", "variants": []}),
        "colour",
    );
    let empty = results(&server);
    assert!(
        empty["experiments"].as_array().unwrap().is_empty(),
        "{empty}"
    );
    let etag = admin(&server, "GET", "/experiments", EDITOR, None, &[])
        .header("etag")
        .unwrap()
        .to_owned();

    // Written: a draft, shown to nobody yet.
    let resp = put(
        &server,
        "bags-test",
        &list_against_trending(),
        &[("if-match", &etag)],
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let written = resp.header("etag").unwrap().to_owned();
    assert_ne!(written, etag);
    // An editor working from the older version is told so.
    let stale = put(
        &server,
        "bags-test",
        &list_against_trending(),
        &[("if-match", &etag)],
    );
    assert_eq!(stale.status, 412, "{}", stale.body);
    assert_eq!(variant_of(&server, "before"), "A");
    let draft = results(&server);
    assert_eq!(experiment(&draft, "bags-test")["status"], "draft");
    assert_eq!(experiment(&draft, "bags-test")["source"], "console");
    // One experiment at a time on a zone.
    let found = problems(&put(&server, "rival", &list_against_trending(), &[]));
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("zone: ") && p.contains("bags-test")),
        "{found:?}"
    );

    // Started: each shopper sees one variant, the same on every request.
    assert_eq!(act(&server, "bags-test", "start").status, 200);
    let split = |server: &Server| -> Vec<&'static str> {
        (0..40)
            .map(|i| variant_of(server, &format!("shopper-{i}")))
            .collect()
    };
    let before = split(&server);
    let in_b = before.iter().filter(|v| **v == "B").count();
    assert!((8..=32).contains(&in_b), "{in_b} of 40 in B");
    // A shopper's devices, once the shopper is named on them, see one variant: ten
    // shoppers on a phone and a laptop each.
    let named = |device: &str, email: &str| {
        let login = json!([{"name": "customer_details", "data": {"email": email}}]);
        shown(&server, device, "HP-01", login, json!({}));
        variant_of(&server, device)
    };
    let pairs: Vec<(&str, &str)> = (0..10)
        .map(|i| {
            let email = format!("person-{i}@example.com");
            (
                named(&format!("phone-{i}"), &email),
                named(&format!("laptop-{i}"), &email),
            )
        })
        .collect();
    assert!(pairs.iter().all(|(a, b)| a == b), "{pairs:?}");
    assert!(
        pairs.iter().any(|(a, _)| *a == "A") && pairs.iter().any(|(a, _)| *a == "B"),
        "{pairs:?}"
    );
    let running = results(&server);
    let running = experiment(&running, "bags-test");
    assert_eq!(running["status"], "running");
    assert_eq!(running["runs"].as_array().unwrap().len(), 1);
    let visitors: u64 = running["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["counts"]["visitors"].as_u64().unwrap())
        .sum();
    assert_eq!(visitors, 60, "{running}");
    // A running experiment's variants cannot change; its name can.
    let mut changed = list_against_trending();
    changed["variants"][1]["share"] = json!(90);
    let found = problems(&put(&server, "bags-test", &changed, &[]));
    assert!(
        found.iter().any(|p| p.starts_with("variants: ")),
        "{found:?}"
    );
    let mut renamed = list_against_trending();
    renamed["name"] = json!("Bags, renamed");
    assert_eq!(put(&server, "bags-test", &renamed, &[]).status, 200);
    // Only a draft is deleted.
    let resp = admin(
        &server,
        "DELETE",
        "/experiments/bags-test",
        EDITOR,
        None,
        &[],
    );
    assert_eq!(resp.status, 400, "{}", resp.body);

    // Stopped: the zone as configured for everyone; started again: the same split.
    assert_eq!(act(&server, "bags-test", "stop").status, 200);
    assert_eq!(act(&server, "bags-test", "stop").status, 400);
    for i in 0..10 {
        assert_eq!(variant_of(&server, &format!("shopper-{i}")), "A");
    }
    assert_eq!(act(&server, "bags-test", "start").status, 200);
    let again = split(&server);
    assert_eq!(again, before);

    // Kept across a SIGKILL, running, with its split.
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config()));
    let kept = results(&server);
    assert_eq!(experiment(&kept, "bags-test")["status"], "running");
    assert_eq!(experiment(&kept, "bags-test")["name"], "Bags, renamed");
    let after = split(&server);
    assert_eq!(after, before);

    // Ended: for good; the zone is free for another experiment.
    assert_eq!(act(&server, "bags-test", "end").status, 200);
    assert_eq!(act(&server, "bags-test", "start").status, 400);
    assert_eq!(variant_of(&server, "shopper-1"), "A");
    let ended = results(&server);
    let ended = experiment(&ended, "bags-test");
    assert_eq!(ended["status"], "ended");
    assert_eq!(ended["runs"].as_array().unwrap().len(), 2);
    let timeline: Vec<&str> = ended["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert!(
        timeline.contains(&"experiment bags-test started"),
        "{timeline:?}"
    );
    assert!(
        timeline.contains(&"experiment bags-test ended"),
        "{timeline:?}"
    );
    assert_eq!(
        put(&server, "next", &list_against_trending(), &[]).status,
        200
    );
    assert_eq!(
        admin(&server, "DELETE", "/experiments/next", EDITOR, None, &[]).status,
        200
    );
    // In the audit log like every change.
    let history = admin(&server, "GET", "/campaigns/history", VIEWER, None, &[]).json();
    let summaries = history.to_string();
    assert!(summaries.contains("experiment next deleted"), "{summaries}");
}

/// The variant a shopper sees ("B": the bags list; "A": the zone as configured, which
/// shows trending shoes, in whatever order trending has them then), the same on a
/// second request.
fn variant_of(server: &Server, visitor: &str) -> &'static str {
    let class = |ids: Vec<String>| {
        if ids == ["B2", "B3"] {
            "B"
        } else {
            // Trending shoes (none for a moment after a restart, until the rankings
            // are rebuilt), never the bags.
            assert!(
                ids.iter().all(|id| id.starts_with('S')),
                "{visitor}: {ids:?}"
            );
            "A"
        }
    };
    let first = class(shown(server, visitor, "HP-01", json!([]), json!({})));
    let second = class(shown(server, visitor, "HP-01", json!([]), json!({})));
    assert_eq!(first, second, "{visitor}");
    first
}

/// Sends a shopper to the zone and, when `buys` says so for what it showed, orders the
/// first product shown.
fn shop(server: &Server, visitor: &str, buys: impl Fn(&[String]) -> bool) {
    let ids = shown(server, visitor, "HP-01", json!([]), json!({}));
    if buys(&ids)
        && let Some(first) = ids.first()
    {
        let line = json!({"id": first, "qty": 1, "unitprice": 50});
        let order = json!([{"name": "order", "data": {"orderid": format!("o-{visitor}"),
            "email": format!("{visitor}@example.com"), "ordertotal": 50, "items": [line]}}]);
        shown(server, visitor, "HP-01", order, json!({}));
    }
}

#[test]
fn a_variant_that_earns_more_is_found_better_and_an_a_a_pair_is_not() {
    let server = Server::with_config(&config());
    load(&server, Vec::new());
    popular(&server);
    // Shoppers shown the bags list buy one shopper in two; the others one in ten.
    assert_eq!(
        put(&server, "earns", &list_against_trending(), &[]).status,
        200
    );
    assert_eq!(act(&server, "earns", "start").status, 200);
    for i in 0..400 {
        shop(&server, &format!("p-{i}"), |ids| {
            let rate = if ids == ["B2", "B3"] { 2 } else { 10 };
            i % rate == 0
        });
    }
    let found = results(&server);
    let b = &experiment(&found, "earns")["variants"][1];
    assert_eq!(b["name"], "B");
    for metric in ["conversion", "revenuePerVisitor"] {
        let comparison = &b["againstControl"][metric];
        assert_eq!(comparison["significant"], true, "{metric}: {b}");
        assert!(comparison["low"].as_f64().unwrap() > 0.0, "{metric}: {b}");
    }
    assert!(b["toShow"]["conversionDays"].is_number(), "{b}");
    // Read from a day after today (a split at a later change): nothing counted yet;
    // up to today: everything. A date that is not one is named.
    let day = |offset: i64| {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            + offset * 86_400;
        jiff::Timestamp::from_second(at)
            .unwrap()
            .strftime("%Y-%m-%d")
            .to_string()
    };
    let path = format!("/experiments?from={}", day(1));
    let later = admin(&server, "GET", &path, VIEWER, None, &[]).json();
    assert_eq!(later["from"], day(1), "{later}");
    let visitors = &experiment(&later, "earns")["variants"][1]["counts"]["visitors"];
    assert_eq!(visitors, 0, "{later}");
    let path = format!("/experiments?from={}&to={}", day(-1), day(0));
    let all = admin(&server, "GET", &path, VIEWER, None, &[]).json();
    assert_eq!(
        experiment(&all, "earns")["variants"][1]["counts"],
        b["counts"]
    );
    let resp = admin(
        &server,
        "GET",
        "/experiments?from=2026-13-01",
        VIEWER,
        None,
        &[],
    );
    assert_eq!(resp.status, 400, "{}", resp.body);
    assert!(resp.body.contains("from"), "{}", resp.body);
    assert_eq!(act(&server, "earns", "end").status, 200);

    // Both variants the products on offer, shoppers buying alike: no difference.
    let same = json!({"zone": "HP-01", "variants": [
        {"name": "A", "share": 1, "kind": "strategy", "strategy": "on_offer"},
        {"name": "B", "share": 1, "kind": "none", "strategy": "on_offer"},
    ]});
    assert_eq!(put(&server, "same", &same, &[]).status, 200);
    assert_eq!(act(&server, "same", "start").status, 200);
    for i in 0..400 {
        shop(&server, &format!("q-{i}"), |_| i % 5 == 0);
    }
    let found = results(&server);
    let b = &experiment(&found, "same")["variants"][1];
    for metric in ["conversion", "revenuePerVisitor"] {
        assert_eq!(
            b["againstControl"][metric]["significant"], false,
            "{metric}: {b}"
        );
    }
}
