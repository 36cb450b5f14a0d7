//! Crash safety with real processes: the server runs under concurrent writes (events
//! with orders, deltas) and is SIGKILLed at random moments, restarted each time on the
//! same data directory; corrupted state snapshots and log tails are detected on restart.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{
    self, DEMO_KEY, DEMO_SECRET, Server, account_dir, files_containing, serverside_body, try_post,
    wait_for,
};

fn config(fsync: &str) -> String {
    format!(
        r#"
region = "eu"
[durability]
events_fsync = "{fsync}"
fsync_interval_ms = 50
state_snapshot_interval_secs = 1
wal_segment_bytes = 65536
[deltas]
compact_after_changes = 40
[feeds]
background_priority = "normal"
[[accounts]]
access_key = "{DEMO_KEY}"
secret_key = "{DEMO_SECRET}"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "RV-01"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 10
"#
    )
}

/// A small xorshift generator: the kill moments differ per run but need no crate.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Rng(nanos | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn order_event(order_id: &str) -> Value {
    json!({"name": "order", "data": {"orderid": order_id, "userid": "crash-user",
        "items": [{"id": "P00001", "qty": 1, "unitprice": 9.99}]}})
}

/// Order ids of `ids` that the server already holds.
fn present_orders(server: &Server, ids: &[String]) -> Vec<String> {
    common::present_orders(ids, order_event, |events| {
        let resp = server.serverside(json!({"visitorId": "checker", "events": events}));
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()
    })
}

/// What writers had acknowledged before a kill.
#[derive(Default)]
struct Acked {
    /// (order id, when the 200 arrived).
    orders: Vec<(String, Instant)>,
    /// (delta token, product id it adds).
    deltas: Vec<(String, String)>,
}

/// Runs writers against `server` until it is killed after a random 150–650 ms; returns
/// what was acknowledged and when the kill happened.
fn write_until_killed(
    server: Server,
    round: usize,
    rng: &mut Rng,
) -> (Acked, Instant, tempfile::TempDir) {
    let acked = Mutex::new(Acked::default());
    let addr = server.addr;
    let kill_after = Duration::from_millis(150 + rng.below(500));
    let (killed_at, dir) = std::thread::scope(|scope| {
        for writer in 0..3 {
            let acked = &acked;
            scope.spawn(move || {
                for n in 0.. {
                    let order_id = format!("r{round}-w{writer}-{n}");
                    let body = serverside_body(json!({
                        "visitorId": format!("crash-visitor-{writer}"),
                        "events": [
                            {"name": "product_view", "data": {"id": format!("P{:05}", 1 + n % 2000)}},
                            order_event(&order_id),
                        ],
                    }));
                    match try_post(addr, "/api/serverside", &body) {
                        Some(resp) if resp.status == 200 => {
                            acked.lock().unwrap().orders.push((order_id, Instant::now()));
                        }
                        Some(resp) => panic!("unexpected answer: {} {}", resp.status, resp.body),
                        None => return,
                    }
                }
            });
        }
        let acked = &acked;
        scope.spawn(move || {
            for n in 0.. {
                let id = format!("CRASH-{round}-{n}");
                let body = json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
                    "Products": [{"Id": id, "Title": "Crash test", "Link": "/p/crash",
                        "Image": "//img/crash.jpg", "Prices": ["5 GBP"], "Categories": ["cat-01"]}]});
                match try_post(addr, "/api/delta", &body) {
                    Some(resp) if resp.status == 200 => {
                        let token = resp.json()["Token"].as_str().unwrap().to_owned();
                        acked.lock().unwrap().deltas.push((token, id));
                    }
                    Some(resp) => panic!("unexpected answer: {} {}", resp.status, resp.body),
                    None => return,
                }
            }
        });
        std::thread::sleep(kill_after);
        let killed_at = Instant::now();
        (killed_at, server.kill9())
    });
    (acked.into_inner().unwrap(), killed_at, dir)
}

