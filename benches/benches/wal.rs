//! The write-ahead log under the `always` policy with 64 concurrent writers: appends per
//! second, and the mean and median number of records each fsync covered (group commit) — printed
//! per run — next to a single writer's rate.

#![expect(
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use vitrine_snapshots::wal::{SyncPolicy, Wal, WalConfig};

const PAYLOAD: usize = 256;

fn run(writers: usize, per_writer: usize) -> (Duration, u64, u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let config = WalConfig {
        dir: dir.path().join("wal"),
        segment_bytes: 64 << 20,
        policy: SyncPolicy::Always,
        first_sequence: 1,
    };
    let (wal, _) = Wal::open(config).unwrap();
    let wal = Arc::new(wal);
    let started = Instant::now();
    let threads: Vec<_> = (0..writers)
        .map(|_| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                for _ in 0..per_writer {
                    wal.append(1, vec![7u8; PAYLOAD]).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let elapsed = started.elapsed();
    let stats = wal.stats();
    (
        elapsed,
        stats.syncs.load(Ordering::Relaxed),
        stats.synced_records.load(Ordering::Relaxed),
        stats.records_per_sync_at(0.5),
    )
}

fn wal(c: &mut Criterion) {
    let mut group = c.benchmark_group("wal_always");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    for (writers, per_writer) in [(1usize, 200usize), (64, 50)] {
        let records = (writers * per_writer) as u64;
        group.throughput(Throughput::Elements(records));
        let (elapsed, syncs, synced, median) = run(writers, per_writer);
        eprintln!(
            "wal_always/{writers}_writers: {records} appends in {:.3} s = {:.0} appends/s, {syncs} fsyncs, {:.1} records per fsync (mean), {median} (median)",
            elapsed.as_secs_f64(),
            records as f64 / elapsed.as_secs_f64(),
            synced as f64 / syncs.max(1) as f64
        );
        group.bench_function(format!("{writers}_writers"), |b| {
            b.iter(|| run(writers, per_writer))
        });
    }
    group.finish();
}

criterion_group!(benches, wal);
criterion_main!(benches);
