//! Sequential methods: a Markov last-item model, sequential rules and V-SKNN.

use std::collections::HashMap;

use super::matrix::{Square, add_row};
use super::training::{Interactions, Recommender};

/// A first-order Markov chain: how often each product followed the history's last.
pub(super) struct Markov {
    transitions: HashMap<u32, HashMap<u32, f32>>,
}

impl Markov {
    pub(super) fn fit(training: &Interactions) -> Markov {
        let mut transitions: HashMap<u32, HashMap<u32, f32>> = HashMap::new();
        for sequence in &training.sequences {
            for pair in sequence.windows(2) {
                if let [a, b] = *pair
                    && a != b
                {
                    *transitions.entry(a).or_default().entry(b).or_default() += 1.0;
                }
            }
        }
        Markov { transitions }
    }
}

impl Recommender for Markov {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        if let Some(next) = history.last().and_then(|last| self.transitions.get(last)) {
            for (&b, &count) in next {
                scores[b as usize] += count;
            }
        }
    }
}

/// Sequential rules (Ludewig and Jannach, 2018): a rule `a → b` for every `b` within
/// `window` steps after `a` in a sequence, weighted `1 / distance` (and `b → a` at
/// `backward` times that: 1 when symmetric, 0 when not); a product scores the rules
/// from the history's last `steps` products, the latest weighing most (`1 / (1 + age)`).
pub(super) struct SequentialRules {
    rules: Square,
    steps: usize,
}

impl SequentialRules {
    pub(super) fn fit(training: &Interactions, window: usize, backward: f32, steps: usize) -> Self {
        SequentialRules {
            rules: Self::count(training, window, backward),
            steps,
        }
    }

    /// The rules `a → b` at `1 / distance`, and `b → a` at `backward` times that.
    pub(super) fn count(training: &Interactions, window: usize, backward: f32) -> Square {
        let mut rules = Square::zeros(training.items);
        for sequence in &training.sequences {
            for (x, &a) in sequence.iter().enumerate() {
                for (d, &b) in sequence.iter().skip(x + 1).take(window).enumerate() {
                    if a == b {
                        continue;
                    }
                    let weight = 1.0 / (d + 1) as f32;
                    rules.add(a, b, weight);
                    if backward > 0.0 {
                        rules.add(b, a, backward * weight);
                    }
                }
            }
        }
        rules
    }
}

impl Recommender for SequentialRules {
    fn score(&self, _: u32, history: &[u32], scores: &mut [f32]) {
        for (age, &item) in history.iter().rev().take(self.steps).enumerate() {
            add_row(scores, self.rules.row(item), 1.0 / (1 + age) as f32);
        }
    }
}

/// V-SKNN (Ludewig and Jannach, 2018), each visitor's training history a session: the
/// history's last `steps` products weighted by position (the latest 1, the oldest
/// `1 / steps`), the `neighbours` sessions with the highest weighted overlap (the
/// visitor's own left out), a product scoring the summed similarity of the neighbour
/// sessions that hold it.
pub(super) struct Vsknn {
    sessions: Vec<Vec<u32>>,
    by_item: Vec<Vec<u32>>,
    neighbours: usize,
    steps: usize,
}

impl Vsknn {
    pub(super) fn fit(training: &Interactions, neighbours: usize, steps: usize) -> Vsknn {
        let sessions = training.distinct();
        let mut by_item: Vec<Vec<u32>> = vec![Vec::new(); training.items];
        for (s, list) in sessions.iter().enumerate() {
            for &i in list {
                by_item[i as usize].push(s as u32);
            }
        }
        Vsknn {
            sessions,
            by_item,
            neighbours,
            steps,
        }
    }
}

impl Recommender for Vsknn {
    fn score(&self, visitor: u32, history: &[u32], scores: &mut [f32]) {
        let recent: Vec<u32> = history.iter().rev().take(self.steps).copied().collect();
        let mut weights: std::collections::BTreeMap<u32, f32> = std::collections::BTreeMap::new();
        for (age, &item) in recent.iter().enumerate() {
            let weight = 1.0 - age as f32 / self.steps as f32;
            let entry = weights.entry(item).or_default();
            *entry = entry.max(weight);
        }
        let mut similarity: HashMap<u32, f32> = HashMap::new();
        for (&item, &weight) in &weights {
            for &session in self.by_item.get(item as usize).into_iter().flatten() {
                if session != visitor {
                    *similarity.entry(session).or_default() += weight;
                }
            }
        }
        let mut ranked: Vec<(u32, f32)> = similarity.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (session, sim) in ranked.into_iter().take(self.neighbours) {
            for &item in &self.sessions[session as usize] {
                scores[item as usize] += sim;
            }
        }
    }
}
