//! Catalogue snapshots of one account: saved after every feed, restored on start.
//!
//! Saving holds the account's writer lock so that the archived catalogue and the journal
//! position it covers belong together: statuses of covered deltas are saved first, then
//! the snapshot is written (fsynced), opened again by memory map and swapped in, so the
//! served catalogue is the file on disk. The two newest snapshots are kept; journal
//! files are pruned only behind the older of them, so falling back to it loses nothing.
//!
//! User records (from feeds' `Users` and deltas' `Users`) are account state rather than
//! catalogue; they are saved whole to `users.json` with every snapshot, before it, so
//! that pruning the journal never drops a user.

use std::path::{Path, PathBuf};

use vitrine_engine::account::UserRecord;
use vitrine_engine::catalogue::{Catalogue, CatalogueData};
use vitrine_snapshots::snapshot::{self, Kind};

use crate::jobs::{AccountJobs, SubmitError};

/// File-name prefix of catalogue snapshots.
pub const PREFIX: &str = "catalogue";
/// Snapshots kept per account (the newest, and one to fall back to).
pub const KEEP: usize = 2;

/// Why a snapshot could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Writing, opening or pruning failed.
    #[error(transparent)]
    Disk(#[from] vitrine_snapshots::Error),
    /// Saving delta statuses or pruning the journal failed.
    #[error(transparent)]
    Journal(#[from] SubmitError),
}

/// A snapshot that was written and is now served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// Its file.
    pub path: PathBuf,
    /// Its sequence number.
    pub sequence: u64,
    /// The journal position it covers.
    pub position: u64,
    /// Its size in bytes (payload).
    pub bytes: usize,
}

/// Snapshots the account's current catalogue and serves it from the file.
pub fn save(jobs: &AccountJobs) -> Result<Saved, StoreError> {
    let dir = jobs.dir();
    let saved = {
        let _writing = jobs.writer().lock();
        let account = jobs.account();
        let catalogue = account.catalogue();
        let position = jobs.applied_through();
        jobs.save_statuses(position)?;
        save_users(dir, &account.users())?;
        let sequence = snapshot::list(dir, PREFIX)?
            .first()
            .map_or(1, |(s, _)| s + 1);
        let payload = catalogue.archive_bytes();
        let path = snapshot::write(dir, PREFIX, Kind::Catalogue, sequence, position, payload)?;
        let (frozen, _) = snapshot::open::<CatalogueData>(&path, Kind::Catalogue)?;
        account.swap_catalogue(Catalogue::from_frozen(frozen));
        Saved {
            path,
            sequence,
            position,
            bytes: payload.len(),
        }
    };
    snapshot::prune(dir, PREFIX, KEEP)?;
    if let Some((_, oldest)) = snapshot::list(dir, PREFIX)?.last() {
        let covered = snapshot::read_header(oldest)?.position;
        jobs.prune_journal(covered)?;
    }
    Ok(saved)
}

/// File of an account's user records.
pub const USERS_FILE: &str = "users.json";

fn save_users(dir: &Path, users: &[UserRecord]) -> Result<(), StoreError> {
    let records: Vec<serde_json::Value> = users
        .iter()
        .map(|u| {
            serde_json::json!({
                "UserId": u.user_id, "Email": u.email, "FirstName": u.first_name,
                "LastName": u.last_name, "Title": u.title,
                "DOB": u.dob.map(|d| d.to_string()), "Gender": u.gender, "City": u.city,
                "State": u.state, "Country": u.country, "GroupId": u.group_id,
            })
        })
        .collect();
    let bytes = serde_json::to_vec(&serde_json::json!({ "Users": records })).unwrap_or_default();
    vitrine_snapshots::atomic_write(dir, USERS_FILE, &bytes)?;
    Ok(())
}

/// Rewrites the account's user file from memory (after an erasure), if one exists.
pub fn persist_users(jobs: &AccountJobs) -> Result<(), StoreError> {
    if jobs.dir().join(USERS_FILE).exists() {
        save_users(jobs.dir(), &jobs.account().users())?;
    }
    Ok(())
}

/// The user records saved with the last snapshot (none when there is no file); records
/// that do not read back are returned as messages for the log.
pub fn restore_users(dir: &Path) -> (Vec<UserRecord>, Vec<String>) {
    let Ok(bytes) = std::fs::read(dir.join(USERS_FILE)) else {
        return (Vec::new(), Vec::new());
    };
    let value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(value) => value,
        Err(error) => return (Vec::new(), vec![format!("{USERS_FILE}: {error}")]),
    };
    let mut users = Vec::new();
    let mut problems = Vec::new();
    let items = value
        .get("Users")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, item) in items.iter().enumerate() {
        let mut errors = crate::json::Errors::default();
        match crate::record::user(item, &format!("Users[{i}]"), &mut errors) {
            Some(user) => users.push(user),
            None => problems.push(format!("{USERS_FILE}: {}", errors.joined())),
        }
    }
    (users, problems)
}

/// The newest valid snapshot of an account.
#[derive(Debug)]
pub struct Restored {
    /// The catalogue, memory-mapped.
    pub catalogue: Catalogue,
    /// The journal position it covers.
    pub position: u64,
    /// Its file.
    pub path: PathBuf,
}

