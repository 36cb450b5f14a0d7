//! `vitrine-loadtest quality`: Vitrine's zones against published recommenders on the
//! same interactions and the same questions.
//!
//! The split (`data.rs`): each visitor's last `--holdout` interactions are test
//! points and the one before them a validation point. Round 0 (validation) tunes each
//! baseline: every setting of its grid (`baselines.rs`) is fitted on what precedes the
//! validation points and the best hit rate on them chosen. Rounds 1..=holdout test:
//! every method is fitted on what precedes the round's points and asked, for every
//! evaluated visitor, for the top `--k` products the visitor has not interacted with;
//! then the round's points are revealed (to Vitrine: sent through `/api/serverside`,
//! as a store would) before the next round. Vitrine (`vitrine.rs`) learns online
//! from everything sent, the training interactions replayed in time order across
//! visitors, with the models let catch up on the way; each zone is asked on the
//! product page of the visitor's latest product, in the validation round too (where variants of a zone's settings,
//! `personalized:history=N`, are compared) and in the test rounds. Scores (`metrics.rs`): HR@K, NDCG@K, MRR@K, coverage, and each zone's
//! hit rate over the best baseline's with a bootstrapped 95 % interval.

mod baselines;
mod data;
mod metrics;
mod vitrine;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use rayon::prelude::*;
use serde_json::{Value, json};

use self::baselines::{Method, Recommender, Training};
use self::data::{Dataset, Query, Step};
use self::metrics::{Results, mix, ratio_interval, top_k};

/// Settings of `vitrine-loadtest quality`.
#[derive(Debug, clap::Args)]
pub(crate) struct QualityArgs {
    /// CSV with the header `visitor,product,timestamp,event` (event: view, basket,
    /// order or rate:<n>), e.g. from `loadtest/datasets/fetch.py`.
    #[arg(long)]
    interactions: PathBuf,
    /// CSV with the header `product,title,categories` (categories separated by `|`):
    /// the catalogue's titles and categories (`similar` needs them).
    #[arg(long)]
    items: Option<PathBuf>,
    /// Test points per visitor (each visitor's last interactions).
    #[arg(long, default_value_t = 3)]
    holdout: usize,
    /// Products scored per question.
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// Vitrine strategies evaluated, one zone each; `personalized:history=N` sets the
    /// zone's `history` (and `:recency=R`, `:long_term=W`, `:context=N`, `:content=C`
    /// the others of its keys).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "personalized,viewed_together,similar,trending"
    )]
    strategies: Vec<String>,
    /// `[accounts.models] partners` of the spawned server (default: the server's).
    #[arg(long)]
    partners: Option<usize>,
    /// `[accounts.models] neighbours` of the spawned server (default: the server's, at
    /// most --partners).
    #[arg(long)]
    neighbours: Option<usize>,
    /// `[accounts.models] partner_damping` of the spawned server (default: the
    /// server's).
    #[arg(long)]
    partner_damping: Option<f64>,
    /// `[accounts.models] seed_damping` of the spawned server (default: the server's).
    #[arg(long)]
    seed_damping: Option<f64>,
    /// `[accounts.models] co_view_window` of the spawned server: pins the window
    /// (default: tuned).
    #[arg(long)]
    co_view_window: Option<usize>,
    /// `[accounts.models] co_purchase_window` of the spawned server: pins the
    /// co-purchase lists' window (default: tuned).
    #[arg(long)]
    co_purchase_window: Option<usize>,
    /// `[accounts.models] purchase_partner_damping` of the spawned server: pins the
    /// co-purchase lists' partner damping (default: tuned).
    #[arg(long)]
    purchase_partner_damping: Option<f64>,
    /// `[accounts.models] purchase_seed_damping` of the spawned server (default: the
    /// server's, or `--seed-damping` when that is given).
    #[arg(long)]
    purchase_seed_damping: Option<f64>,
    /// `[accounts.models] tuning` of the spawned server: `auto` (the default: the
    /// co-view window and the partner damping not pinned tune themselves on the
    /// replay, and the report says what was chosen and when) or `off`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "off"])]
    tuning: String,
    /// `[accounts.models] tuning_trials_per_second` of the spawned server. The replay
    /// sends a store's history in seconds: the default lifts the bound, so that the
    /// server scores every sampled request, as it does at a store's own pace.
    #[arg(long, default_value_t = 100_000)]
    tuning_trials_per_second: u32,
    /// How many times the training replay waits on the way for the models to include
    /// what it sent (a store's models are rebuilt every few seconds, far more often
    /// than its history's interactions arrive: without the waits, what self-tuning
    /// tries during the replay reads lists far behind it). 0 sends it all at once.
    #[arg(long, default_value_t = 50)]
    replay_catch_ups: usize,
    /// Baselines compared (default: all of them).
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// The `vitrine` binary (default: the one next to this tool).
    #[arg(long)]
    vitrine: Option<PathBuf>,
    /// Bootstrap resamples of the intervals.
    #[arg(long, default_value_t = 1000)]
    resamples: usize,
    /// Seed of tie-breaking, ALS starts and the bootstrap.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the JSON report is written.
    #[arg(long, default_value = "quality-report.json")]
    out: PathBuf,
}

