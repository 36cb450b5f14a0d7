//! [`NatsCluster`]: real `nats-server` processes (the pinned one `scripts/nats-server`
//! installs, named by `$NATS_SERVER`) with JetStream, clustered on loopback ports, each
//! with its own storage directory: what Vitrine's cluster tests and the load harness
//! run Vitrine nodes against.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::{SpawnError, temp_dir};

/// Where `nats-server` is looked for besides the `PATH` (Debian installs it in
/// `/usr/sbin`, which an ordinary user's `PATH` may lack).
const NATS_SERVER_PATHS: [&str; 3] = [
    "/usr/sbin/nats-server",
    "/usr/bin/nats-server",
    "/usr/local/bin/nats-server",
];

/// How long a NATS server may take to answer its health check.
pub const NATS_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How many times [`NatsCluster::start`] picks new ports when a server finds one of
/// its ports taken: a port is free when picked and released before the server binds
/// it, and a process running beside the tests may take it in between.
const START_ATTEMPTS: usize = 5;

/// What a NATS server logs when it cannot go on (a port taken, a bad configuration).
const FATAL: &str = "[FTL]";

/// The `nats-server` binary: `$NATS_SERVER`, the `PATH`, then Debian's places.
pub fn nats_server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NATS_SERVER") {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("nats-server"))
            .find(|path| path.is_file())
    });
    on_path.or_else(|| {
        NATS_SERVER_PATHS
            .iter()
            .map(PathBuf::from)
            .find(|path| path.is_file())
    })
}

/// One NATS server of a [`NatsCluster`].
#[derive(Debug)]
struct Node {
    name: String,
    client: u16,
    route: u16,
    monitor: u16,
    store: PathBuf,
    config: PathBuf,
    log: PathBuf,
    process: Option<Child>,
}

/// NATS servers with JetStream, clustered on loopback; killed (SIGKILL) when dropped.
#[derive(Debug)]
pub struct NatsCluster {
    binary: PathBuf,
    nodes: Vec<Node>,
    dir: tempfile::TempDir,
}

/// The ports [`free_port`] picks from: below the kernel's ephemeral range (32768 and
/// up by default), so that no server or client binding port 0 beside the tests (the
/// Vitrine servers of other tests do) is handed one of them between the pick and the
/// NATS server's bind.
const PORTS: std::ops::Range<u32> = 20_000..32_000;

/// A free loopback port from [`PORTS`] (bound, read, released).
fn free_port() -> Result<u16, SpawnError> {
    static DRAWS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ (u64::from(std::process::id()) << 32);
    let mut last = None;
    for _ in 0..100 {
        // SplitMix64 over a per-process counter: a different port each draw.
        let draw = DRAWS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut z = seed.wrapping_add(draw.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let span = u64::from(PORTS.end - PORTS.start);
        let port = u16::try_from(u64::from(PORTS.start) + z % span).unwrap_or(20_000);
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(port),
            Err(error) => last = Some(error),
        }
    }
    Err(SpawnError::Io {
        action: "binding a port on",
        path: PathBuf::from("127.0.0.1"),
        source: last.unwrap_or_else(|| std::io::Error::other("no free port")),
    })
}

