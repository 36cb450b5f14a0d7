//! The damage `vitrine-loadtest crash --faults` does to a stopped server's files: a torn
//! log tail, a flipped byte in a snapshot, or a snapshot deleted, with what each
//! destroyed of the acknowledged writes.

use std::path::{Path, PathBuf};

use rand::Rng;
use rand::rngs::StdRng;
use vitrine_engine::event::Event;
use vitrine_ingest::jobs::{Logged, inspect};
use vitrine_testkit::DEMO_KEY;

/// Damage done while the server is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    None,
    Tear,
    QuietTear,
    FlipCatalogue,
    FlipState,
    DropCatalogue,
    DropState,
}

impl Fault {
    pub(super) fn name(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::Tear => "torn tail",
            Fault::QuietTear => "torn tail after a quiet period",
            Fault::FlipCatalogue => "flipped byte in the newest catalogue snapshot",
            Fault::FlipState => "flipped byte in the newest state snapshot",
            Fault::DropCatalogue => "newest catalogue snapshot missing",
            Fault::DropState => "newest state snapshot missing",
        }
    }
}

pub(super) fn pick_fault(rng: &mut StdRng) -> Fault {
    match rng.random_range(0..10) {
        0 | 1 => Fault::Tear,
        2 | 3 => Fault::QuietTear,
        4 => Fault::FlipCatalogue,
        5 => Fault::FlipState,
        6 => Fault::DropCatalogue,
        7 => Fault::DropState,
        _ => Fault::None,
    }
}

fn account_dir(server_dir: &Path) -> PathBuf {
    let hex: String = DEMO_KEY.bytes().map(|b| format!("{b:02x}")).collect();
    server_dir.join("data").join("accounts").join(hex)
}

/// The snapshot files of a kind, oldest first.
fn snapshot_files(server_dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(account_dir(server_dir))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                        && p.extension().is_some_and(|e| e == "snap")
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// The newest snapshot number of a kind (0 without one).
pub(super) fn newest(server_dir: &Path, prefix: &str) -> u64 {
    snapshot_files(server_dir, prefix)
        .last()
        .and_then(|p| p.file_stem()?.to_str()?.strip_prefix(prefix)?.parse().ok())
        .unwrap_or(0)
}

/// Does `fault` to the stopped server's files; returns the ids of acknowledged writes it
/// destroyed, or `None` when it could not be done (nothing to damage).
pub(super) fn inject(
    fault: Fault,
    server_dir: &Path,
    rng: &mut StdRng,
) -> anyhow::Result<Option<Vec<String>>> {
    match fault {
        Fault::None => Ok(None),
        Fault::Tear | Fault::QuietTear => tear(server_dir, rng.random_range(1..=12)),
        Fault::FlipCatalogue | Fault::FlipState | Fault::DropCatalogue | Fault::DropState => {
            let prefix = match fault {
                Fault::FlipCatalogue | Fault::DropCatalogue => "catalogue-",
                _ => "state-",
            };
            let files = snapshot_files(server_dir, prefix);
            // Only with an older one to fall back to.
            let (Some(newest), true) = (files.last(), files.len() >= 2) else {
                return Ok(None);
            };
            if matches!(fault, Fault::DropCatalogue | Fault::DropState) {
                std::fs::remove_file(newest)?;
            } else {
                let mut bytes = std::fs::read(newest)?;
                if bytes.is_empty() {
                    return Ok(None);
                }
                let at = rng.random_range(0..bytes.len());
                if let Some(byte) = bytes.get_mut(at) {
                    *byte ^= 0x5a;
                }
                std::fs::write(newest, bytes)?;
            }
            Ok(Some(Vec::new()))
        }
    }
}

/// Cuts `bytes` off the newest log segment; returns what the torn record held.
fn tear(server_dir: &Path, bytes: u64) -> anyhow::Result<Option<Vec<String>>> {
    let wal = account_dir(server_dir).join("wal");
    let Some((_, newest)) = vitrine_snapshots::wal::segments(&wal)?.pop() else {
        return Ok(None);
    };
    let (records, _) = vitrine_snapshots::wal::read_segment_file(&newest)?;
    let Some(last) = records.last() else {
        return Ok(None);
    };
    let len = std::fs::metadata(&newest)?.len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&newest)?
        .set_len(len.saturating_sub(bytes))?;
    let destroyed = match inspect(last.kind, &last.payload) {
        Logged::Delta { token } => vec![token],
        Logged::Events(tracked) => tracked
            .events
            .iter()
            .filter_map(|event| match event {
                Event::Order(order) => Some(order.order_id.clone()),
                _ => None,
            })
            .collect(),
        Logged::Forget | Logged::Other => Vec::new(),
    };
    Ok(Some(destroyed))
}
