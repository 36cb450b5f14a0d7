//! `vitrine-loadtest crash`: a crash loop with fault injection against the real server.
//!
//! Each round restarts `vitrine` on the same data directory, checks that everything
//! acknowledged so far is there, runs writers (three order-and-view writers, one delta
//! writer) for a random 150–650 ms and SIGKILLs the server; with `--burn`, beside busy
//! loops on every core. With `--faults`, damage is done between some kills while the
//! server is down: a torn tail (1–12 bytes cut off
//! the newest log segment), a torn tail after a quiet period (writers stopped until two
//! state snapshots cover the log), a flipped byte in the newest catalogue or state
//! snapshot, or the newest snapshot of a kind deleted (the last two only when an older
//! one is kept). A torn record is read before the cut, and what it held (a delta, one
//! request's order and view) is what the fault destroyed: it is not counted as lost.
//!
//! Under `always` nothing acknowledged may be lost; under `interval` only what the
//! README promises: events answered less than `fsync_interval_ms` before the last answer
//! the server gave. Measured from the client's clocks, which can only widen the gap: a
//! lost order whose 200 arrived more than the interval before the *sending* of the last
//! request answered in its round breaks the promise. Lost orders are reported by that
//! age. Deltas are always fsynced. The tool exits non-zero when anything else is
//! missing.

mod faults;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use faults::{Fault, inject, newest, pick_fault};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use vitrine_ingest::jobs::STATUSES_KEPT;
use vitrine_testkit::client::{Response, post_json};
use vitrine_testkit::{
    AccountToml, CatalogueStart, ConfigToml, DEMO_KEY, DEMO_SECRET, TestServer, ZoneToml,
};

/// `fsync_interval_ms` of the crash configuration.
const FSYNC_INTERVAL_MS: u64 = 50;
/// Order writers (each also views a product in the same request).
const ORDER_WRITERS: usize = 3;
/// Older acknowledged orders re-checked per round, besides every new one.
const SAMPLE: usize = 50;

/// Settings of `vitrine-loadtest crash`.
#[derive(Debug, clap::Args)]
pub(crate) struct CrashArgs {
    /// SIGKILLs to do.
    #[arg(long, default_value_t = 20)]
    kills: usize,
    /// `durability.events_fsync`: `always` or `interval`.
    #[arg(long, default_value = "always")]
    policy: String,
    /// Damage the log or a snapshot between some kills.
    #[arg(long)]
    faults: bool,
    /// The `vitrine` binary (default: next to this tool).
    #[arg(long)]
    vitrine: Option<PathBuf>,
    /// Seed of the kill moments and faults (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the report as JSON here too.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Keep every core busy for the whole loop (one busy-loop child process per core,
    /// killed at the end): the promises must hold on a machine busy with other work.
    #[arg(long)]
    burn: bool,
}

/// One acknowledged write.
#[derive(Debug, Clone)]
struct Ack {
    /// Order id, or delta token.
    id: String,
    /// The product a delta added.
    product: String,
    /// When its request was sent.
    sent: Instant,
    /// When its 200 arrived.
    at: Instant,
    /// When the last request answered in its round was sent (the loss window ends
    /// there).
    round_last_sent: Option<Instant>,
    /// Its place among the acknowledged writes of its kind.
    index: usize,
}

/// What the loop found.
#[derive(Debug, Default, serde::Serialize)]
struct Report {
    kills: usize,
    policy: String,
    seed: u64,
    orders_acknowledged: usize,
    deltas_acknowledged: usize,
    orders_lost: usize,
    orders_lost_within_window: usize,
    /// Each lost order's age: from its 200 to the sending of the last request answered
    /// in its round, in ms (0 when it came after), sorted.
    lost_order_ages_ms: Vec<f64>,
    /// From each delta's 200 to its Status 1 (or 2), for those decided before their
    /// round's kill, in ms, sorted.
    delta_settle_ms: Vec<f64>,
    deltas_lost: usize,
    destroyed_by_faults: usize,
    faults: HashMap<String, usize>,
    restart_ms_median: f64,
    restart_ms_max: f64,
    problems: Vec<String>,
}

