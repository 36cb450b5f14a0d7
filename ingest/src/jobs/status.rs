//! Where each token stands: [`DeltaStatus`] and the table of delta statuses
//! ([`DeltaStatuses`], saved with every rebuild as `delta-statuses.json` so a restart's
//! replay reaches the outcomes already reported), [`FeedStatus`] and the feed-job file
//! codec ([`FeedJob`]).

use std::fs;
use std::path::Path;

use dashmap::DashMap;
use vitrine_engine::catalogue::UnixMillis;

use crate::store;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaStatus {
    /// 0: accepted, not yet applied.
    Pending,
    /// 1: applied.
    Applied,
    /// 2: failed, with the reason.
    Failed(String),
}

impl DeltaStatus {
    /// The integer of the contract: 0, 1 or 2.
    pub fn code(&self) -> u8 {
        match self {
            DeltaStatus::Pending => 0,
            DeltaStatus::Applied => 1,
            DeltaStatus::Failed(_) => 2,
        }
    }
}

/// Status of a feed job, as `/api/productfeedstatus` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedStatus {
    /// Queued or running.
    Processing,
    /// Loaded and live; `detail` summarises skipped records, if any.
    Complete {
        /// Counts and the skipped records, when some were skipped.
        detail: Option<String>,
    },
    /// Failed, with a readable reason.
    Failed(String),
}

impl FeedStatus {
    /// The `Status` string of the contract.
    pub fn name(&self) -> &'static str {
        match self {
            FeedStatus::Processing => "Processing",
            FeedStatus::Complete { .. } => "Complete",
            FeedStatus::Failed(_) => "Error",
        }
    }

    /// The status as it is written down: its name, the error of a failed job and the
    /// detail of a complete one.
    pub fn parts(&self) -> (&'static str, Option<String>, Option<String>) {
        match self {
            FeedStatus::Processing => ("Processing", None, None),
            FeedStatus::Complete { detail } => ("Complete", None, detail.clone()),
            FeedStatus::Failed(error) => ("Error", Some(error.clone()), None),
        }
    }

    /// The status written down as [`FeedStatus::parts`]; `None` for an unknown name.
    pub fn from_parts(name: &str, error: Option<String>, detail: Option<String>) -> Option<Self> {
        match name {
            "Processing" => Some(FeedStatus::Processing),
            "Complete" => Some(FeedStatus::Complete { detail }),
            "Error" => Some(FeedStatus::Failed(error.unwrap_or_default())),
            _ => None,
        }
    }
}

/// A submitted feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedJob {
    /// Its token.
    pub token: String,
    /// The URL to fetch (empty for a streamed feed).
    pub url: String,
    /// Whether the feed was streamed to the server (`feeds/<token>.stream`) rather
    /// than submitted as a URL.
    pub streamed: bool,
    /// When it was submitted.
    pub submitted_at: UnixMillis,
    /// Where it stands.
    pub status: FeedStatus,
    /// In a cluster: the sequence of its submission in the account's replicated log (0
    /// until the submission is read back from there, and on a single node). It names
    /// the job across the cluster.
    pub stream_sequence: u64,
    /// In a cluster, a streamed feed: the shared object holding its body.
    pub shared_body: Option<String>,
}

impl FeedJob {
    /// The job file: a JSON object (see `snapshots/FORMAT.md`).
    pub fn encode(&self) -> Vec<u8> {
        let (status, error, detail) = self.status.parts();
        let value = serde_json::json!({
            "url": self.url,
            "streamed": self.streamed,
            "submitted_at": self.submitted_at,
            "status": status,
            "error": error,
            "detail": detail,
            "stream_sequence": self.stream_sequence,
            "shared_body": self.shared_body,
        });
        serde_json::to_vec(&value).unwrap_or_default()
    }

    /// Reads a job file written by [`FeedJob::encode`].
    pub fn decode(token: &str, bytes: &[u8]) -> Option<FeedJob> {
        let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let text = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let status = FeedStatus::from_parts(
            value.get("status")?.as_str()?,
            text("error"),
            text("detail"),
        )?;
        Some(FeedJob {
            token: token.to_owned(),
            url: text("url")?,
            streamed: value
                .get("streamed")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            submitted_at: value.get("submitted_at")?.as_i64()?,
            status,
            stream_sequence: value
                .get("stream_sequence")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0),
            shared_body: text("shared_body"),
        })
    }
}

/// The reason given for a token this account never issued.
pub const UNKNOWN_TOKEN: &str = "unknown token";

/// Delta statuses kept per account; older tokens answer [`UNKNOWN_TOKEN`].
pub const STATUSES_KEPT: usize = 100_000;

/// The delta statuses of an account: token → (log sequence, status).
#[derive(Debug, Default)]
pub(crate) struct DeltaStatuses(DashMap<String, (u64, DeltaStatus)>);

/// The log position a replicated account's delta records while it is taken and not
/// yet read back from the cluster's log (where it is logged and applied).
pub(crate) const TAKEN_NOT_READ: u64 = u64::MAX;

