//! `vitrine-http`: the Vitrine server.
//!
//! This crate is the edge: it owns the wire (hyper 1.x, JSON, status codes), the
//! configuration and the command line, and converts everything into engine and ingest
//! types. The binary `vitrine` (`src/main.rs`) parses the command line and calls
//! [`server::serve`] with a bound listener and a shutdown future.
//!
//! Threads: a tokio multi-threaded runtime runs one task per connection. Handlers that
//! never wait on the disk (serverside under `events_fsync` `interval` or `never`,
//! status queries, health) run inline on the async worker (microseconds); those that
//! may fsync or parse a large body (deltas, feed submissions, erasures, serverside
//! under `always`) run on tokio's blocking pool (`api::may_fsync`). Each account's
//! delta worker and compactor, and the feed runner, are plain threads owned by
//! `vitrine-ingest` (see its `jobs` module for the table of threads and locks).
//!
//! Modules:
//! - [`config`]: TOML configuration, the embedded demo, environment overrides (the file
//!   schema, the server's sections, accounts, zones, experiments, cluster).
//! - [`routes`]: the routing table ([`routes::Endpoint`]).
//! - [`state`]: accounts, their engine state and job queues, the data directory.
//! - [`server`]: accept loop, routing, body limits, graceful shutdown, background tasks.
//! - [`auth`]: per-endpoint credential fields, constant-time secret check.
//! - [`error`]: the error enum, status codes, error bodies.
//! - [`api`]: one module per endpoint of the contract; `api::render` writes the
//!   serverside 200.
//! - [`admin`]: the dashboard and the admin API.
//! - [`metrics`]: `GET /metrics`, the Prometheus text format, from each account's figures.
//! - [`control`]: what `vitrine reload` (SIGHUP) and `vitrine backup` (SIGUSR1) ask a running server.
//! - [`clock`]: the wall clock.
//! - `respond`: a handler's answer or error as the HTTP response.
//! - [`sftp`]: the SFTP server the .NET SDK uploads its feeds to.
//! - [`tls`]: HTTPS on the listeners (rustls).
//! - [`tuned`]: the settings self-tuning chose, kept in `tuned-models.json`.

#![forbid(unsafe_code)]

pub mod admin;
pub mod api;
pub mod auth;
pub mod clock;
pub mod config;
pub mod control;
pub mod error;
pub mod metrics;
mod respond;
pub mod routes;
pub mod server;
pub mod sftp;
pub mod state;
pub mod tls;
pub mod tuned;

/// The line printed on stdout once the server is ready: `listening on http://ADDR`, or
/// `https://` when `[tls]` is set.
pub fn ready_line(addr: std::net::SocketAddr, config: &config::Config) -> String {
    format!("listening on {}://{addr}", scheme(config))
}

/// `https` when the server answers with TLS (`[tls]`), else `http`.
fn scheme(config: &config::Config) -> &'static str {
    if config.tls.is_some() {
        "https"
    } else {
        "http"
    }
}

/// The line the embedded demo prints after its ready line: the console's address with
/// the demo's token in the fragment (which a browser never sends to a server or a log),
/// `console: http://ADDR/admin/#token=TOKEN`; `None` when the configuration has no
/// demo token.
pub fn console_line(addr: std::net::SocketAddr, config: &config::Config) -> Option<String> {
    let scheme = scheme(config);
    let token = config
        .admin_tokens
        .iter()
        .find(|t| t.label == config::demo::TOKEN_LABEL)?;
    Some(format!(
        "console: {scheme}://{addr}/admin/#token={}",
        token.token
    ))
}
