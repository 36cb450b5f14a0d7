//! The erasure scrub: an erased person removed from the account's stream, its shared
//! user records and its snapshot sets, once every node has read past the erasure.

use std::time::{Duration, Instant};

use async_nats::jetstream::{object_store, stream};
use futures_util::StreamExt;
use tokio::sync::oneshot;
use vitrine_ingest::jobs::{ReplicationError, Scrub};

use crate::SnapshotNow;
use crate::objects::{load_manifest, manifest_objects, object_names, read_object};
use crate::replay::{bounds, read_range};

/// How long a scrub waits for every node reading the stream to be past the erasure.
pub const SCRUB_WAIT: Duration = Duration::from_secs(60);
/// How long a scrub waits for the snapshot thread's set replacing those naming the
/// person.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(240);
/// The pause before a failed scrub is tried again, doubled after each failure up to
/// [`RETRY_MOST`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MOST: Duration = Duration::from_secs(60);

/// What a scrub needs of the account's stream and object store.
pub(crate) struct Storage {
    pub(crate) stream: stream::Stream,
    pub(crate) subject: String,
    pub(crate) objects: object_store::ObjectStore,
    pub(crate) snapshot_now: std::sync::mpsc::Sender<SnapshotNow>,
}

/// Scrubs the erased person from `storage` ([`scrub_storage`]), trying again after a
/// failure (the cluster not answering, a stream leader being elected: each logged as a
/// warning) until it succeeds, or the node stops (a thread the scrub needs stopped, or
/// the runtime ended). Each try starts over; one that deleted part of what it matched
/// leaves less for the next.
pub(crate) async fn scrub_until_done(storage: Storage, scrub: Scrub) {
    let name = storage.stream.cached_info().config.name.clone();
    let mut pause = RETRY_FIRST;
    for attempt in 1_u32.. {
        match scrub_storage(&storage, &scrub).await {
            Ok((messages, objects)) => {
                tracing::info!(stream = %name, messages, objects, attempt, "erased person scrubbed from the cluster's storage");
                return;
            }
            Err(error @ ReplicationError::Stopped(_)) => {
                tracing::error!(stream = %name, %error, attempt, "the erased person could not be scrubbed from the cluster's storage: the node is stopping");
                return;
            }
            Err(error) => {
                tracing::warn!(stream = %name, %error, attempt, retry_in = pause.as_secs_f64(), "the erased person is not scrubbed from the cluster's storage yet; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RETRY_MOST);
            }
        }
    }
}

/// Removes an erased person from the account's stream and object store (see
/// [`Replication::scrub`]): waits until every consumer of the stream (each node's
/// reader) has been handed the stream's current end (the erasure is before it), at most
/// [`SCRUB_WAIT`]; then reads the stream through that end and deletes every message the
/// scrub matches (JetStream overwrites a deleted message's bytes in its store), and
/// deletes every shared user-records object naming the person. Returns the messages
/// and objects deleted.
async fn scrub_storage(
    storage: &Storage,
    scrub: &Scrub,
) -> Result<(usize, usize), ReplicationError> {
    let Storage {
        stream,
        subject,
        objects,
        snapshot_now,
    } = storage;
    let mut stream = stream.clone();
    let (first, last) = bounds(&mut stream).await?;
    let started = Instant::now();
    let deadline = started + SCRUB_WAIT;
    loop {
        let mut consumers = stream.consumers();
        let mut behind = 0;
        while let Some(info) = consumers.next().await {
            let info = info.map_err(|e| ReplicationError::nats("scrubbing the stream", e))?;
            if info.delivered.stream_sequence < last && info.num_pending > 0 {
                behind += 1;
            }
        }
        if behind == 0 {
            tracing::info!(
                waited = started.elapsed().as_secs_f64(),
                "every node past the erasure; scrubbing the cluster's storage"
            );
            break;
        }
        if Instant::now() >= deadline {
            tracing::warn!(behind, "nodes still behind the erasure; scrubbing anyway");
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let mut matched = Vec::new();
    if last >= first && last > 0 {
        let read = read_range(
            &stream,
            subject,
            first.max(1),
            last,
            |sequence, kind, payload| {
                if kind.is_some_and(|kind| scrub.matches(kind, payload)) {
                    matched.push(sequence);
                }
            },
        );
        tokio::time::timeout(Duration::from_secs(600), read)
            .await
            .map_err(|_| ReplicationError::Timeout(Duration::from_secs(600)))??;
    }
    for sequence in &matched {
        stream
            .delete_message(*sequence)
            .await
            .map_err(|e| ReplicationError::nats(format!("deleting message {sequence}"), e))?;
    }

    let mut deleted_objects = 0;
    for name in object_names(objects, |name| name.ends_with("-users")).await? {
        if read_object(objects, &name)
            .await?
            .is_some_and(|bytes| scrub.names_in(&bytes))
        {
            objects
                .delete(&name)
                .await
                .map_err(|e| ReplicationError::nats("scrubbing the stream", e))?;
            deleted_objects += 1;
        }
    }
    // Snapshot sets naming the person: replaced by a new one from this node (which has
    // forgotten them), then deleted.
    let mut named_sets = Vec::new();
    for manifest in &manifest_objects(objects).await? {
        let Some(set) = load_manifest(objects, manifest).await? else {
            continue;
        };
        for file in &set.files {
            let object = format!("{}/{file}", set.prefix);
            if read_object(objects, &object)
                .await?
                .is_some_and(|bytes| scrub.names_in(&bytes) || set_names_visitor(&bytes, scrub))
            {
                named_sets.push((manifest.clone(), set));
                break;
            }
        }
    }
    if !named_sets.is_empty() {
        let (reply, replaced) = oneshot::channel();
        snapshot_now
            .send(reply)
            .map_err(|_| ReplicationError::Stopped("snapshot thread"))?;
        // The snapshot thread may be writing its periodic set first: bounded, so that a
        // stalled one is reported rather than waited on for ever.
        let new = tokio::time::timeout(SNAPSHOT_WAIT, replaced)
            .await
            .map_err(|_| ReplicationError::Timeout(SNAPSHOT_WAIT))?
            .map_err(|_| ReplicationError::Stopped("snapshot thread"))??;
        for (manifest, set) in named_sets {
            if manifest == new {
                continue;
            }
            for file in &set.files {
                let _ = objects.delete(format!("{}/{file}", set.prefix)).await;
                deleted_objects += 1;
            }
            let _ = objects.delete(&manifest).await;
            deleted_objects += 1;
        }
    }
    Ok((matched.len(), deleted_objects))
}

/// Whether a snapshot file holds one of the person's visitor ids.
pub(crate) fn set_names_visitor(bytes: &[u8], scrub: &Scrub) -> bool {
    scrub.visitor_ids.iter().any(|visitor| {
        let visitor = visitor.as_bytes();
        !visitor.is_empty() && bytes.windows(visitor.len()).any(|w| w == visitor)
    })
}
