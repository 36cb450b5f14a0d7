//! Drafts of the campaign document's parts (see [`vitrine_engine::campaign::draft`]):
//! saved and discarded by editors through the admin API. A save or a discard is logged
//! as a campaign record (`{"draft": {...}}`, [`RecordKind::Campaigns`]) and fsynced
//! before its answer, exactly as a published change is: a restart replays it, and in a
//! cluster it is stored by the replicated log and applied by every node in the log's
//! order, so that a draft is on every node or on none. A draft is not validated as a
//! change is (an editor may leave a list half made); its shape and size are.

use serde_json::{Value, json};
use vitrine_engine::Account;
use vitrine_engine::campaign::draft::{Draft, Drafts, SEGMENTS_PART, zone_part};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_fields::Errors;

use super::{AccountJobs, SubmitError};
use crate::campaigns::{MAX_CAMPAIGNS, MAX_SEGMENTS};

/// The largest draft, as JSON text.
pub const MAX_DRAFT_BYTES: usize = 1024 * 1024;

/// The part a draft is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftPart<'a> {
    /// The segments: a body `{"segments": [...]}`.
    Segments,
    /// A zone's campaign list: a body `{"campaigns": [...]}`.
    Zone(&'a str),
}

impl DraftPart<'_> {
    /// Its name in the document (`segments`, `zone:<id>`).
    pub fn name(self) -> String {
        match self {
            DraftPart::Segments => SEGMENTS_PART.to_owned(),
            DraftPart::Zone(zone) => zone_part(zone),
        }
    }

    /// The member its body holds, and the most entries it may have.
    fn member(self) -> (&'static str, usize) {
        match self {
            DraftPart::Segments => ("segments", MAX_SEGMENTS),
            DraftPart::Zone(_) => ("campaigns", MAX_CAMPAIGNS),
        }
    }
}

/// A draft saved (`body`) or discarded (`None`), with who and when.
#[derive(Debug, Clone, Copy)]
pub struct DraftRequest<'a> {
    /// Its part.
    pub part: DraftPart<'a>,
    /// The body; none: discard the part's draft.
    pub body: Option<&'a Value>,
    /// The label of the admin token.
    pub author: &'a str,
    /// Now.
    pub now: UnixMillis,
}

/// Why a draft was not saved (nothing changed).
#[derive(Debug, thiserror::Error)]
pub enum DraftError {
    /// The body is not a draft: every problem with its JSON path.
    #[error("{}", .0.joined())]
    Invalid(Errors),
    /// The log did not take the record.
    #[error(transparent)]
    Submit(#[from] SubmitError),
}

impl AccountJobs {
    /// The account's drafts.
    pub fn campaign_drafts(&self) -> Drafts {
        self.shared.account.campaigns().drafts()
    }

    /// Saves or discards a part's draft: logged (fsynced; in a cluster stored by the
    /// replicated log and applied from it), then in force. The part's entry after it:
    /// the draft saved, or the discard (or a later record of another editor's that came
    /// first in a cluster's log).
    pub fn save_draft(&self, request: DraftRequest<'_>) -> Result<Draft, DraftError> {
        let _one_at_a_time = self.shared.locks.campaigns.lock();
        let account = &self.shared.account;
        let body = match request.body {
            Some(body) => Some(checked(request.part, body).map_err(DraftError::Invalid)?),
            None => None,
        };
        let (document, _) = self.campaign_document();
        let part = request.part.name();
        let based_on = match request.part {
            DraftPart::Segments => document.segments_version(),
            DraftPart::Zone(zone) => document.zone_version(zone),
        };
        let draft = Draft {
            part: part.clone(),
            body,
            author: request.author.to_owned(),
            // Never before the part's entry, so that it wins on every node.
            at: account
                .campaigns()
                .draft(&part)
                .map_or(request.now, |e| e.at.max(request.now)),
            based_on,
            id: rand::random(),
        };
        let payload = encode(&draft, request.body);
        let settled = || {
            account
                .campaigns()
                .draft(&part)
                .filter(|entry| (entry.at, entry.id) >= (draft.at, draft.id))
        };
        let saved = self.log_campaign_record(payload, settled, || {
            account.campaigns().apply_draft(draft.clone());
            draft.clone()
        })?;
        Ok(saved)
    }
}

/// The body's JSON text, when it is a draft of `part`: an object with the part's one
/// member, an array of objects of at most the part's number of entries, in at most
/// [`MAX_DRAFT_BYTES`].
fn checked(part: DraftPart<'_>, body: &Value) -> Result<String, Errors> {
    let mut errors = Errors::default();
    let (member, most) = part.member();
    match body.as_object() {
        None => errors.push(
            String::new(),
            format!("expected an object {{\"{member}\": [...]}}"),
        ),
        Some(members) => {
            for name in members.keys().filter(|name| name.as_str() != member) {
                errors.push(name.clone(), format!("unknown member (expected {member})"));
            }
            match members.get(member) {
                None => errors.push(member.to_owned(), "required".to_owned()),
                Some(Value::Array(entries)) => {
                    if entries.len() > most {
                        errors.push(member.to_owned(), format!("at most {most} entries"));
                    }
                    for (at, entry) in entries.iter().enumerate() {
                        if !entry.is_object() {
                            errors.push(format!("{member}[{at}]"), "expected an object".to_owned());
                        }
                    }
                }
                Some(_) => errors.push(member.to_owned(), "expected an array".to_owned()),
            }
        }
    }
    let text = body.to_string();
    if text.len() > MAX_DRAFT_BYTES {
        errors.push(
            member.to_owned(),
            format!(
                "the draft is {} bytes; at most {MAX_DRAFT_BYTES}",
                text.len()
            ),
        );
    }
    errors.into_result(text)
}

/// The record of `draft`, whose body (none: a discard) is `body`.
fn encode(draft: &Draft, body: Option<&Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({"draft": {
        "part": draft.part,
        "body": body,
        "author": draft.author,
        "at": draft.at,
        "basedOn": draft.based_on,
        "id": draft.id,
    }}))
    .unwrap_or_default()
}

/// The draft of a campaign record that holds one (`{"draft": {...}}`).
pub(super) fn decode(record: &Value) -> Option<Draft> {
    let draft = record.get("draft")?;
    Some(Draft {
        part: draft.get("part")?.as_str()?.to_owned(),
        body: draft
            .get("body")
            .filter(|b| !b.is_null())
            .map(Value::to_string),
        author: draft.get("author")?.as_str()?.to_owned(),
        at: draft.get("at")?.as_i64()?,
        based_on: draft.get("basedOn")?.as_u64()?,
        id: draft.get("id")?.as_u64()?,
    })
}

/// A part's draft discarded because it was published as it stands: after the draft, at
/// the publishing change's time, so that every node discards it.
pub(super) fn published(account: &Account, part: &str, draft_id: u64, at: UnixMillis) {
    let Some(draft) = account
        .campaigns()
        .draft(part)
        .filter(|d| d.body.is_some() && d.id == draft_id)
    else {
        return;
    };
    account.campaigns().apply_draft(Draft {
        body: None,
        at: draft.at.max(at),
        id: draft.id.wrapping_add(1),
        ..draft
    });
}

/// The id of `part`'s draft when `body` is exactly that draft (a publish of the draft
/// as it stands, which discards it).
pub(super) fn draft_published(account: &Account, part: &str, body: &Value) -> Option<u64> {
    let draft = account.campaigns().draft(part)?;
    let text = draft.body.as_deref()?;
    let saved: Value = serde_json::from_str(text).ok()?;
    (saved == *body).then_some(draft.id)
}
