//! `vitrine-benches`: shared fixtures for the criterion benches in `benches/`.
//!
//! Each bench drives the real code path (no copies of production logic): the engine's
//! server-side call, and the whole `/api/serverside` handler from JSON bytes to JSON
//! bytes. See `benches/README.md` for what each measures and the latest figures.
//!
//! Modules:
//! - [`harness`]: the store the load harness spawns, opened in-process, and its
//!   shoppers' bodies sent straight to the `/api/serverside` handler.
//! - [`traffic`]: the simulated shoppers of `vitrine-loadtest run` (sessions of page
//!   requests with the events and zones of each page type).
//! - [`feedgen`]: generated product feeds shaped like a mid-size store's.
//! - [`deltas`]: deltas replacing products of the synthetic catalogue, submitted as
//!   `POST /api/delta` is.

#![forbid(unsafe_code)]

pub mod deltas;
pub mod feedgen;
pub mod harness;
pub mod traffic;

use serde_json::{Value, json};

/// A size from the environment (`VITRINE_BENCH_PRODUCTS`, ...), else `default`.
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Products in a bench's catalogue: `VITRINE_BENCH_PRODUCTS`, default 100,000.
pub fn bench_products() -> usize {
    env_count("VITRINE_BENCH_PRODUCTS", 100_000)
}

/// A typical product-page request: a page view, a product view, two zones.
pub fn product_page_request(visitor: &str, product: &str) -> Value {
    json!({
        "appId": "demo-access-key",
        "secretKey": "demo-secret-key",
        "currentUrl": format!("https://shop.example/product/{product}"),
        "userAgent": "Mozilla/5.0 (X11; Linux x86_64) bench",
        "ip": "203.0.113.9",
        "visitorId": visitor,
        "events": [
            {"name": "page_view", "data": {"page_type": "product_page", "product_id": product}},
            {"name": "product_view", "data": {"id": product}}
        ],
        "zones": ["PP-01", "PP-02"]
    })
}
