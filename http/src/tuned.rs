//! The co-view list setting self-tuning chose for an account
//! (`vitrine_engine::tuning`), kept in the account's directory as `tuned-models.json`, so
//! that a restart reads the lists as before it and tuning goes on from there.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use vitrine_engine::Account;
use vitrine_engine::models::{CoViewWindow, ListSetting};

/// The file's name in the account's directory.
pub const FILE: &str = vitrine_ingest::store::TUNED_MODELS_FILE;

/// What the file holds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Stored {
    co_view_window: usize,
    partner_damping: f32,
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
        match std::fs::read(dir.join(FILE)) {
            Ok(bytes) => match serde_json::from_slice::<Stored>(&bytes) {
                Ok(stored) => match CoViewWindow::of_steps(stored.co_view_window) {
                    Some(window) => {
                        let setting = ListSetting {
                            window,
                            partner_damping: stored.partner_damping,
                        };
                        if account.restore_list_setting(setting) {
                            tracing::info!(account = %key, co_view_window = stored.co_view_window, partner_damping = stored.partner_damping, "co-view lists read at the setting self-tuning chose");
                        } else {
                            tracing::info!(account = %key, co_view_window = stored.co_view_window, partner_damping = stored.partner_damping, "the setting self-tuning chose is not tuned by this configuration: the configured one is used");
                        }
                    }
                    None => {
                        tracing::warn!(account = %key, file = FILE, "not a co-view window: {}; ignored", stored.co_view_window);
                    }
                },
                Err(error) => {
                    tracing::warn!(account = %key, file = FILE, %error, "unreadable; ignored")
                }
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                tracing::warn!(account = %key, file = FILE, %error, "unreadable; ignored")
            }
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
        let stored = Stored {
            co_view_window: active.window.steps(),
            partner_damping: active.partner_damping,
        };
        let bytes = serde_json::to_vec(&stored).unwrap_or_default();
        match vitrine_snapshots::atomic_write(&self.dir, FILE, &bytes) {
            Ok(()) => {
                self.written.store(generation, Ordering::Release);
                if let Some(switch) = report.switches.last() {
                    tracing::info!(
                        account = %account.access_key(),
                        co_view_window = active.window.steps(),
                        partner_damping = active.partner_damping,
                        from_co_view_window = switch.from.window.steps(),
                        from_partner_damping = switch.from.partner_damping,
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
