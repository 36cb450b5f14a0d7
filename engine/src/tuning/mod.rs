//! Per-account self-tuning of the co-view lists: which window, partner damping and
//! weight on the pairs' direction fit the store's shoppers, found from what they do.
//!
//! Every setting of a small grid ([`Tuning::grid`]: the [`CoViewWindow`]s by
//! [`PARTNER_DAMPINGS`] by [`FORWARD_WEIGHTS`], less what is pinned) is scored on the visitors that
//! self-evaluation samples ([`crate::prequential`]), at most [`TRIALS_PER_SECOND`] a
//! second per account by default: before a request that brings a product new to the visitor is applied, the
//! co-view counts of their latest views are copied (a [`Trial`]); off the request path
//! (each models' rebuild round), a blend of those views' lists (as `personalized` reads
//! them) is ranked under each setting from the one table of counts
//! ([`CoCounts::shadow_ranks`], every pair being counted by distance), and each setting
//! is a hit when the product is in its top [`TOP_K`].
//!
//! A setting replaces the active one when it wins the trials on which the two disagree
//! significantly more often than it loses them: the paired outcomes' discordant pairs
//! are tested against a fair coin with an always-valid sequential test (the likelihood
//! ratio of a uniform mixture over win rates above ½, so looking after every trial does
//! not inflate it), at [`ALPHA`] over the grid (Bonferroni), after at least
//! [`MIN_DISCORDANT`] of them. The counts start again from each switch.
//!
//! Files: `board.rs` (the sequential test), `pending.rs` (trials waiting to be scored),
//! `recipe.rs` and `sessions.rs` (the recipe's and the neighbourhood's tuners),
//! `tuners.rs` (`Tuners`, what an account holds of them), `trial.rs` (the trials it
//! keeps there), `account/` (what self-tuning adds to [`crate::account::Account`]: the
//! trials taken on sampled requests, scored in the models round, and the lists, the
//! recipe and the neighbourhood reconfigured).
//!
//! [`CoCounts::shadow_ranks`]: crate::models::CoCounts::shadow_ranks
//! [`TOP_K`]: crate::prequential::TOP_K

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::bucket::TokenBucket;
use crate::catalogue::UnixMillis;
pub use crate::models::TRIALS_PER_SECOND;
use crate::models::{CoViewWindow, ListSetting, ModelSettings};
pub use pending::Pending;

/// The co-view lists' partner dampings compared (with every window).
pub const PARTNER_DAMPINGS: [f32; 3] = [0.25, 0.5, 0.75];
/// The co-purchase lists' partner dampings compared. 0 (pairs ranked by their counts
/// alone) wins on sparse purchase data, where a pair seen once among rare products is
/// noise that damping would rank first; on views it lost to 0.25 on the rounds of a
/// sparse film catalogue while winning its trials (`docs/quality.md`), so the co-view
/// grid leaves it out.
pub const PURCHASE_PARTNER_DAMPINGS: [f32; 4] = [0.0, 0.25, 0.5, 0.75];
/// The weights on the pairs' direction compared (with every window and damping): the
/// lists read as counted either way (0, "viewed together"), half, or wholly by
/// direction (1, "viewed after": [`crate::models::ModelSettings::co_view_forward`]).
pub const FORWARD_WEIGHTS: [f32; 3] = [0.0, 0.5, 1.0];
/// The test's level over the whole grid.
pub const ALPHA: f64 = 0.01;
/// Trials on which a setting and the active one disagree, at least, before it may
/// replace it.
pub const MIN_DISCORDANT: u64 = 20;
/// Switches remembered.
pub const SWITCHES_KEPT: usize = 20;
/// Trials taken and not yet scored, at most (beyond, a trial is dropped and counted):
/// two seconds' worth at the rate the account starts with, within these bounds.
pub const PENDING_TRIALS: std::ops::RangeInclusive<usize> = 64..=1024;

/// A trial taken on a request, before it was applied, to be scored off the request
/// path ([`Tuner::take`]).
#[derive(Debug)]
pub struct Trial {
    /// The grid when it was taken.
    pub grid: Vec<ListSetting>,
    /// The co-view counts of the visitor's latest views.
    pub seeds: crate::models::ShadowSeeds,
    /// The products left out (the visitor's recent views).
    pub skip: Vec<u32>,
    /// The products the request brought (`None`: never counted).
    pub targets: smallvec::SmallVec<[Option<u32>; 4]>,
    /// The request's time.
    pub now: UnixMillis,
}

