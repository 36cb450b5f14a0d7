//! Several Vitrine nodes serving the same accounts, on NATS JetStream.
//!
//! Each account's write-ahead log has a replicated twin: a JetStream stream
//! (`VITRINE_<access key in hex>`, subject `vitrine.<access key in hex>`, stored on
//! `replicas` NATS servers, RAFT-replicated by them). Every node serving the account
//! publishes to it what it takes (deltas, the events of its requests, erasures) and
//! reads it in order from where its own files end, applying what the other nodes
//! published ([`vitrine_ingest::jobs::ReplicaNode::apply_replicated`]; the jobs decide
//! what is applied where, see `vitrine_ingest::jobs::replica`).
//!
//! A message carries its record as the payload and two headers: `Vitrine-Kind` (the
//! record's kind byte) and `Vitrine-Origin` (the publishing data directory's
//! incarnation, 16 hex digits).
//!
//! Publishes of one account go through its outbox (`outbox.rs`): one task publishes
//! them in order, pipelined, each with a message id (so a record published again is
//! stored once), and keeps every record JetStream has not acknowledged (stored on a
//! quorum of the stream's replicas), trying it again in order until it is stored.

//!
//! Files: `membership.rs` (connect, restore, join), `publish.rs` (the jobs'
//! [`vitrine_ingest::jobs::Replication`]), `outbox.rs` (records until stored), `claims.rs` (job claims
//! and leases), `objects.rs` (the object store), `snapshots.rs` (snapshot sets for
//! joining nodes), `readers.rs` (each node's stream position, which trims wait for), `scrub.rs` (the erasure scrub), `replay.rs` (reading and applying the stream). Errors below the
//! edge are [`vitrine_ingest::jobs::ReplicationError`]; [`ClusterError`] is what
//! joining reports to the server.

#![forbid(unsafe_code)]

use std::time::Duration;

use async_nats::jetstream;
use vitrine_ingest::jobs::Incarnation;

mod claims;
mod membership;
mod objects;
mod outbox;
mod publish;
mod readers;
mod replay;
mod scrub;
mod snapshots;

pub use membership::{Membership, incarnation};
pub use scrub::SCRUB_WAIT;
pub use snapshots::SNAPSHOTS_KEPT;

/// The header naming a message's record kind.
pub const KIND_HEADER: &str = "Vitrine-Kind";
/// The header naming a message's origin (the publishing data directory's incarnation).
pub const ORIGIN_HEADER: &str = "Vitrine-Origin";
/// The file in the data directory holding its incarnation.
pub const INCARNATION_FILE: &str = "cluster-incarnation";
/// The file in the data directory counting its starts in the cluster (outbox ids).
pub const STARTS_FILE: &str = "cluster-starts";
/// A job claimed by a node that stopped renewing it for this long is taken over.
pub const LEASE: Duration = Duration::from_secs(10);
/// Records not yet stored by the cluster per account at most (the outbox's bound);
/// at it, a write is refused before anything is applied (the cluster is unreachable or
/// slow).
pub const OUTBOX: usize = 65_536;

/// A request for a snapshot set now, answered with its manifest's object name.
type SnapshotNow =
    tokio::sync::oneshot::Sender<Result<String, vitrine_ingest::jobs::ReplicationError>>;

/// `[cluster]`: the NATS servers and this node's part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// The NATS servers' URLs (any of them; the client finds the rest).
    pub servers: Vec<String>,
    /// This node's id (names its connection; unique in the cluster).
    pub node: String,
    /// NATS servers each account's stream is stored on.
    pub replicas: usize,
    /// Access keys of the accounts this node serves; empty: all of them.
    pub accounts: Vec<String>,
    /// Records a starting node may be behind the stream when it prints its ready line.
    pub ready_lag: u64,
    /// How often the account's snapshots are stored in the object store (by one node)
    /// and the stream trimmed behind them.
    pub snapshot_interval: Duration,
    /// How long the stream remembers a message id, so that a record published again
    /// within it is stored once (set when the stream is made).
    pub duplicate_window: Duration,
}

/// Why the cluster could not be joined.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No NATS server answered.
    #[error("connecting to the NATS servers {servers:?}: {reason}")]
    Connect {
        /// The servers tried.
        servers: Vec<String>,
        /// The client's reason.
        reason: String,
    },
    /// A stream or consumer could not be made or read.
    #[error("the account's stream {stream}: {reason}")]
    Stream {
        /// The stream's name.
        stream: String,
        /// JetStream's reason.
        reason: String,
    },
    /// A cluster file of the data directory (its incarnation, its start count) could
    /// not be read or saved.
    #[error("the cluster file {path}: {reason}")]
    Incarnation {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// A connection to the cluster's NATS servers.
#[derive(Debug, Clone)]
pub struct Cluster {
    settings: ClusterSettings,
    jetstream: jetstream::Context,
    incarnation: Incarnation,
    /// This start's count ([`STARTS_FILE`]).
    start: u32,
}

/// Whether `url` reads as a NATS server's address (`nats://host:port`, `host:port`).
pub fn is_server_url(url: &str) -> bool {
    url.parse::<async_nats::ServerAddr>()
        .is_ok_and(|address| !address.host().is_empty())
}

/// The names of an account's stream (also its job claims' key-value bucket and its
/// object store bucket) and subject.
fn names(access_key: &str) -> (String, String) {
    let hex: String = access_key.bytes().map(|b| format!("{b:02x}")).collect();
    (format!("VITRINE_{hex}"), format!("vitrine.{hex}"))
}
