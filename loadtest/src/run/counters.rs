//! Server counters over a phase, read from each server's `/metrics` (summed over its
//! accounts) before and after it: the log's window waits (answers that waited for an
//! fsync because the log writer was behind its `interval` window) and the zone cache's
//! hits and misses.

use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Bytes;

/// The counters read, by their names in `/metrics`.
const COUNTERS: [&str; 3] = [
    "vitrine_wal_window_waits_total",
    "vitrine_zone_cache_hits_total",
    "vitrine_zone_cache_misses_total",
];

/// The counters of every server of `authorities` so far, summed.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counters {
    /// [`COUNTERS`] in order; `None` when a server has no such counter (the bare
    /// baseline, or an older build) or cannot be read.
    values: [Option<f64>; 3],
}

impl Counters {
    pub(super) async fn read(authorities: &[String]) -> Counters {
        let mut values = [Some(0.0); 3];
        for authority in authorities {
            let read = read(authority).await;
            for (value, one) in values.iter_mut().zip(read) {
                *value = value.zip(one).map(|(a, b)| a + b);
            }
        }
        Counters { values }
    }

    /// The window waits per second from `self` to `after`, `seconds` apart.
    pub(super) fn window_waits_per_second(&self, after: &Counters, seconds: f64) -> Option<f64> {
        let waits = after.values[0]? - self.values[0]?;
        (seconds > 0.0).then(|| (waits / seconds * 10.0).round() / 10.0)
    }

    /// The zone cache's hits over hits and misses from `self` to `after`.
    pub(super) fn zone_cache_hit_ratio(&self, after: &Counters) -> Option<f64> {
        let hits = after.values[1]? - self.values[1]?;
        let misses = after.values[2]? - self.values[2]?;
        (hits + misses > 0.0).then(|| (hits / (hits + misses) * 1000.0).round() / 1000.0)
    }
}

/// Each of [`COUNTERS`] on one server, summed over its accounts.
async fn read(authority: &str) -> [Option<f64>; 3] {
    read_text(authority)
        .await
        .map_or([None; 3], |text| COUNTERS.map(|name| sum(&text, name)))
}

fn sum(text: &str, name: &str) -> Option<f64> {
    let mut found = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        let value: f64 = rest.rsplit(' ').next()?.parse().ok()?;
        *found.get_or_insert(0.0) += value;
    }
    found
}

async fn read_text(authority: &str) -> Option<String> {
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
    String::from_utf8(body.to_vec()).ok()
}
