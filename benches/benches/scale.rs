//! The server-side call at scale: the whole `/api/serverside` handler (JSON bytes in,
//! JSON bytes out: parse, 2 events, 2 recommender zones of 10 items, serialize) against a
//! `VITRINE_BENCH_PRODUCTS` catalogue (default 100,000, loaded through the feed
//! pipeline into a memory-mapped snapshot) and `VITRINE_BENCH_VISITORS` visitors with
//! history (default 1,000,000). Printed per run: memory per visitor (anonymous RSS
//! growth while the visitors were created, divided by their number) and the median and
//! p99 of 200,000 timed handler calls; criterion then times the same call. Between the
//! two, 100,000 of the visitors are shown 4 product pages of 2 zones each and the memory
//! that takes is printed (with `VITRINE_BENCH_ZONE_ANALYTICS=off`, the same without
//! impressions recorded: the difference is what impressions cost). Last, one state
//! snapshot, timed with a thousand orders a second placed meanwhile (how long its cut
//! held them), and a restart.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use vitrine_benches::feedgen::{Rng, generate_feed, product_id};
use vitrine_benches::{env_count, product_page_request};
use vitrine_engine::account::ServeRequest;
use vitrine_engine::event::Event;
use vitrine_http::config::{self, Overrides};
use vitrine_http::state::AppState;
use vitrine_ingest::jobs::FeedStatus;

const CONFIG: &str = r#"
[durability]
# The state snapshot is timed on its own at the end.
state_snapshot_interval_secs = 86400
[[accounts]]
access_key = "demo-access-key"
secret_key = "demo-secret-key"
default_currency = "GBP"
  [[accounts.zones]]
  id = "PP-01"
  title = "Customers also viewed"
  type = "recommender-product"
  strategy = "viewed_together"
  fallback = ["similar", "trending"]
  count = 10
  [[accounts.zones]]
  id = "PP-02"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  fallback = ["trending"]
  count = 10
"#;

/// A request placing one order of one line.
fn order_request(visitor: &str, order: &str, product: &str) -> serde_json::Value {
    serde_json::json!({
        "appId": "demo-access-key",
        "secretKey": "demo-secret-key",
        "currentUrl": "https://shop.example/checkout/done",
        "userAgent": "Mozilla/5.0 (X11; Linux x86_64) bench",
        "visitorId": visitor,
        "events": [
            {"name": "order", "data": {"orderid": order, "email": format!("{visitor}@example.com"),
                "items": [{"id": product, "qty": 1, "unitprice": 9.99}]}}
        ]
    })
}

