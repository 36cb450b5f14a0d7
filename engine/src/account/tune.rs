//! Self-tuning of the account's co-view lists (see [`crate::tuning`]): scoring the grid
//! on a sampled visitor's request before it is applied, and switching the lists to the
//! setting that wins.

use std::sync::atomic::Ordering;

use super::Account;
use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::models::{CoViewWindow, ListSetting, ModelSettings, NO_KEY};
use crate::prequential::TOP_K;
use crate::tuning::{Trial, TuningReport};
use crate::zone::{DEFAULT_HISTORY, DEFAULT_RECENCY};

impl Account {
    /// Takes a trial of self-tuning, if one is due: the co-view counts of the visitor's
    /// latest views (`recent`, keys newest first; weighed as `personalized` weighs them
    /// by default) and the products the request brings that are new to them
    /// (`brought`), before it is applied. Scored by [`Account::score_trials`].
    pub(super) fn tune(
        &self,
        recent: &[u32],
        brought: &[ProductIdx],
        catalogue: &Catalogue,
        now: UnixMillis,
    ) {
        let mut weight = 1.0;
        let seeds: smallvec::SmallVec<[(u32, f64); DEFAULT_HISTORY]> = recent
            .iter()
            .filter(|key| **key != NO_KEY)
            .take(DEFAULT_HISTORY)
            .map(|key| {
                let seed = (*key, weight);
                weight *= DEFAULT_RECENCY;
                seed
            })
            .collect();
        if seeds.is_empty() {
            return;
        }
        let Some(grid) = self.tuner.due(now) else {
            return;
        };
        let targets = brought
            .iter()
            .map(|product| {
                catalogue
                    .product(*product)
                    .and_then(|p| self.product_keys.existing(p.id.as_str()))
            })
            .collect();
        self.tuner.queue(Trial {
            grid,
            seeds: self.coview.shadow_seeds(&seeds),
            skip: recent.to_vec(),
            targets,
            now,
        });
    }

    /// Scores the trials taken since the last call (on the models' rebuild round, off
    /// the request path): where each setting of the grid ranks each product a trial's
    /// request brought. Switches the lists when a setting wins.
    pub(super) fn score_trials(&self) {
        while let Some(trial) = self.tuner.take() {
            for target in &trial.targets {
                let ranks = match target {
                    Some(target) => self.coview.shadow_ranks(
                        &trial.seeds,
                        &trial.skip,
                        *target,
                        &trial.grid,
                        TOP_K,
                    ),
                    // Never counted: no setting can rank it.
                    None => trial.grid.iter().map(|_| None).collect(),
                };
                if let Some(setting) = self.tuner.record(&trial.grid, &ranks, trial.now) {
                    self.read_lists_at(setting);
                }
            }
        }
    }

    /// Reads the co-view lists at `setting` from the next rebuild on, every list
    /// sorted again.
    fn read_lists_at(&self, setting: ListSetting) {
        let models = self.settings.load().models;
        self.coview.configure(with_lists(&models, setting));
        self.coview.queue_all();
        self.models_stale.store(true, Ordering::Release);
    }

    /// Makes `setting`, chosen by self-tuning before a restart, the active one, if
    /// tuning is on and its grid has it. Returns whether it did.
    pub fn restore_list_setting(&self, setting: ListSetting) -> bool {
        if !self.tuner.restore(setting) {
            return false;
        }
        self.read_lists_at(setting);
        true
    }

    /// What self-tuning knows now.
    pub fn model_tuning(&self) -> TuningReport {
        self.tuner.report()
    }

    /// Bumped by every change of the active list setting.
    pub fn tuning_generation(&self) -> u64 {
        self.tuner.generation()
    }
}

/// `models` with the co-view lists read at `setting`.
pub(super) fn with_lists(models: &ModelSettings, setting: ListSetting) -> ModelSettings {
    ModelSettings {
        co_view_window: setting.window,
        partner_damping: setting.partner_damping,
        ..*models
    }
}

/// `models` for the co-purchase lists: an order's lines are all as close as can be, so
/// they are read whole.
pub(super) fn for_purchases(models: &ModelSettings) -> ModelSettings {
    ModelSettings {
        co_view_window: CoViewWindow::Ten,
        ..*models
    }
}

#[cfg(test)]
mod tests;
