//! A backtest of a draft on a full store of judged moments: how long
//! `Account::backtest` takes for [`vitrine_engine::backtest::MAX_MOMENTS`] moments.
//!
//! The load harness's store (`VITRINE_BENCH_PRODUCTS` products, default 100,000) opened
//! in-process; its shoppers' requests sent to the handler 5 ms of request time apart
//! (so the judged ones are not held back by self-evaluation's ten a second) until the
//! account keeps 10,000 moments; then a draft for HP-01 (a campaign for a segment, one
//! pinning products for everyone with the zone's strategy after them) backtested five
//! times, each time printed, with the median, the moments' bytes and bytes per moment.

#![expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a bench fails loudly where its setup does not hold"
)]

use std::time::Instant;

use serde_json::json;
use vitrine_benches::harness::HarnessStore;
use vitrine_engine::backtest::MAX_MOMENTS;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let products = vitrine_benches::bench_products();
    let mut store = HarnessStore::open(products);
    let entry = store
        .state
        .account(vitrine_benches::traffic::ACCESS_KEY)
        .unwrap();
    let mut now = 1_800_000_000_000;
    let mut n = 0;
    let filled = Instant::now();
    while entry.account.kept_moments().0 < MAX_MOMENTS && n < 2_000_000 {
        let body = store.next_body(n);
        now += 5;
        let reply = vitrine_http::api::serverside::handle_bytes(&store.state, &body, now).unwrap();
        store.observe(n, &reply.body);
        if n % 5_000 == 0 {
            store.rebuild_models();
        }
        n += 1;
    }
    let (moments, bytes) = entry.account.kept_moments();
    println!(
        "backtest: {moments} moments kept after {n} requests ({:.1} s), {bytes} bytes, {} bytes a moment",
        filled.elapsed().as_secs_f64(),
        bytes / moments.max(1)
    );
    let settings = entry.account.settings();
    let target = vitrine_ingest::campaigns::Target {
        zones: &settings.zones,
        time_zone: &settings.time_zone,
    };
    let (document, version) = entry.account.campaigns().document();
    let segments = json!({"segments": [{"id": "returning", "rule": {"sessions": {"min": 2}}}]});
    let (document, set) =
        vitrine_ingest::campaigns::with_segments(&document, &segments, version + 1, target)
            .unwrap();
    let body = json!({"campaigns": [
        {"id": "returning", "segment": "returning",
         "content": {"type": "automated", "strategy": "recently_viewed"}},
        {"id": "pinned", "content": {"type": "custom", "source": {"strategy": "personalized", "fallback": ["trending"]},
            "pins": [{"product": "P0000001", "place": 1}, {"product": "P0000002", "place": 2}]}},
    ]});
    let (_, draft) = vitrine_ingest::campaigns::with_campaigns(
        vitrine_ingest::campaigns::Installed {
            document: &document,
            set: &set,
        },
        "HP-01",
        &body,
        version + 2,
        target,
    )
    .unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let backtest = entry.account.backtest("HP-01", &draft).unwrap();
        let took = started.elapsed();
        println!(
            "backtest: {} moments, {} trials: {:.0} ms (hit rate {:+.4}, MRR {:+.4})",
            backtest.moments,
            backtest.paired.live.trials,
            took.as_secs_f64() * 1000.0,
            backtest.paired.hit_rate().estimate,
            backtest.paired.mrr().estimate,
        );
        times.push(took);
    }
    times.sort();
    println!(
        "backtest: median {:.0} ms for {moments} moments",
        times[2].as_secs_f64() * 1000.0
    );
    store.state.shutdown();
}
