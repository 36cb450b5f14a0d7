//! Self-tuning of `similar_sessions`' neighbourhood ([`SessionSetting`]): how many of
//! the most similar sessions score their products ([`NEIGHBOURS`]) and how many of the
//! shopper's latest products are compared ([`STEPS`]). V-SKNN's published settings
//! differ by dataset (Ludewig and Jannach 2018), and so did ours on the harness's
//! datasets (`docs/quality.md`): no fixed setting is best on every store.
//!
//! The trials are the judged visitors' ([`crate::prequential`]), at most
//! [`ModelSettings::tuning_trials_per_second`] a second (a bound of its own): before a
//! sampled request that brings a product new to the visitor is applied, their latest
//! products and the sessions' tick are kept; on the models' rebuild round, off the
//! request path, the neighbourhood is read as the sessions were at that tick under
//! every setting of the grid ([`crate::models::SessionIndex::neighbourhoods`]), and a
//! setting is a hit when a product the request brought is in its top
//! [`TOP_K`](crate::prequential::TOP_K) of the products new to the visitor. A setting
//! replaces the active one as the lists' settings do (`Board`): when it wins
//! the trials on which the two disagree significantly more often than it loses them.
//!
//! Tuned while the account tunes (`tuning` on, self-evaluation on), keeps sessions,
//! and has a zone that reads them (`similar_sessions`, or `personalized`, whose
//! recipe may blend them in).

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::{Board, Pending, Pins, Runs, Switch, Tally, Tuning, active_in, threshold};
use crate::bucket::TokenBucket;
use crate::catalogue::UnixMillis;
use crate::models::{ModelSettings, SessionSetting};

/// The numbers of neighbour sessions compared. 25 (where V-SKNN's grid starts) lost in
/// the trials and at the end on all four of the quality harness's datasets, by a third
/// on grocery orders, where 200 won the trials (`docs/quality.md`).
pub const NEIGHBOURS: [usize; 3] = [50, 100, 200];
/// The numbers of the shopper's latest products compared.
pub const STEPS: [usize; 2] = [5, 10];

/// A trial taken on a request, before it was applied.
#[derive(Debug)]
pub struct SessionTrial {
    /// The grid when it was taken.
    pub grid: Vec<SessionSetting>,
    /// The visitor's latest products' keys, the latest first.
    pub latest: SmallVec<[u32; 20]>,
    /// The visitor's key (their own sessions are not their neighbours).
    pub visitor: u64,
    /// The products' keys the visitor has (viewed, in the basket, bought): never the
    /// one.
    pub skip: Vec<u32>,
    /// The keys of the products the request brought.
    pub targets: SmallVec<[u32; 8]>,
    /// The sessions' tick before the request (the neighbourhood it would have read).
    pub tick: u32,
    /// The request's time.
    pub now: UnixMillis,
}

/// What self-tuning of the neighbourhood knows.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionReport {
    /// Whether it tunes.
    pub tuning: bool,
    /// What the configuration pins (`session_neighbours`, `session_steps`).
    pub pins: (Option<usize>, Option<usize>),
    /// The setting neighbourhoods are read at.
    pub active: SessionSetting,
    /// Each setting with its trials since the last switch.
    pub settings: Vec<(SessionSetting, Tally)>,
    /// The evidence a setting needs to replace the active one.
    pub threshold: f64,
    /// The latest switches, oldest first.
    pub switches: Vec<Switch<SessionSetting>>,
    /// Trials dropped because too many waited to be scored.
    pub dropped: u64,
}

#[derive(Debug)]
struct State {
    on: bool,
    pins: (Option<usize>, Option<usize>),
    configured: SessionSetting,
    board: Board<SessionSetting>,
    bucket: TokenBucket,
}

/// An account's tuning of the neighbourhood (see the module).
#[derive(Debug)]
pub struct SessionTuner {
    state: Mutex<State>,
    /// Bumped by every change of the active setting.
    generation: AtomicU64,
    pending: Pending<SessionTrial>,
}

/// The settings compared: the configured one first, then [`NEIGHBOURS`] by [`STEPS`]
/// but what `pins` fixes; the configured one alone when tuning is off.
pub fn grid(tuning: Tuning, models: &ModelSettings) -> Vec<SessionSetting> {
    let configured = models.session_setting;
    let Tuning::Auto(pins) = tuning else {
        return vec![configured];
    };
    let (neighbours, steps) = pinned(pins);
    let neighbours: Vec<usize> = neighbours.map_or_else(|| NEIGHBOURS.to_vec(), |n| vec![n]);
    let steps: Vec<usize> = steps.map_or_else(|| STEPS.to_vec(), |s| vec![s]);
    let mut grid = vec![configured];
    for n in &neighbours {
        for s in &steps {
            let setting = SessionSetting {
                neighbours: *n,
                steps: *s,
            };
            if !grid.contains(&setting) {
                grid.push(setting);
            }
        }
    }
    grid
}

fn pinned(pins: Pins) -> (Option<usize>, Option<usize>) {
    (pins.session_neighbours, pins.session_steps)
}

impl SessionTuner {
    /// Tuning as `tuning` asks when it `runs` (see the module), from the configured
    /// `models`.
    pub fn new(tuning: Tuning, runs: Runs, models: &ModelSettings) -> SessionTuner {
        let grid = grid(tuning, models);
        SessionTuner {
            state: Mutex::new(State {
                on: runs == Runs::Yes,
                pins: match tuning {
                    Tuning::Auto(pins) => pinned(pins),
                    Tuning::Off => (None, None),
                },
                configured: models.session_setting,
                board: Board::new(grid, 0),
                bucket: TokenBucket::new(models.tuning_trials_per_second),
            }),
            generation: AtomicU64::new(0),
            pending: Pending::new(models.tuning_trials_per_second),
        }
    }

