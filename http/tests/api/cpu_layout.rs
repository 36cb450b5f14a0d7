//! `cpu_layout`: where the server's threads run, read from `/proc` of the real process.
//! Split, with two or more CPUs, puts the log writer, the ingest pool and the delta
//! workers on the last CPU and the runtime's workers on the others; shared leaves
//! every thread on every CPU; on one CPU both are the same.

use std::collections::BTreeMap;

use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ZoneToml};

use crate::common::{DEMO_KEY, DEMO_SECRET, Server};

fn config(preamble: &str) -> String {
    let account = AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo)
        .zone(ZoneToml::new("HP-01", "trending", 4));
    ConfigToml::new(preamble).account(account).to_toml()
}

/// A CPU list as `/proc` writes it (`0-1,3`).
fn cpu_list(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(first.parse::<usize>().unwrap()..=last.parse::<usize>().unwrap());
    }
    cpus
}

/// The CPUs a `/proc/.../status` allows.
fn allowed(status: &str) -> Vec<usize> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("a Cpus_allowed_list line");
    cpu_list(line)
}

/// Each of the process's threads by name (several may share one), with the CPUs it may
/// run on.
fn threads(pid: u32) -> BTreeMap<String, Vec<Vec<usize>>> {
    let mut threads: BTreeMap<String, Vec<Vec<usize>>> = BTreeMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let dir = task.unwrap().path();
        let (Ok(name), Ok(status)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("status")),
        ) else {
            continue; // a thread that ended while being read
        };
        threads
            .entry(name.trim().to_owned())
            .or_default()
            .push(allowed(&status));
    }
    threads
}

fn cpus_of<'a>(threads: &'a BTreeMap<String, Vec<Vec<usize>>>, prefix: &str) -> &'a [Vec<usize>] {
    threads
        .iter()
        .find(|(name, _)| name.starts_with(prefix))
        .map(|(_, cpus)| cpus.as_slice())
        .unwrap_or_else(|| panic!("no thread named {prefix}…: {threads:?}"))
}

#[test]
fn split_puts_the_log_writer_and_the_ingest_pool_on_a_cpu_of_their_own() {
    let ours = allowed(&std::fs::read_to_string("/proc/self/status").unwrap());
    let mut server = Server::with_config(&config("cpu_layout = \"split\""));
    let pid = server.child().id();
    let threads = threads(pid);
    let (serving, background) = match ours.split_last() {
        Some((last, others)) if !others.is_empty() => (others.to_vec(), vec![*last]),
        // One CPU: nothing changes.
        _ => (ours.clone(), ours.clone()),
    };
    for writer in cpus_of(&threads, "wal-writer") {
        assert_eq!(writer, &background, "the log writer: {threads:?}");
    }
    for ingest in cpus_of(&threads, "ingest-") {
        assert_eq!(ingest, &background, "the ingest pool: {threads:?}");
    }
    for prefix in ["delta-", "compact-", "feed-runner", "rayon-"] {
        for cpus in cpus_of(&threads, prefix) {
            assert_eq!(cpus, &background, "{prefix}: {threads:?}");
        }
    }
    for worker in cpus_of(&threads, "tokio-r") {
        assert_eq!(worker, &serving, "a runtime thread: {threads:?}");
    }
    let main = allowed(&std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/status")).unwrap());
    assert_eq!(main, serving, "the main thread");
    assert!(
        server.log().contains("CPU placement"),
        "the placement is logged: {}",
        server.log()
    );
}

#[test]
fn shared_leaves_every_thread_on_every_cpu_and_a_bad_layout_is_refused() {
    let ours = allowed(&std::fs::read_to_string("/proc/self/status").unwrap());
    let mut server = Server::with_config(&config(""));
    let threads = threads(server.child().id());
    for prefix in ["wal-writer", "ingest-", "tokio-r", "rayon-"] {
        for cpus in cpus_of(&threads, prefix) {
            assert_eq!(cpus, &ours, "{prefix}: {threads:?}");
        }
    }
    drop(server);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vitrine.toml");
    std::fs::write(&path, config("cpu_layout = \"apart\"")).unwrap();
    let out = std::process::Command::new(crate::common::binary())
        .arg("check-config")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("cpu_layout")
            && said.contains("expected \"shared\" or \"split\", got \"apart\""),
        "{said}"
    );
}