/// Opens the newest valid snapshot in `dir`; newer files that are unusable are returned
/// as messages for the log.
pub fn restore(dir: &Path) -> Result<(Option<Restored>, Vec<String>), StoreError> {
    let opened = snapshot::open_newest::<CatalogueData>(dir, PREFIX, Kind::Catalogue)?;
    let skipped = opened.skipped.iter().map(ToString::to_string).collect();
    let restored = opened.snapshot.map(|(frozen, header, path)| Restored {
        catalogue: Catalogue::from_frozen(frozen),
        position: header.position,
        path,
    });
    Ok((restored, skipped))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use serde_json::json;
    use vitrine_engine::catalogue::CatalogueBuilder;
    use vitrine_engine::money::Currency;
    use vitrine_engine::{Account, AccountSettings};

    use super::*;
    use crate::jobs::DeltaStatus;
    use crate::json::{Errors, Fields, KeyMatch};

    fn account(catalogue: Catalogue) -> Arc<Account> {
        let settings = AccountSettings {
            access_key: "k".into(),
            default_currency: Currency::from_code("GBP").unwrap(),
            zones: Vec::new(),
        };
        Arc::new(Account::new(settings, catalogue))
    }

    fn product(id: &str, title: &str) -> serde_json::Value {
        json!({"Id": id, "Title": title, "Link": "/", "Image": "/i", "Prices": ["1 GBP"], "Categories": []})
    }

    fn submit(jobs: &AccountJobs, body: serde_json::Value) -> String {
        let mut errors = Errors::default();
        let fields = Fields::of(&body, "", KeyMatch::Exact, &mut errors).unwrap();
        let delta = crate::delta::parse(&fields).unwrap();
        let token = jobs
            .submit_delta(delta, body.to_string().as_bytes())
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while jobs.delta_status(&token) == DeltaStatus::Pending {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(2));
        }
        token
    }

    fn title(catalogue: &Catalogue, id: &str) -> String {
        catalogue
            .product(catalogue.idx_of(id).unwrap())
            .unwrap()
            .title
            .to_string()
    }

    #[test]
    fn a_feed_snapshot_restores_with_later_deltas_only() {
        let dir = tempfile::tempdir().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (old_delta, new_delta) = {
            let (jobs, _) = AccountJobs::start(
                account(CatalogueBuilder::new().build().unwrap()),
                dir.path(),
                0,
            )
            .unwrap();
            let old_delta = submit(
                &jobs,
                json!({"Products": [product("p1", "from an old delta")]}),
            );
            submit(
                &jobs,
                json!({"Users": [{"UserId": "u1", "Email": "u1@example.com", "DOB": "1990-02-03"}]}),
            );
            let mut feed = json!([product("p1", "from the feed"), product("p2", "feed")])
                .to_string()
                .into_bytes();
            let status = crate::runner::apply(&jobs, &mut feed, &pool, &|_| {});
            assert!(
                matches!(status, crate::jobs::FeedStatus::Complete { .. }),
                "{status:?}"
            );
            assert!(
                jobs.account().catalogue().is_mapped(),
                "served from the snapshot file"
            );
            let new_delta = submit(&jobs, json!({"DeleteProducts": ["p2"]}));
            (old_delta, new_delta)
        };
        let (restored, skipped) = restore(dir.path()).unwrap();
        assert!(skipped.is_empty());
        let restored = restored.unwrap();
        assert_eq!(restored.position, 2);
        let account = account(restored.catalogue);
        let (users, problems) = restore_users(dir.path());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(users.len(), 1, "the user of a pruned delta is kept");
        assert_eq!(
            users[0].dob.map(|d| d.to_string()).as_deref(),
            Some("1990-02-03")
        );
        account.replace_users(users);
        let (jobs, recovery) =
            AccountJobs::start(Arc::clone(&account), dir.path(), restored.position).unwrap();
        assert_eq!(
            recovery.deltas, 1,
            "only the delta after the snapshot is applied again"
        );
        let catalogue = account.catalogue();
        assert_eq!(title(&catalogue, "p1"), "from the feed");
        assert!(catalogue.idx_of("p2").is_none());
        assert_eq!(jobs.delta_status(&old_delta), DeltaStatus::Applied);
        assert_eq!(jobs.delta_status(&new_delta), DeltaStatus::Applied);
    }

    #[test]
    fn snapshots_are_pruned_and_the_journal_only_behind_the_oldest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (jobs, _) = AccountJobs::start(
            account(CatalogueBuilder::new().build().unwrap()),
            dir.path(),
            0,
        )
        .unwrap();
        for round in 0..3 {
            submit(
                &jobs,
                json!({"Products": [product(&format!("d{round}"), "delta")]}),
            );
            let mut feed = json!([product("f", "feed")]).to_string().into_bytes();
            crate::runner::apply(&jobs, &mut feed, &pool, &|_| {});
        }
        let snapshots = snapshot::list(dir.path(), PREFIX).unwrap();
        assert_eq!(
            snapshots.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            [3, 2]
        );
        // Snapshot 2 covers deltas 0 and 1: only delta 2 is still journaled.
        let journal: Vec<String> = std::fs::read_dir(dir.path().join("deltas"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        assert_eq!(journal.len(), 1, "{journal:?}");
        assert!(journal[0].starts_with("0000000000000002-"));
    }
}