fn delta_statuses(server: &Server, tokens: &[&str]) -> Vec<Value> {
    let mut statuses = Vec::new();
    for chunk in tokens.chunks(100) {
        let resp = server.post_json(
            "/api/deltastatus",
            &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": chunk}),
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        statuses.extend(resp.json().as_array().unwrap().iter().cloned());
    }
    statuses
}

#[test]
fn twenty_sigkills_under_writes_lose_nothing_acknowledged_with_always() {
    let config = config("always");
    let mut rng = Rng::seeded();
    let mut dir = tempfile::tempdir().unwrap();
    let mut orders: Vec<String> = Vec::new();
    let mut deltas: Vec<(String, String)> = Vec::new();
    for round in 0..20 {
        let server = Server::start_in(dir, Some(&config));
        // Everything acknowledged before every earlier kill is there.
        let present = present_orders(&server, &orders);
        let missing: Vec<&String> = orders.iter().filter(|o| !present.contains(o)).collect();
        assert!(
            missing.is_empty(),
            "round {round}: acknowledged orders lost: {missing:?}\n{}",
            server.log()
        );
        let tokens: Vec<&str> = deltas.iter().map(|(t, _)| t.as_str()).collect();
        for (status, (token, _)) in delta_statuses(&server, &tokens).iter().zip(&deltas) {
            assert_eq!(
                status["Status"],
                1,
                "round {round}: delta {token}: {status}\n{}",
                server.log()
            );
        }
        let (acked, _, back) = write_until_killed(server, round, &mut rng);
        orders.extend(acked.orders.into_iter().map(|(id, _)| id));
        deltas.extend(acked.deltas);
        dir = back;
    }
    assert!(
        orders.len() > 100,
        "too few writes to mean anything: {}",
        orders.len()
    );
    assert!(deltas.len() > 20, "too few deltas: {}", deltas.len());
    let server = Server::start_in(dir, Some(&config));
    assert_eq!(present_orders(&server, &orders).len(), orders.len());
    let tokens: Vec<&str> = deltas.iter().map(|(t, _)| t.as_str()).collect();
    for status in delta_statuses(&server, &tokens) {
        assert_eq!(status["Status"], 1, "{status}");
    }
    // The last acknowledged delta's product is served.
    let (_, last) = deltas.last().unwrap();
    server.serverside(json!({"visitorId": "final-check",
        "events": [{"name": "product_view", "data": {"id": last}}]}));
    let resp = server.serverside(json!({"visitorId": "final-check", "zones": ["RV-01"]}));
    assert_eq!(
        resp.json()["zones"]["RV-01"]["items"][0]["Id"],
        last.as_str(),
        "{}",
        resp.body
    );
    // The first state snapshot follows the first catalogue snapshot, built on the
    // lowest-priority ingest pool: on a busy machine it may not have come before the
    // kills. Once one is written, a restart restores it.
    let dir_path = server.dir().to_path_buf();
    wait_for("a state snapshot", Duration::from_secs(240), || {
        (newest_state(&dir_path) > 0).then_some(())
    });
    let server = Server::start_in(server.kill9(), Some(&config));
    let log = server.log();
    assert!(log.contains("tracking state restored"), "{log}");
    assert_eq!(present_orders(&server, &orders).len(), orders.len());
}

#[test]
fn with_interval_nothing_acknowledged_an_interval_before_the_kill_is_lost() {
    let config = config("interval");
    let mut rng = Rng::seeded();
    let mut dir = tempfile::tempdir().unwrap();
    for round in 0..5 {
        let server = Server::start_in(dir, Some(&config));
        let (acked, killed_at, back) = write_until_killed(server, round, &mut rng);
        // fsync_interval_ms = 50; the margin covers the writer thread's scheduling.
        let settled: Vec<String> = acked
            .orders
            .iter()
            .filter(|(_, at)| *at + Duration::from_millis(250) < killed_at)
            .map(|(id, _)| id.clone())
            .collect();
        let server = Server::start_in(back, Some(&config));
        let present = present_orders(&server, &settled);
        let missing: Vec<&String> = settled.iter().filter(|o| !present.contains(o)).collect();
        assert!(
            missing.is_empty(),
            "round {round}: lost {missing:?}\n{}",
            server.log()
        );
        // Recovery is a prefix of the log: per writer, the orders present have no gaps.
        let all: Vec<String> = acked.orders.iter().map(|(id, _)| id.clone()).collect();
        let present = present_orders(&server, &all);
        for writer in 0..3 {
            let prefix = format!("r{round}-w{writer}-");
            let mine: Vec<&String> = all.iter().filter(|o| o.starts_with(&prefix)).collect();
            let kept = mine.iter().take_while(|o| present.contains(o)).count();
            assert!(
                mine[kept..].iter().all(|o| !present.contains(o)),
                "round {round}: a gap in writer {writer}'s orders"
            );
        }
        dir = server.kill9();
    }
}

/// Files of `prefix` in the demo account's directory, oldest first.
fn snapshots(server_dir: &std::path::Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let account = account_dir(&server_dir.join("data"), DEMO_KEY);
    let mut found: Vec<_> = std::fs::read_dir(&account)
        .unwrap()
        .map(|e| e.unwrap().path())
        // Whole snapshots only: not a `.tmp` being written when the server was killed.
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(prefix) && name.ends_with(".snap")
        })
        .collect();
    found.sort();
    found
}

