//! `vitrine import`: the feed pipeline of the server (parse, validate, build, snapshot)
//! run on a local file, with progress bars for bytes read and records validated.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use vitrine_engine::Account;
use vitrine_engine::catalogue::CatalogueBuilder;
use vitrine_http::config::Config;
use vitrine_http::state::{account_dir, jobs_config};
use vitrine_ingest::jobs::{AccountJobs, FeedStatus, ingest_pool};
use vitrine_ingest::{runner, store};
use vitrine_snapshots::DataDir;
use vitrine_snapshots::snapshot;

/// The account's jobs, started on its data as the server would start them.
fn open(config: &Config, access_key: &str) -> anyhow::Result<Opened> {
    let Some(account_config) = config.accounts.iter().find(|a| a.access_key == access_key) else {
        bail!(
            "{}: no account has access_key {access_key:?}",
            config.source
        );
    };
    let data_dir = DataDir::open(&config.data_dir).context("opening the data directory")?;
    let dir = account_dir(data_dir.path(), access_key);
    let (restored, skipped) = store::restore(&dir)?;
    for problem in skipped {
        eprintln!("warning: skipping snapshot: {problem}");
    }
    let (catalogue, base_position) = match restored {
        Some(restored) => (restored.catalogue, restored.position),
        None if account_config.demo_catalogue => (vitrine_engine::demo::catalogue()?, 0),
        None => (CatalogueBuilder::new().build()?, 0),
    };
    let account = Arc::new(Account::new(account_config.settings(), catalogue));
    let (users, problems) = store::restore_users(&dir);
    for problem in problems {
        eprintln!("warning: users: {problem}");
    }
    account.replace_users(users);
    let pool = ingest_pool(config.feeds.ingest_threads).context("starting the ingest pool")?;
    let (jobs, _) = AccountJobs::start(
        account,
        &dir,
        base_position,
        jobs_config(config, Arc::clone(&pool))?,
    )?;

    Ok(Opened {
        jobs,
        pool,
        dir,
        _data_dir: data_dir,
    })
}

/// An account opened for an import; the data directory stays locked while it lives.
struct Opened {
    jobs: AccountJobs,
    pool: Arc<rayon::ThreadPool>,
    dir: std::path::PathBuf,
    _data_dir: DataDir,
}

pub(crate) fn run(config: &Config, access_key: &str, feed: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let Opened {
        jobs,
        pool,
        dir,
        _data_dir: _locked,
    } = open(config, access_key)?;
    let mut bytes = read_with_progress(feed)?;
    let size = bytes.len();
    let records = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {pos} records validated ({per_sec}) {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let status = runner::apply(&jobs, &mut bytes, &pool, &|n| records.inc(n));
    records.finish_and_clear();
    drop(bytes);
    jobs.shutdown();
    match status {
        FeedStatus::Complete { detail } => {
            let products = jobs.account().catalogue().len();
            let newest = snapshot::list(&dir, store::PREFIX)?.into_iter().next();
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "imported {products} products into {access_key} from {} ({:.1} MB) in {seconds:.1} s",
                feed.display(),
                size as f64 / 1e6
            );
            if let Some((_, path)) = newest {
                let snapshot_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                println!(
                    "snapshot: {} ({:.1} MB)",
                    path.display(),
                    snapshot_bytes as f64 / 1e6
                );
            }
            if let Some(detail) = detail {
                println!("{detail}");
            }
            Ok(())
        }
        FeedStatus::Failed(error) => bail!("{}: {error}", feed.display()),
        FeedStatus::Processing => bail!("{}: the import did not finish", feed.display()),
    }
}

fn read_with_progress(path: &Path) -> anyhow::Result<Vec<u8>> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} read ({bytes_per_sec})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut bytes = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut chunk = vec![0u8; 8 << 20];
    loop {
        let n = file
            .read(&mut chunk)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(chunk.get(..n).unwrap_or_default());
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    Ok(bytes)
}

/// `vitrine import --orders`: an order history (CSV) recorded into the account as the
/// plugins' streamed `orders` feed would be.
pub(crate) fn run_orders(config: &Config, access_key: &str, csv: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let Opened {
        jobs,
        _data_dir: _locked,
        ..
    } = open(config, access_key)?;
    let bytes = read_with_progress(csv)?;
    let status = runner::import_orders(&jobs, &bytes);
    jobs.shutdown();
    match status {
        FeedStatus::Complete { detail } => {
            println!(
                "imported the order history {} into {access_key} in {:.1} s",
                csv.display(),
                started.elapsed().as_secs_f64()
            );
            if let Some(detail) = detail {
                println!("{detail}");
            }
            Ok(())
        }
        FeedStatus::Failed(error) => bail!("{}: {error}", csv.display()),
        FeedStatus::Processing => bail!("{}: the import did not finish", csv.display()),
    }
}
