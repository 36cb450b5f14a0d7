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

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use vitrine_ingest::jobs::{AccountJobs, Incarnation, RecordKind, Replication};

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

/// The names of an account's stream and subject.
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
        let (stream, last) = loop {
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
                let last = stream
                    .info()
                    .await
                    .map_err(|e| e.to_string())?
                    .state
                    .last_sequence;
                Ok::<_, String>((stream, last))
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

        let (sender, receiver) = mpsc::channel(PUBLISH_QUEUE);
        tokio::spawn(publisher(
            self.jetstream.clone(),
            subject.clone(),
            self.incarnation,
            receiver,
        ));
        let log = Arc::new(StreamLog {
            sender,
            runtime: tokio::runtime::Handle::current(),
        });
        if !jobs.replicate(log, self.incarnation) {
            return Err(failed(
                "the account already belongs to a cluster".to_owned(),
            ));
        }

        let start = jobs.stream_position() + 1;
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

/// The jobs' side of an account's stream.
#[derive(Debug)]
struct StreamLog {
    sender: mpsc::Sender<Outgoing>,
    runtime: tokio::runtime::Handle,
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
        let created = stream
            .create_consumer(consumer::pull::Config {
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: next,
                },
                ack_policy: consumer::AckPolicy::None,
                filter_subject: subject.clone(),
                inactive_threshold: CONSUMER_IDLE,
                ..consumer::pull::Config::default()
            })
            .await;
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
