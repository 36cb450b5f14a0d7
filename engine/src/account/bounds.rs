//! Keeping an account's per-visitor state within its bounds: the background eviction
//! pass, the inline one a request runs when that pass is late, and the links to
//! visitors that are gone.

use std::sync::atomic::Ordering;

use super::Account;
use crate::catalogue::UnixMillis;
use crate::shards::CountedMap;
use crate::tracking::key::IdentityKey;
use crate::visitor::SESSION_IDLE_MILLIS;

impl Account {
    /// Keeps the account's per-visitor state within `bounds`: drops visitors idle for
    /// longer than the retention, then, while there are more visitors, sessions or
    /// order ids than allowed, the least recently seen (or oldest) of them, down to
    /// [`EVICT_TO`] of the bound, so that the next pass is not due at once. Aggregates
    /// (popularity, co-counts, rankings) are not touched: what evicted visitors did
    /// still counts. Runs on the caller's thread; each map shard is locked only while
    /// it is walked.
    pub fn evict(&self, bounds: &MemoryBounds, now: UnixMillis) -> Evicted {
        let idle_before = now.saturating_sub(bounds.visitor_idle_millis);
        let idle = self
            .tracking
            .visitors
            .retain(|_, visitor| visitor.state().last_seen >= idle_before);
        let visitors = evict_oldest(&self.tracking.visitors, bounds.max_visitors, |v| {
            v.state().last_seen
        });
        let sessions = evict_oldest(&self.tracking.sessions, bounds.max_sessions, |last| *last);
        let orders = evict_oldest(&self.tracking.orders, bounds.max_order_ids, |seen| *seen);
        Evicted {
            idle_visitors: idle,
            visitors,
            sessions,
            order_ids: orders,
        }
    }

    /// Drops the links from user ids, emails and B2B account ids to visitors that are
    /// gone (evicted), and the identities left with none; returns how many links went.
    /// The links are copied out first, so that no identity is locked while a visitor is
    /// looked up (a request links identities while it holds its visitor). Walks the
    /// whole table: the server runs it with the retention sweep, once a minute.
    pub fn unlink_missing_visitors(&self) -> usize {
        let links: Vec<(IdentityKey, Vec<String>)> = self
            .tracking
            .identities
            .iter()
            .map(|entry| (entry.key().clone(), entry.value().iter().cloned().collect()))
            .collect();
        let mut removed = 0;
        for (key, linked) in links {
            let missing: Vec<String> = linked
                .into_iter()
                .filter(|visitor| !self.tracking.visitors.read().contains_key(visitor))
                .collect();
            if missing.is_empty() {
                continue;
            }
            if let Some(mut set) = self.tracking.identities.get_mut(&key) {
                for visitor in &missing {
                    set.remove(visitor);
                }
            }
            self.tracking
                .identities
                .remove_if(&key, |_, set| set.is_empty());
            removed += missing.len();
        }
        removed
    }

    /// Identities (user ids, emails, B2B account ids) linked to visitors.
    pub fn identity_count(&self) -> usize {
        self.tracking.identities.len()
    }

    /// Keeps the visitor bound when the background pass is late: if the account holds
    /// more than [`INLINE_SLACK`] over `max_visitors` visitors or sessions, the caller
    /// runs an eviction pass (least recently seen first, down to [`INLINE_EVICT_TO`] of
    /// the bound) on its own thread; a caller that finds another one doing so waits for it
    /// and looks again, so the account never holds more than the limit plus one
    /// visitor per request in flight. The pass walks the map, but it comes once per
    /// tenth of the bound in new visitors: about ten entries walked per new visitor.
    /// Called with no map entry held.
    pub fn keep_bound(&self, max_visitors: Option<usize>) {
        let Some(bound) = max_visitors else {
            return;
        };
        let limit = bound + ((bound as f64 * INLINE_SLACK) as usize).max(1);
        if self.tracking.visitors.len() <= limit && self.tracking.sessions.len() <= limit {
            return;
        }
        // One request evicts at a time; the others over the limit wait for it (rather
        // than adding more while it may be descheduled), then look again.
        let _turn = self.inline_eviction.lock();
        if self.tracking.visitors.len() <= limit && self.tracking.sessions.len() <= limit {
            return;
        }
        let visitors = evict_oldest_to(&self.tracking.visitors, bound, INLINE_EVICT_TO, |v| {
            v.state().last_seen
        });
        let sessions = evict_oldest_to(&self.tracking.sessions, bound, INLINE_EVICT_TO, |last| {
            *last
        });
        for (counter, evicted) in self.evicted_inline.iter().zip([visitors, sessions]) {
            counter.fetch_add(evicted as u64, Ordering::Relaxed);
        }
    }

