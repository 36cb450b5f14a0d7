//! Reading the stream: the account's reader task (an ephemeral pull consumer, replaced
//! when its server dies or a message is missing), the applying thread, and bounded reads
//! of a range for the other modules.

use std::time::Duration;

use async_nats::jetstream::{consumer, stream};
use futures_util::StreamExt;
use vitrine_ingest::jobs::{Incarnation, RecordKind, ReplicaNode, ReplicationError};

use crate::{KIND_HEADER, ORIGIN_HEADER};

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
/// Consumers that may skip the same messages before a range read fails (a replica
/// catching up fills its hole within seconds; this is about ten seconds of new
/// consumers).
const SKIPS_BELIEVED: u32 = 40;
/// Consumers that may skip the same messages before the reader reads them from the
/// stream's leader (about a second of new consumers).
const FILL_AFTER: u32 = 4;

/// The first and last sequence a stream holds.
pub(crate) async fn bounds(stream: &mut stream::Stream) -> Result<(u64, u64), ReplicationError> {
    let state = &stream
        .info()
        .await
        .map_err(|e| ReplicationError::nats("reading the stream's bounds", e))?
        .state;
    Ok((state.first_sequence, state.last_sequence))
}

/// An ephemeral pull consumer of the account's subject from `start`, without
/// acknowledgements, removed by NATS when left behind.
pub(crate) fn reader_config(subject: &str, start: u64) -> consumer::pull::Config {
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

/// Reads the stream's messages `first` through `last` in order, handing each one's
/// sequence, kind and payload to `each`. Through ephemeral consumers (deleted
/// afterwards) checked as the reader checks its own: when a consumer passes over
/// messages (its server holds a replica still catching up), a new one starts after the
/// last message handed over; when the same messages are passed over by
/// [`SKIPS_BELIEVED`] consumers in a row the read fails rather than hand over a range
/// with a hole. Messages trimmed from the stream's front are gone: the read goes on
/// from its first message.
pub(crate) async fn read_range(
    stream: &stream::Stream,
    subject: &str,
    first: u64,
    last: u64,
    mut each: impl FnMut(u64, Option<RecordKind>, &[u8]),
) -> Result<(), ReplicationError> {
    let mut next = first;
    let mut skipped: Option<((u64, u64), u32)> = None;
    loop {
        match read_from(stream, subject, next..=last, &mut each).await? {
            Ranged::Done => return Ok(()),
            Ranged::Hole { next: at, seen } => {
                next = at;
                let hole = (at, seen - 1);
                let times = match skipped {
                    Some((was, times)) if was == hole => times + 1,
                    _ => 1,
                };
                skipped = Some((hole, times));
                let (first_held, _) = bounds(&mut stream.clone()).await?;
                if first_held > at {
                    // Trimmed: the stream holds nothing before its first message.
                    tracing::warn!(
                        from = at,
                        to = first_held - 1,
                        "a range read starts before the trimmed stream; reading from its first message"
                    );
                    next = first_held;
                    continue;
                }
                if times > SKIPS_BELIEVED {
                    return Err(ReplicationError::failed(
                        format!("the stream's messages {} to {}", hole.0, hole.1),
                        "never delivered by any consumer, though the stream should hold them",
                    ));
                }
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// How one consumer's read of a range ended.
enum Ranged {
    /// Every message of the range handed over.
    Done,
    /// The consumer passed over messages: `next` is the first not handed over, `seen`
    /// the one it delivered instead.
    Hole { next: u64, seen: u64 },
}

/// One consumer's read of `range` (see [`read_range`]).
async fn read_from(
    stream: &stream::Stream,
    subject: &str,
    range: std::ops::RangeInclusive<u64>,
    each: &mut impl FnMut(u64, Option<RecordKind>, &[u8]),
) -> Result<Ranged, ReplicationError> {
    let (first, last) = range.into_inner();
    let consumer = stream
        .create_consumer(reader_config(subject, first))
        .await
        .map_err(|e| ReplicationError::nats("reading the stream", e))?;
    let name = consumer.cached_info().name.clone();
    let read = async {
        let mut messages = consumer
            .stream()
            .max_messages_per_batch(BATCH)
            .expires(BATCH_WAIT)
            .heartbeat(HEARTBEAT)
            .messages()
            .await
            .map_err(|e| ReplicationError::nats("reading the stream", e))?;
        let (mut expected, mut next) = (1, first);
        while let Some(message) = messages.next().await {
            let message = message.map_err(|e| ReplicationError::nats("reading the stream", e))?;
            let info = message
                .info()
                .map_err(|e| ReplicationError::nats("reading the stream", e))?;
            let sequence = info.stream_sequence;
            match delivery(expected, next, info.consumer_sequence, sequence) {
                Delivery::InOrder => {}
                Delivery::Skipped => {
                    return Ok(Ranged::Hole {
                        next,
                        seen: sequence,
                    });
                }
                Delivery::Missing => {
                    return Err(ReplicationError::failed(
                        "reading the stream",
                        format!("a message after {} is missing", next - 1),
                    ));
                }
            }
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
            expected += 1;
            next = sequence + 1;
        }
        Ok::<_, ReplicationError>(Ranged::Done)
    };
    let read = read.await;
    let _ = stream.delete_consumer(&name).await;
    read
}

/// A message read from the stream, for the applying thread.
#[derive(Debug)]
pub(crate) struct Incoming {
    sequence: u64,
    origin: Incarnation,
    kind: Option<RecordKind>,
    payload: Vec<u8>,
}

impl Incoming {
    /// The message at `sequence` with these headers and payload (its origin and kind
    /// from [`ORIGIN_HEADER`] and [`KIND_HEADER`]).
    fn of(sequence: u64, headers: Option<&async_nats::HeaderMap>, payload: &[u8]) -> Incoming {
        let header = |name: &str| {
            headers
                .and_then(|h| h.get(name))
                .map(|v| v.as_str().to_owned())
        };
        Incoming {
            sequence,
            origin: header(ORIGIN_HEADER)
                .and_then(|o| u64::from_str_radix(&o, 16).ok())
                .unwrap_or(0),
            kind: header(KIND_HEADER)
                .and_then(|k| k.parse::<u8>().ok())
                .and_then(RecordKind::of_code),
            payload: payload.to_vec(),
        }
    }
}

/// Reads the account's stream in order from `next` and hands each message to the
/// applying thread.
///
/// Through an ephemeral pull consumer (no acknowledgements) read with overlapping pull
/// requests that carry idle heartbeats: when the NATS server holding the consumer dies
/// (its heartbeats stop), or a message is missing (the consumer's sequence jumps, or the
/// stream's does: a consumer on a replica still catching up after its server restarted
/// can pass over messages that replica does not hold yet), the read fails within two
/// seconds and a new consumer starts after the last message handed over.
pub(crate) async fn read(
    stream: stream::Stream,
    subject: String,
    mut next: u64,
    applier: std::sync::mpsc::SyncSender<Incoming>,
) {
    let name = stream.cached_info().config.name.clone();
    // The same messages found not delivered by consecutive consumers, and how often.
    let mut skipped: Option<((u64, u64), u32)> = None;
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
                    match delivery(expected, next, info.consumer_sequence, info.stream_sequence) {
                        Delivery::InOrder => {}
                        Delivery::Skipped => {
                            // The consumer's server may hold a replica still catching up
                            // (a NATS server restarted): its copy of the stream has a hole
                            // that the consumer's own numbering does not show. Read again,
                            // unless the stream no longer holds those messages at all.
                            let hole = (next, info.stream_sequence - 1);
                            let times = match skipped {
                                Some((seen, times)) if seen == hole => times + 1,
                                _ => 1,
                            };
                            skipped = Some((hole, times));
                            let mut stream = stream.clone();
                            match bounds(&mut stream).await {
                                Ok((first, _)) if first > next => {
                                    tracing::error!(stream = %name, from = next, to = first - 1, "the stream was trimmed past this node's position: these records are gone from it and are not applied here");
                                }
                                // A few consumers passed over them: the stream's leader,
                                // which holds every message stored, hands them over one
                                // by one (one it deleted, an erased person's, is gone).
                                _ if times > FILL_AFTER => {
                                    tracing::warn!(stream = %name, from = hole.0, to = hole.1, "messages passed over by consumers: read from the stream's leader");
                                    match fill(&stream, hole.0..=hole.1, &applier).await {
                                        Filled::Handed => {}
                                        Filled::Failed(error) => {
                                            tracing::warn!(stream = %name, %error, "reading from the stream's leader; a new consumer takes over");
                                            break;
                                        }
                                        Filled::Closed => return,
                                    }
                                }
                                _ => {
                                    tracing::warn!(stream = %name, from = hole.0, to = hole.1, "messages were not delivered; a new consumer takes over");
                                    break;
                                }
                            }
                        }
                        Delivery::Missing => {
                            tracing::warn!(stream = %name, after = next - 1, "a message is missing; a new consumer takes over");
                            break;
                        }
                    }
                    expected += 1;
                    next = info.stream_sequence + 1;
                    let incoming = Incoming::of(
                        info.stream_sequence,
                        message.headers.as_ref(),
                        &message.payload,
                    );
                    let handed = hand(&applier, incoming).await;
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

/// Hands a message over to the applying thread: straight while it keeps up, waited
/// for off the async workers when its queue is full. False when it is gone.
async fn hand(applier: &std::sync::mpsc::SyncSender<Incoming>, incoming: Incoming) -> bool {
    match applier.try_send(incoming) {
        Ok(()) => true,
        Err(std::sync::mpsc::TrySendError::Full(incoming)) => {
            let applier = applier.clone();
            matches!(
                tokio::task::spawn_blocking(move || applier.send(incoming)).await,
                Ok(Ok(()))
            )
        }
        Err(std::sync::mpsc::TrySendError::Disconnected(_)) => false,
    }
}

/// How reading a hole from the stream's leader ended.
enum Filled {
    /// Every message of the hole the stream holds was handed over.
    Handed,
    /// The leader did not answer: a new consumer takes over.
    Failed(String),
    /// The applying thread is gone.
    Closed,
}

/// Reads the messages of `range` from the stream's leader (a consumer passed over them)
/// and hands each over; one the stream no longer holds (deleted by a scrub) is gone.
async fn fill(
    stream: &stream::Stream,
    range: std::ops::RangeInclusive<u64>,
    applier: &std::sync::mpsc::SyncSender<Incoming>,
) -> Filled {
    let (from, to) = range.into_inner();
    use async_nats::jetstream::stream::RawMessageErrorKind;
    for sequence in from..=to {
        let message = match stream.get_raw_message(sequence).await {
            Ok(message) => message,
            Err(error) if error.kind() == RawMessageErrorKind::NoMessageFound => continue,
            Err(error) => return Filled::Failed(error.to_string()),
        };
        let incoming = Incoming::of(sequence, Some(&message.headers), &message.payload);
        if !hand(applier, incoming).await {
            return Filled::Closed;
        }
    }
    Filled::Handed
}

/// What a message read says of the messages before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The next one: the consumer's `expected` message, at the stream's `next`.
    InOrder,
    /// The consumer's next message, but past the stream's next: the messages between
    /// were not delivered. The account's stream holds one subject, so its sequences
    /// follow one another (only trims remove messages, from the front).
    Skipped,
    /// Not the consumer's next message, or one before the stream's next: one is missing
    /// or repeated.
    Missing,
}

/// Where a message numbered `consumer` by the consumer and `stream` by the stream stands
/// when the consumer's `expected` message and the stream's `next` are due.
pub(crate) fn delivery(expected: u64, next: u64, consumer: u64, stream: u64) -> Delivery {
    if consumer != expected || stream < next {
        Delivery::Missing
    } else if stream > next {
        Delivery::Skipped
    } else {
        Delivery::InOrder
    }
}

/// Applies the messages of an account's stream, in order.
pub(crate) fn apply(jobs: &dyn ReplicaNode, receiver: &std::sync::mpsc::Receiver<Incoming>) {
    let account = jobs.access_key().to_owned();
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

#[cfg(test)]
mod tests {
    use super::{Delivery, delivery};

    #[test]
    fn a_message_past_the_next_one_means_the_ones_between_were_not_delivered() {
        assert_eq!(delivery(1, 10, 1, 10), Delivery::InOrder);
        assert_eq!(delivery(5, 14, 5, 14), Delivery::InOrder);
        // The consumer's numbering follows on, the stream's jumps: a replica's hole.
        assert_eq!(delivery(5, 14, 5, 20), Delivery::Skipped);
        assert_eq!(delivery(1, 10, 1, 11), Delivery::Skipped);
        // The consumer's own numbering jumps, or the stream goes back.
        assert_eq!(delivery(5, 14, 6, 15), Delivery::Missing);
        assert_eq!(delivery(5, 14, 5, 13), Delivery::Missing);
    }
}
