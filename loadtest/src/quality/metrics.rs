//! Scoring ranked lists against the product a visitor went on to: HR@K, NDCG@K, MRR@K
//! and catalogue coverage, and bootstrapped confidence intervals for the ratio of two
//! methods' hit rates (visitors resampled, all of a visitor's questions together).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Value, json};

/// The top `k` products by score, leaving out `exclude` (the visitor's history); ties
/// in an order drawn from `salt` (the same for every method on one question), so no
/// method gains from the order of product ids.
pub(crate) fn top_k(scores: &[f32], exclude: &[u32], k: usize, salt: u64) -> Vec<u32> {
    let excluded: HashSet<u32> = exclude.iter().copied().collect();
    let mut candidates: Vec<(f32, u64, u32)> = scores
        .iter()
        .enumerate()
        .filter(|(i, s)| !excluded.contains(&(*i as u32)) && s.is_finite())
        .map(|(i, s)| (*s, mix(salt, i as u64), i as u32))
        .collect();
    let order = |a: &(f32, u64, u32), b: &(f32, u64, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if candidates.len() > k && k > 0 {
        candidates.select_nth_unstable_by(k - 1, order);
        candidates.truncate(k);
    }
    candidates.sort_by(order);
    candidates.into_iter().map(|(_, _, i)| i).collect()
}

/// A 64-bit mix of two numbers (splitmix64's finaliser).
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One method's answers to every question of the test rounds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Results {
    k: usize,
    /// (visitor, rank of the target in the top k) per question.
    outcomes: Vec<(u32, Option<usize>)>,
    recommended: HashSet<u32>,
}

impl Results {
    pub(crate) fn new(k: usize) -> Results {
        Results {
            k,
            ..Results::default()
        }
    }

    /// Scores one answer (only its first `k` products count).
    pub(crate) fn add(&mut self, visitor: u32, ranked: &[u32], target: u32) {
        let top = &ranked[..ranked.len().min(self.k)];
        self.recommended.extend(top.iter().copied());
        let rank = top.iter().position(|&i| i == target);
        self.outcomes.push((visitor, rank));
    }

    /// Share of questions whose target was in the top k.
    pub(crate) fn hit_rate(&self) -> f64 {
        self.mean(|rank| rank.map_or(0.0, |_| 1.0))
    }

    fn mean(&self, of: impl Fn(Option<usize>) -> f64) -> f64 {
        if self.outcomes.is_empty() {
            return 0.0;
        }
        self.outcomes.iter().map(|(_, r)| of(*r)).sum::<f64>() / self.outcomes.len() as f64
    }

    /// The figures of a report; coverage is over `items` products.
    pub(crate) fn summary(&self, items: usize) -> Value {
        json!({
            "questions": self.outcomes.len(),
            "hr_at_k": self.hit_rate(),
            "ndcg_at_k": self.mean(|rank| rank.map_or(0.0, |r| 1.0 / ((r + 2) as f64).log2())),
            "mrr_at_k": self.mean(|rank| rank.map_or(0.0, |r| 1.0 / (r + 1) as f64)),
            "coverage": if items == 0 { 0.0 } else { self.recommended.len() as f64 / items as f64 },
            "hits_by_round": self.hits_by_round(),
        })
    }

    /// Hits in each test round, the first round first: a visitor's n-th question is
    /// asked in round n (the rounds ask every visitor in turn), so a zone's figures can
    /// be read by how far into the held-out interactions they are.
    fn hits_by_round(&self) -> Vec<u32> {
        let mut asked: HashMap<u32, usize> = HashMap::new();
        let mut hits = Vec::new();
        for (visitor, rank) in &self.outcomes {
            let round = asked.entry(*visitor).or_default();
            if hits.len() <= *round {
                hits.resize(*round + 1, 0);
            }
            hits[*round] += u32::from(rank.is_some());
            *round += 1;
        }
        hits
    }

