//! The account's feed jobs: submissions journaled as `feeds/<token>.job` files, their
//! statuses, and the queue of jobs waiting for the feed runner.

use vitrine_engine::catalogue::UnixMillis;

pub(super) mod queue;

use super::status::{FeedJob, FeedStatus, UNKNOWN_TOKEN};
use super::{AccountJobs, SubmitError};

/// Finished feed jobs kept per account (statuses and job files); past it and a tenth,
/// the oldest are forgotten and their tokens answer [`UNKNOWN_TOKEN`].
pub const FEED_JOBS_KEPT: usize = 10_000;

impl AccountJobs {
    /// Journals a feed submission and returns its token; the caller hands the token to
    /// the feed runner.
    pub fn submit_feed(&self, url: &str, now: UnixMillis) -> Result<String, SubmitError> {
        let token = format!("feed_{}", vitrine_engine::account::new_id());
        let job = FeedJob {
            token: token.clone(),
            url: url.to_owned(),
            streamed: false,
            submitted_at: now,
            status: FeedStatus::Processing,
            stream_sequence: 0,
            shared_body: None,
        };
        self.journal_feed(job.clone())?;
        self.announce_feed(&job, None)?;
        Ok(token)
    }

    /// Writes a new job's file (fsynced) and queues it.
    pub(super) fn journal_feed(&self, job: FeedJob) -> Result<(), vitrine_snapshots::Error> {
        let token = job.token.clone();
        self.rewrite_feed(job)?;
        let mut queue = self.shared.feeds.queue.lock();
        queue.retain(|queued| *queued != token);
        queue.push_back(token);
        Ok(())
    }

    /// Rewrites a job's file (fsynced) as it is now, without queueing it.
    pub(super) fn rewrite_feed(&self, job: FeedJob) -> Result<(), vitrine_snapshots::Error> {
        vitrine_snapshots::atomic_write(
            &self.shared.dir.join("feeds"),
            &format!("{}.job", job.token),
            &job.encode(),
        )?;
        self.shared.feeds.jobs.insert(job.token.clone(), job);
        Ok(())
    }

    /// Records the end of a feed job, on disk first, so that it is not run again.
    pub fn finish_feed(&self, token: &str, status: FeedStatus) -> Result<(), SubmitError> {
        let Some(mut job) = self.feed_job(token) else {
            return Ok(());
        };
        job.status = status;
        let written = vitrine_snapshots::atomic_write(
            &self.shared.dir.join("feeds"),
            &format!("{token}.job"),
            &job.encode(),
        );
        self.shared.feeds.queue.lock().retain(|t| t != token);
        self.shared.feeds.jobs.insert(token.to_owned(), job);
        if self.shared.feeds.jobs.len() > FEED_JOBS_KEPT + FEED_JOBS_KEPT / 10 {
            self.forget_oldest_feeds(FEED_JOBS_KEPT);
        }
        written.map_err(SubmitError::from)
    }

    /// Forgets the oldest finished feed jobs (their statuses and job files) until
    /// `keep` jobs are left; jobs still processing stay. Their tokens then answer
    /// [`UNKNOWN_TOKEN`].
    pub(crate) fn forget_oldest_feeds(&self, keep: usize) {
        let feeds = &self.shared.feeds;
        let mut finished: Vec<(UnixMillis, String)> = feeds
            .jobs
            .iter()
            .filter(|job| job.status != FeedStatus::Processing)
            .map(|job| (job.submitted_at, job.token.clone()))
            .collect();
        let excess = feeds.jobs.len().saturating_sub(keep).min(finished.len());
        if excess == 0 {
            return;
        }
        finished.select_nth_unstable(excess - 1);
        let dir = self.shared.dir.join("feeds");
        for (_, token) in finished.into_iter().take(excess) {
            feeds.jobs.remove(&token);
            let _ = std::fs::remove_file(dir.join(format!("{token}.job")));
        }
    }

    /// A feed job.
    pub fn feed_job(&self, token: &str) -> Option<FeedJob> {
        self.shared.feeds.jobs.get(token).map(|job| job.clone())
    }

    /// The status of a feed token; unknown tokens are an error with [`UNKNOWN_TOKEN`].
    pub fn feed_status(&self, token: &str) -> FeedStatus {
        self.shared.feeds.jobs.get(token).map_or_else(
            || FeedStatus::Failed(UNKNOWN_TOKEN.to_owned()),
            |job| job.status.clone(),
        )
    }

    /// Feed jobs waiting to be fetched, oldest first.
    pub fn queued_feeds(&self) -> Vec<FeedJob> {
        let queue = self.shared.feeds.queue.lock();
        queue
            .iter()
            .filter_map(|t| self.shared.feeds.jobs.get(t).map(|j| j.clone()))
            .collect()
    }
}
