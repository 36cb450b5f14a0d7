//! The plugin calls beyond the account checks, with bodies exactly as the vendor's PHP
//! SDK builds them for the WooCommerce plugin and the Magento module: sign-up (refused,
//! with the message the plugin shows), deactivation feedback, next steps, and the
//! dashboard's figures per period, checked against what shoppers did.

use serde_json::{Value, json};

use crate::common::{DEMO_KEY, DEMO_SECRET, Server, wait_for};

fn config() -> String {
    format!(
        r#"
[durability]
events_fsync = "always"
[[accounts]]
access_key = "{DEMO_KEY}"
secret_key = "{DEMO_SECRET}"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "TR-01"
  title = "Trending"
  type = "recommender-product"
  strategy = "trending"
  count = 4
"#
    )
}

#[test]
fn sign_up_calls_are_refused_with_the_message_the_plugins_show() {
    let server = Server::with_config(&config());
    // `Signup\Submit`: the form's fields, the region by name.
    let signup = json!({"Id": "a1b2c3d4e5", "Platform": "woocommerce", "Email": "owner@shop.example",
        "FirstName": "Ann", "LastName": "Owner", "Company": "Shop", "Region": "eu",
        "Currency": "GBP", "TimeZone": "Europe/London", "Url": "https://shop.example",
        "Password": "Secret123!", "StoreName": "Shop"});
    for (path, body) in [
        ("/api/plugin/signuprequest", signup),
        ("/api/plugin/signupstatus", json!({"Id": "a1b2c3d4e5"})),
        (
            "/api/plugin/add-store",
            json!({"Id": "a1b2c3d4e5", "AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
                "StoreName": "Second", "Url": "https://second.example", "Platform": "magento2"}),
        ),
    ] {
        let resp = server.post_json(path, &body);
        assert_eq!(resp.status, 400, "{path}: {}", resp.body);
        let errors = resp.json()["errors"].clone();
        let message = errors[0]
            .as_str()
            .unwrap_or_else(|| panic!("{path}: {errors}"));
        assert!(message.contains("no sign-up"), "{message}");
        assert!(message.contains("Access Key and Secret Key"), "{message}");
        // Not even a status call says the sign-up is complete.
        assert!(resp.json().get("Complete").is_none());
    }
    // Whatever the body: a plugin that sends nothing parseable still gets the message.
    let resp = server.post("/api/plugin/signupstatus", "not json");
    assert_eq!(resp.status, 400);
    assert!(
        resp.json()["errors"][0]
            .as_str()
            .unwrap()
            .contains("no sign-up")
    );
}

#[test]
fn deactivation_feedback_is_logged_and_next_steps_are_acknowledged() {
    let server = Server::with_config(&config());
    let feedback = server.post_json(
        "/api/plugin/feedback",
        &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
            "Feedback": "Reason Chosen: temporary | Additional Comments: back after the sale",
            "Platform": "WooCommerce"}),
    );
    assert_eq!(feedback.status, 200, "{}", feedback.body);
    assert_eq!(feedback.json(), json!({}));
    wait_for(
        "the feedback in the log",
        std::time::Duration::from_secs(240),
        || {
            let log = server.log();
            (log.contains("back after the sale") && log.contains("WooCommerce")).then_some(())
        },
    );
    server
        .post_json(
            "/api/plugin/feedback",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": "wrong", "Feedback": "x", "Platform": "WooCommerce"}),
        )
        .assert_error(400, "SecretKey: does not match the access key");

    // `NextSteps\Complete`: lower-case keys, no secret.
    let done = server.post_json(
        "/api/next-steps/complete",
        &json!({"appkey": DEMO_KEY, "id": "step-go-live"}),
    );
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.json(), json!({}));
    server
        .post_json(
            "/api/next-steps/complete",
            &json!({"appkey": "nobody", "id": "x"}),
        )
        .assert_error(400, "appkey");
    server
        .post_json("/api/next-steps/complete", &json!({"appkey": DEMO_KEY}))
        .assert_error(400, "id: required");
}