    /// Visitors and sessions evicted inline by requests ([`Account::keep_bound`]).
    pub fn evicted_inline(&self) -> Evicted {
        let [visitors, sessions] = &self.evicted_inline;
        Evicted {
            visitors: visitors.load(Ordering::Relaxed) as usize,
            sessions: sessions.load(Ordering::Relaxed) as usize,
            ..Evicted::default()
        }
    }

    /// Whether a bound of `bounds` is exceeded now (cheap: the maps' counts).
    pub fn over_bounds(&self, bounds: &MemoryBounds) -> bool {
        self.tracking.visitors.len() > bounds.max_visitors
            || self.tracking.sessions.len() > bounds.max_sessions
            || self.tracking.orders.len() > bounds.max_order_ids
    }

    /// Forgets sessions idle for longer than the session timeout.
    pub fn expire_sessions(&self, now: UnixMillis) {
        self.tracking
            .sessions
            .retain(|_, last| now - *last <= SESSION_IDLE_MILLIS);
    }
}

/// What an eviction pass takes an over-full map back to: this share of its bound.
pub const EVICT_TO: f64 = 0.99;

/// How far over its visitor bound an account may go before a request evicts inline
/// rather than leaving it to the background pass: this share of the bound.
pub const INLINE_SLACK: f64 = 0.01;

/// What an inline pass ([`Account::keep_bound`]) takes the account back to: this share
/// of the bound, lower than [`EVICT_TO`] so that a flood of new visitors on a machine
/// too busy for the background pass walks the map once per tenth of the bound.
pub const INLINE_EVICT_TO: f64 = 0.9;

/// How much per-visitor state an account keeps ([`Account::evict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBounds {
    /// Visitors kept at most (least recently seen evicted first).
    pub max_visitors: usize,
    /// A visitor not seen for this long is dropped.
    pub visitor_idle_millis: UnixMillis,
    /// Live sessions kept at most (least recently active evicted first).
    pub max_sessions: usize,
    /// Order ids remembered for de-duplication at most (oldest forgotten first: an
    /// order repeated after that is counted again).
    pub max_order_ids: usize,
}

/// What an eviction pass dropped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// Visitors idle past the retention.
    pub idle_visitors: usize,
    /// Visitors beyond the bound (least recently seen).
    pub visitors: usize,
    /// Sessions beyond the bound.
    pub sessions: usize,
    /// Order ids beyond the bound.
    pub order_ids: usize,
}

/// When `map` holds more than `bound` entries, removes the ones with the smallest
/// `age_of` (least recently seen) until about [`EVICT_TO`] of `bound` are left; returns
/// how many were removed. The cut-off is found on a copy of the ages, then one walk
/// removes entries below it (and at it, while more are to go).
fn evict_oldest<V>(
    map: &CountedMap<String, V>,
    bound: usize,
    age_of: impl Fn(&V) -> UnixMillis,
) -> usize {
    evict_oldest_to(map, bound, EVICT_TO, age_of)
}

/// [`evict_oldest`] down to `share` of `bound`.
fn evict_oldest_to<V>(
    map: &CountedMap<String, V>,
    bound: usize,
    share: f64,
    age_of: impl Fn(&V) -> UnixMillis,
) -> usize {
    if map.len() <= bound {
        return 0;
    }
    let target = ((bound as f64) * share) as usize;
    let mut ages: Vec<UnixMillis> = map.read().iter().map(|e| age_of(e.value())).collect();
    let excess = ages.len().saturating_sub(target);
    if excess == 0 {
        return 0;
    }
    let (_, cutoff, _) = ages.select_nth_unstable(excess - 1);
    let cutoff = *cutoff;
    let below = ages.iter().filter(|age| **age < cutoff).count();
    drop(ages);
    // Entries at the cut-off go until `excess` are gone.
    let mut at_cutoff = excess.saturating_sub(below);
    map.retain(|_, value| {
        let age = age_of(value);
        if age < cutoff {
            return false;
        }
        if age == cutoff && at_cutoff > 0 {
            at_cutoff -= 1;
            return false;
        }
        true
    })
}
