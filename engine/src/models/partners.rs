//! One product's pair counts: its partners in key order with their counts, what each
//! inherited, their counts by distance and by direction, and the product's totals
//! ([`Partners`], counted by space-saving), and the counts of one partner as a
//! rebuild and self-tuning read them ([`CountedPartner`]).

use super::{CoViewWindow, Reach};

/// One product's partners in ascending key order, in three parallel vectors: the keys
/// (searched), the counts (scanned for the weakest when the list is full) and the rest
/// of each partner's counts ([`Kept`], read and written with its count), with their
/// totals, and whether it is queued in `changed`.
///
/// The keys and the counts are apart because each is read on its own over the whole
/// list (a search, a scan for the weakest); the rest are together because they are
/// read and written only for the partner found, so that counting a pair seen before
/// touches one line of them, not three.
#[derive(Debug, Default)]
pub(super) struct Partners {
    pub(super) keys: Vec<u32>,
    pub(super) counts: Vec<f32>,
    /// Each partner's [`Kept`] counts, in the order of `keys`.
    pub(super) kept: Vec<Kept>,
    /// Everything counted for the product. Space-saving keeps the counts' sum equal to
    /// it (a newcomer inherits the count of the partner it replaces), so it is the sum
    /// of `counts`, kept here to be read without summing.
    pub(super) total: f32,
    /// The sums of the partners' [`Kept::reach`].
    pub(super) reach_total: Reach,
    pub(super) queued: bool,
}

/// What a partner's list keeps of it besides its key and count.
#[derive(Debug, Clone, Copy)]
pub(super) struct Kept {
    /// What the count started from: the count it inherited when it took a full list's
    /// weakest place (0 for one that found room). Space-saving may overestimate a count
    /// by that much at most, so `count - inherited` is what the pair was surely seen.
    pub(super) inherited: f32,
    /// The partner's count at the shorter windows' distances ([`Reach`]), since it came
    /// in (what it inherited is not among them: they are surely seen).
    pub(super) reach: Reach,
    /// Of `reach`, what was counted in the partner's direction: the partner viewed (or
    /// bought) after this product ([`Direction::Forward`]).
    pub(super) forward: Reach,
}

/// Which way a pairing goes, seen from the product whose list counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// The partner came after the product (viewed or bought later), or with it (two
    /// lines of one order).
    Forward,
    /// The partner came before the product.
    Backward,
}

impl Direction {
    /// What a pairing adds to the counts in the partner's direction.
    fn forward(self, reach: Reach) -> Reach {
        match self {
            Direction::Forward => reach,
            Direction::Backward => [0.0; 2],
        }
    }
}

impl Partners {
    /// Adds `weight` to the partner `to`, making room by space-saving when `capacity`
    /// partners are counted. Keys are kept in ascending order, so a partner is found by
    /// binary search (a view looks up each of its window's partners: a scan of 256 keys
    /// would cost more than the rest of counting it).
    pub(super) fn add(
        &mut self,
        to: u32,
        weight: f32,
        reach: Reach,
        direction: Direction,
        capacity: usize,
    ) {
        self.total += weight;
        add_reach(&mut self.reach_total, reach);
        let forward = direction.forward(reach);
        let at = match self.keys.binary_search(&to) {
            Ok(at) => {
                if let Some(count) = self.counts.get_mut(at) {
                    *count += weight;
                }
                if let Some(kept) = self.kept.get_mut(at) {
                    add_reach(&mut kept.reach, reach);
                    add_reach(&mut kept.forward, forward);
                }
                return;
            }
            Err(at) => at,
        };
        // Only a full list looks for its weakest (a scan of every count).
        let full = self.keys.len() >= capacity;
        match full.then(|| weakest(&self.counts)).flatten() {
            // Space-saving (Metwally et al., 2005): the weakest partner makes room and
            // the newcomer inherits its count, so a pair seen often enough is never
            // pushed out by a stream of rare ones. What it inherited is kept: its count
            // may be overestimated by that much at most.
            Some((weakest, inherited)) => {
                let at = if weakest < at { at - 1 } else { at };
                let gone = self.kept.get(weakest).map_or([0.0; 2], |kept| kept.reach);
                add_reach(&mut self.reach_total, gone.map(|count| -count));
                // The newcomer takes the weakest's entry, moved to its own place: only
                // the entries between the two places shift (a removal and an insertion
                // would each shift the whole tail).
                let kept = Kept {
                    inherited,
                    reach,
                    forward,
                };
                replace_moved(&mut self.keys, weakest, at, to);
                replace_moved(&mut self.counts, weakest, at, inherited + weight);
                replace_moved(&mut self.kept, weakest, at, kept);
            }
            None => {
                let kept = Kept {
                    inherited: 0.0,
                    reach,
                    forward,
                };
                self.keys.insert(at, to);
                self.counts.insert(at, weight);
                self.kept.insert(at, kept);
            }
        }
    }

    /// Each partner with its counts (counted without distances, every count is as
    /// close as can be).
    pub(super) fn pairs(&self) -> Vec<CountedPartner> {
        self.keys
            .iter()
            .zip(&self.counts)
            .zip(&self.kept)
            .map(|((key, count), kept)| CountedPartner {
                key: *key,
                count: *count,
                inherited: kept.inherited,
                reach: kept.reach,
                forward: kept.forward,
            })
            .collect()
    }

