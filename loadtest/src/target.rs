//! The server and account a command talks to ([`Target`]), and a connection to it.

use anyhow::Context;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;

/// The server and account a command talks to.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub(crate) struct Target {
    /// Base URL of the server, e.g. http://127.0.0.1:7480 (`run`: several nodes of a
    /// cluster, comma-separated; each visitor sticks to one).
    #[arg(long, default_value = "http://127.0.0.1:7480")]
    pub(crate) server: String,
    /// Access key of the account.
    #[arg(long, default_value = "demo-access-key")]
    pub(crate) access_key: String,
    /// Secret key of that account (never written to reports).
    #[arg(long, default_value = "demo-secret-key")]
    #[serde(skip_serializing)]
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
