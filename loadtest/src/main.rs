//! `vitrine-loadtest`: drives a running Vitrine with server-side traffic.
//!
//! `vitrine-loadtest run --server URL` opens `--connections` keep-alive HTTP/1.1
//! connections and, on each, sends product-page requests (page view + product view +
//! the page's zones) back to back for `--seconds` (closed loop), then prints requests
//! per second, the status codes seen and latency percentiles. Requests of the first
//! `--warmup` seconds are not counted.

#![forbid(unsafe_code)]

mod eval;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Parser, Subcommand};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Load generator for a Vitrine server.
#[derive(Debug, Parser)]
#[command(name = "vitrine-loadtest", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Closed-loop server-side traffic against a running server.
    Run(RunArgs),
    /// Quality of one zone: replay interactions, hold out each visitor's last views, score
    /// the zone's items (HR@K, NDCG@K, MRR, coverage) next to a most-popular baseline.
    Eval(eval::EvalArgs),
    /// Write interactions with planted structure (clusters of products browsed together)
    /// over the demo catalogue's product ids, for `eval`.
    GenInteractions {
        /// Number of visitors.
        #[arg(long, default_value_t = 2000)]
        visitors: usize,
        /// Products (ids P00001...).
        #[arg(long, default_value_t = 2900)]
        products: usize,
        /// Products per cluster.
        #[arg(long, default_value_t = 20)]
        cluster: usize,
        /// Seed of the generator.
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// Output file.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Write a generated product feed (realistic field sizes, deterministic per seed).
    GenFeed {
        /// Number of products.
        #[arg(long, default_value_t = 100_000)]
        products: usize,
        /// Seed of the generator.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Output file.
        #[arg(long)]
        out: std::path::PathBuf,
    },
}

/// The server and account a command talks to.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Target {
    /// Base URL of the server, e.g. http://127.0.0.1:7480.
    #[arg(long, default_value = "http://127.0.0.1:7480")]
    pub(crate) server: String,
    /// Access key of the account.
    #[arg(long, default_value = "demo-access-key")]
    pub(crate) access_key: String,
    /// Secret key of that account.
    #[arg(long, default_value = "demo-secret-key")]
    pub(crate) secret_key: String,
}

/// The `host:port` of a `--server` URL.
pub(crate) fn authority(server: &str) -> anyhow::Result<String> {
    Ok(server
        .strip_prefix("http://")
        .context("--server must start with http://")?
        .trim_end_matches('/')
        .to_owned())
}

/// Opens one keep-alive HTTP/1.1 connection.
pub(crate) async fn connect(
    authority: &str,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .with_context(|| format!("connecting to {authority}"))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Settings of `vitrine-loadtest run`.
#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    target: Target,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Measured duration in seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Seconds of warm-up before measuring.
    #[arg(long, default_value_t = 2)]
    warmup: u64,
    /// Product ids to view, as `PREFIX` + 5-digit number (the demo's `P00001`...).
    #[arg(long, default_value_t = 2900)]
    products: usize,
    /// Zones to ask for on each request.
    #[arg(long, value_delimiter = ',', default_value = "PP-01,PP-02")]
    zones: Vec<String>,
}

#[derive(Debug, Default)]
struct Tally {
    latencies_us: Vec<u64>,
    statuses: BTreeMap<u16, u64>,
    failures: u64,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::GenFeed {
            products,
            seed,
            out,
        } => {
            let feed = vitrine_benches::feedgen::generate_feed(products, seed);
            std::fs::write(&out, &feed).with_context(|| format!("writing {}", out.display()))?;
            println!(
                "wrote {products} products ({:.1} MB) to {}",
                feed.len() as f64 / 1e6,
                out.display()
            );
            Ok(())
        }
        Command::Run(args) => run(args),
        Command::Eval(args) => eval::eval(args),
        Command::GenInteractions {
            visitors,
            products,
            cluster,
            seed,
            out,
        } => {
            eval::generate(visitors, products, cluster, seed, &out)?;
            println!(
                "wrote interactions of {visitors} visitors to {}",
                out.display()
            );
            Ok(())
        }
    }
}

