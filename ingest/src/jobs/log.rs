//! The records of an account's write-ahead log: which kinds there are, and how each
//! is written and read. One log per account carries, in one order, the deltas, every
//! request's tracking events and the erasures (framing, checksums and segments are
//! `vitrine_snapshots::wal`'s; byte layouts in `snapshots/FORMAT.md`). The one codec of
//! the records, a cluster's [`RecordKind::Replicated`] wrapping included.

use std::sync::Arc;

use vitrine_engine::state::{Clicked, Served, Tracked};
use vitrine_fields::{Errors, Fields, KeyMatch};
use vitrine_snapshots::wal::{Encode, Payload, Record, WalError};

use crate::delta::{self, Delta};

/// A record's place in this node's outbox: the count of the data directory's starts in
/// the cluster when it was taken, and its number among that start's records. Ordered
/// as the outbox publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OutboxId {
    /// The start it was taken in.
    pub start: u32,
    /// Its number in that start, from 1.
    pub number: u64,
}

impl std::fmt::Display for OutboxId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.start, self.number)
    }
}

/// A record taken for the outbox and not known to be stored (read back from the local
/// log past the outbox mark when the account opens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unstored {
    /// Its outbox id.
    pub id: OutboxId,
    /// Its kind.
    pub kind: RecordKind,
    /// The record.
    pub payload: Vec<u8>,
}

/// Why a record could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// A delta record without the newline after its token.
    #[error("no token")]
    NoToken,
    /// A delta record whose token is not UTF-8.
    #[error("token is not UTF-8")]
    TokenNotUtf8,
    /// A delta record whose parts do not read as a delta (the reader's messages).
    #[error("{0}")]
    Delta(String),
    /// An rkyv archive could not be written.
    #[error("the {what} could not be archived: {reason}")]
    Archive {
        /// What was being archived.
        what: &'static str,
        /// rkyv's reason.
        reason: String,
    },
    /// An rkyv archive does not read as the record it should be.
    #[error("not a {what} record: {reason}")]
    NotA {
        /// The record expected.
        what: &'static str,
        /// rkyv's reason.
        reason: String,
    },
}

impl From<CodecError> for vitrine_snapshots::Error {
    fn from(error: CodecError) -> vitrine_snapshots::Error {
        vitrine_snapshots::Error::Wal(WalError::Unencodable(error.to_string()))
    }
}

/// What a log record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// A delta: its token, a newline, and its parts as JSON (no credentials).
    Delta,
    /// One request's tracking events: an rkyv archive of [`Tracked`] (imported orders;
    /// and requests logged before [`RecordKind::Served`]).
    Events,
    /// An erasure: the identifier given to `/api/user/forget` (the erasure's flush
    /// removes it from the log with everything before it).
    Forget,
    /// One request: its events, currency and what its zones showed, an rkyv archive of
    /// [`Served`].
    Served,
    /// A record applied from a cluster's replicated log: the replicated log's sequence
    /// (8 bytes, little endian), the record's kind byte and the record (see `replica`).
    Replicated,
    /// In a cluster's replicated log only: a full feed submitted to one node, for the
    /// cluster to build once (JSON, see `replica::feeds`).
    FeedSubmitted,
    /// In a cluster's replicated log only: a submitted feed's outcome, and where its
    /// catalogue is in the cluster's object store (JSON, see `replica::feeds`).
    FeedBuilt,
    /// A click on a product a zone showed, reported by the browser script: an rkyv
    /// archive of [`Clicked`].
    Click,
    /// In a cluster's replicated log only: an erasure, as the keyed hash of the
    /// identifier (32 bytes, [`crate::erasure::keyed_hash`] under the account's cluster
    /// erasure key): no personal data, so the erasure's scrub keeps it, and a node that
    /// reads the log after the scrub still erases the person. Each node logs the
    /// identifiers it finds for it as [`RecordKind::Forget`] records.
    ForgetHashed,
    /// A change of the account's campaigns: the new version of the whole campaign
    /// document with who made it, when, the part it changed and that part's version
    /// before (JSON, see `campaigns`).
    Campaigns,
    /// In a cluster, a record this node took and publishes through its outbox: the
    /// outbox id (the node's start count, 4 bytes, and the record's number in that
    /// start, 8 bytes, little endian), the record's kind byte and the record. A restart
    /// publishes again those past the outbox mark (see `replica`).
    Outboxed,
}

