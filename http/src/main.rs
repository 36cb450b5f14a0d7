//! `vitrine`: the command line of the Vitrine server.

#![forbid(unsafe_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use vitrine_snapshots::threads::{self, Role};

use anyhow::Context;
use clap::{Parser, Subcommand};
use vitrine_http::config::{self, Config, Overrides};
use vitrine_http::control::{self, ConfigSource};
use vitrine_http::state::AppState;

mod import;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Vitrine: a self-hosted personalization server for online stores.
#[derive(Debug, Parser)]
#[command(name = "vitrine", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server. Without --config it serves the embedded demo account.
    Serve {
        /// TOML configuration file (accounts, zones, limits).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Address to listen on, e.g. 127.0.0.1:7480 (port 0 picks a free port).
        #[arg(long, value_name = "ADDR", env = "VITRINE_LISTEN")]
        listen: Option<String>,
        /// Directory for snapshots and logs.
        #[arg(long, value_name = "DIR", env = "VITRINE_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Ask a running server's `/healthz` (a container's health check): exit 0 when it
    /// answers 200, 1 otherwise.
    Health {
        /// The server's health URL (plain HTTP).
        #[arg(
            long,
            value_name = "URL",
            default_value = "http://127.0.0.1:7480/healthz"
        )]
        url: String,
        /// Seconds to wait for the answer.
        #[arg(long, value_name = "SECS", default_value_t = 5)]
        timeout: u64,
    },
    /// Validate a configuration file without starting: prints `FILE: ok`, or the error
    /// `vitrine serve` would print, and exits 2.
    CheckConfig {
        /// The TOML configuration file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Make the server running on a data directory read its configuration file again
    /// (SIGHUP) and print the outcome: exit 0 once the new configuration is in force, 1
    /// when it was refused (the old one stays), 2 when no server answered.
    Reload {
        /// The server's data directory.
        #[arg(long, value_name = "DIR", env = "VITRINE_DATA_DIR")]
        data_dir: PathBuf,
        /// Seconds to wait for the outcome.
        #[arg(long, value_name = "SECS", default_value_t = 60)]
        timeout: u64,
    },
    /// Copy a data directory into a new backup directory, while the server runs on it
    /// (it is first asked to write and fsync everything it acknowledged) or not.
    Backup {
        /// The data directory.
        #[arg(long, value_name = "DIR", env = "VITRINE_DATA_DIR")]
        data_dir: PathBuf,
        /// The backup directory to create (new or empty).
        #[arg(long, value_name = "BACKUP")]
        out: PathBuf,
        /// Seconds to wait for a running server to flush its logs.
        #[arg(long, value_name = "SECS", default_value_t = 60)]
        timeout: u64,
    },
    /// Check a backup against its manifest and copy it into a new data directory.
    Restore {
        /// The backup directory (from `vitrine backup`).
        #[arg(value_name = "BACKUP")]
        backup: PathBuf,
        /// The data directory to create (new or empty).
        #[arg(long, value_name = "DIR")]
        data_dir: PathBuf,
    },
    /// Load a feed file for one account offline, writing the snapshot the server opens
    /// on its next start (the server must not be running on the same data directory).
    Import {
        /// TOML configuration file naming the account and the data directory.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Access key of the account to load the feed into.
        #[arg(long, value_name = "ACCESS_KEY")]
        account: String,
        /// Data directory (overrides the config file).
        #[arg(long, value_name = "DIR", env = "VITRINE_DATA_DIR")]
        data_dir: Option<PathBuf>,
        /// The feed: a JSON array of products or an object with Products, Categories,
        /// Brands, Users.
        #[arg(value_name = "FEED.json", required_unless_present = "orders")]
        feed: Option<PathBuf>,
        /// An order history instead of a feed: CSV with the header
        /// OrderId,UserId,Email,DateTimeStamp,ProdCode,Quantity,UnityPrice,LinePrice.
        #[arg(long, value_name = "FILE.csv", conflicts_with = "feed")]
        orders: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("VITRINE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr);
    let json_logs = std::env::var("VITRINE_LOG_FORMAT").as_deref() == Ok("json");
    // An error that stops the command: one JSON log line under `VITRINE_LOG_FORMAT=json`
    // (so that a log shipper keeps it), else `error: …` on stderr.
    let fail = |error: &dyn std::fmt::Display, code: u8| {
        if json_logs {
            tracing::error!(exit_status = code, "{error}");
        } else {
            eprintln!("error: {error}");
        }
        ExitCode::from(code)
    };
    match std::env::var("VITRINE_LOG_FORMAT").as_deref() {
        // One JSON object per line: timestamp, level, target, message and the event's
        // fields (account, endpoint, token where they apply) at the top level.
        Ok("json") => logs.json().flatten_event(true).init(),
        Ok("text") | Err(_) => logs.init(),
        Ok(other) => {
            logs.init();
            tracing::warn!(
                value = other,
                "VITRINE_LOG_FORMAT is neither \"json\" nor \"text\"; logging as text"
            );
        }
    }
    match cli.command {
        Command::Import {
            config,
            account,
            data_dir,
            feed,
            orders,
        } => {
            let overrides = Overrides {
                listen: None,
                data_dir,
            };
            let config = match config::load_file(&config, &overrides) {
                Ok(config) => config,
                Err(error) => return fail(&error, 2),
            };
            let imported = match (feed, orders) {
                (_, Some(orders)) => import::run_orders(&config, &account, &orders),
                (Some(feed), None) => import::run(&config, &account, &feed),
                (None, None) => Err(anyhow::anyhow!("give a FEED.json or --orders FILE.csv")),
            };
            match imported {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => fail(&format!("{error:#}"), 1),
            }
        }
        Command::Health { url, timeout } => match health(&url, timeout) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => fail(&format!("{error:#}"), 1),
        },
        Command::CheckConfig { file } => match config::load_file(&file, &Overrides::default()) {
            Ok(_) => {
                println!("{}: ok", file.display());
                ExitCode::SUCCESS
            }
            Err(error) => fail(&error, 2),
        },
        Command::Reload { data_dir, timeout } => {
            match control::request(
                &data_dir,
                control::RELOAD,
                std::time::Duration::from_secs(timeout),
            ) {
                Ok(status) if status.ok => {
                    println!("{}", status.message);
                    ExitCode::SUCCESS
                }
                Ok(status) => {
                    eprintln!("{}", status.message);
                    ExitCode::FAILURE
                }
                Err(error) => fail(&error, 2),
            }
        }
        Command::Backup {
            data_dir,
            out,
            timeout,
        } => match backup(&data_dir, &out, std::time::Duration::from_secs(timeout)) {
            Ok(summary) => {
                println!("{summary}");
                ExitCode::SUCCESS
            }
            Err(error) => fail(&format!("{error:#}"), 1),
        },
        Command::Restore { backup, data_dir } => {
            match vitrine_ingest::backup::restore(&backup, &data_dir) {
                Ok(manifest) => {
                    println!(
                        "restored {} files into {}",
                        manifest.files.len(),
                        data_dir.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(error) => fail(&error, 1),
            }
        }
        Command::Serve {
            config,
            listen,
            data_dir,
        } => {
            let source = ConfigSource {
                path: config,
                overrides: Overrides { listen, data_dir },
            };
            let config = match source.load() {
                Ok(config) => config,
                Err(error) => return fail(&error, 2),
            };
            match run(config, source) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => fail(&format!("{error:#}"), 1),
            }
        }
    }
}

/// Backs up `data_dir` into `out`: a server running on it is first asked to write and
/// fsync every log record it acknowledged; without one, the directory is locked while
/// it is copied (so that no server starts on it meanwhile).
fn backup(
    data_dir: &std::path::Path,
    out: &std::path::Path,
    timeout: std::time::Duration,
) -> anyhow::Result<String> {
    let _lock = match vitrine_snapshots::datadir::holder(data_dir)
        .with_context(|| format!("reading the lock of {}", data_dir.display()))?
    {
        Some(_) => {
            let status = control::request(data_dir, control::FLUSH, timeout)?;
            anyhow::ensure!(status.ok, "{}", status.message);
            None
        }
        None => Some(
            vitrine_snapshots::DataDir::open(data_dir)
                .with_context(|| format!("locking {}", data_dir.display()))?,
        ),
    };
    let manifest = vitrine_ingest::backup::backup(data_dir, out)?;
    let bytes: u64 = manifest.files.iter().map(|f| f.bytes).sum();
    Ok(format!(
        "backed up {} files ({bytes} bytes) into {}",
        manifest.files.len(),
        out.display()
    ))
}

fn run(mut config: Config, source: ConfigSource) -> anyhow::Result<()> {
    // Every connection is a file: take the soft open-file limit up to the hard one.
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::info!(open_files = limit, "open-file limit"),
        Err(error) => tracing::warn!(%error, "the open-file limit could not be raised"),
    }
    // Decided before any thread starts: the runtime's workers serve, the log writer and
    // the ingest pool run where `cpu_layout` puts background work.
    let placement = threads::decide(config.cpu_layout);
    tracing::info!(
        layout = ?placement.layout,
        serving = ?placement.serving,
        background = ?placement.background,
        "CPU placement"
    );
    // The main thread runs the server's own future; rayon's global pool (parallel
    // steps not given the ingest pool: a state snapshot's restore, a backtest) is
    // background work.
    threads::place_current_thread(Role::Serving);
    if let Err(error) = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("rayon-{i}"))
        .start_handler(|_| threads::place_current_thread(Role::Background))
        .build_global()
    {
        tracing::warn!(%error, "rayon's global pool was started before its placement");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads::cpus_for(Role::Serving))
        .on_thread_start(|| threads::place_current_thread(Role::Serving))
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let listen = config.listen;
        tracing::info!(source = %config.source, data_dir = %config.data_dir.display(), "starting");
        let cluster = match &config.cluster {
            Some(cluster) => {
                let timeout = std::time::Duration::from_secs(cluster.join_timeout_secs);
                let joined = vitrine_cluster::Cluster::connect(
                    cluster.settings.clone(),
                    &config.data_dir,
                    timeout,
                )
                .await
                .context("joining the cluster")?;
                // A node opens only the accounts it serves; an account new to this
                // node starts from the cluster's newest snapshots, if there are any.
                config.accounts.retain(|a| joined.serves(&a.access_key));
                for account in &config.accounts {
                    let dir = vitrine_http::state::account_dir(&config.data_dir, &account.access_key);
                    joined
                        .restore(&account.access_key, &dir, timeout)
                        .await
                        .with_context(|| format!("restoring account {} from the cluster's snapshots", account.access_key))?;
                }
                Some((joined, timeout))
            }
            None => None,
        };
        let state = Arc::new(AppState::open(config).context("opening the data directory")?);
        // The user agent parser's patterns, built before the first request needs them.
        vitrine_http::api::serverside::prepare();
        if let Some((cluster, timeout)) = &cluster {
            for entry in state.accounts() {
                // Erasures travel between the nodes as hashes keyed by the account's
                // secret key, which every node has and the NATS servers do not.
                entry
                    .jobs
                    .set_cluster_erasure_key(entry.config.secret_key.as_bytes());
                let node: Arc<dyn vitrine_ingest::jobs::ReplicaNode> = entry.jobs.clone();
                let membership = cluster
                    .join(node, *timeout)
                    .await
                    .with_context(|| format!("joining the cluster for account {}", entry.config.access_key))?;
                tracing::info!(account = %entry.config.access_key, stream = %membership.stream, position = membership.position(), "serving as a cluster node");
                state.share_feeds(&entry);
            }
        }
        // The restored counts ranked before the first request.
        vitrine_http::server::models_round_now(&state).await;
        let tls = match &state.config().tls {
            Some(tls) => Some(vitrine_http::tls::acceptor(tls)?),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let feed_streams = match state.config().feeds.stream_listen {
            Some(stream_addr) => {
                let streams = tokio::net::TcpListener::bind(stream_addr)
                    .await
                    .with_context(|| format!("binding feeds.stream_listen {stream_addr}"))?;
                let bound = streams.local_addr().context("reading the bound address")?;
                let scheme = if state.config().tls.is_some() { "https" } else { "http" };
                tracing::info!("streamed feeds also listening on {scheme}://{bound}");
                Some(streams)
            }
            None => None,
        };
        let metrics = match state.config().metrics_listen {
            Some(metrics_addr) => {
                let metrics = tokio::net::TcpListener::bind(metrics_addr)
                    .await
                    .with_context(|| format!("binding metrics_listen {metrics_addr}"))?;
                let bound = metrics.local_addr().context("reading the bound address")?;
                tracing::info!("metrics listening on http://{bound}/metrics");
                Some(metrics)
            }
            None => None,
        };
        let sftp = match state.config().sftp.clone() {
            Some(sftp_config) => {
                let (sftp_listener, _, host_key) = vitrine_http::sftp::bind(&sftp_config).await?;
                Some(tokio::spawn(vitrine_http::sftp::serve(
                    sftp_listener,
                    Arc::clone(&state),
                    sftp_config,
                    host_key,
                )))
            }
            None => None,
        };
        let shutdown = shutdown_signal()?;
        let hangups = control::hangups().context("listening for SIGHUP")?;
        let demo = source.path.is_none();
        tokio::spawn(control::on_hangup(Arc::clone(&state), source, hangups));
        let flushes = control::flush_requests().context("listening for SIGUSR1")?;
        tokio::spawn(control::on_flush_request(Arc::clone(&state), flushes));
        {
            let mut stdout = std::io::stdout().lock();
            let config = state.config();
            writeln!(stdout, "{}", vitrine_http::ready_line(addr, &config))
                .context("writing the ready line")?;
            // The demo names its console with the token that opens it.
            if demo && let Some(line) = vitrine_http::console_line(addr, &config)
            {
                writeln!(stdout, "{line}").context("writing the console's address")?;
            }
            stdout.flush().context("writing the ready line")?;
        }
        // Under systemd with `Type=notify` (deploy/vitrine.service): ready now; a no-op
        // elsewhere.
        if let Err(error) = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]) {
            tracing::warn!(%error, "could not tell systemd the server is ready");
        }
        let listeners = vitrine_http::server::Listeners {
            main: listener,
            feed_streams,
            metrics,
            tls,
        };
        vitrine_http::server::serve(listeners, Arc::clone(&state), shutdown).await;
        let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
        if let Some(sftp) = sftp {
            // Uploads still open are abandoned, never applied.
            sftp.abort();
        }
        state.shutdown();
        tracing::info!("stopped");
        Ok(())
    })
}

/// `vitrine health`: a GET of `url` (`http://HOST:PORT/PATH`) that must answer 200.
fn health(url: &str, timeout: u64) -> anyhow::Result<()> {
    use std::io::Read;
    use std::net::ToSocketAddrs;
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("{url:?} is not an http:// URL"))?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let timeout = std::time::Duration::from_secs(timeout.max(1));
    let addr = authority
        .to_socket_addrs()
        .with_context(|| format!("resolving {authority}"))?
        .next()
        .with_context(|| format!("{authority} has no address"))?;
    let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("connecting to {authority}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream
        .take(64 * 1024)
        .read_to_end(&mut answer)
        .context("reading the answer")?;
    let status = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    anyhow::ensure!(
        status.split_whitespace().nth(1) == Some("200"),
        "{url} answered {status:?}"
    );
    Ok(())
}

/// Registers SIGINT and SIGTERM handlers now (so that a signal arriving right after the
/// ready line stops the server cleanly) and returns a future that completes on either.
#[cfg(unix)]
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => tracing::info!("SIGINT received; stopping"),
            _ = terminate.recv() => tracing::info!("SIGTERM received; stopping"),
        }
    })
}

/// Completes on Ctrl-C.
#[cfg(not(unix))]
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
