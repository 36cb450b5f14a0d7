//! Percentiles of a latency histogram, in microseconds, as the reports print them.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Percentiles of one histogram, microseconds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Percentiles {
    pub(crate) p50: u64,
    pub(crate) p90: u64,
    pub(crate) p99: u64,
    #[serde(rename = "p99.9")]
    pub(crate) p99_9: u64,
    pub(crate) max: u64,
    pub(crate) mean: f64,
}

impl Percentiles {
    pub(crate) fn of(histogram: &Histogram<u64>) -> Option<Percentiles> {
        (!histogram.is_empty()).then(|| Percentiles {
            p50: histogram.value_at_quantile(0.50),
            p90: histogram.value_at_quantile(0.90),
            p99: histogram.value_at_quantile(0.99),
            p99_9: histogram.value_at_quantile(0.999),
            max: histogram.max(),
            mean: (histogram.mean() * 10.0).round() / 10.0,
        })
    }
}
