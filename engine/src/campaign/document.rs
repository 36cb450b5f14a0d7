//! The campaign document, typed: an account's segments and each zone's ordered campaign
//! list, each part with the version in which it last changed (its ETag). It is what the
//! audit log keeps, what a change replaces one part of, what a restore brings back and
//! what `vitrine-ingest` compiles into a [`super::CampaignSet`].
//!
//! A segment's rule, a campaign's schedule and its content are kept as the JSON they
//! were written in (`rule`, `schedule`, `content`): the one reader of that grammar is
//! the compiler, which names every problem with its path. Everything a change, a
//! restore, a diff or a conflict works with (ids, names, the order, versions) is typed.
//!
//! As JSON (the log record of each change, the admin API, a state snapshot):
//!
//! ```json
//! {"segments": {"version": 3, "list": [{"id": "...", "name": "...", "rule": {...}}]},
//!  "zones": {"HP-01": {"version": 5, "campaigns": [{"id": "...", "content": {...}}]}}}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::definition::{CampaignDefinition, SegmentDefinition};
use crate::experiment::definition::ExperimentDefinition;
pub use crate::experiment::definition::ExperimentsPart;

/// The whole document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignDocument {
    /// The account's segments.
    #[serde(default)]
    pub segments: SegmentsPart,
    /// Each zone that ever had a list of its own, by id.
    #[serde(default)]
    pub zones: BTreeMap<String, ZonePart>,
    /// The experiments written from the console or the admin API.
    #[serde(default, skip_serializing_if = "ExperimentsPart::is_empty")]
    pub experiments: ExperimentsPart,
}

/// The segments, as one part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SegmentsPart {
    /// The document version in which they last changed (0: never).
    #[serde(default)]
    pub version: u64,
    /// The segments, in the order they were given.
    #[serde(default)]
    pub list: Vec<SegmentDefinition>,
}

/// A zone's part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZonePart {
    /// The document version in which the list last changed, or was removed.
    #[serde(default)]
    pub version: u64,
    /// The list; none: the zone is filled as its configuration says (its list removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaigns: Option<Vec<CampaignDefinition>>,
}

/// A part of the document: what a change, a draft or a restore of one part names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// The segments.
    Segments,
    /// A zone's list (or its absence: the zone filled as configured).
    Zone(&'a str),
    /// The experiments.
    Experiments,
}

impl Part<'_> {
    /// Its name: `segments` or `zone:<id>`.
    pub fn name(self) -> String {
        match self {
            Part::Segments => "segments".to_owned(),
            Part::Zone(zone) => format!("zone:{zone}"),
            Part::Experiments => "experiments".to_owned(),
        }
    }
}

impl<'a> Part<'a> {
    /// The part a name (`segments`, `zone:<id>`) names; none: the whole document.
    pub fn named(name: &'a str) -> Option<Part<'a>> {
        match name.strip_prefix("zone:") {
            Some(zone) => Some(Part::Zone(zone)),
            None if name == "segments" => Some(Part::Segments),
            None if name == "experiments" => Some(Part::Experiments),
            None => None,
        }
    }
}

impl CampaignDocument {
    /// The ETag version of the segments.
    pub fn segments_version(&self) -> u64 {
        self.segments.version
    }

    /// The ETag version of a zone's list (0: it never had one).
    pub fn zone_version(&self, zone: &str) -> u64 {
        self.zones.get(zone).map_or(0, |part| part.version)
    }

    /// The version of a part.
    pub fn part_version(&self, part: Part<'_>) -> u64 {
        match part {
            Part::Segments => self.segments_version(),
            Part::Zone(zone) => self.zone_version(zone),
            Part::Experiments => self.experiments.version,
        }
    }

    /// This document with `list` as its experiments, changed in `version`.
    pub fn with_experiments(&self, list: Vec<ExperimentDefinition>, version: u64) -> Self {
        let mut document = self.clone();
        document.experiments = ExperimentsPart {
            version,
            list,
            holdout: self.experiments.holdout.clone(),
        };
        document
    }

    /// This document with `holdout` as its holdout, changed in `version` (a change of
    /// the experiments part).
    pub fn with_holdout(
        &self,
        holdout: crate::experiment::holdout::HoldoutDefinition,
        version: u64,
    ) -> Self {
        let mut document = self.clone();
        document.experiments.version = version;
        document.experiments.holdout = Some(holdout);
        document
    }