impl RecordKind {
    /// The kind byte on disk.
    pub fn code(self) -> u8 {
        match self {
            RecordKind::Delta => 1,
            RecordKind::Events => 2,
            RecordKind::Forget => 3,
            RecordKind::Served => 4,
            RecordKind::Replicated => 5,
            RecordKind::FeedSubmitted => 6,
            RecordKind::FeedBuilt => 7,
            RecordKind::Click => 8,
            RecordKind::Outboxed => 9,
            RecordKind::ForgetHashed => 10,
            RecordKind::Campaigns => 11,
        }
    }

    /// The kind of a kind byte; `None` for a byte no version wrote.
    pub fn of_code(code: u8) -> Option<RecordKind> {
        match code {
            1 => Some(RecordKind::Delta),
            2 => Some(RecordKind::Events),
            3 => Some(RecordKind::Forget),
            4 => Some(RecordKind::Served),
            5 => Some(RecordKind::Replicated),
            6 => Some(RecordKind::FeedSubmitted),
            7 => Some(RecordKind::FeedBuilt),
            8 => Some(RecordKind::Click),
            9 => Some(RecordKind::Outboxed),
            10 => Some(RecordKind::ForgetHashed),
            11 => Some(RecordKind::Campaigns),
            _ => None,
        }
    }
}

/// A log record, read for inspection (crash tools, diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub enum Logged {
    /// A delta and its token.
    Delta {
        /// Its token.
        token: String,
    },
    /// One request's events (or, without a visitor id, imported orders).
    Events(Box<Tracked>),
    /// An erasure.
    Forget,
    /// Something else: a gap record, or a record that does not read.
    Other,
}

/// Reads a record of the account log as what it holds.
pub fn inspect(kind: u8, payload: &[u8]) -> Logged {
    match RecordKind::of_code(kind) {
        Some(RecordKind::Delta) => match decode_delta(payload).0 {
            Some(token) => Logged::Delta { token },
            None => Logged::Other,
        },
        Some(RecordKind::Events) => match decode_tracked(payload) {
            Ok(tracked) => Logged::Events(Box::new(tracked)),
            Err(_) => Logged::Other,
        },
        Some(RecordKind::Served) => match decode_served(payload) {
            Ok(served) => Logged::Events(Box::new(served.tracked)),
            Err(_) => Logged::Other,
        },
        Some(RecordKind::Forget) => Logged::Forget,
        Some(RecordKind::Replicated) => match decode_replicated(payload) {
            Some((_, kind, record)) => inspect(kind.code(), record),
            None => Logged::Other,
        },
        Some(RecordKind::Outboxed) => match decode_outboxed(payload) {
            Some((_, kind, record)) => inspect(kind.code(), record),
            None => Logged::Other,
        },
        Some(
            RecordKind::FeedSubmitted
            | RecordKind::FeedBuilt
            | RecordKind::Click
            | RecordKind::ForgetHashed
            | RecordKind::Campaigns,
        ) => Logged::Other,
        None => Logged::Other,
    }
}

/// The payload of a delta record.
pub(crate) fn encode_delta(token: &str, record: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(token.len() + 1 + record.len());
    payload.extend_from_slice(token.as_bytes());
    payload.push(b'\n');
    payload.extend_from_slice(record);
    payload
}

/// Splits a delta record into its token and parsed parts.
pub(crate) fn decode_delta(payload: &[u8]) -> (Option<String>, Result<Delta, CodecError>) {
    let Some(newline) = payload.iter().position(|b| *b == b'\n') else {
        return (None, Err(CodecError::NoToken));
    };
    let (token, rest) = payload.split_at(newline);
    let Ok(token) = std::str::from_utf8(token) else {
        return (None, Err(CodecError::TokenNotUtf8));
    };
    let parse = || -> Result<Delta, CodecError> {
        let value: serde_json::Value = serde_json::from_slice(rest.get(1..).unwrap_or_default())
            .map_err(|e| CodecError::Delta(e.to_string()))?;
        let mut errors = Errors::default();
        let fields = Fields::of(&value, "", KeyMatch::Exact, &mut errors)
            .ok_or_else(|| CodecError::Delta(errors.joined()))?;
        delta::parse(&fields).map_err(|e| CodecError::Delta(e.joined()))
    };
    (Some(token.to_owned()), parse())
}

