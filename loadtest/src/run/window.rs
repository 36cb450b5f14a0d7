//! The log's window waits during a phase: how often an answer waited for an fsync
//! because the log writer was behind its `interval` window, read from each server's
//! `/metrics` (`vitrine_wal_window_waits_total`, summed over its accounts) before and
//! after the phase.

use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Bytes;

/// The counter's name in `/metrics`.
const COUNTER: &str = "vitrine_wal_window_waits_total";

/// The window waits counted so far by every server of `authorities`, summed; `None`
/// when a server has no such counter (the bare baseline) or cannot be read.
pub(super) async fn window_waits(authorities: &[String]) -> Option<f64> {
    let mut total = 0.0;
    for authority in authorities {
        total += read(authority).await?;
    }
    Some(total)
}

async fn read(authority: &str) -> Option<f64> {
    let mut sender = crate::connect(authority).await.ok()?;
    let request = Request::get("/metrics")
        .header("host", authority)
        .body(Full::new(Bytes::new()))
        .ok()?;
    let response = sender.send_request(request).await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = response.into_body().collect().await.ok()?.to_bytes();
    let text = std::str::from_utf8(&body).ok()?;
    let mut found = None;
    for line in text.lines().filter(|line| line.starts_with(COUNTER)) {
        let value: f64 = line.rsplit(' ').next()?.parse().ok()?;
        *found.get_or_insert(0.0) += value;
    }
    found
}
