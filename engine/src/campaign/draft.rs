//! Drafts: a zone's campaign list, or the segments, as an editor left them without
//! publishing. One draft per part (`segments`, or `zone:<id>`), shared by every editor
//! of the account: saved as it is edited, with who and when, and the version of the part
//! it was based on. A draft is not compiled and never served; the console previews and
//! publishes it.
//!
//! Drafts arrive as log records (`vitrine-ingest`'s campaign records), so a restart
//! replays them and every node of a cluster applies them in the replicated log's order;
//! they are kept in state snapshots as [`crate::state::StateEntry::CampaignDrafts`]. A
//! discarded draft stays as an entry without a body, so that a discard and a save are
//! ordered the same way everywhere: of two records for a part, the later one (by time,
//! then by id) wins.

use crate::catalogue::UnixMillis;

/// The part of the campaign document a draft is of: `segments`, or `zone:<id>`.
pub fn zone_part(zone: &str) -> String {
    format!("zone:{zone}")
}

/// The part name of the segments.
pub const SEGMENTS_PART: &str = "segments";

/// A part's draft, or its discard.
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Draft {
    /// `segments`, or `zone:<id>`.
    pub part: String,
    /// The list as the editor left it (JSON text: `{"campaigns": [...]}` or
    /// `{"segments": [...]}`); none: discarded.
    pub body: Option<String>,
    /// Who saved or discarded it (an admin token's label).
    pub author: String,
    /// When.
    pub at: UnixMillis,
    /// The version of the part it was based on (its ETag then).
    pub based_on: u64,
    /// The record's id (random): what the node that took it waits to see applied.
    pub id: u64,
}

impl Draft {
    /// Whether this record comes after `other` (later, or at the same moment with a
    /// larger id).
    fn after(&self, other: &Draft) -> bool {
        (self.at, self.id) > (other.at, other.id)
    }
}

/// An account's drafts, one entry per part.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Drafts {
    entries: Vec<Draft>,
}

impl Drafts {
    /// The draft of `part`, when it has one (not discarded).
    pub fn get(&self, part: &str) -> Option<&Draft> {
        self.entry(part).filter(|d| d.body.is_some())
    }

    /// The latest record of `part`: its draft, or its discard.
    pub fn entry(&self, part: &str) -> Option<&Draft> {
        self.entries.iter().find(|d| d.part == part)
    }

    /// Every draft (not discarded), by part.
    pub fn drafts(&self) -> impl Iterator<Item = &Draft> {
        self.entries.iter().filter(|d| d.body.is_some())
    }

    /// Applies a saved or discarded draft: it replaces the part's entry when it comes
    /// after it. Whether it did.
    pub fn apply(&mut self, draft: Draft) -> bool {
        match self.entries.iter_mut().find(|d| d.part == draft.part) {
            Some(entry) if draft.after(entry) => {
                *entry = draft;
                true
            }
            Some(_) => false,
            None => {
                self.entries.push(draft);
                self.entries.sort_by(|a, b| a.part.cmp(&b.part));
                true
            }
        }
    }

    /// Whether there is no entry at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(part: &str, body: Option<&str>, at: UnixMillis, id: u64) -> Draft {
        Draft {
            part: part.to_owned(),
            body: body.map(str::to_owned),
            author: "maya".to_owned(),
            at,
            based_on: 3,
            id,
        }
    }

    #[test]
    fn the_later_record_of_a_part_wins_whatever_the_order_they_arrive_in() {
        let mut drafts = Drafts::default();
        assert!(drafts.apply(draft("zone:HP-01", Some("{}"), 10, 1)));
        assert!(drafts.apply(draft("segments", Some("[]"), 5, 1)));
        // A discard after it removes the draft, and an older save does not bring it back.
        assert!(drafts.apply(draft("zone:HP-01", None, 20, 1)));
        assert!(!drafts.apply(draft("zone:HP-01", Some("{\"old\":1}"), 15, 9)));
        assert_eq!(drafts.get("zone:HP-01"), None);
        assert_eq!(drafts.entry("zone:HP-01").map(|d| d.at), Some(20));
        // At the same moment, the larger id.
        assert!(drafts.apply(draft("segments", Some("[1]"), 5, 2)));
        assert!(!drafts.apply(draft("segments", Some("[0]"), 5, 1)));
        assert_eq!(
            drafts.get("segments").and_then(|d| d.body.as_deref()),
            Some("[1]")
        );
        assert_eq!(drafts.drafts().count(), 1);
        assert_eq!(zone_part("PP-01"), "zone:PP-01");
    }
}
