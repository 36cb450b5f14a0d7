//! Self-tuning of the account's co-view and co-purchase lists (see [`crate::tuning`]):
//! scoring the grid on a sampled visitor's request before it is applied, and switching
//! the lists to the setting that wins. The co-view lists are tried on the steps of a
//! visit they count (product views, and basket lines put in from elsewhere than their
//! page), the co-purchase lists on products put in the basket or ordered (each a
//! window, a partner damping and a weight on the pairs' direction).

use std::sync::atomic::Ordering;

use crate::account::Account;
use crate::account::request::Sampled;
use crate::account::settings::AccountSettings;
use crate::event::Event;
use crate::models::CoCounts;
use crate::models::{ListSetting, ModelSettings, NO_KEY};
use crate::prequential::TOP_K;
use crate::recommend::{HistoryWeights, history_weights};
use crate::tuning::{Lists, Runs, Trial, Tuner, TuningReport};
use crate::visitor::LiveVisitor;
use crate::zone::{Strategy, ZoneRecipe, ZoneSpec};

impl Account {
    /// Takes a trial of self-tuning, if one is due and the request's first step of the
    /// visit (a product view, or a basket or order line new to the basket and put in
    /// from elsewhere than its page) is
    /// sampled ([`crate::prequential::sampled_view`]) and new to the visitor: the
    /// co-view pairs of the visitor's latest views (weighed as `personalized` weighs
    /// them, [`shadow_seed_weights`]) and that product, before the request is
    /// applied. Scored by [`Account::score_trials`].
    pub(crate) fn take_trial(&self, sampled: &Sampled<'_>, live: &mut LiveVisitor) {
        let Sampled {
            visitor_id,
            events,
            catalogue,
            zones,
            now,
            ..
        } = *sampled;
        // A basket or order line is a step of the visit when it is new to the basket
        // and not put in from its own page (the latest view), as `Account::see_added`
        // counts it.
        let visitor = live.state();
        let step = |id: &str| !visitor.is_latest_view(id) && !visitor.has_in_basket(id);
        let Some(first) = events.iter().find_map(|event| match event {
            Event::ProductView { id } => Some(id.as_str()),
            Event::SetBasket { items } => items.iter().map(|l| l.id.as_str()).find(|id| step(id)),
            Event::Order(order) => order
                .items
                .iter()
                .map(|l| l.id.as_str())
                .find(|id| step(id)),
            _ => None,
        }) else {
            return;
        };
        if !crate::prequential::sampled_view(visitor_id, first) {
            return;
        }
        if catalogue.idx_of(first).is_none() {
            return;
        }
        // What is cheap first: a visitor with views, a product new to them, a trial due
        // (the bound); then the copy.
        let recent_keys = live.recent_keys(&self.models.product_keys, catalogue);
        if recent_keys.is_empty() {
            return;
        }
        let target = self.models.product_keys.existing(first);
        if target.is_some_and(|key| recent_keys.contains(&key)) {
            return;
        }
        let Some(grid) = self.tuners.lists.due(now) else {
            return;
        };
        let recent: Vec<u32> = recent_keys.iter().rev().copied().collect();
        let seeds = shadow_seed_weights(zones, &recent);
        self.tuners.lists.queue(Trial {
            grid,
            seeds: self.models.coview.shadow_seeds(&seeds),
            skip: recent,
            // Never counted: no setting can rank it (a miss for every one).
            targets: smallvec::smallvec![target],
            now,
        });
    }