    /// The product's totals.
    pub(super) fn totals(&self) -> Totals {
        Totals {
            all: self.total,
            reach: self.reach_total,
        }
    }
}

/// The place and count of the weakest of `counts`, the first of equals, in
/// [`f32::total_cmp`]'s order: each count's order key is made once (a comparison by
/// `total_cmp` makes two), the least found, then its first place.
fn weakest(counts: &[f32]) -> Option<(usize, f32)> {
    let key = |count: &f32| {
        let bits = count.to_bits() as i32;
        bits ^ (((bits >> 31) as u32) >> 1) as i32
    };
    let least = counts.iter().map(key).min()?;
    let at = counts.iter().position(|count| key(count) == least)?;
    Some((at, *counts.get(at)?))
}

/// What `entries.remove(from)` and then `entries.insert(to, value)` give, shifting only
/// the entries between the two places.
fn replace_moved<T>(entries: &mut [T], from: usize, to: usize, value: T) {
    if from < to {
        if let Some(between) = entries.get_mut(from..=to) {
            between.rotate_left(1);
        }
    } else if let Some(between) = entries.get_mut(to..=from) {
        between.rotate_right(1);
    }
    if let Some(slot) = entries.get_mut(to) {
        *slot = value;
    }
}

/// Adds `more` to `counts`, place by place.
pub(super) fn add_reach(counts: &mut Reach, more: Reach) {
    for (count, more) in counts.iter_mut().zip(more) {
        *count += more;
    }
}

/// A partner and the pair's counts (see [`Partners`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct CountedPartner {
    pub(super) key: u32,
    pub(super) count: f32,
    /// What the count inherited.
    pub(super) inherited: f32,
    /// The counts by distance.
    pub(super) reach: Reach,
    /// Of `reach`, what was counted in the partner's direction (see [`Partners`]).
    pub(super) forward: Reach,
}

impl CountedPartner {
    /// The pair's count at `window` (inherited part included at the longest).
    pub(super) fn at(&self, window: CoViewWindow) -> f32 {
        window.read(&self.reach, self.count)
    }

    /// The count at `window` the pair was surely seen: at the longest, less what it
    /// inherited; the counts by distance are sure already (counted since it came in).
    pub(super) fn sure_at(&self, window: CoViewWindow) -> f32 {
        window.read(&self.reach, self.count - self.inherited)
    }

    /// What the pair's count at `window` is multiplied by with `forward` (0 to 1) of
    /// its weight on the pair's direction: `(1 - forward) + forward × 2 × share`, where
    /// `share` is the part of it counted in the partner's direction. A pair seen as
    /// often either way reads the same at any `forward`; one always seen the other way
    /// reads nothing at 1, and one always seen this way twice its count. The longest
    /// window reads the direction seen within 3 views (its own is not counted, see
    /// [`Partners::forward`]); a pair never seen that close counts as seen either way.
    pub(super) fn directed(&self, window: CoViewWindow, forward: f32) -> f32 {
        if forward == 0.0 {
            return 1.0;
        }
        (1.0 - forward) + forward * 2.0 * self.forward_share(window)
    }

    /// The part of the pair's count at `window` that went in the partner's direction
    /// (½ when it has no count there).
    fn forward_share(&self, window: CoViewWindow) -> f32 {
        let at = window.reach().unwrap_or(1);
        let counted = |reach: &Reach| reach.get(at).copied().unwrap_or(0.0);
        let (forward, all) = (counted(&self.forward), counted(&self.reach));
        if all > 0.0 {
            (forward / all).clamp(0.0, 1.0)
        } else {
            0.5
        }
    }
}

/// What a pair's counts `reach` give in each direction when their direction is not
/// known (a snapshot written before directions were counted): half.
pub(super) fn undirected(reach: Reach) -> Reach {
    reach.map(|count| count / 2.0)
}

/// A product's total count, and its totals by distance.
#[derive(Debug, Clone, Copy)]
pub(super) struct Totals {
    all: f32,
    reach: Reach,
}

impl Totals {
    /// The total at `window`.
    pub(super) fn at(&self, window: CoViewWindow) -> f32 {
        window.read(&self.reach, self.all)
    }
}

#[cfg(test)]
mod tests {
    use super::weakest;

    /// The weakest is the first least count by `total_cmp`, as `min_by` finds it.
    #[test]
    fn the_weakest_is_the_first_least_count_in_total_order() {
        let by_min_by = |counts: &[f32]| {
            counts
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(at, count)| (at, count.to_bits()))
        };
        let mut lists: Vec<Vec<f32>> = vec![
            vec![],
            vec![1.0],
            vec![3.0, 1.0, 2.0, 1.0],
            vec![0.0, -0.0, 0.0],
            vec![2.5, f32::INFINITY, 0.5, f32::MIN_POSITIVE, 0.5],
            vec![-1.0, -3.0, -3.0, 2.0],
            vec![f32::NAN, 1.0, -f32::NAN, 0.0],
            vec![f32::NEG_INFINITY, f32::NAN, -2.0],
        ];
        let mut state: u32 = 0x2545_f491;
        for len in 1..300 {
            lists.push(
                (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 17;
                        state ^= state << 5;
                        (state % 64) as f32 * 0.25
                    })
                    .collect(),
            );
        }
        for counts in &lists {
            let ours = weakest(counts).map(|(at, count)| (at, count.to_bits()));
            assert_eq!(ours, by_min_by(counts), "{counts:?}");
        }
    }
}