/// Vitrine's zones and what its self-tuning did.
struct VitrineRun {
    /// (`--strategies` entry, validation hit rate, test results).
    zones: Vec<(String, f64, Results)>,
    /// The active setting and the switches so far after each phase of the run.
    tuning: Vec<Value>,
}

/// One baseline's validation and test results.
struct Evaluated {
    chosen: Method,
    validation: Vec<(String, f64)>,
    test: Results,
}

/// Runs the comparison and writes the report.
pub(crate) fn quality(args: QualityArgs) -> anyhow::Result<()> {
    if args.k == 0 {
        bail!("--k must be at least 1");
    }
    let started = Instant::now();
    let interactions = crate::eval::read_interactions(&args.interactions)?;
    let data = Dataset::new(interactions, args.items.as_deref(), args.holdout)?;
    if data.evaluated() == 0 {
        bail!(
            "no visitor has the {} interactions a test needs (--holdout {} + validation + one to learn from)",
            args.holdout + 2,
            args.holdout
        );
    }
    println!(
        "{} interactions, {} visitors ({} evaluated), {} products; {} test rounds, k = {}",
        data.interaction_count(),
        data.visitors.len(),
        data.evaluated(),
        data.item_count(),
        args.holdout,
        args.k
    );

    let mut grid = Method::grid();
    let names = |grid: &[Vec<Method>], references: bool| {
        grid.iter()
            .map(|group| &group[0])
            .filter(|method| method.is_reference() == references)
            .map(Method::name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let references = names(&grid, true);
    if !args.methods.is_empty() {
        let known = format!("{}, {references}", names(&grid, false));
        grid.retain(|group| args.methods.iter().any(|m| m == group[0].name()));
        if grid.len() != args.methods.len() {
            bail!(
                "--methods: expected names among {known}, got {:?}",
                args.methods
            );
        }
    }
    if grid.iter().all(|group| group[0].is_reference()) {
        bail!("--methods: name at least one baseline ({references} are references, not baselines)");
    }
    let mut baselines = Vec::new();
    for group in grid {
        let evaluated = evaluate_baseline(&data, &group, &args)?;
        println!(
            "  {:<17} {:<48} validation HR@{} {:.4}, test HR@{} {:.4}",
            evaluated.chosen.name(),
            evaluated.chosen.params(),
            args.k,
            evaluated.validation.iter().map(|v| v.1).fold(0.0, f64::max),
            args.k,
            evaluated.test.hit_rate()
        );
        baselines.push(evaluated);
    }

    let VitrineRun { zones, tuning } = evaluate_vitrine(&data, &args)?;

    let best = baselines
        .iter()
        .filter(|b| !b.chosen.is_reference())
        .max_by(|a, b| a.test.hit_rate().total_cmp(&b.test.hit_rate()))
        .context("no baseline was evaluated (a reference is not one)")?;
    let mut report_baselines = serde_json::Map::new();
    for b in &baselines {
        let mut summary = b.test.summary(data.item_count());
        summary["params"] = json!(b.chosen.params());
        if b.chosen.is_reference() {
            summary["reference"] = json!(true);
            summary["ratio_to_best_baseline"] =
                ratio_interval(&b.test, &best.test, args.resamples, args.seed);
        }
        summary["validation_hr_at_k"] = json!(
            b.validation
                .iter()
                .map(|(p, hr)| json!({"params": p, "hr_at_k": hr}))
                .collect::<Vec<_>>()
        );
        report_baselines.insert(b.chosen.name().to_owned(), summary);
    }
    let mut report_zones = serde_json::Map::new();
    println!(
        "\nmethod              HR@{k:<3}  NDCG@{k:<3} MRR@{k:<3}  coverage",
        k = args.k
    );
    let ratio_line = |ratio: &Value, after: &str| {
        println!(
            "{:<19} {:.3} x {} (95 % CI {:.3} .. {:.3}); {after}",
            "",
            ratio["ratio"].as_f64().unwrap_or(f64::NAN),
            best.chosen.name(),
            ratio["ci95"][0].as_f64().unwrap_or(f64::NAN),
            ratio["ci95"][1].as_f64().unwrap_or(f64::NAN),
        );
    };
    let line = |name: &str, s: &Value| {
        println!(
            "{name:<19} {:.4}  {:.4}   {:.4}   {:.4}",
            s["hr_at_k"].as_f64().unwrap_or(0.0),
            s["ndcg_at_k"].as_f64().unwrap_or(0.0),
            s["mrr_at_k"].as_f64().unwrap_or(0.0),
            s["coverage"].as_f64().unwrap_or(0.0)
        );
    };
    for b in &baselines {
        let summary = &report_baselines[b.chosen.name()];
        line(b.chosen.name(), summary);
        if b.chosen.is_reference() {
            ratio_line(
                &summary["ratio_to_best_baseline"],
                "reference, not a baseline",
            );
        }
    }
    for (strategy, validation, results) in &zones {
        let mut summary = results.summary(data.item_count());
        summary["validation_hr_at_k"] = json!(validation);
        let ratio = ratio_interval(results, &best.test, args.resamples, args.seed);
        line(&format!("vitrine {strategy}"), &summary);
        ratio_line(&ratio, &format!("validation HR@{} {validation:.4}", args.k));
        summary["ratio_to_best_baseline"] = ratio;
        report_zones.insert(strategy.clone(), summary);
    }
    let report = json!({
        "settings": {
            "interactions": args.interactions.display().to_string(),
            "items": args.items.as_ref().map(|p| p.display().to_string()),
            "holdout": args.holdout,
            "k": args.k,
            "seed": args.seed,
            "resamples": args.resamples,
            "partners": args.partners,
            "neighbours": args.neighbours,
            "partner_damping": args.partner_damping,
            "seed_damping": args.seed_damping,
            "co_view_window": args.co_view_window,
            "co_purchase_window": args.co_purchase_window,
            "purchase_partner_damping": args.purchase_partner_damping,
            "purchase_seed_damping": args.purchase_seed_damping,
            "tuning": args.tuning,
            "tuning_trials_per_second": args.tuning_trials_per_second,
            "replay_catch_ups": args.replay_catch_ups,
        },
        "dataset": {
            "interactions": data.interaction_count(),
            "visitors": data.visitors.len(),
            "visitors_evaluated": data.evaluated(),
            "products": data.item_count(),
        },
        "best_baseline": best.chosen.name(),
        "baselines": report_baselines,
        "vitrine": report_zones,
        "tuning": tuning,
        "seconds": started.elapsed().as_secs_f64(),
    });
    std::fs::write(&args.out, serde_json::to_vec_pretty(&report)?)
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!("report written to {}", args.out.display());
    Ok(())
}

/// The products of a training set, per visitor.
fn training(data: &Dataset, round: usize, seed: u64) -> Training {
    Training::new(
        data.training(round)
            .into_iter()
            .map(|steps| steps.iter().map(|s| s.item).collect())
            .collect(),
        data.item_count(),
        seed,
    )
}

/// The items of a question's history.
fn history_items(data: &Dataset, query: &Query) -> Vec<u32> {
    data.history(query).iter().map(|s| s.item).collect()
}

/// A fitted method's answers to `queries`, scored.
fn answer(
    data: &Dataset,
    fitted: &dyn Recommender,
    queries: &[Query],
    k: usize,
    into: &mut Results,
) {
    let ranked: Vec<Vec<u32>> = queries
        .par_iter()
        .map(|query| {
            let history = history_items(data, query);
            let mut scores = vec![0.0f32; data.item_count()];
            fitted.score(query.visitor, &history, &mut scores);
            top_k(&scores, &history, k, salt(query))
        })
        .collect();
    for (query, ranked) in queries.iter().zip(ranked) {
        into.add(query.visitor, &ranked, query.target);
    }
}

fn salt(query: &Query) -> u64 {
    mix(u64::from(query.visitor), query.position as u64)
}

/// Tunes one baseline on the validation round and tests its best setting.
fn evaluate_baseline(
    data: &Dataset,
    group: &[Method],
    args: &QualityArgs,
) -> anyhow::Result<Evaluated> {
    let validation_set = training(data, 0, args.seed);
    let questions = data.queries(0);
    let mut validation = Vec::new();
    let mut chosen: Option<(Method, f64)> = None;
    for method in group {
        let fitted = method.fit(&validation_set)?;
        let mut results = Results::new(args.k);
        answer(data, fitted.as_ref(), &questions, args.k, &mut results);
        let hr = results.hit_rate();
        validation.push((method.params(), hr));
        if chosen.as_ref().is_none_or(|(_, best)| hr > *best) {
            chosen = Some((method.clone(), hr));
        }
    }
    let (chosen, _) = chosen.context("an empty grid")?;
    let mut test = Results::new(args.k);
    for round in 1..=args.holdout {
        let fitted = chosen.fit(&training(data, round, args.seed))?;
        answer(
            data,
            fitted.as_ref(),
            &data.queries(round),
            args.k,
            &mut test,
        );
    }
    Ok(Evaluated {
        chosen,
        validation,
        test,
    })
}

/// Vitrine's zones, and its self-tuning after each phase: the replay of the training
/// interactions, then each round.
fn evaluate_vitrine(data: &Dataset, args: &QualityArgs) -> anyhow::Result<VitrineRun> {
    let binary = match &args.vitrine {
        Some(path) => path.clone(),
        None => crate::provision::sibling_binary()?,
    };
    let index: HashMap<&str, u32> = data
        .items
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i as u32))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // Asked for more than k: products the visitor has seen are left out after.
        let count = (args.k * 5).min(100);
        let mut models = Vec::new();
        if args.partners.is_some() || args.neighbours.is_some() {
            let partners = args
                .partners
                .unwrap_or(vitrine_engine::models::MAX_PARTNERS);
            let neighbours = args
                .neighbours
                .unwrap_or(vitrine_engine::models::NEIGHBOURS);
            models.push(("partners", partners.to_string()));
            models.push(("neighbours", neighbours.min(partners).to_string()));
        }
        if let Some(power) = args.partner_damping {
            models.push(("partner_damping", power.to_string()));
        }
        if let Some(power) = args.seed_damping {
            models.push(("seed_damping", power.to_string()));
        }
        if let Some(window) = args.co_view_window {
            models.push(("co_view_window", window.to_string()));
        }
        if let Some(window) = args.co_purchase_window {
            models.push(("co_purchase_window", window.to_string()));
        }
        if let Some(power) = args.purchase_partner_damping {
            models.push(("purchase_partner_damping", power.to_string()));
        }
        if let Some(power) = args.purchase_seed_damping {
            models.push(("purchase_seed_damping", power.to_string()));
        }
        models.push(("tuning", format!("\"{}\"", args.tuning)));
        models.push((
            "tuning_trials_per_second",
            args.tuning_trials_per_second.to_string(),
        ));
        let mut server =
            vitrine::Vitrine::start(&binary, data, &args.strategies, count, &models).await?;
        let mut tuning = Vec::new();
        let outcome = async {
            let mut state: HashMap<u32, vitrine::Shopper> = HashMap::new();
            let started = Instant::now();
            let mut sent = 0usize;
            // As a store's traffic reaches it: every shopper's interactions in time
            // order, interleaved (ties in shopper order).
            let mut timeline: Vec<(u32, &Step)> = data
                .training(0)
                .into_iter()
                .enumerate()
                .flat_map(|(visitor, steps)| steps.iter().map(move |step| (visitor as u32, step)))
                .collect();
            timeline.sort_by_key(|(visitor, step)| (step.at, *visitor));
            // The models catch up `--replay-catch-ups` times on the way.
            let chunk = match args.replay_catch_ups {
                0 => usize::MAX,
                catch_ups => timeline.len().div_ceil(catch_ups).max(1),
            };
            for (n, (visitor, step)) in timeline.into_iter().enumerate() {
                let shopper = state.entry(visitor).or_default();
                server.send(data, visitor, step, shopper).await?;
                sent += 1;
                if (n + 1) % chunk == 0 {
                    server.await_models().await?;
                }
            }
            server.await_models().await?;
            println!(
                "  vitrine: {sent} interactions replayed and the models rebuilt in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            tuning.push(tuned(&mut server, "replay", sent).await?);
            let zones = server.zones.len();
            let mut validation: Vec<Results> = (0..zones).map(|_| Results::new(args.k)).collect();
            let mut results: Vec<Results> = (0..zones).map(|_| Results::new(args.k)).collect();
            for round in 0..=args.holdout {
                let queries = data.queries(round);
                let into = if round == 0 {
                    &mut validation
                } else {
                    &mut results
                };
                for query in &queries {
                    let history = history_items(data, query);
                    let shopper = state.entry(query.visitor).or_default();
                    let answers = server.ask(data, &index, query, shopper).await?;
                    for (answer, into) in answers.iter().zip(into.iter_mut()) {
                        let unseen: Vec<u32> = answer
                            .iter()
                            .copied()
                            .filter(|i| !history.contains(i))
                            .take(args.k)
                            .collect();
                        into.add(query.visitor, &unseen, query.target);
                    }
                }
                for query in &queries {
                    let step = &data.sequences[query.visitor as usize][query.position];
                    let shopper = state.entry(query.visitor).or_default();
                    server.send(data, query.visitor, step, shopper).await?;
                    sent += 1;
                }
                server.await_models().await?;
                let phase = if round == 0 {
                    "validation round".to_owned()
                } else {
                    format!("test round {round}")
                };
                tuning.push(tuned(&mut server, &phase, sent).await?);
            }
            let results: Vec<(f64, Results)> = validation
                .iter()
                .map(Results::hit_rate)
                .zip(results)
                .collect();
            anyhow::Ok(results)
        }
        .await;
        let results = match outcome {
            Ok(results) => results,
            Err(error) => {
                return Err(error.context(format!("vitrine's log:\n{}", server.log())));
            }
        };
        Ok(VitrineRun {
            zones: server
                .zones
                .iter()
                .zip(results)
                .map(|((_, spec), (validation, test))| (spec.clone(), validation, test))
                .collect(),
            tuning,
        })
    })
}

