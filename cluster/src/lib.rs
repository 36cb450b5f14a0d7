//! Several Vitrine nodes serving the same accounts, on NATS JetStream.
//!
//! Each account's write-ahead log has a replicated twin: a JetStream stream
//! (`VITRINE_<access key in hex>`, subject `vitrine.<access key in hex>`, stored on
//! `replicas` NATS servers, RAFT-replicated by them). Every node serving the account
//! publishes to it what it takes (deltas, the events of its requests, erasures) and
//! reads it in order from where its own files end, applying what the other nodes
//! published ([`vitrine_ingest::jobs::AccountJobs::apply_replicated`]; the jobs decide
//! what is applied where, see `vitrine_ingest::jobs::replica`).
//!
//! A message carries its record as the payload and two headers: `Vitrine-Kind` (the
//! record's kind byte) and `Vitrine-Origin` (the publishing data directory's
//! incarnation, 16 hex digits).
//!
//! Publishes of one account go through one task, in order; a waited publish returns
//! once JetStream acknowledged it (stored on a quorum of the stream's replicas).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::{self, consumer, kv, object_store, stream};
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use vitrine_ingest::jobs::{
    AccountJobs, Claim, Incarnation, Lease, RecordKind, Replication, Scrub,
};

/// The header naming a message's record kind.
pub const KIND_HEADER: &str = "Vitrine-Kind";
/// The header naming a message's origin (the publishing data directory's incarnation).
pub const ORIGIN_HEADER: &str = "Vitrine-Origin";
/// The file in the data directory holding its incarnation.
pub const INCARNATION_FILE: &str = "cluster-incarnation";
/// Messages asked for per pull request.
const BATCH: usize = 512;
/// How long a pull request waits for messages before the next one.
const BATCH_WAIT: Duration = Duration::from_secs(5);
/// Heartbeats of a pull request: one missed for twice this long fails the read (the
/// server holding the consumer is gone).
const HEARTBEAT: Duration = Duration::from_secs(1);
/// A consumer left behind (its reader gone) is removed by NATS after this long.
const CONSUMER_IDLE: Duration = Duration::from_secs(60);
/// Wait before a failed step is tried again.
const RETRY: Duration = Duration::from_millis(250);
/// A job claimed by a node that stopped renewing it for this long is taken over.
pub const LEASE: Duration = Duration::from_secs(10);
/// How often a node renews the claims it holds.
const RENEW: Duration = Duration::from_secs(2);
/// The value of a finished job's claim.
const DONE: &[u8] = b"done";
/// Records waiting to be published per account at most; beyond it a request that does
/// not wait for its publish is refused (the cluster is unreachable or slow).
pub const PUBLISH_QUEUE: usize = 65_536;

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
    /// The data directory's incarnation could not be read or saved.
    #[error("the cluster incarnation file {path}: {reason}")]
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

