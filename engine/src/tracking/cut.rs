//! Orders against a state snapshot's cut: an order is in a snapshot whole or not at
//! all.
//!
//! An order id is counted once: a node (or a restart) that replays an order whose id
//! a snapshot holds skips all of it, and applies all of one it does not. So a
//! snapshot must hold an order's id exactly when it holds its effects: its counters,
//! pairs, popularity, sessions, analytics and identities (the account's shared parts)
//! and its visitor's record (and its customer's). The export is not one instant:
//! visitors are copied one at a time while requests go on. So:
//! - what a replay would count again (counters, popularity, pairs, the sessions'
//!   products, the site's and zones' figures) is copied at one instant, the cut, with
//!   orders held at the gate ([`Export::cut`]); pages and views never wait;
//! - the order ids are copied before it, and those counted since the export began
//!   ([`OrderCut::counted`]) are added at the cut (they are only ever added; an id a
//!   bound evicts meanwhile may stay in the copy);
//! - a visitor an order wrote to after the visitors' copy began is copied again
//!   ([`OrderCut::wrote`]), and a later copy replaces an earlier one: a few rounds while
//!   orders go on ([`Export::take_wrote_over`]), then those left at the cut;
//! - what a replay adds again to the same result (sessions' latest times, identities'
//!   links) is copied after the cut.
//!
//! An order takes the gate before its visitor's entry ([`OrderCut::enter`]): the cut
//! takes visitors' entries while it holds the gate, and nothing that holds an entry
//! waits for the gate.
//!
//! Views and other events are counted again by a replay, which does not know them
//! (see `vitrine_ingest::state`): for them a snapshot is as of its export.

use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::event::Event;

/// The gate orders pass and the visitors they wrote to during an export.
#[derive(Debug, Default)]
pub(crate) struct OrderCut {
    gate: RwLock<()>,
    /// What orders wrote since an export began (`None`: no export).
    noted: Mutex<Option<Noted>>,
    /// One export at a time (a local state snapshot and a cluster's snapshot set may
    /// be written together): each notes its own visitors from its own start.
    one_at_a_time: Mutex<()>,
}

/// What orders wrote during an export.
#[derive(Debug, Default)]
struct Noted {
    /// Visitors written to.
    visitors: Vec<String>,
    /// Order ids counted.
    orders: Vec<String>,
}

/// An order (or a request with one) applying: the cut waits for it.
#[derive(Debug)]
#[must_use = "holds the gate only while alive"]
pub(crate) struct Ordering<'a> {
    _gate: RwLockReadGuard<'a, ()>,
}

/// An export under way: the visitors orders write to are noted until its cut (or
/// until it is dropped).
#[derive(Debug)]
#[must_use = "notes visitors only while alive"]
pub(crate) struct Export<'a> {
    cut: &'a OrderCut,
    _alone: MutexGuard<'a, ()>,
}

/// The cut: orders wait at the gate until it is dropped.
#[derive(Debug)]
#[must_use = "holds orders only while alive"]
pub(crate) struct Cut<'a> {
    _gate: RwLockWriteGuard<'a, ()>,
    /// The visitors to copy again, each once.
    pub(crate) wrote: Vec<String>,
    /// The order ids counted since the export began.
    pub(crate) ordered: Vec<String>,
}

impl OrderCut {
    /// The gate for a request whose `events` include an order (none otherwise). Taken
    /// before any visitor's entry is locked.
    pub(crate) fn enter(&self, events: &[Event]) -> Option<Ordering<'_>> {
        events
            .iter()
            .any(|event| matches!(event, Event::Order(_) | Event::CustomerOrder(_)))
            .then(|| self.enter_orders())
    }

    /// The gate for applying orders.
    pub(crate) fn enter_orders(&self) -> Ordering<'_> {
        Ordering {
            _gate: self.gate.read(),
        }
    }

    /// Notes a visitor an order wrote to (under [`OrderCut::enter`]), when an export's
    /// copy of visitors is under way.
    pub(crate) fn wrote(&self, visitor: &str) {
        if let Some(noted) = self.noted.lock().as_mut() {
            noted.visitors.push(visitor.to_owned());
        }
    }

    /// Notes an order id counted (under [`OrderCut::enter`]), when an export is under
    /// way: the ids are copied before the cut, those counted since are added at it.
    pub(crate) fn counted(&self, order_id: &str) {
        if let Some(noted) = self.noted.lock().as_mut() {
            noted.orders.push(order_id.to_owned());
        }
    }

    /// Begins an export (after any other one ends): from now on the visitors orders
    /// write to are noted. Every order already applying finishes first.
    pub(crate) fn begin(&self) -> Export<'_> {
        let alone = self.one_at_a_time.lock();
        let _gate = self.gate.write();
        *self.noted.lock() = Some(Noted::default());
        Export {
            cut: self,
            _alone: alone,
        }
    }
}

impl Export<'_> {
    /// The visitors orders wrote to since the last call (noting goes on), when more
    /// than `few` notes wait; none otherwise (they are left for the cut).
    pub(crate) fn take_wrote_over(&self, few: usize) -> Option<Vec<String>> {
        let mut noted = self.cut.noted.lock();
        let noted = noted.as_mut()?;
        (noted.visitors.len() > few).then(|| distinct(std::mem::take(&mut noted.visitors)))
    }

    /// The cut: waits for the orders applying, holds new ones until dropped, and hands
    /// over the visitors to copy again (noting stops).
    pub(crate) fn cut(&self) -> Cut<'_> {
        let gate = self.cut.gate.write();
        let Noted { visitors, orders } = self.cut.noted.lock().take().unwrap_or_default();
        Cut {
            _gate: gate,
            wrote: distinct(visitors),
            ordered: orders,
        }
    }
}

/// `ids`, each once.
fn distinct(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_unstable();
    ids.dedup();
    ids
}

impl Drop for Export<'_> {
    fn drop(&mut self) {
        *self.cut.noted.lock() = None;
    }
}
