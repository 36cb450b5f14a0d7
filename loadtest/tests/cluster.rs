//! `vitrine-loadtest run --server A,B`: shoppers spread over two nodes of a real cluster
//! (three `nats-server` processes on loopback), each visitor on one node, results per
//! node and in total, and the replication lag probed between the nodes.

#![expect(
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

mod common;

use std::process::Command;

use common::{loadtest, vitrine};
use serde_json::Value;
use vitrine_testkit::TestServer;
use vitrine_testkit::nats::NatsCluster;

fn node(nats: &NatsCluster, name: &str) -> TestServer {
    let servers: Vec<String> = nats.urls().iter().map(|u| format!("{u:?}")).collect();
    let config = format!(
        "{}\n[cluster]\nservers = [{}]\nnode = \"{name}\"\nreplicas = 3\n",
        vitrine_benches::traffic::store_config(vitrine_testkit::CatalogueStart::Demo),
        servers.join(", ")
    );
    TestServer::start(&vitrine(), Some(&config)).unwrap()
}

#[test]
fn shoppers_spread_over_two_nodes_are_reported_per_node_with_the_replication_lag() {
    let nats = NatsCluster::start(3).expect("a NATS cluster");
    let a = node(&nats, "a");
    let b = node(&nats, "b");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let servers = format!("http://{},http://{}", a.addr(), b.addr());
    let output = Command::new(loadtest())
        .args([
            "run",
            "--server",
            &servers,
            "--warmup",
            "1",
            "--seconds",
            "4",
        ])
        .args(["--connections", "4", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("node 2 at"), "{stdout}");
    assert!(stdout.contains("replication lag"), "{stdout}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();

    let nodes = report["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{report}");
    let mut sum = 0;
    for (node, server) in nodes.iter().zip([a.addr(), b.addr()]) {
        assert_eq!(node["server"], format!("http://{server}"));
        let requests = node["idle"]["requests"].as_u64().unwrap();
        assert!(requests > 0, "{node}");
        assert_eq!(
            node["idle"]["statuses"]["200"].as_u64(),
            Some(requests),
            "{node}"
        );
        sum += requests;
    }
    assert_eq!(report["vitrine"]["idle"]["requests"].as_u64(), Some(sum));

    let lag = &report["replication_lag"];
    assert!(lag["samples"].as_u64().unwrap() > 0, "{lag}");
    assert_eq!(lag["timeouts"], 0, "{lag}");
    let p = &lag["lag_us"];
    assert!(
        p["p50"].as_u64().unwrap() > 0 && p["p50"].as_u64() <= p["max"].as_u64(),
        "{lag}"
    );
}
