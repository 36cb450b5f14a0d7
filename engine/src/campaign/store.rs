//! An account's campaigns as it holds them: the compiled set requests read (swapped
//! whole), every version of the document it was compiled from (the audit log), and the
//! drafts of the document's parts. [`crate::account::Account::campaigns`] hands it out;
//! how many visitors a segment reaches is counted over the tracked visitors
//! (`audiences.rs`).

use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use super::draft::{Draft, Drafts};
use super::{CampaignDocument, CampaignHistory, CampaignSet, CampaignVersion};

/// The compiled set, the history of documents and the drafts.
#[derive(Debug, Default)]
pub struct Campaigns {
    /// The compiled set, swapped whole.
    compiled: ArcSwap<CampaignSet>,
    /// Every version of the document kept.
    history: Mutex<CampaignHistory>,
    /// The drafts of the document's parts.
    drafts: Mutex<Drafts>,
}

impl Campaigns {
    /// The compiled campaigns now.
    pub fn compiled(&self) -> Arc<CampaignSet> {
        self.compiled.load_full()
    }

    /// The compiled campaigns now, without a reference count (for a request).
    pub(crate) fn load(&self) -> arc_swap::Guard<Arc<CampaignSet>> {
        self.compiled.load()
    }

    /// The campaign documents, every version kept (each document shared, not copied).
    pub fn history(&self) -> CampaignHistory {
        self.history.lock().clone()
    }

    /// The latest document and its version (an empty document at 0).
    pub fn document(&self) -> (Arc<CampaignDocument>, u64) {
        let history = self.history.lock();
        history.latest().map_or_else(
            || (Arc::default(), 0),
            |latest| (Arc::clone(&latest.document), latest.version),
        )
    }

    /// One version of the document, when the history keeps it.
    pub fn version(&self, version: u64) -> Option<CampaignVersion> {
        self.history.lock().get(version).cloned()
    }

    /// Adds `version` to the history and swaps in `set`, compiled from it. A version not
    /// after the latest one (a record applied twice) changes nothing: `false`.
    pub fn install(&self, version: CampaignVersion, set: CampaignSet) -> bool {
        let mut history = self.history.lock();
        if !history.push(version) {
            return false;
        }
        self.compiled.store(Arc::new(set));
        true
    }

    /// Swaps in `set`, compiled again from the latest version (after a reload changed
    /// the zones or the time zone it was compiled against).
    pub fn recompiled(&self, set: CampaignSet) {
        let history = self.history.lock();
        if history.latest().map_or(0, |v| v.version) == set.version {
            self.compiled.store(Arc::new(set));
        }
    }

    /// The drafts of the document's parts (discarded ones as entries without a body).
    pub fn drafts(&self) -> Drafts {
        self.drafts.lock().clone()
    }

    /// The latest record of one part's draft (saved or discarded), copied alone.
    pub fn draft(&self, part: &str) -> Option<Draft> {
        self.drafts.lock().entry(part).cloned()
    }

    /// Applies a saved or discarded draft (a log record's): whether it replaced the
    /// part's entry (it comes after it).
    pub fn apply_draft(&self, draft: Draft) -> bool {
        self.drafts.lock().apply(draft)
    }

    /// Restores the drafts from a state snapshot.
    pub(crate) fn restore_drafts(&self, drafts: Drafts) {
        *self.drafts.lock() = drafts;
    }

    /// Restores the history from a state snapshot (the set is compiled by the caller,
    /// which reads documents, from [`CampaignHistory::latest`]).
    pub(crate) fn restore_history(&self, history: CampaignHistory) {
        *self.history.lock() = history;
    }
}