pub(crate) fn crash(args: CrashArgs) -> anyhow::Result<()> {
    let binary = match &args.vitrine {
        Some(path) => path.clone(),
        None => crate::provision::sibling_binary()?,
    };
    if !matches!(args.policy.as_str(), "always" | "interval") {
        bail!("--policy must be always or interval, got {:?}", args.policy);
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let mut rng = StdRng::seed_from_u64(seed);
    let _burner = if args.burn {
        Some(vitrine_testkit::pressure::CpuBurner::start().context("burning the cores")?)
    } else {
        None
    };
    let config = config(&args.policy);
    let window = Duration::from_millis(FSYNC_INTERVAL_MS);
    let mut report = Report {
        policy: args.policy.clone(),
        seed,
        ..Report::default()
    };
    let mut orders: Vec<Ack> = Vec::new();
    let mut deltas: Vec<Ack> = Vec::new();
    let mut destroyed: HashSet<String> = HashSet::new();
    let mut checked_orders = 0;
    let mut checked_deltas = 0;
    let mut restarts = Vec::new();
    let mut dir = tempfile::Builder::new()
        .prefix("vitrine-crash-")
        .tempdir()
        .context("creating the data directory")?;
    let mut killed_at: Option<Instant> = None;
    for round in 0..=args.kills {
        let started = Instant::now();
        let server = TestServer::start_in(&binary, dir, Some(&config))?;
        restarts.push(started.elapsed().as_secs_f64() * 1000.0);
        let addr = server.addr();

        // Everything acknowledged is there (new writes all, older ones sampled).
        let lost = check(
            addr,
            &mut rng,
            &orders,
            &mut checked_orders,
            &deltas,
            &mut checked_deltas,
            &destroyed,
        )?;
        for (kind, ack) in lost {
            let before_kill = killed_at.map(|k| k.saturating_duration_since(ack.at));
            let age = ack.round_last_sent.map_or(Duration::ZERO, |last| {
                last.saturating_duration_since(ack.at)
            });
            if kind == "order" {
                report.lost_order_ages_ms.push(age.as_secs_f64() * 1000.0);
            }
            let excused = kind == "order" && args.policy == "interval" && age <= window;
            match (kind, excused) {
                ("order", true) => report.orders_lost_within_window += 1,
                ("order", false) => {
                    report.orders_lost += 1;
                    report.problems.push(format!(
                        "round {round}: order {} lost, answered {age:?} before the last answered request was sent ({before_kill:?} before the kill)",
                        ack.id
                    ));
                }
                _ => {
                    report.deltas_lost += 1;
                    report
                        .problems
                        .push(format!("round {round}: delta {} lost", ack.id));
                }
            }
        }
        if round == args.kills {
            break;
        }

        // Writers until the kill; sometimes quiet first, so that state snapshots cover
        // the whole log before it is torn.
        let fault = if args.faults {
            pick_fault(&mut rng)
        } else {
            Fault::None
        };
        let run_for = Duration::from_millis(150 + rng.random_range(0..500));
        let acked = write(addr, round, run_for);
        let round_last_sent = acked.orders.iter().map(|a| a.sent).max();
        report
            .delta_settle_ms
            .extend(acked.settled_ms.iter().copied());
        for mut ack in acked.orders {
            ack.round_last_sent = round_last_sent;
            ack.index = orders.len();
            orders.push(ack);
        }
        for mut ack in acked.deltas {
            ack.index = deltas.len();
            deltas.push(ack);
        }
        if fault == Fault::QuietTear {
            let from = newest(server.dir(), "state-");
            let deadline = Instant::now() + Duration::from_secs(30);
            while newest(server.dir(), "state-") < from + 2 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        killed_at = Some(Instant::now());
        dir = server.kill9();
        report.kills += 1;
        if let Some(destroyed_now) = inject(fault, dir.path(), &mut rng)? {
            report.problems.push(format!(
                "round {round}: injected {} (destroyed {})",
                fault.name(),
                destroyed_now.len()
            ));
            *report.faults.entry(fault.name().to_owned()).or_default() += 1;
            report.destroyed_by_faults += destroyed_now.len();
            destroyed.extend(destroyed_now);
        }
        if (round + 1) % 50 == 0 {
            eprintln!(
                "{} kills: {} orders and {} deltas acknowledged, {} lost",
                round + 1,
                orders.len(),
                deltas.len(),
                report.orders_lost + report.deltas_lost
            );
        }
    }
    report.lost_order_ages_ms.sort_by(f64::total_cmp);
    report.delta_settle_ms.sort_by(f64::total_cmp);
    report.orders_acknowledged = orders.len();
    report.deltas_acknowledged = deltas.len();
    restarts.sort_by(f64::total_cmp);
    report.restart_ms_median = restarts.get(restarts.len() / 2).copied().unwrap_or(0.0);
    report.restart_ms_max = restarts.last().copied().unwrap_or(0.0);
    print_report(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if report.orders_lost + report.deltas_lost > 0 {
        bail!("acknowledged writes were lost");
    }
    Ok(())
}

fn config(policy: &str) -> String {
    let preamble = format!(
        "[durability]\nevents_fsync = \"{policy}\"\nfsync_interval_ms = {FSYNC_INTERVAL_MS}\n\
         state_snapshot_interval_secs = 1\nwal_segment_bytes = 65536\n\
         [deltas]\ncompact_after_changes = 40\n[feeds]\nbackground_priority = \"normal\""
    );
    let account = AccountToml::new(DEMO_KEY, DEMO_SECRET, CatalogueStart::Demo)
        .zone(ZoneToml::new("RV-01", "recently_viewed", 20));
    ConfigToml::new(&preamble).account(account).to_toml()
}

/// What the writers had acknowledged when the server was killed.
#[derive(Debug, Default)]
struct Acked {
    orders: Vec<Ack>,
    deltas: Vec<Ack>,
    /// For each delta decided before the kill: from its 200 to its status leaving
    /// Pending (`/api/deltastatus` polled every 2 ms), in ms.
    settled_ms: Vec<f64>,
}

fn serverside(body: Value) -> Value {
    let mut full = json!({"appId": DEMO_KEY, "secretKey": DEMO_SECRET,
        "currentUrl": "https://shop.example/", "userAgent": "crash", "ip": "203.0.113.7"});
    if let (Some(target), Value::Object(extra)) = (full.as_object_mut(), body) {
        target.extend(extra);
    }
    full
}

fn order_event(order_id: &str) -> Value {
    json!({"name": "order", "data": {"orderid": order_id, "userid": "crash-user",
        "items": [{"id": "P00001", "qty": 1, "unitprice": 9.99}]}})
}

/// Runs the writers for `run_for`; returns what they had acknowledged by then (the
/// server is killed right after).
fn write(addr: SocketAddr, round: usize, run_for: Duration) -> Acked {
    let acked = Mutex::new(Acked::default());
    let stop_at = Instant::now() + run_for;
    std::thread::scope(|scope| {
        for writer in 0..ORDER_WRITERS {
            let acked = &acked;
            scope.spawn(move || {
                let mut n = 0;
                while Instant::now() < stop_at {
                    let order_id = format!("r{round}-w{writer}-{n}");
                    let body = serverside(json!({
                        "visitorId": format!("crash-visitor-{writer}"),
                        "events": [
                            {"name": "product_view", "data": {"id": format!("P{:05}", 1 + n % 2000)}},
                            order_event(&order_id),
                        ],
                    }));
                    let sent = Instant::now();
                    match post_json(addr, "/api/serverside", &body) {
                        Some(resp) if resp.status == 200 => {
                            if let Ok(mut acked) = acked.lock() {
                                acked.orders.push(Ack {
                                    id: order_id,
                                    product: String::new(),
                                    sent,
                                    at: Instant::now(),
                                    round_last_sent: None,
                                    index: 0,
                                });
                            }
                        }
                        _ => return,
                    }
                    n += 1;
                }
            });
        }
        let acked = &acked;
        scope.spawn(move || {
            let mut n = 0;
            while Instant::now() < stop_at {
                let product = format!("CRASH-{round}-{n}");
                let body = json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET,
                    "Products": [{"Id": product, "Title": "Crash", "Link": "/p/crash",
                        "Image": "//img/crash.jpg", "Prices": ["5 GBP"], "Categories": ["cat-01"]}]});
                let sent = Instant::now();
                let token = post_json(addr, "/api/delta", &body)
                    .filter(|resp| resp.status == 200)
                    .and_then(|resp| resp.json())
                    .and_then(|json| json["Token"].as_str().map(str::to_owned));
                let Some(token) = token else { return };
                let at = Instant::now();
                let settled = settle(addr, &token, at, stop_at);
                if let Ok(mut acked) = acked.lock() {
                    acked.deltas.push(Ack {
                        id: token,
                        product,
                        sent,
                        at,
                        round_last_sent: None,
                        index: 0,
                    });
                    if let Some(settled) = settled {
                        acked.settled_ms.push(settled.as_secs_f64() * 1000.0);
                    }
                }
                n += 1;
            }
        });
    });
    acked.into_inner().unwrap_or_default()
}

/// How long after its 200 (at `at`) the delta `token` left Pending, polling its status
/// every 2 ms; `None` when the server went away (or the round ended) first.
fn settle(addr: SocketAddr, token: &str, at: Instant, stop_at: Instant) -> Option<Duration> {
    loop {
        let status = post_json(
            addr,
            "/api/deltastatus",
            &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": [token]}),
        )
        .filter(|resp| resp.status == 200)
        .and_then(|resp| resp.json())
        .and_then(|json| json[0]["Status"].as_i64())?;
        if status != 0 {
            return Some(at.elapsed());
        }
        if Instant::now() > stop_at + Duration::from_secs(30) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Checks the acknowledged writes not yet checked, and a sample of older ones; returns
/// the missing ones with their kind.
fn check(
    addr: SocketAddr,
    rng: &mut StdRng,
    orders: &[Ack],
    checked_orders: &mut usize,
    deltas: &[Ack],
    checked_deltas: &mut usize,
    destroyed: &HashSet<String>,
) -> anyhow::Result<Vec<(&'static str, Ack)>> {
    let sample = |acks: &[Ack], from: usize, rng: &mut StdRng| -> Vec<Ack> {
        let mut chosen: Vec<Ack> = acks.get(from..).unwrap_or_default().to_vec();
        for _ in 0..SAMPLE.min(from) {
            if let Some(ack) = acks.get(rng.random_range(0..from)) {
                chosen.push(ack.clone());
            }
        }
        chosen.retain(|ack| !destroyed.contains(&ack.id));
        chosen
    };
    let order_checks = sample(orders, *checked_orders, rng);
    let delta_checks = sample(deltas, *checked_deltas, rng);
    *checked_orders = orders.len();
    *checked_deltas = deltas.len();
    let mut lost = Vec::new();
    // An order id already recorded is reported as a repeat; a missing one is recorded
    // now (and counted lost).
    for chunk in order_checks.chunks(50) {
        let events: Vec<Value> = chunk.iter().map(|a| order_event(&a.id)).collect();
        let resp = expect_ok(post_json(
            addr,
            "/api/serverside",
            &serverside(json!({"visitorId": "checker", "events": events})),
        ))?;
        let errors = resp
            .json()
            .map(|json| json["errors"].clone())
            .unwrap_or_default();
        for (i, ack) in chunk.iter().enumerate() {
            let repeated = errors.as_array().is_some_and(|errors| {
                errors.iter().any(|e| {
                    e.as_str().is_some_and(|e| {
                        e.starts_with(&format!("events[{i}].")) && e.contains("already recorded")
                    })
                })
            });
            if !repeated {
                lost.push(("order", ack.clone()));
            }
        }
    }
    // Deltas: Status 1 once settled, and the product served.
    let deadline = Instant::now() + Duration::from_secs(240);
    for chunk in delta_checks.chunks(100) {
        let tokens: Vec<&str> = chunk.iter().map(|a| a.id.as_str()).collect();
        let statuses = loop {
            let resp = expect_ok(post_json(
                addr,
                "/api/deltastatus",
                &json!({"AppKey": DEMO_KEY, "SecretKey": DEMO_SECRET, "Tokens": tokens}),
            ))?;
            let statuses: Vec<i64> = resp
                .json()
                .and_then(|json| {
                    json.as_array().map(|items| {
                        items
                            .iter()
                            .map(|i| i["Status"].as_i64().unwrap_or(-1))
                            .collect()
                    })
                })
                .unwrap_or_default();
            if !statuses.contains(&0) || Instant::now() > deadline {
                break statuses;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Statuses are kept for the newest STATUSES_KEPT tokens: an older one answers
        // "unknown token" by design, and only its product says whether it was kept.
        let expired_below = deltas.len().saturating_sub(STATUSES_KEPT);
        for (ack, status) in chunk.iter().zip(statuses) {
            // Status 1 for every delta; the product served for a sample of them (a
            // request pair each).
            let expired = ack.index < expired_below && status == 2;
            let probe = expired || rng.random_range(0..delta_checks.len().max(1)) < SAMPLE / 2;
            let served = (status == 1 || expired) && (!probe || served(addr, &ack.product)?);
            if !served {
                let mut ack = ack.clone();
                ack.id = format!("{} (status {status}, product {})", ack.id, ack.product);
                lost.push(("delta", ack));
            }
        }
    }
    Ok(lost)
}

/// Whether the catalogue serves `product` (viewed, it shows in recently viewed).
fn served(addr: SocketAddr, product: &str) -> anyhow::Result<bool> {
    let visitor = format!("probe-{product}");
    expect_ok(post_json(
        addr,
        "/api/serverside",
        &serverside(json!({"visitorId": visitor,
            "events": [{"name": "product_view", "data": {"id": product}}]})),
    ))?;
    let resp = expect_ok(post_json(
        addr,
        "/api/serverside",
        &serverside(json!({"visitorId": visitor,
            "events": [{"name": "page_view", "data": {"page_type": "homepage"}}],
            "zones": ["RV-01"]})),
    ))?;
    Ok(resp
        .json()
        .and_then(|json| json["zones"]["RV-01"]["items"].as_array().cloned())
        .is_some_and(|items| items.iter().any(|i| i["Id"] == product)))
}

fn expect_ok(resp: Option<Response>) -> anyhow::Result<Response> {
    match resp {
        Some(resp) if resp.status == 200 => Ok(resp),
        Some(resp) => bail!("unexpected answer {}: {}", resp.status, resp.body),
        None => bail!("the server did not answer"),
    }
}

fn print_report(report: &Report) {
    println!(
        "{} kills under {} (seed {}): {} orders and {} deltas acknowledged",
        report.kills,
        report.policy,
        report.seed,
        report.orders_acknowledged,
        report.deltas_acknowledged
    );
    println!(
        "lost: {} orders, {} deltas; {} orders lost within the {} ms window (allowed under interval); {} writes destroyed by injected faults",
        report.orders_lost,
        report.deltas_lost,
        report.orders_lost_within_window,
        FSYNC_INTERVAL_MS,
        report.destroyed_by_faults
    );
    let settle = &report.delta_settle_ms;
    if !settle.is_empty() {
        let at = |q: f64| {
            settle
                .get(((settle.len() - 1) as f64 * q) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        println!(
            "delta 200 → Status 1 ({} deltas decided before their round's kill): median {:.2} ms, p99 {:.2} ms, max {:.2} ms; {} over 1 s",
            settle.len(),
            at(0.5),
            at(0.99),
            at(1.0),
            settle.iter().filter(|ms| **ms > 1000.0).count()
        );
    }
    let ages = &report.lost_order_ages_ms;
    if !ages.is_empty() {
        let at = |q: f64| {
            ages.get(((ages.len() - 1) as f64 * q) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        println!(
            "lost orders by age (from their 200 to the sending of the last answered request of their round): median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
    let mut faults: Vec<_> = report.faults.iter().collect();
    faults.sort();
    for (fault, count) in faults {
        println!("  fault: {fault} × {count}");
    }
    println!(
        "restart to ready: median {:.0} ms, max {:.0} ms",
        report.restart_ms_median, report.restart_ms_max
    );
    let lost = report.orders_lost + report.deltas_lost;
    for problem in report
        .problems
        .iter()
        .filter(|p| lost > 0 || !p.contains("injected"))
        .take(40)
    {
        println!("  {problem}");
    }
}
