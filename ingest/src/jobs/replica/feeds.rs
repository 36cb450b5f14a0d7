//! Full feeds in a cluster: submitted to any node, built once, swapped in everywhere.
//!
//! - The node that takes a feed (a URL, or a streamed feed closed there) journals its
//!   job as a single node does, stores a streamed feed's body as a shared object, and
//!   publishes a [`RecordKind::FeedSubmitted`] record; the token is returned once the
//!   replicated log has stored it. Every node reading the record journals the job
//!   (Processing, named across the cluster by the record's sequence) and hands it to its
//!   feed runner.
//! - Each runner claims the job ([`Claim`]); one gets it, downloads (or reads the body),
//!   parses and builds the catalogue, stores it as a shared object and publishes a
//!   [`RecordKind::FeedBuilt`] record with the outcome; the others wait. A claim is kept
//!   alive while its node builds: when the node dies, it lapses and another node takes
//!   the job over from the start.
//! - Every node reading `FeedBuilt` (the builder too) downloads the catalogue, applies
//!   again on top the deltas the replicated log holds between the submission and the
//!   outcome (accepted meanwhile), swaps it in as a rebuild does (a new local snapshot)
//!   and reports the job's outcome; so every node serves the same catalogue.
//! - An order history (`orders-…`) is imported by the builder, whose imported orders are
//!   published as ordinary event records and so applied everywhere.
//!
//! Neither record is written to the local log: the job files say where each job stands,
//! and a node that restarts reads the records again from the replicated log (a job
//! already known, or already finished, is left as it is).
//!
//! Shared objects: a streamed body `feed-body-<incarnation>-<token>` (deleted once its
//! feed is built), a built catalogue `feed-<job>-<incarnation>-catalogue` and its user
//! records `feed-<job>-<incarnation>-users`; those of the two newest built feeds are
//! kept. A node that reads an outcome whose catalogue is gone (it was behind by two
//! feeds) keeps its catalogue for it: the newer feed replaces it anyway.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use vitrine_engine::catalogue::{Catalogue, CatalogueData};
use vitrine_snapshots::snapshot::{self, Kind};

use crate::delta::{self, Mode};
use crate::jobs::log::{self, RecordKind};
use crate::jobs::replica::Applied;
use crate::jobs::replica::port::{Claim, ReplicationError, Wait};
use crate::jobs::replica::state::FeedHook;
use crate::jobs::status::{FeedJob, FeedStatus};
use crate::jobs::{AccountJobs, RebuildError, RebuildKind, Rebuilt, SubmitError};
use crate::store;

/// Wait between two tries of a step that needs the cluster (a download, a claim).
const RETRY: Duration = Duration::from_secs(1);

/// A [`RecordKind::FeedSubmitted`] record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Submitted {
    token: String,
    url: String,
    streamed: bool,
    submitted_at: i64,
    /// The shared object holding a streamed feed's body.
    body: Option<String>,
}

/// A [`RecordKind::FeedBuilt`] record: a job's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(in crate::jobs) struct Built {
    /// The job's token.
    pub token: String,
    /// The job: the sequence of its submission in the replicated log.
    pub job: u64,
    /// `Complete` or `Error`.
    pub outcome: String,
    /// Complete: what was skipped, if anything.
    pub detail: Option<String>,
    /// Error: why.
    pub error: Option<String>,
    /// The shared object holding the built catalogue (a snapshot file).
    pub catalogue: Option<String>,
    /// The shared object holding the feed's user records (`users.json`'s format).
    pub users: Option<String>,
}

impl Built {
    /// The outcome as a feed status (anything but `Complete` is a failure).
    pub(in crate::jobs) fn status(&self) -> FeedStatus {
        match FeedStatus::from_parts(&self.outcome, self.error.clone(), self.detail.clone()) {
            Some(FeedStatus::Processing) | None => {
                FeedStatus::Failed(self.error.clone().unwrap_or_default())
            }
            Some(status) => status,
        }
    }
}

/// The shared object of a streamed feed's body.
fn body_object(incarnation: u64, token: &str) -> String {
    format!("feed-body-{incarnation:016x}-{token}")
}

/// The shared objects of a built feed: its catalogue and its user records.
pub(crate) fn built_objects(job: u64, incarnation: u64) -> (String, String) {
    let stem = format!("feed-{job}-{incarnation:016x}");
    (format!("{stem}-catalogue"), format!("{stem}-users"))
}

