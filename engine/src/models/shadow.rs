//! Shadow lists: how a blend of co-view lists would rank a product under another window
//! and partner damping, read from the same counts (self-tuning compares them, see
//! [`crate::tuning`]).

use rustc_hash::FxHashMap;
use smallvec::{SmallVec, smallvec};

use super::co_counts::{CountedPartner, Totals, damped};
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

/// The co-view counts of a trial's seeds, copied when the trial is taken (before the
/// request is applied), so that it can be scored later off the request path: the pairs
/// the request adds are not among them. Only the partners' totals are read when it is
/// scored (they move by the request's own views at most).
#[derive(Debug, Clone, Default)]
pub struct ShadowSeeds {
    seeds: Vec<(f64, Totals, Vec<CountedPartner>)>,
}

impl CoCounts {
    /// Copies the counts of `seeds` (keys with their weights in the blend).
    pub fn shadow_seeds(&self, seeds: &[(u32, f64)]) -> ShadowSeeds {
        ShadowSeeds {
            seeds: seeds
                .iter()
                .filter_map(|&(seed, weight)| {
                    let entry = self.pairs.get(&seed)?;
                    Some((weight, entry.totals(), entry.pairs()))
                })
                .collect(),
        }
    }

    /// For each of `settings`, where `target` ranks (from 0) among the products a blend
    /// of the `seeds`' co-view lists scores, each list read at that setting: a partner
    /// weighs its sure count at the window, divided by the partner's total to the
    /// setting's partner damping and by the seed's total to the seed damping, times the
    /// seed's weight, as a rebuilt list would weigh it. Every partner of a seed is read
    /// (a rebuilt list keeps its strongest [`super::ModelSettings::neighbours`]), so
    /// every setting is scored alike. `None` when `target` is not among the first `top`
    /// (a product scoring as much as it counts below it) or scores nothing. Products in
    /// `skip` are left out.
    ///
    /// Costs a lookup per partner of each seed (at most
    /// [`super::ModelSettings::partners`] each), whatever the number of settings:
    /// `benches/benches/tuning.rs`.
    pub fn shadow_ranks(
        &self,
        seeds: &ShadowSeeds,
        skip: &[u32],
        target: u32,
        settings: &[ListSetting],
        top: usize,
    ) -> Ranks {
        let (_, seed_damping) = self.dampings();
        let mut skipped: SmallVec<[u32; 64]> = skip.iter().copied().collect();
        skipped.sort_unstable();
        let mut scores: FxHashMap<u32, SmallVec<[f64; 9]>> = FxHashMap::default();
        for (weight, own, partners) in &seeds.seeds {
            scores.reserve(partners.len());
            // The seed's weight and damping at each setting's window.
            let seed_parts: SmallVec<[f64; 9]> = settings
                .iter()
                .map(|s| weight * f64::from(damped(own.at(s.window), seed_damping)))
                .collect();
            for partner in partners {
                if skipped.binary_search(&partner.key).is_ok() {
                    continue;
                }
                let Some(totals) = self.pairs.get(&partner.key).map(|p| p.totals()) else {
                    continue;
                };
                let sums = scores
                    .entry(partner.key)
                    .or_insert_with(|| smallvec![0.0; settings.len()]);
                for ((setting, sum), seed_part) in
                    settings.iter().zip(sums.iter_mut()).zip(&seed_parts)
                {
                    let window = setting.window;
                    let total = totals.at(window);
                    let count = match window.reach() {
                        Some(_) => partner.at(window),
                        None => partner.count - partner.inherited,
                    };
                    let sure = count.min(total);
                    if sure > 0.0 {
                        let pair = sure * root_damped(total, setting.partner_damping);
                        *sum += seed_part * f64::from(pair);
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

/// [`damped`] for the grid's dampings by square roots (a trial computes one per partner
/// and setting: `powf` would be most of its cost), any other by `powf`.
fn root_damped(total: f32, power: f32) -> f32 {
    if total <= 0.0 {
        return 1.0;
    }
    let quarter = |total: f32| total.sqrt().sqrt();
    match (power * 4.0).round() as i32 {
        1 if (power - 0.25).abs() < f32::EPSILON => 1.0 / quarter(total),
        2 if (power - 0.5).abs() < f32::EPSILON => 1.0 / total.sqrt(),
        3 if (power - 0.75).abs() < f32::EPSILON => 1.0 / (total.sqrt() * quarter(total)),
        _ => damped(total, power),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn root_damping_is_the_power_it_stands_for() {
        for total in [0.5f32, 1.0, 3.0, 17.5, 1234.0] {
            for power in [0.0f32, 0.25, 0.5, 0.75, 1.0, 0.3] {
                let want = super::damped(total, power);
                let got = super::root_damped(total, power);
                assert!(
                    (got - want).abs() <= want * 1e-5,
                    "{total}^-{power}: {got} vs {want}"
                );
            }
        }
    }
}
