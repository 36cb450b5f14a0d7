//! `vitrine-ingest`: how product data gets into Vitrine.
//!
//! It reads and validates the records that feeds and deltas carry, applies deltas to an
//! account's catalogue all or nothing, and runs the jobs behind status tokens.
//!
//! Threads: each account has one delta worker thread ([`jobs::AccountJobs`]), the only
//! writer of that account's catalogue versions; request threads only queue work and
//! read statuses.
//!
//! Modules:
//! - [`json`]: typed field reading with errors that name the JSON path.
//! - [`record`]: product, user, account-price and category-assignment records.
//! - [`delta`]: delta parsing and all-or-nothing application.
//! - [`fetch`]: streaming, capped, address-guarded feed download.
//! - [`feed`]: full feeds: simd-json parsing, parallel validation, reject rules, build.
//! - [`runner`]: the feed runner thread: download, parse, build, swap.
//! - [`store`]: catalogue snapshots: save after a feed, restore on start.
//! - [`jobs`]: tokens, statuses, the per-account delta worker, the feed queue.

#![forbid(unsafe_code)]

pub mod delta;
pub mod erasure;
pub mod feed;
pub mod fetch;
pub mod jobs;
pub mod json;
pub mod record;
pub mod runner;
pub mod state;
pub mod store;
