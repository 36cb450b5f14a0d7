//! Experiments as merchandisers write them from the console or the admin API: kept in
//! the campaign document's `experiments` part (versioned, in the audit log, replicated
//! and restored with it), compiled by `vitrine-ingest` into [`super::Experiment`]s.
//!
//! ```json
//! {"id": "hp-spring", "name": "Spring list against trending", "zone": "HP-01",
//!  "status": "running", "runs": [{"from": 1764000000000}],
//!  "variants": [{"name": "A", "share": 50, "kind": "live"},
//!               {"name": "B", "share": 50, "kind": "draft", "campaigns": [...]}]}
//! ```
//!
//! A variant shows the zone's live campaign list (`live`: the zone as configured when it
//! has none), a list of its own (`draft`), an automated strategy (`strategy`, with
//! `fallback` and `count`), or nothing personalized (`none`: the zone filled by a
//! non-personal strategy, `trending` unless `strategy` names another). The first
//! variant is the control.

use serde::{Deserialize, Serialize};

use crate::campaign::definition::CampaignDefinition;
use crate::catalogue::UnixMillis;

/// Where an experiment is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Written, never started: it may still be edited or deleted.
    Draft,
    /// Assigning shoppers now.
    Running,
    /// Paused: the zone is filled as without it; it may start again, with the same
    /// assignment.
    Stopped,
    /// Over for good: its results stay, the zone is free for another.
    Ended,
}

impl Status {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Running => "running",
            Status::Stopped => "stopped",
            Status::Ended => "ended",
        }
    }
}

/// What a variant shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VariantKind {
    /// The zone's live campaign list (the zone as configured when it has none).
    Live,
    /// A campaign list of its own.
    Draft,
    /// An automated strategy.
    Strategy,
    /// Nothing personalized: a non-personal strategy (`trending` by default).
    None,
}

impl VariantKind {
    /// Every kind's name, as the API spells it.
    pub const NAMES: [&'static str; 4] = ["live", "draft", "strategy", "none"];
}

/// One period the experiment ran: from its start to its stop (none: running).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// When it started (Unix milliseconds).
    pub from: UnixMillis,
    /// When it stopped or ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<UnixMillis>,
}

/// An experiment as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentDefinition {
    /// Its id (part of the hash that assigns shoppers).
    pub id: String,
    /// Its name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The zone it splits.
    pub zone: String,
    /// Where it is in its life.
    pub status: Status,
    /// When it ran, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<Run>,
    /// Its variants, the control first.
    pub variants: Vec<VariantDefinition>,
}

/// A variant as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantDefinition {
    /// Its name, unique in the experiment.
    pub name: String,
    /// Its share of shoppers, relative to the others' (1 to 100).
    pub share: u32,
    /// What it shows.
    pub kind: VariantKind,
    /// `strategy`: the strategy; `none`: a non-personal one (default `trending`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// `strategy`: strategies tried after it, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Vec<String>>,
    /// `strategy` and `none`: how many products (default: the zone's count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// `draft`: its campaign list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaigns: Option<Vec<CampaignDefinition>>,
}

impl ExperimentDefinition {
    /// The name analytics count a variant's answers under: `<experiment id>/<variant>`
    /// (apart from every other experiment's, past or present, on the zone).
    pub fn counted_as(&self, variant: &str) -> String {
        format!("{}/{variant}", self.id)
    }

    /// When it first started, if it ever did.
    pub fn first_start(&self) -> Option<UnixMillis> {
        self.runs.first().map(|run| run.from)
    }

    /// When it last stopped, while it is not running.
    pub fn last_stop(&self) -> Option<UnixMillis> {
        match self.status {
            Status::Running => None,
            _ => self.runs.last().and_then(|run| run.to),
        }
    }
}

/// The experiments, as one part of the campaign document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExperimentsPart {
    /// The document version in which they last changed (0: never).
    #[serde(default)]
    pub version: u64,
    /// The experiments, in the order they were created.
    #[serde(default)]
    pub list: Vec<ExperimentDefinition>,
    /// The store-wide holdout (none: never switched on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<super::holdout::HoldoutDefinition>,
}

impl ExperimentsPart {
    /// Whether no experiment was ever written (the part is then left out of the text,
    /// which stays as documents without experiments had it).
    pub fn is_empty(&self) -> bool {
        self.version == 0 && self.list.is_empty() && self.holdout.is_none()
    }
}
