//! The server-side call: engine only, and the whole handler from body bytes to response
//! bytes, against the demo catalogue (3,000 products); and what the request metrics add
//! to each request.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a test or bench fails loudly where its setup does not hold"
)]

use std::hint::black_box;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use vitrine_benches::product_page_request;
use vitrine_engine::account::ServeRequest;
use vitrine_engine::event::{Event, PageType};
use vitrine_http::config::{self, Overrides};
use vitrine_http::state::AppState;

fn engine_serve(c: &mut Criterion) {
    let config = config::demo(&Overrides::default()).unwrap();
    let account_config = &config.accounts[0];
    let account = vitrine_engine::Account::new(
        account_config.settings(),
        vitrine_engine::demo::catalogue().unwrap(),
    );
    let mut n = 0u64;
    c.bench_function("engine_serve_product_page_2_zones", |b| {
        b.iter(|| {
            n += 1;
            let product = vitrine_engine::demo::product_id((n % 2900) as usize);
            let request = ServeRequest {
                search: None,
                visitor_id: Some(format!("visitor-{}", n % 10_000)),
                session_id: None,
                currency: None,
                events: vec![
                    Event::PageView {
                        page_type: PageType::ProductPage,
                        product_id: Some(product.as_str().into()),
                        category_id: None,
                        brand_id: None,
                    },
                    Event::ProductView { id: product.into() },
                ]
                .into(),
                zones: vec!["PP-01".into(), "PP-02".into()].into(),
                now: 1_800_000_000_000 + n as i64,
                context: Default::default(),
            };
            let outcome = account.serve(request);
            black_box(outcome.zones.len())
        })
    });
}

fn full_handler(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let overrides = Overrides {
        listen: None,
        data_dir: Some(dir.path().join("data")),
    };
    let state = AppState::open(config::demo(&overrides).unwrap()).unwrap();
    let bodies: Vec<Vec<u8>> = (0..1000)
        .map(|i| {
            let product = vitrine_engine::demo::product_id(i % 2900);
            serde_json::to_vec(&product_page_request(&format!("visitor-{i}"), &product)).unwrap()
        })
        .collect();
    let mut n = 0usize;
    c.bench_function("handler_serverside_bytes_to_bytes", |b| {
        b.iter(|| {
            n += 1;
            let body = &bodies[n % bodies.len()];
            let reply =
                vitrine_http::api::serverside::handle_bytes(&state, body, 1_800_000_000_000)
                    .unwrap();
            black_box(reply.body.len())
        })
    });
    state.shutdown();
}

/// What the request metrics add to every answered request (`server::handle` calls it
/// once per request): the count by endpoint and status and the duration histogram.
fn metrics_observe(c: &mut Criterion) {
    let metrics = vitrine_http::metrics::Metrics::new();
    let took = std::time::Duration::from_micros(12);
    c.bench_function("metrics_observe_one_request", |b| {
        b.iter(|| {
            metrics.observe(
                black_box(vitrine_http::routes::Endpoint::Serverside),
                black_box(http::StatusCode::OK),
                black_box(took),
            );
        })
    });
}

criterion_group!(benches, engine_serve, full_handler, metrics_observe);
criterion_main!(benches);
