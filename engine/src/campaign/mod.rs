//! Campaigns: who sees what, where and when. A zone holds an ordered list of
//! [`Campaign`]s, each an audience (a [`segment`]), a [`schedule`] and [`content`]; for
//! each request the first campaign the shopper qualifies for whose content has enough
//! items is shown ([`choose`]).
//!
//! An account's campaigns are one [`CampaignSet`], compiled from the typed
//! [`CampaignDocument`] (by `vitrine-ingest`, which reads the rule, schedule and content
//! grammar) and swapped in at once: a request loads one set and uses it throughout. A zone without a list of its own is
//! filled as its configuration says, which is the same as one automated campaign for
//! everyone. The set's versions as documents, with who changed what and when, are the
//! [`CampaignHistory`]; it goes into state snapshots, the set is compiled from its
//! latest version.
//!
//! Files: `document.rs` (the document, its parts and their versions), `draft.rs` (a part's list as an editor left it, not published), `segment.rs`
//! (rules and what they read of the shopper), `store.rs` (an account's campaigns as it
//! holds them: the compiled set, the history, the drafts), `request.rs` (what a
//! request says of where it comes from, and what a visitor keeps of its latest one), `schedule.rs` (time
//! windows, days and hours in the account's time zone), `content.rs` (content types,
//! filters, boosts, pins); the custom recommender's fill is `recommend::custom`.

pub mod audiences;
pub mod content;
pub mod definition;
pub mod document;
pub mod draft;
pub mod request;
pub mod schedule;
pub mod segment;
pub mod store;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use compact_str::CompactString;

use crate::catalogue::UnixMillis;
use crate::recommend::{Context, NoTrace, Trace, ZoneItems, fill_custom, fill_zone_traced};
use content::{Content, Placement};
use schedule::{Outside, Schedule};
use segment::{Condition, Reads, Shopper};

pub use document::CampaignDocument;
pub use request::{DeviceClass, LatestRequest, RequestContext, UtmParameter};

/// A named segment of an account.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Its id, which campaigns name.
    pub id: String,
    /// Its name for people.
    pub name: String,
    /// Its rule.
    pub rule: Condition,
}

/// A campaign of a zone.
#[derive(Debug, Clone, PartialEq)]
pub struct Campaign {
    /// Its id, unique in the zone.
    pub id: String,
    /// The variant name analytics count its answers under (`campaign:<id>`, see
    /// `account::campaign_variant`), made once.
    pub variant: CompactString,
    /// Its name for people.
    pub name: String,
    /// The zone's title while it is shown (none: the zone's configured title).
    pub title: Option<String>,
    /// A paused campaign is skipped.
    pub enabled: bool,
    /// Its audience: a segment's position in [`CampaignSet::segments`]; none: everyone.
    pub segment: Option<usize>,
    /// When it runs; none: always.
    pub schedule: Option<Schedule>,
    /// What it shows.
    pub content: Content,
    /// Fewer product items than this and it is skipped (product content only).
    pub min_items: usize,
}

/// A zone's ordered campaigns.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneCampaigns {
    /// The zone id.
    pub zone: String,
    /// [`zone_key`] of the zone id, compared before the id itself.
    pub key: u64,
    /// The version of the document in which the list last changed.
    pub version: u64,
    /// The campaigns, in the order they are tried.
    pub campaigns: Vec<Campaign>,
    /// What its segments read.
    pub reads: Reads,
}

/// A hash of a zone id (FNV-1a), so that finding a zone's list on the request path
/// compares integers before it compares ids.
pub fn zone_key(zone: &str) -> u64 {
    zone.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// An account's campaigns, compiled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CampaignSet {
    /// The document version it was compiled from (0: none was ever stored).
    pub version: u64,
    /// The account's segments.
    pub segments: Vec<Segment>,
    /// The zones that have a list of their own, then the lists of experiments'
    /// variants (under names no zone has, `<zone>#<experiment>/<variant>`: found by
    /// [`crate::experiment::Variant::list`], never by a zone's id).
    pub zones: Vec<ZoneCampaigns>,
    /// The experiments written in the console or the admin API that are running (the
    /// one of a zone is found by [`CampaignSet::experiment`]).
    pub experiments: Vec<crate::experiment::Experiment>,
    /// The store-wide holdout, while it is on.
    pub holdout: Option<crate::experiment::holdout::Holdout>,
}

impl CampaignSet {
    /// The list of a zone, when it has one.
    pub fn zone(&self, zone: &str) -> Option<&ZoneCampaigns> {
        self.zone_at(zone).map(|(_, list)| list)
    }

