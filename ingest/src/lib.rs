//! `vitrine-ingest`: how product data gets into Vitrine.
//!
//! It reads and validates the records that feeds and deltas carry, applies deltas to an
//! account's catalogue all or nothing, and runs the jobs behind status tokens.
//!
//! Threads: each account has a delta worker and a compactor thread
//! ([`jobs::AccountJobs`]), and the server one feed runner ([`runner::FeedRunner`]);
//! they, and the startup replay, swap catalogue versions only under the account's
//! writer lock ([`vitrine_engine::account::Writer`]); the table of threads and the lock
//! order are in [`jobs`]. Request threads only append to the log, queue work and
//! read statuses.
//!
//! Modules:
//! - [`record`]: product, user, account-price and category-assignment records.
//! - [`delta`]: delta parsing and all-or-nothing application.
//! - [`fetch`]: streaming, capped, address-guarded feed download.
//! - [`feed`]: full feeds: simd-json parsing, parallel validation, reject rules, build.
//! - [`runner`]: the feed runner thread: download (or a streamed feed's spool), parse,
//!   build, swap; order histories imported.
//! - [`orders`]: the order-history CSV of the vendor's plugins.
//! - [`store`]: catalogue snapshots: save after a feed, restore on start.
//! - [`jobs`]: tokens, statuses, the per-account delta worker, the feed queue, streamed
//!   feeds, order history.
//! - [`erasure`]: the erasure key, forgotten identifiers, stripping later events.
//! - [`state`]: tracking-state snapshots.
//! - [`templates`]: the one environment html zone templates render in.
//! - [`campaigns`]: the campaign document's grammar (rules, schedules, content,
//!   experiments, the holdout) compiled into a campaign set, and the diff between
//!   versions.
//! - [`backup`]: backups of a data directory and their restore.

#![forbid(unsafe_code)]

pub mod backup;
pub mod campaigns;
pub mod delta;
pub mod erasure;
pub mod feed;
pub mod fetch;
pub mod jobs;
pub mod orders;
pub mod record;
pub mod runner;
pub mod state;
pub mod store;
pub mod templates;