/// Anonymous resident memory of this process, in bytes.
fn rss_anon() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn scale(c: &mut Criterion) {
    let products = vitrine_benches::bench_products();
    let visitors = env_count("VITRINE_BENCH_VISITORS", 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vitrine.toml");
    // `VITRINE_BENCH_ZONE_ANALYTICS=off`: the account records no impressions (the
    // impressions phase then measures the views alone).
    let config = match std::env::var("VITRINE_BENCH_ZONE_ANALYTICS").as_deref() {
        Ok("off") => CONFIG.replace(
            "default_currency = \"GBP\"",
            "default_currency = \"GBP\"\nzone_analytics = false",
        ),
        _ => CONFIG.to_owned(),
    };
    std::fs::write(&path, config).unwrap();
    let overrides = Overrides {
        listen: None,
        data_dir: Some(dir.path().join("data")),
    };
    let state = AppState::open(config::load_file(&path, &overrides).unwrap()).unwrap();
    let entry = state.account("demo-access-key").unwrap();
    let started = Instant::now();
    let mut feed = generate_feed(products, 7);
    let status = vitrine_ingest::runner::apply(&entry.jobs, &mut feed, state.pool(), &|_| {});
    assert!(matches!(status, FeedStatus::Complete { .. }), "{status:?}");
    drop(feed);
    eprintln!(
        "scale: {products} products loaded in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let account = &entry.account;
    let mut rng = Rng::new(11);
    let before = rss_anon();
    let started = Instant::now();
    for v in 0..visitors {
        let mut events = Vec::with_capacity(3);
        for _ in 0..3 {
            events.push(Event::ProductView {
                id: product_id(rng.skewed(products)).into(),
            });
        }
        account.serve(ServeRequest {
            search: None,
            visitor_id: Some(format!("visitor-{v:07}")),
            session_id: None,
            currency: None,
            events: events.into(),
            zones: vec![].into(),
            now: 1_800_000_000_000 + v as i64,
            context: Default::default(),
        });
    }
    let grown = rss_anon().saturating_sub(before);
    eprintln!(
        "scale: {visitors} visitors with 3 views each created in {:.1} s; anonymous memory +{:.0} MB = {:.0} bytes per visitor (history, session, identity, counters and co-view pairs included)",
        started.elapsed().as_secs_f64(),
        grown as f64 / 1e6,
        grown as f64 / visitors as f64
    );
    state.pool().install(|| account.rebuild_models());
    let account_visitors = account.visitor_count();

    // Zone impressions: visitors shown 4 product pages of 2 zones of 10 items each, so
    // that each holds the most answers a visitor keeps.
    let shown_visitors = visitors.min(100_000);
    let before = rss_anon();
    for v in 0..shown_visitors {
        for page in 0..4 {
            let body = product_page_request(
                &format!("visitor-{v:07}"),
                &product_id(rng.skewed(products)),
            );
            let now = 1_800_000_050_000 + (v * 4 + page) as i64;
            vitrine_http::api::serverside::handle_bytes(
                &state,
                &serde_json::to_vec(&body).unwrap(),
                now,
            )
            .unwrap();
        }
    }
    let grown = rss_anon().saturating_sub(before);
    eprintln!(
        "scale: {shown_visitors} visitors shown 4 pages of 2 zones of 10 items ({} answers kept each); anonymous memory +{:.0} MB = {:.0} bytes per visitor for impressions",
        vitrine_engine::analytics::MAX_ANSWERS,
        grown as f64 / 1e6,
        grown as f64 / shown_visitors as f64
    );

    let bodies: Vec<Vec<u8>> = (0..10_000)
        .map(|_| {
            let visitor = format!("visitor-{:07}", rng.below(visitors as u64));
            let product = product_id(rng.skewed(products));
            serde_json::to_vec(&product_page_request(&visitor, &product)).unwrap()
        })
        .collect();
    let handle = |body: &[u8]| {
        let reply =
            vitrine_http::api::serverside::handle_bytes(&state, body, 1_800_000_100_000).unwrap();
        black_box(reply.body.len())
    };
    let mut timings = Vec::with_capacity(200_000);
    for i in 0..200_000 {
        let body = &bodies[i % bodies.len()];
        let t = Instant::now();
        handle(body);
        timings.push(t.elapsed());
    }
    timings.sort();
    let at = |q: f64| timings[((timings.len() - 1) as f64 * q) as usize];
    eprintln!(
        "scale: handler_serverside_bytes_to_bytes over 200,000 calls: median {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs",
        at(0.5).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        at(0.999).as_secs_f64() * 1e6,
    );
    let sample = handle(&bodies[0]);
    assert!(sample > 0);

    let mut group = c.benchmark_group("scale");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut n = 0usize;
    group.bench_function("handler_serverside_100k_products_1m_visitors", |b| {
        b.iter(|| {
            n += 1;
            handle(&bodies[n % bodies.len()])
        })
    });
    group.finish();

    // Durability at this size: one state snapshot, then the time to ready of a restart
    // (catalogue snapshot mapped, state snapshot restored, log replayed). Orders go on
    // meanwhile, a thousand a second (a busy store's peak many times over): the longest
    // is how long the snapshot's cut held them (what a replay would count again copied
    // with orders held, `engine/src/tracking/cut.rs`).
    let exporting = std::sync::atomic::AtomicBool::new(true);
    let (report, took, orders) = std::thread::scope(|scope| {
        let placing = scope.spawn(|| {
            let mut waits = Vec::new();
            let mut rng = Rng::new(7);
            let start = Instant::now();
            while exporting.load(std::sync::atomic::Ordering::Relaxed) {
                let due = start + Duration::from_millis(waits.len() as u64);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                let body = serde_json::to_vec(&order_request(
                    &format!("visitor-{:07}", rng.below(visitors as u64)),
                    &format!("scale-order-{}", waits.len()),
                    &product_id(rng.skewed(products)),
                ))
                .unwrap();
                let t = Instant::now();
                handle(&body);
                waits.push(t.elapsed());
            }
            waits
        });
        let started = Instant::now();
        let report = entry.jobs.checkpoint().unwrap();
        let took = started.elapsed();
        exporting.store(false, std::sync::atomic::Ordering::Relaxed);
        (report, took, placing.join().unwrap())
    });
    eprintln!(
        "scale: state snapshot of {visitors} visitors: {:.1} MB written in {:.1} s",
        report.saved.bytes as f64 / 1e6,
        took.as_secs_f64()
    );
    let mut orders = orders;
    orders.sort();
    eprintln!(
        "scale: {} orders placed during the state snapshot: median {:.1} µs, longest {:.1} ms",
        orders.len(),
        orders[orders.len() / 2].as_secs_f64() * 1e6,
        orders.last().unwrap().as_secs_f64() * 1e3,
    );
    state.shutdown();
    drop(state);
    let started = Instant::now();
    let reopened = AppState::open(config::load_file(&path, &overrides).unwrap()).unwrap();
    let entry = reopened.account("demo-access-key").unwrap();
    eprintln!(
        "scale: restart to ready with {products} products and {} visitors: {:.1} s",
        entry.account.visitor_count(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(entry.account.visitor_count(), account_visitors);
    reopened.shutdown();
}

criterion_group!(benches, scale);
criterion_main!(benches);
