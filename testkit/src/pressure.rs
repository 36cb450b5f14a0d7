//! CPU pressure that a test creates and bounds itself, so that a promise is checked on a
//! busy machine: [`CpuBurner`] runs one busy loop per core in child processes (each
//! under `timeout`, so that none outlives a crashed test) and kills them when dropped;
//! [`starve_threads`] moves a process's threads of one name to the `SCHED_IDLE`
//! class (`chrt --idle`), as a background thread is on a machine whose cores other
//! work keeps busy: it runs only when nothing else wants the core.

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Longest a burner lives, whatever happens to the test that started it.
pub const BURN_LIMIT_SECS: u64 = 600;

/// Busy loops on every core, until dropped.
#[derive(Debug)]
pub struct CpuBurner {
    children: Vec<Child>,
}

/// Why pressure could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum PressureError {
    /// A helper program could not be started.
    #[error("starting {program}: {source}")]
    Spawn {
        /// The program.
        program: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// `chrt` refused to change a thread's class.
    #[error("chrt --idle on thread {tid}: {message}")]
    Chrt {
        /// The thread.
        tid: String,
        /// Its message.
        message: String,
    },
}

impl CpuBurner {
    /// One busy loop per available core (at least two).
    pub fn start() -> Result<CpuBurner, PressureError> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        let mut children = Vec::with_capacity(cores);
        for _ in 0..cores {
            let child = Command::new("timeout")
                .arg(BURN_LIMIT_SECS.to_string())
                .args(["sh", "-c", "while :; do :; done"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|source| PressureError::Spawn {
                    program: "timeout sh",
                    source,
                })?;
            children.push(child);
        }
        Ok(CpuBurner { children })
    }
}

impl Drop for CpuBurner {
    fn drop(&mut self) {
        for child in &self.children {
            // `timeout` passes SIGTERM on to its busy loop and exits once it has gone; a
            // SIGKILL would leave the loop running, orphaned.
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        for child in &mut self.children {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Moves every thread of process `pid` named `name` to `SCHED_IDLE`; returns how many.
/// (Lowering a thread's own class needs no privilege.)
pub fn starve_threads(pid: u32, name: &str) -> Result<usize, PressureError> {
    let tasks = Path::new("/proc").join(pid.to_string()).join("task");
    let entries = std::fs::read_dir(&tasks).map_err(|source| PressureError::Spawn {
        program: "reading /proc",
        source,
    })?;
    let mut moved = 0;
    for entry in entries.flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let tid = entry.file_name().to_string_lossy().into_owned();
        let out = Command::new("chrt")
            .args(["--idle", "-p", "0", &tid])
            .output()
            .map_err(|source| PressureError::Spawn {
                program: "chrt",
                source,
            })?;
        if !out.status.success() {
            return Err(PressureError::Chrt {
                tid,
                message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        moved += 1;
    }
    Ok(moved)
}
