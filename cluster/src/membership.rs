//! Joining: [`Cluster::connect`] to the NATS servers, [`Cluster::restore`] of a fresh
//! account directory from the newest snapshot set, and [`Cluster::join`], which opens
//! the account's stream, claims bucket and object store, routes the jobs' publishes to
//! them and starts the account's reader, applier and snapshot threads; the data
//! directory's incarnation.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, object_store, stream};
use vitrine_ingest::jobs::{Incarnation, ReplicaNode, Replication, ReplicationError};

use crate::SnapshotNow;
use crate::objects::{download_object, load_manifest, manifest_objects};
use crate::outbox::{ACK_TIMEOUT, Outbox};
use crate::publish::StreamLog;
use crate::replay::{apply, bounds, read};
use crate::snapshots::snapshots;
use crate::{Cluster, ClusterError, ClusterSettings, INCARNATION_FILE, OUTBOX, STARTS_FILE, names};

impl Cluster {
    /// Connects to the NATS servers (waiting until one answers, up to `timeout`) and
    /// reads (or makes) the data directory's incarnation.
    pub async fn connect(
        settings: ClusterSettings,
        data_dir: &Path,
        timeout: Duration,
    ) -> Result<Cluster, ClusterError> {
        let incarnation = incarnation(data_dir)?;
        let start = count_start(data_dir)?;
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
        let version = client.server_info().version;
        if !supported_version(&version) {
            return Err(failed(format!(
                "nats-server {version} is older than {MIN_NATS_TEXT}, which a Vitrine cluster requires (2.9 does not reliably come back from SIGKILL: its stream replicas can disagree); scripts/nats-server installs the tested version"
            )));
        }
        let mut jetstream = jetstream::new(client);
        jetstream.set_timeout(Duration::from_secs(10));
        Ok(Cluster {
            settings,
            jetstream,
            incarnation,
            start,
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
    ///
    /// Snapshot sets that exist but cannot be read (NATS servers still recovering after
    /// a restart) are tried again every second until `timeout`; then the error says
    /// so, with advice (unlike "none", which lets the node read the whole stream).
    pub async fn restore(
        &self,
        access_key: &str,
        dir: &Path,
        timeout: Duration,
    ) -> Result<bool, ClusterError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // An attempt that gets no answer (a listing or download stalled on a NATS
            // server still recovering) is given up and made again with new consumers.
            let written = Mutex::new(Vec::new());
            let attempt = tokio::time::timeout(
                RESTORE_ATTEMPT,
                self.restore_once(access_key, dir, &written),
            )
            .await
            .unwrap_or_else(|_| {
                // Given up: what it wrote goes, so that the directory is fresh again.
                for path in written.lock().map(|w| w.clone()).unwrap_or_default() {
                    let _ = std::fs::remove_file(path);
                }
                Err(unreadable(
                    &names(access_key).0,
                    &format!("no answer within {RESTORE_ATTEMPT:?}"),
                ))
            });
            match attempt {
                Err(error) if tokio::time::Instant::now() < deadline => {
                    tracing::warn!(account = %access_key, %error, "the cluster's snapshots could not be read; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                outcome => return outcome,
            }
        }
    }

    /// One attempt at [`Cluster::restore`]; the files it writes are noted in `written`.
    async fn restore_once(
        &self,
        access_key: &str,
        dir: &Path,
        written: &Mutex<Vec<std::path::PathBuf>>,
    ) -> Result<bool, ClusterError> {
        let (name, _) = names(access_key);
        if !vitrine_ingest::jobs::is_fresh(dir) {
            return Ok(false);
        }
        // "No snapshot sets" (a new account: the node starts from the whole stream) is
        // not "snapshot sets that cannot be read" (NATS servers still recovering, or
        // that lost their object store): the second is an error with its own advice.
        let unreadable = |what: String| unreadable(&name, &what);
        let objects = match self.jetstream.get_object_store(name.as_str()).await {
            Ok(objects) => objects,
            Err(error) if store_missing(&error) => return Ok(false),
            Err(error) => return Err(unreadable(error.to_string())),
        };
        // Registered at 0 before a set is picked: no trim passes the set this node
        // restores before it reads the stream (`readers.rs`).
        if let Ok(bucket) = self.jetstream.get_key_value(name.as_str()).await {
            crate::readers::register(&bucket, self.incarnation, 0)
                .await
                .map_err(|e| unreadable(e.to_string()))?;
        }
        // The newest set whose files are all there.
        let manifests = manifest_objects(&objects)
            .await
            .map_err(|e| unreadable(e.to_string()))?;
        let mut problems = Vec::new();
        for name in manifests.iter().rev() {
            let manifest = match load_manifest(&objects, name).await {
                Ok(Some(manifest)) => manifest,
                Ok(None) => continue,
                Err(error) => {
                    problems.push(format!("{name}: {error}"));
                    continue;
                }
            };
            let restored = async {
                for file in &manifest.files {
                    let path = dir.join(file);
                    if let Ok(mut written) = written.lock() {
                        written.push(path.clone());
                    }
                    if let Some(parent) = path.parent() {
                        tokio::fs::create_dir_all(parent)
                            .await
                            .map_err(|e| ReplicationError::file(parent, e))?;
                    }
                    let object = format!("{}/{file}", manifest.prefix);
                    if !download_object(&objects, &object, &path).await? {
                        return Err(ReplicationError::failed(object, "the object is gone"));
                    }
                }
                Ok::<_, ReplicationError>(())
            };
            match restored.await {
                Ok(()) => {
                    tracing::info!(account = %access_key, snapshot = %name, catalogue = manifest.catalogue, state = manifest.state, "restored from the cluster's snapshot");
                    return Ok(true);
                }
                Err(error) => {
                    tracing::warn!(account = %access_key, snapshot = %name, %error, "a cluster snapshot could not be restored; trying an older one");
                    problems.push(format!("{name}: {error}"));
                    for file in &manifest.files {
                        let _ = tokio::fs::remove_file(dir.join(file)).await;
                    }
                }
            }
        }
        if problems.is_empty() {
            // No snapshot set at all: a node of a new account reads the whole stream.
            Ok(false)
        } else {
            Err(unreadable(problems.join("; ")))
        }
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
        jobs: Arc<dyn ReplicaNode>,
        timeout: Duration,
    ) -> Result<Membership, ClusterError> {
        let access_key = jobs.access_key().to_owned();
        let (name, subject) = names(&access_key);
        let failed = |reason: String| ClusterError::Stream {
            stream: name.clone(),
            reason,
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let Opened {
            stream,
            first,
            last,
            claims,
            objects,
        } = self
            .open(&name, &subject, deadline)
            .await
            .map_err(|e| failed(e.to_string()))?;

        // Trimmed past this node's files: it cannot catch up from the stream.
        let start = jobs.stream_position() + 1;
        if first > 1 && start < first {
            let advice = if start <= 1 {
                // Nothing here, and restore found no snapshot set: the sets are gone.
                "this node's data directory is empty and the cluster holds no snapshot set to start from (the object store has none): a node can join only after a node that serves the account has published one; check that one runs, then start this node again".to_owned()
            } else {
                "start the node with an empty data directory (it then restores the newest snapshots)".to_owned()
            };
            return Err(failed(format!(
                "the stream was trimmed behind the cluster's snapshots: it starts at {first}, and this node's data directory ends at {}; {advice}",
                start - 1
            )));
        }
        let unstored = jobs.take_unstored();
        if !unstored.is_empty() {
            tracing::info!(account = %access_key, records = unstored.len(), "records taken before the restart and not known to be in the stream: published again (stored once)");
        }
        let (outbox, receiver) = Outbox::new(
            OUTBOX,
            self.start,
            unstored,
            jobs.dir().to_path_buf(),
            Some(jobs.local_log()),
        );
        let outbox = Arc::new(outbox);
        let mut publishing = self.jetstream.clone();
        publishing.set_timeout(ACK_TIMEOUT);
        let publisher = Arc::clone(&outbox);
        let (publish_subject, incarnation) = (subject.clone(), self.incarnation);
        tokio::spawn(async move {
            publisher
                .run(publishing, publish_subject, incarnation, receiver)
                .await;
        });
        // Where this node is in the stream, for the trims: renewed from now on.
        tokio::spawn(crate::readers::renew(
            claims.clone(),
            self.incarnation,
            Arc::clone(&jobs),
        ));
        let (snapshot_now, snapshot_requests) = std::sync::mpsc::channel::<SnapshotNow>();
        let log = Arc::new(StreamLog {
            outbox,
            runtime: tokio::runtime::Handle::current(),
            stream: stream.clone(),
            subject: subject.clone(),
            claims,
            objects,
            incarnation: self.incarnation,
            seen_claims: Mutex::new(HashMap::new()),
            seen_readers: Mutex::new(HashMap::new()),
            snapshot_now,
            scrubs: Arc::default(),
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
            .spawn(move || apply(applier_jobs.as_ref(), &applied_receiver))
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
            .spawn(move || snapshots(snapshots_jobs.as_ref(), &log, interval, &snapshot_requests))
            .map_err(|e| failed(e.to_string()))?;
        Ok(Membership { stream: name, jobs })
    }

    /// Opens (or makes) the account's stream `name` on `subject`, its claims bucket and
    /// its object store, trying again until `deadline` (a cluster that is starting has no
    /// JetStream leader for a moment); the last reason when it gives up.
    async fn open(
        &self,
        name: &str,
        subject: &str,
        deadline: tokio::time::Instant,
    ) -> Result<Opened, ReplicationError> {
        // A cluster that is starting has no JetStream leader for a moment: retried.
        loop {
            let attempt = async {
                let mut stream = self
                    .jetstream
                    .get_or_create_stream(stream::Config {
                        name: name.to_owned(),
                        subjects: vec![subject.to_owned()],
                        num_replicas: self.settings.replicas,
                        duplicate_window: self.settings.duplicate_window,
                        storage: stream::StorageType::File,
                        ..stream::Config::default()
                    })
                    .await
                    .map_err(|e| ReplicationError::nats("opening the stream", e))?;
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
                    .map_err(|e| ReplicationError::nats("the job claims bucket", e))?;
                let claims = self
                    .jetstream
                    .get_key_value(name)
                    .await
                    .map_err(|e| ReplicationError::nats("the job claims bucket", e))?;
                let objects = match self.jetstream.get_object_store(name).await {
                    Ok(objects) => objects,
                    Err(_) => self
                        .jetstream
                        .create_object_store(object_store::Config {
                            bucket: name.to_owned(),
                            num_replicas: self.settings.replicas,
                            storage: stream::StorageType::File,
                            ..object_store::Config::default()
                        })
                        .await
                        .map_err(|e| ReplicationError::nats("the object store", e))?,
                };
                Ok::<_, ReplicationError>(Opened {
                    stream,
                    first,
                    last,
                    claims,
                    objects,
                })
            };
            match attempt.await {
                Ok(found) => return Ok(found),
                Err(reason) if tokio::time::Instant::now() >= deadline => {
                    return Err(reason);
                }
                Err(reason) => {
                    tracing::info!(stream = %name, %reason, "the stream is not available yet; retrying");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
    }
}

/// What [`Cluster::open`] opens of an account.
struct Opened {
    stream: stream::Stream,
    first: u64,
    last: u64,
    claims: async_nats::jetstream::kv::Store,
    objects: object_store::ObjectStore,
}

/// An account's membership of the cluster.
#[derive(Debug)]
pub struct Membership {
    /// The account's stream.
    pub stream: String,
    jobs: Arc<dyn ReplicaNode>,
}

impl Membership {
    /// The stream sequence the node has applied.
    pub fn position(&self) -> u64 {
        self.jobs.stream_position()
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

/// The error for snapshot sets that exist but cannot be read (`what`: why), with the
/// advice that fits it.
fn unreadable(name: &str, what: &str) -> ClusterError {
    ClusterError::Stream {
        stream: name.to_owned(),
        reason: format!(
            "the cluster's snapshot sets for this account (object store {name}) could not be read: {what}. This node's data directory is empty and cannot start without them once the stream is trimmed. Check every NATS server (`/healthz?js-enabled-only=true`, and that the object store {name} is present with its replicas), then start this node again; do not delete anything"
        ),
    }
}

/// How long one attempt at restoring from the cluster's snapshot sets may take.
const RESTORE_ATTEMPT: Duration = Duration::from_secs(15);

/// The oldest nats-server a cluster runs on.
const MIN_NATS: (u32, u32) = (2, 10);
const MIN_NATS_TEXT: &str = "2.10";

/// Whether a nats-server's version (`2.12.8`, `v2.10.0-beta`) is at least [`MIN_NATS`];
/// a version that does not read is let through (the server says nothing useful).
fn supported_version(version: &str) -> bool {
    let mut parts = version.trim_start_matches('v').split(['.', '-']);
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    match (major, minor) {
        (Some(major), Some(minor)) => (major, minor) >= MIN_NATS,
        _ => true,
    }
}

/// Counts a start of the data directory in the cluster (the file [`STARTS_FILE`]) and
/// returns the count: the first part of the outbox ids of this start's records. Made
/// durable before it is used, so that no two starts number records alike (JetStream
/// would drop the later one as a repeat).
pub(crate) fn count_start(data_dir: &Path) -> Result<u32, ClusterError> {
    let path = data_dir.join(STARTS_FILE);
    let failed = |reason: String| ClusterError::Incarnation {
        path: path.display().to_string(),
        reason,
    };
    let previous = match std::fs::read_to_string(&path) {
        Ok(text) => text
            .trim()
            .parse::<u32>()
            .map_err(|_| failed(format!("not a count: {:?}", text.trim())))?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => 0,
        Err(error) => return Err(failed(error.to_string())),
    };
    let start = previous
        .checked_add(1)
        .ok_or_else(|| failed("the count is at its end".to_owned()))?;
    std::fs::create_dir_all(data_dir).map_err(|e| failed(e.to_string()))?;
    vitrine_snapshots::atomic::atomic_write(data_dir, STARTS_FILE, format!("{start}\n").as_bytes())
        .map_err(|e| failed(e.to_string()))?;
    Ok(start)
}

/// Whether an object store could not be had because it does not exist (JetStream's
/// "stream not found"), as opposed to a store that exists but cannot be read now.
fn store_missing(error: &async_nats::jetstream::context::ObjectStoreError) -> bool {
    use async_nats::jetstream::ErrorCode;
    use async_nats::jetstream::context::{GetStreamError, GetStreamErrorKind};
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<GetStreamError>())
        .is_some_and(|error| {
            matches!(error.kind(), GetStreamErrorKind::JetStream(e) if e.error_code() == ErrorCode::STREAM_NOT_FOUND)
        })
}

#[cfg(test)]
mod tests {
    use super::supported_version;

    #[test]
    fn nats_servers_before_2_10_are_refused() {
        assert!(supported_version("2.12.8"));
        assert!(supported_version("2.10.0"));
        assert!(supported_version("v2.11.0-RC.1"));
        assert!(supported_version("3.0.0"));
        assert!(!supported_version("2.9.10"));
        assert!(!supported_version("2.8.4"));
        assert!(supported_version("unknown"));
    }
}
