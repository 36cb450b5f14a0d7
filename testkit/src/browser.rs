//! A headless Chromium for the tests that run what a browser runs: `chromedriver`
//! (Debian `chromium-driver`, which `scripts/test` installs) on a free loopback port,
//! and the capabilities that start Debian's `chromium` headless on this machine.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::client;

/// Why no driver could be started.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The binary could not be started.
    #[error("starting chromedriver (Debian chromium-driver): {0}")]
    Start(std::io::Error),
    /// It did not answer in time.
    #[error("chromedriver did not answer within {0:?}")]
    NotReady(Duration),
}

/// chromedriver on a free loopback port, stopped when dropped.
#[derive(Debug)]
pub struct Driver {
    child: Child,
    /// Its WebDriver address, `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    /// Starts chromedriver and waits (up to a minute) until it answers.
    pub fn start() -> Result<Driver, DriverError> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(DriverError::Start)?
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(DriverError::Start)?;
        let driver = Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let limit = Duration::from_secs(60);
        let deadline = Instant::now() + limit;
        while client::request(addr, "GET", "/status", b"", &[]).is_none_or(|r| r.status != 200) {
            if Instant::now() >= deadline {
                return Err(DriverError::NotReady(limit));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(driver)
    }
}

/// The capabilities of a headless Debian Chromium with a window of `width` × `height`,
/// kept off the network (no background fetches, no component updates).
pub fn chromium(width: u32, height: u32) -> Map<String, Value> {
    let mut capabilities = Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({"binary": "/usr/bin/chromium", "args": [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--no-first-run",
            "--disable-sync", format!("--window-size={width},{height}")
        ]}),
    );
    capabilities
}
