//! Self-tuning of `personalized`'s recipe: how many of the latest views it starts from
//! (`history`), the long-term part (`long_term`), the sessions like the shopper's
//! (`sessions`), popularity (`popularity`) and the shopper's purchases (`purchases`).
//!
//! The grid ([`recipe_grid`]) crosses a few values of each (the configured ones among
//! them) but those the zone pins. It is tried on the visitors self-evaluation judges
//! ([`crate::prequential`]): a sampled visitor's request, at most
//! [`ModelSettings::tuning_trials_per_second`](crate::models::ModelSettings) times a
//! second (a bound of its own, beside judging's), is kept as it was before it was
//! applied, and off the request path (on the models' rebuild round) the account's
//! first `personalized` zone is filled for it under each recipe; each recipe is a hit
//! when a product the request brought is in its top
//! [`TOP_K`](crate::prequential::TOP_K). Each recipe is compared with the configured
//! one by the lists' sequential test, but its trials are never started again
//! (`Board::anchored`): the recipe that beats the configured one significantly
//! fills the zone until its edge fades (what wins while a store's models are young,
//! popularity above all, stops winning as they learn), and the configured one does
//! again.
//!
//! This is also the guard against `personalized` losing to simpler strategies: the
//! grid holds the recipe that reads the latest view alone (`history = 1`, no long-term
//! part: `viewed_together` of the latest view), the ones that blend in popularity
//! (`trending`) and the ones that leave the shopper's purchases out (the visit alone:
//! `basket_cross_sell` on a basket), so where those predict better, the tuning moves to
//! them until the zone no longer loses.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{Board, Runs, Switch, Tally, active_in, threshold};
use crate::bucket::TokenBucket;
use crate::catalogue::UnixMillis;
pub use crate::zone::RecipePins;
use crate::zone::{Strategy, ZoneRecipe, ZoneSpec};

/// The values of `personalized`'s recipe that self-tuning chooses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recipe {
    /// [`ZoneSpec::history`].
    pub history: usize,
    /// [`ZoneSpec::long_term`].
    pub long_term: f64,
    /// [`ZoneSpec::sessions`].
    pub sessions: f64,
    /// [`ZoneSpec::popularity`].
    pub popularity: f64,
    /// [`ZoneSpec::purchases`].
    pub purchases: f64,
}

/// The histories compared beside the configured one: the latest view alone, and the
/// latest few.
pub const HISTORIES: [usize; 2] = [1, 3];
/// The session weights compared beside the configured one: none, and the sessions'
/// best product weighing as much as the pairs' best. A trial reads the sessions as of
/// the pair lists it reads (the sessions' tick when they were sorted), so that
/// neither part wins for being fresher: read as recorded while the lists were a
/// rebuild behind, the trials chose the sessions on MovieLens latest-small and lost
/// 13 % (docs/quality.md).
pub const SESSION_WEIGHTS: [f64; 2] = [0.0, 1.0];
/// The popularity weights compared (0: none).
pub const POPULARITY_WEIGHTS: [f64; 2] = [0.0, 0.1];
/// The purchases' weights compared beside the configured one: none, the visit alone
/// (what `basket_cross_sell` reads of the basket; the guard's third simpler strategy).
pub const PURCHASE_WEIGHTS: [f64; 1] = [0.0];

impl Recipe {
    /// The recipe `spec` is filled with.
    pub fn of(spec: &ZoneSpec) -> Recipe {
        Recipe {
            history: spec.recipe.history,
            long_term: spec.recipe.long_term,
            sessions: spec.recipe.sessions,
            popularity: spec.recipe.popularity,
            purchases: spec.recipe.purchases,
        }
    }

    /// `spec` filled with this recipe.
    pub fn applied(self, spec: &ZoneSpec) -> ZoneSpec {
        ZoneSpec {
            recipe: ZoneRecipe {
                history: self.history,
                long_term: self.long_term,
                sessions: self.sessions,
                popularity: self.popularity,
                purchases: self.purchases,
                ..spec.recipe
            },
            ..spec.clone()
        }
    }
}

