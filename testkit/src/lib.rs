//! `vitrine-testkit`: what the tests, benches and tools of the workspace share, so that
//! none of them keeps its own copy.
//!
//! - Builders of engine data (re-exported from `vitrine_engine::testing`): products,
//!   prices, zones, catalogues and accounts in a line each.
//! - [`records`]: the same products as feed and delta JSON records.
//! - [`config`]: server configuration files ([`ConfigToml`]) and the demo account's keys.
//! - [`browser`]: chromedriver and the capabilities of a headless Chromium.
//! - [`client`]: a blocking HTTP/1.1 client that tells a gone server from an answer.
//! - [`nats`]: [`nats::NatsCluster`], real clustered `nats-server` processes on loopback.
//! - [`pressure`]: CPU pressure a test creates and bounds itself, and starved threads.
//! - [`server`]: [`TestServer`], the real `vitrine` binary on `127.0.0.1:0` in a
//!   temporary directory, started and read up to its ready line. The load harness
//!   spawns its server with it too, so it returns errors rather than panicking.

#![forbid(unsafe_code)]

pub mod browser;
pub mod client;
pub mod config;
pub mod nats;
pub mod pressure;
pub mod records;
pub mod server;

pub use config::{
    AccountToml, CatalogueStart, ConfigToml, DEMO_KEY, DEMO_SECRET, ExperimentToml, ZoneToml,
};
pub use server::{SpawnError, TestServer};
pub use vitrine_engine::testing::*;
