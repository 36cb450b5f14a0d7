//! Self-tuning of `similar_sessions`' neighbourhood (see [`crate::tuning::sessions`]):
//! a trial taken on a judged visitor's request (their latest products and the
//! sessions' tick before it), scored off the request path on the models' rebuild round
//! under every setting, and the index read at the setting that wins.

use smallvec::SmallVec;

use crate::account::Account;
use crate::account::request::Sampled;
use crate::account::visitor_view::VisitorSnapshot;
use crate::catalogue::ProductIdx;
use crate::models::{AsOf, SessionSetting};
use crate::prequential::{TOP_K, rank_of};
use crate::tuning::sessions::{SessionReport, SessionTrial};

impl Account {
    /// Takes a trial of the neighbourhood's settings, if one is due (`grid`): the
    /// visitor before the request (`snapshot`) and the products it brought that are
    /// new to them, as keys, with the sessions' tick now.
    pub(crate) fn take_session_trial(
        &self,
        sampled: &Sampled<'_>,
        snapshot: &VisitorSnapshot,
        brought: &[ProductIdx],
        grid: Vec<SessionSetting>,
    ) {
        let Sampled {
            visitor_id,
            catalogue,
            now,
            ..
        } = *sampled;
        let key = |idx: &ProductIdx| {
            let product = catalogue.product(*idx)?;
            self.models.product_keys.existing(product.id.as_str())
        };
        let latest: SmallVec<[u32; 20]> =
            snapshot.latest_products().iter().filter_map(key).collect();
        let targets: SmallVec<[u32; 8]> = brought.iter().filter_map(key).collect();
        if latest.is_empty() || targets.is_empty() {
            return;
        }
        self.tuners.sessions.queue(SessionTrial {
            grid,
            latest,
            visitor: crate::analytics::session_key(visitor_id),
            skip: snapshot.products().filter_map(|idx| key(&idx)).collect(),
            targets,
            tick: self.models.similar_sessions.tick(),
            now,
        });
    }

    /// Scores the neighbourhood's trials taken since the last call (on the models'
    /// rebuild round): each setting reads the trial's neighbourhood as the sessions
    /// were before its request, and is a hit when a product the request brought is in
    /// its top [`TOP_K`] of the products new to the visitor. Reads the sessions at the
    /// setting that wins.
    pub(crate) fn score_session_trials(&self) {
        while let Some(trial) = self.tuners.sessions.take() {
            let limit = TOP_K + trial.skip.len();
            let read = self.models.similar_sessions.neighbourhoods(
                &trial.latest,
                trial.visitor,
                limit,
                AsOf::Tick(trial.tick),
                &trial.grid,
            );
            let shown: Vec<SmallVec<[u32; TOP_K]>> = read
                .iter()
                .map(|scored| {
                    scored
                        .iter()
                        .map(|(key, _)| *key)
                        .filter(|key| !trial.skip.contains(key))
                        .take(TOP_K)
                        .collect()
                })
                .collect();
            for target in &trial.targets {
                let ranks: Vec<Option<usize>> = shown
                    .iter()
                    .map(|keys| rank_of(keys.iter().copied(), *target))
                    .collect();
                if let Some(setting) = self.tuners.sessions.record(&trial.grid, &ranks, trial.now) {
                    self.models.similar_sessions.configure(setting);
                }
            }
        }
    }

    /// Makes `setting`, chosen by self-tuning before a restart, the one
    /// `similar_sessions`' neighbourhood is read at, if tuning is on and its grid has
    /// it. Returns whether it did.
    pub fn restore_session_setting(&self, setting: SessionSetting) -> bool {
        if !self.tuners.sessions.restore(setting) {
            return false;
        }
        self.models.similar_sessions.configure(setting);
        true
    }

    /// What self-tuning of `similar_sessions`' neighbourhood knows now.
    pub fn session_tuning(&self) -> SessionReport {
        self.tuners.sessions.report()
    }
}

#[cfg(test)]
mod tests;
