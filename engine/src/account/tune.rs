//! Self-tuning of the account's co-view lists (see [`crate::tuning`]): scoring the grid
//! on a sampled visitor's request before it is applied, and switching the lists to the
//! setting that wins.

use std::sync::atomic::Ordering;

use super::Account;
use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::models::{CoViewWindow, ListSetting, ModelSettings, NO_KEY};
use crate::prequential::TOP_K;
use crate::tuning::TuningReport;
use crate::zone::{DEFAULT_HISTORY, DEFAULT_RECENCY};

impl Account {
    /// One trial of self-tuning, if one is due: where each setting of the grid would
    /// rank each of `brought` (products new to the visitor) in a blend of the co-view
    /// lists of their latest views (`recent`, keys newest first), weighed as
    /// `personalized` weighs them by default. Switches the lists when a setting wins.
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
        for &product in brought {
            let key = catalogue
                .product(product)
                .and_then(|p| self.product_keys.existing(p.id.as_str()));
            let ranks = match key {
                Some(target) => self
                    .coview
                    .shadow_ranks(&seeds, recent, target, &grid, TOP_K),
                // Never counted: no setting can rank it.
                None => grid.iter().map(|_| None).collect(),
            };
            if let Some(setting) = self.tuner.record(&grid, &ranks, now) {
                self.read_lists_at(setting);
                return;
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
