//! What `similar_sessions` costs: recording a product of a session (on the request
//! path of every view, basket line and order line) and a shopper's neighbourhood (on
//! the request path of a zone that reads it), on an index holding its default bound of
//! 100,000 sessions of 8 products over 20,000 products, the first products popular
//! enough that their index of sessions is full (500) and every query samples the most
//! sessions it may (500). Prints medians and tails of 5,000 queries
//! (`VITRINE_BENCH_QUERIES`), and the index's memory per product.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a bench fails loudly where its setup does not hold"
)]

use std::time::Instant;

use vitrine_benches::feedgen::Rng;
use vitrine_engine::models::{AsOf, SESSION_STEPS, SESSIONS_KEPT, SessionIndex};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let products = 20_000u64;
    let index = SessionIndex::new(SESSIONS_KEPT);
    let mut rng = Rng::new(5);
    // Half of each session's products among the first 200 (popular), half anywhere.
    let draw = |rng: &mut Rng, popular: bool| {
        if popular {
            rng.below(200) as u32
        } else {
            rng.below(products) as u32
        }
    };
    let mut view_times: Vec<f64> = Vec::new();
    for session in 0..SESSIONS_KEPT as u64 * 2 {
        for at in 0..8 {
            let product = draw(&mut rng, at % 2 == 0);
            let started = Instant::now();
            index.view(session + 1, session + 1, product, 0);
            view_times.push(started.elapsed().as_secs_f64() * 1e9);
        }
    }
    let queries: usize =
        std::env::var("VITRINE_BENCH_QUERIES").map_or(5_000, |v| v.parse().unwrap());
    let mut times: Vec<f64> = Vec::new();
    let mut found = 0usize;
    for q in 0..queries {
        let latest: Vec<u32> = (0..SESSION_STEPS)
            .map(|at| draw(&mut rng, at % 2 == 0))
            .collect();
        let started = Instant::now();
        let scored = index.neighbourhood(&latest, u64::MAX - q as u64, 200, AsOf::Now);
        times.push(started.elapsed().as_secs_f64() * 1e6);
        found += scored.len();
    }
    view_times.sort_by(f64::total_cmp);
    times.sort_by(f64::total_cmp);
    println!(
        "recording a product of a session: median {:.0} ns, p99 {:.0} ns",
        view_times[view_times.len() / 2],
        view_times[view_times.len() * 99 / 100],
    );
    println!(
        "a neighbourhood ({SESSION_STEPS} latest products, up to 500 sessions compared): median {:.1} µs, p99 {:.1} µs, slowest {:.1} µs; {:.0} products found a query",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1],
        found as f64 / queries as f64,
    );
    let bytes = index.memory_bytes();
    println!(
        "memory: {:.1} MiB for {} sessions over {products} products ({:.0} bytes a product in all)",
        bytes as f64 / (1024.0 * 1024.0),
        index.len(),
        bytes as f64 / products as f64,
    );
}