/// Whether a tuner of a part an account may not have (`personalized`'s recipe,
/// `similar_sessions`' neighbourhood) takes trials: the account tunes, and has the part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// It takes trials and its choice is read.
    Yes,
    /// The configured setting, always.
    No,
}

/// What an account's configuration asks of self-tuning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tuning {
    /// The configured settings, always.
    Off,
    /// Tuned, but for what is pinned.
    Auto(Pins),
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning::Auto(Pins::default())
    }
}

/// Settings the configuration fixes while the rest is tuned.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pins {
    /// A pinned co-view window.
    pub co_view_window: Option<CoViewWindow>,
    /// A pinned partner damping.
    pub partner_damping: Option<f32>,
    /// A pinned window of the co-purchase lists.
    pub co_purchase_window: Option<CoViewWindow>,
    /// A pinned partner damping of the co-purchase lists.
    pub purchase_partner_damping: Option<f32>,
    /// A pinned weight on the co-view pairs' direction.
    pub co_view_forward: Option<f32>,
    /// A pinned weight on the co-purchase pairs' direction.
    pub co_purchase_forward: Option<f32>,
    /// A pinned number of sessions `similar_sessions` scores the products of.
    pub session_neighbours: Option<usize>,
    /// A pinned number of the shopper's latest products `similar_sessions` compares.
    pub session_steps: Option<usize>,
}

impl Tuning {
    /// What it asks of the co-purchase lists: their own pins (`co_purchase_window`,
    /// `purchase_partner_damping`, `co_purchase_forward`), read where
    /// [`Tuning::grid_of`] reads the co-view lists' (which pin the co-view lists only).
    pub fn for_purchases(self) -> Tuning {
        match self {
            Tuning::Off => Tuning::Off,
            Tuning::Auto(pins) => Tuning::Auto(Pins {
                co_view_window: pins.co_purchase_window,
                partner_damping: pins.purchase_partner_damping,
                co_view_forward: pins.co_purchase_forward,
                ..Pins::default()
            }),
        }
    }

    /// The settings compared, starting from the configured `models`: one only when
    /// tuning is off or everything is pinned.
    pub fn grid(&self, models: &ModelSettings) -> Vec<ListSetting> {
        self.grid_of(models, &PARTNER_DAMPINGS)
    }

    /// [`Tuning::grid`] comparing `dampings` where the damping is not pinned.
    pub fn grid_of(&self, models: &ModelSettings, dampings: &[f32]) -> Vec<ListSetting> {
        let configured = configured(models);
        let Tuning::Auto(pins) = self else {
            return vec![configured];
        };
        let windows: Vec<CoViewWindow> = match pins.co_view_window {
            Some(window) => vec![window],
            None => CoViewWindow::ALL.to_vec(),
        };
        let dampings: Vec<f32> = match pins.partner_damping {
            Some(damping) => vec![damping],
            None => dampings.to_vec(),
        };
        let forwards: Vec<f32> = match pins.co_view_forward {
            Some(forward) => vec![forward],
            None => FORWARD_WEIGHTS.to_vec(),
        };
        let mut grid: Vec<ListSetting> = windows
            .iter()
            .flat_map(|window| {
                dampings.iter().flat_map(|damping| {
                    forwards.iter().map(|forward| ListSetting {
                        window: *window,
                        partner_damping: *damping,
                        forward: *forward,
                    })
                })
            })
            .collect();
        if !grid.contains(&configured) {
            grid.insert(0, configured);
        }
        grid
    }
}

/// The list setting `models` configures.
pub fn configured(models: &ModelSettings) -> ListSetting {
    ListSetting {
        window: models.co_view_window,
        partner_damping: models.partner_damping,
        forward: models.co_view_forward,
    }
}

/// The natural log of the evidence that a setting beats the active one, from the
/// trials on which they disagree: `wins` where only it hit, `losses` where only the
/// active one did. The likelihood ratio of a uniform mixture over win rates in [½, 1]
/// against ½: under "no better" its chance of ever reaching `1/α` is at most `α`,
/// however often it is looked at.
pub fn evidence(wins: u64, losses: u64) -> f64 {
    use statrs::function::beta::{beta_reg, ln_beta};
    #[expect(
        clippy::cast_precision_loss,
        reason = "trial counts far below 2^53 are exact in an f64"
    )]
    let (a, b) = (wins as f64 + 1.0, losses as f64 + 1.0);
    // ∫_{½}^{1} 2 p^w (1-p)^l dp / ½^(w+l) = 2^(w+l+1) B(a, b) (1 − I_½(a, b)).
    let upper = (1.0 - beta_reg(a, b, 0.5)).max(f64::MIN_POSITIVE);
    (a + b - 1.0) * std::f64::consts::LN_2 + ln_beta(a, b) + upper.ln()
}

