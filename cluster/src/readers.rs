//! Where each node reading an account's stream is, so that the stream is trimmed behind
//! the nodes, not only behind the consumers that exist at that moment (a node between
//! two consumers, or joining and not reading yet, has none).
//!
//! Each data directory keeps a key in the account's key-value bucket,
//! `reader.<incarnation>`, holding the stream position its account includes: renewed
//! every [`RENEW`] while the node serves the account, and put at 0 by a joining node
//! before it picks the snapshot set it restores (so that no trim passes the set it
//! picks while it downloads it and opens the account). A key not renewed for
//! [`READER_TTL`] (its node stopped, or its directory was lost) no longer holds the
//! trim back, and is deleted; a node down for longer finds the stream trimmed past its
//! files and says so.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::kv;
use futures_util::StreamExt;
use vitrine_ingest::jobs::{Incarnation, ReplicaNode, ReplicationError};

/// How often a node renews its position.
pub(crate) const RENEW: Duration = Duration::from_secs(1);
/// A position not renewed for this long no longer holds a trim back (the same time as a
/// left-behind consumer takes to be removed).
pub(crate) const READER_TTL: Duration = Duration::from_secs(60);
/// The prefix of the readers' keys.
const PREFIX: &str = "reader.";

/// The key of a data directory's position.
fn key(incarnation: Incarnation) -> String {
    format!("{PREFIX}{incarnation:016x}")
}

/// Puts `position` as the position of the data directory `incarnation`.
pub(crate) async fn register(
    bucket: &kv::Store,
    incarnation: Incarnation,
    position: u64,
) -> Result<(), ReplicationError> {
    bucket
        .put(key(incarnation), position.to_string().into())
        .await
        .map(|_| ())
        .map_err(|e| ReplicationError::nats("registering this node's stream position", e))
}

/// Renews the position of `jobs` (whose data directory is `incarnation`) every
/// [`RENEW`], for as long as the process runs.
pub(crate) async fn renew(bucket: kv::Store, incarnation: Incarnation, jobs: Arc<dyn ReplicaNode>) {
    let mut every = tokio::time::interval(RENEW);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if let Err(error) = register(&bucket, incarnation, jobs.stream_position()).await {
            tracing::debug!(%error, "the stream position could not be renewed; trying again");
        }
    }
}

/// The lowest position among the readers renewed within [`READER_TTL`] (`None`: no
/// reader registered); readers not renewed for longer are deleted. `seen` keeps each
/// key's revision and since when it was seen, on this node's clock: a key is stale once
/// its revision has not changed for [`READER_TTL`] here, so that clocks of other
/// machines do not matter (a node that starts holding the trim sees every key as fresh
/// for its first [`READER_TTL`]).
pub(crate) async fn lowest(
    bucket: &kv::Store,
    seen: &Mutex<HashMap<String, (u64, Instant)>>,
) -> Result<Option<u64>, ReplicationError> {
    let failed = |e: &dyn std::fmt::Display| ReplicationError::nats("reading the readers", e);
    let mut keys = bucket.keys().await.map_err(|e| failed(&e))?;
    let mut names = Vec::new();
    while let Some(name) = keys.next().await {
        let name = name.map_err(|e| failed(&e))?;
        if name.starts_with(PREFIX) {
            names.push(name);
        }
    }
    let mut lowest: Option<u64> = None;
    for name in names {
        let Some(entry) = bucket.entry(name.clone()).await.map_err(|e| failed(&e))? else {
            continue;
        };
        if entry.operation != kv::Operation::Put {
            continue;
        }
        let stale = crate::claims::unchanged_for(seen, &name, entry.revision) >= READER_TTL;
        if stale {
            let _ = bucket.delete(&name).await;
            seen.lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
            continue;
        }
        let position = std::str::from_utf8(&entry.value)
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            // A value that does not read holds the whole stream.
            .unwrap_or(0);
        lowest = Some(lowest.map_or(position, |low| low.min(position)));
    }
    Ok(lowest)
}
