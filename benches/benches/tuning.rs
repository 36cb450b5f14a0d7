//! What one self-tuning trial costs at most: on the request path, copying the pairs of
//! a visitor's 50 latest views (what `personalized` reads by default;
//! `CoCounts::shadow_seeds`); off it, `CoCounts::shadow_ranks` over them, each view
//! with a full list of partners (256, the default bound), for the whole grid (27
//! settings). An account scores at most `vitrine_engine::tuning::TRIALS_PER_SECOND`
//! trials a second by default, so that times the off-path cost is the most CPU
//! self-tuning takes per account. Prints medians and tails of 2,000 trials
//! (`VITRINE_BENCH_TRIALS`).

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "a bench fails loudly where its setup does not hold"
)]

use std::time::Instant;

use vitrine_benches::feedgen::Rng;
use vitrine_engine::models::{
    CO_VIEW_WINDOW, CoCounts, MAX_PARTNERS, ModelSettings, ProductKeys, reach_of,
};
use vitrine_engine::tuning::Tuning;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let products = 100_000u64;
    let keys = ProductKeys::default();
    let counts = CoCounts::configured(ModelSettings::default());
    let mut rng = Rng::new(9);
    let key = |i: u64| keys.key(&format!("p{i:06}"));
    // Visits of 11 views: each view pairs with the 10 before, as tracking counts them.
    for _ in 0..200_000 {
        let visit: Vec<u32> = (0..=CO_VIEW_WINDOW)
            .map(|_| key(rng.below(products)))
            .collect();
        for (at, product) in visit.iter().enumerate() {
            let earlier: Vec<(u32, f32, [f32; 2])> = visit[..at]
                .iter()
                .rev()
                .enumerate()
                .map(|(before, k)| {
                    let weight = 1.0 / (before as f32 + 1.0);
                    (*k, weight, reach_of(before + 1, weight))
                })
                .collect();
            counts.add_all(*product, &earlier);
        }
    }
    // Fifty seeds (what `personalized` reads by default) with full lists.
    let seeds: Vec<(u32, f64)> = (0..50)
        .map(|s| {
            let seed = key(1_000_000 + s);
            for p in 0..MAX_PARTNERS as u64 {
                let partner = key(rng.below(products));
                counts.add_all(
                    seed,
                    &[(partner, 1.0, reach_of((p % 10 + 1) as usize, 1.0))],
                );
            }
            (seed, 0.8f64.powi(s as i32))
        })
        .collect();
    let skip: Vec<u32> = seeds.iter().map(|(k, _)| *k).collect();
    let grid = Tuning::default().grid(&ModelSettings::default());
    let trials: usize = std::env::var("VITRINE_BENCH_TRIALS").map_or(2_000, |v| v.parse().unwrap());
    let mut copy_times: Vec<f64> = Vec::new();
    let mut times: Vec<f64> = (0..trials)
        .map(|i| {
            let target = key(rng.below(products));
            let started = Instant::now();
            let copied = counts.shadow_seeds(&seeds);
            let copying = started.elapsed().as_secs_f64() * 1e6;
            let ranks = counts.shadow_ranks(&copied, &skip, target, &grid, 10);
            copy_times.push(copying);
            let took = started.elapsed().as_secs_f64() * 1e6;
            assert_eq!(ranks.len(), grid.len(), "trial {i}");
            took
        })
        .collect();
    times.sort_by(f64::total_cmp);
    copy_times.sort_by(f64::total_cmp);
    println!(
        "on the request path (copying the seeds' counts): median {:.1} µs, p99 {:.1} µs",
        copy_times[copy_times.len() / 2],
        copy_times[copy_times.len() * 99 / 100],
    );
    let pairs: usize = seeds.len() * MAX_PARTNERS;
    println!(
        "one trial ({} settings, {} seeds, about {pairs} pairs read): median {:.1} µs, p99 {:.1} µs, slowest {:.1} µs",
        grid.len(),
        seeds.len(),
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1],
    );
    println!(
        "at most {} trials a second per account: {:.2} % of a core at the median",
        vitrine_engine::tuning::TRIALS_PER_SECOND,
        times[times.len() / 2] * f64::from(vitrine_engine::tuning::TRIALS_PER_SECOND) / 1e4
    );
}
