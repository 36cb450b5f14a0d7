//! The dataset of a quality run and its split into rounds.
//!
//! Every visitor's interactions are put in time order (ties keep the file's order). A
//! visitor with at least `holdout + 2` interactions is *evaluated*: the last `holdout`
//! are test points and the one before them the validation point. Round `r` (0 for
//! validation, 1..=holdout for the tests) asks for each evaluated visitor's
//! interaction at position `cut + r` (its `cut` being where validation starts), with
//! everything before that position as the visitor's history; every method is fitted
//! on what a live store would have seen by then: each visitor's interactions before
//! their own position of the round (all of them for visitors not evaluated).

use std::collections::HashMap;
use std::path::Path;

use anyhow::bail;

use crate::eval::{Interaction, Kind};

/// One interaction, with its product as a dense index.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(crate) item: u32,
    pub(crate) kind: Kind,
    /// When, as the file gives it (milliseconds).
    pub(crate) at: i64,
}

/// Visitors' time-ordered interactions over a dense product index.
#[derive(Debug)]
pub(crate) struct Dataset {
    /// Product ids by index.
    pub(crate) items: Vec<String>,
    /// Product titles and categories by index, from the items file (empty without one).
    pub(crate) details: Vec<ItemDetails>,
    /// Visitor ids by index.
    pub(crate) visitors: Vec<String>,
    /// Each visitor's interactions in time order.
    pub(crate) sequences: Vec<Vec<Step>>,
    /// Where each visitor's validation point is (`None`: not evaluated).
    pub(crate) cuts: Vec<Option<usize>>,
}

/// What the items file says of a product.
#[derive(Debug, Clone, Default)]
pub(crate) struct ItemDetails {
    pub(crate) title: Option<String>,
    pub(crate) categories: Vec<String>,
}

/// One question of a round: a visitor, the length of their history, the product they
/// interacted with next.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Query {
    pub(crate) visitor: u32,
    pub(crate) position: usize,
    pub(crate) target: u32,
}

impl Dataset {
    /// Builds the dataset from interactions and, optionally, the items file.
    pub(crate) fn new(
        interactions: Vec<Interaction>,
        items_file: Option<&Path>,
        holdout: usize,
    ) -> anyhow::Result<Dataset> {
        if holdout == 0 {
            bail!("--holdout must be at least 1");
        }
        let mut items: Vec<String> = Vec::new();
        let mut item_index: HashMap<String, u32> = HashMap::new();
        let mut visitors: Vec<String> = Vec::new();
        let mut visitor_index: HashMap<String, u32> = HashMap::new();
        let mut timed: Vec<Vec<(i64, Step)>> = Vec::new();
        for interaction in interactions {
            let next = items.len() as u32;
            let item = *item_index
                .entry(interaction.product.clone())
                .or_insert_with(|| {
                    items.push(interaction.product.clone());
                    next
                });
            let next = visitors.len() as u32;
            let visitor = *visitor_index
                .entry(interaction.visitor.clone())
                .or_insert_with(|| {
                    visitors.push(interaction.visitor.clone());
                    timed.push(Vec::new());
                    next
                });
            timed[visitor as usize].push((
                interaction.timestamp,
                Step {
                    item,
                    kind: interaction.kind,
                    at: interaction.timestamp,
                },
            ));
        }
        let sequences: Vec<Vec<Step>> = timed
            .into_iter()
            .map(|mut steps| {
                // Stable: interactions in the same instant keep the file's order.
                steps.sort_by_key(|(at, _)| *at);
                steps.into_iter().map(|(_, step)| step).collect()
            })
            .collect();
        let cuts = sequences
            .iter()
            .map(|steps| (steps.len() >= holdout + 2).then(|| steps.len() - holdout - 1))
            .collect();
        let mut details = Vec::new();
        if let Some(path) = items_file {
            let known = read_items(path)?;
            details = items
                .iter()
                .map(|id| known.get(id).cloned().unwrap_or_default())
                .collect();
        }
        Ok(Dataset {
            items,
            details,
            visitors,
            sequences,
            cuts,
        })
    }

