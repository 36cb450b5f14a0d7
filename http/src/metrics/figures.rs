//! What `/metrics` reads of one account: its engine, jobs and log, and what the server
//! measures of it ([`AccountMetrics`]: rebuild durations, rate-limit refusals,
//! evictions by [`EvictionKind`]).

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus::Histogram;
use vitrine_engine::Account;
use vitrine_ingest::jobs::AccountJobs;
use vitrine_snapshots::metrics::{histogram, short_buckets};

use crate::config::RateLimit;
use crate::routes::Endpoint;

/// What `/metrics` reads of one account when scraped: its engine's and jobs' own
/// counters, and the figures the server keeps of it.
#[derive(Debug, Clone, Copy)]
pub struct AccountFigures<'a> {
    /// Its access key (the `account` label).
    pub key: &'a str,
    /// Its engine state.
    pub engine: &'a Account,
    /// Its jobs and log.
    pub jobs: &'a AccountJobs,
    /// Bytes of product text kept for its answers.
    pub text_cache_bytes: usize,
    /// What the server measures of it.
    pub metrics: &'a AccountMetrics,
    /// Its rate limits (an endpoint with one is listed even before a refusal).
    pub rate_limits: &'a [(Endpoint, RateLimit)],
}

/// Metrics an account's server-side parts keep (the engine, log and jobs keep theirs).
#[derive(Debug)]
pub struct AccountMetrics {
    /// Model rebuild rounds that rebuilt something, in seconds.
    pub model_rebuild_seconds: Histogram,
    /// Requests refused by a rate limit, by [`Endpoint::index`].
    pub(super) rate_limited: Vec<AtomicU64>,
    /// Entries evicted, by [`EvictionKind`].
    pub(super) evictions: [AtomicU64; EvictionKind::ALL.len()],
}

/// Why per-visitor state was evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictionKind {
    /// A visitor idle past `memory.visitor_retention_days`.
    VisitorIdle,
    /// A visitor beyond the account's `max_visitors`.
    VisitorCapacity,
    /// A visitor evicted because the process was over `memory.max_rss_mb`.
    VisitorMemory,
    /// A session beyond the bound.
    Session,
    /// An order id beyond `memory.max_order_ids`.
    OrderId,
}

impl EvictionKind {
    /// Every kind, in the order of the counters.
    pub const ALL: [EvictionKind; 5] = [
        EvictionKind::VisitorIdle,
        EvictionKind::VisitorCapacity,
        EvictionKind::VisitorMemory,
        EvictionKind::Session,
        EvictionKind::OrderId,
    ];

    /// The `reason` label.
    pub fn name(self) -> &'static str {
        match self {
            EvictionKind::VisitorIdle => "visitor_idle",
            EvictionKind::VisitorCapacity => "visitor_capacity",
            EvictionKind::VisitorMemory => "visitor_memory",
            EvictionKind::Session => "session",
            EvictionKind::OrderId => "order_id",
        }
    }
}

impl Default for AccountMetrics {
    fn default() -> AccountMetrics {
        AccountMetrics {
            model_rebuild_seconds: histogram(
                "vitrine_model_rebuild_duration_seconds",
                "How long a model rebuild round took.",
                short_buckets(),
            ),
            rate_limited: Endpoint::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
            evictions: Default::default(),
        }
    }
}

impl AccountMetrics {
    /// Counts what an eviction pass dropped; visitors beyond the bound count as
    /// `visitors` says (`VisitorMemory` when the pass was for the memory budget, else
    /// `VisitorCapacity`).
    pub fn evicted(&self, evicted: &vitrine_engine::Evicted, visitors: EvictionKind) {
        for (kind, count) in [
            (EvictionKind::VisitorIdle, evicted.idle_visitors),
            (visitors, evicted.visitors),
            (EvictionKind::Session, evicted.sessions),
            (EvictionKind::OrderId, evicted.order_ids),
        ] {
            if let Some(counter) = self.evictions.get(kind as usize) {
                counter.fetch_add(count as u64, Ordering::Relaxed);
            }
        }
    }

    /// Counts a request to `endpoint` refused by its rate limit.
    pub fn rate_limited(&self, endpoint: Endpoint) {
        if let Some(count) = self.rate_limited.get(endpoint.index()) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }
}
