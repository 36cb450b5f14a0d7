//! The cost of one model rebuild round when 1 % of the products changed.
//!
//! For each size in `VITRINE_BENCH_MODEL_SIZES` (default `100000,1000000` products): an
//! account whose every product has been viewed (visitors viewing four products each,
//! one in ten ordering three) and its models built once; then ten rounds in which
//! visitors view (and sometimes order) about 1 % of the products before
//! `Account::rebuild_models` is timed. Prints the first (whole) rebuild and the median
//! and slowest round. Runs on rayon's global pool, as many threads as cores.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a bench fails loudly where its setup does not hold"
)]

use std::time::{Duration, Instant};

use vitrine_benches::feedgen::Rng;
use vitrine_engine::account::{Account, ServeRequest};
use vitrine_engine::catalogue::Product;
use vitrine_engine::event::{BasketLine, Event, Identity, Order, PersonalDetails};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const T0: i64 = 1_800_000_000_000;
const ROUNDS: usize = 10;

fn id(i: usize) -> String {
    format!("p{i:07}")
}

/// Visitor `visitor` views four products drawn by `rng`, and orders three in one
/// visit out of ten.
fn visit(account: &Account, rng: &mut Rng, products: usize, visitor: usize, now: i64) {
    let mut events: Vec<Event> = (0..4)
        .map(|_| Event::ProductView {
            id: id(rng.below(products as u64) as usize).into(),
        })
        .collect();
    if visitor.is_multiple_of(10) {
        events.push(Event::Order(Box::new(Order {
            order_id: format!("o{visitor}-{now}"),
            items: (0..3)
                .map(|_| BasketLine {
                    id: id(rng.below(products as u64) as usize),
                    qty: 1.0,
                    unit_price: 1.0,
                })
                .collect(),
            total: None,
            identity: Identity::default(),
            details: PersonalDetails::default(),
        })));
    }
    account.serve(ServeRequest {
        search: None,
        visitor_id: Some(format!("v{visitor}")),
        session_id: None,
        currency: None,
        events: events.into(),
        zones: vec![].into(),
        now,
        context: Default::default(),
    });
}

fn main() {
    let sizes =
        std::env::var("VITRINE_BENCH_MODEL_SIZES").unwrap_or_else(|_| "100000,1000000".to_owned());
    for products in sizes.split(',').map(|s| s.trim().parse::<usize>().unwrap()) {
        let started = Instant::now();
        let catalogue = vitrine_testkit::catalogue((0..products).map(|i| Product {
            prices: vitrine_testkit::priced(100, "GBP"),
            ..vitrine_testkit::product(&id(i))
        }));
        let account = vitrine_testkit::account(vec![], catalogue);
        let mut rng = Rng::new(5);
        for v in 0..products / 2 {
            visit(&account, &mut rng, products, v, T0);
        }
        eprintln!(
            "models: {products} products and {} visitors set up in {:.1} s",
            products / 2,
            started.elapsed().as_secs_f64()
        );
        let started = Instant::now();
        account.rebuild_models();
        let first = started.elapsed();
        let mut rounds: Vec<Duration> = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS {
            // Four views per visitor: about 1 % of the products change per round.
            let now = T0 + (round as i64 + 1) * 1_000;
            for v in 0..products / 400 {
                visit(
                    &account,
                    &mut rng,
                    products,
                    products + round * products + v,
                    now,
                );
            }
            let started = Instant::now();
            account.rebuild_models();
            rounds.push(started.elapsed());
        }
        rounds.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "models: {products} products: first rebuild {:.1} ms; a round with 1 % of the products changed: median {:.2} ms, slowest {:.2} ms ({ROUNDS} rounds)",
            ms(first),
            ms(rounds[ROUNDS / 2]),
            ms(rounds[ROUNDS - 1]),
        );
    }
}