/// The payload of an events record.
pub(crate) fn encode_tracked(tracked: &Tracked) -> Result<Vec<u8>, CodecError> {
    // Written straight into the record's buffer (alignment matters only when reading,
    // which copies into an aligned one), sized for a typical request's events.
    rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(tracked, Vec::with_capacity(512))
        .map_err(|e| CodecError::Archive {
            what: "events",
            reason: e.to_string(),
        })
}

/// A record's payload copied where an archive may be read (payloads are read from the
/// log without alignment).
fn aligned(payload: &[u8]) -> rkyv::util::AlignedVec<16> {
    let mut aligned = rkyv::util::AlignedVec::<16>::new();
    aligned.extend_from_slice(payload);
    aligned
}

/// Reads a logged request's events.
pub(crate) fn decode_tracked(payload: &[u8]) -> Result<Tracked, CodecError> {
    rkyv::from_bytes::<Tracked, rkyv::rancor::Error>(&aligned(payload)).map_err(|e| {
        CodecError::NotA {
            what: "tracking",
            reason: e.to_string(),
        }
    })
}

/// The payload of a served-request record.
pub(crate) fn encode_served(served: &Served) -> Result<Vec<u8>, CodecError> {
    rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(served, Vec::with_capacity(1024))
        .map_err(|e| CodecError::Archive {
            what: "request",
            reason: e.to_string(),
        })
}

/// A served request's record, encoded by the log's writer on its own thread
/// ([`Payload::Deferred`]): the request hands over the record it shares with its
/// answer, and its thread does not pay for the encoding.
#[derive(Debug)]
pub(crate) struct ServedRecord(Arc<Served>);

impl Encode for ServedRecord {
    fn encode(&self) -> Result<Vec<u8>, WalError> {
        encode_served(&self.0).map_err(|e| WalError::Unencodable(e.to_string()))
    }
}

impl ServedRecord {
    /// The payload of `served`'s record, to be encoded by the log's writer.
    pub(crate) fn payload(served: &Arc<Served>) -> Payload {
        Payload::Deferred(Box::new(ServedRecord(Arc::clone(served))))
    }
}

/// The payload of a click record.
pub(crate) fn encode_click(clicked: &Clicked) -> Result<Vec<u8>, CodecError> {
    rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(clicked, Vec::with_capacity(64)).map_err(
        |e| CodecError::Archive {
            what: "click",
            reason: e.to_string(),
        },
    )
}

/// Reads a logged click.
pub(crate) fn decode_click(payload: &[u8]) -> Result<Clicked, CodecError> {
    rkyv::from_bytes::<Clicked, rkyv::rancor::Error>(&aligned(payload)).map_err(|e| {
        CodecError::NotA {
            what: "click",
            reason: e.to_string(),
        }
    })
}

/// Reads a logged request.
pub(crate) fn decode_served(payload: &[u8]) -> Result<Served, CodecError> {
    rkyv::from_bytes::<Served, rkyv::rancor::Error>(&aligned(payload)).map_err(|e| {
        CodecError::NotA {
            what: "served-request",
            reason: e.to_string(),
        }
    })
}

/// A [`RecordKind::Replicated`] record: the replicated log's sequence (8 bytes, little
/// endian), the record's kind byte, the record.
pub(super) fn encode_replicated(sequence: u64, kind: RecordKind, payload: &[u8]) -> Vec<u8> {
    let mut logged = Vec::with_capacity(9 + payload.len());
    logged.extend_from_slice(&sequence.to_le_bytes());
    logged.push(kind.code());
    logged.extend_from_slice(payload);
    logged
}

