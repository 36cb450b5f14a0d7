//! Shadow lists: how a blend of co-view lists would rank a product under another window
//! and partner damping, read from the same counts (self-tuning compares them, see
//! [`crate::tuning`]).

use rustc_hash::FxHashMap;
use smallvec::{SmallVec, smallvec};

use super::co_counts::damped;
use super::{CoCounts, CoViewWindow};

/// A setting of the co-view lists that self-tuning compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ListSetting {
    /// [`super::ModelSettings::co_view_window`].
    pub window: CoViewWindow,
    /// [`super::ModelSettings::partner_damping`].
    pub partner_damping: f32,
}

/// Settings scored at once, inline up to 9 (the whole grid).
pub type Ranks = SmallVec<[Option<usize>; 9]>;

impl CoCounts {
    /// For each of `settings`, where `target` ranks (from 0) among the products a blend
    /// of `seeds`' co-view lists scores, each list read at that setting: a partner
    /// weighs its sure count at the window, divided by the partner's total to the
    /// setting's partner damping and by the seed's total to the seed damping, times the
    /// seed's weight, as a rebuilt list would weigh it. Every partner of a seed is read
    /// (a rebuilt list keeps its strongest [`super::ModelSettings::neighbours`]), so
    /// every setting is scored alike. `None` when `target` is not among the first `top`
    /// (a product scoring as much as it counts below it) or scores nothing. Products in
    /// `skip` are left out.
    ///
    /// Costs a lookup per partner of each seed (at most
    /// [`super::ModelSettings::partners`] each), whatever the number of settings.
    pub fn shadow_ranks(
        &self,
        seeds: &[(u32, f64)],
        skip: &[u32],
        target: u32,
        settings: &[ListSetting],
        top: usize,
    ) -> Ranks {
        let (_, seed_damping) = self.dampings();
        let mut scores: FxHashMap<u32, SmallVec<[f64; 9]>> = FxHashMap::default();
        for &(seed, weight) in seeds {
            // Copied out, so that no entry is held while the partners' are read.
            let Some((own, partners)) = self.pairs.get(&seed).map(|p| (p.totals(), p.pairs()))
            else {
                continue;
            };
            for partner in partners {
                if skip.contains(&partner.key) {
                    continue;
                }
                let Some(totals) = self.pairs.get(&partner.key).map(|p| p.totals()) else {
                    continue;
                };
                let sums = scores
                    .entry(partner.key)
                    .or_insert_with(|| smallvec![0.0; settings.len()]);
                for (setting, sum) in settings.iter().zip(sums.iter_mut()) {
                    let window = setting.window;
                    let total = totals.at(window);
                    let count = match window.reach() {
                        Some(_) => partner.at(window),
                        None => partner.count - partner.inherited,
                    };
                    let sure = count.min(total);
                    if sure > 0.0 {
                        let pair = sure
                            * damped(total, setting.partner_damping)
                            * damped(own.at(window), seed_damping);
                        *sum += weight * f64::from(pair);
                    }
                }
            }
        }
        let own = scores.get(&target).cloned().unwrap_or_default();
        (0..settings.len())
            .map(|at| {
                let score = own.get(at).copied().unwrap_or(0.0);
                if score <= 0.0 {
                    return None;
                }
                let above = scores
                    .iter()
                    .filter(|(key, sums)| {
                        **key != target && sums.get(at).is_some_and(|s| *s > score)
                    })
                    .count();
                (above < top).then_some(above)
            })
            .collect()
    }
}
