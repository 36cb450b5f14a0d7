//! `vitrine-loadtest`: load and quality tools for a Vitrine server.
//!
//! - `run`: simulated shoppers against a spawned or running server, closed or open
//!   loop, with HDR percentiles of round trip and server time and the ratio to a bare
//!   hyper baseline (`run.rs`, `drive.rs`, the shoppers in `vitrine_benches::traffic`,, `baseline.rs`,
//!   `provision.rs`).
//! - `eval`, `gen-interactions`: recommendation quality (`eval.rs`).
//! - `quality`: Vitrine's zones against published recommenders on a public dataset
//!   (`quality/`).
//! - `gen-feed`: a synthetic product feed.
//! - `crash`: a crash loop with fault injection (`crash.rs`).

#![forbid(unsafe_code)]
#![expect(
    clippy::indexing_slicing,
    reason = "a measuring tool: percentile, shelf and dataset indexes are bounded by construction; a panic aborts one run"
)]

mod baseline;
mod cpus;
mod crash;
mod drive;
mod eval;
mod jitter;
mod lag;
mod percentiles;
mod provision;
mod quality;
mod run;
mod target;

use anyhow::Context;
use clap::{Parser, Subcommand};

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
    /// Simulated shoppers against a spawned (--spawn) or running (--server) Vitrine:
    /// closed loop (--connections) or open loop (--rate), percentiles, errors, and the
    /// ratio to a bare hyper server (--baseline).
    Run(Box<run::RunArgs>),
    /// Crash loop: SIGKILLs under concurrent writers, with fault injection between
    /// kills; fails if anything acknowledged is lost.
    Crash(crash::CrashArgs),
    /// Quality of one zone: replay interactions, hold out each visitor's last views, score
    /// the zone's items (HR@K, NDCG@K, MRR, coverage) next to a most-popular baseline.
    Eval(eval::EvalArgs),
    /// Vitrine's zones against published recommenders (most popular, item-kNN, EASE,
    /// ALS, Markov, sequential rules, V-SKNN) on the same split of a dataset: HR@K,
    /// NDCG@K, MRR@K, coverage and each zone's ratio to the best with a 95 % interval.
    Quality(quality::QualityArgs),
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
    /// The bare hyper server of `run --baseline` on its own, until interrupted: to hold
    /// another load generator (e.g. `wrk`) against it and against Vitrine alike.
    Baseline {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:7481")]
        listen: std::net::SocketAddr,
        /// Size of the fixed answer, in bytes.
        #[arg(long, default_value_t = 10_000)]
        bytes: usize,
        /// Microseconds of CPU spent on each request before answering (a busy loop).
        #[arg(long, default_value_t = 0)]
        work_us: u64,
        /// CPUs the server's threads run on, e.g. `0` or `0-1` (default: all).
        #[arg(long)]
        cpus: Option<String>,
    },
    /// Time a fixed piece of CPU work again and again: the machine's own latency floor
    /// (interrupts, hypervisor, other threads) on the same cores as a server.
    Jitter(jitter::JitterArgs),
    /// Print the configuration of the store `run --spawn` starts (the demo's account,
    /// the store's zones, feeds from loopback allowed), to start servers of one's own
    /// with, e.g. the nodes of a cluster.
    StoreConfig,
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
        Command::Baseline {
            listen,
            bytes,
            work_us,
            cpus,
        } => {
            let cpus = cpus.as_deref().map(cpus::parse).transpose()?;
            let server = baseline::Baseline::start_on(listen, bytes, work_us, cpus)?;
            println!(
                "bare hyper server at http://{} (Ctrl-C stops it)",
                server.addr
            );
            let signals = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            signals.block_on(tokio::signal::ctrl_c())?;
            drop(server);
            Ok(())
        }
        Command::Jitter(args) => jitter::jitter(args),
        Command::StoreConfig => {
            print!(
                "{}",
                vitrine_benches::traffic::store_config(vitrine_testkit::CatalogueStart::Empty)
            );
            Ok(())
        }
        Command::Run(args) => run::run(*args),
        Command::Crash(args) => crash::crash(args),
        Command::Eval(args) => eval::eval(args),
        Command::Quality(args) => quality::quality(args),
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
