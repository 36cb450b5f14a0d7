//! `vitrine-engine`: everything Vitrine knows about a store, and no I/O.
//!
//! The engine holds each account's catalogue version, its visitors and their sessions,
//! its orders and users, and the counters behind the recommenders; it tracks events and
//! fills zones. It reads no files, opens no sockets and knows no JSON: `vitrine-http`
//! converts wire requests into [`event::Event`]s and [`account::ServeRequest`]s, and
//! `vitrine-ingest` builds catalogues with [`catalogue::CatalogueBuilder`].
//!
//! Threads: any number of request threads call [`account::Account::serve`] at once. A
//! catalogue version is swapped in only through [`account::Writer`], the account's
//! writer lock: in `vitrine-ingest` the startup replay, the delta worker and the
//! rebuilds (feeds, compactions, erasure flushes) each take it to swap, one at a time.
//!
//! Modules:
//! - [`catalogue`]: products under dense ids, categories, brands, account prices.
//! - [`overlay`]: changes made by deltas since the base archive, and the edits that make them.
//! - [`money`]: ISO 4217 currencies, amounts in minor units, display strings.
//! - [`event`]: the tracking events of `/api/serverside`, typed.
//! - [`tracking`]: an account's shoppers as it holds them: visitors, sessions, order
//!   ids (and a snapshot's cut), identities, user records.
//! - [`visitor`]: bounded per-visitor state.
//! - [`visits`]: a visitor's sessions, page views and orders, as segments read them.
//! - [`repurchases`]: what a visitor bought in how many orders, for `buy_again`.
//! - [`zone`]: zone definitions and strategies.
//! - [`campaign`]: who sees what, where and when: segments, schedules, content, and the
//!   choice of a zone's campaign.
//! - [`similar`]: content-similarity neighbours, computed at build time.
//! - [`models`]: online models (co-view, co-purchase, decayed popularity).
//! - [`recommend`]: candidates per strategy with their evidence, filters, fallback
//!   chains, item prices, popularity rankings.
//! - [`zone_cache`]: product zones the same for every visitor of a page, kept filled.
//! - [`analytics`]: a visitor's impressions and the zone counters they are credited to.
//! - [`site`]: store-wide figures per day (sessions, conversions, orders, revenue).
//! - [`experiment`]: A/B experiments, the store-wide holdout, the variant of a visitor
//!   and the always-valid statistics.
//! - [`prequential`]: self-evaluation: how well each zone predicts what sampled
//!   shoppers do next.
//! - [`shadow`]: shadow tests: a draft campaign list judged beside the live one.
//! - [`backtest`]: the judged moments a backtest fills a draft for.
//! - [`tuning`]: self-tuning of the co-view and co-purchase lists, `personalized`'s
//!   recipe and `similar_sessions`' neighbourhood.
//! - [`state`]: what the log and state snapshots hold (`Tracked`, `Served`, `StateEntry`).
//! - [`bucket`]: the token bucket bounding the work requests start in the background.
//! - [`shards`]: sharded maps (keys from outside hashed with foldhash, seeded per
//!   process), counted maps, striped counters and the graveyard.
//! - [`account`]: one account's state, the server-side call, explain, erasure, eviction.
//! - [`demo`]: the generated demo catalogue.
//! - `testing` (tests and the `testing` feature only): builders of test data.

#![forbid(unsafe_code)]

pub mod account;
pub mod analytics;
pub mod backtest;
pub mod bucket;
pub mod campaign;
pub mod catalogue;
pub mod demo;
pub mod event;
pub mod experiment;
pub mod models;
pub mod money;
pub mod overlay;
pub mod prequential;
pub mod recommend;
pub mod repurchases;
pub mod shadow;
pub mod shards;
pub mod similar;
pub mod site;
pub mod state;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tracking;
pub mod tuning;
pub mod visitor;
pub mod visits;
pub mod zone;
pub mod zone_cache;

pub use account::{Account, AccountSettings, Evicted, MemoryBounds};
pub use catalogue::{Catalogue, CatalogueBuilder, Product, ProductIdx};
pub use compact_str::CompactString;
pub use money::{Currency, Money};