#[test]
fn a_corrupt_state_snapshot_or_log_tail_is_detected_and_the_server_falls_back() {
    let config = config("always");
    let server = Server::start_in(tempfile::tempdir().unwrap(), Some(&config));
    let dir_path = server.dir().to_path_buf();
    view(&server, "early", "P00010");
    let before = newest_state(&dir_path);
    // Both kept state snapshots begun after the early view (the next one may have
    // been under way during it): both hold it.
    wait_for(
        "two state snapshots after the early view",
        Duration::from_secs(240),
        || (newest_state(&dir_path) >= before + 3).then_some(()),
    );
    view(&server, "late", "P00020");
    wait_for(
        "a state snapshot with the late view",
        Duration::from_secs(240),
        || {
            let newest = snapshots(&dir_path, "state-").pop()?;
            std::fs::read(&newest)
                .ok()?
                .windows(b"late".len())
                .any(|w| w == b"late")
                .then_some(())
        },
    );
    let dir = server.kill9();

    // Flip a byte in the newest state snapshot: the older one is restored, the log
    // replayed from its position, and the discarded file named in the log.
    let newest = snapshots(dir.path(), "state-").pop().unwrap();
    let mut bytes = std::fs::read(&newest).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x5a;
    std::fs::write(&newest, bytes).unwrap();
    let server = Server::start_in(dir, Some(&config));
    let log = server.log();
    assert!(log.contains("skipping state snapshot"), "{log}");
    assert!(log.contains("checksum"), "{log}");
    assert_eq!(recent(&server, "early"), ["P00010"]);
    assert_eq!(recent(&server, "late"), ["P00020"]);

    // A torn record at the log's tail: cut there on restart, logged, the rest kept.
    view(&server, "tail", "P00030");
    let dir = server.kill9();
    let wal = account_dir(&dir.path().join("data"), DEMO_KEY).join("wal");
    let mut segments: Vec<_> = std::fs::read_dir(&wal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    let last = segments.pop().unwrap();
    let intact = std::fs::metadata(&last).unwrap().len();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&last)
        .unwrap();
    std::io::Write::write_all(&mut file, &[0x40, 0, 0, 0, 1, 2, 3]).unwrap();
    drop(file);
    let server = Server::start_in(dir, Some(&config));
    let log = server.log();
    assert!(log.contains("cut there"), "{log}");
    assert_eq!(std::fs::metadata(&last).unwrap().len(), intact);
    assert_eq!(recent(&server, "tail"), ["P00030"]);
    assert_eq!(recent(&server, "early"), ["P00010"]);
}