/// The evidence a setting needs to replace the active one in a grid of `settings`.
pub fn threshold(settings: usize) -> f64 {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a grid of a few settings is exact in an f64"
    )]
    let others = settings.saturating_sub(1).max(1) as f64;
    (others / ALPHA).ln()
}

/// One setting's trials since the last switch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Its trials, hits and reciprocal ranks.
    pub scored: crate::prequential::Tally,
    /// Trials it hit and the active setting missed.
    pub wins: u64,
    /// Trials the active setting hit and it missed.
    pub losses: u64,
}

/// A change of the active setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Switch<S = ListSetting> {
    /// When (the request's time).
    pub at: UnixMillis,
    /// The setting replaced.
    pub from: S,
    /// The new one.
    pub to: S,
    /// Trials since the previous switch.
    pub trials: u64,
    /// The new setting's wins and losses against the old one.
    pub wins: u64,
    /// See `wins`.
    pub losses: u64,
    /// Its evidence then ([`evidence`]).
    pub evidence: f64,
}

/// What self-tuning knows: the grid, the active setting, each setting's trials since the
/// last switch, and the latest switches.
#[derive(Debug, Clone, PartialEq)]
pub struct TuningReport {
    /// Whether it tunes (`false`: tuning is off, or everything is pinned).
    pub tuning: bool,
    /// The pinned settings.
    pub pins: Pins,
    /// The setting the lists are read at.
    pub active: ListSetting,
    /// Each setting of the grid with its trials.
    pub settings: Vec<(ListSetting, Tally)>,
    /// The evidence a setting needs to replace the active one.
    pub threshold: f64,
    /// The latest switches, oldest first.
    pub switches: Vec<Switch>,
    /// Trials dropped because too many waited to be scored.
    pub dropped: u64,
}

#[derive(Debug)]
struct State {
    tuning: Tuning,
    board: Board<ListSetting>,
    /// Trials a second at most.
    bucket: TokenBucket,
}

impl State {
    /// The active setting (the defaults' should the grid not have it, which it always
    /// does).
    fn active(&self) -> ListSetting {
        self.board.active().unwrap_or(ListSetting {
            window: CoViewWindow::Ten,
            partner_damping: crate::models::PARTNER_DAMPING,
            forward: 0.0,
        })
    }
}

/// An account's self-tuning (see the module).
#[derive(Debug)]
pub struct Tuner {
    state: Mutex<State>,
    /// Bumped by every change of the active setting (a switch, a restore): whoever
    /// keeps it reads it again.
    generation: AtomicU64,
    /// Trials taken, not yet scored.
    pending: Pending<Trial>,
    /// The lists it tunes.
    lists: Lists,
}

/// The lists a [`Tuner`] tunes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lists {
    /// The co-view lists: window and [`PARTNER_DAMPINGS`].
    CoView,
    /// The co-purchase lists: window and [`PURCHASE_PARTNER_DAMPINGS`], with their own
    /// pins ([`Tuning::for_purchases`]).
    CoPurchase,
}

impl Lists {
    /// The dampings its grid compares where the damping is not pinned.
    pub fn dampings(self) -> &'static [f32] {
        match self {
            Lists::CoView => &PARTNER_DAMPINGS,
            Lists::CoPurchase => &PURCHASE_PARTNER_DAMPINGS,
        }
    }

    /// What an account's `tuning` asks of these lists.
    pub fn tuning(self, tuning: Tuning) -> Tuning {
        match self {
            Lists::CoView => tuning,
            Lists::CoPurchase => tuning.for_purchases(),
        }
    }
}

impl Tuner {
    /// Self-tuning of the co-purchase lists as `tuning` asks ([`Lists::CoPurchase`]),
    /// starting from the configured `models`.
    pub fn for_purchases(tuning: Tuning, models: &ModelSettings) -> Tuner {
        Tuner::of(Lists::CoPurchase, tuning, models)
    }

    /// Self-tuning of the co-view lists as `tuning` asks, starting from the configured
    /// `models`.
    pub fn new(tuning: Tuning, models: &ModelSettings) -> Tuner {
        Tuner::of(Lists::CoView, tuning, models)
    }

