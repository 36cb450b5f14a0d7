//! An account's self-tuning as it holds it ([`Tuners`]): the co-view and co-purchase
//! lists' tuners, `personalized`'s recipe tuner with the trials waiting to be scored,
//! and `similar_sessions`' neighbourhood tuner. Trials are taken on the request path
//! and scored in the models round (`account/`).

use super::recipe::RecipeTuner;
use super::sessions::SessionTuner;
use super::{Pending, Runs, Tuner, Tuning};
use crate::models::ModelSettings;
use crate::zone::ZoneSpec;

/// The tuners, with the recipe trials of type `Trial` waiting to be scored.
#[derive(Debug)]
pub(crate) struct Tuners<Trial> {
    /// Self-tuning of the co-view lists.
    pub(crate) lists: Tuner,
    /// Self-tuning of the co-purchase lists (their partner damping).
    pub(crate) purchase_lists: Tuner,
    /// Self-tuning of `personalized`'s recipe.
    pub(crate) recipe: RecipeTuner,
    /// The recipe trials taken, to be scored off the request path.
    pub(crate) recipe_trials: Pending<Trial>,
    /// Self-tuning of `similar_sessions`' neighbourhood.
    pub(crate) sessions: SessionTuner,
}

impl<Trial> Tuners<Trial> {
    /// The tuners of an account with `zones`, tuning as `tuning` says, counting as
    /// `models` says; `recipe` and `sessions`: whether those two run.
    pub(crate) fn new(
        zones: &[ZoneSpec],
        tuning: Tuning,
        models: &ModelSettings,
        recipe: Runs,
        sessions: Runs,
    ) -> Tuners<Trial> {
        Tuners {
            lists: Tuner::new(tuning, models),
            purchase_lists: Tuner::for_purchases(tuning, &models.for_purchases()),
            recipe: RecipeTuner::new(zones, recipe, models.tuning_trials_per_second),
            recipe_trials: Pending::new(models.tuning_trials_per_second),
            sessions: SessionTuner::new(tuning, sessions, models),
        }
    }
}