    /// Takes a trial of the co-purchase lists' self-tuning, if one is due and the
    /// request's first product put in the basket or ordered is sampled
    /// ([`crate::prequential::sampled_view`]) and new to the visitor (neither bought
    /// nor in the basket): the co-purchase pairs of the visitor's basket lines and
    /// purchases (latest first, weighed as `personalized` weighs its views) and that
    /// product, before the request is applied. Scored by [`Account::score_trials`].
    pub(crate) fn take_purchase_trial(&self, sampled: &Sampled<'_>, live: &LiveVisitor) {
        let Sampled {
            visitor_id,
            events,
            catalogue,
            zones,
            now,
            ..
        } = *sampled;
        let owned = |id: &str| live.has_in_basket(id) || live.purchased.iter().any(|p| p == id);
        let Some(first) = events.iter().find_map(|event| match event {
            Event::SetBasket { items } => items.iter().map(|l| l.id.as_str()).find(|id| !owned(id)),
            Event::Order(order) => order
                .items
                .iter()
                .map(|l| l.id.as_str())
                .find(|id| !owned(id)),
            _ => None,
        }) else {
            return;
        };
        if !crate::prequential::sampled_view(visitor_id, first)
            || catalogue.idx_of(first).is_none()
            || (live.basket.is_empty() && live.purchased.is_empty())
        {
            return;
        }
        let Some(grid) = self.tuners.purchase_lists.due(now) else {
            return;
        };
        let history: Vec<u32> = live
            .basket
            .iter()
            .rev()
            .map(|line| line.id.as_str())
            .chain(live.purchased.iter().rev().map(|p| p.as_str()))
            .filter_map(|id| self.models.product_keys.existing(id))
            .collect();
        let seeds = shadow_seed_weights(zones, &history);
        self.tuners.purchase_lists.queue(Trial {
            grid,
            seeds: self.models.copurchase.shadow_seeds(&seeds),
            skip: history,
            targets: smallvec::smallvec![self.models.product_keys.existing(first)],
            now,
        });
    }

    /// Scores the trials taken since the last call (on the models' rebuild round, off
    /// the request path): where each setting of the grid ranks each product a trial's
    /// request brought. Switches the lists when a setting wins. Before them, the
    /// recipe's ([`Account::score_recipe_trials`]) and the sessions' neighbourhood's
    /// ([`Account::score_session_trials`]).
    pub(crate) fn score_trials(&self) {
        self.score_recipe_trials();
        self.score_session_trials();
        for lists in [Lists::CoPurchase, Lists::CoView] {
            let (tuner, counts) = self.tuned(lists);
            while let Some(trial) = tuner.take() {
                for target in &trial.targets {
                    let ranks = match target {
                        Some(target) => counts.shadow_ranks(
                            &trial.seeds,
                            &trial.skip,
                            *target,
                            &trial.grid,
                            TOP_K,
                        ),
                        // Never counted: no setting can rank it.
                        None => trial.grid.iter().map(|_| None).collect(),
                    };
                    if let Some(setting) = tuner.record(&trial.grid, &ranks, trial.now) {
                        self.read_lists_at(lists, setting);
                    }
                }
            }
        }
    }

    /// The tuner of `lists` and the counts they are read from.
    fn tuned(&self, lists: Lists) -> (&Tuner, &CoCounts) {
        match lists {
            Lists::CoView => (&self.tuners.lists, &self.models.coview),
            Lists::CoPurchase => (&self.tuners.purchase_lists, &self.models.copurchase),
        }
    }

    /// Reads `lists` at `setting` from the next rebuild on, every list sorted again.
    fn read_lists_at(&self, lists: Lists, setting: ListSetting) {
        let (_, counts) = self.tuned(lists);
        counts.configure(with_lists(
            &list_models(lists, &self.settings.load().models),
            setting,
        ));
        counts.queue_all();
        self.models.models_stale.store(true, Ordering::Release);
    }

    /// A new configuration for `lists` (a reload): their tuner's grid, and the lists
    /// read at its active setting, sorted again when that setting changed.
    pub(crate) fn reconfigure_lists(&self, lists: Lists, settings: &AccountSettings) {
        let (tuner, counts) = self.tuned(lists);
        let models = list_models(lists, &settings.models);
        let read_at = |counts: &CoCounts| (counts.window(), counts.dampings(), counts.forward());
        let before = read_at(counts);
        let active = tuner.reconfigure(settings.tuning, &models);
        counts.configure(with_lists(&models, active));
        if read_at(counts) != before {
            counts.queue_all();
        }
    }

