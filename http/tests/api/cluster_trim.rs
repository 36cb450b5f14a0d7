//! What the cluster's stream, object store and snapshot sets keep: an erasure through
//! one node leaves the person in no answer and no file of any node or NATS server, and a
//! node joining after the stream was trimmed restores the cluster's snapshot (or, when
//! its own files end before the trimmed stream, refuses to start and says so); a scrub
//! that fails is tried again until it is done.

use std::time::Duration;

use crate::common::{self, Server, files_containing, serverside_body, wait_for};
use serde_json::json;
use vitrine_testkit::nats::NatsCluster;

use super::cluster::{
    KEY, REPLICATED, SECRET, add_products, applied_on, category, config, holds_everything,
    order_event, plain, serverside, settled, views, wait_for_logged, with_snapshots, zone,
};
use super::cluster_faults::gauge;

#[test]
fn an_erasure_through_b_leaves_the_person_in_no_answer_and_no_file_of_any_node_or_nats_server() {
    const EMAIL: &str = "erase.me.please@example.com";
    const USER: &str = "user-erase-me-42";
    const VISITOR: &str = "visitor-erase-me-42";
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    // Snapshot sets in the object store too, every second: those naming the person
    // are replaced.
    let a = Server::with_config(&with_snapshots(config(&nats, "a")));
    let b = Server::with_config(&with_snapshots(config(&nats, "b")));
    let token = add_products(&a, &["p0", "p1", "p2", "p3"]);
    applied_on(&b, &token);

    // The person through A: a user record (a delta), their details and their views;
    // someone else's views too.
    let body = json!({"AppKey": KEY, "SecretKey": SECRET,
        "Users": [{"UserId": USER, "Email": EMAIL, "FirstName": "Erasable"}]});
    let resp = a.post_json("/api/delta", &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let events = json!([
        {"name": "customer_details", "data": {"email": EMAIL, "userid": USER, "firstname": "Erasable"}},
        {"name": "product_view", "data": {"id": "p1"}},
        {"name": "product_view", "data": {"id": "p2"}},
    ]);
    serverside(&a, VISITOR, events, &[]);
    views(&a, "keeper", &["p3"]);
    wait_for("the person's views on B", REPLICATED, || {
        (zone(&b, VISITOR, "RV").len() == 2).then_some(())
    });
    settled(&b);

    let resp = b.post_json(
        "/api/user/forget",
        &json!({"AccessKey": KEY, "SecretKey": SECRET, "Identifier": EMAIL}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);

    // Within the bound (CLUSTER.md: the scrub, then the NATS servers' RAFT logs are
    // compacted within minutes), no file of either node or of any NATS server holds the
    // email, the user id or the visitor id. Shoppers keep the cluster busy meanwhile.
    // The scrub waits up to `SCRUB_WAIT` (60 s) for the nodes' readers, then writes a
    // fresh snapshot set: on a loaded machine that is more than `REPLICATED`.
    wait_for_logged(
        "the scrub of the cluster's storage",
        Duration::from_secs(300),
        (&a, &b),
        || {
            b.log()
                .contains("erased person scrubbed from the cluster's storage")
        },
    );
    let mut dirs = vec![a.data_path(), b.data_path()];
    dirs.extend((0..3).filter_map(|i| nats.store_dir(i).map(std::path::Path::to_path_buf)));
    let mut n = 0usize;
    wait_for(
        "the person gone from every file",
        Duration::from_secs(420),
        || {
            n += 1;
            views(&a, &format!("busy-{}", n % 5), &["p0"]);
            let left: Vec<_> = [EMAIL, USER, VISITOR]
                .iter()
                .flat_map(|needle| {
                    dirs.iter()
                        .flat_map(|dir| files_containing(dir, needle))
                        .map(move |file| format!("{needle} in {}", file.display()))
                })
                .collect();
            if n.is_multiple_of(60) {
                eprintln!("still holding the person: {left:?}");
            }
            if n == 240 {
                eprintln!(
                    "A's log:\n{}\nB's log:\n{}",
                    plain(&a.log()),
                    plain(&b.log())
                );
            }
            // Looked for twice a second: a grep of every directory is not free.
            if !left.is_empty() {
                std::thread::sleep(Duration::from_millis(500));
            }
            left.is_empty().then_some(())
        },
    );
    // Gone from both nodes' answers (asked last: asking makes a new, empty visitor);
    // the others' history is still served.
    for server in [&b, &a] {
        assert!(zone(server, VISITOR, "RV").is_empty());
        assert_eq!(zone(server, "keeper", "RV"), ["p3"]);
    }
}

/// The numbers following `field=` in a log.
fn numbers(log: &str, field: &str) -> Vec<u64> {
    let needle = format!("{field}=");
    plain(log)
        .split(&needle)
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

#[test]
fn a_node_joining_after_the_stream_was_trimmed_restores_the_clusters_snapshot() {
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    let config = |node: &str| {
        config(&nats, node).replace(
            "replicas = 3\n",
            "replicas = 3\nsnapshot_interval_secs = 1\n",
        )
    };
    let a = Server::with_config(&config("a"));
    let b = Server::with_config(&config("b"));
    let mut orders = Vec::new();
    let mut deltas = Vec::new();
    let write = |round: usize, orders: &mut Vec<String>, deltas: &mut Vec<String>| {
        for (n, server) in [&a, &b].into_iter().enumerate() {
            for i in 0..10 {
                let order_id = format!("t{round}-{n}-{i}");
                let body = serverside_body(json!({"appId": KEY, "secretKey": SECRET,
                    "visitorId": format!("buyer-{n}-{i}"), "events": [order_event(&order_id)]}));
                let resp = server.post_json("/api/serverside", &body);
                assert_eq!(resp.status, 200, "{}", resp.body);
                orders.push(order_id);
            }
            deltas.push(add_products(server, &[&format!("t{round}-{n}")]));
        }
    };
    write(0, &mut orders, &mut deltas);
    settled(&a);
    settled(&b);
    // Snapshots every second by one of the nodes; once the stream is trimmed past the
    // writes, a new node cannot read them from it.
    let stored = || {
        numbers(&a.log(), "trimmed_before")
            .into_iter()
            .chain(numbers(&b.log(), "trimmed_before"))
            .max()
            .unwrap_or(0)
    };
    wait_for_logged(
        "the stream trimmed past the first writes",
        REPLICATED,
        (&a, &b),
        || stored() > 20,
    );
    // More writes after the snapshots: read from the stream.
    write(1, &mut orders, &mut deltas);

    let c = Server::with_config(&config("c"));
    let log = plain(&c.log());
    assert!(
        log.contains("restored from the cluster's snapshot"),
        "{log}"
    );
    let from = numbers(&log, "from");
    assert!(from.first().is_some_and(|&from| from > 1), "{log}");
    settled(&c);
    holds_everything(&c, &orders, &deltas, "C restored from the snapshot");
    let mut on_b = category(&b);
    let mut on_c = category(&c);
    on_b.sort();
    on_c.sort();
    assert_eq!(on_c, on_b);
}

#[test]
fn a_node_whose_files_end_before_the_trimmed_stream_refuses_to_start_and_says_so() {
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    let config = |node: &str| with_snapshots(config(&nats, node));
    let a = Server::with_config(&config("a"));
    let b = Server::with_config(&config("b"));
    let token = add_products(&a, &["p0"]);
    applied_on(&b, &token);
    let kept = b.kill9();
    // Shoppers on A while B is down, until the stream is trimmed well past where B
    // stopped (once NATS has removed B's abandoned reader, after a minute).
    let mut n = 0usize;
    wait_for(
        "the stream trimmed past B's files",
        Duration::from_secs(300),
        || {
            n += 1;
            views(&a, &format!("shopper-{}", n % 10), &["p0"]);
            let trimmed = numbers(&a.log(), "trimmed_before")
                .into_iter()
                .max()
                .unwrap_or(0);
            (trimmed > 50).then_some(())
        },
    );
    let refused = vitrine_testkit::TestServer::start_in(
        std::path::Path::new(common::binary()),
        kept,
        Some(&config("b")),
    );
    let Err(error) = refused else {
        panic!("B started on files behind the trimmed stream");
    };
    let error = plain(&error.to_string());
    assert!(
        error.contains("the stream was trimmed behind the cluster's snapshots")
            && error.contains("start the node with an empty data directory"),
        "{error}"
    );
}

/// Sets its flag when dropped.
struct Stop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Sends `signal` (`-STOP`, `-CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {signal} {pid}");
}

/// An erasure's scrub that fails is tried again until it is done. A is stopped (SIGSTOP)
/// before the erasure through B, so the scrub waits for A's reader to pass it; two of the
/// three NATS servers are killed meanwhile, so the scrub fails (no quorum). They are
/// started again and A resumed: the scrub is tried again and scrubs the cluster's storage.
#[test]
fn a_scrub_that_fails_without_a_quorum_is_tried_again_until_it_is_done() {
    const VISITOR: &str = "visitor-scrubbed-later";
    let mut nats = NatsCluster::start(3).expect("a NATS cluster");
    let mut a = Server::with_config(&config(&nats, "a"));
    let b = Server::with_config(&config(&nats, "b"));
    let token = add_products(&a, &["p0", "p1", "p2"]);
    applied_on(&b, &token);
    views(&a, VISITOR, &["p1", "p2"]);
    wait_for("the person's views on B", REPLICATED, || {
        (zone(&b, VISITOR, "RV").len() == 2).then_some(())
    });
    settled(&b);

    let a_pid = a.child().id();
    signal(a_pid, "-STOP");
    let resp = b.post_json(
        "/api/user/forget",
        &json!({"AccessKey": KEY, "SecretKey": SECRET, "Identifier": VISITOR}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    nats.kill9(1);
    nats.kill9(2);
    wait_for_logged("the scrub's failure", REPLICATED, (&a, &b), || {
        b.log()
            .contains("the erased person is not scrubbed from the cluster's storage yet")
    });
    let pending = |server: &Server| gauge(server, "vitrine_cluster_scrubs_pending");
    assert_eq!(pending(&b), 1.0, "the failed scrub is pending");
    nats.restart(1).expect("NATS server 1 again");
    nats.restart(2).expect("NATS server 2 again");
    signal(a_pid, "-CONT");

    wait_for_logged(
        "the scrub tried again",
        Duration::from_secs(300),
        (&a, &b),
        || {
            b.log()
                .contains("erased person scrubbed from the cluster's storage")
        },
    );
    let log = plain(&b.log());
    let done = log
        .lines()
        .find(|line| line.contains("erased person scrubbed from the cluster's storage"))
        .expect("the scrub's line");
    let field = |name: &str| -> u64 {
        done.split_whitespace()
            .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {done}"))
    };
    assert!(field("attempt") > 1, "{done}");
    assert!(field("messages") >= 1, "the person's views deleted: {done}");
    assert_eq!(pending(&b), 0.0, "the scrub done");
    // A erases the person once it reads the erasure: the scrub waits for its reader to
    // be handed the record, not for the record to be applied.
    for (name, server) in [("B", &b), ("A", &a)] {
        wait_for(
            &format!("the person gone from {name}'s answers"),
            REPLICATED,
            || zone(server, VISITOR, "RV").is_empty().then_some(()),
        );
    }
}

/// The pid of the running `vitrine` process started in `dir` (its command line names
/// its data directory there).
fn pid_in(dir: &std::path::Path) -> Option<u32> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline);
            (cmdline.contains("serve") && cmdline.contains(&needle)).then_some(pid)
        })
}

/// Node C joins while shoppers order through A and B and A stores a snapshot set every
/// second (trimming the stream behind them). C is stopped (SIGSTOP) for five seconds
/// right after it restored a set, before it reads the stream: five newer sets are
/// stored meanwhile, and the stream would be trimmed past the set C restored if trims
/// waited only for the consumers that exist. C registered its position before it
/// picked the set, so no trim passes it: once resumed it reads the stream after its
/// set and holds every order, as A and B do.
#[test]
fn a_node_paused_while_joining_under_writes_is_never_trimmed_past() {
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    let config = |node: &str| with_snapshots(config(&nats, node));
    let a = Server::with_config(&config("a"));
    let b = Server::with_config(&config("b"));
    let token = add_products(&a, &["p1"]);
    applied_on(&b, &token);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let orders = std::sync::Mutex::new(Vec::new());
    let c = std::thread::scope(|scope| {
        // The writers stop however this block ends (a panic included).
        let _stop = Stop(&stop);
        for (name, server) in [("a", &a), ("b", &b)] {
            let (stop, orders) = (&stop, &orders);
            scope.spawn(move || {
                for n in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Acquire) {
                        return;
                    }
                    let order_id = format!("{name}-{n}");
                    let body = serverside_body(json!({"appId": KEY, "secretKey": SECRET,
                        "visitorId": format!("shopper-{name}"),
                        "events": [order_event(&order_id)]}));
                    let resp =
                        common::try_post(server.addr, "/api/serverside", &body).expect("an answer");
                    assert_eq!(resp.status, 200, "{}", resp.body);
                    orders.lock().unwrap().push(order_id);
                    // A shop's pace, not a benchmark's: the sets stay small.
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        }
        // A set holding some orders before C starts.
        wait_for("orders before C joins", REPLICATED, || {
            (orders.lock().unwrap().len() >= 100).then_some(())
        });
        wait_for("a snapshot set", REPLICATED, || {
            a.log().contains("cluster snapshot stored").then_some(())
        });
        let dir = tempfile::Builder::new()
            .prefix("vitrine-test-")
            .tempdir()
            .expect("a temporary directory");
        let path = dir.path().to_path_buf();
        // Stops C once it has restored a set, for five seconds.
        let pauser = scope.spawn(move || {
            let log = path.join("server.log");
            wait_for("C restored a snapshot set", REPLICATED, || {
                std::fs::read_to_string(&log)
                    .is_ok_and(|text| text.contains("restored from the cluster's snapshot"))
                    .then_some(())
            });
            let pid = wait_for("C's process", REPLICATED, || pid_in(&path));
            signal(pid, "-STOP");
            std::thread::sleep(Duration::from_secs(5));
            signal(pid, "-CONT");
        });
        let c = Server::start_in(dir, Some(&config("c")));
        pauser.join().expect("the pauser");
        c
    });
    let orders = orders.into_inner().unwrap();
    settled(&a);
    settled(&b);
    settled(&c);
    for server in [&a, &b, &c] {
        holds_everything(server, &orders, &[], "after C joined");
    }
}
