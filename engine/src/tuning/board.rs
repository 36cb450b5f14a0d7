//! The paired trials of a grid of settings against the active one, and the switches
//! the sequential test made: what the list tuners ([`super::Tuner`]) and the recipe
//! tuner ([`super::recipe::RecipeTuner`]) both keep.

use std::collections::VecDeque;

use super::{MIN_DISCORDANT, SWITCHES_KEPT, Switch, Tally, evidence, threshold};
use crate::catalogue::UnixMillis;

/// A grid of settings, the active one, each one's trials since the last switch, and the
/// latest switches.
#[derive(Debug, Clone)]
pub(crate) struct Board<S> {
    pub(crate) grid: Vec<S>,
    pub(crate) active: usize,
    pub(crate) tallies: Vec<Tally>,
    pub(crate) switches: VecDeque<Switch<S>>,
    /// Whether every setting is compared with the first (the configured one) rather
    /// than with the active one, its trials never starting again (see
    /// [`Board::anchored`]).
    anchored: bool,
}

impl<S: Copy + PartialEq> Board<S> {
    /// `grid` with the setting at `active` active, nothing tried.
    pub(crate) fn new(grid: Vec<S>, active: usize) -> Board<S> {
        Board {
            tallies: vec![Tally::default(); grid.len()],
            grid,
            active,
            switches: VecDeque::new(),
            anchored: false,
        }
    }

    /// `grid` compared with its first setting (the configured one), which is active
    /// until another beats it significantly: the setting with the most evidence of
    /// those that do is active, until its evidence falls below half the threshold
    /// (what won early, while the store's models were young, stops winning), when the
    /// next one that beats the first is, or the first. The trials never start again,
    /// so an advantage that fades is seen.
    pub(crate) fn anchored(grid: Vec<S>) -> Board<S> {
        Board {
            anchored: true,
            ..Board::new(grid, 0)
        }
    }

    /// A new grid (a reload): the trials start again, the switches stay. An anchored
    /// board stays anchored (its first setting the new configured one).
    pub(crate) fn regrid(&mut self, grid: Vec<S>, active: usize) {
        self.tallies = vec![Tally::default(); grid.len()];
        self.grid = grid;
        self.active = active;
    }

    /// Makes `setting` (one chosen before a restart) the active one, if the grid has
    /// it. Returns whether it did.
    pub(crate) fn restore(&mut self, setting: S) -> bool {
        let Some(at) = self.grid.iter().position(|s| *s == setting) else {
            return false;
        };
        self.active = at;
        true
    }

    /// The active setting.
    pub(crate) fn active(&self) -> Option<S> {
        self.grid.get(self.active).copied()
    }

    /// Each setting with its trials.
    pub(crate) fn settings(&self) -> Vec<(S, Tally)> {
        self.grid
            .iter()
            .copied()
            .zip(self.tallies.iter().copied())
            .collect()
    }

    /// [`Board::record`] of a trial taken on `grid`: nothing when the board's grid is
    /// another by now (the configuration was reloaded meanwhile).
    pub(crate) fn record_on(
        &mut self,
        grid: &[S],
        ranks: &[Option<usize>],
        now: UnixMillis,
    ) -> Option<Switch<S>> {
        if self.grid != grid {
            return None;
        }
        self.record(ranks, now)
    }

    /// Counts one trial: `ranks`, where each setting of the grid ranked the product.
    /// Returns the switch when a setting replaced the active one: the one with the
    /// most evidence of those that won at least [`MIN_DISCORDANT`] disagreements more
    /// often than they lost them, past the grid's [`threshold`]; the trials then
    /// start again.
    pub(crate) fn record(&mut self, ranks: &[Option<usize>], now: UnixMillis) -> Option<Switch<S>> {
        if ranks.len() != self.grid.len() {
            return None;
        }
        if self.anchored {
            return self.record_anchored(ranks, now);
        }
        self.tally(ranks, self.active);
        let needed = threshold(self.grid.len());
        let (to, evidence) = self
            .tallies
            .iter()
            .enumerate()
            .filter(|(at, tally)| {
                *at != self.active
                    && tally.wins > tally.losses
                    && tally.wins + tally.losses >= MIN_DISCORDANT
            })
            .map(|(at, tally)| (at, evidence(tally.wins, tally.losses)))
            .filter(|(_, evidence)| *evidence >= needed)
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let switch = self.switch_to(to, evidence, now)?;
        self.tallies.iter_mut().for_each(|t| *t = Tally::default());
        Some(switch)
    }

    /// Adds one trial's `ranks` to every setting's tally, each setting's disagreements
    /// counted against the setting at `reference` (the active one, or an anchored
    /// board's first): a win where it ranked the product and the reference did not, a
    /// loss the other way round.
    fn tally(&mut self, ranks: &[Option<usize>], reference: usize) {
        let reference_hit = ranks.get(reference).copied().flatten().is_some();
        for (tally, rank) in self.tallies.iter_mut().zip(ranks) {
            tally.scored.add(*rank);
            match (rank.is_some(), reference_hit) {
                (true, false) => tally.wins += 1,
                (false, true) => tally.losses += 1,
                _ => {}
            }
        }
    }

    /// Makes the setting at `to` active (with `evidence`, at `now`), remembering the
    /// switch.
    fn switch_to(&mut self, to: usize, evidence: f64, now: UnixMillis) -> Option<Switch<S>> {
        let tally = self.tallies.get(to).copied().unwrap_or_default();
        let switch = Switch {
            at: now,
            from: *self.grid.get(self.active)?,
            to: *self.grid.get(to)?,
            trials: tally.scored.trials,
            wins: tally.wins,
            losses: tally.losses,
            evidence,
        };
        self.active = to;
        if self.switches.len() == SWITCHES_KEPT {
            self.switches.pop_front();
        }
        self.switches.push_back(switch);
        Some(switch)
    }

    /// [`Board::record`] of an anchored board.
    fn record_anchored(&mut self, ranks: &[Option<usize>], now: UnixMillis) -> Option<Switch<S>> {
        self.tally(ranks, 0);
        let needed = threshold(self.grid.len());
        let evidence_of = |tally: &Tally| {
            if tally.wins > tally.losses && tally.wins + tally.losses >= MIN_DISCORDANT {
                evidence(tally.wins, tally.losses)
            } else {
                f64::NEG_INFINITY
            }
        };
        // The active one keeps its place while it still beats the first by half the
        // threshold, or has not been compared enough to say (one restored after a
        // restart starts without trials).
        let keeps = self.active != 0
            && self.tallies.get(self.active).is_some_and(|tally| {
                tally.wins + tally.losses < MIN_DISCORDANT || evidence_of(tally) >= needed / 2.0
            });
        if keeps || (self.active == 0 && self.tallies.len() < 2) {
            return None;
        }
        let best = self
            .tallies
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(at, _)| *at != self.active)
            .map(|(at, tally)| (at, evidence_of(tally)))
            .filter(|(_, evidence)| *evidence >= needed)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let (to, evidence) = match best {
            Some(best) => best,
            // The active one lost its edge and none other has one: the first again.
            None if self.active != 0 => (0, 0.0),
            None => return None,
        };
        self.switch_to(to, evidence, now)
    }
}
