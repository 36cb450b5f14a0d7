//! A/B tests of zone strategies: an experiment splits the visitors of one zone between
//! variants (each a strategy, fallback chain and count) by a stable hash of the
//! experiment id and the visitor id, so a visitor sees the same variant on every
//! request, after restarts and on every node. What each variant's answers earned is
//! counted by zone analytics under the variant's name.

use sha2::{Digest, Sha256};

pub mod definition;
pub mod holdout;
pub mod sequential;

use crate::catalogue::UnixMillis;
use crate::zone::ZoneSpec;

/// One configured experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// Its id (part of the hash that splits visitors).
    pub id: String,
    /// The zone it splits.
    pub zone: String,
    /// When it starts (inclusive); `None`: from the start.
    pub start: Option<UnixMillis>,
    /// When it ends (exclusive); `None`: never.
    pub end: Option<UnixMillis>,
    /// Its variants, the first being the control.
    pub variants: Vec<Variant>,
    /// How a shopper's point in it is hashed.
    pub split: Split,
}

/// How an experiment hashes a shopper to a point: both have fixed definitions, so the
/// split never changes with the program, the machine or the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// SHA-256 ([`bucket`]): experiments of `vitrine.toml`, as they always were.
    Sha256,
    /// XXH3-64 ([`quick_bucket`]): experiments of the console, a tenth of SHA-256's
    /// instructions on a request's path.
    Xxh3,
}

/// One arm of an experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Its name, as analytics count it.
    pub name: String,
    /// Its share of visitors, relative to the other variants' weights.
    pub weight: u32,
    /// The zone as this variant fills it (the zone's own spec with the variant's
    /// strategy, fallback and count).
    pub spec: ZoneSpec,
    /// Whether this variant shows the zone's live campaign list (when it has one)
    /// instead of `spec`: a list tested against the automated zone, or against another
    /// variant.
    pub campaigns: bool,
    /// A campaign list of its own: its position in the campaign set's zones (an
    /// experiment written in the console, [`definition::VariantKind::Draft`]).
    pub list: Option<usize>,
}

impl Experiment {
    /// Whether it runs at `now`.
    pub fn runs_at(&self, now: UnixMillis) -> bool {
        self.start.is_none_or(|start| now >= start) && self.end.is_none_or(|end| now < end)
    }

    /// The variant `visitor_id` sees (the same for every call).
    pub fn assign(&self, visitor_id: &str) -> Option<&Variant> {
        let total: u64 = self.variants.iter().map(|v| u64::from(v.weight)).sum();
        if total == 0 {
            return self.variants.first();
        }
        let point = match self.split {
            Split::Sha256 => bucket(&self.id, visitor_id),
            Split::Xxh3 => quick_bucket(&self.id, visitor_id),
        };
        let mut point = point % total;
        for variant in &self.variants {
            let weight = u64::from(variant.weight);
            if point < weight {
                return Some(variant);
            }
            point -= weight;
        }
        self.variants.last()
    }
}

/// A visitor's point in an experiment: the first 8 bytes of SHA-256 over the experiment
/// id, a zero byte and the visitor id (a hash with a fixed definition, so the split
/// never changes with the program or the machine).
pub fn bucket(experiment_id: &str, visitor_id: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(experiment_id.as_bytes());
    hasher.update([0u8]);
    hasher.update(visitor_id.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    for (to, from) in first.iter_mut().zip(digest.iter()) {
        *to = *from;
    }
    u64::from_be_bytes(first)
}

/// A shopper's point in an experiment of the console: XXH3-64 (seed 0) over the
/// experiment id, a zero byte and the shopper's key (a published hash with a fixed
/// definition, much cheaper than SHA-256).
pub fn quick_bucket(experiment_id: &str, key: &str) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(experiment_id.as_bytes());
    hasher.update(&[0u8]);
    hasher.update(key.as_bytes());
    hasher.digest()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::zone;
    use crate::zone::Strategy;

    fn experiment(weights: &[u32]) -> Experiment {
        Experiment {
            id: "exp-1".into(),
            zone: "Z".into(),
            start: Some(1_000),
            end: Some(2_000),
            variants: weights
                .iter()
                .enumerate()
                .map(|(i, weight)| Variant {
                    name: format!("v{i}"),
                    weight: *weight,
                    spec: zone("Z", Strategy::Trending, 4),
                    campaigns: false,
                    list: None,
                })
                .collect(),
            split: Split::Sha256,
        }
    }

    #[test]
    fn visitors_split_by_weight_and_always_see_the_same_variant() {
        let experiment = experiment(&[1, 1, 2]);
        let mut seen = [0usize; 3];
        let visitors = 100_000;
        for v in 0..visitors {
            let visitor = format!("visitor-{v}");
            let variant = experiment.assign(&visitor).unwrap();
            assert_eq!(experiment.assign(&visitor).unwrap().name, variant.name);
            let index: usize = variant.name[1..].parse().unwrap();
            seen[index] += 1;
        }
        // Shares 1/4, 1/4, 1/2, each within 1 % of the visitors.
        for (count, share) in seen.iter().zip([0.25, 0.25, 0.5]) {
            let expected = share * visitors as f64;
            assert!(
                (*count as f64 - expected).abs() < 0.01 * visitors as f64,
                "{seen:?}"
            );
        }
    }

    #[test]
    fn the_split_has_a_fixed_definition() {
        // SHA-256("exp-1\0visitor-1"), first 8 bytes: the same on every build.
        let digest = Sha256::digest(b"exp-1\0visitor-1");
        let expected = u64::from_be_bytes(digest[..8].try_into().unwrap());
        assert_eq!(bucket("exp-1", "visitor-1"), expected);
        assert_ne!(bucket("exp-1", "visitor-1"), bucket("exp-2", "visitor-1"));
    }

    #[test]
    fn the_quick_split_has_a_fixed_definition_and_splits_evenly() {
        // XXH3-64 of "exp-1\0visitor-1", seed 0: the same on every build.
        assert_eq!(
            quick_bucket("exp-1", "visitor-1"),
            xxhash_rust::xxh3::xxh3_64(b"exp-1\0visitor-1")
        );
        let mut quick = experiment(&[1, 1, 2]);
        quick.split = Split::Xxh3;
        let mut seen = [0usize; 3];
        for v in 0..100_000 {
            let variant = quick.assign(&format!("visitor-{v}")).unwrap();
            seen[variant.name[1..].parse::<usize>().unwrap()] += 1;
        }
        for (count, share) in seen.iter().zip([0.25, 0.25, 0.5]) {
            assert!(
                (*count as f64 - share * 100_000.0).abs() < 1_000.0,
                "{seen:?}"
            );
        }
    }

    #[test]
    fn it_runs_between_start_and_end() {
        let experiment = experiment(&[1, 1]);
        assert!(!experiment.runs_at(999));
        assert!(experiment.runs_at(1_000));
        assert!(!experiment.runs_at(2_000));
    }
}