    /// The list of a zone with its position in [`CampaignSet::zones`], when it has one.
    pub fn zone_at(&self, zone: &str) -> Option<(usize, &ZoneCampaigns)> {
        let key = zone_key(zone);
        self.zones
            .iter()
            .enumerate()
            .find(|(_, z)| z.key == key && z.zone == zone)
    }

    /// The experiment running on `zone` at `now`, when one does.
    pub fn experiment(
        &self,
        zone: &str,
        now: UnixMillis,
    ) -> Option<&crate::experiment::Experiment> {
        self.experiments
            .iter()
            .find(|e| e.zone == zone && e.runs_at(now))
    }

    /// A segment by id.
    pub fn segment(&self, id: &str) -> Option<(usize, &Segment)> {
        self.segments.iter().enumerate().find(|(_, s)| s.id == id)
    }
}

/// Why a campaign was not shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// It is paused.
    Paused,
    /// Outside its schedule.
    Schedule(Outside),
    /// The shopper is not in its segment.
    Segment,
    /// Its content had fewer items than its minimum.
    TooFewItems {
        /// Items it had.
        had: usize,
        /// Items it needs.
        min: usize,
    },
    /// An earlier campaign was shown.
    NotReached,
}

impl Skipped {
    /// The reason in words.
    pub fn reason(&self) -> String {
        match self {
            Skipped::Paused => "it is paused".to_owned(),
            Skipped::Schedule(outside) => outside.reason().to_owned(),
            Skipped::Segment => "the shopper is not in its segment".to_owned(),
            Skipped::TooFewItems { had, min } => {
                format!("too few items: {had}, at least {min} wanted")
            }
            Skipped::NotReached => "an earlier campaign was shown".to_owned(),
        }
    }
}

/// What a zone's campaigns came to for one request.
#[derive(Debug)]
pub struct Chosen {
    /// The campaign shown (its position in the list); none: no campaign qualified, and
    /// the zone is empty.
    pub campaign: Option<usize>,
    /// Its items (product content).
    pub items: ZoneItems,
}

/// What explaining a zone's campaigns records besides each item's evidence.
pub trait CampaignTrace: Trace {
    /// The campaign at `position` was skipped.
    fn skipped(&mut self, _position: usize, _why: Skipped) {}
    /// An item of custom content was placed by this rule.
    fn placed(&mut self, _idx: crate::catalogue::ProductIdx, _how: Placement) {}
    /// A new campaign is being filled: what was recorded for the last one is dropped.
    fn restart(&mut self) {}
}

impl CampaignTrace for NoTrace {}

/// Tries a zone's campaigns in order for `shopper`, and fills the first it qualifies for
/// whose content has enough items (`judged`: the segments this request has judged so
/// far, each judged once).
pub fn choose<T: CampaignTrace>(
    set: &CampaignSet,
    list: &ZoneCampaigns,
    shopper: &Shopper<'_>,
    judged: &mut Judged,
    ctx: &Context<'_>,
    trace: &mut T,
) -> Chosen {
    for (position, campaign) in list.campaigns.iter().enumerate() {
        if let Err(why) = qualifies(set, campaign, shopper, judged, ctx.now) {
            trace.skipped(position, why);
            continue;
        }
        trace.restart();
        let items = match &campaign.content {
            Content::Automated(spec) | Content::Html { spec, .. } => {
                fill_zone_traced(spec, ctx, trace)
            }
            Content::Custom(custom) => fill_custom(custom, ctx, trace),
            Content::Image(_) => ZoneItems::new(),
        };
        let min = match campaign.content {
            Content::Image(_) => 0,
            _ => campaign.min_items,
        };
        if items.len() < min {
            trace.skipped(
                position,
                Skipped::TooFewItems {
                    had: items.len(),
                    min,
                },
            );
            continue;
        }
        for later in position + 1..list.campaigns.len() {
            trace.skipped(later, Skipped::NotReached);
        }
        return Chosen {
            campaign: Some(position),
            items,
        };
    }
    trace.restart();
    Chosen {
        campaign: None,
        items: ZoneItems::new(),
    }
}

/// Whether `shopper` qualifies for `campaign` at `now`: enabled, in its schedule, in its
/// segment.
#[inline]
fn qualifies(
    set: &CampaignSet,
    campaign: &Campaign,
    shopper: &Shopper<'_>,
    judged: &mut Judged,
    now: UnixMillis,
) -> Result<(), Skipped> {
    if !campaign.enabled {
        return Err(Skipped::Paused);
    }
    if let Some(schedule) = &campaign.schedule {
        schedule.runs_at(now).map_err(Skipped::Schedule)?;
    }
    if let Some(at) = campaign.segment
        && !judged.holds(at, || {
            set.segments
                .get(at)
                .is_some_and(|segment| segment.rule.holds(shopper))
        })
    {
        return Err(Skipped::Segment);
    }
    Ok(())
}

