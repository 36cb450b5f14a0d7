//! Catalogue ingest at scale: a generated feed of `VITRINE_BENCH_PRODUCTS` products
//! (default 100,000), measured three ways in one run:
//! - `simd_json_parse`: the raw simd-json parse of the file (the floor);
//! - `feed_to_catalogue`: parse + validate + build + archive on a 1-thread ingest pool
//!   (the server's pipeline on a 2-core machine);
//! - `snapshot_open_first_answer`: map + validate the snapshot, then answer a first
//!   trending zone (what a restart costs instead of re-parsing).
//!
//! It also prints the feed size and the snapshot bytes per product.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

use std::hint::black_box;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use vitrine_benches::feedgen::generate_feed;
use vitrine_engine::account::ServeRequest;
use vitrine_engine::catalogue::{Catalogue, CatalogueData};
use vitrine_engine::zone::Strategy;
use vitrine_ingest::feed;
use vitrine_snapshots::snapshot::{self, Kind};

fn ingest(c: &mut Criterion) {
    let n = vitrine_benches::bench_products();
    let feed_bytes = generate_feed(n, 42);
    eprintln!(
        "feed: {n} products, {:.1} MB",
        feed_bytes.len() as f64 / 1e6
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();

    let mut group = c.benchmark_group("ingest");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    group.throughput(Throughput::Bytes(feed_bytes.len() as u64));
    group.bench_function("simd_json_parse", |b| {
        b.iter_batched(
            || feed_bytes.clone(),
            |mut bytes| {
                let value = simd_json::to_borrowed_value(&mut bytes).unwrap();
                black_box(&value);
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("feed_to_catalogue", |b| {
        b.iter_batched(
            || feed_bytes.clone(),
            |mut bytes| {
                let catalogue = pool.install(|| {
                    let (document, _) = feed::parse(&mut bytes).unwrap();
                    feed::build_new(&document).unwrap()
                });
                black_box(catalogue.len())
            },
            BatchSize::PerIteration,
        )
    });

    let catalogue = pool.install(|| {
        let mut bytes = feed_bytes.clone();
        let (document, _) = feed::parse(&mut bytes).unwrap();
        feed::build_new(&document).unwrap()
    });
    drop(feed_bytes);
    let dir = tempfile::tempdir().unwrap();
    let path = snapshot::write(
        dir.path(),
        "catalogue",
        Kind::Catalogue,
        1,
        0,
        catalogue.archive_bytes(),
    )
    .unwrap();
    let snapshot_bytes = std::fs::metadata(&path).unwrap().len();
    eprintln!(
        "snapshot: {:.1} MB, {:.0} bytes per product",
        snapshot_bytes as f64 / 1e6,
        snapshot_bytes as f64 / n as f64
    );
    drop(catalogue);
    group.throughput(Throughput::Elements(1));
    group.bench_function("snapshot_open_first_answer", |b| {
        b.iter(|| {
            let (frozen, _) = snapshot::open::<CatalogueData>(&path, Kind::Catalogue).unwrap();
            let zone = vitrine_testkit::zone("HP-01", Strategy::Trending, 8);
            let account = vitrine_testkit::account(vec![zone], Catalogue::from_frozen(frozen));
            let outcome = account.serve(ServeRequest {
                search: None,
                visitor_id: None,
                session_id: None,
                currency: None,
                events: vec![].into(),
                zones: vec!["HP-01".into()].into(),
                now: 1_800_000_000_000,
                context: Default::default(),
            });
            assert_eq!(outcome.zones[0].items.len(), 8);
            black_box(outcome.zones.len())
        })
    });
    group.finish();
}

criterion_group!(benches, ingest);
criterion_main!(benches);