/// The recipes compared for `spec`: the configured one first, then every history of
/// [`HISTORIES`] and the configured one, by a long-term part of 0 and the configured
/// one, by [`SESSION_WEIGHTS`], by [`POPULARITY_WEIGHTS`] and by [`PURCHASE_WEIGHTS`]
/// (each with the configured one); a value the zone pins stays as configured. One
/// recipe when everything is pinned.
pub fn recipe_grid(spec: &ZoneSpec) -> Vec<Recipe> {
    let configured = Recipe::of(spec);
    let pins = spec.recipe.pinned;
    let mut crossed = vec![configured];
    crossed = cross(
        &crossed,
        &values(pins.history, configured.history, &HISTORIES),
        |r, history| Recipe { history, ..r },
    );
    crossed = cross(
        &crossed,
        &values(pins.long_term, configured.long_term, &[0.0]),
        |r, long_term| Recipe { long_term, ..r },
    );
    crossed = cross(
        &crossed,
        &values(pins.sessions, configured.sessions, &SESSION_WEIGHTS),
        |r, sessions| Recipe { sessions, ..r },
    );
    crossed = cross(
        &crossed,
        &values(pins.popularity, configured.popularity, &POPULARITY_WEIGHTS),
        |r, popularity| Recipe { popularity, ..r },
    );
    crossed = cross(
        &crossed,
        &values(pins.purchases, configured.purchases, &PURCHASE_WEIGHTS),
        |r, purchases| Recipe { purchases, ..r },
    );
    let mut grid = vec![configured];
    for recipe in crossed {
        if !grid.contains(&recipe) {
            grid.push(recipe);
        }
    }
    grid
}

/// The values of one part of the recipe compared: the configured one alone when the
/// zone pins it, else `others` and the configured one.
fn values<T: Copy + PartialEq>(pinned: bool, own: T, others: &[T]) -> Vec<T> {
    if pinned {
        return vec![own];
    }
    let mut values = others.to_vec();
    if !values.contains(&own) {
        values.push(own);
    }
    values
}

/// Each of `recipes` with each of `values` put in by `set`, in that order (the parts
/// crossed first vary slowest).
fn cross<T: Copy>(
    recipes: &[Recipe],
    values: &[T],
    set: impl Fn(Recipe, T) -> Recipe,
) -> Vec<Recipe> {
    recipes
        .iter()
        .flat_map(|recipe| values.iter().map(|value| set(*recipe, *value)))
        .collect()
}

/// What recipe self-tuning knows: the zone it tunes, the grid with each recipe's
/// trials, the active recipe and the latest switches.
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeReport {
    /// The zone tuned (the account's first `personalized` zone), if any.
    pub zone: Option<String>,
    /// Whether it tunes (a zone, tuning on, and more than one recipe).
    pub tuning: bool,
    /// What the zone pins.
    pub pins: RecipePins,
    /// The recipe the zone is filled with.
    pub active: Option<Recipe>,
    /// Each recipe with its trials since the last switch.
    pub settings: Vec<(Recipe, Tally)>,
    /// The evidence a recipe needs to replace the active one.
    pub threshold: f64,
    /// The latest switches, oldest first.
    pub switches: Vec<Switch<Recipe>>,
    /// Trials dropped because too many waited to be scored (counted by whoever queues
    /// them: 0 here).
    pub dropped: u64,
}

#[derive(Debug)]
struct State {
    /// The tuned zone as configured, and whether tuning is on.
    zone: Option<ZoneSpec>,
    on: bool,
    board: Board<Recipe>,
    bucket: TokenBucket,
}

/// An account's recipe tuning (see the module).
#[derive(Debug)]
pub struct RecipeTuner {
    state: Mutex<State>,
    /// Bumped by every change of the active recipe.
    generation: AtomicU64,
}

/// The account's first `personalized` zone.
fn tuned_zone(zones: &[ZoneSpec]) -> Option<&ZoneSpec> {
    zones
        .iter()
        .find(|zone| zone.strategy == Some(Strategy::Personalized))
}

impl RecipeTuner {
    /// Tuning of the first `personalized` zone of `zones`, when it `runs`, at most
    /// `per_second` trials a second.
    pub fn new(zones: &[ZoneSpec], runs: Runs, per_second: u32) -> RecipeTuner {
        let zone = tuned_zone(zones).cloned();
        let grid = zone.as_ref().map(recipe_grid).unwrap_or_default();
        RecipeTuner {
            state: Mutex::new(State {
                zone,
                on: runs == Runs::Yes,
                board: Board::anchored(grid),
                bucket: TokenBucket::new(per_second),
            }),
            generation: AtomicU64::new(0),
        }
    }

