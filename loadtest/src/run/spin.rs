//! `--client-spin`: the load generator's workers kept awake. Each worker of its runtime
//! runs a task that yields in a loop, so the worker never sleeps in `epoll_wait`: it
//! looks for ready sockets between turns, and an answer written to one finds it awake.
//! The server's write then wakes no sleeping thread, which on a virtual machine is an
//! interrupt sent through its host and is paid by the server's core (benches/README.md,
//! "The ratios move with the host"). Both servers of a run, Vitrine and the bare
//! baseline, meet the same awake generator. Give it CPUs of its own (`--client-cpus`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use tokio::runtime::Runtime;

/// Turns a spinner counts before adding them to the shared count.
const TURNS_PER_ADD: u64 = 1024;

/// The spinning tasks of a runtime, stopped when dropped.
pub(super) struct Spinners {
    turns: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    started: Instant,
}

impl Spinners {
    /// One spinning task per worker of `runtime`.
    pub(super) fn start(runtime: &Runtime) -> Spinners {
        let turns = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        for _ in 0..runtime.metrics().num_workers() {
            runtime.spawn(spin(Arc::clone(&turns), Arc::clone(&stop)));
        }
        Spinners {
            turns,
            stop,
            started: Instant::now(),
        }
    }

    /// The spinners' turns a second since they started (counted by the thousand): what
    /// shows they ran.
    pub(super) fn turns_per_second(&self) -> f64 {
        let seconds = self.started.elapsed().as_secs_f64();
        if seconds <= 0.0 {
            return 0.0;
        }
        (self.turns.load(Ordering::Relaxed) as f64 / seconds).round()
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

async fn spin(turns: Arc<AtomicU64>, stop: Arc<AtomicBool>) {
    let mut counted = 0;
    while !stop.load(Ordering::Relaxed) {
        counted += 1;
        if counted == TURNS_PER_ADD {
            turns.fetch_add(counted, Ordering::Relaxed);
            counted = 0;
        }
        tokio::task::yield_now().await;
    }
}
