//! [`TestServer`]: the real `vitrine` binary, started on `127.0.0.1:0` in a temporary
//! directory (`data/` for its data, `server.log` for its stderr, `vitrine.toml` for its
//! configuration), and read up to its ready line `listening on http://ADDR` (or `https://`);
//! the lines it prints after that are kept ([`TestServer::stdout_lines`]).
//!
//! Used by the integration tests, the benches and the load harness alike; it never
//! panics, so a tool can report why a server did not start.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// How long a server may take to print its ready line (a debug build on a loaded
/// machine restoring a large data directory is slow).
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The prefix of the ready line.
const READY_PREFIXES: [&str; 2] = ["listening on http://", "listening on https://"];

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// A file of the server's directory could not be written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The process did not print its ready line.
    #[error("{binary} printed no ready line ({reason}); its log:\n{log}")]
    NotReady {
        /// The binary started.
        binary: PathBuf,
        /// What happened instead.
        reason: String,
        /// Its stderr so far.
        log: String,
    },
}

/// A running `vitrine serve`; killed (SIGKILL) when dropped.
#[derive(Debug)]
pub struct TestServer {
    process: Process,
    addr: SocketAddr,
    dir: tempfile::TempDir,
    /// The lines of its stdout after the ready line, so far.
    stdout: Arc<Mutex<Vec<String>>>,
}

/// A child process, killed (SIGKILL) and reaped when dropped.
#[derive(Debug)]
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl TestServer {
    /// Starts `binary` in a new temporary directory, with `config` (TOML) if given.
    pub fn start(binary: &Path, config: Option<&str>) -> Result<TestServer, SpawnError> {
        TestServer::start_in(binary, temp_dir("vitrine-test-")?, config)
    }

    /// Starts `binary` in `dir` (a directory from an earlier server, for a restart;
    /// its `data/` is kept), with `config` (TOML) if given.
    pub fn start_in(
        binary: &Path,
        dir: tempfile::TempDir,
        config: Option<&str>,
    ) -> Result<TestServer, SpawnError> {
        TestServer::start_in_with_env(binary, dir, config, &[])
    }

    /// [`TestServer::start_in`] with extra environment variables for the server (those
    /// of the test's own environment that change the server are removed first).
    pub fn start_in_with_env(
        binary: &Path,
        dir: tempfile::TempDir,
        config: Option<&str>,
        env: &[(&str, &str)],
    ) -> Result<TestServer, SpawnError> {
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| SpawnError::Io {
                action,
                path,
                source,
            }
        };
        let mut command = Command::new(binary);
        command.arg("serve").arg("--listen").arg("127.0.0.1:0");
        command.arg("--data-dir").arg(dir.path().join("data"));
        if let Some(text) = config {
            let path = dir.path().join("vitrine.toml");
            std::fs::write(&path, text).map_err(io("writing", &path))?;
            command.arg("--config").arg(path);
        }
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).map_err(io("creating", &log_path))?;
        let child = command
            .stdout(Stdio::piped())
            .stderr(log)
            .env_remove("VITRINE_LISTEN")
            .env_remove("VITRINE_DATA_DIR")
            .env_remove("VITRINE_CONFIG")
            .env_remove("VITRINE_LOG_FORMAT")
            .envs(env.iter().copied())
            .spawn()
            .map_err(io("starting", binary))?;
        let mut process = Process(child);
        let stdout = Arc::<Mutex<Vec<String>>>::default();
        match read_ready_line_into(&mut process.0, READY_TIMEOUT, Arc::clone(&stdout)) {
            Ok(addr) => Ok(TestServer {
                process,
                addr,
                dir,
                stdout,
            }),
            Err(reason) => {
                drop(process);
                Err(SpawnError::NotReady {
                    binary: binary.to_path_buf(),
                    reason: reason.to_string(),
                    log: std::fs::read_to_string(&log_path).unwrap_or_default(),
                })
            }
        }
    }

    /// The lines it printed on stdout after its ready line, so far.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's process.
    pub fn child(&mut self) -> &mut Child {
        &mut self.process.0
    }

    /// Its directory (holding `data/`, `server.log` and `vitrine.toml`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Its data directory.
    pub fn data_path(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Its stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// SIGKILLs the server and hands back its directory, for a restart with
    /// [`TestServer::start_in`].
    pub fn kill9(self) -> tempfile::TempDir {
        let TestServer { process, dir, .. } = self;
        drop(process);
        dir
    }
}

/// A new temporary directory whose name starts with `prefix`.
pub fn temp_dir(prefix: &str) -> Result<tempfile::TempDir, SpawnError> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|source| SpawnError::Io {
            action: "creating a temporary directory in",
            path: std::env::temp_dir(),
            source,
        })
}

/// Why no ready line was read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoReadyLine {
    /// The child's stdout is not a pipe.
    #[error("its stdout is not piped")]
    NotPiped,
    /// Nothing came within the time allowed (in seconds).
    #[error("nothing within {0} s")]
    Timeout(u64),
    /// Its first line was something else.
    #[error("its first line was {0:?}")]
    Other(String),
}

/// Reads `listening on http://ADDR` from the child's stdout within `timeout`.
pub fn read_ready_line(child: &mut Child, timeout: Duration) -> Result<SocketAddr, NoReadyLine> {
    read_ready_line_into(child, timeout, Arc::default())
}

/// [`read_ready_line`], then every later line of the child's stdout into `later`, until
/// it closes.
fn read_ready_line_into(
    child: &mut Child,
    timeout: Duration,
    later: Arc<Mutex<Vec<String>>>,
) -> Result<SocketAddr, NoReadyLine> {
    let Some(stdout) = child.stdout.take() else {
        return Err(NoReadyLine::NotPiped);
    };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(line);
        for line in reader.lines() {
            let Ok(line) = line else { break };
            later.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    });
    let line = rx
        .recv_timeout(timeout)
        .map_err(|_| NoReadyLine::Timeout(timeout.as_secs()))?;
    let line_text = line.trim();
    READY_PREFIXES
        .iter()
        .find_map(|prefix| line_text.strip_prefix(prefix))
        .and_then(|addr| addr.parse().ok())
        .ok_or(NoReadyLine::Other(line))
}
