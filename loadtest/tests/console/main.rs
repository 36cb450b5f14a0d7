//! The merchandiser's console in a real browser (headless Chromium through WebDriver),
//! through the real server: a segment is built and its size changes as the rule does; a
//! campaign with a manual pick found by the catalogue search, a filter, a pin and a
//! schedule is made and previewed as the browser script's cards; a shadow test of the
//! draft counts trials; publishing puts it on `/api/serverside`; a second browser that
//! publishes on a stale ETag is shown what changed meanwhile; a viewer's token gets no
//! edit controls; an experiment is created from the live list and a saved draft, started,
//! read with its intervals drawn, and ended; the holdout switched on, read and switched
//! off; a saved draft backtested with its exposure drawn; a status line that fills moves no
//! button. Screenshots are written next to the test's
//! temporary files.

#![expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly where its setup does not hold"
)]

mod backtest;
mod campaigns;
mod drafts;
mod experiments;
mod helpers;
mod layout;