/// The job of a built feed's shared object (`feed-<job>-…-catalogue` or `-users`).
fn job_of_object(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("feed-")?;
    let (job, rest) = rest.split_once('-')?;
    (rest.ends_with("-catalogue") || rest.ends_with("-users"))
        .then(|| job.parse().ok())
        .flatten()
}

impl AccountJobs {
    /// Publishes a journaled feed job for the cluster to build (nothing on a single
    /// node); a streamed feed's body (at `body`) is stored as a shared object first.
    /// When the replicated log does not store the submission, the job is marked failed.
    pub(in crate::jobs) fn announce_feed(
        &self,
        job: &FeedJob,
        body: Option<&Path>,
    ) -> Result<(), SubmitError> {
        let Some(replication) = self.replication() else {
            return Ok(());
        };
        let announced = (|| {
            replication.admit(Wait::Answer)?;
            let body = match body {
                Some(path) => {
                    let name = body_object(self.incarnation(), &job.token);
                    replication.put_object(&name, path)?;
                    Some(name)
                }
                None => None,
            };
            let record = Submitted {
                token: job.token.clone(),
                url: job.url.clone(),
                streamed: job.streamed,
                submitted_at: job.submitted_at,
                body,
            };
            let payload = serde_json::to_vec(&record)
                .map_err(|e| ReplicationError::failed("the submission record", e))?;
            replication.publish(RecordKind::FeedSubmitted, payload, Wait::Answer)
        })();
        // Not confirmed in time: kept, so built by the cluster (the job stays
        // Processing here until its outcome is read).
        if let Err(reason @ ReplicationError::Unconfirmed(_)) = announced {
            return Err(SubmitError::Replication(reason));
        }
        if let Err(reason) = announced {
            let failed = FeedStatus::Failed(format!(
                "the cluster's log did not store the submission: {reason}"
            ));
            let _ = self.finish_feed(&job.token, failed);
            return Err(SubmitError::Replication(reason));
        }
        Ok(())
    }

    /// Sets what is called with the token of each feed job read from the replicated
    /// log that this node did not know (the server hands it to its feed runner).
    pub fn on_replicated_feed(&self, hook: impl Fn(String) + Send + Sync + 'static) {
        let _ = self.shared.feed_hook.set(FeedHook(Box::new(hook)));
    }

    /// A [`RecordKind::FeedSubmitted`] record at `sequence`: the job is journaled (or,
    /// submitted here, named by its sequence) and a new one handed to the feed runner.
    pub(in crate::jobs) fn apply_feed_submitted(
        &self,
        sequence: u64,
        payload: &[u8],
    ) -> Result<Applied, SubmitError> {
        let shared = &self.shared;
        let Ok(submitted) = serde_json::from_slice::<Submitted>(payload) else {
            tracing::warn!(account = %shared.account.access_key(), sequence, "a feed submission that does not read: skipped");
            shared.stream_position.store(sequence, Ordering::Release);
            return Ok(Applied::Seen);
        };
        let known = self.feed_job(&submitted.token);
        let applied = match known {
            Some(job) if job.stream_sequence == sequence => Applied::Seen,
            // Taken here, read back: now named across the cluster.
            Some(mut job)
                if job.stream_sequence == 0 && job.submitted_at == submitted.submitted_at =>
            {
                job.stream_sequence = sequence;
                job.shared_body = submitted.body;
                self.rewrite_feed(job)?;
                Applied::Own
            }
            _ => {
                let job = FeedJob {
                    token: submitted.token.clone(),
                    url: submitted.url,
                    streamed: submitted.streamed,
                    submitted_at: submitted.submitted_at,
                    status: FeedStatus::Processing,
                    stream_sequence: sequence,
                    shared_body: submitted.body,
                };
                self.journal_feed(job)?;
                if let Some(FeedHook(hook)) = shared.feed_hook.get() {
                    hook(submitted.token);
                }
                Applied::Applied
            }
        };
        shared.stream_position.store(sequence, Ordering::Release);
        Ok(applied)
    }