impl Cluster {
    /// Connects to the NATS servers (waiting until one answers, up to `timeout`) and
    /// reads (or makes) the data directory's incarnation.
    pub async fn connect(
        settings: ClusterSettings,
        data_dir: &Path,
        timeout: Duration,
    ) -> Result<Cluster, ClusterError> {
        let incarnation = incarnation(data_dir)?;
        let failed = |reason: String| ClusterError::Connect {
            servers: settings.servers.clone(),
            reason,
        };
        let addresses = settings
            .servers
            .iter()
            .map(|url| url.parse::<async_nats::ServerAddr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(e.to_string()))?;
        let options = async_nats::ConnectOptions::new()
            .name(format!("vitrine-{}", settings.node))
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(5));
        let client = tokio::time::timeout(
            timeout,
            async_nats::connect_with_options(addresses, options),
        )
        .await
        .map_err(|_| failed(format!("no answer within {timeout:?}")))?
        .map_err(|e| failed(e.to_string()))?;
        let mut jetstream = jetstream::new(client);
        jetstream.set_timeout(Duration::from_secs(10));
        Ok(Cluster {
            settings,
            jetstream,
            incarnation,
        })
    }

    /// The settings the cluster was joined with.
    pub fn settings(&self) -> &ClusterSettings {
        &self.settings
    }

    /// Fills an account directory that has nothing of its own yet (see
    /// [`vitrine_ingest::jobs::is_fresh`]) from the newest snapshot set in the account's
    /// object store, so that the node reads only the stream after it. False when there
    /// is none (or the directory is not fresh).
    pub async fn restore(&self, access_key: &str, dir: &Path) -> Result<bool, ClusterError> {
        let (name, _) = names(access_key);
        if !vitrine_ingest::jobs::is_fresh(dir) {
            return Ok(false);
        }
        let failed = |reason: String| ClusterError::Stream {
            stream: name.clone(),
            reason,
        };
        let Ok(objects) = self.jetstream.get_object_store(name.as_str()).await else {
            return Ok(false);
        };
        // The newest set whose files are all there.
        let manifests = manifest_objects(&objects).await.map_err(failed)?;
        for name in manifests.iter().rev() {
            let Ok(Some(manifest)) = load_manifest(&objects, name).await else {
                continue;
            };
            let restored = async {
                for file in &manifest.files {
                    let path = dir.join(file);
                    if let Some(parent) = path.parent() {
                        tokio::fs::create_dir_all(parent)
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                    let object = format!("{}/{file}", manifest.prefix);
                    if !download_object(&objects, &object, &path).await? {
                        return Err(format!("the object {object} is gone"));
                    }
                }
                Ok::<_, String>(())
            };
            match restored.await {
                Ok(()) => {
                    tracing::info!(account = %access_key, snapshot = %name, catalogue = manifest.catalogue, state = manifest.state, "restored from the cluster's snapshot");
                    return Ok(true);
                }
                Err(error) => {
                    tracing::warn!(account = %access_key, snapshot = %name, %error, "a cluster snapshot could not be restored; trying an older one");
                    for file in &manifest.files {
                        let _ = tokio::fs::remove_file(dir.join(file)).await;
                    }
                }
            }
        }
        Ok(false)
    }

    /// Whether this node serves the account.
    pub fn serves(&self, access_key: &str) -> bool {
        self.settings.accounts.is_empty() || self.settings.accounts.iter().any(|a| a == access_key)
    }

    /// Makes `jobs` a node of the account's stream: creates the stream if it has none,
    /// routes the jobs' publishes to it, and starts reading it after the position the
    /// jobs' files include. Returns once the node has applied the stream up to where it
    /// was when this was called, less `ready_lag` records, its deltas in the catalogue
    /// (or `timeout` passed).
    pub async fn join(
        &self,
        jobs: Arc<AccountJobs>,
        timeout: Duration,
    ) -> Result<Membership, ClusterError> {
        let access_key = jobs.account().access_key().to_owned();
        let (name, subject) = names(&access_key);
        let failed = |reason: String| ClusterError::Stream {
            stream: name.clone(),
            reason,
        };
        let deadline = tokio::time::Instant::now() + timeout;
        // A cluster that is starting has no JetStream leader for a moment: retried.
        let (stream, first, last, claims, objects) = loop {
            let attempt = async {
                let mut stream = self
                    .jetstream
                    .get_or_create_stream(stream::Config {
                        name: name.clone(),
                        subjects: vec![subject.clone()],
                        num_replicas: self.settings.replicas,
                        storage: stream::StorageType::File,
                        ..stream::Config::default()
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                let (first, last) = bounds(&mut stream).await?;
                // The bucket's stream as the key-value API makes it (made here: the
                // client's own call first asks for account details that NATS 2.9 does
                // not give in the form it reads).
                self.jetstream
                    .get_or_create_stream(stream::Config {
                        name: format!("KV_{name}"),
                        subjects: vec![format!("$KV.{name}.>")],
                        max_messages_per_subject: 1,
                        storage: stream::StorageType::File,
                        num_replicas: self.settings.replicas,
                        allow_rollup: true,
                        deny_delete: true,
                        allow_direct: true,
                        discard: stream::DiscardPolicy::New,
                        ..stream::Config::default()
                    })
                    .await
                    .map_err(|e| format!("the job claims bucket: {e}"))?;
                let claims = self
                    .jetstream
                    .get_key_value(name.as_str())
                    .await
                    .map_err(|e| format!("the job claims bucket: {e}"))?;
                let objects = match self.jetstream.get_object_store(name.as_str()).await {
                    Ok(objects) => objects,
                    Err(_) => self
                        .jetstream
                        .create_object_store(object_store::Config {
                            bucket: name.clone(),
                            num_replicas: self.settings.replicas,
                            storage: stream::StorageType::File,
                            ..object_store::Config::default()
                        })
                        .await
                        .map_err(|e| format!("the object store: {e}"))?,
                };
                Ok::<_, String>((stream, first, last, claims, objects))
            };
            match attempt.await {
                Ok(found) => break found,
                Err(reason) if tokio::time::Instant::now() >= deadline => {
                    return Err(failed(reason));
                }
                Err(reason) => {
                    tracing::info!(stream = %name, %reason, "the stream is not available yet; retrying");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        };

        // Trimmed past this node's files: it cannot catch up from the stream.
        let start = jobs.stream_position() + 1;
        if first > 1 && start < first {
            return Err(failed(format!(
                "the stream was trimmed behind the cluster's snapshots: it starts at {first}, and this node's data directory ends at {}; start the node with an empty data directory (it then restores the newest snapshots)",
                start - 1
            )));
        }
        let (sender, receiver) = mpsc::channel(PUBLISH_QUEUE);
        tokio::spawn(publisher(
            self.jetstream.clone(),
            subject.clone(),
            self.incarnation,
            receiver,
        ));
        let (snapshot_now, snapshot_requests) = std::sync::mpsc::channel::<SnapshotNow>();
        let log = Arc::new(StreamLog {
            sender,
            runtime: tokio::runtime::Handle::current(),
            stream: stream.clone(),
            subject: subject.clone(),
            claims,
            objects,
            incarnation: self.incarnation,
            seen_claims: Mutex::new(HashMap::new()),
            snapshot_now,
        });
        if !jobs.replicate(Arc::clone(&log) as Arc<dyn Replication>, self.incarnation) {
            return Err(failed(
                "the account already belongs to a cluster".to_owned(),
            ));
        }

        let (applied_sender, applied_receiver) = std::sync::mpsc::sync_channel(1024);
        let applier_jobs = Arc::clone(&jobs);
        std::thread::Builder::new()
            .name(format!("replica-{access_key}"))
            .spawn(move || apply(&applier_jobs, &applied_receiver))
            .map_err(|e| failed(e.to_string()))?;
        tokio::spawn(read(stream, subject, start, applied_sender));

        let target = last.saturating_sub(self.settings.ready_lag);
        while !jobs.stream_caught_up(target) {
            if tokio::time::Instant::now() >= deadline {
                return Err(failed(format!(
                    "not caught up within {timeout:?}: at {} of {last}",
                    jobs.stream_position()
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tracing::info!(
            account = %access_key,
            stream = %name,
            from = start,
            to = jobs.stream_position(),
            "caught up with the cluster"
        );
        let snapshots_jobs = Arc::clone(&jobs);
        let interval = self.settings.snapshot_interval;
        std::thread::Builder::new()
            .name(format!("snapshots-{access_key}"))
            .spawn(move || snapshots(&snapshots_jobs, &log, interval, &snapshot_requests))
            .map_err(|e| failed(e.to_string()))?;
        Ok(Membership { stream: name, jobs })
    }
}

/// An account's membership of the cluster.
#[derive(Debug)]
pub struct Membership {
    /// The account's stream.
    pub stream: String,
    jobs: Arc<AccountJobs>,
}

impl Membership {
    /// The stream sequence the node has applied.
    pub fn position(&self) -> u64 {
        self.jobs.stream_position()
    }
}

/// A record on its way to the stream, with where to say it is stored.
#[derive(Debug)]
struct Outgoing {
    kind: RecordKind,
    payload: Vec<u8>,
    stored: Option<oneshot::Sender<Result<(), String>>>,
}

/// The jobs' side of an account's stream, its job claims and its shared objects.
struct StreamLog {
    sender: mpsc::Sender<Outgoing>,
    runtime: tokio::runtime::Handle,
    stream: stream::Stream,
    subject: String,
    claims: kv::Store,
    objects: object_store::ObjectStore,
    incarnation: Incarnation,
    /// Claims held by other nodes: the revision last seen, and since when.
    seen_claims: Mutex<HashMap<String, (u64, Instant)>>,
    /// Asks the account's snapshot thread for a snapshot set now (after an erasure).
    snapshot_now: std::sync::mpsc::Sender<SnapshotNow>,
}

/// A request for a snapshot set now, answered with its manifest's object name.
type SnapshotNow = oneshot::Sender<Result<String, String>>;

impl std::fmt::Debug for StreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamLog")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl Replication for StreamLog {
    fn publish(&self, kind: RecordKind, payload: Vec<u8>, wait: bool) -> Result<(), String> {
        if !wait {
            return self
                .sender
                .try_send(Outgoing {
                    kind,
                    payload,
                    stored: None,
                })
                .map_err(|e| format!("the publish queue is {e}"));
        }
        let (stored, answer) = oneshot::channel();
        let outgoing = Outgoing {
            kind,
            payload,
            stored: Some(stored),
        };
        // Called off the async workers (the request waits for a quorum).
        let sender = self.sender.clone();
        self.runtime.block_on(async move {
            sender
                .send(outgoing)
                .await
                .map_err(|_| "the publisher stopped".to_owned())?;
            answer
                .await
                .map_err(|_| "the publisher stopped".to_owned())?
        })
    }

    fn claim(&self, job: u64) -> Result<Claim, String> {
        self.claim_key(format!("feed.{job}"))
    }

    fn put_object(&self, name: &str, path: &Path) -> Result<(), String> {
        self.block_on(Duration::from_secs(600), async {
            let mut file = tokio::fs::File::open(path)
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?;
            self.objects
                .put(name, &mut file)
                .await
                .map(|_| ())
                .map_err(|e| format!("storing the shared object {name}: {e}"))
        })
    }

    fn get_object(&self, name: &str, path: &Path) -> Result<bool, String> {
        self.block_on(
            Duration::from_secs(600),
            download_object(&self.objects, name, path),
        )
    }

    fn objects(&self) -> Result<Vec<String>, String> {
        self.block_on(
            Duration::from_secs(60),
            object_names(&self.objects, |_| true),
        )
    }

    fn delete_object(&self, name: &str) -> Result<(), String> {
        self.block_on(Duration::from_secs(60), async {
            match self.objects.delete(name).await {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == object_store::DeleteErrorKind::NotFound => Ok(()),
                Err(error) => Err(format!("deleting the shared object {name}: {error}")),
            }
        })
    }

    fn scrub(&self, scrub: Scrub) {
        let stream = self.stream.clone();
        let subject = self.subject.clone();
        let objects = self.objects.clone();
        let snapshot_now = self.snapshot_now.clone();
        self.runtime.spawn(async move {
            let name = stream.cached_info().config.name.clone();
            match scrub_storage(stream, subject, objects, snapshot_now, &scrub).await {
                Ok((messages, objects)) => tracing::info!(stream = %name, messages, objects, "erased person scrubbed from the cluster's storage"),
                Err(error) => tracing::error!(stream = %name, %error, "the erased person could not be scrubbed from the cluster's storage"),
            }
        });
    }

    fn deltas_between(&self, after: u64, before: u64) -> Result<Vec<Vec<u8>>, String> {
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
    /// Runs `work` on the runtime from a thread outside it (the applier, the feed
    /// runner), within `limit`.
    fn block_on<T>(
        &self,
        limit: Duration,
        work: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        self.runtime.block_on(async {
            tokio::time::timeout(limit, work)
                .await
                .map_err(|_| format!("no answer from the cluster within {limit:?}"))?
        })
    }

    /// Claims `key` in the account's claims bucket for this node (see [`Claim`]).
    fn claim_key(&self, key: String) -> Result<Claim, String> {
        let mine = format!("{:016x}", self.incarnation);
        self.block_on(Duration::from_secs(30), async {
            let entry = self
                .claims
                .entry(key.clone())
                .await
                .map_err(|e| e.to_string())?;
            let taken = match entry {
                Some(entry) if entry.operation == kv::Operation::Put => {
                    if entry.value.as_ref() == DONE {
                        return Ok(Claim::Done);
                    }
                    // Held by this data directory before a restart, or not renewed for
                    // a lease: taken over.
                    let lapsed = entry.value.as_ref() == mine.as_bytes() || {
                        let mut seen = self.seen_claims.lock().unwrap_or_else(|e| e.into_inner());
                        let since = seen
                            .entry(key.clone())
                            .and_modify(|(revision, since)| {
                                if *revision != entry.revision {
                                    *revision = entry.revision;
                                    *since = Instant::now();
                                }
                            })
                            .or_insert((entry.revision, Instant::now()))
                            .1;
                        since.elapsed() >= LEASE
                    };
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
    fn lease(&self, key: String, revision: u64) -> Box<dyn Lease> {
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
struct StreamLease {
    key: String,
    claims: kv::Store,
    runtime: tokio::runtime::Handle,
    stop: Option<oneshot::Sender<()>>,
}

impl Lease for StreamLease {
    fn done(mut self: Box<Self>) -> Result<(), String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let claims = self.claims.clone();
        let key = self.key.clone();
        self.runtime.block_on(async move {
            tokio::time::timeout(Duration::from_secs(30), claims.put(&key, DONE.into()))
                .await
                .map_err(|_| "no answer from the cluster".to_owned())?
                .map(|_| ())
                .map_err(|e| e.to_string())
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

/// Publishes an account's records in order; each acknowledgement is awaited on its own
/// task, so that publishes are pipelined.
async fn publisher(
    jetstream: jetstream::Context,
    subject: String,
    incarnation: Incarnation,
    mut receiver: mpsc::Receiver<Outgoing>,
) {
    let origin = format!("{incarnation:016x}");
    while let Some(outgoing) = receiver.recv().await {
        let mut headers = HeaderMap::new();
        headers.insert(KIND_HEADER, outgoing.kind.code().to_string().as_str());
        headers.insert(ORIGIN_HEADER, origin.as_str());
        let sent = jetstream
            .publish_with_headers(subject.clone(), headers, outgoing.payload.into())
            .await;
        let stored = outgoing.stored;
        match sent {
            Ok(ack) => {
                tokio::spawn(async move {
                    let result = ack.await.map(|_| ()).map_err(|e| e.to_string());
                    match stored {
                        Some(stored) => {
                            let _ = stored.send(result);
                        }
                        None => {
                            if let Err(error) = result {
                                tracing::warn!(%error, "an unwaited record was not stored by the cluster");
                            }
                        }
                    }
                });
            }
            Err(error) => match stored {
                Some(stored) => {
                    let _ = stored.send(Err(error.to_string()));
                }
                None => tracing::warn!(%error, "an unwaited record was not published"),
            },
        }
    }
}

/// Snapshot sets kept in an account's object store (the stream is trimmed behind the
/// older).
pub const SNAPSHOTS_KEPT: usize = 2;
/// The object naming a snapshot set's files and what they include.
const MANIFEST_PREFIX: &str = "snapshot-";

/// A snapshot set's manifest (an object of the account's object store).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Manifest {
    /// The stream sequence through which the catalogue includes every delta.
    catalogue: u64,
    /// The stream sequence through which the state includes every request.
    state: u64,
    /// The set's files, relative to an account directory; object `<prefix>/<file>`.
    files: Vec<String>,
    /// The prefix of the files' objects.
    prefix: String,
}

/// Every `interval`, if this node holds (or takes over) the account's snapshot claim:
/// writes the account's snapshot set, stores it in the object store, keeps the newest
/// [`SNAPSHOTS_KEPT`], and trims the stream behind the older of those (and behind
/// every reading node).
/// A request on `now` makes a set at once, claim or not (an erasure replaces the sets
/// that name the person).
fn snapshots(
    jobs: &AccountJobs,
    log: &StreamLog,
    interval: Duration,
    now: &std::sync::mpsc::Receiver<SnapshotNow>,
) {
    let account = jobs.account().access_key().to_owned();
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
fn store_snapshot(jobs: &AccountJobs, log: &StreamLog) -> Result<(Manifest, u64), String> {
    let dir = jobs.dir().join("cluster-snapshot");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
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
            serde_json::to_vec(&manifest).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
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
            .ok_or_else(|| format!("the snapshot manifest {name} is gone"))?,
        None => manifest.clone(),
    };
    let floor = oldest.catalogue.min(oldest.state);
    let trimmed = log.block_on(Duration::from_secs(60), trim(log.stream.clone(), floor))?;
    Ok((manifest, trimmed))
}

/// The object name of a set's manifest.
fn manifest_name(manifest: &Manifest) -> String {
    format!(
        "{MANIFEST_PREFIX}{}",
        manifest
            .prefix
            .strip_prefix("snap-")
            .unwrap_or(&manifest.prefix)
    )
}

/// A manifest from the object store (`None`: gone, or not a manifest).
async fn load_manifest(
    objects: &object_store::ObjectStore,
    name: &str,
) -> Result<Option<Manifest>, String> {
    Ok(read_object(objects, name)
        .await?
        .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
}

/// Deletes the stream's messages before `floor + 1` that every reading node has been
/// handed; the sequence the stream then starts at.
async fn trim(mut stream: stream::Stream, floor: u64) -> Result<u64, String> {
    let mut before = floor + 1;
    let mut consumers = stream.consumers();
    while let Some(info) = consumers.next().await {
        let info = info.map_err(|e| e.to_string())?;
        before = before.min(info.delivered.stream_sequence + 1);
    }
    let (first, _) = bounds(&mut stream).await?;
    if before > first {
        stream
            .purge()
            .sequence(before)
            .await
            .map_err(|e| format!("trimming the stream: {e}"))?;
        return Ok(before);
    }
    Ok(first)
}

/// How long a scrub waits for every node reading the stream to be past the erasure.
pub const SCRUB_WAIT: Duration = Duration::from_secs(60);

/// Removes an erased person from the account's stream and object store (see
/// [`Replication::scrub`]): waits until every consumer of the stream (each node's
/// reader) has been handed the stream's current end (the erasure is before it), at most
/// [`SCRUB_WAIT`]; then reads the stream through that end and deletes every message the
/// scrub matches (JetStream overwrites a deleted message's bytes in its store), and
/// deletes every shared user-records object naming the person. Returns the messages
/// and objects deleted.
async fn scrub_storage(
    mut stream: stream::Stream,
    subject: String,
    objects: object_store::ObjectStore,
    snapshot_now: std::sync::mpsc::Sender<SnapshotNow>,
    scrub: &Scrub,
) -> Result<(usize, usize), String> {
    let (first, last) = bounds(&mut stream).await?;
    let deadline = Instant::now() + SCRUB_WAIT;
    loop {
        let mut consumers = stream.consumers();
        let mut behind = 0;
        while let Some(info) = consumers.next().await {
            let info = info.map_err(|e| e.to_string())?;
            if info.delivered.stream_sequence < last && info.num_pending > 0 {
                behind += 1;
            }
        }
        if behind == 0 {
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
            &subject,
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
            .map_err(|_| "reading the stream took too long".to_owned())??;
    }
    for sequence in &matched {
        stream
            .delete_message(*sequence)
            .await
            .map_err(|e| format!("deleting message {sequence}: {e}"))?;
    }

    let mut deleted_objects = 0;
    for name in object_names(&objects, |name| name.ends_with("-users")).await? {
        if read_object(&objects, &name)
            .await?
            .is_some_and(|bytes| scrub.names_in(&bytes))
        {
            objects.delete(&name).await.map_err(|e| e.to_string())?;
            deleted_objects += 1;
        }
    }
    // Snapshot sets naming the person: replaced by a new one from this node (which has
    // forgotten them), then deleted.
    let mut named_sets = Vec::new();
    for manifest in &manifest_objects(&objects).await? {
        let Some(set) = load_manifest(&objects, manifest).await? else {
            continue;
        };
        for file in &set.files {
            let object = format!("{}/{file}", set.prefix);
            if read_object(&objects, &object)
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
            .map_err(|_| "the snapshot thread stopped".to_owned())?;
        let new = replaced
            .await
            .map_err(|_| "the snapshot thread stopped".to_owned())??;
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
fn set_names_visitor(bytes: &[u8], scrub: &Scrub) -> bool {
    scrub.visitor_ids.iter().any(|visitor| {
        let visitor = visitor.as_bytes();
        !visitor.is_empty() && bytes.windows(visitor.len()).any(|w| w == visitor)
    })
}

/// The snapshot manifests in an object store, oldest first.
async fn manifest_objects(objects: &object_store::ObjectStore) -> Result<Vec<String>, String> {
    let mut names = object_names(objects, |name| name.starts_with(MANIFEST_PREFIX)).await?;
    names.sort();
    Ok(names)
}

/// The names of an object store's objects that `wanted` accepts.
async fn object_names(
    objects: &object_store::ObjectStore,
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<String>, String> {
    let mut list = objects.list().await.map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    while let Some(info) = list.next().await {
        let info = info.map_err(|e| e.to_string())?;
        if !info.deleted && wanted(&info.name) {
            names.push(info.name);
        }
    }
    Ok(names)
}

/// Writes an object to `path` (fsynced); false when there is no such object.
async fn download_object(
    objects: &object_store::ObjectStore,
    name: &str,
    path: &Path,
) -> Result<bool, String> {
    let mut object = match objects.get(name).await {
        Ok(object) => object,
        Err(error) if error.kind() == object_store::GetErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(format!("reading the shared object {name}: {error}")),
    };
    let mut file = tokio::fs::File::create(path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    tokio::io::copy(&mut object, &mut file)
        .await
        .map_err(|e| format!("reading the shared object {name}: {e}"))?;
    file.sync_all()
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(true)
}

/// The first and last sequence a stream holds.
async fn bounds(stream: &mut stream::Stream) -> Result<(u64, u64), String> {
    let state = &stream.info().await.map_err(|e| e.to_string())?.state;
    Ok((state.first_sequence, state.last_sequence))
}

/// An object's bytes; `None` when it is gone.
async fn read_object(
    objects: &object_store::ObjectStore,
    name: &str,
) -> Result<Option<Vec<u8>>, String> {
    let mut object = match objects.get(name).await {
        Ok(object) => object,
        Err(error) if error.kind() == object_store::GetErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.to_string()),
    };
    let mut bytes = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut object, &mut bytes)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(bytes))
}

/// An ephemeral pull consumer of the account's subject from `start`, without
/// acknowledgements, removed by NATS when left behind.
fn reader_config(subject: &str, start: u64) -> consumer::pull::Config {
    consumer::pull::Config {
        deliver_policy: consumer::DeliverPolicy::ByStartSequence {
            start_sequence: start,
        },
        ack_policy: consumer::AckPolicy::None,
        filter_subject: subject.to_owned(),
        inactive_threshold: CONSUMER_IDLE,
        ..consumer::pull::Config::default()
    }
}

/// Reads the stream's messages `first` through `last` through an ephemeral consumer
/// (deleted afterwards), handing each one's sequence, kind and payload to `each`.
async fn read_range(
    stream: &stream::Stream,
    subject: &str,
    first: u64,
    last: u64,
    mut each: impl FnMut(u64, Option<RecordKind>, &[u8]),
) -> Result<(), String> {
    let consumer = stream
        .create_consumer(reader_config(subject, first))
        .await
        .map_err(|e| e.to_string())?;
    let name = consumer.cached_info().name.clone();
    let read = async {
        let mut messages = consumer
            .stream()
            .max_messages_per_batch(BATCH)
            .expires(BATCH_WAIT)
            .heartbeat(HEARTBEAT)
            .messages()
            .await
            .map_err(|e| e.to_string())?;
        while let Some(message) = messages.next().await {
            let message = message.map_err(|e| e.to_string())?;
            let sequence = message.info().map_err(|e| e.to_string())?.stream_sequence;
            if sequence > last {
                break;
            }
            let kind = message
                .headers
                .as_ref()
                .and_then(|h| h.get(KIND_HEADER))
                .and_then(|k| k.as_str().parse::<u8>().ok())
                .and_then(RecordKind::of_code);
            each(sequence, kind, &message.payload);
            if sequence >= last {
                break;
            }
        }
        Ok::<_, String>(())
    };
    let read = read.await;
    let _ = stream.delete_consumer(&name).await;
    read
}

/// A message read from the stream, for the applying thread.
#[derive(Debug)]
struct Incoming {
    sequence: u64,
    origin: Incarnation,
    kind: Option<RecordKind>,
    payload: Vec<u8>,
}

/// Reads the account's stream in order from `next` and hands each message to the
/// applying thread.
///
/// Through an ephemeral pull consumer (no acknowledgements) read with overlapping pull
/// requests that carry idle heartbeats: when the NATS server holding the consumer dies
/// (its heartbeats stop), or a message is missing (the consumer's sequence jumps), the
/// read fails within two seconds and a new consumer starts after the last message
/// handed over.
async fn read(
    stream: stream::Stream,
    subject: String,
    mut next: u64,
    applier: std::sync::mpsc::SyncSender<Incoming>,
) {
    let name = stream.cached_info().config.name.clone();
    loop {
        let created = stream.create_consumer(reader_config(&subject, next)).await;
        let consumer = match created {
            Ok(consumer) => consumer,
            Err(error) => {
                tracing::warn!(stream = %name, %error, "creating a consumer; retrying");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let mut expected = 1;
        let messages = consumer
            .stream()
            .max_messages_per_batch(BATCH)
            .expires(BATCH_WAIT)
            .heartbeat(HEARTBEAT)
            .messages()
            .await;
        match messages {
            Ok(mut messages) => {
                while let Some(message) = messages.next().await {
                    let message = match message {
                        Ok(message) => message,
                        Err(error) => {
                            tracing::warn!(stream = %name, %error, "reading the stream; a new consumer takes over");
                            break;
                        }
                    };
                    let Ok(info) = message.info() else { continue };
                    if info.consumer_sequence != expected || info.stream_sequence < next {
                        tracing::warn!(stream = %name, after = next - 1, "a message is missing; a new consumer takes over");
                        break;
                    }
                    expected += 1;
                    next = info.stream_sequence + 1;
                    let header = |name: &str| {
                        message
                            .headers
                            .as_ref()
                            .and_then(|h| h.get(name))
                            .map(|v| v.as_str().to_owned())
                    };
                    let incoming = Incoming {
                        sequence: info.stream_sequence,
                        origin: header(ORIGIN_HEADER)
                            .and_then(|o| u64::from_str_radix(&o, 16).ok())
                            .unwrap_or(0),
                        kind: header(KIND_HEADER)
                            .and_then(|k| k.parse::<u8>().ok())
                            .and_then(RecordKind::of_code),
                        payload: message.payload.to_vec(),
                    };
                    // Handed straight over while the applier keeps up; waited for off
                    // the async workers when its queue is full.
                    let handed = match applier.try_send(incoming) {
                        Ok(()) => true,
                        Err(std::sync::mpsc::TrySendError::Full(incoming)) => {
                            let applier = applier.clone();
                            matches!(
                                tokio::task::spawn_blocking(move || applier.send(incoming)).await,
                                Ok(Ok(()))
                            )
                        }
                        Err(std::sync::mpsc::TrySendError::Disconnected(_)) => false,
                    };
                    if !handed {
                        return;
                    }
                }
            }
            Err(error) => {
                tracing::warn!(stream = %name, %error, "reading the stream; a new consumer takes over");
            }
        }
        let _ = stream
            .delete_consumer(consumer.cached_info().name.as_str())
            .await;
        tokio::time::sleep(RETRY).await;
    }
}

/// Applies the messages of an account's stream, in order.
fn apply(jobs: &AccountJobs, receiver: &std::sync::mpsc::Receiver<Incoming>) {
    let account = jobs.account().access_key().to_owned();
    while let Ok(incoming) = receiver.recv() {
        let Some(kind) = incoming.kind else {
            tracing::warn!(%account, sequence = incoming.sequence, "a stream message without a known kind: skipped");
            continue;
        };
        if let Err(error) =
            jobs.apply_replicated(incoming.sequence, incoming.origin, kind, &incoming.payload)
        {
            tracing::error!(%account, sequence = incoming.sequence, %error, "a replicated record could not be applied; stopping replication of the account");
            return;
        }
    }
}

/// The data directory's incarnation: read from [`INCARNATION_FILE`], or made now (a new
/// or emptied data directory is a new incarnation: it applies its node's earlier
/// records again from the stream).
pub fn incarnation(data_dir: &Path) -> Result<Incarnation, ClusterError> {
    let path = data_dir.join(INCARNATION_FILE);
    let failed = |reason: String| ClusterError::Incarnation {
        path: path.display().to_string(),
        reason,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => u64::from_str_radix(text.trim(), 16)
            .map_err(|_| failed(format!("not 16 hex digits: {:?}", text.trim()))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let incarnation: u64 = rand::random::<u64>().max(1);
            std::fs::create_dir_all(data_dir).map_err(|e| failed(e.to_string()))?;
            let temp = path.with_extension("tmp");
            std::fs::write(&temp, format!("{incarnation:016x}\n"))
                .map_err(|e| failed(e.to_string()))?;
            std::fs::rename(&temp, &path).map_err(|e| failed(e.to_string()))?;
            Ok(incarnation)
        }
        Err(error) => Err(failed(error.to_string())),
    }
}
