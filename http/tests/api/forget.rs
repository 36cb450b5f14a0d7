//! `/api/user/forget`: what an erasure removes, and its 404.

use super::*;

#[test]
fn forget_erases_the_visitor_and_answers_text() {
    let server = Server::demo();
    let visitor = "visitor-to-forget";
    server.serverside(json!({"visitorId": visitor, "events": [
        {"name": "product_view", "data": {"id": "P00101"}},
        {"name": "customer_details", "data": {"email": "Jane.Doe@Example.com", "userid": "user-77"}}
    ]}));
    let recently = || {
        zone_ids(
            &server.serverside(json!({"visitorId": visitor, "zones": ["PP-02"]})),
            "PP-02",
        )
    };
    assert_eq!(recently().first().map(String::as_str), Some("P00101"));
    let resp = server.post_json(
        "/api/user/forget",
        &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "jane.doe@example.COM"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(resp.body.contains("1 visitor"), "{}", resp.body);
    // The history is gone: the visitor now sees what a brand-new visitor sees (the view
    // still counts in the aggregate trending counters, as erasure keeps aggregates).
    // (Compared until the two agree: the erasure's flush re-ranks the catalogue it
    // writes, so rankings may change between two requests.)
    wait_for(
        "the erased visitor to see what a new one sees",
        Duration::from_secs(240),
        || {
            let fresh = zone_ids(
                &server.serverside(json!({"visitorId": "brand-new", "zones": ["PP-02"]})),
                "PP-02",
            );
            (recently() == fresh).then_some(())
        },
    );
    // Everything tied to it is gone: the user id matches nothing any more.
    server
        .post_json(
            "/api/user/forget",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "user-77"}),
        )
        .assert_error(
            404,
            "Identifier: no email, user id, account id or visitor id",
        );
}

#[test]
fn forget_matches_user_records_from_deltas_and_visitor_ids() {
    let server = Server::demo();
    let token = submit_delta(
        &server,
        json!({"Users": [{"UserId": "crm-9", "Email": "crm@example.com"}]}),
    );
    assert_eq!(wait_delta(&server, &token)["Status"], 1);
    let forget = |id: &str| {
        server.post_json(
            "/api/user/forget",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": id}),
        )
    };
    assert_eq!(forget("CRM@example.com").status, 200);
    forget("crm-9").assert_error(404, "no email");
    server.serverside(json!({"visitorId": "anon-visitor-1"}));
    assert_eq!(forget("anon-visitor-1").status, 200);
}

#[test]
fn forget_400_and_404() {
    let server = Server::demo();
    let post = |body: Value| server.post_json("/api/user/forget", &body);
    post(json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET}))
        .assert_error(400, "Identifier: required");
    post(json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": ""}))
        .assert_error(400, "Identifier: must not be empty");
    post(json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": 12}))
        .assert_error(400, "Identifier: expected a string");
    server
        .post("/api/user/forget", "[]")
        .assert_error(400, "body: expected an object");
    post(json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": "nobody@example.com"}))
        .assert_error(404, "Identifier: no email, user id, account id or visitor id of this account matches");
}