/// The segments judged for one request, so that a segment several zones' campaigns
/// name is judged once: a bit per segment judged, and one per segment matched, inline
/// for 128 segments.
#[derive(Debug, Default)]
pub struct Judged {
    /// One bit per segment: judged yet.
    known: smallvec::SmallVec<[u64; 2]>,
    /// One bit per segment: matched (when judged).
    matched: smallvec::SmallVec<[u64; 2]>,
}

impl Judged {
    /// Whether segment `at` holds, judged by `judge` the first time it is asked.
    #[inline]
    fn holds(&mut self, at: usize, judge: impl FnOnce() -> bool) -> bool {
        let (word, bit) = (at / 64, 1_u64 << (at % 64));
        if let (Some(known), Some(matched)) = (self.known.get(word), self.matched.get(word))
            && known & bit != 0
        {
            return matched & bit != 0;
        }
        let holds = judge();
        self.remember(word, bit, holds);
        holds
    }

    /// Records a segment's verdict.
    #[cold]
    fn remember(&mut self, word: usize, bit: u64, holds: bool) {
        if self.known.len() <= word {
            self.known.resize(word + 1, 0);
            self.matched.resize(word + 1, 0);
        }
        if let (Some(known), Some(matched)) = (self.known.get_mut(word), self.matched.get_mut(word))
        {
            *known |= bit;
            if holds {
                *matched |= bit;
            }
        }
    }
}

/// One version of an account's campaign document, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignVersion {
    /// Its number (from 1).
    pub version: u64,
    /// When it was made.
    pub at: UnixMillis,
    /// The label of the admin token that made it.
    pub author: String,
    /// What changed, in words.
    pub summary: String,
    /// The whole document.
    pub document: Arc<CampaignDocument>,
}

/// Versions kept in the audit log (the oldest are dropped).
pub const MAX_VERSIONS_KEPT: usize = 1_000;

/// An account's campaign documents, oldest first, at most [`MAX_VERSIONS_KEPT`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CampaignHistory {
    /// The versions, oldest first.
    pub versions: Vec<CampaignVersion>,
}

/// A [`CampaignVersion`] as a state snapshot keeps it: the document as JSON text.
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct StoredCampaignVersion {
    /// Its number.
    pub version: u64,
    /// When it was made.
    pub at: UnixMillis,
    /// Who made it.
    pub author: String,
    /// What changed, in words.
    pub summary: String,
    /// The whole document, as JSON.
    pub document: String,
}

/// A [`CampaignHistory`] as a state snapshot keeps it.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct StoredCampaignHistory {
    /// The versions, oldest first.
    pub versions: Vec<StoredCampaignVersion>,
}

impl From<&CampaignHistory> for StoredCampaignHistory {
    fn from(history: &CampaignHistory) -> Self {
        let versions = history
            .versions
            .iter()
            .map(|v| StoredCampaignVersion {
                version: v.version,
                at: v.at,
                author: v.author.clone(),
                summary: v.summary.clone(),
                document: v.document.to_text(),
            })
            .collect();
        StoredCampaignHistory { versions }
    }
}

impl From<StoredCampaignHistory> for CampaignHistory {
    /// Each document read once (one that does not read is empty).
    fn from(stored: StoredCampaignHistory) -> Self {
        let versions = stored
            .versions
            .into_iter()
            .map(|v| CampaignVersion {
                document: Arc::new(CampaignDocument::from_text(&v.document)),
                version: v.version,
                at: v.at,
                author: v.author,
                summary: v.summary,
            })
            .collect();
        CampaignHistory { versions }
    }
}

impl CampaignHistory {
    /// The latest version.
    pub fn latest(&self) -> Option<&CampaignVersion> {
        self.versions.last()
    }

    /// A version by number.
    pub fn get(&self, version: u64) -> Option<&CampaignVersion> {
        self.versions.iter().find(|v| v.version == version)
    }

    /// Adds a version (the oldest dropped past the bound). A version not after the
    /// latest is not added (a record applied twice), and `false` is returned.
    pub fn push(&mut self, version: CampaignVersion) -> bool {
        if self
            .latest()
            .is_some_and(|latest| latest.version >= version.version)
        {
            return false;
        }
        if self.versions.len() >= MAX_VERSIONS_KEPT {
            self.versions.remove(0);
        }
        self.versions.push(version);
        true
    }
}
