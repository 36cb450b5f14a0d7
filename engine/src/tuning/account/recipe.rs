//! Self-tuning of `personalized`'s recipe (see [`crate::tuning::recipe`]): a trial taken
//! on a sampled visitor's request (the visitor before it, the models it was served
//! from, the products it brought), scored off the request path on the models' rebuild
//! round, and the zones switched to the recipe that wins.

use crate::account::Account;
use crate::account::settings::AccountSettings;
use crate::account::visitor_view::CurrencyAt;
use crate::catalogue::ProductIdx;
use crate::models::AsOf;
use crate::prequential::{TOP_K, rank_of};
use crate::recommend::fill_zone;
use crate::tuning::recipe::{Recipe, RecipeReport};
use crate::zone::ZoneSpec;

impl Account {
    /// Scores the recipe trials taken since the last call (on the models' rebuild
    /// round): each recipe of a trial's grid fills the zone for the visitor as they
    /// were, on the page of their latest view, and is a hit when a product the request
    /// brought is in its top [`TOP_K`] of the products new to the visitor. Switches the
    /// zones' recipe when one wins.
    pub(crate) fn score_recipe_trials(&self) {
        while let Some(mut trial) = self.tuners.recipe_trials.pop() {
            if let Some(sessions) = &trial.sessions {
                trial.snapshot.similar_sessions = self.session_neighbourhood(
                    &sessions.visitor_id,
                    &trial.snapshot.latest_products(),
                    &trial.catalogue,
                    AsOf::Tick(sessions.tick),
                );
            }
            let ctx = trial.snapshot.judged_context(
                &trial.catalogue,
                &trial.rankings,
                &trial.published,
                CurrencyAt {
                    currency: trial.currency,
                    now: trial.now,
                },
            );
            // What the request brought is new to the visitor: each recipe is ranked
            // among the products that can be, its first [`TOP_K`] of those (a product
            // the visitor viewed, has in the basket or bought can never be the one).
            let snapshot = &trial.snapshot;
            let room = snapshot.products().count();
            let shown: Vec<Vec<ProductIdx>> = trial
                .grid
                .iter()
                .map(|recipe| {
                    let spec = ZoneSpec {
                        count: TOP_K + room,
                        ..recipe.applied(&trial.zone)
                    };
                    fill_zone(&spec, &ctx)
                        .iter()
                        .map(|item| item.product)
                        .filter(|product| !snapshot.has(*product))
                        .take(TOP_K)
                        .collect()
                })
                .collect();
            for &product in &trial.brought {
                let ranks: Vec<Option<usize>> = shown
                    .iter()
                    .map(|items| rank_of(items.iter().copied(), product))
                    .collect();
                if self
                    .tuners
                    .recipe
                    .record(&trial.grid, &ranks, trial.now)
                    .is_some()
                {
                    self.apply_recipe();
                }
            }
        }
    }

    /// Fills the `personalized` zones with the active recipe from now on.
    pub(crate) fn apply_recipe(&self) {
        let Some(recipe) = self.tuners.recipe.active() else {
            return;
        };
        self.settings.rcu(|settings| AccountSettings {
            zones: crate::tuning::recipe::with_recipe(&settings.zones, recipe),
            ..(**settings).clone()
        });
    }

    /// Makes `recipe`, chosen by self-tuning before a restart, the active one, if
    /// tuning is on and its grid has it. Returns whether it did.
    pub fn restore_recipe(&self, recipe: Recipe) -> bool {
        if !self.tuners.recipe.restore(recipe) {
            return false;
        }
        self.apply_recipe();
        true
    }

    /// What self-tuning of `personalized`'s recipe knows now.
    pub fn recipe_tuning(&self) -> RecipeReport {
        RecipeReport {
            dropped: self.tuners.recipe_trials.dropped(),
            ..self.tuners.recipe.report()
        }
    }
}

#[cfg(test)]
pub(super) mod tests;
