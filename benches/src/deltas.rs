//! Deltas for the benches: a delta replacing products of the synthetic catalogue, and
//! submitting one through an account's jobs (parse, log, worker) as `POST /api/delta`
//! does, then waiting for its Status 1.

#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "a bench fails loudly where its setup does not hold"
)]

use serde_json::{Value, json};
use vitrine_fields::{Errors, Fields, KeyMatch};
use vitrine_ingest::delta;
use vitrine_ingest::jobs::{AccountJobs, DeltaStatus};

use crate::feedgen::{CATEGORIES, product_id};

/// What a bench's delta does to the categories of the products it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Categories {
    /// Each keeps one category, the same in every round.
    Kept,
    /// Each moves to another category every round.
    Moved,
}

/// A delta replacing `size` of the `catalogue_size` products of the synthetic feed
/// (a new title and price; which ones moves with `round`).
pub fn delta_body(
    catalogue_size: usize,
    size: usize,
    round: usize,
    categories: Categories,
) -> Value {
    let products: Vec<Value> = (0..size)
        .map(|i| {
            let index = (round * 7919 + i * 104_729) % catalogue_size;
            let category = match categories {
                Categories::Kept => index as u64 % CATEGORIES,
                Categories::Moved => (index + round) as u64 % CATEGORIES,
            };
            json!({
                "Id": product_id(index),
                "Title": format!("Changed in round {round}"),
                "Link": format!("/p/{index}"),
                "Image": format!("//cdn.shop.example/p/{index}.jpg"),
                "Prices": [format!("{}.99 GBP", 10 + round % 50), "19.99 USD"],
                "Categories": [format!("c{category}")],
            })
        })
        .collect();
    json!({ "Products": products })
}

/// Parses and submits `body` as a delta of `jobs`; its token.
pub fn submit(jobs: &AccountJobs, body: &Value) -> String {
    let mut errors = Errors::default();
    let fields = Fields::of(body, "", KeyMatch::Exact, &mut errors).expect("the delta's fields");
    let parsed = delta::parse(&fields).expect("a valid delta");
    jobs.submit_delta(parsed, body.to_string().as_bytes())
        .expect("the delta logged")
}

/// Waits, spinning, until the delta of `token` is applied.
pub fn wait_applied(jobs: &AccountJobs, token: &str) {
    loop {
        match jobs.delta_status(token) {
            DeltaStatus::Applied => return,
            DeltaStatus::Pending => std::hint::spin_loop(),
            DeltaStatus::Failed(reason) => panic!("{token}: {reason}"),
        }
    }
}
