//! The account's deltas as they are kept: their statuses, how far the catalogue
//! includes the log, the deltas of the current overlay, and a delta on its way to the
//! worker.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::delta::Delta;
use crate::jobs::locks::SinceBase;
use crate::jobs::status::DeltaStatuses;

/// A delta applied since the current base was built.
#[derive(Debug, Clone)]
pub(in crate::jobs) struct Logged {
    pub(in crate::jobs) sequence: u64,
    pub(in crate::jobs) delta: Arc<Delta>,
}

/// A logged delta on its way to the worker.
#[derive(Debug)]
pub(in crate::jobs) struct Queued {
    pub(in crate::jobs) token: String,
    pub(in crate::jobs) sequence: u64,
    /// Its sequence in the replicated log (0: taken by this node alone).
    pub(in crate::jobs) stream: u64,
    pub(in crate::jobs) delta: Arc<Delta>,
}

/// The account's deltas: statuses, how far the catalogue includes the log, and the
/// deltas that make up the current overlay.
#[derive(Debug)]
pub(in crate::jobs) struct Deltas {
    /// token → (log sequence, status).
    pub(in crate::jobs) statuses: DeltaStatuses,
    /// Log sequence after the last applied delta: everything before it is in the
    /// account's catalogue.
    pub(in crate::jobs) applied_through: AtomicU64,
    /// Deltas counted in before their log append and out once applied: when none is
    /// pending, the catalogue includes every delta before the log's next sequence.
    pub(in crate::jobs) pending: AtomicU64,
    /// Deltas applied since the current base (they make up its overlay), in order;
    /// reachable only with the account's writer held.
    pub(in crate::jobs) since_base: SinceBase<Logged>,
    /// The replicated log's sequences of the deltas read from it and not yet applied,
    /// oldest first (popped with the account's writer held, as each is applied): a
    /// cluster snapshot's catalogue includes every delta before the first.
    pub(in crate::jobs) stream_pending: parking_lot::Mutex<std::collections::VecDeque<u64>>,
}

impl Queued {
    /// A delta read from the replicated log at `stream`, logged locally at `sequence`.
    pub(in crate::jobs) fn replicated(
        token: String,
        sequence: u64,
        stream: u64,
        delta: Delta,
    ) -> Queued {
        Queued {
            token,
            sequence,
            stream,
            delta: Arc::new(delta),
        }
    }
}
