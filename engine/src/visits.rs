//! What segments read of a visitor's visits and orders: when it was first seen, how
//! many sessions it had and how many pages it viewed in the current one, and its
//! orders with their revenue in the account's currency.
//!
//! Kept beside the [`crate::visitor::Visitor`] (whose archived form stays as it was) and
//! stored in state snapshots as its own entry, [`crate::state::StateEntry::Visits`],
//! written after the visitor's. Counted while events are applied, so a replayed log
//! counts them again the same way.

use std::collections::VecDeque;

use crate::catalogue::UnixMillis;

/// Orders whose time and revenue are kept per visitor (for revenue over the last N
/// days); the lifetime totals count every order.
pub const MAX_ORDERS_KEPT: usize = 100;

/// Whether a request starts a session of its visitor ([`Visits::seen`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStart {
    /// Its first session, or one after another.
    New,
    /// The session of its previous request.
    Continued,
}

/// Whether a copy for segments keeps the latest orders ([`Visits::for_segments`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecentOrders {
    /// Copied: a segment reads revenue over a number of days.
    Copied,
    /// Left out, so that the copy allocates nothing.
    Left,
}

/// A visitor's visits and orders, as segments read them.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Visits {
    /// When it was first seen (0: not yet).
    pub first_seen: UnixMillis,
    /// Sessions it had, the current one included.
    pub sessions: u32,
    /// Pages viewed (`page_view` events) in the current session.
    pub session_page_views: u32,
    /// Orders it placed.
    pub orders: u32,
    /// Revenue of its orders in the account's currency, in minor units.
    pub revenue_minor: i64,
    /// When it ordered last (0: never).
    pub last_order: UnixMillis,
    /// Its latest orders: when, and their revenue in minor units of the account's
    /// currency, oldest first, at most [`MAX_ORDERS_KEPT`].
    pub recent_orders: VecDeque<(UnixMillis, i64)>,
}

impl Visits {
    /// A request of the visitor at `now`, starting a session of it or not.
    pub fn seen(&mut self, now: UnixMillis, session: SessionStart) {
        if self.first_seen == 0 {
            self.first_seen = now;
        }
        if session == SessionStart::New || self.sessions == 0 {
            self.sessions = self.sessions.saturating_add(1);
            self.session_page_views = 0;
        }
    }

    /// A page view in the current session.
    pub fn page_viewed(&mut self) {
        self.session_page_views = self.session_page_views.saturating_add(1);
    }

    /// An order at `at` worth `revenue_minor` in the account's currency.
    pub fn ordered(&mut self, at: UnixMillis, revenue_minor: i64) {
        self.orders = self.orders.saturating_add(1);
        self.revenue_minor = self.revenue_minor.saturating_add(revenue_minor);
        self.last_order = self.last_order.max(at);
        if self.recent_orders.len() >= MAX_ORDERS_KEPT {
            self.recent_orders.pop_front();
        }
        self.recent_orders.push_back((at, revenue_minor));
    }

    /// A copy for judging segments, with the latest orders or without them.
    pub fn for_segments(&self, orders: RecentOrders) -> Visits {
        Visits {
            recent_orders: match orders {
                RecentOrders::Copied => self.recent_orders.clone(),
                RecentOrders::Left => VecDeque::new(),
            },
            ..*self
        }
    }

    /// Whether it had a session before the current one.
    pub fn returning(&self) -> bool {
        self.sessions > 1
    }

    /// Revenue in minor units of the orders placed at or after `since` (among the
    /// latest [`MAX_ORDERS_KEPT`]).
    pub fn revenue_since(&self, since: UnixMillis) -> i64 {
        self.recent_orders
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, minor)| *minor)
            .fold(0, i64::saturating_add)
    }

    /// Adds another device's visits of the same shopper: the earliest first sighting,
    /// the sessions and orders of both.
    pub fn absorb(&mut self, other: &Visits) {
        if other.first_seen != 0 && (self.first_seen == 0 || other.first_seen < self.first_seen) {
            self.first_seen = other.first_seen;
        }
        self.sessions = self.sessions.saturating_add(other.sessions);
        self.orders = self.orders.saturating_add(other.orders);
        self.revenue_minor = self.revenue_minor.saturating_add(other.revenue_minor);
        self.last_order = self.last_order.max(other.last_order);
        for order in &other.recent_orders {
            if self.recent_orders.len() >= MAX_ORDERS_KEPT {
                break;
            }
            self.recent_orders.push_back(*order);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_page_views_and_orders_are_counted() {
        let mut visits = Visits::default();
        visits.seen(1_000, SessionStart::New);
        visits.page_viewed();
        visits.page_viewed();
        assert_eq!((visits.sessions, visits.session_page_views), (1, 2));
        assert!(!visits.returning());
        visits.seen(2_000, SessionStart::Continued);
        assert_eq!(visits.sessions, 1);
        visits.seen(9_000, SessionStart::New);
        assert_eq!((visits.sessions, visits.session_page_views), (2, 0));
        assert!(visits.returning());
        assert_eq!(visits.first_seen, 1_000);
        visits.ordered(5_000, 250);
        visits.ordered(8_000, 100);
        assert_eq!((visits.orders, visits.revenue_minor), (2, 350));
        assert_eq!(visits.last_order, 8_000);
        assert_eq!(visits.revenue_since(6_000), 100);
    }

    #[test]
    fn kept_orders_are_bounded() {
        let mut visits = Visits::default();
        for at in 0..(MAX_ORDERS_KEPT as i64 + 10) {
            visits.ordered(at, 1);
        }
        assert_eq!(visits.recent_orders.len(), MAX_ORDERS_KEPT);
        assert_eq!(visits.orders as usize, MAX_ORDERS_KEPT + 10);
    }
}