impl DeltaStatuses {
    /// The statuses saved in the account's directory, if any.
    pub(crate) fn load(dir: &Path) -> DeltaStatuses {
        let statuses = DeltaStatuses::default();
        for (token, sequence, status) in read_statuses(&dir.join(STATUS_FILE)) {
            statuses.set(token, sequence, status);
        }
        statuses
    }

    /// Records a token's status. Past [`STATUSES_KEPT`] and a tenth, the oldest decided
    /// statuses are forgotten down to [`STATUSES_KEPT`] (as the status file keeps only
    /// that many): their tokens then answer [`UNKNOWN_TOKEN`].
    pub(crate) fn set(&self, token: String, sequence: u64, status: DeltaStatus) {
        self.0.insert(token, (sequence, status));
        if self.0.len() > STATUSES_KEPT + STATUSES_KEPT / 10 {
            self.forget_oldest(STATUSES_KEPT);
        }
    }

    /// Forgets the oldest decided statuses until `keep` are left (pending ones stay).
    fn forget_oldest(&self, keep: usize) {
        let mut decided: Vec<u64> = self
            .0
            .iter()
            .filter(|entry| entry.value().1 != DeltaStatus::Pending)
            .map(|entry| entry.value().0)
            .collect();
        let excess = self.0.len().saturating_sub(keep).min(decided.len());
        if excess == 0 {
            return;
        }
        let (_, cutoff, _) = decided.select_nth_unstable(excess - 1);
        let cutoff = *cutoff;
        self.0
            .retain(|_, (sequence, status)| *status == DeltaStatus::Pending || *sequence > cutoff);
    }

    /// Statuses held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether `token`'s delta was read from the cluster's replicated log already: its
    /// status then records where this node logged it (one it took and has not read
    /// back records [`TAKEN_NOT_READ`]).
    pub(crate) fn read_from_stream(&self, token: &str) -> bool {
        self.0
            .get(token)
            .is_some_and(|entry| entry.0 != TAKEN_NOT_READ)
    }

    /// A token's status, if this account issued it.
    pub(crate) fn get(&self, token: &str) -> Option<DeltaStatus> {
        self.0.get(token).map(|entry| entry.1.clone())
    }

    /// Saves every decided status (the newest [`STATUSES_KEPT`]), fsynced.
    pub(crate) fn save(&self, dir: &Path) -> Result<(), store::StoreError> {
        self.decided().save(dir)
    }

    /// The decided statuses now, to be saved later: a cluster's snapshot set takes
    /// them with its catalogue, so that they name no delta the catalogue lacks (a node
    /// restored from it would take such a delta, read from the stream, for a copy of
    /// one it holds). Only copied here (the set takes them under the catalogue's
    /// writer); sorted when saved.
    pub(crate) fn decided(&self) -> Decided {
        Decided(
            self.0
                .iter()
                .filter(|entry| entry.value().1 != DeltaStatus::Pending)
                .map(|entry| {
                    (
                        entry.value().0,
                        entry.key().clone(),
                        entry.value().1.clone(),
                    )
                })
                .collect(),
        )
    }
}

/// Decided statuses taken at one moment ([`DeltaStatuses::decided`]).
#[derive(Debug)]
pub(crate) struct Decided(Vec<(u64, String, DeltaStatus)>);

impl Decided {
    /// Writes the newest [`STATUSES_KEPT`] as the status file in `dir`, oldest first,
    /// fsynced.
    pub(crate) fn save(self, dir: &Path) -> Result<(), store::StoreError> {
        let mut decided = self.0;
        decided.sort_by_key(|(sequence, _, _)| std::cmp::Reverse(*sequence));
        decided.truncate(STATUSES_KEPT);
        decided.reverse();
        let items: Vec<serde_json::Value> = decided
            .into_iter()
            .map(|(sequence, token, status)| {
                let reason = match &status {
                    DeltaStatus::Failed(reason) => Some(reason.clone()),
                    DeltaStatus::Pending | DeltaStatus::Applied => None,
                };
                serde_json::json!([token, sequence, status.code(), reason])
            })
            .collect();
        let bytes =
            serde_json::to_vec(&serde_json::json!({ "statuses": items })).unwrap_or_default();
        vitrine_snapshots::atomic_write(dir, STATUS_FILE, &bytes)?;
        Ok(())
    }
}

/// The file of decided delta statuses, in the account's directory.
pub const STATUS_FILE: &str = "delta-statuses.json";

/// Reads the status file: (token, sequence, status) of every decided delta it holds.
fn read_statuses(path: &Path) -> Vec<(String, u64, DeltaStatus)> {
    let Ok(bytes) = fs::read(path) else {
        return Vec::new();
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    let items = value
        .get("statuses")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|item| {
            let token = item.get(0)?.as_str()?.to_owned();
            let sequence = item.get(1)?.as_u64()?;
            let status = match item.get(2)?.as_u64()? {
                1 => DeltaStatus::Applied,
                _ => DeltaStatus::Failed(item.get(3)?.as_str().unwrap_or_default().to_owned()),
            };
            Some((token, sequence, status))
        })
        .collect()
}
