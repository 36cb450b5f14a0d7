//! Pinning the server and the load generator to separate CPUs (`--server-cpus`,
//! `--client-cpus`), so that a run measures the server's own time and tail rather than
//! the two taking turns on the same cores.

use anyhow::{Context, bail};
use rustix::thread::{CpuSet, sched_setaffinity};

/// Reads a CPU list such as `0`, `0,2` or `1-3`.
pub(crate) fn parse(list: &str) -> anyhow::Result<CpuSet> {
    let mut set = CpuSet::new();
    let mut any = false;
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>(), b.trim().parse::<usize>()),
            None => (part.parse::<usize>(), part.parse::<usize>()),
        };
        let (Ok(first), Ok(last)) = (first, last) else {
            bail!("{list:?}: expected CPU numbers such as 0, 0,2 or 1-3");
        };
        if first > last || last >= CpuSet::MAX_CPU {
            bail!("{list:?}: {part} is not a range of CPUs of this machine");
        }
        for cpu in first..=last {
            set.set(cpu);
            any = true;
        }
    }
    if !any {
        bail!("{list:?}: no CPU given");
    }
    Ok(set)
}

/// Pins the calling thread (and the threads it starts from now on) to `cpus`.
pub(crate) fn pin_current_thread(cpus: &CpuSet) -> anyhow::Result<()> {
    sched_setaffinity(None, cpus).context("pinning this thread")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_bad_ones_are_refused() {
        let set = parse("0,2-3").unwrap();
        assert!(set.is_set(0) && !set.is_set(1) && set.is_set(2) && set.is_set(3));
        for bad in ["", "x", "3-1", "0-", "99999"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
