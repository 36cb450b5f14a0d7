//! Server counters over a phase, read from each server's `/metrics` (summed over its
//! accounts) before and after it: the log's window waits (answers that waited for an
//! fsync because the log writer was behind its `interval` window), its fsyncs and those
//! slower than [`SLOW_FSYNC`], and the zone cache's hits and misses.

use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Bytes;

/// The counters read, by their names in `/metrics`.
const COUNTERS: [&str; 4] = [
    "vitrine_wal_window_waits_total",
    "vitrine_zone_cache_hits_total",
    "vitrine_zone_cache_misses_total",
    "vitrine_wal_fsyncs_total",
];

/// The fsync histogram: its buckets give the fsyncs slower than [`SLOW_FSYNC`].
const FSYNC_HISTOGRAM: &str = "vitrine_wal_fsync_duration_seconds";

/// An fsync slower than the histogram's largest bound at or below this many seconds
/// (6.4 ms with its doubling buckets) takes most of the default 10 ms window by itself.
const SLOW_FSYNC: f64 = 0.008;

/// The counters of every server of `authorities` so far, summed.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counters {
    /// [`COUNTERS`] in order, then the slow fsyncs; `None` when a server has no such
    /// counter (the bare baseline, or an older build) or cannot be read.
    values: [Option<f64>; 5],
}

impl Counters {
    pub(super) async fn read(authorities: &[String]) -> Counters {
        let mut values = [Some(0.0); 5];
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

    /// The log's fsyncs per second, and those slower than [`SLOW_FSYNC`], from `self`
    /// to `after`, `seconds` apart.
    pub(super) fn fsyncs_per_second(&self, after: &Counters, seconds: f64) -> Option<(f64, f64)> {
        let rate = |i: usize| -> Option<f64> {
            let count = after.values[i]? - self.values[i]?;
            (seconds > 0.0).then(|| (count / seconds * 10.0).round() / 10.0)
        };
        Some((rate(3)?, rate(4)?))
    }

    /// The zone cache's hits over hits and misses from `self` to `after`.
    pub(super) fn zone_cache_hit_ratio(&self, after: &Counters) -> Option<f64> {
        let hits = after.values[1]? - self.values[1]?;
        let misses = after.values[2]? - self.values[2]?;
        (hits + misses > 0.0).then(|| (hits / (hits + misses) * 1000.0).round() / 1000.0)
    }
}

/// Each of [`COUNTERS`] on one server, summed over its accounts, then its slow fsyncs.
async fn read(authority: &str) -> [Option<f64>; 5] {
    let Some(text) = read_text(authority).await else {
        return [None; 5];
    };
    let [a, b, c, d] = COUNTERS.map(|name| sum(&text, name));
    [a, b, c, d, slow_fsyncs(&text)]
}

/// The fsyncs slower than [`SLOW_FSYNC`] (all of them, but those in the histogram's
/// largest bucket at or below it), summed over the accounts.
fn slow_fsyncs(text: &str) -> Option<f64> {
    let bucket = format!("{FSYNC_HISTOGRAM}_bucket{{");
    let buckets: Vec<(f64, f64)> = text
        .lines()
        .filter(|line| line.starts_with(&bucket))
        .filter_map(|line| {
            let le = line
                .split("le=\"")
                .nth(1)?
                .split('"')
                .next()?
                .parse()
                .ok()?;
            let value = line.rsplit(' ').next()?.parse().ok()?;
            Some((le, value))
        })
        .collect();
    let bound = buckets
        .iter()
        .map(|(le, _)| *le)
        .filter(|le| *le <= SLOW_FSYNC)
        .fold(None, |best: Option<f64>, le| {
            Some(best.map_or(le, |b| b.max(le)))
        })?;
    let fast: f64 = buckets
        .iter()
        .filter(|(le, _)| *le == bound)
        .map(|(_, value)| value)
        .sum();
    Some(sum(text, &format!("{FSYNC_HISTOGRAM}_count"))? - fast)
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
    let mut sender = crate::target::connect(authority).await.ok()?;
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

#[cfg(test)]
mod tests {
    use super::{slow_fsyncs, sum};

    #[test]
    fn slow_fsyncs_are_those_past_the_largest_bucket_at_or_below_the_bound() {
        let text = "\
vitrine_wal_fsync_duration_seconds_bucket{account=\"a\",le=\"0.0032\"} 90
vitrine_wal_fsync_duration_seconds_bucket{account=\"a\",le=\"0.0064\"} 97
vitrine_wal_fsync_duration_seconds_bucket{account=\"a\",le=\"0.0128\"} 99
vitrine_wal_fsync_duration_seconds_bucket{account=\"a\",le=\"+Inf\"} 100
vitrine_wal_fsync_duration_seconds_count{account=\"a\"} 100
vitrine_wal_fsync_duration_seconds_bucket{account=\"b\",le=\"0.0032\"} 10
vitrine_wal_fsync_duration_seconds_bucket{account=\"b\",le=\"0.0064\"} 10
vitrine_wal_fsync_duration_seconds_bucket{account=\"b\",le=\"0.0128\"} 12
vitrine_wal_fsync_duration_seconds_bucket{account=\"b\",le=\"+Inf\"} 12
vitrine_wal_fsync_duration_seconds_count{account=\"b\"} 12
vitrine_wal_fsyncs_total{account=\"a\"} 100
vitrine_wal_fsyncs_total{account=\"b\"} 12
";
        assert_eq!(slow_fsyncs(text), Some(5.0));
        assert_eq!(sum(text, "vitrine_wal_fsyncs_total"), Some(112.0));
        assert_eq!(slow_fsyncs("vitrine_wal_fsyncs_total 3\n"), None);
    }
}