    /// A [`RecordKind::FeedBuilt`] record at `sequence`: the built catalogue is swapped
    /// in (with the deltas since the submission applied again on top) and the job gets
    /// its outcome. Waits (retrying) while the cluster cannot be read.
    pub(in crate::jobs) fn apply_feed_built(
        &self,
        sequence: u64,
        payload: &[u8],
    ) -> Result<Applied, SubmitError> {
        let shared = &self.shared;
        let account = shared.account.access_key().to_owned();
        let Ok(built) = serde_json::from_slice::<Built>(payload) else {
            tracing::warn!(%account, sequence, "a feed outcome that does not read: skipped");
            shared.stream_position.store(sequence, Ordering::Release);
            return Ok(Applied::Seen);
        };
        let job = self
            .feed_job(&built.token)
            .filter(|job| job.stream_sequence == built.job && job.status == FeedStatus::Processing);
        if job.is_none() {
            // Finished already (read again after a restart), or a second outcome of a
            // job taken over: the first one counts.
            shared.stream_position.store(sequence, Ordering::Release);
            return Ok(Applied::Seen);
        }
        let status = built.status();
        if let (FeedStatus::Complete { .. }, Some(_)) = (&status, &built.catalogue) {
            loop {
                match self.swap_in_built(&built, sequence) {
                    Ok(true) => break,
                    Ok(false) => {
                        tracing::warn!(%account, token = %built.token, "the built feed's catalogue is no longer shared (a newer feed replaced it): the catalogue is kept until that one is read");
                        break;
                    }
                    Err(error) => {
                        tracing::warn!(%account, token = %built.token, %error, "the built feed could not be swapped in; retrying");
                        std::thread::sleep(RETRY);
                    }
                }
            }
        }
        tracing::info!(%account, token = %built.token, status = status.name(), products = shared.account.catalogue().len(), "feed from the cluster applied");
        // A streamed body taken here but built by another node is no longer needed.
        let _ = std::fs::remove_file(self.streamed_feed_path(&built.token));
        self.finish_feed(&built.token, status)?;
        shared.stream_position.store(sequence, Ordering::Release);
        Ok(Applied::Applied)
    }

    /// Downloads a built feed's catalogue (and users) and swaps it in with the deltas of
    /// the replicated log between the submission and `sequence` applied again on top.
    /// False when the catalogue object is gone.
    fn swap_in_built(&self, built: &Built, sequence: u64) -> Result<bool, ReplicationError> {
        let shared = &self.shared;
        let replication = self.replication().ok_or(ReplicationError::NotReplicated)?;
        let dir = shared.dir.join("feeds");
        let catalogue_file = dir.join(format!("{}.catalogue", built.job));
        let users_file = dir.join(format!("{}.users", built.job));
        let _cleanup = Cleanup(vec![catalogue_file.clone(), users_file.clone()]);
        let Some(object) = &built.catalogue else {
            return Ok(true);
        };
        if !replication.get_object(object, &catalogue_file)? {
            return Ok(false);
        }
        let users = match &built.users {
            Some(object) if replication.get_object(object, &users_file)? => {
                let bytes = std::fs::read(&users_file)
                    .map_err(|e| ReplicationError::file(&users_file, e))?;
                let (users, problems) = store::parse_users(&bytes);
                for problem in problems {
                    tracing::warn!(account = %shared.account.access_key(), %problem, "a shared user record was skipped");
                }
                Some(users)
            }
            _ => None,
        };
        let deltas: Vec<delta::Delta> = replication
            .deltas_between(built.job, sequence)?
            .iter()
            .filter_map(|payload| log::decode_delta(payload).1.ok())
            .collect();
        // The deltas read before are applied first: the swap replaces what they did.
        let deadline = Instant::now() + Duration::from_secs(60);
        while shared.deltas.pending.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let (frozen, _) = snapshot::open::<CatalogueData>(&catalogue_file, Kind::Catalogue)
            .map_err(|e| ReplicationError::failed(format!("the shared catalogue {object}"), e))?;
        let base = Catalogue::from_frozen(frozen);
        let reapplied = deltas.clone();
        shared
            .rebuild(RebuildKind::Feed, move |_current| {
                let mut edit = base.edit();
                for delta in &reapplied {
                    let _ = delta::apply_to(&mut edit, delta, Mode::Reapply);
                }
                let catalogue = edit
                    .finish()
                    .compact()
                    .map_err(|e| RebuildError::Build(e.to_string()))?;
                Ok(Rebuilt { catalogue, users })
            })
            .map_err(|e| ReplicationError::failed("swapping in the shared catalogue", e))?;
        for delta in &deltas {
            delta::apply_users(&shared.account, delta);
        }
        Ok(true)
    }

    /// Claims a feed job for this node's runner; `None` on a single node.
    pub fn claim_feed(&self, job: u64) -> Option<Result<Claim, ReplicationError>> {
        self.replication().map(|replication| replication.claim(job))
    }

