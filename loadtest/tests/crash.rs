//! `vitrine-loadtest crash`, short: SIGKILLs under concurrent writers with fault
//! injection, against the workspace's `vitrine` binary (built next to this crate's binary
//! by `cargo test --workspace`). The tool fails when anything acknowledged is lost; the
//! README gives the command for a long campaign.

use std::process::Command;

fn crash(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vitrine-loadtest"))
        .arg("crash")
        .args(args)
        .output();
    assert!(out.is_ok(), "running vitrine-loadtest: {out:?}");
    let Ok(out) = out else { return String::new() };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn twelve_kills_with_faults_under_always_lose_nothing_acknowledged() {
    let report = crash(&["--kills", "12", "--faults"]);
    assert!(report.contains("12 kills under always"), "{report}");
    assert!(report.contains("lost: 0 orders, 0 deltas"), "{report}");
}

#[test]
fn six_kills_with_faults_under_interval_lose_nothing_older_than_the_window() {
    let report = crash(&["--kills", "6", "--faults", "--policy", "interval"]);
    assert!(report.contains("6 kills under interval"), "{report}");
    assert!(report.contains("lost: 0 orders, 0 deltas"), "{report}");
}
