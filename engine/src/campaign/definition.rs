//! A segment and a campaign as written: what the campaign document's parts
//! ([`super::document`]) list, and what an experiment's draft variant
//! ([`crate::experiment::definition`]) holds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A segment as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentDefinition {
    /// Its id, which campaigns name.
    pub id: String,
    /// Its name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its rule (the condition grammar).
    pub rule: Value,
}

/// A campaign as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CampaignDefinition {
    /// Its id, unique in the zone.
    pub id: String,
    /// Its name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The zone's title while it is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `false`: paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The id of its segment; none: everyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    /// When it runs (the schedule grammar); none: always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Value>,
    /// Fewer items than this and it is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// What it shows (the content grammar).
    pub content: Value,
}

impl CampaignDefinition {
    /// Whether it runs (not paused).
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }
}
