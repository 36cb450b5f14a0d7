//! The settings self-tuning chose for an account (`vitrine_engine::tuning`): the
//! co-view lists' window, partner damping and weight on direction, the co-purchase
//! lists' the same, `personalized`'s recipe, and `similar_sessions`' neighbourhood;
//! kept in the account's directory as `tuned-models.json`, so that a restart reads the
//! lists as before it and tuning goes on from there.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use vitrine_engine::Account;
use vitrine_engine::models::{CoViewWindow, ListSetting, SessionSetting};
use vitrine_engine::tuning::recipe::Recipe;

/// The file's name in the account's directory.
pub const FILE: &str = vitrine_ingest::store::TUNED_MODELS_FILE;

/// What the file holds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Stored {
    co_view_window: usize,
    partner_damping: f32,
    /// Absent from files written before the co-purchase lists were tuned.
    #[serde(default)]
    purchase_partner_damping: Option<f32>,
    /// Absent from files written before the co-purchase lists' window was tuned (1).
    #[serde(default)]
    co_purchase_window: Option<usize>,
    /// Absent from files written before the weight on direction was tuned (0).
    #[serde(default)]
    co_view_forward: f32,
    /// See `co_view_forward`.
    #[serde(default)]
    co_purchase_forward: f32,
    /// `personalized`'s recipe; absent from files written before it was tuned, or
    /// without a tuned zone.
    #[serde(default)]
    recipe: Option<StoredRecipe>,
    /// `similar_sessions`' neighbourhood; absent from files written before it was
    /// tuned, or while it is not tuned.
    #[serde(default)]
    sessions: Option<StoredSessions>,
}

/// `similar_sessions`' neighbourhood as the file keeps it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StoredSessions {
    neighbours: usize,
    steps: usize,
}

/// `personalized`'s recipe as the file keeps it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StoredRecipe {
    history: usize,
    long_term: f64,
    sessions: f64,
    popularity: f64,
    /// Absent from a file written before the purchases' weight was tuned: today's
    /// default, so that the rest of the recipe chosen then is kept.
    #[serde(default = "default_purchases")]
    purchases: f64,
}

fn default_purchases() -> f64 {
    vitrine_engine::zone::DEFAULT_PURCHASES
}

impl From<StoredRecipe> for Recipe {
    fn from(stored: StoredRecipe) -> Recipe {
        Recipe {
            history: stored.history,
            long_term: stored.long_term,
            sessions: stored.sessions,
            popularity: stored.popularity,
            purchases: stored.purchases,
        }
    }
}

impl From<Recipe> for StoredRecipe {
    fn from(recipe: Recipe) -> StoredRecipe {
        StoredRecipe {
            history: recipe.history,
            long_term: recipe.long_term,
            sessions: recipe.sessions,
            popularity: recipe.popularity,
            purchases: recipe.purchases,
        }
    }
}

/// An account's file, and the tuning generation it holds.
#[derive(Debug)]
pub struct TunedFile {
    dir: PathBuf,
    written: AtomicU64,
}

impl TunedFile {
    /// Reads the setting kept in `dir`, if any, into `account` (which keeps it only if
    /// tuning is on and its grid has it; otherwise the configuration wins and the file
    /// is left for a later configuration).
    pub fn restore(dir: PathBuf, account: &Account) -> TunedFile {
        let key = account.access_key();
        match read(&dir) {
            Ok(None) => {}
            Ok(Some((setting, purchases, recipe, sessions))) => {
                if let Some(sessions) = sessions {
                    let (neighbours, steps) = (sessions.neighbours, sessions.steps);
                    if account.restore_session_setting(sessions) {
                        tracing::info!(account = %key, neighbours, steps, "similar sessions read at the setting self-tuning chose");
                    } else {
                        tracing::info!(account = %key, neighbours, steps, "the similar sessions' setting self-tuning chose is not tuned by this configuration: the configured one is used");
                    }
                }
                if let Some(recipe) = recipe {
                    if account.restore_recipe(recipe) {
                        tracing::info!(account = %key, ?recipe, "personalized zones filled with the recipe self-tuning chose");
                    } else {
                        tracing::info!(account = %key, ?recipe, "the recipe self-tuning chose is not tuned by this configuration: the configured one is used");
                    }
                }
                if let Some(purchases) = purchases {
                    let (co_purchase_window, partner_damping, co_purchase_forward) = (
                        purchases.window.steps(),
                        purchases.partner_damping,
                        purchases.forward,
                    );
                    if account.restore_purchase_list_setting(purchases) {
                        tracing::info!(account = %key, co_purchase_window, partner_damping, co_purchase_forward, "co-purchase lists read at the setting self-tuning chose");
                    }
                }
                let (co_view_window, partner_damping, co_view_forward) = (
                    setting.window.steps(),
                    setting.partner_damping,
                    setting.forward,
                );
                if account.restore_list_setting(setting) {
                    tracing::info!(account = %key, co_view_window, partner_damping, co_view_forward, "co-view lists read at the setting self-tuning chose");
                } else {
                    tracing::info!(account = %key, co_view_window, partner_damping, co_view_forward, "the setting self-tuning chose is not tuned by this configuration: the configured one is used");
                }
            }
            Err(error) => tracing::warn!(account = %key, file = FILE, %error, "ignored"),
        }
        TunedFile {
            written: AtomicU64::new(account.tuning_generation()),
            dir,
        }
    }

