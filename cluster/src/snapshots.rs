//! Snapshot sets for joining nodes: written by the node holding the account's snapshot
//! claim every `snapshot_interval` (or at once after an erasure), stored in the object
//! store, the newest [`SNAPSHOTS_KEPT`] kept and the stream trimmed behind the older,
//! and behind every reading node (its registered position and its consumer).

use std::time::{Duration, Instant};

use async_nats::jetstream::stream;
use futures_util::StreamExt;
use vitrine_ingest::jobs::{Claim, Lease, ReplicaNode, Replication, ReplicationError};

use crate::SnapshotNow;
use crate::objects::{MANIFEST_PREFIX, Manifest, load_manifest, manifest_name};
use crate::publish::StreamLog;
use crate::replay::bounds;

/// Snapshot sets kept in an account's object store (the stream is trimmed behind the
/// older).
pub const SNAPSHOTS_KEPT: usize = 2;

/// Every `interval`, if this node holds (or takes over) the account's snapshot claim:
/// writes the account's snapshot set, stores it in the object store, keeps the newest
/// [`SNAPSHOTS_KEPT`], and trims the stream behind the older of those (and behind
/// every reading node).
/// A request on `now` makes a set at once, claim or not (an erasure replaces the sets
/// that name the person).
pub(crate) fn snapshots(
    jobs: &dyn ReplicaNode,
    log: &StreamLog,
    interval: Duration,
    now: &std::sync::mpsc::Receiver<SnapshotNow>,
) {
    let account = jobs.access_key().to_owned();
    let mut held: Option<Box<dyn Lease>> = None;
    let mut next = Instant::now() + interval;
    loop {
        match now.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Ok(reply) => {
                let stored =
                    store_snapshot(jobs, log).map(|(manifest, _)| manifest_name(&manifest));
                let _ = reply.send(stored);
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        }
        next = Instant::now() + interval;
        // A claim held is renewed in the background; claimed again each time, so that
        // a node that lost it (or died) is taken over.
        drop(held.take());
        match log.claim_key("snapshots".to_owned()) {
            Ok(Claim::Ours(lease)) => held = Some(lease),
            Ok(Claim::Busy | Claim::Done) => continue,
            Err(error) => {
                tracing::warn!(%account, %error, "the snapshot claim could not be read");
                continue;
            }
        }
        let started = std::time::Instant::now();
        match store_snapshot(jobs, log) {
            Ok((manifest, trimmed)) => tracing::info!(
                %account,
                catalogue = manifest.catalogue,
                state = manifest.state,
                files = manifest.files.len(),
                trimmed_before = trimmed,
                seconds = started.elapsed().as_secs_f64(),
                "cluster snapshot stored"
            ),
            Err(error) => tracing::warn!(%account, %error, "the cluster snapshot failed"),
        }
    }
}

/// Writes, stores and prunes the account's snapshot sets and trims the stream; the
/// manifest stored and the sequence the stream now starts at.
pub(crate) fn store_snapshot(
    jobs: &dyn ReplicaNode,
    log: &StreamLog,
) -> Result<(Manifest, u64), ReplicationError> {
    let dir = jobs.dir().join("cluster-snapshot");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| ReplicationError::file(&dir, e))?;
    let written = jobs.cluster_snapshot(&dir);
    let stored = written.and_then(|set| {
        let prefix = format!("snap-{:020}-{:016x}", set.floors.state, log.incarnation);
        for file in &set.files {
            log.put_object(&format!("{prefix}/{file}"), &dir.join(file))?;
        }
        let manifest = Manifest {
            catalogue: set.floors.catalogue,
            state: set.floors.state,
            files: set.files,
            prefix: prefix.clone(),
        };
        let path = dir.join("manifest.json");
        std::fs::write(
            &path,
            serde_json::to_vec(&manifest)
                .map_err(|e| ReplicationError::failed("the manifest", e))?,
        )
        .map_err(|e| ReplicationError::file(&path, e))?;
        log.put_object(&manifest_name(&manifest), &path)?;
        Ok(manifest)
    });
    let _ = std::fs::remove_dir_all(&dir);
    let manifest = stored?;
    // The newest sets kept, the older ones deleted; the stream trimmed behind the
    // oldest kept.
    let names = log.objects()?;
    let mut manifests: Vec<&String> = names
        .iter()
        .filter(|name| name.starts_with(MANIFEST_PREFIX))
        .collect();
    manifests.sort();
    let keep_from = manifests.len().saturating_sub(SNAPSHOTS_KEPT);
    for old in manifests.iter().take(keep_from) {
        let prefix = format!("snap-{}/", old.strip_prefix(MANIFEST_PREFIX).unwrap_or(old));
        for name in names.iter().filter(|n| n.starts_with(&prefix)) {
            log.delete_object(name)?;
        }
        log.delete_object(old)?;
    }
    let oldest = match manifests.get(keep_from) {
        Some(name) => log
            .block_on(Duration::from_secs(60), load_manifest(&log.objects, name))?
            .ok_or_else(|| {
                ReplicationError::failed(name.as_str(), "the snapshot manifest is gone")
            })?,
        None => manifest.clone(),
    };
    let floor = oldest.catalogue.min(oldest.state);
    let readers = log.block_on(
        Duration::from_secs(60),
        crate::readers::lowest(&log.claims, &log.seen_readers),
    )?;
    let floor = readers.map_or(floor, |lowest| floor.min(lowest));
    let trimmed = log.block_on(Duration::from_secs(60), trim(log.stream.clone(), floor))?;
    Ok((manifest, trimmed))
}

/// Deletes the stream's messages before `floor + 1` (at most the lowest position a
/// reading node registered, `readers.rs`) that every consumer has been handed; the
/// sequence the stream then starts at.
pub(crate) async fn trim(mut stream: stream::Stream, floor: u64) -> Result<u64, ReplicationError> {
    let mut before = floor + 1;
    let mut consumers = stream.consumers();
    while let Some(info) = consumers.next().await {
        let info = info.map_err(|e| ReplicationError::nats("trimming the stream", e))?;
        before = before.min(info.delivered.stream_sequence + 1);
    }
    let (first, _) = bounds(&mut stream).await?;
    if before > first {
        stream
            .purge()
            .sequence(before)
            .await
            .map_err(|e| ReplicationError::nats("trimming the stream", e))?;
        return Ok(before);
    }
    Ok(first)
}
