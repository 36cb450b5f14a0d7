//! Publishing: the jobs' side of an account's stream ([`StreamLog`], the jobs'
//! [`Replication`]): records go through the account's outbox (`outbox.rs`), claims,
//! shared objects, the scrub and reads of a range.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{kv, object_store, stream};
use vitrine_ingest::jobs::{
    Claim, Handed, Incarnation, OutboxFigures, RecordKind, Replication, ReplicationError, Reserved,
    Scrub, Wait,
};

use crate::SnapshotNow;
use crate::objects::{download_object, object_names};
use crate::outbox::{ANSWER_WAIT, Outbox, STORED_WAIT};
use crate::replay::read_range;
use crate::scrub::{Storage, scrub_until_done};

/// The jobs' side of an account's stream, its job claims and its shared objects.
pub(crate) struct StreamLog {
    pub(crate) outbox: Arc<Outbox>,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) stream: stream::Stream,
    pub(crate) subject: String,
    pub(crate) claims: kv::Store,
    pub(crate) objects: object_store::ObjectStore,
    pub(crate) incarnation: Incarnation,
    /// Claims held by other nodes: the revision last seen, and since when.
    pub(crate) seen_claims: Mutex<HashMap<String, (u64, Instant)>>,
    /// The readers' positions: the revision last seen, and since when.
    pub(crate) seen_readers: Mutex<HashMap<String, (u64, Instant)>>,
    /// Asks the account's snapshot thread for a snapshot set now (after an erasure).
    pub(crate) snapshot_now: std::sync::mpsc::Sender<SnapshotNow>,
    /// Erasure scrubs started and not finished.
    pub(crate) scrubs: Arc<AtomicUsize>,
}

impl std::fmt::Debug for StreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamLog")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl Replication for StreamLog {
    fn publish(
        &self,
        kind: RecordKind,
        payload: Vec<u8>,
        wait: Wait,
    ) -> Result<(), ReplicationError> {
        let answer = self.outbox.push(kind, payload, wait)?;
        self.wait_for(answer, wait)
    }

    fn reserve(&self, logged_from: u64) -> Reserved {
        self.outbox.reserve(logged_from)
    }

    fn publish_reserved(
        &self,
        reserved: Reserved,
        handed: Handed,
        kind: RecordKind,
        payload: Vec<u8>,
        wait: Wait,
    ) -> Result<(), ReplicationError> {
        let answer = self
            .outbox
            .push_reserved(reserved, handed, kind, payload, wait)?;
        self.wait_for(answer, wait)
    }

    fn release(&self, reserved: Reserved) {
        self.outbox.release(reserved);
    }

    fn unstored_from(&self) -> Option<u64> {
        self.outbox.unstored_from()
    }

    fn admit(&self, wait: Wait) -> Result<(), ReplicationError> {
        self.outbox.admit(wait)
    }

    fn outbox(&self) -> OutboxFigures {
        self.outbox.figures()
    }

    fn claim(&self, job: u64) -> Result<Claim, ReplicationError> {
        self.claim_key(format!("feed.{job}"))
    }

    fn put_object(&self, name: &str, path: &Path) -> Result<(), ReplicationError> {
        self.block_on(Duration::from_secs(600), async {
            let mut file = tokio::fs::File::open(path)
                .await
                .map_err(|e| ReplicationError::file(path, e))?;
            self.objects
                .put(name, &mut file)
                .await
                .map(|_| ())
                .map_err(|e| ReplicationError::nats(format!("storing the shared object {name}"), e))
        })
    }

    fn get_object(&self, name: &str, path: &Path) -> Result<bool, ReplicationError> {
        self.block_on(
            Duration::from_secs(600),
            download_object(&self.objects, name, path),
        )
    }

    fn objects(&self) -> Result<Vec<String>, ReplicationError> {
        self.block_on(
            Duration::from_secs(60),
            object_names(&self.objects, |_| true),
        )
    }

    fn delete_object(&self, name: &str) -> Result<(), ReplicationError> {
        self.block_on(Duration::from_secs(60), async {
            match self.objects.delete(name).await {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == object_store::DeleteErrorKind::NotFound => Ok(()),
                Err(error) => Err(ReplicationError::nats(
                    format!("deleting the shared object {name}"),
                    error,
                )),
            }
        })
    }

    fn scrub(&self, scrub: Scrub) {
        let storage = Storage {
            stream: self.stream.clone(),
            subject: self.subject.clone(),
            objects: self.objects.clone(),
            snapshot_now: self.snapshot_now.clone(),
        };
        let pending = Pending::of(&self.scrubs);
        self.runtime.spawn(async move {
            let _pending = pending;
            scrub_until_done(storage, scrub).await;
        });
    }

    fn scrubs_pending(&self) -> usize {
        self.scrubs.load(Ordering::Acquire)
    }

    fn deltas_between(&self, after: u64, before: u64) -> Result<Vec<Vec<u8>>, ReplicationError> {
        if before <= after + 1 {
            return Ok(Vec::new());
        }
        self.block_on(Duration::from_secs(300), async {
            let mut deltas = Vec::new();
            read_range(
                &self.stream,
                &self.subject,
                after + 1,
                before - 1,
                |_, kind, payload| {
                    if kind == Some(RecordKind::Delta) {
                        deltas.push(payload.to_vec());
                    }
                },
            )
            .await?;
            Ok(deltas)
        })
    }
}

impl StreamLog {
    /// Waits for a published record as `wait` says (`answer`: its "stored").
    fn wait_for(
        &self,
        answer: Option<tokio::sync::oneshot::Receiver<()>>,
        wait: Wait,
    ) -> Result<(), ReplicationError> {
        let Some(answer) = answer else {
            return Ok(());
        };
        // Called off the async workers (a request, or background work).
        self.runtime.block_on(async move {
            let limit = if wait == Wait::Stored {
                STORED_WAIT
            } else {
                ANSWER_WAIT
            };
            match tokio::time::timeout(limit, answer).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(_)) => Err(ReplicationError::Stopped("publisher")),
                Err(_) => Err(ReplicationError::Unconfirmed(limit)),
            }
        })
    }

    /// Runs `work` on the runtime from a thread outside it (the applier, the feed
    /// runner), within `limit`.
    pub(crate) fn block_on<T>(
        &self,
        limit: Duration,
        work: impl std::future::Future<Output = Result<T, ReplicationError>>,
    ) -> Result<T, ReplicationError> {
        self.runtime.block_on(async {
            tokio::time::timeout(limit, work)
                .await
                .map_err(|_| ReplicationError::Timeout(limit))?
        })
    }
}

/// One scrub counted in a node's pending scrubs while it lives (its task ended, however
/// it ended, it is counted out).
struct Pending(Arc<AtomicUsize>);

impl Pending {
    fn of(count: &Arc<AtomicUsize>) -> Pending {
        count.fetch_add(1, Ordering::AcqRel);
        Pending(Arc::clone(count))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