/// The replicated log's sequence, the kind and the record of a
/// [`RecordKind::Replicated`] record.
pub(super) fn decode_replicated(payload: &[u8]) -> Option<(u64, RecordKind, &[u8])> {
    let (sequence, rest) = payload.split_first_chunk::<8>()?;
    let (kind, record) = rest.split_first()?;
    let kind = RecordKind::of_code(*kind).filter(|k| *k != RecordKind::Replicated)?;
    Some((u64::from_le_bytes(*sequence), kind, record))
}

/// Wraps a record this node publishes through its outbox as `id`
/// ([`RecordKind::Outboxed`]).
pub(super) fn encode_outboxed(id: OutboxId, kind: RecordKind, payload: &[u8]) -> Vec<u8> {
    let mut logged = Vec::with_capacity(13 + payload.len());
    logged.extend_from_slice(&id.start.to_le_bytes());
    logged.extend_from_slice(&id.number.to_le_bytes());
    logged.push(kind.code());
    logged.extend_from_slice(payload);
    logged
}

/// The outbox id, the kind and the record of a [`RecordKind::Outboxed`] record.
pub(super) fn decode_outboxed(payload: &[u8]) -> Option<(OutboxId, RecordKind, &[u8])> {
    let (start, rest) = payload.split_first_chunk::<4>()?;
    let (number, rest) = rest.split_first_chunk::<8>()?;
    let (kind, record) = rest.split_first()?;
    let kind = RecordKind::of_code(*kind)
        .filter(|k| !matches!(k, RecordKind::Replicated | RecordKind::Outboxed))?;
    let id = OutboxId {
        start: u32::from_le_bytes(*start),
        number: u64::from_le_bytes(*number),
    };
    Some((id, kind, record))
}

/// The local log read back for recovery: every wrapping record in place of the record
/// it wraps (same local sequence).
#[derive(Debug, Default)]
pub(super) struct Unwrapped {
    pub(super) records: Vec<Record>,
    /// The highest replicated sequence among the replicated records.
    pub(super) replicated: u64,
    /// The records this node took for its outbox past `mark` (not known to be in the
    /// replicated log), in log order.
    pub(super) unstored: Vec<Unstored>,
}

/// Unwraps the local log's replicated and outboxed records; the outboxed ones past the
/// outbox `mark` (all of them without one) are kept apart too.
pub(super) fn unwrap_records(records: Vec<Record>, mark: Option<OutboxId>) -> Unwrapped {
    let mut unwrapped = Unwrapped::default();
    unwrapped.records = records
        .into_iter()
        .map(|record| match RecordKind::of_code(record.kind) {
            Some(RecordKind::Replicated) => match decode_replicated(&record.payload) {
                Some((sequence, kind, inner)) => {
                    unwrapped.replicated = unwrapped.replicated.max(sequence);
                    Record {
                        sequence: record.sequence,
                        kind: kind.code(),
                        payload: inner.to_vec(),
                    }
                }
                None => record,
            },
            Some(RecordKind::Outboxed) => match decode_outboxed(&record.payload) {
                Some((id, kind, inner)) => {
                    if mark.is_none_or(|mark| id > mark) {
                        let payload = inner.to_vec();
                        unwrapped.unstored.push(Unstored { id, kind, payload });
                    }
                    Record {
                        sequence: record.sequence,
                        kind: kind.code(),
                        payload: inner.to_vec(),
                    }
                }
                None => record,
            },
            _ => record,
        })
        .collect();
    unwrapped
}

#[cfg(test)]
mod tests {
    use super::*;

    use vitrine_engine::analytics::ShownZone;
    use vitrine_engine::event::{
        BasketLine, BirthDate, Event, Identity, Order, PageType, PersonalDetails,
    };
    use vitrine_engine::money::Currency;

