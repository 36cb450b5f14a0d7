//! What the jobs keep of their replication: the replicated log and this data
//! directory's incarnation, how a record a node took is written to its log, and the
//! hook told of feed jobs other nodes took.

use std::sync::Arc;

use crate::jobs::replica::port::{Incarnation, Replication};

/// The replication of one account's jobs.
#[derive(Debug)]
pub(in crate::jobs) struct Replica {
    pub(in crate::jobs) log: Arc<dyn Replication>,
    /// This data directory's incarnation: records it published are skipped.
    pub(in crate::jobs) incarnation: Incarnation,
}

/// How a record a node took is written to its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::jobs) enum Durability {
    /// Under the log's policy (`always`: fsynced before the answer; `interval`: within
    /// the window).
    UnderPolicy,
    /// Without waiting for the disk (analytics and clicks: a lost one costs a count).
    Unwaited,
}

/// What is called with each feed job read from the replicated log that the node did
/// not know.
pub(in crate::jobs) struct FeedHook(pub(in crate::jobs) Box<dyn Fn(String) + Send + Sync>);

impl std::fmt::Debug for FeedHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FeedHook")
    }
}