    /// A zone's live list, when it has one.
    pub fn zone_list(&self, zone: &str) -> Option<&[CampaignDefinition]> {
        self.zones.get(zone)?.campaigns.as_deref()
    }

    /// This document with `list` as its segments, changed in `version`.
    pub fn with_segments(&self, list: Vec<SegmentDefinition>, version: u64) -> Self {
        let mut document = self.clone();
        document.segments = SegmentsPart { version, list };
        document
    }

    /// This document with `list` as `zone`'s list (none: removed, the zone filled as
    /// configured), changed in `version`.
    pub fn with_zone(
        &self,
        zone: &str,
        list: Option<Vec<CampaignDefinition>>,
        version: u64,
    ) -> Self {
        let mut document = self.clone();
        document.zones.insert(
            zone.to_owned(),
            ZonePart {
                version,
                campaigns: list,
            },
        );
        document
    }

    /// The content of `old` as a new version of this document: the parts that differ
    /// from this one move to `version`, the others keep their versions (a restore of
    /// the whole document). Experiments stay as they are: their starts, stops and ends
    /// are things that happened, not content to undo.
    pub fn restored(&self, old: &CampaignDocument, version: u64) -> Self {
        let mut document = self.clone();
        document = document.restored_part(old, Part::Segments, version);
        let zones: Vec<&String> = {
            let mut zones: Vec<&String> = self.zones.keys().chain(old.zones.keys()).collect();
            zones.sort();
            zones.dedup();
            zones
        };
        for zone in zones {
            document = document.restored_part(old, Part::Zone(zone), version);
        }
        document
    }

    /// This document with one part as it was in `old`, that part's version moved to
    /// `version` when its content differs (a restore of one part: the others, and their
    /// versions, stay as they are now).
    pub fn restored_part(&self, old: &CampaignDocument, part: Part<'_>, version: u64) -> Self {
        match part {
            Part::Segments if self.segments.list != old.segments.list => {
                self.with_segments(old.segments.list.clone(), version)
            }
            Part::Zone(zone) => {
                let (now, then) = (self.zone_list(zone), old.zone_list(zone));
                if now == then {
                    return self.clone();
                }
                self.with_zone(zone, then.map(<[_]>::to_vec), version)
            }
            Part::Segments | Part::Experiments => self.clone(),
        }
    }

    /// The document as JSON text (what the log and a state snapshot keep).
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A document read from JSON text; an unreadable one is empty.
    pub fn from_text(text: &str) -> Self {
        serde_json::from_str(text).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document() -> CampaignDocument {
        serde_json::from_value(json!({
            "segments": {"version": 2, "list": [{"id": "vip", "rule": {"orders": {"min": 3}}}]},
            "zones": {
                "HP-01": {"version": 3, "campaigns": [{"id": "a", "content": {"type": "automated", "strategy": "trending"}}]},
                "PP-01": {"version": 4, "campaigns": [{"id": "b", "enabled": false, "minItems": 2, "content": {"type": "image", "images": []}}]},
                "CP-01": {"version": 5}
            }
        }))
        .expect("a document")
    }

    #[test]
    fn the_text_reads_back_as_written() {
        let document = document();
        let text = document.to_text();
        assert_eq!(CampaignDocument::from_text(&text), document);
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            value["zones"]["PP-01"]["campaigns"][0]["minItems"],
            json!(2)
        );
        assert!(value["zones"]["CP-01"].get("campaigns").is_none());
        assert_eq!(
            CampaignDocument::from_text("not json"),
            CampaignDocument::default()
        );
    }

    #[test]
    fn a_part_restored_moves_only_its_own_version() {
        let old = document();
        let now = old
            .with_zone("HP-01", None, 6)
            .with_zone("PP-01", Some(Vec::new()), 7);
        let back = now.restored_part(&old, Part::Zone("HP-01"), 8);
        assert_eq!(back.zone_list("HP-01"), old.zone_list("HP-01"));
        assert_eq!(back.zone_version("HP-01"), 8);
        assert_eq!(back.zone_version("PP-01"), 7);
        assert_eq!(back.zone_list("PP-01"), Some(&[][..]));
        // The same content again changes no version.
        assert_eq!(back.restored_part(&old, Part::Zone("HP-01"), 9), back);
        // The whole document: every part that differs, and only those.
        let whole = now.restored(&old, 9);
        assert_eq!(whole.zone_version("HP-01"), 9);
        assert_eq!(whole.zone_version("PP-01"), 9);
        assert_eq!(whole.segments_version(), 2);
        assert_eq!(whole.zone_version("CP-01"), 5);
    }
}
