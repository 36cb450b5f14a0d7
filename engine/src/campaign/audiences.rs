//! Audiences: the size of a segment, counted over the visitors in memory as their
//! latest requests would be judged, and the visitors seen lately (for the console's
//! "show this zone as…"). The campaigns themselves are the rest of [`crate::campaign`].

use crate::account::Account;
use crate::account::visitor_view::{AskedFrom, CurrencyAt, VisitorSnapshot};
use crate::campaign::segment::{Condition, UserFacts};
use crate::catalogue::UnixMillis;

/// A segment's size: visitors matching now, and those of them active lately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentSize {
    /// Visitors in memory that match.
    pub matching: u64,
    /// Of those, the ones seen in the last 24 hours.
    pub active: u64,
    /// Visitors looked at.
    pub visitors: u64,
}

/// A visitor seen lately, for the console's "show this zone as…".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentVisitor {
    /// The visitor id.
    pub id: String,
    /// Its last request.
    pub last_seen: UnixMillis,
    /// Its sessions, the current one included.
    pub sessions: u32,
    /// Products in its recent views.
    pub viewed: usize,
    /// Lines in its basket.
    pub basket: usize,
    /// Its orders.
    pub orders: usize,
    /// Whether the store identified it (a user id or email).
    pub identified: bool,
}

/// Milliseconds in the window of [`SegmentSize::active`].
const ACTIVE_MILLIS: UnixMillis = 86_400_000;

impl Account {
    /// How many visitors in memory `rule` matches now, each judged as its latest
    /// request would be (its page type, currency, device, referrer and URL; see
    /// [`crate::campaign::request`]); and how many of them
    /// were seen in the last 24 hours. Walks the visitors one shard at a time, off the
    /// request path (the admin API calls it on the blocking pool).
    pub fn segment_size(&self, rule: &Condition, now: UnixMillis) -> SegmentSize {
        let settings = self.settings.load_full();
        let catalogue = self.catalogue();
        let reads = rule.reads();
        let mut size = SegmentSize::default();
        for entry in self.tracking.visitors.read().iter() {
            let live = entry.value();
            size.visitors += 1;
            let snapshot = VisitorSnapshot::for_segments(live, &catalogue, reads);
            let user = if reads.user {
                snapshot
                    .identity
                    .user_id
                    .as_deref()
                    .and_then(|id| self.user_facts(id))
            } else {
                None
            };
            let latest = live.latest_request();
            let request = latest.context();
            let currency = latest.currency.unwrap_or(settings.default_currency);
            let shopper = snapshot.shopper_at(
                &catalogue,
                CurrencyAt { currency, now },
                AskedFrom {
                    page_type: latest.page_type,
                    request: &request,
                },
                user.as_ref(),
                settings.default_currency,
            );
            if rule.holds(&shopper) {
                size.matching += 1;
                if now - live.state().last_seen <= ACTIVE_MILLIS {
                    size.active += 1;
                }
            }
        }
        size
    }

    /// The `limit` visitors in memory seen last, latest first. Walks the visitors one
    /// shard at a time, off the request path.
    pub fn recent_visitors(&self, limit: usize) -> Vec<RecentVisitor> {
        // A min-heap of the latest `limit` (last seen, id) pairs met so far.
        let mut latest = std::collections::BinaryHeap::new();
        for entry in self.tracking.visitors.read().iter() {
            let seen = entry.value().state().last_seen;
            latest.push(std::cmp::Reverse((seen, entry.key().clone())));
            if latest.len() > limit {
                latest.pop();
            }
        }
        let mut ids: Vec<(UnixMillis, String)> = latest.into_iter().map(|r| r.0).collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        let visitors = self.tracking.visitors.read();
        ids.into_iter()
            .filter_map(|(_, id)| {
                let live = visitors.get(&id)?;
                let visitor = live.state();
                Some(RecentVisitor {
                    last_seen: visitor.last_seen,
                    sessions: live.visits().sessions,
                    viewed: visitor.recent_views.len(),
                    basket: visitor.basket.len(),
                    orders: visitor.orders.len(),
                    identified: visitor.identity.user_id.is_some()
                        || visitor.identity.email.is_some(),
                    id,
                })
            })
            .collect()
    }

    /// What segments read of a store's user record.
    pub(crate) fn user_facts(&self, user_id: &str) -> Option<UserFacts> {
        let user = self.tracking.users.get(user_id)?;
        Some(UserFacts {
            country: user.country.clone(),
            state: user.state.clone(),
            city: user.city.clone(),
            gender: user.gender.clone(),
            group_id: user.group_id.clone(),
            dob: user.dob,
        })
    }
}