    /// A new configuration (a reload): the active setting stays if the new grid has
    /// it and tuning runs, else the configured one is active. Returns the active one.
    pub fn reconfigure(
        &self,
        tuning: Tuning,
        runs: Runs,
        models: &ModelSettings,
    ) -> SessionSetting {
        let on = runs == Runs::Yes;
        let grid = grid(tuning, models);
        let mut state = self.state.lock();
        state.bucket.set_rate(models.tuning_trials_per_second);
        let before = state.board.active();
        let kept = before.filter(|s| on && grid.contains(s));
        let active = active_in(&grid, kept.unwrap_or(models.session_setting));
        if state.board.grid != grid {
            state.board.regrid(grid, active);
        } else {
            state.board.active = active;
        }
        state.on = on;
        state.configured = models.session_setting;
        state.pins = match tuning {
            Tuning::Auto(pins) => pinned(pins),
            Tuning::Off => (None, None),
        };
        let after = state.board.active().unwrap_or(models.session_setting);
        if before != Some(after) {
            self.generation.fetch_add(1, Ordering::Release);
        }
        after
    }

    /// The settings to score, if a trial at `now` is due.
    pub fn due(&self, now: UnixMillis) -> Option<Vec<SessionSetting>> {
        let mut state = self.state.lock();
        if !state.on || state.board.grid.len() <= 1 {
            return None;
        }
        state.bucket.take(now).then(|| state.board.grid.clone())
    }

    /// Queues a trial to be scored; dropped (and counted) when the queue is full.
    pub fn queue(&self, trial: SessionTrial) {
        self.pending.push(trial);
    }

    /// The oldest trial waiting to be scored.
    pub fn take(&self) -> Option<SessionTrial> {
        self.pending.pop()
    }

    /// Counts one trial: where each setting of `grid` (as [`SessionTuner::due`] gave
    /// it) ranked a product the request brought. The new active setting when one
    /// replaced it.
    pub fn record(
        &self,
        grid: &[SessionSetting],
        ranks: &[Option<usize>],
        now: UnixMillis,
    ) -> Option<SessionSetting> {
        let switch = self.state.lock().board.record_on(grid, ranks, now)?;
        self.generation.fetch_add(1, Ordering::Release);
        Some(switch.to)
    }

    /// The setting neighbourhoods are read at.
    pub fn active(&self) -> SessionSetting {
        let state = self.state.lock();
        state.board.active().unwrap_or(state.configured)
    }

    /// Makes `setting` (chosen before a restart) the active one, if tuning is on and
    /// the grid has it. Returns whether it did.
    pub fn restore(&self, setting: SessionSetting) -> bool {
        let mut state = self.state.lock();
        if !state.on || !state.board.restore(setting) {
            return false;
        }
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    /// Bumped by every change of the active setting.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// What it knows now.
    pub fn report(&self) -> SessionReport {
        let state = self.state.lock();
        SessionReport {
            tuning: state.on && state.board.grid.len() > 1,
            pins: state.pins,
            active: state.board.active().unwrap_or(state.configured),
            settings: state.board.settings(),
            threshold: threshold(state.board.grid.len()),
            switches: state.board.switches.iter().copied().collect(),
            dropped: self.pending.dropped(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_crosses_neighbours_and_steps_after_the_configured_setting_but_what_is_pinned() {
        let models = ModelSettings::default();
        let full = grid(Tuning::default(), &models);
        assert_eq!(full.len(), 6);
        assert_eq!(full[0], models.session_setting);
        assert_eq!(grid(Tuning::Off, &models), vec![models.session_setting]);
        let pins = Pins {
            session_steps: Some(10),
            ..Pins::default()
        };
        let pinned = grid(Tuning::Auto(pins), &models);
        assert_eq!(pinned.len(), 3);
        assert!(pinned.iter().all(|s| s.steps == 10));
        let odd = ModelSettings {
            session_setting: SessionSetting {
                neighbours: 200,
                steps: 3,
            },
            ..models
        };
        let grid = grid(Tuning::default(), &odd);
        assert_eq!(grid.len(), 7);
        assert_eq!(grid[0].neighbours, 200);
    }

    #[test]
    fn a_setting_that_wins_its_disagreements_becomes_active_and_only_while_tuning_is_on() {
        let models = ModelSettings::default();
        let tuner = SessionTuner::new(Tuning::default(), Runs::Yes, &models);
        let grid = tuner.due(0).expect("a trial is due");
        let winner = grid.len() - 1;
        let mut switched = None;
        for n in 0..200 {
            let ranks: Vec<Option<usize>> = (0..grid.len())
                .map(|at| (at == winner).then_some(0))
                .collect();
            if let Some(setting) = tuner.record(&grid, &ranks, n) {
                switched = Some(setting);
                break;
            }
        }
        assert_eq!(switched, grid.get(winner).copied());
        assert_eq!(tuner.active(), grid[winner]);
        assert_eq!(tuner.report().switches.len(), 1);
        let off = SessionTuner::new(Tuning::default(), Runs::No, &models);
        assert!(off.due(0).is_none());
        assert!(!off.restore(grid[winner]));
        assert_eq!(off.active(), models.session_setting);
    }
}
