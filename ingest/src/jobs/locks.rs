//! The account's lock order, as types: the one table of the threads and the locks
//! each may take, and guards that can only be taken in its order.
//!
//! Every catalogue version is swapped in through the account's writer lock
//! ([`vitrine_engine::account::Writer`]): whoever holds it loads the current version,
//! edits it and swaps the result in, so no change is lost between load and swap.
//!
//! | thread | what it owns | what it may lock, in this order |
//! |---|---|---|
//! | the caller of [`super::AccountJobs::start`] (server startup) | replaying the log into the account | writer |
//! | request handlers (`http`, off the async workers when they fsync) | appends to the log: deltas (fsynced), events (under `events_fsync`), erasures (fsynced); feed submissions; streamed-feed pieces | `intake` (held from a delta's append to its queueing, so log order is apply order); feed `queue`; `streams` (held for a whole piece, then the feed `queue` at close) |
//! | delta worker `delta-<key>` | applying queued deltas in batches; their statuses | writer → `since_base` |
//! | compactor `compact-<key>` | compactions; state snapshots on `state_interval` | `rebuild` → writer → `since_base`; then `checkpointing` |
//! | feed runner `feed-runner` (`runner.rs`) | downloads (or streamed spools), parses and builds of queued feeds; order-history imports (log appends, fsynced) | `rebuild` → writer → `since_base`; then `checkpointing`; feed `queue` |
//! | admin handlers changing campaigns (`http`, on the blocking pool) | a change of the campaign document: read, check, log append (fsynced), install | `campaigns` (alone; the account's campaign history is a leaf lock of the engine) |
//! | session sweep (`http`, on the blocking pool) | removing abandoned streamed feeds | `streams` |
//! | erasure flush `erasure-flush` | sealing the log and rewriting the snapshots after a forget | `rebuild` → writer → `since_base`; then `checkpointing` |
//! | cluster applier `replica-<key>` (`vitrine-cluster`; only in a cluster) | applying the replicated log's records in order; swapping in feeds built by the cluster | `intake`; `rebuild` → writer → `since_base`; then `checkpointing` |
//! | cluster snapshots `snapshots-<key>` (only in a cluster) | snapshot sets for joining nodes | writer (briefly, to take the catalogue) |
//! | ingest pool `ingest-N` | the parallel parts of builds; model rebuilds | none of these |
//! | log writer (`vitrine_snapshots::wal`) | writes, fsyncs and rotation of the log | the log's own state only |
//!
//! Locks are taken in the order of the table's last column and never the other way
//! round. The types hold the rules that can be held statically:
//! - `since_base` is reachable only through the writer: [`SinceBase::lock`] takes a
//!   [`Writer`], so it is always locked after it and released with it.
//! - A rebuild takes the writer through its [`Rebuilding`] guard ([`Rebuilding::writer`]
//!   borrows it), and takes `checkpointing` through the same guard
//!   ([`Rebuilding::checkpointing`] borrows it mutably): the compiler refuses the
//!   second while a writer taken from the first is alive, so a rebuild never holds
//!   `checkpointing` with the writer or `since_base`.
//! - State snapshots outside a rebuild take `checkpointing` alone
//!   ([`Locks::checkpointing`]), from threads that hold nothing else.
//!
//! `intake` and the feed `queue` are never held while another of these is taken.

use parking_lot::{Mutex, MutexGuard};
use vitrine_engine::Account;
use vitrine_engine::account::Writer;

/// The account's `rebuild` and `checkpointing` locks.
#[derive(Debug, Default)]
pub(super) struct Locks {
    /// Held for a whole rebuild: one feed or compaction per account at a time.
    rebuild: Mutex<()>,
    /// Held while a state snapshot is written and the log cut.
    checkpointing: Mutex<()>,
    /// Held for a whole change of the campaigns (read, check, log, install): one
    /// change per account at a time. Takes nothing else.
    pub(super) campaigns: Mutex<()>,
}

impl Locks {
    /// Takes `rebuild`, first of the order.
    pub(super) fn rebuild(&self) -> Rebuilding<'_> {
        Rebuilding {
            locks: self,
            _guard: self.rebuild.lock(),
        }
    }

    /// Takes `checkpointing` outside a rebuild (a state snapshot on its interval, a
    /// stop), from a thread that holds none of the account's locks.
    pub(super) fn checkpointing(&self) -> Checkpointing<'_> {
        Checkpointing {
            _guard: self.checkpointing.lock(),
        }
    }
}

/// The `rebuild` lock, held.
#[derive(Debug)]
pub(super) struct Rebuilding<'a> {
    locks: &'a Locks,
    _guard: MutexGuard<'a, ()>,
}

impl<'a> Rebuilding<'a> {
    /// Takes the account's writer, after `rebuild`.
    pub(super) fn writer<'b>(&'b self, account: &'b Account) -> Writer<'b> {
        account.writer()
    }

    /// Takes `checkpointing`: not while a writer taken through this guard is held.
    pub(super) fn checkpointing(&mut self) -> Checkpointing<'a> {
        Checkpointing {
            _guard: self.locks.checkpointing.lock(),
        }
    }
}

/// The `checkpointing` lock, held.
#[derive(Debug)]
pub(super) struct Checkpointing<'a> {
    _guard: MutexGuard<'a, ()>,
}

/// Deltas applied since the current base (they make up its overlay), in order:
/// reachable only with the account's writer held.
#[derive(Debug, Default)]
pub(super) struct SinceBase<T>(Mutex<Vec<T>>);

impl<T> SinceBase<T> {
    /// The deltas replayed on start.
    pub(super) fn new(logged: Vec<T>) -> SinceBase<T> {
        SinceBase(Mutex::new(logged))
    }

    /// Locks the list, after the writer: held no longer than `writer`.
    pub(super) fn lock<'w>(&'w self, _writer: &'w Writer<'_>) -> MutexGuard<'w, Vec<T>> {
        self.0.lock()
    }
}