    /// A request with every kind of event, every optional field given, and two zones
    /// shown.
    fn every_event() -> Served {
        let line = |id: &str, qty: f64| BasketLine {
            id: id.to_owned(),
            qty,
            unit_price: 12.5,
        };
        let identity = Identity {
            user_id: Some("u-1".to_owned()),
            email: Some("shopper@example.com".to_owned()),
            account_id: Some("acme-trading".to_owned()),
            group_id: Some("trade".to_owned()),
        };
        let details = PersonalDetails {
            title: Some("Dr".to_owned()),
            first_name: Some("Ada".to_owned()),
            last_name: Some("Lovelace-Byron".to_owned()),
            zipcode: Some("SW1A 1AA".to_owned()),
            dob: Some(BirthDate(2_440_000)),
        };
        let order = |id: &str| Order {
            order_id: id.to_owned(),
            items: vec![line("P00001", 2.0), line("a-longer-product-id-0002", 1.0)],
            total: Some(37.5),
            identity: identity.clone(),
            details: details.clone(),
        };
        let events = [
            Event::PageView {
                page_type: PageType::ProductPage,
                product_id: Some("P00001".into()),
                category_id: Some("a-category-with-a-long-id".into()),
                brand_id: None,
            },
            Event::ProductView {
                id: "P00002".into(),
            },
            Event::ProductRate {
                id: "P00003".into(),
                rating: 4.5,
            },
            Event::SetBasket {
                items: vec![line("P00004", 3.0)],
            },
            Event::Order(Box::new(order("ORD-1"))),
            Event::CustomerDetails {
                identity: Box::new(identity.clone()),
                details: Box::new(details.clone()),
            },
            Event::CustomerOrder(Box::new(order("ORD-2"))),
        ];
        Served {
            tracked: Tracked {
                visitor_id: "visitor-with-an-id-longer-than-inline".to_owned(),
                session_id: "s-1".to_owned(),
                now: 1_800_000_000_000,
                events: events.into_iter().collect(),
            },
            currency: Currency::from_code("GBP").unwrap_or_else(|e| panic!("{e}")),
            shown: [("PP-01", "", 3), ("HP-01", "campaign:spring", 13)]
                .into_iter()
                .map(|(zone, variant, n)| ShownZone {
                    zone: zone.into(),
                    variant: variant.into(),
                    products: (0..n).map(|i| format!("P{i:05}").into()).collect(),
                })
                .collect(),
        }
    }

    /// A served request's log record keeps its bytes: today's encoding of every kind of
    /// event is the one logs on disk hold, and it reads back as the request. A change
    /// of an event's or a shown zone's shape in memory must not change what is logged.
    #[test]
    fn the_served_record_keeps_its_format() {
        let golden: &[u8] = include_bytes!("golden/served.rkyv");
        let served = every_event();
        let encoded = encode_served(&served).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(encoded.len(), golden.len());
        assert!(encoded == golden, "the served record's bytes changed");
        let decoded = decode_served(golden).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(decoded, served);
    }

    #[test]
    fn a_replicated_or_outboxed_record_reads_back_as_the_record_it_wraps() {
        let wrapped = encode_replicated(42, RecordKind::Forget, b"shopper@example.com");
        let outboxed = encode_outboxed(
            OutboxId {
                start: 3,
                number: 9,
            },
            RecordKind::Click,
            b"click",
        );
        let Unwrapped {
            records,
            replicated: highest,
            unstored: taken,
        } = unwrap_records(
            vec![
                Record {
                    sequence: 7,
                    kind: RecordKind::Replicated.code(),
                    payload: wrapped,
                },
                Record {
                    sequence: 8,
                    kind: RecordKind::Forget.code(),
                    payload: b"other".to_vec(),
                },
                Record {
                    sequence: 9,
                    kind: RecordKind::Outboxed.code(),
                    payload: outboxed,
                },
            ],
            None,
        );
        assert_eq!(records[2].kind, RecordKind::Click.code());
        assert_eq!(records[2].payload, b"click");
        assert_eq!(
            taken,
            vec![Unstored {
                id: OutboxId {
                    start: 3,
                    number: 9
                },
                kind: RecordKind::Click,
                payload: b"click".to_vec()
            }]
        );
        assert!(decode_outboxed(&[0; 12]).is_none());
        assert_eq!(highest, 42);
        assert_eq!(records[0].sequence, 7);
        assert_eq!(records[0].kind, RecordKind::Forget.code());
        assert_eq!(records[0].payload, b"shopper@example.com");
        assert_eq!(records[1].payload, b"other");
        // Too short, or wrapping a wrapped record: not read.
        assert!(decode_replicated(&[1, 2, 3]).is_none());
        assert!(decode_replicated(&encode_replicated(1, RecordKind::Replicated, b"")).is_none());
    }
}
