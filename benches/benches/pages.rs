//! Handler time per page type on the load harness's traffic.
//!
//! The store the harness spawns (its config and `VITRINE_BENCH_PRODUCTS` products of
//! the synthetic feed, default 100,000) opened in-process; the harness's shoppers
//! (default mix) send their requests straight to the `/api/serverside` handler, body
//! bytes to response bytes, on one thread, with a model rebuild every 5,000 requests
//! (as the server's one per second would at about that rate). After a warm-up, prints
//! the median, p99, p99.9 and slowest handler time of each page type (read from the
//! request's page view) and of all requests.
//!
//! `VITRINE_BENCH_CAMPAIGNS=N` gives every zone N campaigns (see
//! `vitrine_benches::harness::campaign_lists`); `VITRINE_BENCH_EXPERIMENTS=on` puts every
//! product zone in an experiment (`vitrine_benches::harness::experiments`). `VITRINE_BENCH_DELTA_EVERY=N` applies a 10-product delta every N requests (not
//! timed), as a store sending stock and price changes does: each makes a new catalogue
//! version, which the requests after it are served from.

#![expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a bench fails loudly where its setup does not hold"
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use vitrine_benches::harness::HarnessStore;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WARMUP_REQUESTS: usize = 50_000;
const TIMED_REQUESTS: usize = 200_000;
/// `VITRINE_BENCH_REQUESTS` timed requests instead (a quarter as many for the warm-up),
/// for a run under `valgrind --tool=callgrind`, which counts instructions.
const PAGE_TYPES: [&str; 6] = [
    "homepage",
    "category_listing_page",
    "search_results",
    "product_page",
    "basket_page",
    "order_complete_page",
];

fn page_type(body: &[u8]) -> &'static str {
    let text = std::str::from_utf8(body).unwrap_or_default();
    PAGE_TYPES
        .iter()
        .find(|t| text.contains(&format!("\"page_type\":\"{t}\"")))
        .copied()
        .unwrap_or("other")
}

fn main() {
    let products = vitrine_benches::bench_products();
    let mut store = HarnessStore::open(products);
    let mut times: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
    let mut now = 1_800_000_000_000;
    let delta_every = vitrine_benches::env_count("VITRINE_BENCH_DELTA_EVERY", 0);
    let timed = vitrine_benches::env_count("VITRINE_BENCH_REQUESTS", TIMED_REQUESTS);
    let warmup = if timed == TIMED_REQUESTS {
        WARMUP_REQUESTS
    } else {
        timed / 4
    };
    for n in 0..warmup + timed {
        let body = store.next_body(n);
        now += 1;
        let started = Instant::now();
        let reply = vitrine_http::api::serverside::handle_bytes(&store.state, &body, now).unwrap();
        let took = started.elapsed();
        store.observe(n, &reply.body);
        if n >= warmup {
            times.entry(page_type(&body)).or_default().push(took);
            times.entry("all").or_default().push(took);
        }
        if n % 5_000 == 0 {
            store.rebuild_models();
        }
        if delta_every > 0 && n % delta_every == 0 {
            store.apply_delta(10, n / delta_every);
        }
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (page, mut list) in times {
        list.sort();
        let at = |q: f64| list[((list.len() - 1) as f64 * q) as usize];
        println!(
            "pages: {page:<22} {:>7} requests: median {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
            list.len(),
            us(at(0.5)),
            us(at(0.99)),
            us(at(0.999)),
            us(at(1.0)),
        );
    }
    println!("pages: self-tuning: {}", store.tuning_summary());
    store.state.shutdown();
}