impl NatsCluster {
    /// Starts `size` clustered NATS servers (JetStream on, each storing under its own
    /// directory) and waits until each answers its health check; on fresh ports
    /// again when a server found one of its ports taken.
    pub fn start(size: usize) -> Result<NatsCluster, SpawnError> {
        let mut attempt = 1;
        loop {
            match Self::start_on_free_ports(size) {
                Err(SpawnError::NotReady { log, .. })
                    if attempt < START_ATTEMPTS && log.contains("address already in use") =>
                {
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    fn start_on_free_ports(size: usize) -> Result<NatsCluster, SpawnError> {
        let binary = nats_server_binary().ok_or_else(|| SpawnError::NotReady {
            binary: PathBuf::from("nats-server"),
            reason: "not installed (run scripts/nats-server and set NATS_SERVER to its path)"
                .to_owned(),
            log: String::new(),
        })?;
        let dir = temp_dir("vitrine-nats-")?;
        let mut nodes = Vec::with_capacity(size);
        for i in 0..size {
            let name = format!("n{}", i + 1);
            nodes.push(Node {
                store: dir.path().join(&name).join("jetstream"),
                config: dir.path().join(format!("{name}.conf")),
                log: dir.path().join(format!("{name}.log")),
                client: free_port()?,
                route: free_port()?,
                monitor: free_port()?,
                name,
                process: None,
            });
        }
        let routes: Vec<String> = nodes
            .iter()
            .map(|n| format!("nats-route://127.0.0.1:{}", n.route))
            .collect();
        // A name of its own (its first client port is its own while it runs): a route
        // to a port that another test's cluster took over (a killed server's, reused) is
        // refused, so two tests' clusters never merge.
        let cluster_name = format!("vitrine-test-{}", nodes.first().map_or(0, |n| n.client));
        for node in &nodes {
            let text = format!(
                "server_name: {name}\nlisten: 127.0.0.1:{client}\nhttp: 127.0.0.1:{monitor}\n\
                 jetstream {{\n  store_dir: {store:?}\n}}\n\
                 cluster {{\n  name: {cluster_name}\n  listen: 127.0.0.1:{route}\n  routes: [{routes}]\n}}\n",
                name = node.name,
                client = node.client,
                monitor = node.monitor,
                store = node.store.display().to_string(),
                route = node.route,
                routes = routes.join(", "),
            );
            std::fs::write(&node.config, text).map_err(|source| SpawnError::Io {
                action: "writing",
                path: node.config.clone(),
                source,
            })?;
        }
        let mut cluster = NatsCluster { binary, nodes, dir };
        for i in 0..size {
            cluster.spawn(i)?;
        }
        cluster.wait_all_healthy()?;
        Ok(cluster)
    }

    /// Waits until every server answers `/healthz` with 200; fails at once when any
    /// server logs a fatal error (a server that found its port taken stops, and the
    /// others then never elect a leader), with every server's log, so that
    /// [`NatsCluster::start`] sees which port was taken.
    fn wait_all_healthy(&self) -> Result<(), SpawnError> {
        let deadline = Instant::now() + NATS_READY_TIMEOUT;
        loop {
            let unhealthy = self
                .nodes
                .iter()
                .find(|node| !healthz(SocketAddr::from(([127, 0, 0, 1], node.monitor))));
            let Some(waiting) = unhealthy else {
                return Ok(());
            };
            let logs: Vec<(String, String)> = self
                .nodes
                .iter()
                .map(|node| {
                    let log = std::fs::read_to_string(&node.log).unwrap_or_default();
                    (node.name.clone(), log)
                })
                .collect();
            let stopped = logs.iter().find(|(_, log)| log.contains(FATAL));
            if stopped.is_some() || Instant::now() >= deadline {
                let reason = match stopped {
                    Some((name, _)) => format!("{name} stopped"),
                    None => format!("{} did not become healthy", waiting.name),
                };
                let log = logs
                    .iter()
                    .map(|(name, log)| format!("--- {name} ---\n{log}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(SpawnError::NotReady {
                    binary: self.binary.clone(),
                    reason,
                    log,
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn spawn(&mut self, i: usize) -> Result<(), SpawnError> {
        let binary = self.binary.clone();
        let Some(node) = self.nodes.get_mut(i) else {
            return Ok(());
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log)
            .map_err(|source| SpawnError::Io {
                action: "creating",
                path: node.log.clone(),
                source,
            })?;
        let child = Command::new(&binary)
            .arg("-c")
            .arg(&node.config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|source| SpawnError::Io {
                action: "starting",
                path: binary.clone(),
                source,
            })?;
        node.process = Some(child);
        Ok(())
    }

    /// Waits until server `i` answers `/healthz` with 200 (JetStream current); fails
    /// at once when the server logs a fatal error.
    pub fn wait_healthy(&self, i: usize) -> Result<(), SpawnError> {
        let Some(node) = self.nodes.get(i) else {
            return Ok(());
        };
        let deadline = Instant::now() + NATS_READY_TIMEOUT;
        let addr = SocketAddr::from(([127, 0, 0, 1], node.monitor));
        loop {
            if healthz(addr) {
                return Ok(());
            }
            let log = std::fs::read_to_string(&node.log).unwrap_or_default();
            let fatal = log.contains(FATAL);
            if fatal || Instant::now() >= deadline {
                let reason = if fatal {
                    "stopped"
                } else {
                    "did not become healthy"
                };
                return Err(SpawnError::NotReady {
                    binary: self.binary.clone(),
                    reason: format!("{} {reason}", node.name),
                    log,
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The client URLs of every server, for `[cluster] servers`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("nats://127.0.0.1:{}", n.client))
            .collect()
    }

    /// The storage directory of server `i`.
    pub fn store_dir(&self, i: usize) -> Option<&Path> {
        self.nodes.get(i).map(|n| n.store.as_path())
    }

    /// The directory holding every server's storage, configuration and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The index of the server leading the JetStream stream `stream`, as a running
    /// server's `/jsz` reports it (`None` while no server leads it, or none answers).
    pub fn stream_leader(&self, stream: &str) -> Option<usize> {
        let leader = self
            .nodes
            .iter()
            .filter(|node| node.process.is_some())
            .find_map(|node| {
                let addr = SocketAddr::from(([127, 0, 0, 1], node.monitor));
                let body = monitor_get(addr, "/jsz?accounts=true&streams=true")?;
                let jsz: serde_json::Value = serde_json::from_str(&body).ok()?;
                jsz.get("account_details")?
                    .as_array()?
                    .iter()
                    .filter_map(|account| account.get("stream_detail")?.as_array())
                    .flatten()
                    .find(|detail| detail.get("name").and_then(|n| n.as_str()) == Some(stream))
                    .and_then(|detail| detail.get("cluster")?.get("leader")?.as_str())
                    .map(str::to_owned)
            })?;
        self.nodes.iter().position(|node| node.name == leader)
    }

    /// Whether server `i` runs (started and not killed).
    pub fn is_running(&self, i: usize) -> bool {
        self.nodes.get(i).is_some_and(|node| node.process.is_some())
    }

    /// SIGKILLs server `i`.
    pub fn kill9(&mut self, i: usize) {
        if let Some(mut child) = self.nodes.get_mut(i).and_then(|n| n.process.take()) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts server `i` again (on the same ports and storage) and waits until it is
    /// healthy.
    pub fn restart(&mut self, i: usize) -> Result<(), SpawnError> {
        self.kill9(i);
        self.spawn(i)?;
        self.wait_healthy(i)
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill9(i);
        }
    }
}

/// Whether the monitoring endpoint at `addr` answers `GET /healthz` with 200.
fn healthz(addr: SocketAddr) -> bool {
    monitor_get(addr, "/healthz").is_some()
}

/// The body of a monitoring endpoint's answer to `GET path`, when it is a 200.
fn monitor_get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    if !(answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")) {
        return None;
    }
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_logged_a_fatal_error_ends_the_wait_with_its_log() {
        let dir = temp_dir("vitrine-nats-test-").unwrap();
        let log = dir.path().join("n1.log");
        std::fs::write(
            &log,
            "[1] [FTL] Error listening on port: 127.0.0.1:4222, \"listen tcp 127.0.0.1:4222: bind: address already in use\"\n",
        )
        .unwrap();
        let cluster = NatsCluster {
            binary: PathBuf::from("nats-server"),
            nodes: vec![Node {
                name: "n1".to_owned(),
                client: 0,
                route: 0,
                monitor: free_port().unwrap(),
                store: dir.path().join("store"),
                config: dir.path().join("n1.conf"),
                log,
                process: None,
            }],
            dir,
        };
        match cluster.wait_healthy(0) {
            Err(SpawnError::NotReady { reason, log, .. }) => {
                assert_eq!(reason, "n1 stopped");
                assert!(log.contains("address already in use"), "{log}");
            }
            other => panic!("expected NotReady, got {other:?}"),
        }
    }

    #[test]
    fn a_cluster_whose_other_server_stopped_ends_the_wait_with_every_log() {
        // n1 waits for a leader (its log has no fatal error); n2 found its port taken.
        let dir = temp_dir("vitrine-nats-test-").unwrap();
        let node = |name: &str, text: &str| {
            let log = dir.path().join(format!("{name}.log"));
            std::fs::write(&log, text).unwrap();
            Node {
                name: name.to_owned(),
                client: 0,
                route: 0,
                monitor: free_port().unwrap(),
                store: dir.path().join(name),
                config: dir.path().join(format!("{name}.conf")),
                log,
                process: None,
            }
        };
        let nodes = vec![
            node(
                "n1",
                "[1] [WRN] JetStream has not established contact with a meta leader\n",
            ),
            node(
                "n2",
                "[2] [FTL] Error listening on port: 127.0.0.1:4222, \"listen tcp 127.0.0.1:4222: bind: address already in use\"\n",
            ),
        ];
        let cluster = NatsCluster {
            binary: PathBuf::from("nats-server"),
            nodes,
            dir,
        };
        // "n2 stopped", not the timeout's "n1 did not become healthy": at once.
        match cluster.wait_all_healthy() {
            Err(SpawnError::NotReady { reason, log, .. }) => {
                assert_eq!(reason, "n2 stopped");
                assert!(
                    log.contains("--- n1 ---") && log.contains("meta leader"),
                    "{log}"
                );
                assert!(
                    log.contains("--- n2 ---") && log.contains("address already in use"),
                    "{log}"
                );
            }
            other => panic!("expected NotReady, got {other:?}"),
        }
    }
}
