//! The admin API's answers against `GET /openapi.json`: every path and change the
//! console calls, answered and refused, is validated against the schema the document
//! gives for it (see `openapi`, which checks the public endpoints and the routes).

use serde_json::{Value, json};
use vitrine_testkit::DEMO_KEY;

use crate::common::Server;
use crate::openapi::{ADMIN_PATHS, conforms, document};

#[test]
fn admin_answers_match_the_openapi_document() {
    let token = "admin-token-for-the-document-check";
    // The embedded demo's accounts and zones, with an admin token.
    // And an experiment on PP-01.
    let experiment = "\n  [[accounts.experiments]]\n  id = \"doc\"\n  zone = \"PP-01\"\n    \
        [[accounts.experiments.variants]]\n    name = \"A\"\n    \
        [[accounts.experiments.variants]]\n    name = \"B\"\n    strategy = \"trending\"\n";
    let server = Server::with_config(&format!(
        "{}{experiment}\n[admin]\ntokens = [\"{token}\"]\n",
        include_str!("../../src/demo.toml")
    ));
    let doc = document(&server);
    let get = |path: &str, auth: Option<&str>| {
        let header = auth.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = header
            .as_deref()
            .map(|h| vec![("authorization", h)])
            .unwrap_or_default();
        crate::common::request(server.addr, "GET", path, b"", &headers)
    };
    // Something to count: a zone answer, a view of what it showed.
    let resp = server.serverside(json!({"visitorId": "doc-check", "zones": ["PP-01"],
        "events": [{"name": "page_view", "data": {"page_type": "product_page", "product_id": "P00001"}}]}));
    assert_eq!(resp.status, 200, "{}", resp.body);
    let analytics = format!("/admin/api/accounts/{DEMO_KEY}/analytics");
    let experiments = format!("/admin/api/accounts/{DEMO_KEY}/experiments");
    let explain = format!("/admin/api/accounts/{DEMO_KEY}/explain");
    let predictions = format!("/admin/api/accounts/{DEMO_KEY}/predictions");
    let models = format!("/admin/api/accounts/{DEMO_KEY}/models");
    let holdout = format!("/admin/api/accounts/{DEMO_KEY}/holdout");
    let template = ADMIN_PATHS[2];
    for (path, documented, auth, status) in [
        ("/admin/api/accounts", ADMIN_PATHS[1], Some(token), 200),
        ("/admin/api/live", ADMIN_PATHS[0], Some(token), 200),
        ("/admin/api/accounts", ADMIN_PATHS[1], None, 401),
        (
            "/admin/api/accounts",
            ADMIN_PATHS[1],
            Some("not-the-token"),
            403,
        ),
        ("/admin/api/accounts?x=1", ADMIN_PATHS[1], Some(token), 400),
        (analytics.as_str(), template, Some(token), 200),
        (
            &format!("{analytics}?from=2026-13-01"),
            template,
            Some(token),
            400,
        ),
        (
            "/admin/api/accounts/nobody/analytics",
            template,
            Some(token),
            404,
        ),
        (experiments.as_str(), ADMIN_PATHS[3], Some(token), 200),
        (holdout.as_str(), ADMIN_PATHS[20], Some(token), 200),
        (
            &format!("{explain}?zone=PP-01&visitor=doc-check&product=P00001"),
            ADMIN_PATHS[4],
            Some(token),
            200,
        ),
        (explain.as_str(), ADMIN_PATHS[4], Some(token), 400),
        (
            &format!("{explain}?zone=NOPE"),
            ADMIN_PATHS[4],
            Some(token),
            404,
        ),
        (
            "/admin/api/accounts/nobody/experiments",
            ADMIN_PATHS[3],
            Some(token),
            404,
        ),
        (predictions.as_str(), ADMIN_PATHS[5], Some(token), 200),
        (
            "/admin/api/accounts/nobody/predictions",
            ADMIN_PATHS[5],
            Some(token),
            404,
        ),
        (models.as_str(), ADMIN_PATHS[6], Some(token), 200),
        (
            &format!("/admin/api/accounts/{DEMO_KEY}/catalogue?q=P0000&limit=3"),
            ADMIN_PATHS[12],
            Some(token),
            200,
        ),
        (
            &format!("/admin/api/accounts/{DEMO_KEY}/catalogue?q=a&kind=colours"),
            ADMIN_PATHS[12],
            Some(token),
            400,
        ),
        (
            "/admin/api/accounts/nobody/catalogue?q=a",
            ADMIN_PATHS[12],
            Some(token),
            404,
        ),
        (
            &format!("/admin/api/accounts/{DEMO_KEY}/visitors/recent?limit=5"),
            ADMIN_PATHS[13],
            Some(token),
            200,
        ),
        (
            &format!("/admin/api/accounts/{DEMO_KEY}/visitors/recent?limit=0"),
            ADMIN_PATHS[13],
            Some(token),
            400,
        ),
        (&format!("{models}?x=1"), ADMIN_PATHS[6], Some(token), 400),
        (
            "/admin/api/accounts/nobody/models",
            ADMIN_PATHS[6],
            Some(token),
            404,
        ),
    ] {
        let resp = get(path, auth);
        assert_eq!(resp.status, status, "{path}: {}", resp.body);
        conforms(&doc, "get", documented, &resp);
    }
    let body = get(&analytics, Some(token)).json();
    assert_eq!(body["zones"][0]["zone"], "PP-01", "{body}");
    let body = get(
        &format!("{explain}?zone=HP-01&visitor=doc-check&currency=USD"),
        Some(token),
    )
    .json();
    assert_eq!(body["currency"], "USD", "{body}");
    assert!(body["visitorKnown"].as_bool().unwrap(), "{body}");
    assert_eq!(body["items"][0]["strategy"], "trending", "{body}");
    assert_eq!(
        body["items"][0]["evidence"][0]["kind"], "popularity",
        "{body}"
    );
    let body = get(&experiments, Some(token)).json();
    assert_eq!(
        body["experiments"][0]["variants"][1]["strategy"], "trending",
        "{body}"
    );

    // Campaigns: changes, their answers and errors, then the reads, each against the
    // document.
    let send = |method: &str, path: &str, body: &Value, if_match: Option<&str>| {
        let auth = format!("Bearer {token}");
        let mut headers = vec![("authorization", auth.as_str())];
        if let Some(tag) = if_match {
            headers.push(("if-match", tag));
        }
        let bytes = serde_json::to_vec(body).unwrap();
        crate::common::request(server.addr, method, path, &bytes, &headers)
    };
    let base = format!("/admin/api/accounts/{DEMO_KEY}");
    let segments = json!({"segments": [{"id": "buyers", "rule": {"orders": {"min": 1}}}]});
    let list = json!({"campaigns": [
        {"id": "members", "segment": "buyers", "content": {"type": "automated", "strategy": "buy_again"}},
        {"id": "pinned", "content": {"type": "custom", "source": {"strategy": "trending"},
            "boosts": [{"filter": {"onOffer": true}, "factor": 2}], "pins": [{"product": "P00002", "place": 1}]}}]});
    for (method, path, documented, body, if_match, status) in [
        (
            "PUT",
            format!("{base}/segments"),
            ("put", "/admin/api/accounts/{accessKey}/segments"),
            segments.clone(),
            None,
            200,
        ),
        (
            "PUT",
            format!("{base}/segments"),
            ("put", "/admin/api/accounts/{accessKey}/segments"),
            json!({"segments": [{"id": 1}]}),
            None,
            400,
        ),
        (
            "PUT",
            format!("{base}/segments"),
            ("put", "/admin/api/accounts/{accessKey}/segments"),
            segments.clone(),
            Some("\"0\""),
            412,
        ),
        (
            "PUT",
            format!("{base}/zones/HP-01/campaigns"),
            (
                "put",
                "/admin/api/accounts/{accessKey}/zones/{zone}/campaigns",
            ),
            list.clone(),
            None,
            200,
        ),
        (
            "PUT",
            format!("{base}/zones/NOPE/campaigns"),
            (
                "put",
                "/admin/api/accounts/{accessKey}/zones/{zone}/campaigns",
            ),
            list.clone(),
            None,
            404,
        ),
        (
            "PUT",
            format!("{base}/holdout"),
            ("put", "/admin/api/accounts/{accessKey}/holdout"),
            json!({"share": 5, "strategy": "top_sellers"}),
            None,
            200,
        ),
        (
            "PUT",
            format!("{base}/holdout"),
            ("put", "/admin/api/accounts/{accessKey}/holdout"),
            json!({"share": 90}),
            None,
            400,
        ),
        (
            "POST",
            format!("{base}/zones/HP-01/backtest"),
            (
                "post",
                "/admin/api/accounts/{accessKey}/zones/{zone}/backtest",
            ),
            json!({"campaigns": [{"id": "draft", "content": {"type": "custom",
                "source": {"manual": {"products": ["P00001"]}}}}]}),
            None,
            200,
        ),
        (
            "POST",
            format!("{base}/zones/HP-01/backtest"),
            (
                "post",
                "/admin/api/accounts/{accessKey}/zones/{zone}/backtest",
            ),
            json!({"colour": 1}),
            None,
            400,
        ),
        (
            "POST",
            format!("{base}/segments/size"),
            ("post", "/admin/api/accounts/{accessKey}/segments/size"),
            json!({"rule": {"visitor": "new"}}),
            None,
            200,
        ),
        (
            "POST",
            format!("{base}/zones/HP-01/preview"),
            (
                "post",
                "/admin/api/accounts/{accessKey}/zones/{zone}/preview",
            ),
            json!({"shopper": {"returning": true}, "pageType": "homepage",
                "campaigns": [{"id": "draft", "content": {"type": "custom",
                    "source": {"manual": {"products": ["P00001", "P00002"]}}}}]}),
            None,
            200,
        ),
        (
            "POST",
            format!("{base}/zones/HP-01/preview"),
            (
                "post",
                "/admin/api/accounts/{accessKey}/zones/{zone}/preview",
            ),
            json!({"shopper": {"returning": "yes"}}),
            None,
            400,
        ),
        (
            "POST",
            format!("{base}/zones/HP-01/shadow"),
            (
                "post",
                "/admin/api/accounts/{accessKey}/zones/{zone}/shadow",
            ),
            json!({"campaigns": [{"id": "draft", "content": {"type": "custom",
                "source": {"manual": {"products": ["P00001"]}}}}]}),
            None,
            200,
        ),
        (
            "POST",
            format!("{base}/zones/HP-01/shadow"),
            (
                "post",
                "/admin/api/accounts/{accessKey}/zones/{zone}/shadow",
            ),
            json!({}),
            None,
            400,
        ),
        (
            "POST",
            format!("{base}/campaigns/restore"),
            ("post", "/admin/api/accounts/{accessKey}/campaigns/restore"),
            json!({"version": 1}),
            None,
            200,
        ),
        (
            "POST",
            format!("{base}/campaigns/restore"),
            ("post", "/admin/api/accounts/{accessKey}/campaigns/restore"),
            json!({"version": 99}),
            None,
            404,
        ),
        (
            "PUT",
            format!("{base}/zones/HP-01/campaigns"),
            (
                "put",
                "/admin/api/accounts/{accessKey}/zones/{zone}/campaigns",
            ),
            list.clone(),
            None,
            200,
        ),
        (
            "PUT",
            format!("{base}/zones/PP-01/draft"),
            ("put", "/admin/api/accounts/{accessKey}/zones/{zone}/draft"),
            list.clone(),
            None,
            200,
        ),
        (
            "PUT",
            format!("{base}/zones/PP-01/draft"),
            ("put", "/admin/api/accounts/{accessKey}/zones/{zone}/draft"),
            json!({"campaigns": 1}),
            None,
            400,
        ),
        (
            "PUT",
            format!("{base}/segments/draft"),
            ("put", "/admin/api/accounts/{accessKey}/segments/draft"),
            segments.clone(),
            None,
            200,
        ),
        (
            "DELETE",
            format!("{base}/segments/draft"),
            ("delete", "/admin/api/accounts/{accessKey}/segments/draft"),
            json!(null),
            None,
            200,
        ),
    ] {
        let resp = send(method, &path, &body, if_match);
        assert_eq!(resp.status, status, "{method} {path}: {}", resp.body);
        conforms(&doc, documented.0, documented.1, &resp);
    }
    for (path, documented, status) in [
        (format!("{base}/segments"), ADMIN_PATHS[7], 200),
        // On now (the PUT above), with its groups.
        (format!("{base}/holdout"), ADMIN_PATHS[20], 200),
        (format!("{base}/segments/buyers/size"), ADMIN_PATHS[8], 200),
        (format!("{base}/segments/nobody/size"), ADMIN_PATHS[8], 404),
        (format!("{base}/zones/HP-01/campaigns"), ADMIN_PATHS[9], 200),
        (format!("{base}/zones/PP-01/campaigns"), ADMIN_PATHS[9], 200),
        (format!("{base}/campaigns/history"), ADMIN_PATHS[10], 200),
        (format!("{base}/zones/HP-01/shadow"), ADMIN_PATHS[14], 200),
        (format!("{base}/zones/PP-01/shadow"), ADMIN_PATHS[14], 404),
        (format!("{base}/campaigns/history/1"), ADMIN_PATHS[11], 200),
        (format!("{base}/campaigns/history/x"), ADMIN_PATHS[11], 400),
        (
            format!("{explain}?zone=HP-01&visitor=doc-check"),
            ADMIN_PATHS[4],
            200,
        ),
        (
            format!("{explain}?zone=HP-01&at=2026-11-28T09:00:00Z&pageType=homepage"),
            ADMIN_PATHS[4],
            200,
        ),
        (analytics.clone(), ADMIN_PATHS[2], 200),
        (format!("{base}/drafts"), ADMIN_PATHS[15], 200),
        (format!("{base}/zones/PP-01/draft"), ADMIN_PATHS[16], 200),
        (format!("{base}/zones/NOPE/draft"), ADMIN_PATHS[16], 404),
        (format!("{base}/segments/draft"), ADMIN_PATHS[17], 200),
        (
            format!("{base}/campaigns/restore?version=1&part=zone:HP-01"),
            ADMIN_PATHS[18],
            200,
        ),
        (
            format!("{base}/campaigns/restore?version=1&part=zone:NOPE"),
            ADMIN_PATHS[18],
            400,
        ),
        (
            format!("{base}/campaigns/restore?version=99"),
            ADMIN_PATHS[18],
            404,
        ),
        (
            "/admin/api/campaigns/vocabulary".to_owned(),
            ADMIN_PATHS[19],
            200,
        ),
        (
            "/admin/api/campaigns/vocabulary?x=1".to_owned(),
            ADMIN_PATHS[19],
            400,
        ),
    ] {
        let resp = get(&path, Some(token));
        assert_eq!(resp.status, status, "{path}: {}", resp.body);
        conforms(&doc, "get", documented, &resp);
    }
    let holdout = get(&holdout, Some(token)).json();
    assert_eq!(holdout["groups"][1]["name"], "holdout", "{holdout}");
    let off = send("DELETE", &format!("{base}/holdout"), &Value::Null, None);
    assert_eq!(off.status, 200, "{}", off.body);
    conforms(
        &doc,
        "delete",
        "/admin/api/accounts/{accessKey}/holdout",
        &off,
    );
    let again = send("DELETE", &format!("{base}/holdout"), &Value::Null, None);
    assert_eq!(again.status, 400, "{}", again.body);
    conforms(
        &doc,
        "delete",
        "/admin/api/accounts/{accessKey}/holdout",
        &again,
    );
    // The console's lists are the server's.
    let names = get("/admin/api/campaigns/vocabulary", Some(token)).json();
    for (list, name) in [
        ("strategies", "similar_sessions"),
        ("conditionKinds", "device"),
        ("filterKinds", "priceWithin"),
        ("pageTypes", "product_page"),
        ("devices", "tablet"),
    ] {
        assert!(
            names[list].as_array().unwrap().contains(&json!(name)),
            "{list} lacks {name}: {names}"
        );
    }
    assert!(
        !names["strategies"]
            .as_array()
            .unwrap()
            .contains(&json!("category_affinity"))
    );
    let body = get(
        &format!("{explain}?zone=HP-01&visitor=doc-check"),
        Some(token),
    )
    .json();
    assert_eq!(body["campaigns"]["shown"], "pinned", "{body}");
    assert_eq!(body["items"][0]["placedBy"]["kind"], "pin", "{body}");
    let removed = send(
        "DELETE",
        &format!("{base}/zones/HP-01/campaigns"),
        &json!(null),
        None,
    );
    assert_eq!(removed.status, 200, "{}", removed.body);
    conforms(
        &doc,
        "delete",
        "/admin/api/accounts/{accessKey}/zones/{zone}/campaigns",
        &removed,
    );
    let stopped = send(
        "DELETE",
        &format!("{base}/zones/HP-01/shadow"),
        &json!(null),
        None,
    );
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    conforms(
        &doc,
        "delete",
        "/admin/api/accounts/{accessKey}/zones/{zone}/shadow",
        &stopped,
    );
}
