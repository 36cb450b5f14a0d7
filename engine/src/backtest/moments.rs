//! The judged moments an account keeps for backtests, bounded in number and bytes.

use std::collections::VecDeque;
use std::sync::Arc;

use compact_str::CompactString;
use smallvec::SmallVec;

use crate::account::visitor_view::SegmentFacts;
use crate::campaign::RequestContext;
use crate::catalogue::UnixMillis;
use crate::event::{Identity, PageType};
use crate::money::Currency;

/// Judged moments an account keeps, at most (the oldest make room).
pub const MAX_MOMENTS: usize = 10_000;
/// The bytes kept moments take at most, as `Moment::bytes` counts them.
pub const MAX_MOMENT_BYTES: usize = 16 << 20;

/// One judged moment (see the module's documentation).
#[derive(Debug)]
pub(crate) struct Moment {
    pub(crate) visitor_id: CompactString,
    pub(crate) identity: Identity,
    /// Product keys ([`crate::models::ProductKeys`]), newest view first.
    pub(crate) recent_views: SmallVec<[u32; 8]>,
    pub(crate) basket: SmallVec<[u32; 8]>,
    pub(crate) purchased: SmallVec<[u32; 8]>,
    pub(crate) segments: Option<SegmentFacts>,
    pub(crate) page_type: Option<PageType>,
    pub(crate) request: RequestContext,
    pub(crate) currency: Currency,
    pub(crate) now: UnixMillis,
    /// What the request brought that was new to the shopper, by key.
    pub(crate) brought: SmallVec<[u32; 4]>,
}

impl Moment {
    /// What it takes in memory: itself and what its parts hold on the heap.
    pub(crate) fn bytes(&self) -> usize {
        let keys = |v: &SmallVec<[u32; 8]>| if v.spilled() { v.capacity() * 4 } else { 0 };
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::capacity);
        let identity = text(&self.identity.user_id)
            + text(&self.identity.email)
            + text(&self.identity.account_id)
            + text(&self.identity.group_id);
        let segments = self.segments.as_ref().map_or(0, |s| {
            (s.categories.len() + s.brands.len()) * std::mem::size_of::<(CompactString, f64)>()
        });
        std::mem::size_of::<Moment>()
            + std::mem::size_of::<Arc<Moment>>()
            + keys(&self.recent_views)
            + keys(&self.basket)
            + keys(&self.purchased)
            + identity
            + segments
    }
}

/// The kept moments, oldest first, and the bytes they take.
#[derive(Debug, Default)]
pub(crate) struct Moments {
    pub(crate) kept: parking_lot::Mutex<(VecDeque<Arc<Moment>>, usize)>,
}

impl Moments {
    pub(crate) fn keep(&self, moment: Moment) {
        let bytes = moment.bytes();
        let mut kept = self.kept.lock();
        kept.0.push_back(Arc::new(moment));
        kept.1 += bytes;
        while kept.0.len() > MAX_MOMENTS || kept.1 > MAX_MOMENT_BYTES {
            let Some(oldest) = kept.0.pop_front() else {
                break;
            };
            kept.1 = kept.1.saturating_sub(oldest.bytes());
        }
    }

    pub(crate) fn all(&self) -> Vec<Arc<Moment>> {
        self.kept.lock().0.iter().cloned().collect()
    }

    /// How many are kept, and their bytes.
    pub(crate) fn size(&self) -> (usize, usize) {
        let kept = self.kept.lock();
        (kept.0.len(), kept.1)
    }

    /// Removes the moments of `visitor_ids`, or of a shopper named by one of `user_ids`
    /// or `emails` (lower-case).
    pub(crate) fn forget(
        &self,
        visitor_ids: &std::collections::HashSet<String>,
        user_ids: &std::collections::HashSet<String>,
        emails: &std::collections::HashSet<String>,
    ) {
        let mut kept = self.kept.lock();
        kept.0.retain(|m| {
            !visitor_ids.contains(m.visitor_id.as_str())
                && !m
                    .identity
                    .user_id
                    .as_ref()
                    .is_some_and(|u| user_ids.contains(u))
                && !m
                    .identity
                    .email
                    .as_ref()
                    .is_some_and(|e| emails.contains(&e.to_lowercase()))
        });
        kept.1 = kept.0.iter().map(|m| m.bytes()).sum();
    }
}
