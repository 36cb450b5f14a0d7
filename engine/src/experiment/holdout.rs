//! The store-wide holdout: while it is on, a share of shoppers sees nothing personalized
//! in any zone (each zone filled by a non-personal strategy, `trending` unless the
//! merchandiser names another), so that what personalization adds can be measured
//! against them.
//!
//! A shopper is held out by a stable hash of the person ([`super::quick_bucket`] of
//! [`HOLDOUT_SPLIT`] and the shopper's user id, else email, else visitor id): the same
//! people in every zone, on every node, and in every period the holdout is on at the
//! same share. Each period is counted apart ([`Holdout::counted_as`]): store-wide per
//! group and day, every visitor who made a request and every order, whatever zone (if
//! any) showed its products, under the pseudo-zone [`STORE_ZONE`].
//!
//! As written, in the campaign document's `experiments` part:
//!
//! ```json
//! {"share": 5, "strategy": "trending",
//!  "periods": [{"from": 1764000000000, "share": 5}]}
//! ```

use compact_str::{CompactString, format_compact};
use serde::{Deserialize, Serialize};

use crate::catalogue::UnixMillis;
use crate::zone::{Strategy, ZoneSpec};

/// What the holdout's hash is keyed by (every period shares it: the same people).
pub const HOLDOUT_SPLIT: &str = "holdout";
/// The pseudo-zone store-wide counters are kept under (no zone id starts with `#`).
pub const STORE_ZONE: &str = "#store";
/// The largest share of shoppers the holdout takes, in percent.
pub const MAX_SHARE: u32 = 50;
/// Periods the holdout's history keeps (the oldest makes room).
pub const MAX_PERIODS: usize = 50;

/// One period the holdout was on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HoldoutPeriod {
    /// When it was switched on (Unix milliseconds).
    pub from: UnixMillis,
    /// When it was switched off (none: on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<UnixMillis>,
    /// The share of shoppers held out, in percent.
    pub share: u32,
    /// The non-personal strategy the held-out shoppers' zones were filled by.
    pub strategy: String,
}

/// The holdout as written: its periods, the latest last (on while it has no end).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldoutDefinition {
    /// Its periods, oldest first, at most [`MAX_PERIODS`].
    #[serde(default)]
    pub periods: Vec<HoldoutPeriod>,
}

impl HoldoutDefinition {
    /// The period on now, if any.
    pub fn current(&self) -> Option<&HoldoutPeriod> {
        self.periods.last().filter(|p| p.to.is_none())
    }

    /// Whether it was never switched on.
    pub fn is_empty(&self) -> bool {
        self.periods.is_empty()
    }
}

/// The holdout in force, compiled: who it holds and what their zones show.
#[derive(Debug, Clone, PartialEq)]
pub struct Holdout {
    /// The share held out, in percent.
    pub share: u32,
    /// The strategy the held-out shoppers' product zones are filled by.
    pub strategy: Strategy,
    /// The period's start: what its counters are named by.
    pub from: UnixMillis,
    /// The variant held-out shoppers are counted under.
    pub held: CompactString,
    /// The variant everyone else is counted under.
    pub personalized: CompactString,
}

impl Holdout {
    /// The holdout of a period.
    pub fn of(period: &HoldoutPeriod, strategy: Strategy) -> Holdout {
        let (held, personalized) = Holdout::counted_as(period.from);
        Holdout {
            share: period.share,
            strategy,
            from: period.from,
            held,
            personalized,
        }
    }

    /// The names a period's groups are counted under, held out first:
    /// `holdout:<from>/holdout` and `holdout:<from>/personalized`.
    pub fn counted_as(from: UnixMillis) -> (CompactString, CompactString) {
        (
            format_compact!("holdout:{from}/holdout"),
            format_compact!("holdout:{from}/personalized"),
        )
    }

    /// Whether the shopper whose [`crate::account`] person key is `person` is held out.
    pub fn holds(&self, person: &str) -> bool {
        held_out(self.share, person)
    }

    /// The group `person` is counted in.
    pub fn group(&self, person: &str) -> &CompactString {
        if self.holds(person) {
            &self.held
        } else {
            &self.personalized
        }
    }

    /// `zone` as a held-out shopper sees it: its products from the holdout's strategy,
    /// with no fallback (what the zone's configuration would add may be personal).
    pub fn spec(&self, zone: &ZoneSpec) -> ZoneSpec {
        ZoneSpec {
            strategy: Some(self.strategy),
            fallback: Vec::new(),
            ..zone.clone()
        }
    }
}

/// Whether a share (percent) holds the person out: their point in ten thousand below
/// the share's.
pub fn held_out(share: u32, person: &str) -> bool {
    super::quick_bucket(HOLDOUT_SPLIT, person) % 10_000 < u64::from(share) * 100
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_holds_out_that_share_of_people_and_more_holds_a_superset() {
        let people: Vec<String> = (0..100_000).map(|i| format!("person-{i}")).collect();
        let five = people.iter().filter(|p| held_out(5, p)).count();
        assert!((4_500..5_500).contains(&five), "{five}");
        // Raising the share keeps everyone held out before (the point is fixed).
        assert!(
            people
                .iter()
                .filter(|p| held_out(5, p))
                .all(|p| held_out(10, p))
        );
        assert_eq!(people.iter().filter(|p| held_out(0, p)).count(), 0);
    }

    #[test]
    fn periods_are_counted_apart() {
        let (held, rest) = Holdout::counted_as(1_000);
        assert_eq!(held, "holdout:1000/holdout");
        assert_eq!(rest, "holdout:1000/personalized");
        assert_ne!(Holdout::counted_as(2_000).0, held);
    }
}
