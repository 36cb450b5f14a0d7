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

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vitrine_engine::Account;
use vitrine_engine::campaign::{CampaignSet, CampaignVersion};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_fields::Errors;

use super::log::RecordKind;
use super::replication::Wait;
use super::{AccountJobs, SubmitError};
use crate::campaigns::{self, Target};

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
    /// An earlier version (all of it, or one part), restored as a new one.
    Restore {
        /// The version.
        version: u64,
        /// The part restored (none: the whole document).
        part: Option<RestorePart<'a>>,
    },
}

/// The part of the document a restore brings back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestorePart<'a> {
    /// The segments.
    Segments,
    /// A zone's list (or its absence: the zone filled as configured).
    Zone(&'a str),
}

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

/// A logged change.
struct Record {
    version: CampaignVersion,
    /// The part changed (`segments`, `zone:<id>` or `all`) and its version before.
    part: String,
    base: u64,
    document: Value,
    /// The id of the part's draft this change publishes as it stands (discarded with
    /// it).
    draft_published: Option<u64>,
}

impl AccountJobs {
    /// The current document and its version (an empty document at 0).
    pub fn campaign_document(&self) -> (Value, u64) {
        current(&self.shared.account)
    }

    /// Makes a change: validated whole against the account's zones and time zone,
    /// checked against `if_match`, logged (fsynced; in a cluster stored by the
    /// replicated log and applied from it), then in force. Changes of one account are
    /// made one at a time.
    pub fn change_campaigns(&self, request: ChangeRequest<'_>) -> Result<Changed, CampaignError> {
        let _one_at_a_time = self.shared.locks.campaigns.lock();
        let account = &self.shared.account;
        let settings = account.settings();
        let target = Target {
            zones: &settings.zones,
            time_zone: &settings.time_zone,
        };
        let (document, version) = current(account);
        let next = version + 1;
        let (part, base, new_document) = match request.change {
            CampaignChange::Segments(body) => {
                let (doc, _) = campaigns::with_segments(&document, body, next, target)
                    .map_err(CampaignError::Invalid)?;
                (
                    "segments".to_owned(),
                    campaigns::segments_version(&document),
                    doc,
                )
            }
            CampaignChange::Zone { zone, body } => {
                let (doc, _) = campaigns::with_campaigns(&document, zone, body, next, target)
                    .map_err(CampaignError::Invalid)?;
                (
                    format!("zone:{zone}"),
                    campaigns::zone_version(&document, zone),
                    doc,
                )
            }
            CampaignChange::RemoveZone(zone) => {
                let (doc, _) = campaigns::without_campaigns(&document, zone, next, target)
                    .map_err(CampaignError::Invalid)?;
                (
                    format!("zone:{zone}"),
                    campaigns::zone_version(&document, zone),
                    doc,
                )
            }
            CampaignChange::Restore {
                version: wanted,
                part,
            } => {
                let doc = restoring(account, &document, wanted, part, next)?;
                campaigns::compile(&doc, next, target).map_err(CampaignError::Invalid)?;
                match part {
                    None => ("all".to_owned(), version, doc),
                    Some(RestorePart::Segments) => (
                        "segments".to_owned(),
                        campaigns::segments_version(&document),
                        doc,
                    ),
                    Some(RestorePart::Zone(zone)) => (
                        format!("zone:{zone}"),
                        campaigns::zone_version(&document, zone),
                        doc,
                    ),
                }
            }
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
                },
                campaigns::summary(&document, &new_document)
            ),
            _ => campaigns::summary(&document, &new_document),
        };
        let draft_published = match request.change {
            CampaignChange::Segments(body) | CampaignChange::Zone { body, .. } => {
                super::drafts::draft_published(account, &part, body)
            }
            CampaignChange::RemoveZone(_) | CampaignChange::Restore { .. } => None,
        };
        // The warnings of the part changed, with the request's paths.
        let warnings = match request.change {
            CampaignChange::Segments(body) | CampaignChange::Zone { body, .. } => {
                campaigns::unknown_ids(body, &account.catalogue())
            }
            CampaignChange::RemoveZone(_) => Vec::new(),
            CampaignChange::Restore { .. } => {
                campaigns::unknown_ids(&new_document, &account.catalogue())
            }
        };
        let record = Record {
            version: CampaignVersion {
                version: next,
                at: request.now,
                author: request.author.to_owned(),
                summary,
                document: String::new(),
            },
            part: part.clone(),
            base,
            document: new_document,
            draft_published,
        };
        let payload = encode(&record);
        let document_text = record.document.to_string();
        self.log_campaign_record(
            payload,
            || {
                // Ours, or a rival's that came first in the log.
                (current(account).1 >= next).then(|| {
                    let installed = account.campaign_history().get(next).is_some_and(|v| {
                        v.author == request.author
                            && v.at == request.now
                            && v.document == document_text
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
    /// now: the document it would make, without making it.
    pub fn restore_preview(
        &self,
        version: u64,
        part: Option<RestorePart<'_>>,
    ) -> Result<(Value, Value), CampaignError> {
        let account = &self.shared.account;
        let (document, current) = current(account);
        let restored = restoring(account, &document, version, part, current + 1)?;
        Ok((document, restored))
    }
}

/// The document a restore of `part` of `wanted` (or all of it) makes from `document`,
/// as version `next`.
fn restoring(
    account: &Account,
    document: &Value,
    wanted: u64,
    part: Option<RestorePart<'_>>,
    next: u64,
) -> Result<Value, CampaignError> {
    let history = account.campaign_history();
    let old = history
        .get(wanted)
        .ok_or(CampaignError::NoVersion(wanted))?;
    let old: Value =
        serde_json::from_str(&old.document).map_err(|_| CampaignError::NoVersion(wanted))?;
    Ok(match part {
        None => campaigns::restored(document, &old, next),
        Some(RestorePart::Segments) => {
            campaigns::restored_part(document, &old, &["segments"], next)
        }
        Some(RestorePart::Zone(zone)) => {
            campaigns::restored_part(document, &old, &["zones", zone], next)
        }
    })
}

fn part_name(part: &str) -> String {
    match part.strip_prefix("zone:") {
        Some(zone) => format!("campaigns of zone {zone}"),
        None if part == "segments" => "segments".to_owned(),
        None => "campaign document".to_owned(),
    }
}

/// The current document and its version.
fn current(account: &Account) -> (Value, u64) {
    let history = account.campaign_history();
    match history.latest() {
        Some(latest) => (
            serde_json::from_str(&latest.document).unwrap_or_else(|_| campaigns::empty_document()),
            latest.version,
        ),
        None => (campaigns::empty_document(), 0),
    }
}

fn encode(record: &Record) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "version": record.version.version,
        "at": record.version.at,
        "author": record.version.author,
        "summary": record.version.summary,
        "part": record.part,
        "base": record.base,
        "document": record.document,
        "draftPublished": record.draft_published,
    }))
    .unwrap_or_default()
}

fn decode(value: &Value) -> Option<Record> {
    Some(Record {
        version: CampaignVersion {
            version: value.get("version")?.as_u64()?,
            at: value.get("at")?.as_i64()?,
            author: value.get("author")?.as_str()?.to_owned(),
            summary: value.get("summary")?.as_str()?.to_owned(),
            document: String::new(),
        },
        part: value.get("part")?.as_str()?.to_owned(),
        base: value.get("base")?.as_u64()?,
        document: value.get("document")?.clone(),
        draft_published: value.get("draftPublished").and_then(Value::as_u64),
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
        return account.apply_campaign_draft(draft);
    }
    match decode(&value) {
        Some(record) => apply_record(account, record),
        None => false,
    }
}

fn apply_record(account: &Account, record: Record) -> bool {
    let (document, version) = current(account);
    if record.version.version != version + 1 {
        return false;
    }
    let base = match record.part.strip_prefix("zone:") {
        Some(zone) => campaigns::zone_version(&document, zone),
        None if record.part == "segments" => campaigns::segments_version(&document),
        None => version,
    };
    if base != record.base {
        return false;
    }
    let set = compiled(account, &record.document, record.version.version);
    let (part, at, draft_published) = (record.part, record.version.at, record.draft_published);
    let version = CampaignVersion {
        document: record.document.to_string(),
        ..record.version
    };
    let installed = account.install_campaigns(version, set);
    if installed && let Some(draft) = draft_published {
        super::drafts::published(account, &part, draft, at);
    }
    installed
}

/// The set compiled from `document` against the account's settings now: a zone that
/// is no longer configured (or whose list no longer compiles) is left out, so that the
/// others still apply.
fn compiled(account: &Account, document: &Value, version: u64) -> CampaignSet {
    let settings = account.settings();
    let target = Target {
        zones: &settings.zones,
        time_zone: &settings.time_zone,
    };
    if let Ok(set) = campaigns::compile(document, version, target) {
        return set;
    }
    let mut kept = document.clone();
    let zones: Vec<String> = document
        .get("zones")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(map) = kept.get_mut("zones").and_then(Value::as_object_mut) {
        map.clear();
    }
    for zone in zones {
        let mut one = kept.clone();
        let part = campaigns::at(document, &["zones", &zone])
            .cloned()
            .unwrap_or_default();
        campaigns::put(&mut one, &["zones", &zone], part);
        if campaigns::compile(&one, version, target).is_ok() {
            kept = one;
        }
    }
    campaigns::compile(&kept, version, target).unwrap_or_default()
}

/// Compiles the latest version of the history again (after a state snapshot restored
/// it, or a reload changed the zones or the time zone).
pub fn recompile(account: &Account) {
    let (document, version) = current(account);
    if version == 0 {
        return;
    }
    account.recompiled_campaigns(compiled(account, &document, version));
}
