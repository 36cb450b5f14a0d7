//! `vitrine-loadtest quality` end to end: planted clusters (from `gen-interactions`),
//! baselines tuned and tested, the workspace's `vitrine` spawned, fed and replayed to;
//! the report must hold every method's figures and each zone's ratio to the best
//! baseline with its interval, and the co-view zones must find the clusters.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly where its setup does not hold"
)]

mod common;

use std::path::{Path, PathBuf};

use common::{loadtest, vitrine};
use std::process::Command;

use serde_json::Value;

fn interactions(dir: &Path) -> PathBuf {
    let path = dir.join("interactions.csv");
    let status = Command::new(loadtest())
        .args(["gen-interactions", "--visitors", "300", "--products", "400"])
        .arg("--out")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

#[test]
fn quality_compares_the_zones_with_tuned_baselines_on_the_same_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let interactions = interactions(dir.path());
    let items = dir.path().join("items.csv");
    let mut listed = String::from("product,title,categories\n");
    for p in 1..=400 {
        listed.push_str(&format!("P{p:05},Product {p},c{}|all\n", (p - 1) / 20));
    }
    std::fs::write(&items, listed).unwrap();
    let report_path = dir.path().join("quality.json");
    let out = Command::new(loadtest())
        .arg("quality")
        .arg("--interactions")
        .arg(&interactions)
        .arg("--items")
        .arg(&items)
        .arg("--vitrine")
        .arg(vitrine())
        .args([
            "--holdout",
            "2",
            "--methods",
            "most_popular,markov,sequential_rules,co_view_exact,co_view_ease",
            "--strategies",
            "personalized,viewed_together,trending",
            "--resamples",
            "200",
            "--partners",
            "64",
            "--neighbours",
            "20",
            "--replay-catch-ups",
            "3",
            "--out",
        ])
        .arg(&report_path)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "quality failed: {printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(printed.contains("vitrine personalized"), "{printed}");

    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(report["settings"]["holdout"], 2);
    assert_eq!(report["settings"]["k"], 10);
    assert_eq!(report["settings"]["partners"], 64);
    assert_eq!(report["settings"]["neighbours"], 20);
    assert_eq!(report["settings"]["replay_catch_ups"], 3);
    assert_eq!(report["dataset"]["visitors"], 300);
    let evaluated = report["dataset"]["visitors_evaluated"].as_u64().unwrap();
    assert!(evaluated > 200, "{report}");
    let baselines = report["baselines"].as_object().unwrap();
    assert_eq!(baselines.len(), 5, "{report}");
    // Every setting of the grid was tried on the validation round.
    let tried = baselines["sequential_rules"]["validation_hr_at_k"]
        .as_array()
        .unwrap();
    assert_eq!(tried.len(), 32, "{report}");
    for scores in baselines
        .values()
        .chain(report["vitrine"].as_object().unwrap().values())
    {
        // Two rounds of every evaluated visitor.
        assert_eq!(
            scores["questions"].as_u64().unwrap(),
            2 * evaluated,
            "{report}"
        );
        for metric in ["hr_at_k", "ndcg_at_k", "mrr_at_k", "coverage"] {
            let value = scores[metric].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&value), "{metric} {value}: {report}");
        }
    }
    let hr = |scores: &Value| scores["hr_at_k"].as_f64().unwrap();
    let popular = hr(&baselines["most_popular"]);
    for zone in ["personalized", "viewed_together"] {
        let scores = &report["vitrine"][zone];
        assert!(
            hr(scores) > 2.0 * popular,
            "{zone} {} vs most popular {popular}: {report}",
            hr(scores)
        );
        let ratio = &scores["ratio_to_best_baseline"];
        let (value, low, high) = (
            ratio["ratio"].as_f64().unwrap(),
            ratio["ci95"][0].as_f64().unwrap(),
            ratio["ci95"][1].as_f64().unwrap(),
        );
        assert!(low <= value && value <= high, "{report}");
    }
    let best = report["best_baseline"].as_str().unwrap();
    assert!(baselines.contains_key(best));
    // Vitrine's own model without bounds, and blended with EASE, are reported beside
    // the baselines, never taken as the best of them.
    for reference in ["co_view_exact", "co_view_ease"] {
        let scores = &baselines[reference];
        assert_eq!(scores["reference"], true, "{report}");
        assert_ne!(best, reference, "{report}");
        assert!(scores["ratio_to_best_baseline"]["ratio"].as_f64().unwrap() > 0.0);
    }
    assert!(printed.contains("reference, not a baseline"), "{printed}");
    // Trending is most-popular by another name: about the same hit rate.
    let trending = hr(&report["vitrine"]["trending"]);
    assert!((trending - popular).abs() < 0.1, "{trending} vs {popular}");
    // The server's self-tuning after the replay and after each round: its active
    // setting (one of the grid's), and the switches so far.
    let tuning = report["tuning"].as_array().unwrap();
    let phases: Vec<&str> = tuning
        .iter()
        .map(|t| t["after"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        ["replay", "validation round", "test round 1", "test round 2"],
        "{report}"
    );
    for phase in tuning {
        let window = phase["active"]["coViewWindow"].as_u64().unwrap();
        assert!([1, 3, 10].contains(&window), "{phase}");
        // Windows by dampings by weights on direction.
        assert_eq!(phase["settings"].as_array().unwrap().len(), 27, "{phase}");
        assert!(phase["switches"].is_array(), "{phase}");
        // And personalized's recipe: histories by long-term parts by session weights by
        // popularity by the purchases' weight.
        assert_eq!(
            phase["recipe"]["settings"].as_array().map(Vec::len),
            Some(48),
            "{phase}"
        );
    }
    let sent: Vec<u64> = tuning
        .iter()
        .map(|t| t["interactions_sent"].as_u64().unwrap())
        .collect();
    assert!(sent.windows(2).all(|w| w[0] < w[1]), "{sent:?}");
    assert!(
        printed.contains("vitrine self-tuning after the replay"),
        "{printed}"
    );
}

#[test]
fn quality_names_what_is_wrong_with_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let interactions = interactions(dir.path());
    // What the tool says on standard error when it refuses `args`.
    let refused = |args: &[&str]| -> String {
        let out = Command::new(loadtest())
            .arg("quality")
            .arg("--interactions")
            .arg(&interactions)
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} accepted");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = refused(&["--methods", "most_popular,nonsense"]);
    assert!(
        said.contains("--methods") && said.contains("nonsense"),
        "{said}"
    );
    let said = refused(&["--methods", "co_view_exact"]);
    assert!(said.contains("at least one baseline"), "{said}");
    let said = refused(&["--holdout", "50"]);
    assert!(said.contains("52 interactions"), "{said}");
}
