//! `vitrine-loadtest gen-interactions` and `eval` end to end against a real server: the
//! co-view zone must find the planted clusters far better than the most-popular
//! baseline, and the report must repeat its settings.
//!
//! The server is the workspace's `vitrine` binary, built next to this crate's binary by
//! `cargo test --workspace`.

mod common;

use common::{loadtest, vitrine};
use std::process::Command;

use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, TestServer, ZoneToml};

fn config() -> String {
    let account = AccountToml::new("eval-access-key", "eval-secret-key", CatalogueStart::Demo)
        .zone(ZoneToml::new("PP-VT", "viewed_together", 10).titled("Customers also viewed"));
    ConfigToml::default().account(account).to_toml()
}

#[test]
fn eval_scores_the_co_view_zone_above_the_baseline_on_planted_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let interactions = dir.path().join("interactions.csv");
    let status = Command::new(loadtest())
        .args(["gen-interactions", "--visitors", "400", "--out"])
        .arg(&interactions)
        .status()
        .unwrap();
    assert!(status.success());
    let csv = std::fs::read_to_string(&interactions).unwrap();
    assert!(
        csv.starts_with("visitor,product,timestamp,event\n"),
        "{csv:.80}"
    );

    let server = TestServer::start(&vitrine(), Some(&config())).unwrap_or_else(|e| panic!("{e}"));
    let report_path = dir.path().join("report.json");
    let out = Command::new(loadtest())
        .args(["eval", "--server"])
        .arg(format!("http://{}", server.addr()))
        .args([
            "--access-key",
            "eval-access-key",
            "--secret-key",
            "eval-secret-key",
            "--zone",
            "PP-VT",
            "--page-type",
            "product_page",
            "--k",
            "10",
            "--interactions",
        ])
        .arg(&interactions)
        .arg("--out")
        .arg(&report_path)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "eval failed: {printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(printed.contains("zone PP-VT"), "{printed}");
    assert!(printed.contains("most popular"), "{printed}");

    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(report["settings"]["zone"], "PP-VT");
    assert_eq!(report["settings"]["k"], 10);
    assert_eq!(report["settings"]["holdout"], 1);
    assert_eq!(report["settings"]["page_type"], "product_page");
    let evaluated = report["visitors_evaluated"].as_u64().unwrap();
    assert!(evaluated >= 300, "{report}");
    assert!(report["events_replayed"].as_u64().unwrap() > evaluated);
    let zone = &report["zone"];
    let baseline = &report["most_popular_baseline"];
    for scores in [zone, baseline] {
        for metric in ["hr_at_k", "ndcg_at_k", "mrr", "coverage"] {
            let value = scores[metric].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&value), "{metric} {value}: {report}");
        }
    }
    let hr = zone["hr_at_k"].as_f64().unwrap();
    let base = baseline["hr_at_k"].as_f64().unwrap();
    assert!(
        hr >= 0.2 && hr >= 3.0 * base,
        "co-view HR {hr} vs baseline {base}: {report}"
    );
    assert!(zone["ndcg_at_k"].as_f64().unwrap() > baseline["ndcg_at_k"].as_f64().unwrap());
    assert!(zone["coverage"].as_f64().unwrap() > baseline["coverage"].as_f64().unwrap());
}