/// The server's self-tuning after a phase of the run (`sent`: interactions sent so
/// far), printed and as the report keeps it.
async fn tuned(server: &mut vitrine::Vitrine, phase: &str, sent: usize) -> anyhow::Result<Value> {
    let models = server.tuning().await?;
    let setting = |s: &Value| {
        format!(
            "window {}, partner damping {}, direction {}",
            s["coViewWindow"], s["partnerDamping"], s["coViewForward"]
        )
    };
    let switches = models["switches"].as_array().cloned().unwrap_or_default();
    println!(
        "  vitrine self-tuning after the {phase} ({sent} interactions sent): {} ({}), {} switch(es)",
        setting(&models["active"]),
        models["tuning"].as_str().unwrap_or("?"),
        switches.len()
    );
    for switch in &switches {
        println!(
            "    switched from {} to {} after {} trials ({} won, {} lost, evidence {:.2})",
            setting(&switch["from"]),
            setting(&switch["to"]),
            switch["trials"],
            switch["wins"],
            switch["losses"],
            switch["evidence"].as_f64().unwrap_or(f64::NAN)
        );
    }
    let purchases = &models["purchases"];
    let purchase_switches = purchases["switches"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    println!(
        "  vitrine self-tuning of the co-purchase lists: window {}, partner damping {}, {} switch(es)",
        purchases["active"]["coPurchaseWindow"],
        purchases["active"]["partnerDamping"],
        purchase_switches.len()
    );
    for switch in &purchase_switches {
        println!(
            "    switched from window {}, partner damping {} to window {}, partner damping {} after {} trials ({} won, {} lost, evidence {:.2})",
            switch["from"]["coPurchaseWindow"],
            switch["from"]["partnerDamping"],
            switch["to"]["coPurchaseWindow"],
            switch["to"]["partnerDamping"],
            switch["trials"],
            switch["wins"],
            switch["losses"],
            switch["evidence"].as_f64().unwrap_or(f64::NAN)
        );
    }
    let recipe = &models["recipe"];
    let recipe_switches = recipe["switches"].as_array().cloned().unwrap_or_default();
    let trials: u64 = recipe["settings"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["active"] == true))
        .and_then(|s| s["trials"].as_u64())
        .unwrap_or(0);
    println!(
        "  vitrine self-tuning of personalized's recipe ({}): {} ({} trials since the last switch), {} switch(es)",
        recipe["zone"],
        recipe["active"],
        trials,
        recipe_switches.len()
    );
    print_switches(&recipe_switches);
    let sessions = &models["sessions"];
    let session_switches = sessions["switches"].as_array().cloned().unwrap_or_default();
    println!(
        "  vitrine self-tuning of similar sessions' neighbourhood: {} neighbours, {} steps, {} switch(es)",
        sessions["active"]["neighbours"],
        sessions["active"]["steps"],
        session_switches.len()
    );
    print_switches(&session_switches);
    Ok(json!({
        "after": phase,
        "interactions_sent": sent,
        "active": models["active"],
        "settings": models["settings"],
        "switches": switches,
        "trials_dropped": models["trialsDropped"],
        "purchases": purchases,
        "recipe": recipe,
        "sessions": sessions,
    }))
}

/// Each switch of a tuned setting whose `from` and `to` print as they are.
fn print_switches(switches: &[Value]) {
    for switch in switches {
        println!(
            "    switched from {} to {} after {} trials ({} won, {} lost, evidence {:.2})",
            switch["from"],
            switch["to"],
            switch["trials"],
            switch["wins"],
            switch["losses"],
            switch["evidence"].as_f64().unwrap_or(f64::NAN)
        );
    }
}
