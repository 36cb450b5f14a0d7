//! Deltas against a large catalogue (`VITRINE_BENCH_PRODUCTS`, default 100,000),
//! through the server's own path: parse, log (fsynced), the account's worker applying
//! them to the overlay over the memory-mapped base, Status 1. Printed per run:
//! - latency: deltas submitted one at a time, each waited for — the median and p99 time
//!   from the submission returning (the 200) to Status 1;
//! - throughput: deltas submitted by 8 threads at once — deltas and products applied
//!   per second until the last is Status 1;
//! - for 10-product and 1000-product deltas, then one compaction of the resulting
//!   overlay into a new base snapshot.
//!
//! Criterion then times one 10-product delta, submitted and waited for.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use vitrine_benches::deltas::{Categories, delta_body, submit, wait_applied as wait};
use vitrine_benches::feedgen::generate_feed;
use vitrine_ingest::jobs::{AccountJobs, JobsConfig, ingest_pool};
use vitrine_ingest::{feed, store};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn measure(jobs: &Arc<AccountJobs>, n: usize, size: usize, sequential: usize, parallel: usize) {
    let mut latencies = Vec::with_capacity(sequential);
    for round in 0..sequential {
        let body = delta_body(n, size, round, Categories::Moved);
        let token = submit(jobs, &body);
        let acknowledged = Instant::now();
        wait(jobs, &token);
        latencies.push(acknowledged.elapsed());
    }
    latencies.sort();
    eprintln!(
        "deltas/{size}_products latency: 200 -> Status 1 median {:.2} ms, p99 {:.2} ms ({sequential} deltas one at a time)",
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
    );

    let bodies: Vec<Value> = (0..parallel)
        .map(|round| delta_body(n, size, sequential + round, Categories::Moved))
        .collect();
    let started = Instant::now();
    let threads = 8;
    let tokens: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = bodies
            .chunks(parallel.div_ceil(threads))
            .map(|chunk| {
                scope.spawn(move || chunk.iter().map(|b| submit(jobs, b)).collect::<Vec<_>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let submitted = started.elapsed();
    for token in &tokens {
        wait(jobs, token);
    }
    let elapsed = started.elapsed();
    eprintln!(
        "deltas/{size}_products throughput: {parallel} deltas from {threads} threads, all submitted in {:.2} s, all Status 1 in {:.2} s = {:.0} deltas/s, {:.0} products/s; overlay now {} changes",
        submitted.as_secs_f64(),
        elapsed.as_secs_f64(),
        parallel as f64 / elapsed.as_secs_f64(),
        (parallel * size) as f64 / elapsed.as_secs_f64(),
        jobs.account().catalogue().overlay_size(),
    );
}

fn deltas(c: &mut Criterion) {
    let n = vitrine_benches::bench_products();
    let pool = ingest_pool(2).unwrap();
    let started = Instant::now();
    let catalogue = pool.install(|| {
        let mut bytes = generate_feed(n, 42);
        let (document, _) = feed::parse(&mut bytes).unwrap();
        feed::build_new(&document).unwrap()
    });
    let dir = tempfile::tempdir().unwrap();
    let (mapped, _) = store::write_snapshot(dir.path(), &catalogue, 1).unwrap();
    drop(catalogue);
    eprintln!(
        "deltas: {n}-product catalogue built and mapped in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let account = Arc::new(vitrine_testkit::account(Vec::new(), mapped));
    let config = JobsConfig {
        // Compaction is measured on its own below.
        compact_after_changes: usize::MAX,
        compact_interval: Duration::from_secs(86_400),
        state_interval: Duration::from_secs(86_400),
        ..JobsConfig::with_pool(Arc::clone(&pool))
    };
    let (jobs, _) = AccountJobs::start(account, dir.path(), 1, config).unwrap();
    let jobs = Arc::new(jobs);

    measure(&jobs, n, 10, 300, 3000);
    measure(&jobs, n, 1000, 30, 200);

    let started = Instant::now();
    let report = jobs.compact().unwrap().unwrap();
    eprintln!(
        "deltas/compaction: overlay folded into a {:.1} MB base snapshot in {:.1} s",
        report.saved.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    let mut group = c.benchmark_group("deltas");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(2));
    let mut round = 10_000;
    group.bench_function("submit_and_apply_10_products", |b| {
        b.iter(|| {
            round += 1;
            let token = submit(&jobs, &delta_body(n, 10, round, Categories::Moved));
            wait(&jobs, &token);
        })
    });
    group.finish();
}

criterion_group!(benches, deltas);
criterion_main!(benches);
