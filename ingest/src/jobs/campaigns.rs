//! Changing an account's campaigns: a change (the segments, a zone's list, or an earlier
//! version restored) becomes a new version of the whole document, checked against the
//! version the editor loaded, logged as one [`RecordKind::Campaigns`] record (fsynced
//! before the answer; in a cluster, stored by the replicated log and applied by every
//! node in the log's order) and installed: the compiled set swapped in, the document
//! added to the history.
//!
//! The record is the only way in: a restart replays it, a replica applies it, and both
//! go through [`apply`], which refuses a record whose base is no longer current, so that
//! two editors who loaded the same version cannot both win on any node. Drafts travel as
//! the same kind of record (`drafts.rs`); a change that publishes a part's draft as it
//! stands discards the draft with it.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use vitrine_engine::Account;
use vitrine_engine::campaign::{CampaignDocument, CampaignSet, CampaignVersion};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_fields::Errors;

use super::log::RecordKind;
use super::{AccountJobs, SubmitError};
use crate::campaigns::{self, Installed, Target};
use crate::jobs::replica::port::Wait;

/// How long a node waits for its own change (or draft) to come back from the replicated
/// log.
const APPLIED_WITHIN: Duration = Duration::from_secs(10);

/// What a change replaces.
#[derive(Debug, Clone, Copy)]
pub enum CampaignChange<'a> {
    /// The segments, from a `PUT` body `{"segments": [...]}`.
    Segments(&'a Value),
    /// A zone's campaign list, from a `PUT` body `{"campaigns": [...]}`.
    Zone {
        /// The zone id.
        zone: &'a str,
        /// The body.
        body: &'a Value,
    },
    /// A zone's list removed: the zone is filled as configured again.
    RemoveZone(&'a str),
    /// An experiment created, edited, started, stopped, ended or deleted.
    Experiment {
        /// Its id.
        id: &'a str,
        /// What is done to it.
        action: ExperimentAction<'a>,
    },
    /// The store-wide holdout switched on, changed or switched off.
    Holdout(HoldoutAction<'a>),
    /// An earlier version (all of it, or one part), restored as a new one.
    Restore {
        /// The version.
        version: u64,
        /// The part restored (none: the whole document).
        part: Option<RestorePart<'a>>,
    },
}

pub use crate::campaigns::experiments::Action as ExperimentAction;
pub use crate::campaigns::holdout::Action as HoldoutAction;

/// The part of the document a restore brings back.
pub use vitrine_engine::campaign::document::Part as RestorePart;

/// A change, with who makes it and the version it was made from.
#[derive(Debug, Clone, Copy)]
pub struct ChangeRequest<'a> {
    /// What changes.
    pub change: CampaignChange<'a>,
    /// The version of the part the editor loaded (`If-Match`); none: no check.
    pub if_match: Option<u64>,
    /// The label of the admin token.
    pub author: &'a str,
    /// Now.
    pub now: UnixMillis,
}

/// Why a change was refused (nothing changed).
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The body is not valid: every problem with its JSON path.
    #[error("{}", .0.joined())]
    Invalid(Errors),
    /// The part changed since the version the editor loaded.
    #[error("the {part} changed since version {given}: it is now at version {current}")]
    Conflict {
        /// What changed.
        part: String,
        /// The version given in `If-Match`.
        given: u64,
        /// The version now.
        current: u64,
    },
    /// No such version to restore.
    #[error("no version {0} in the history")]
    NoVersion(u64),
    /// The log did not take the record.
    #[error(transparent)]
    Submit(#[from] SubmitError),
    /// The record was stored but another change came first in the replicated log.
    #[error("another change of the {0} came first; load it and try again")]
    Overtaken(String),
}

/// A change made.
#[derive(Debug, Clone)]
pub struct Changed {
    /// The document's new version.
    pub version: u64,
    /// Ids the catalogue does not know (warnings).
    pub warnings: Vec<String>,
}

/// A logged change: the new version (its document with it), the part changed and the
/// draft it publishes.
struct Record {
    version: CampaignVersion,
    /// The part changed (`segments`, `zone:<id>` or `all`) and its version before.
    part: String,
    base: u64,
    /// The id of the part's draft this change publishes as it stands (discarded with
    /// it).
    draft_published: Option<u64>,
    /// The set compiled from the document, when the node that made the change applies
    /// it itself (a restart's replay and a replica compile the record's part).
    compiled: Option<CampaignSet>,
}

/// A change record as the log keeps it (JSON).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    version: u64,
    at: UnixMillis,
    #[serde(borrow)]
    author: Cow<'a, str>,
    #[serde(borrow)]
    summary: Cow<'a, str>,
    #[serde(borrow)]
    part: Cow<'a, str>,
    base: u64,
    document: Cow<'a, CampaignDocument>,
    #[serde(default)]
    draft_published: Option<u64>,
}