    /// Makes `setting`, chosen by self-tuning before a restart, the active one of
    /// `lists`, if tuning is on and its grid has it. Returns whether it did.
    fn restore_setting(&self, lists: Lists, setting: ListSetting) -> bool {
        let (tuner, _) = self.tuned(lists);
        if !tuner.restore(setting) {
            return false;
        }
        self.read_lists_at(lists, setting);
        true
    }

    /// Makes `setting`, chosen by self-tuning before a restart, the co-view lists'
    /// active one, if tuning is on and its grid has it. Returns whether it did.
    pub fn restore_list_setting(&self, setting: ListSetting) -> bool {
        self.restore_setting(Lists::CoView, setting)
    }

    /// [`Account::restore_list_setting`] for the co-purchase lists.
    pub fn restore_purchase_list_setting(&self, setting: ListSetting) -> bool {
        self.restore_setting(Lists::CoPurchase, setting)
    }

    /// What self-tuning of the co-view lists knows now.
    pub fn model_tuning(&self) -> TuningReport {
        self.tuners.lists.report()
    }

    /// What self-tuning of the co-purchase lists knows now.
    pub fn purchase_model_tuning(&self) -> TuningReport {
        self.tuners.purchase_lists.report()
    }

    /// Bumped by every change of an active list setting (co-view or co-purchase), of
    /// `personalized`'s recipe or of the sessions' neighbourhood.
    pub fn tuning_generation(&self) -> u64 {
        self.tuners
            .lists
            .generation()
            .wrapping_add(self.tuners.purchase_lists.generation())
            .wrapping_add(self.tuners.recipe.generation())
            .wrapping_add(self.tuners.sessions.generation())
    }
}

impl AccountSettings {
    /// Whether `personalized`'s recipe tunes itself: tuning on, and the shoppers
    /// judged (self-evaluation, whose judged requests it is tried on).
    pub(crate) fn tunes_recipe(&self) -> Runs {
        if self.self_evaluation && self.tuning != crate::tuning::Tuning::Off {
            Runs::Yes
        } else {
            Runs::No
        }
    }

    /// Whether `similar_sessions`' neighbourhood tunes itself: as the recipe, with
    /// sessions kept and a zone that reads them (or a `personalized` one whose recipe
    /// may blend them in).
    pub(crate) fn tunes_sessions(&self) -> Runs {
        let read = self.zones.iter().any(|zone| {
            zone.reads_sessions()
                || (zone.strategy == Some(Strategy::Personalized) && !zone.recipe.pinned.sessions)
        });
        if self.tunes_recipe() == Runs::Yes && self.models.sessions > 0 && read {
            Runs::Yes
        } else {
            Runs::No
        }
    }
}

/// The visitor's latest views (`recent`, newest first) as the seeds of a trial,
/// weighed as the first `personalized` zone of `zones` weighs its views (the
/// defaults without one): the latest `history` each `recency` times the one after
/// it, and the latest [`crate::zone::LONG_TERM_HISTORY`] sharing `long_term` on top.
fn shadow_seed_weights(zones: &[ZoneSpec], recent: &[u32]) -> Vec<(u32, f64)> {
    let spec = zones
        .iter()
        .find(|zone| zone.strategy == Some(Strategy::Personalized));
    let recipe = spec.map_or_else(ZoneRecipe::default, |zone| zone.recipe);
    let settings = HistoryWeights::of(&recipe);
    let views: Vec<u32> = recent.iter().copied().filter(|k| *k != NO_KEY).collect();
    let weights = history_weights(settings, views.len(), 1.0);
    views.into_iter().zip(weights).collect()
}

/// `models` as `lists` read them: the co-purchase lists as
/// [`ModelSettings::for_purchases`].
fn list_models(lists: Lists, models: &ModelSettings) -> ModelSettings {
    match lists {
        Lists::CoView => *models,
        Lists::CoPurchase => models.for_purchases(),
    }
}

/// `models` with the co-view lists read at `setting`.
pub(super) fn with_lists(models: &ModelSettings, setting: ListSetting) -> ModelSettings {
    ModelSettings {
        co_view_window: setting.window,
        partner_damping: setting.partner_damping,
        co_view_forward: setting.forward,
        ..*models
    }
}

mod recipe;
mod sessions;
#[cfg(test)]
mod tests;
