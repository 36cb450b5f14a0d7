//! `jitter`: how long a fixed piece of CPU work takes on this machine, again and again.
//! The work never changes (a fixed number of steps of a generator), so what its tail
//! shows beyond its median is the machine's: interrupts, the hypervisor, other threads.
//! It is the floor under any latency percentile a server can show on the same cores.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anyhow::Context;

/// `jitter`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct JitterArgs {
    /// Microseconds the fixed work takes (calibrated once at the start).
    #[arg(long, default_value_t = 20)]
    work_us: u64,
    /// Times the work is timed.
    #[arg(long, default_value_t = 100_000)]
    samples: usize,
    /// CPUs the thread runs on, e.g. `0` (default: any).
    #[arg(long)]
    cpus: Option<String>,
}

/// `steps` steps of a linear congruential generator.
fn work(steps: u64) -> u64 {
    let mut state = black_box(1u64);
    for _ in 0..steps {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
    }
    black_box(state)
}

/// The number of steps that take `target` (the fastest of a few tries).
fn calibrate(target: Duration) -> u64 {
    const PROBE: u64 = 1_000_000;
    let fastest = (0..5)
        .map(|_| {
            let started = Instant::now();
            work(PROBE);
            started.elapsed()
        })
        .min()
        .unwrap_or(Duration::from_millis(1));
    let per_step = fastest.as_secs_f64() / PROBE as f64;
    (target.as_secs_f64() / per_step).max(1.0) as u64
}

pub(crate) fn jitter(args: JitterArgs) -> anyhow::Result<()> {
    if let Some(cpus) = args.cpus.as_deref() {
        crate::cpus::pin_current_thread(&crate::cpus::parse(cpus)?)?;
    }
    let steps = calibrate(Duration::from_micros(args.work_us));
    let mut histogram = hdrhistogram::Histogram::<u64>::new(3).context("a histogram")?;
    for _ in 0..args.samples {
        let started = Instant::now();
        work(steps);
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        histogram.record(took.max(1)).context("recording a time")?;
    }
    let us = |q: f64| histogram.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "fixed work of {} steps, {} times: p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
        steps,
        args.samples,
        us(0.5),
        us(0.9),
        us(0.99),
        us(0.999),
        histogram.max() as f64 / 1000.0
    );
    Ok(())
}