#[test]
fn forget_removes_the_shopper_from_every_file_and_a_restart_does_not_bring_them_back() {
    const EMAIL: &str = "Ann.Erasure@example.com";
    const USER: &str = "user-ann-77";
    let config = config("always");
    let server = Server::start_in(tempfile::tempdir().unwrap(), Some(&config));
    let ann = |visitor: &str, events: Value| {
        let resp = server.serverside(json!({"visitorId": visitor, "events": events}));
        assert_eq!(resp.status, 200, "{}", resp.body);
    };
    ann(
        "v-ann",
        json!([
            {"name": "customer_details", "data": {"email": EMAIL, "userid": USER, "firstname": "Annabel"}},
            {"name": "product_view", "data": {"id": "P00011"}},
        ]),
    );
    ann(
        "v-ann-phone",
        json!([
            {"name": "product_view", "data": {"id": "P00012"}},
            {"name": "order", "data": {"orderid": "ann-order-1", "email": EMAIL,
                "items": [{"id": "P00012", "qty": 1, "unitprice": 5.0}]}},
        ]),
    );
    ann(
        "v-bob",
        json!([
            {"name": "customer_details", "data": {"email": "bob@example.com", "firstname": "Bob"}},
            {"name": "product_view", "data": {"id": "P00013"}},
        ]),
    );
    let resp = server.post_json(
        "/api/delta",
        &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
            "Users": [{"UserId": USER, "Email": EMAIL, "FirstName": "Annabel"}]}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    let data = server.data_path();
    // The shopper is on disk: in the log and, once written, in a state snapshot.
    wait_for(
        "the email in a state snapshot",
        Duration::from_secs(240),
        || {
            files_containing(&data, "ann.erasure@example.com")
                .iter()
                .any(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("state-")
                })
                .then_some(())
        },
    );

    let resp = server.post_json(
        "/api/user/forget",
        &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": EMAIL.to_uppercase()}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(
        resp.body.contains("2 visitor(s) and 1 user record(s)"),
        "{}",
        resp.body
    );

    // A later event carrying the forgotten email stores no personal data.
    ann(
        "v-ann-again",
        json!([
            {"name": "customer_details", "data": {"email": EMAIL, "firstname": "Annabel"}},
            {"name": "product_view", "data": {"id": "P00014"}},
        ]),
    );

    // Within the bound (README: the erasure flush, seconds on a small store), no file
    // holds the email, the user id or the name.
    let bound = Duration::from_secs(30);
    for needle in ["ann.erasure@example.com", USER, "annabel"] {
        wait_for(
            &format!("{needle} gone from the data directory"),
            bound,
            || files_containing(&data, needle).is_empty().then_some(()),
        );
    }
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config));
    let data = server.data_path();
    for needle in ["ann.erasure@example.com", USER, "annabel"] {
        assert_eq!(
            files_containing(&data, needle),
            Vec::<std::path::PathBuf>::new(),
            "{needle}"
        );
    }
    let recent = |visitor: &str| -> Vec<Value> {
        let resp = server.serverside(json!({"visitorId": visitor, "zones": ["RV-01"]}));
        resp.json()["zones"]["RV-01"]["items"]
            .as_array()
            .unwrap()
            .clone()
    };
    assert!(
        recent("v-ann").is_empty(),
        "the erased visitor's history is gone"
    );
    assert!(recent("v-ann-phone").is_empty());
    assert_eq!(
        recent("v-bob")[0]["Id"],
        "P00013",
        "other visitors are intact"
    );
    assert_eq!(
        recent("v-ann-again")[0]["Id"],
        "P00014",
        "a later visit is kept, without the email"
    );
    // The order id is still known (aggregates stay), and forgetting again finds nothing.
    assert_eq!(
        present_orders(&server, &["ann-order-1".to_owned()]).len(),
        1
    );
    let resp = server.post_json(
        "/api/user/forget",
        &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Identifier": EMAIL}),
    );
    assert_eq!(resp.status, 404, "{}", resp.body);
    assert!(files_containing(&data, "bob@example.com").iter().any(|p| p.to_string_lossy().contains("state-") || p.to_string_lossy().contains(".wal")));
}

/// Records a product view of `visitor`.
fn view(server: &Server, visitor: &str, product: &str) {
    let resp = server.serverside(json!({"visitorId": visitor,
        "events": [{"name": "product_view", "data": {"id": product}}]}));
    assert_eq!(resp.status, 200, "{}", resp.body);
}