impl AccountJobs {
    /// The current document and its version (an empty document at 0).
    pub fn campaign_document(&self) -> (Arc<CampaignDocument>, u64) {
        self.shared.account.campaigns().document()
    }

    /// Makes a change: its part read and compiled once against the account's zones and
    /// time zone, checked against `if_match`, logged (fsynced; in a cluster stored by
    /// the replicated log and applied from it), then in force. Changes of one account
    /// are made one at a time.
    pub fn change_campaigns(&self, request: ChangeRequest<'_>) -> Result<Changed, CampaignError> {
        let _one_at_a_time = self.shared.locks.campaigns.lock();
        let account = &self.shared.account;
        let settings = account.settings();
        let target = Target {
            zones: &settings.zones,
            time_zone: &settings.time_zone,
        };
        let (document, version) = account.campaigns().document();
        let set = live_set(account, &document, version, target);
        let next = version + 1;
        let installed = Installed {
            document: &document,
            set: &set,
        };
        let (part, (new_document, new_set)) = match request.change {
            CampaignChange::Segments(body) => (
                Some(RestorePart::Segments),
                campaigns::with_segments(&document, body, next, target)
                    .map_err(CampaignError::Invalid)?,
            ),
            CampaignChange::Zone { zone, body } => (
                Some(RestorePart::Zone(zone)),
                campaigns::with_campaigns(installed, zone, body, next, target)
                    .map_err(CampaignError::Invalid)?,
            ),
            CampaignChange::RemoveZone(zone) => (
                Some(RestorePart::Zone(zone)),
                campaigns::without_campaigns(installed, zone, next),
            ),
            CampaignChange::Experiment { id, action } => (
                Some(RestorePart::Experiments),
                campaigns::with_experiment(installed, id, action, next, request.now, target)
                    .map_err(CampaignError::Invalid)?,
            ),
            CampaignChange::Holdout(action) => (
                Some(RestorePart::Experiments),
                campaigns::with_holdout(installed, action, next, request.now, target)
                    .map_err(CampaignError::Invalid)?,
            ),
            CampaignChange::Restore {
                version: wanted,
                part,
            } => {
                let restored = restoring(account, &document, wanted, part, next)?;
                let set =
                    campaigns::compile(&restored, next, target).map_err(CampaignError::Invalid)?;
                (part, (restored, set))
            }
        };
        let (part, base) = match part {
            Some(part) => (part.name(), document.part_version(part)),
            None => ("all".to_owned(), version),
        };
        if let Some(given) = request.if_match
            && given != base
        {
            return Err(CampaignError::Conflict {
                part: part_name(&part),
                given,
                current: base,
            });
        }
        let summary = match request.change {
            CampaignChange::Restore {
                version: wanted,
                part,
            } => format!(
                "restored {} of version {wanted}: {}",
                match part {
                    None => "the whole document".to_owned(),
                    Some(RestorePart::Segments) => "the segments".to_owned(),
                    Some(RestorePart::Zone(zone)) => format!("zone {zone}"),
                    Some(RestorePart::Experiments) => "the experiments".to_owned(),
                },
                campaigns::summary(&document, &new_document)
            ),
            CampaignChange::Experiment { id, action } => {
                format!("experiment {id} {}", action.name())
            }
            CampaignChange::Holdout(action) => match (
                action,
                new_document
                    .experiments
                    .holdout
                    .as_ref()
                    .and_then(|h| h.current()),
            ) {
                (HoldoutAction::Put(_), Some(period)) => format!(
                    "holdout set: {} % of shoppers see {} in every zone",
                    period.share, period.strategy
                ),
                _ => format!("holdout {}", action.name()),
            },
            _ => campaigns::summary(&document, &new_document),
        };
        let draft_published = match request.change {
            CampaignChange::Segments(body) | CampaignChange::Zone { body, .. } => {
                super::drafts::draft_published(account, &part, body)
            }
            CampaignChange::RemoveZone(_)
            | CampaignChange::Restore { .. }
            | CampaignChange::Experiment { .. }
            | CampaignChange::Holdout(_) => None,
        };
        // The warnings of the part changed, with the request's paths.
        let warnings = match request.change {
            CampaignChange::Segments(body) | CampaignChange::Zone { body, .. } => {
                campaigns::unknown_ids(body, &account.catalogue())
            }
            CampaignChange::Experiment {
                action: ExperimentAction::Put(body),
                ..
            } => campaigns::unknown_ids(body, &account.catalogue()),
            CampaignChange::RemoveZone(_)
            | CampaignChange::Experiment { .. }
            | CampaignChange::Holdout(_) => Vec::new(),
            CampaignChange::Restore { .. } => campaigns::unknown_ids(
                &serde_json::to_value(&new_document).unwrap_or_default(),
                &account.catalogue(),
            ),
        };
        let new_document = Arc::new(new_document);
        let record = Record {
            version: CampaignVersion {
                version: next,
                at: request.now,
                author: request.author.to_owned(),
                summary,
                document: Arc::clone(&new_document),
            },
            part: part.clone(),
            base,
            draft_published,
            compiled: Some(new_set),
        };
        let payload = encode(&record);
        self.log_campaign_record(
            payload,
            || {
                // Ours, or a rival's that came first in the log.
                (account.campaigns().document().1 >= next).then(|| {
                    let installed = account.campaigns().version(next).is_some_and(|v| {
                        v.author == request.author
                            && v.at == request.now
                            && *v.document == *new_document
                    });
                    if installed {
                        Ok(Changed {
                            version: next,
                            warnings: warnings.clone(),
                        })
                    } else {
                        Err(CampaignError::Overtaken(part_name(&part)))
                    }
                })
            },
            || {
                apply_record(account, record);
                Ok(Changed {
                    version: next,
                    warnings: warnings.clone(),
                })
            },
        )?
    }