    /// Hits and questions per visitor.
    fn per_visitor(&self) -> BTreeMap<u32, (u32, u32)> {
        let mut per = BTreeMap::new();
        for (visitor, rank) in &self.outcomes {
            let entry = per.entry(*visitor).or_insert((0, 0));
            entry.0 += u32::from(rank.is_some());
            entry.1 += 1;
        }
        per
    }
}

/// The ratio of `a`'s hit rate to `b`'s, with a percentile bootstrap interval
/// (`resamples` draws of the visitors with replacement) at 95 %.
pub(crate) fn ratio_interval(a: &Results, b: &Results, resamples: usize, seed: u64) -> Value {
    let (pa, pb) = (a.per_visitor(), b.per_visitor());
    let visitors: Vec<(u32, u32, u32)> = pa
        .iter()
        .filter_map(|(v, (hits_a, n))| pb.get(v).map(|(hits_b, _)| (*hits_a, *hits_b, *n)))
        .collect();
    let ratio = |sum_a: u32, sum_b: u32| {
        if sum_b == 0 {
            f64::NAN
        } else {
            f64::from(sum_a) / f64::from(sum_b)
        }
    };
    let total_a = visitors.iter().map(|v| v.0).sum();
    let total_b = visitors.iter().map(|v| v.1).sum();
    let mut draws = Vec::with_capacity(resamples);
    let mut state = seed;
    for _ in 0..resamples {
        let (mut sa, mut sb) = (0, 0);
        for _ in 0..visitors.len() {
            state = mix(state, 1);
            let (ha, hb, _) = visitors[(state % visitors.len() as u64) as usize];
            sa += ha;
            sb += hb;
        }
        let r = ratio(sa, sb);
        if r.is_finite() {
            draws.push(r);
        }
    }
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| {
        draws
            .get(((draws.len().saturating_sub(1)) as f64 * q).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    json!({
        "ratio": ratio(total_a, total_b),
        "ci95": [at(0.025), at(0.975)],
        "resamples": resamples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_leaves_out_the_history_and_breaks_ties_by_salt_not_by_id() {
        let scores = [1.0, 5.0, 3.0, 3.0, 3.0, 3.0];
        let ranked = top_k(&scores, &[1], 3, 7);
        assert_eq!(ranked.len(), 3);
        assert!(!ranked.contains(&1));
        assert!(ranked.iter().all(|i| (2..=5).contains(i)));
        // Over many salts, each tied product comes first sometimes.
        let firsts: HashSet<u32> = (0..64)
            .map(|salt| top_k(&scores, &[1], 1, salt)[0])
            .collect();
        assert_eq!(firsts.len(), 4, "{firsts:?}");
    }

    #[test]
    fn figures_and_a_ratio_with_its_interval() {
        let mut a = Results::new(10);
        let mut b = Results::new(10);
        for v in 0..100 {
            a.add(v, &[1, 2, 3], if v % 2 == 0 { 1 } else { 9 });
            b.add(v, &[1, 2, 3], if v % 4 == 0 { 2 } else { 9 });
        }
        let s = a.summary(10);
        assert_eq!(s["hr_at_k"], 0.5);
        assert_eq!(s["mrr_at_k"], 0.5);
        assert_eq!(s["coverage"], 0.3);
        assert_eq!(s["hits_by_round"], json!([50]));
        let r = ratio_interval(&a, &b, 500, 3);
        assert_eq!(r["ratio"], 2.0);
        let (lo, hi) = (
            r["ci95"][0].as_f64().unwrap(),
            r["ci95"][1].as_f64().unwrap(),
        );
        assert!(lo < 2.0 && 2.0 < hi && lo > 1.0, "{r}");
        // A visitor's second question is asked in the second round.
        a.add(0, &[4], 4);
        a.add(1, &[4], 5);
        assert_eq!(a.summary(10)["hits_by_round"], json!([50, 1]));
    }
}