/// The visitor's recently viewed products.
fn recent(server: &Server, visitor: &str) -> Vec<String> {
    zone_items(
        server,
        json!({"visitorId": visitor, "zones": ["RV-01"]}),
        "RV-01",
    )
}

/// The product ids `zone` shows in the answer to `request`.
fn zone_items(server: &Server, request: Value, zone: &str) -> Vec<String> {
    let resp = server.serverside(request);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["zones"][zone]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["Id"].as_str().unwrap().to_owned())
        .collect()
}

/// The newest state snapshot's number (its file name counts up by one per snapshot).
fn newest_state(server_dir: &std::path::Path) -> u64 {
    snapshots(server_dir, "state-")
        .last()
        .and_then(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            name.strip_prefix("state-")?
                .strip_suffix(".snap")?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Cuts `bytes` off the end of the newest log segment (a torn last write).
fn cut_log_tail(server_dir: &std::path::Path, bytes: u64) {
    let wal = account_dir(&server_dir.join("data"), DEMO_KEY).join("wal");
    let newest = vitrine_snapshots::wal::segments(&wal)
        .unwrap()
        .pop()
        .expect("a log segment");
    let len = std::fs::metadata(&newest.1).unwrap().len();
    assert!(len > bytes, "{} has {len} bytes", newest.1.display());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&newest.1)
        .unwrap();
    file.set_len(len - bytes).unwrap();
}

#[test]
fn a_torn_tail_after_a_snapshot_covered_the_whole_log_loses_no_acknowledged_write() {
    let config = config("always");
    let server = Server::start_in(tempfile::tempdir().unwrap(), Some(&config));
    let delta = |server: &Server, id: &str| -> String {
        let product = json!({"Id": id, "Title": format!("Crash {id}"), "Link": "/", "Image": "/i",
            "Prices": ["1.00 GBP"], "Categories": []});
        let resp = server.post_json(
            "/api/delta",
            &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Products": [product]}),
        );
        assert_eq!(resp.status, 200, "{}", resp.body);
        resp.json()["Token"].as_str().unwrap().to_owned()
    };
    let applied = |server: &Server, tokens: &[&str]| {
        wait_for("deltas applied", Duration::from_secs(240), || {
            let statuses = delta_statuses(server, tokens);
            statuses.iter().all(|s| s["Status"] == 1).then_some(())
        });
    };

    // The first checkpoint writes a catalogue snapshot; the delta comes after it, so
    // only the log holds it.
    let dir_path = server.dir().to_path_buf();
    wait_for("a catalogue snapshot", Duration::from_secs(240), || {
        (!snapshots(&dir_path, "catalogue-").is_empty()).then_some(())
    });
    // Acknowledged writes: a delta (Status 1), an order, views; then a quiet period
    // until a state snapshot covers the whole log.
    let first = delta(&server, "TORN-1");
    applied(&server, &[&first]);
    let order = "TORN-ORDER-1".to_owned();
    assert!(present_orders(&server, std::slice::from_ref(&order)).is_empty());
    view(&server, "torn-viewer", "TORN-1");
    view(&server, "torn-viewer", "P00020");
    let quiet_from = newest_state(&dir_path);
    wait_for(
        "two state snapshots after the last write",
        Duration::from_secs(240),
        || (newest_state(&dir_path) >= quiet_from + 2).then_some(()),
    );

    // Killed; the last record is torn (3 bytes lost) while the server is down.
    let dir = server.kill9();
    cut_log_tail(dir.path(), 3);
    let server = Server::start_in(dir, Some(&config));
    assert!(
        server
            .log()
            .contains("before a snapshot's position; it goes on at"),
        "the log says what recovery did: {}",
        server.log()
    );
    assert_eq!(delta_statuses(&server, &[&first])[0]["Status"], 1);
    let seen = recent(&server, "torn-viewer");
    assert!(
        seen.contains(&"TORN-1".to_owned()),
        "the delta's product is served: {seen:?}"
    );
    assert!(seen.contains(&"P00020".to_owned()), "{seen:?}");
    let present = present_orders(&server, std::slice::from_ref(&order));
    assert_eq!(present, std::slice::from_ref(&order));

    // More acknowledged writes after the resumed log, another kill, another restart.
    let second = delta(&server, "TORN-2");
    applied(&server, &[&second]);
    view(&server, "torn-viewer", "TORN-2");
    let dir = server.kill9();
    let server = Server::start_in(dir, Some(&config));
    assert_eq!(
        delta_statuses(&server, &[&first, &second])
            .iter()
            .map(|s| s["Status"].clone())
            .collect::<Vec<_>>(),
        [json!(1), json!(1)]
    );
    let seen = recent(&server, "torn-viewer");
    for product in ["TORN-1", "TORN-2", "P00020"] {
        assert!(seen.contains(&product.to_owned()), "{product} in {seen:?}");
    }
    assert_eq!(
        present_orders(&server, std::slice::from_ref(&order)),
        [order]
    );
}

/// Pair counts and what each count inherited are in the state snapshot: a server
/// SIGKILLed once a snapshot has covered the views (the log records before it are not
/// read again) lists `viewed_together` as it did before the kill.
#[test]
fn co_view_counts_and_what_they_inherited_survive_a_sigkill() {
    // Eight partners per product, undamped weights: a list shows the sure counts.
    let config = config("always").replace(
        "  [[accounts.zones]]",
        "  [accounts.models]\n  partners = 8\n  neighbours = 8\n  partner_damping = 0\n  \
         seed_damping = 0\n  [[accounts.zones]]\n  id = \"VT-01\"\n  title = \"Viewed \
         together\"\n  type = \"recommender-product\"\n  strategy = \"viewed_together\"\n  \
         count = 10\n  [[accounts.zones]]",
    );
    let server = Server::start_in(tempfile::tempdir().unwrap(), Some(&config));
    let dir_path = server.dir().to_path_buf();
    // P00001's list fills with eight partners, each viewed just before it by three
    // visitors (P00002 by four); then P00011 (paired five times with P00012 before)
    // takes the weakest place once, inheriting a count of 3: it is sure of one pairing
    // and comes last.
    for partner in 2..10 {
        let visitors = if partner == 2 { 4 } else { 3 };
        for n in 0..visitors {
            let visitor = format!("pairing-{partner}-{n}");
            view(&server, &visitor, &format!("P{partner:05}"));
            view(&server, &visitor, "P00001");
        }
    }
    for n in 0..5 {
        view(&server, &format!("elsewhere-{n}"), "P00012");
        view(&server, &format!("elsewhere-{n}"), "P00011");
    }
    view(&server, "newcomer", "P00011");
    view(&server, "newcomer", "P00001");
    let together = |server: &Server| {
        let request = json!({"visitorId": "asker", "zones": ["VT-01"],
            "events": [{"name": "product_view", "data": {"id": "P00001"}}]});
        zone_items(server, request, "VT-01")
    };
    let before = wait_for("P00001's rebuilt list", Duration::from_secs(240), || {
        let listed = together(&server);
        (listed.last().map(String::as_str) == Some("P00011")).then_some(listed)
    });
    assert_eq!(before.len(), 8, "{before:?}");
    assert_eq!(before[0], "P00002", "{before:?}");
    // A snapshot begun after the views holds them.
    let written = newest_state(&dir_path);
    wait_for(
        "a state snapshot after the views",
        Duration::from_secs(240),
        || (newest_state(&dir_path) >= written + 2).then_some(()),
    );
    let server = Server::start_in(server.kill9(), Some(&config));
    assert!(
        server.log().contains("tracking state restored"),
        "{}",
        server.log()
    );
    // Had the snapshot kept the counts alone, P00011 would be taken at its count (4)
    // and come second.
    let after = wait_for("the restored list", Duration::from_secs(240), || {
        let listed = together(&server);
        (!listed.is_empty()).then_some(listed)
    });
    assert_eq!(after, before);
}
