//! Job claims and their leases: a job (a feed build, the snapshot set) is done by the
//! node whose claim in the account's key-value bucket holds; a claim not renewed for
//! [`LEASE`] is taken over.

use std::time::{Duration, Instant};

use async_nats::jetstream::kv;
use tokio::sync::oneshot;
use vitrine_ingest::jobs::{Claim, Lease, ReplicationError};

use crate::LEASE;
use crate::publish::StreamLog;

/// How often a node renews the claims it holds.
const RENEW: Duration = Duration::from_secs(2);
/// The value of a finished job's claim.
pub(crate) const DONE: &[u8] = b"done";

impl StreamLog {
    /// Claims `key` in the account's claims bucket for this node (see [`Claim`]).
    pub(crate) fn claim_key(&self, key: String) -> Result<Claim, ReplicationError> {
        let mine = format!("{:016x}", self.incarnation);
        self.block_on(Duration::from_secs(30), async {
            let entry = self
                .claims
                .entry(key.clone())
                .await
                .map_err(|e| ReplicationError::nats("reading a job claim", e))?;
            let taken = match entry {
                Some(entry) if entry.operation == kv::Operation::Put => {
                    if entry.value.as_ref() == DONE {
                        return Ok(Claim::Done);
                    }
                    // Held by this data directory before a restart, or not renewed for
                    // a lease: taken over.
                    let lapsed = entry.value.as_ref() == mine.as_bytes()
                        || unchanged_for(&self.seen_claims, &key, entry.revision) >= LEASE;
                    if !lapsed {
                        return Ok(Claim::Busy);
                    }
                    self.claims
                        .update(&key, mine.clone().into(), entry.revision)
                        .await
                        .ok()
                }
                Some(entry) => self
                    .claims
                    .update(&key, mine.clone().into(), entry.revision)
                    .await
                    .ok(),
                None => self.claims.create(&key, mine.clone().into()).await.ok(),
            };
            Ok(match taken {
                Some(revision) => {
                    self.seen_claims
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&key);
                    Claim::Ours(self.lease(key.clone(), revision))
                }
                // Another node was first.
                None => Claim::Busy,
            })
        })
    }

    /// A claim this node now holds at `revision`: renewed until done or dropped.
    pub(crate) fn lease(&self, key: String, revision: u64) -> Box<dyn Lease> {
        let (stop, mut stopped) = oneshot::channel::<()>();
        let claims = self.claims.clone();
        let mine = format!("{:016x}", self.incarnation);
        let renewed_key = key.clone();
        self.runtime.spawn(async move {
            let mut revision = revision;
            loop {
                tokio::select! {
                    _ = &mut stopped => return,
                    () = tokio::time::sleep(RENEW) => {}
                }
                match claims
                    .update(&renewed_key, mine.clone().into(), revision)
                    .await
                {
                    Ok(next) => revision = next,
                    Err(error) => {
                        tracing::warn!(key = %renewed_key, %error, "a job claim could not be renewed");
                        if error.kind() == kv::UpdateErrorKind::WrongLastRevision {
                            return;
                        }
                    }
                }
            }
        });
        Box::new(StreamLease {
            key,
            claims: self.claims.clone(),
            runtime: self.runtime.clone(),
            stop: Some(stop),
        })
    }
}

/// A job claim held by this node.
pub(crate) struct StreamLease {
    key: String,
    claims: kv::Store,
    runtime: tokio::runtime::Handle,
    stop: Option<oneshot::Sender<()>>,
}

impl Lease for StreamLease {
    fn done(mut self: Box<Self>) -> Result<(), ReplicationError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let claims = self.claims.clone();
        let key = self.key.clone();
        self.runtime.block_on(async move {
            tokio::time::timeout(Duration::from_secs(30), claims.put(&key, DONE.into()))
                .await
                .map_err(|_| ReplicationError::Timeout(Duration::from_secs(30)))?
                .map(|_| ())
                .map_err(|e| ReplicationError::nats("marking a job claim done", e))
        })
    }
}

impl Drop for StreamLease {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// How long the key `key` of a bucket has kept `revision`, as this node has seen it
/// (noted in `seen`, on this node's clock: other machines' clocks do not matter; a key
/// seen first now has kept it for no time).
pub(crate) fn unchanged_for(
    seen: &std::sync::Mutex<std::collections::HashMap<String, (u64, Instant)>>,
    key: &str,
    revision: u64,
) -> Duration {
    let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    seen.entry(key.to_owned())
        .and_modify(|(kept, since)| {
            if *kept != revision {
                *kept = revision;
                *since = Instant::now();
            }
        })
        .or_insert((revision, Instant::now()))
        .1
        .elapsed()
}