    /// Products in the dataset.
    pub(crate) fn item_count(&self) -> usize {
        self.items.len()
    }

    /// The interactions every method may learn from in `round`: each visitor's prefix
    /// before their position of the round.
    pub(crate) fn training(&self, round: usize) -> Vec<&[Step]> {
        self.sequences
            .iter()
            .zip(&self.cuts)
            .map(|(steps, cut)| match cut {
                Some(cut) => steps.get(..cut + round).unwrap_or(steps),
                None => steps.as_slice(),
            })
            .collect()
    }

    /// The questions of `round`.
    pub(crate) fn queries(&self, round: usize) -> Vec<Query> {
        self.sequences
            .iter()
            .zip(&self.cuts)
            .enumerate()
            .filter_map(|(visitor, (steps, cut))| {
                let position = (*cut)? + round;
                let target = steps.get(position)?.item;
                Some(Query {
                    visitor: visitor as u32,
                    position,
                    target,
                })
            })
            .collect()
    }

    /// A visitor's history before `position`, oldest first.
    pub(crate) fn history(&self, query: &Query) -> &[Step] {
        let steps = &self.sequences[query.visitor as usize];
        steps.get(..query.position).unwrap_or(steps)
    }

    /// Visitors evaluated.
    pub(crate) fn evaluated(&self) -> usize {
        self.cuts.iter().filter(|c| c.is_some()).count()
    }

    /// Interactions in all.
    pub(crate) fn interaction_count(&self) -> usize {
        self.sequences.iter().map(Vec::len).sum()
    }
}

/// Reads an items file: the header `product,title,categories`; the title is everything
/// between the first and the last comma (so it may hold commas; surrounding quotes are
/// removed), categories are separated by `|`.
fn read_items(path: &Path) -> anyhow::Result<HashMap<String, ItemDetails>> {
    let mut items = HashMap::new();
    for (n, line) in crate::eval::csv_lines(path, "product,title,categories")? {
        let (Some((product, rest)), Some((_, categories))) =
            (line.split_once(','), line.rsplit_once(','))
        else {
            bail!("{}: line {n}: expected 3 fields", path.display());
        };
        let title = rest.rsplit_once(',').map_or("", |(title, _)| title).trim();
        let title = title.trim_matches('"').replace("\"\"", "\"");
        if product.trim().is_empty() {
            bail!("{}: line {n}: the product is empty", path.display());
        }
        items.insert(
            product.trim().to_owned(),
            ItemDetails {
                title: (!title.is_empty()).then_some(title),
                categories: categories
                    .split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect(),
            },
        );
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interaction(visitor: &str, product: &str, timestamp: i64) -> Interaction {
        Interaction {
            visitor: visitor.to_owned(),
            product: product.to_owned(),
            timestamp,
            kind: Kind::View,
        }
    }

    #[test]
    fn rounds_reveal_each_visitor_one_step_at_a_time() {
        let mut all = Vec::new();
        for (i, product) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
            // Out of time order in the file: the split sorts.
            all.push(interaction("v", product, 100 - i as i64));
        }
        all.push(interaction("short", "a", 1));
        all.push(interaction("short", "b", 2));
        let data = Dataset::new(all, None, 3).unwrap();
        assert_eq!(data.evaluated(), 1);
        // v's order by time: f e d c b a; with 3 held out, the tests are c, b and a and
        // the validation point d.
        let item = |name: &str| data.items.iter().position(|i| i == name).unwrap() as u32;
        let validation = data.queries(0);
        assert_eq!(validation.len(), 1);
        assert_eq!(validation[0].target, item("d"));
        assert_eq!(data.history(&validation[0]).len(), 2);
        let last = data.queries(3);
        assert_eq!(last[0].target, item("a"));
        assert!(data.queries(4).is_empty());
        // Round 0 trains on v's first two and all of "short"'s.
        let training = data.training(0);
        assert_eq!(training.iter().map(|s| s.len()).sum::<usize>(), 4);
        assert_eq!(data.training(2).iter().map(|s| s.len()).sum::<usize>(), 6);
    }
}