    /// Logs a campaign record (a change or a draft) and answers once it is in force: in
    /// a cluster, published and applied when it comes back from the replicated log,
    /// `settled` saying whether it has and what came of it (within [`APPLIED_WITHIN`]);
    /// alone, appended and fsynced, then applied by `apply`.
    pub(super) fn log_campaign_record<T>(
        &self,
        payload: Vec<u8>,
        settled: impl Fn() -> Option<T>,
        apply: impl FnOnce() -> T,
    ) -> Result<T, SubmitError> {
        if self.is_replicated() {
            self.admit(Wait::Answer)?;
            self.publish(RecordKind::Campaigns, || payload, Wait::Answer)?;
            let deadline = Instant::now() + APPLIED_WITHIN;
            loop {
                if let Some(outcome) = settled() {
                    return Ok(outcome);
                }
                if Instant::now() >= deadline {
                    return Err(SubmitError::Replication(
                        super::ReplicationError::Unconfirmed(APPLIED_WITHIN),
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.shared
            .wal
            .append_durable(RecordKind::Campaigns.code(), payload)?;
        Ok(apply())
    }
}

impl AccountJobs {
    /// What restoring `part` of `version` (or all of it) would change in the document
    /// now: the live document and the one the restore would make, without making it.
    pub fn restore_preview(
        &self,
        version: u64,
        part: Option<RestorePart<'_>>,
    ) -> Result<(Arc<CampaignDocument>, CampaignDocument), CampaignError> {
        let account = &self.shared.account;
        let (document, current) = account.campaigns().document();
        let restored = restoring(account, &document, version, part, current + 1)?;
        Ok((document, restored))
    }
}

/// The set in force, compiled from `document` (compiled again when it is not: a state
/// snapshot restored and not yet compiled).
fn live_set(
    account: &Account,
    document: &CampaignDocument,
    version: u64,
    target: Target<'_>,
) -> Arc<CampaignSet> {
    let set = account.campaigns().compiled();
    if set.version == version {
        return set;
    }
    Arc::new(campaigns::compile_parts(document, version, target).0)
}

/// The document a restore of `part` of `wanted` (or all of it) makes from `document`,
/// as version `next`.
fn restoring(
    account: &Account,
    document: &CampaignDocument,
    wanted: u64,
    part: Option<RestorePart<'_>>,
    next: u64,
) -> Result<CampaignDocument, CampaignError> {
    let old = account
        .campaigns()
        .version(wanted)
        .ok_or(CampaignError::NoVersion(wanted))?;
    Ok(match part {
        None => document.restored(&old.document, next),
        Some(part) => document.restored_part(&old.document, part, next),
    })
}

fn part_name(part: &str) -> String {
    match part.strip_prefix("zone:") {
        Some(zone) => format!("campaigns of zone {zone}"),
        None if part == "segments" => "segments".to_owned(),
        None if part == "experiments" => "experiments".to_owned(),
        None => "campaign document".to_owned(),
    }
}

fn encode(record: &Record) -> Vec<u8> {
    serde_json::to_vec(&Wire {
        version: record.version.version,
        at: record.version.at,
        author: Cow::Borrowed(&record.version.author),
        summary: Cow::Borrowed(&record.version.summary),
        part: Cow::Borrowed(&record.part),
        base: record.base,
        document: Cow::Borrowed(&record.version.document),
        draft_published: record.draft_published,
    })
    .unwrap_or_default()
}

fn decode(value: &Value) -> Option<Record> {
    let wire = Wire::deserialize(value).ok()?;
    Some(Record {
        version: CampaignVersion {
            version: wire.version,
            at: wire.at,
            author: wire.author.into_owned(),
            summary: wire.summary.into_owned(),
            document: Arc::new(wire.document.into_owned()),
        },
        part: wire.part.into_owned(),
        base: wire.base,
        draft_published: wire.draft_published,
        compiled: None,
    })
}

/// Applies a logged campaign record (a restart's replay, a replica's record): a draft
/// saved or discarded (see `drafts`), or a change, installed when it is the next
/// version and its part is still at its base; otherwise nothing (another change came
/// first). Returns whether it was applied.
pub(super) fn apply(account: &Account, payload: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<Value>(payload) else {
        return false;
    };
    if let Some(draft) = super::drafts::decode(&value) {
        return account.campaigns().apply_draft(draft);
    }
    match decode(&value) {
        Some(record) => apply_record(account, record),
        None => false,
    }
}

fn apply_record(account: &Account, record: Record) -> bool {
    let (document, version) = account.campaigns().document();
    if record.version.version != version + 1 {
        return false;
    }
    let part = RestorePart::named(&record.part);
    let base = part.map_or(version, |part| document.part_version(part));
    if base != record.base {
        return false;
    }
    let set = match record.compiled {
        Some(set) => set,
        None => {
            // The record's part compiled, the others kept from the set in force when it
            // was compiled from the document before this one.
            let settings = account.settings();
            let target = Target {
                zones: &settings.zones,
                time_zone: &settings.time_zone,
            };
            let previous = account.campaigns().compiled();
            let part = part.filter(|_| previous.version == version);
            campaigns::compile_change(
                &record.version.document,
                &previous,
                part,
                record.version.version,
                target,
            )
        }
    };
    let (at, draft_published) = (record.version.at, record.draft_published);
    let installed = account.campaigns().install(record.version, set);
    if installed && let Some(draft) = draft_published {
        super::drafts::published(account, &record.part, draft, at);
    }
    installed
}

/// Compiles the latest version of the history again (after a state snapshot restored
/// it, or a reload changed the zones or the time zone): a part that no longer compiles
/// is left out, so that the others still apply.
pub fn recompile(account: &Account) {
    let (document, version) = account.campaigns().document();
    if version == 0 {
        return;
    }
    let settings = account.settings();
    let target = Target {
        zones: &settings.zones,
        time_zone: &settings.time_zone,
    };
    account
        .campaigns()
        .recompiled(campaigns::compile_parts(&document, version, target).0);
}
