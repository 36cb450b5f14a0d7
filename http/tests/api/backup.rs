//! A backup taken under load restores everything acknowledged before it, and a log
//! writer that falls behind makes the server answer 503 before applying anything.

use std::time::Duration;

use serde_json::{Value, json};
use vitrine_testkit::records;

use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ZoneToml};

use crate::common::{DEMO_KEY, DEMO_SECRET, Resp, Server, wait_for};

use crate::reload::vitrine;

/// An order event with id `order_id`.
fn order_event(order_id: &str) -> Value {
    json!({"name": "order", "data": {"orderid": order_id, "email": "buyer@example.com",
        "items": [{"id": "P00003", "qty": 1, "unitprice": 10.5}]}})
}

#[test]
fn a_backup_taken_under_load_restores_every_delta_and_order_acknowledged_before_it() {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    // Compactions every 20 changes: snapshots are written and the log cut while the
    // backup copies.
    let config = ConfigToml::new("[deltas]\ncompact_after_changes = 20")
        .account(
            AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo)
                .zone(ZoneToml::new("TOP", "trending", 2)),
        )
        .to_toml();
    let server = Server::with_config(&config);
    let deltas: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let orders: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let backup_dir = tempfile::tempdir().unwrap();
    let out = backup_dir.path().join("backup");
    let (acked_deltas, acked_orders) = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let delta = server.post_json(
                    "/api/delta",
                    &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
                        "Products": [records::product(&format!("B-{i}"), "9.99 GBP")]}),
                );
                assert_eq!(delta.status, 200, "{}", delta.body);
                let token = delta.json()["Token"].as_str().unwrap().to_owned();
                deltas.lock().unwrap().push(token);
                let order_id = format!("order-{i}");
                let served = server.serverside(json!({"visitorId": format!("buyer-{i}"),
                    "events": [order_event(&order_id)]}));
                assert_eq!(served.status, 200, "{}", served.body);
                orders.lock().unwrap().push(order_id);
            }
        });
        // Enough load, and a compaction already (a catalogue snapshot to copy and a log
        // cut behind it; more follow while the backup copies).
        wait_for(
            "deltas and a compaction before the backup",
            Duration::from_secs(240),
            || {
                let compacted = server.log().contains("overlay compacted");
                (compacted && deltas.lock().unwrap().len() >= 40).then_some(())
            },
        );
        // Everything acknowledged up to here must be in the backup.
        let acked = (
            deltas.lock().unwrap().clone(),
            orders.lock().unwrap().clone(),
        );
        let (code, out_text, err) = vitrine(&[
            "backup",
            "--data-dir",
            server.data_path().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out_text}{err}");
        assert!(out_text.starts_with("backed up "), "{out_text}");
        // The load goes on for a while after the backup, then stops.
        let after = deltas.lock().unwrap().len() + 10;
        wait_for("deltas after the backup", Duration::from_secs(240), || {
            (deltas.lock().unwrap().len() >= after).then_some(())
        });
        stop.store(true, Ordering::Relaxed);
        acked
    });
    assert!(
        server.log().contains("logs flushed on request"),
        "{}",
        server.log()
    );
    drop(server);

    // Restored into a new directory, a server has all of it.
    let dir = tempfile::tempdir().unwrap();
    let restored = dir.path().join("data");
    let (code, out_text, err) = vitrine(&[
        "restore",
        out.to_str().unwrap(),
        "--data-dir",
        restored.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out_text}{err}");
    assert!(out_text.starts_with("restored "), "{out_text}");
    let server = Server::start_in(dir, Some(&config));
    // In chunks within `max_tokens` (a slow machine acknowledges many before the backup).
    for tokens in acked_deltas.chunks(500) {
        let statuses = server.post_json(
            "/api/deltastatus",
            &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": tokens}),
        );
        assert_eq!(statuses.status, 200, "{}", statuses.body);
        for status in statuses.json().as_array().unwrap() {
            assert_eq!(status["Status"], 1, "{status}");
        }
    }
    for order_id in &acked_orders {
        let again = server.serverside(json!({"events": [order_event(order_id)]}));
        let errors = again.json()["errors"].clone();
        assert_eq!(
            errors,
            json!([format!(
                "events[0].data.orderid: order {order_id:?} was already recorded; it was not counted again"
            )]),
            "order {order_id} is missing from the restored server"
        );
    }
    // A backup into a directory that holds something is refused.
    let (code, _, err) = vitrine(&[
        "restore",
        out.to_str().unwrap(),
        "--data-dir",
        server.data_path().to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("exists and is not empty"), "{err}");
}

#[test]
fn a_log_writer_behind_answers_503_with_retry_after_before_applying_anything() {
    // A backlog of one record: the writer lingers a millisecond after each batch, so a
    // burst of requests on one connection finds it behind (as a slow disk would).
    let config =
        ConfigToml::new("[limits]\nmax_log_backlog = 1\n[durability]\nevents_fsync = \"never\"")
            .account(
                AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo)
                    .zone(ZoneToml::new("TOP", "trending", 2)),
            )
            .to_toml();
    let server = Server::with_config(&config);
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let burst: Vec<u8> = (0..200)
        .flat_map(|i| {
            let body = crate::common::serverside_body(json!({"visitorId": format!("burst-{i}"),
                "events": [{"name": "product_view", "data": {"id": "P00001"}}]}))
            .to_string();
            crate::common::serverside_request(&body)
        })
        .collect();
    let answers = crate::common::pipeline(&mut stream, &burst, 200);
    let refused: Vec<&Resp> = answers.iter().filter(|r| r.status == 503).collect();
    println!("{} of 200 refused", refused.len());
    assert!(
        !refused.is_empty(),
        "no request found the log writer behind"
    );
    assert!(answers.iter().all(|r| r.status == 200 || r.status == 503));
    let first = refused[0];
    assert_eq!(first.header("retry-after"), Some("1"));
    let message = first.json()["errors"][0].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("the events could not be logged: the log writer is behind: "),
        "{message}"
    );
    // A refused request applied nothing: its visitor was never recorded.
    let metrics = server.get("/metrics").body;
    let served: f64 = metrics
        .lines()
        .find(|l| l.starts_with("vitrine_visitors{"))
        .and_then(|l| l.rsplit_once(' ')?.1.parse().ok())
        .unwrap();
    assert_eq!(
        served as usize,
        answers.iter().filter(|r| r.status == 200).count()
    );
}
