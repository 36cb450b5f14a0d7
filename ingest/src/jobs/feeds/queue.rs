//! The account's feed jobs as they are kept: every job by token, and the queue of
//! tokens waiting for the feed runner, read back from the job files at start.

use std::collections::VecDeque;
use std::fs;
use std::path::Path;

use dashmap::DashMap;
use parking_lot::Mutex;

use crate::jobs::status::{FeedJob, FeedStatus};

/// Feed jobs by token, and the tokens waiting to be run, oldest first.
#[derive(Debug, Default)]
pub(in crate::jobs) struct Feeds {
    pub(in crate::jobs) jobs: DashMap<String, FeedJob>,
    pub(in crate::jobs) queue: Mutex<VecDeque<String>>,
    /// Held while an uploaded feed is given its token and journaled, so that two
    /// uploads of one name never take the same token.
    pub(in crate::jobs) naming: Mutex<()>,
}

impl Feeds {
    /// Reads the job files of `feed_dir`: every job, and those still processing queued
    /// again in submission order. Files that cannot be read go to `problems`; a download
    /// cut short by a stop is deleted (its job is queued again).
    pub(in crate::jobs) fn load(
        feed_dir: &Path,
        problems: &mut Vec<String>,
    ) -> Result<Feeds, vitrine_snapshots::Error> {
        let jobs = DashMap::new();
        let mut queue = Vec::new();
        for entry in fs::read_dir(feed_dir)
            .map_err(vitrine_snapshots::Error::io("reading directory", feed_dir))?
        {
            let path = entry
                .map_err(vitrine_snapshots::Error::io("reading directory", feed_dir))?
                .path();
            let Some(token) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".job"))
            else {
                if path.extension().is_some_and(|e| e == "download") {
                    // A download cut short by a stop; its job is queued again.
                    let _ = fs::remove_file(&path);
                }
                continue;
            };
            let Some(job) = fs::read(&path)
                .ok()
                .and_then(|bytes| FeedJob::decode(token, &bytes))
            else {
                problems.push(format!("{}: not a feed job record", path.display()));
                continue;
            };
            if job.status == FeedStatus::Processing {
                queue.push((job.submitted_at, token.to_owned()));
            }
            jobs.insert(token.to_owned(), job);
        }
        queue.sort();

        Ok(Feeds {
            jobs,
            queue: Mutex::new(queue.into_iter().map(|(_, t)| t).collect()),
            naming: Mutex::new(()),
        })
    }

    /// Number of jobs.
    pub(in crate::jobs) fn len(&self) -> usize {
        self.jobs.len()
    }
}
