//! Allocations per `/api/serverside` request on the load harness's traffic.
//!
//! The store the harness spawns (its config and `VITRINE_BENCH_PRODUCTS` products of
//! the synthetic feed, default 100,000) is opened in-process and the harness's shoppers
//! (`vitrine_benches::traffic`, default mix) send their requests straight to the
//! handler, body bytes to response bytes. After a warm-up that gives the visitors
//! history and fills the models, the allocations of every thread (the handler's, and the
//! log writer's for the logged events) are counted per request. Prints the mean, median
//! and p99 allocations and the bytes allocated per request. Counting only: the global
//! allocator here is the instrumented system allocator, so no timing is taken.
//!
//! Then what one experiment of the console costs the account in memory: the bytes
//! allocated and not freed while a two-variant experiment (the live list against a
//! draft list of two campaigns) is created and started through the change path (its
//! document version in the history, its compiled variants and list).

#![expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a bench fails loudly where its setup does not hold"
)]

use std::alloc::System;

use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use vitrine_benches::harness::HarnessStore;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const WARMUP_REQUESTS: usize = 50_000;
const COUNTED_REQUESTS: usize = 20_000;

fn main() {
    let products = vitrine_benches::bench_products();
    let mut store = HarnessStore::open(products);
    let mut now = 1_800_000_000_000;
    for n in 0..WARMUP_REQUESTS {
        let body = store.next_body(n);
        now += 1;
        let reply = vitrine_http::api::serverside::handle_bytes(&store.state, &body, now).unwrap();
        store.observe(n, &reply.body);
        if n % 5_000 == 0 {
            store.rebuild_models();
        }
    }
    store.rebuild_models();

    // The request body is made before the region starts and dropped after it ends: only
    // the server's allocations are counted.
    let mut counts = Vec::with_capacity(COUNTED_REQUESTS);
    let mut bytes = 0usize;
    let mut answer_bytes = 0usize;
    for n in 0..COUNTED_REQUESTS {
        let body = store.next_body(n);
        now += 1;
        let region = Region::new(GLOBAL);
        let reply = vitrine_http::api::serverside::handle_bytes(&store.state, &body, now).unwrap();
        store.observe(n, &reply.body);
        answer_bytes += reply.body.len();
        drop(reply);
        let change = region.change();
        counts.push(change.allocations + change.reallocations);
        bytes += change.bytes_allocated;
    }
    counts.sort_unstable();
    let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
    let at = |q: f64| counts[((counts.len() - 1) as f64 * q) as usize];
    println!(
        "allocations per serverside request ({COUNTED_REQUESTS} requests of the harness's default mix, {products} products, after {WARMUP_REQUESTS} warm-up requests): mean {mean:.1}, median {}, p99 {}, max {}; {:.0} bytes allocated per request; answers {:.0} bytes on average",
        at(0.5),
        at(0.99),
        at(1.0),
        bytes as f64 / COUNTED_REQUESTS as f64,
        answer_bytes as f64 / COUNTED_REQUESTS as f64,
    );
    let entry = store
        .state
        .account(vitrine_benches::traffic::ACCESS_KEY)
        .unwrap();
    experiment_memory(&entry.jobs);
    store.state.shutdown();
}

/// Prints the bytes one experiment keeps allocated (see the module's documentation):
/// the mean over 20 experiments, each created, started and ended in turn on the same
/// zone (an ended one stays in the document with its results), and the bytes of one as
/// the document's JSON holds it.
fn experiment_memory(jobs: &vitrine_ingest::jobs::AccountJobs) {
    use vitrine_ingest::jobs::{CampaignChange, ChangeRequest, ExperimentAction};
    const EXPERIMENTS: usize = 20;
    let change = |id: &str, action: ExperimentAction<'_>| {
        jobs.change_campaigns(ChangeRequest {
            change: CampaignChange::Experiment { id, action },
            if_match: None,
            author: "bench",
            now: 1_800_000_000_000,
        })
        .unwrap();
    };
    let body = json!({"name": "A draft against live", "zone": "PP-01", "variants": [
        {"name": "A", "share": 50, "kind": "live"},
        {"name": "B", "share": 50, "kind": "draft", "campaigns": [
            {"id": "pinned", "content": {"type": "custom", "source": {"strategy": "similar", "fallback": ["trending"]},
                "pins": [{"product": "P0000001", "place": 1}]}},
            {"id": "offers", "content": {"type": "custom", "source": {"strategy": "trending"},
                "filters": [{"onOffer": true}]}},
        ]},
    ]});
    // One first, so that what every change allocates once is not counted.
    change("warm-up", ExperimentAction::Put(&body));
    change("warm-up", ExperimentAction::Start);
    change("warm-up", ExperimentAction::End);
    let region = Region::new(GLOBAL);
    for i in 0..EXPERIMENTS {
        let id = format!("memory-{i}");
        change(&id, ExperimentAction::Put(&body));
        change(&id, ExperimentAction::Start);
        change(&id, ExperimentAction::End);
    }
    let stats = region.change();
    let kept = stats.bytes_allocated as f64 - stats.bytes_deallocated as f64;
    let (document, _) = jobs.campaign_document();
    let json = serde_json::to_vec(&document.experiments.list[0])
        .unwrap()
        .len();
    println!(
        "experiments: each created, started and ended keeps {:.0} bytes allocated (the mean of {EXPERIMENTS}; three document versions in the history each); its definition is {json} bytes of JSON",
        kept / EXPERIMENTS as f64
    );
}