    pub(crate) fn of(lists: Lists, tuning: Tuning, models: &ModelSettings) -> Tuner {
        let tuning = lists.tuning(tuning);
        let grid = tuning.grid_of(models, lists.dampings());
        let active = active_in(&grid, configured(models));
        Tuner {
            state: Mutex::new(State {
                tuning,
                board: Board::new(grid, active),
                bucket: TokenBucket::new(models.tuning_trials_per_second),
            }),
            generation: AtomicU64::new(0),
            pending: Pending::new(models.tuning_trials_per_second),
            lists,
        }
    }

    /// Queues a trial to be scored; dropped (and counted) when the queue is full
    /// ([`PENDING_TRIALS`]).
    pub fn queue(&self, trial: Trial) {
        self.pending.push(trial);
    }

    /// The oldest trial waiting to be scored.
    pub fn take(&self) -> Option<Trial> {
        self.pending.pop()
    }

    /// The settings to score, if a trial at `now` is due (one grid of several
    /// settings; at most [`ModelSettings::tuning_trials_per_second`], a second's worth
    /// at once).
    pub fn due(&self, now: UnixMillis) -> Option<Vec<ListSetting>> {
        let mut state = self.state.lock();
        if state.board.grid.len() <= 1 {
            return None;
        }
        state.bucket.take(now).then(|| state.board.grid.clone())
    }

    /// Counts one trial: `ranks`, where each setting of `grid` (as [`Tuner::due`] gave
    /// it) ranked the product. Returns the new active setting when one replaced it.
    pub fn record(
        &self,
        grid: &[ListSetting],
        ranks: &[Option<usize>],
        now: UnixMillis,
    ) -> Option<ListSetting> {
        let switch = self.state.lock().board.record_on(grid, ranks, now)?;
        self.generation.fetch_add(1, Ordering::Release);
        Some(switch.to)
    }

    /// The setting the lists are read at.
    pub fn active(&self) -> ListSetting {
        self.state.lock().active()
    }

    /// A new configuration (a reload): the grid the account's `tuning` makes for these
    /// lists; the active setting stays if it is still in it, else the configured one
    /// is. Returns the active setting.
    pub fn reconfigure(&self, tuning: Tuning, models: &ModelSettings) -> ListSetting {
        let tuning = self.lists.tuning(tuning);
        let grid = tuning.grid_of(models, self.lists.dampings());
        let mut state = self.state.lock();
        state.bucket.set_rate(models.tuning_trials_per_second);
        let before = state.board.active();
        let kept = before.filter(|a| grid.contains(a) && tuning != Tuning::Off);
        let active = active_in(&grid, kept.unwrap_or_else(|| configured(models)));
        if state.board.grid != grid || state.tuning != tuning {
            state.board.regrid(grid, active);
        } else {
            state.board.active = active;
        }
        state.tuning = tuning;
        let after = state.board.active().unwrap_or_else(|| configured(models));
        if before != Some(after) {
            self.generation.fetch_add(1, Ordering::Release);
        }
        after
    }

    /// Makes `setting` (chosen before a restart) the active one, if the grid has it.
    /// Returns whether it did.
    pub fn restore(&self, setting: ListSetting) -> bool {
        let mut state = self.state.lock();
        state.tuning != Tuning::Off && state.board.restore(setting)
    }

    /// Bumped by every switch.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// What self-tuning knows now.
    pub fn report(&self) -> TuningReport {
        let state = self.state.lock();
        let pins = match state.tuning {
            Tuning::Auto(pins) => pins,
            Tuning::Off => Pins::default(),
        };
        TuningReport {
            tuning: state.board.grid.len() > 1,
            pins,
            active: state.active(),
            settings: state.board.settings(),
            threshold: threshold(state.board.grid.len()),
            switches: state.board.switches.iter().copied().collect(),
            dropped: self.pending.dropped(),
        }
    }
}

/// Where `setting` is in `grid` (the first place when it is not).
pub(crate) fn active_in<S: PartialEq>(grid: &[S], setting: S) -> usize {
    grid.iter().position(|s| *s == setting).unwrap_or(0)
}

mod account;
mod board;
mod pending;
pub mod recipe;
pub mod sessions;
pub(crate) mod trial;
pub(crate) mod tuners;

pub(crate) use board::Board;

#[cfg(test)]
mod tests;