    /// Makes sure a streamed feed's body is at `path`, from the shared objects if it was
    /// streamed to another node; false when it is nowhere.
    pub fn fetch_feed_body(&self, token: &str, path: &Path) -> Result<bool, ReplicationError> {
        if path.exists() {
            return Ok(true);
        }
        let Some(replication) = self.replication() else {
            return Ok(false);
        };
        let body = self.feed_job(token).and_then(|job| job.shared_body);
        match body {
            Some(name) => replication.get_object(&name, path),
            None => Ok(false),
        }
    }

    /// Publishes a feed job's outcome (built by this node): its catalogue and users
    /// stored as shared objects first. Then deletes the shared objects no longer needed:
    /// the job's body, and built feeds older than the two newest.
    pub fn publish_built(
        &self,
        job: &FeedJob,
        status: &FeedStatus,
        catalogue: Option<&Catalogue>,
        users: Option<&[vitrine_engine::account::UserRecord]>,
    ) -> Result<(), ReplicationError> {
        let replication = self.replication().ok_or(ReplicationError::NotReplicated)?;
        let dir = self.shared.dir.join("feeds");
        let (catalogue_name, users_name) = built_objects(job.stream_sequence, self.incarnation());
        let (outcome, error, detail) = status.parts();
        let mut built = Built {
            token: job.token.clone(),
            job: job.stream_sequence,
            outcome: outcome.to_owned(),
            detail,
            error,
            catalogue: None,
            users: None,
        };
        if let Some(catalogue) = catalogue {
            let prefix = format!("built-{}", job.stream_sequence);
            let path = snapshot::write(
                &dir,
                &prefix,
                Kind::Catalogue,
                1,
                0,
                catalogue.archive_bytes(),
            )
            .map_err(|e| ReplicationError::failed("writing the built catalogue", e))?;
            let _cleanup = Cleanup(vec![path.clone()]);
            replication.put_object(&catalogue_name, &path)?;
            built.catalogue = Some(catalogue_name);
        }
        if let Some(users) = users {
            let path = dir.join(format!("built-{}.users", job.stream_sequence));
            let _cleanup = Cleanup(vec![path.clone()]);
            std::fs::write(&path, store::users_json(users))
                .map_err(|e| ReplicationError::file(&path, e))?;
            replication.put_object(&users_name, &path)?;
            built.users = Some(users_name);
        }
        let payload = serde_json::to_vec(&built)
            .map_err(|e| ReplicationError::failed("the built feed record", e))?;
        replication.publish(RecordKind::FeedBuilt, payload, Wait::Stored)?;
        // Tidying: a failure only leaves objects behind.
        let tidy = || -> Result<(), ReplicationError> {
            if let Some(body) = self.feed_job(&job.token).and_then(|job| job.shared_body) {
                replication.delete_object(&body)?;
            }
            let names = replication.objects()?;
            let mut jobs: Vec<u64> = names.iter().filter_map(|n| job_of_object(n)).collect();
            jobs.sort_unstable();
            jobs.dedup();
            if let Some(&oldest_kept) = jobs.iter().rev().nth(1) {
                for name in names
                    .iter()
                    .filter(|n| job_of_object(n).is_some_and(|j| j < oldest_kept))
                {
                    replication.delete_object(name)?;
                }
            }
            Ok(())
        };
        if let Err(error) = tidy() {
            tracing::warn!(account = %self.shared.account.access_key(), %error, "old shared feed objects could not be deleted");
        }
        Ok(())
    }
}

/// Files removed when dropped.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_feeds_objects_name_their_job() {
        let (catalogue, users) = built_objects(42, 0xabc);
        assert_eq!(catalogue, "feed-42-0000000000000abc-catalogue");
        assert_eq!(job_of_object(&catalogue), Some(42));
        assert_eq!(job_of_object(&users), Some(42));
        assert_eq!(job_of_object(&body_object(1, "product-ab")), None);
        assert_eq!(job_of_object("feed-x-1-catalogue"), None);
    }

    #[test]
    fn an_outcome_reads_as_the_status_it_carries() {
        let built = Built {
            token: "feed_1".into(),
            job: 3,
            outcome: "Error".into(),
            detail: None,
            error: Some("Products[0].Price: expected a number".into()),
            catalogue: None,
            users: None,
        };
        assert_eq!(
            built.status(),
            FeedStatus::Failed("Products[0].Price: expected a number".into())
        );
        let bytes = serde_json::to_vec(&built).unwrap();
        assert_eq!(serde_json::from_slice::<Built>(&bytes).unwrap(), built);
    }
}
