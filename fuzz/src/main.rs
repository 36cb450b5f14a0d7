//! `vitrine-fuzz`: runs the mutation fuzzer over one target or all, prints executions
//! and findings per target, writes each finding's input under `--findings`, and exits
//! non-zero when there is one. See the crate's documentation for what it does.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use vitrine_fuzz::{Target, fuzz, seeds};

/// Mutation fuzzing of Vitrine's parsers.
#[derive(Debug, Parser)]
#[command(name = "vitrine-fuzz", version, about)]
struct Cli {
    /// A target (serverside, delta, feed, orders, status, config, wal, snapshot,
    /// state, campaigns), or `all`.
    #[arg(long, default_value = "all")]
    target: String,
    /// Inputs per target.
    #[arg(long, default_value_t = 1_000_000)]
    execs: u64,
    /// Seed of the mutations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The seed corpus (a directory per target).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus"))]
    corpus: PathBuf,
    /// Where to write the inputs of findings.
    #[arg(long, default_value = "fuzz-findings")]
    findings: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let targets: Vec<Target> = if cli.target == "all" {
        Target::ALL.to_vec()
    } else {
        vec![Target::of_name(&cli.target).context("unknown --target")?]
    };
    let mut found = 0;
    for target in targets {
        let seeds = seeds(target, &cli.corpus)?;
        let started = Instant::now();
        let outcome = fuzz(target, &seeds, cli.execs, cli.seed);
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "{:<10} {:>12} execs in {:>7.1} s ({:>9.0}/s) from {} seeds: {} findings",
            target.name(),
            outcome.execs,
            seconds,
            outcome.execs as f64 / seconds.max(1e-9),
            seeds.len(),
            outcome.findings.len()
        );
        for (i, finding) in outcome.findings.iter().enumerate() {
            std::fs::create_dir_all(&cli.findings)?;
            let path = cli.findings.join(format!("{}-{i}", target.name()));
            std::fs::write(&path, &finding.input)?;
            println!(
                "  {}: {} (input {})",
                target.name(),
                finding.message,
                path.display()
            );
            found += 1;
        }
    }
    if found > 0 {
        bail!("{found} findings");
    }
    Ok(())
}
