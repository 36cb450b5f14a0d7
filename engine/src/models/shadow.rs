//! Shadow lists: how a blend of co-view lists would rank a product under another window
//! and partner damping, read from the same counts (self-tuning compares them, see
//! [`crate::tuning`]).

use rustc_hash::FxHashMap;
use smallvec::{SmallVec, smallvec};

use super::co_counts::damped;
use super::partners::{CountedPartner, Totals};
use super::{CoCounts, CoViewWindow};

/// A setting of the co-view lists that self-tuning compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ListSetting {
    /// [`super::ModelSettings::co_view_window`].
    pub window: CoViewWindow,
    /// [`super::ModelSettings::partner_damping`].
    pub partner_damping: f32,
    /// [`super::ModelSettings::co_view_forward`]: how much of a pair's weight its
    /// direction decides.
    pub forward: f32,
}

/// Settings scored at once, inline up to 27 (the co-view lists' whole grid).
pub type Ranks = SmallVec<[Option<usize>; 27]>;

/// The co-view counts of a trial's seeds, copied when the trial is taken (before the
/// request is applied), so that it can be scored later off the request path: the pairs
/// the request adds are not among them. Only the partners' totals are read when it is
/// scored (they move by the request's own views at most). Each seed keeps the partners
/// a rebuilt list would keep at some window and direction weight (its strongest
/// [`super::ModelSettings::neighbours`] there), each marked with where it is kept.
#[derive(Debug, Clone, Default)]
pub struct ShadowSeeds {
    seeds: Vec<(f64, Totals, Vec<CountedPartner>)>,
    /// [`super::ModelSettings::neighbours`] when copied.
    keep: usize,
}

/// A partner kept, with the bits of the readings it is kept at
/// ([`kept_at_each_reading`]).
type KeptPartner = (CountedPartner, u32);

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
            keep: self.neighbours_kept(),
        }
    }

    /// For each of `settings`, where `target` ranks (from 0) among the products a blend
    /// of the `seeds`' co-view lists scores, each list read at that setting: a partner
    /// weighs its sure count at the window weighed by direction at the setting's
    /// `forward` (`CountedPartner::directed`), divided by the partner's total to the
    /// setting's partner damping and by the seed's total to the seed damping, times the
    /// seed's weight, as a rebuilt list would weigh it, among the partners the list
    /// keeps at that window and direction weight. `None` when `target` is not among the first `top`
    /// (a product scoring as much as it counts below it) or scores nothing. Products in
    /// `skip` are left out.
    ///
    /// Costs a lookup per partner kept of each seed (at most
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
        let mut scores: FxHashMap<u32, SmallVec<[f64; 27]>> = FxHashMap::default();
        // Partners' totals, looked up once each (seeds share many partners).
        let mut totals_of: FxHashMap<u32, Option<Totals>> = FxHashMap::default();
        // The lists a rebuild would keep differ by window and direction weight: each
        // setting reads the partners kept at its own pair of them.
        let mut readings: SmallVec<[Reading; 12]> = SmallVec::new();
        let reading_of: SmallVec<[u32; 27]> = settings
            .iter()
            .map(|s| {
                let reading = (s.window, s.forward);
                let at = readings
                    .iter()
                    .position(|r| *r == reading)
                    .unwrap_or_else(|| {
                        readings.push(reading);
                        readings.len() - 1
                    });
                1u32 << at.min(31)
            })
            .collect();
        for (weight, own, partners) in &seeds.seeds {
            let partners = kept_at_each_reading(partners, seeds.keep, &readings);
            scores.reserve(partners.len());
            // The seed's weight and damping at each setting's window.
            let seed_parts: SmallVec<[f64; 27]> = settings
                .iter()
                .map(|s| weight * f64::from(damped(own.at(s.window), seed_damping)))
                .collect();
            for (partner, kept) in partners {
                if skipped.binary_search(&partner.key).is_ok() {
                    continue;
                }
                let totals = *totals_of
                    .entry(partner.key)
                    .or_insert_with(|| self.pairs.get(&partner.key).map(|p| p.totals()));
                let Some(totals) = totals else {
                    continue;
                };
                let sums = scores
                    .entry(partner.key)
                    .or_insert_with(|| smallvec![0.0; settings.len()]);
                for (((setting, sum), seed_part), bit) in settings
                    .iter()
                    .zip(sums.iter_mut())
                    .zip(&seed_parts)
                    .zip(&reading_of)
                {
                    let window = setting.window;
                    if kept & bit == 0 {
                        continue;
                    }
                    let total = totals.at(window);
                    let sure = partner.sure_at(window).min(total)
                        * partner.directed(window, setting.forward);
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

/// A window and a direction weight a list is read at: the lists a rebuild keeps
/// differ by both.
type Reading = (CoViewWindow, f32);

/// The partners kept among a list's `keep` strongest at some of the `readings` (by the
/// sure count at that window weighed by direction, as a rebuild ranks them; ties by
/// key), each with the bits of the readings (by their place, at most 32) it is kept at.
fn kept_at_each_reading(
    partners: &[CountedPartner],
    keep: usize,
    readings: &[Reading],
) -> Vec<KeptPartner> {
    let mut marks = vec![0u32; partners.len()];
    if partners.len() <= keep {
        let every = (0..readings.len().min(32)).fold(0, |bits, at| bits | 1u32 << at);
        marks.iter_mut().for_each(|m| *m = every);
    } else {
        let mut order: Vec<usize> = (0..partners.len()).collect();
        for (at, (window, forward)) in readings.iter().enumerate().take(32) {
            let counts: Vec<f32> = partners
                .iter()
                .map(|p| p.sure_at(*window) * p.directed(*window, *forward))
                .collect();
            let count = |at: usize| counts.get(at).copied().unwrap_or(0.0);
            let strongest = |a: &usize, b: &usize| count(*b).total_cmp(&count(*a)).then(a.cmp(b));
            order.select_nth_unstable_by(keep.saturating_sub(1), strongest);
            for partner in order.iter().take(keep) {
                if let Some(mark) = marks.get_mut(*partner) {
                    *mark |= 1u32 << at;
                }
            }
        }
    }
    partners
        .iter()
        .copied()
        .zip(marks)
        .filter(|(_, mark)| *mark != 0)
        .collect()
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