fn run(args: RunArgs) -> anyhow::Result<()> {
    let RunArgs {
        target:
            Target {
                server,
                access_key,
                secret_key,
            },
        connections,
        seconds,
        warmup,
        products,
        zones,
    } = args;
    let authority = authority(&server)?;
    if connections == 0 || seconds == 0 || products == 0 {
        bail!("--connections, --seconds and --products must be at least 1");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let start = Instant::now();
        let measure_from = start + Duration::from_secs(warmup);
        let end = measure_from + Duration::from_secs(seconds);
        let mut tasks = Vec::with_capacity(connections);
        for worker in 0..connections {
            let job = Worker {
                authority: authority.clone(),
                access_key: access_key.clone(),
                secret_key: secret_key.clone(),
                zones: zones.clone(),
                products,
                worker,
                measure_from,
                end,
            };
            tasks.push(tokio::spawn(job.run()));
        }
        let mut total = Tally::default();
        for task in tasks {
            let tally = task.await.context("worker task")??;
            total.latencies_us.extend(tally.latencies_us);
            total.failures += tally.failures;
            for (status, count) in tally.statuses {
                *total.statuses.entry(status).or_default() += count;
            }
        }
        report(&mut total, seconds, connections);
        Ok(())
    })
}

#[derive(Debug)]
struct Worker {
    authority: String,
    access_key: String,
    secret_key: String,
    zones: Vec<String>,
    products: usize,
    worker: usize,
    measure_from: Instant,
    end: Instant,
}

impl Worker {
    async fn run(self) -> anyhow::Result<Tally> {
        let mut sender = connect(&self.authority).await?;
        let mut tally = Tally::default();
        let mut n: usize = self.worker * 7919;
        while Instant::now() < self.end {
            n = n.wrapping_add(1);
            let product = format!("P{:05}", 1 + (n * 31) % self.products);
            let body = serde_json::json!({
                "appId": self.access_key,
                "secretKey": self.secret_key,
                "currentUrl": format!("https://shop.example/product/{product}"),
                "userAgent": "vitrine-loadtest",
                "ip": "198.51.100.1",
                "visitorId": format!("load-{}-{}", self.worker, n % 500),
                "events": [
                    {"name": "page_view", "data": {"page_type": "product_page", "product_id": product}},
                    {"name": "product_view", "data": {"id": product}}
                ],
                "zones": self.zones,
            });
            let request = Request::post("/api/serverside")
                .header("host", &self.authority)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(serde_json::to_vec(&body)?)))?;
            let sent = Instant::now();
            let outcome = match sender.send_request(request).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    response.into_body().collect().await.map(|_| status).ok()
                }
                Err(_) => None,
            };
            if sent < self.measure_from {
                continue;
            }
            match outcome {
                Some(status) => {
                    tally.latencies_us.push(sent.elapsed().as_micros() as u64);
                    *tally.statuses.entry(status).or_default() += 1;
                }
                None => {
                    tally.failures += 1;
                    break;
                }
            }
        }
        Ok(tally)
    }
}

fn report(tally: &mut Tally, seconds: u64, connections: usize) {
    tally.latencies_us.sort_unstable();
    let count = tally.latencies_us.len();
    let percentile = |p: f64| -> u64 {
        if count == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * count as f64).ceil() as usize;
        tally
            .latencies_us
            .get(rank.clamp(1, count) - 1)
            .copied()
            .unwrap_or(0)
    };
    println!("connections: {connections}, measured: {seconds} s, requests: {count}");
    println!(
        "throughput: {:.0} requests/s",
        count as f64 / seconds as f64
    );
    println!(
        "latency (round trip): p50 {} us, p90 {} us, p99 {} us, p99.9 {} us, max {} us",
        percentile(50.0),
        percentile(90.0),
        percentile(99.0),
        percentile(99.9),
        tally.latencies_us.last().copied().unwrap_or(0)
    );
    let statuses: Vec<String> = tally
        .statuses
        .iter()
        .map(|(s, c)| format!("{s}: {c}"))
        .collect();
    println!(
        "statuses: {}; connection failures: {}",
        statuses.join(", "),
        tally.failures
    );
}