fn dashboard(server: &Server) -> Value {
    let resp = server.post_json(
        "/api/plugin/dashboard",
        &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

/// Asks the trending zone for a new visitor: the ids shown and the new session.
fn visit(server: &Server, visitor: &str) -> (Vec<String>, String) {
    let resp = server.serverside(json!({
        "visitorId": visitor,
        "zones": ["TR-01"],
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
    }));
    assert_eq!(resp.status, 200, "{}", resp.body);
    let body = resp.json();
    let ids = body["zones"]["TR-01"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect();
    (ids, body["sessionId"].as_str().unwrap().to_owned())
}

#[test]
fn the_dashboard_shows_todays_and_the_last_30_days_figures_by_the_keys_the_plugins_read() {
    let server = Server::with_config(&config());
    let empty = dashboard(&server);
    assert_eq!(empty["Account"]["IsSignedUp"], 1);
    assert_eq!(empty["Stats"]["today"]["Sessions"], 0);
    assert_eq!(empty["Stats"]["today"]["ConversionRate"], 0.0);
    assert_eq!(empty["Stats"]["today"]["SalesTotalDisplay"], "£0.00");

    // Four sessions; two of them order, one of them twice; one order line is a product
    // the zone showed.
    let (shown, first) = visit(&server, "w1");
    let (_, second) = visit(&server, "w2");
    visit(&server, "w3");
    visit(&server, "w4");
    let order = |server: &Server, visitor: &str, session: &str, id: &str, lines: Value| {
        let resp = server.serverside(json!({"visitorId": visitor, "sessionId": session,
            "events": [{"name": "order", "data": {"orderid": id, "userid": visitor, "items": lines}}]}));
        assert_eq!(resp.json()["errors"], json!([]), "{}", resp.body);
    };
    order(
        &server,
        "w1",
        &first,
        "WO-1",
        json!([{"id": shown[0], "qty": 2, "unitprice": 600.25}, {"id": "P00999", "qty": 1, "unitprice": 100}]),
    );
    order(
        &server,
        "w1",
        &first,
        "WO-2",
        json!([{"id": "P00998", "qty": 1, "unitprice": 50}]),
    );
    order(
        &server,
        "w2",
        &second,
        "WO-3",
        json!([{"id": "P00997", "qty": 1, "unitprice": 49.5}]),
    );
    // A repeated order id counts nothing.
    let repeated = server.serverside(json!({"visitorId": "w2", "sessionId": second,
        "events": [{"name": "order", "data": {"orderid": "WO-3", "userid": "w2",
            "items": [{"id": "P00997", "qty": 1, "unitprice": 49.5}]}}]}));
    assert!(
        repeated.body.contains("already recorded"),
        "{}",
        repeated.body
    );

    let expected = json!({
        "Impressions": 16,
        "Sessions": 4,
        "ConvertedSessions": 50.0,
        "ConversionRate": 75.0,
        "OrderCount": 3,
        "SalesTotal": 1400.0,
        "SalesTotalDisplay": "£1,400.00",
        "RecommenderProductTotal": 1200.5,
        "RecommenderProductTotalDisplay": "£1,200.50",
        "Clicks": 0,
        "ClickThroughRate": 0.0,
    });
    let body = dashboard(&server);
    assert_eq!(body["Stats"]["today"], expected, "{body}");
    assert_eq!(body["Stats"]["last30days"], expected, "{body}");
    assert_eq!(
        body["Stats"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["last30days", "today"]
    );
    assert_eq!(body["Store"]["Orders"], 3);

    // The figures are durable, and a replayed log counts nothing twice.
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config()));
    assert_eq!(dashboard(&server)["Stats"]["today"], expected);
    // The session that ordered does not convert twice on the same day.
    order(
        &server,
        "w1",
        &first,
        "WO-4",
        json!([{"id": "P00996", "qty": 1, "unitprice": 10}]),
    );
    let after = dashboard(&server)["Stats"]["today"].clone();
    assert_eq!(after["OrderCount"], 4);
    assert_eq!(after["ConvertedSessions"], 50.0);
    assert_eq!(after["ConversionRate"], 100.0);
    assert_eq!(after["SalesTotalDisplay"], "£1,410.00");
}
