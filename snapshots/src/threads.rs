//! Where the process's threads run (`cpu_layout`): serving and background work on the
//! same CPUs, or, with two or more CPUs, background work on a CPU of its own.
//!
//! Serving threads answer requests (the runtime's workers). Background threads are
//! the log writer, the ingest pool (feed builds, compactions, model rounds), the delta
//! workers, the compactors and the feed downloads. With [`Layout::Split`] and at least
//! two CPUs in the process's affinity mask at start, background threads run on the
//! last of them and serving threads on the others, so that a log flush, a model round
//! or a feed build never takes a serving core; with one CPU, or with
//! [`Layout::Shared`], every thread may run on every CPU, as before.
//!
//! The placement is decided once ([`decide`], by the server at start, before it starts
//! a thread) and read by each thread as it starts ([`place_current_thread`]). A thread
//! started before the decision, or in a process that never decides (a library user, a
//! test), stays where it was started.

use std::sync::OnceLock;

use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// How serving and background threads share the CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Every thread may run on every CPU the process has.
    #[default]
    Shared,
    /// With two or more CPUs, background threads on the last, serving threads on the
    /// others; with one, as [`Layout::Shared`].
    Split,
}

/// What a thread does, for where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Answers requests.
    Serving,
    /// Writes the log, builds feeds and models, compacts.
    Background,
}

/// Where each role runs, as decided at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The layout asked for.
    pub layout: Layout,
    /// The CPUs serving threads run on.
    pub serving: Vec<usize>,
    /// The CPUs background threads run on.
    pub background: Vec<usize>,
}

impl Placement {
    /// The placement of `layout` over `cpus` (the process's CPUs, ascending).
    pub fn of(layout: Layout, cpus: &[usize]) -> Placement {
        let (serving, background) = match (layout, cpus.split_last()) {
            (Layout::Split, Some((last, others))) if !others.is_empty() => {
                (others.to_vec(), vec![*last])
            }
            _ => (cpus.to_vec(), cpus.to_vec()),
        };
        Placement {
            layout,
            serving,
            background,
        }
    }

    /// Whether background threads have CPUs of their own.
    pub fn is_split(&self) -> bool {
        self.serving != self.background
    }

    fn cpus(&self, role: Role) -> &[usize] {
        match role {
            Role::Serving => &self.serving,
            Role::Background => &self.background,
        }
    }
}

static PLACEMENT: OnceLock<Placement> = OnceLock::new();

/// Decides where threads run from now on, over the CPUs the calling thread may use
/// (the process's, when called at start): the first decision stands, and is returned.
pub fn decide(layout: Layout) -> &'static Placement {
    PLACEMENT.get_or_init(|| Placement::of(layout, &process_cpus()))
}

/// The placement decided, if one was.
pub fn placement() -> Option<&'static Placement> {
    PLACEMENT.get()
}

/// How many threads of `role` the decided placement has CPUs for (at least 1); without
/// a decision, the CPUs the calling thread may use.
pub fn cpus_for(role: Role) -> usize {
    match PLACEMENT.get() {
        Some(placement) => placement.cpus(role).len().max(1),
        None => process_cpus().len().max(1),
    }
}

/// Puts the calling thread on its role's CPUs, when the decided placement splits them
/// (otherwise it stays where it is). A refusal (a CPU taken away since the decision)
/// leaves it where it is.
pub fn place_current_thread(role: Role) {
    let Some(placement) = PLACEMENT.get().filter(|p| p.is_split()) else {
        return;
    };
    let mut set = CpuSet::new();
    for cpu in placement.cpus(role) {
        set.set(*cpu);
    }
    // Best effort: a thread left where it was still runs, only not where it was meant to.
    let _ = sched_setaffinity(None, &set);
}

/// The CPUs the calling thread may use, ascending (CPU 0 alone if they cannot be read).
pub fn process_cpus() -> Vec<usize> {
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU)
            .filter(|cpu| set.is_set(*cpu))
            .collect(),
        Err(_) => vec![0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_puts_background_work_on_the_last_cpu_and_one_cpu_is_shared() {
        let split = Placement::of(Layout::Split, &[0, 1, 2, 3]);
        assert_eq!(split.serving, vec![0, 1, 2]);
        assert_eq!(split.background, vec![3]);
        assert!(split.is_split());
        let two = Placement::of(Layout::Split, &[2, 5]);
        assert_eq!((two.serving, two.background), (vec![2], vec![5]));
        let one = Placement::of(Layout::Split, &[1]);
        assert_eq!(
            (one.serving.clone(), one.background.clone()),
            (vec![1], vec![1])
        );
        assert!(!one.is_split());
        let shared = Placement::of(Layout::Shared, &[0, 1]);
        assert_eq!(shared.serving, shared.background);
        assert!(!shared.is_split());
    }
}