    /// A new configuration (a reload): the grid of its first `personalized` zone; the
    /// active recipe stays if the new grid has it, else the configured one is active.
    pub fn reconfigure(&self, zones: &[ZoneSpec], runs: Runs, per_second: u32) {
        let on = runs == Runs::Yes;
        let zone = tuned_zone(zones).cloned();
        let grid = zone.as_ref().map(recipe_grid).unwrap_or_default();
        let mut state = self.state.lock();
        state.bucket.set_rate(per_second);
        let before = state.board.active();
        let kept = before.filter(|r| on && grid.contains(r));
        let active = kept.map_or(0, |recipe| active_in(&grid, recipe));
        if state.board.grid != grid || state.on != on {
            state.board.regrid(grid, active);
        }
        state.zone = zone;
        state.on = on;
        if state.board.active() != before {
            self.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// The zone as configured and the recipes to try on it, if a trial at `now` is due.
    pub fn due(&self, now: UnixMillis) -> Option<(ZoneSpec, Vec<Recipe>)> {
        let mut state = self.state.lock();
        if !state.on || state.board.grid.len() <= 1 {
            return None;
        }
        let zone = state.zone.clone()?;
        state
            .bucket
            .take(now)
            .then(|| (zone, state.board.grid.clone()))
    }

    /// Counts one trial: where each recipe of `grid` (as [`RecipeTuner::due`] gave it)
    /// ranked a product the request brought. The new active recipe when one replaced
    /// it.
    pub fn record(
        &self,
        grid: &[Recipe],
        ranks: &[Option<usize>],
        now: UnixMillis,
    ) -> Option<Recipe> {
        let switch = self.state.lock().board.record_on(grid, ranks, now)?;
        self.generation.fetch_add(1, Ordering::Release);
        Some(switch.to)
    }

    /// The recipe the tuned zone is filled with, when tuning is on.
    pub fn active(&self) -> Option<Recipe> {
        let state = self.state.lock();
        if !state.on {
            return None;
        }
        state.board.active()
    }

    /// Makes `recipe` (chosen before a restart) the active one, if tuning is on and
    /// the grid has it. Returns whether it did.
    pub fn restore(&self, recipe: Recipe) -> bool {
        let mut state = self.state.lock();
        if !state.on || !state.board.restore(recipe) {
            return false;
        }
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    /// Bumped by every change of the active recipe.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// What recipe tuning knows now.
    pub fn report(&self) -> RecipeReport {
        let state = self.state.lock();
        RecipeReport {
            zone: state.zone.as_ref().map(|zone| zone.id.clone()),
            tuning: state.on && state.board.grid.len() > 1,
            pins: state
                .zone
                .as_ref()
                .map(|zone| zone.recipe.pinned)
                .unwrap_or_default(),
            active: state.board.active(),
            settings: state.board.settings(),
            threshold: threshold(state.board.grid.len()),
            switches: state.board.switches.iter().copied().collect(),
            dropped: 0,
        }
    }
}

/// `zones` with every `personalized` zone filled with `recipe` (but what each pins).
pub fn with_recipe(zones: &[ZoneSpec], recipe: Recipe) -> Vec<ZoneSpec> {
    zones
        .iter()
        .map(|zone| {
            if zone.strategy != Some(Strategy::Personalized) {
                return zone.clone();
            }
            let own = Recipe::of(zone);
            let pins = zone.recipe.pinned;
            Recipe {
                history: if pins.history {
                    own.history
                } else {
                    recipe.history
                },
                long_term: if pins.long_term {
                    own.long_term
                } else {
                    recipe.long_term
                },
                sessions: if pins.sessions {
                    own.sessions
                } else {
                    recipe.sessions
                },
                popularity: if pins.popularity {
                    own.popularity
                } else {
                    recipe.popularity
                },
                purchases: if pins.purchases {
                    own.purchases
                } else {
                    recipe.purchases
                },
            }
            .applied(zone)
        })
        .collect()
}

#[cfg(test)]
mod tests;