    /// Writes the account's active setting if self-tuning changed it since the last
    /// write (called after each round of the models' rebuild).
    pub fn keep(&self, account: &Account) {
        let generation = account.tuning_generation();
        if self.written.load(Ordering::Acquire) == generation {
            return;
        }
        let report = account.model_tuning();
        let active = report.active;
        let purchases = account.purchase_model_tuning();
        let recipes = account.recipe_tuning();
        let sessions = account.session_tuning();
        let stored = Stored {
            co_view_window: active.window.steps(),
            partner_damping: active.partner_damping,
            purchase_partner_damping: Some(purchases.active.partner_damping),
            co_purchase_window: Some(purchases.active.window.steps()),
            co_view_forward: active.forward,
            co_purchase_forward: purchases.active.forward,
            recipe: recipes
                .active
                .filter(|_| recipes.tuning)
                .map(StoredRecipe::from),
            sessions: sessions.tuning.then_some(StoredSessions {
                neighbours: sessions.active.neighbours,
                steps: sessions.active.steps,
            }),
        };
        let bytes = serde_json::to_vec(&stored).unwrap_or_default();
        match vitrine_snapshots::atomic_write(&self.dir, FILE, &bytes) {
            Ok(()) => {
                self.written.store(generation, Ordering::Release);
                if let Some(switch) = purchases.switches.last() {
                    tracing::info!(
                        account = %account.access_key(),
                        co_purchase_window = purchases.active.window.steps(),
                        partner_damping = purchases.active.partner_damping,
                        co_purchase_forward = purchases.active.forward,
                        from_co_purchase_window = switch.from.window.steps(),
                        from_partner_damping = switch.from.partner_damping,
                        from_forward = switch.from.forward,
                        trials = switch.trials,
                        wins = switch.wins,
                        losses = switch.losses,
                        "self-tuning switched the co-purchase lists"
                    );
                }
                if let Some(switch) = recipes.switches.last() {
                    tracing::info!(
                        account = %account.access_key(),
                        zone = recipes.zone.as_deref().unwrap_or(""),
                        recipe = ?switch.to,
                        from = ?switch.from,
                        trials = switch.trials,
                        wins = switch.wins,
                        losses = switch.losses,
                        "self-tuning switched personalized's recipe"
                    );
                }
                if let Some(switch) = sessions.switches.last() {
                    tracing::info!(
                        account = %account.access_key(),
                        neighbours = sessions.active.neighbours,
                        steps = sessions.active.steps,
                        from_neighbours = switch.from.neighbours,
                        from_steps = switch.from.steps,
                        trials = switch.trials,
                        wins = switch.wins,
                        losses = switch.losses,
                        "self-tuning switched similar sessions' neighbourhood"
                    );
                }
                if let Some(switch) = report.switches.last() {
                    tracing::info!(
                        account = %account.access_key(),
                        co_view_window = active.window.steps(),
                        partner_damping = active.partner_damping,
                        co_view_forward = active.forward,
                        from_co_view_window = switch.from.window.steps(),
                        from_partner_damping = switch.from.partner_damping,
                        from_forward = switch.from.forward,
                        trials = switch.trials,
                        wins = switch.wins,
                        losses = switch.losses,
                        "self-tuning switched the co-view lists"
                    );
                }
            }
            // Tried again after the next round.
            Err(error) => {
                tracing::warn!(account = %account.access_key(), file = FILE, %error, "keeping the tuned setting failed")
            }
        }
    }
}

/// Why a kept setting was not read.
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    #[error("unreadable: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a setting: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not a co-view window: {0}")]
    Window(usize),
}

/// The settings kept: the co-view lists', the co-purchase lists', `personalized`'s
/// recipe and `similar_sessions`' neighbourhood, each when kept.
type Kept = (
    ListSetting,
    Option<ListSetting>,
    Option<Recipe>,
    Option<SessionSetting>,
);

/// The settings kept in `dir`, if there are.
fn read(dir: &std::path::Path) -> Result<Option<Kept>, Unreadable> {
    let bytes = match std::fs::read(dir.join(FILE)) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    let stored: Stored = serde_json::from_slice(&bytes)?;
    let window = CoViewWindow::of_steps(stored.co_view_window)
        .ok_or(Unreadable::Window(stored.co_view_window))?;
    let purchase_window = match stored.co_purchase_window {
        Some(steps) => CoViewWindow::of_steps(steps).ok_or(Unreadable::Window(steps))?,
        None => CoViewWindow::One,
    };
    let purchases = stored
        .purchase_partner_damping
        .map(|partner_damping| ListSetting {
            window: purchase_window,
            partner_damping,
            forward: stored.co_purchase_forward,
        });
    Ok(Some((
        ListSetting {
            window,
            partner_damping: stored.partner_damping,
            forward: stored.co_view_forward,
        },
        purchases,
        stored.recipe.map(Recipe::from),
        stored.sessions.map(|s| SessionSetting {
            neighbours: s.neighbours,
            steps: s.steps,
        }),
    )))
}
