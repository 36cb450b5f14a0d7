//! How a zone's attributed revenue is spread over its visitors: per visitor and day, the
//! revenue in log-scale buckets, each with its visitors, sum and sum of squares. It is
//! what caps revenue per visitor at a high percentile for experiments (one shopper's
//! large order must not decide a test), exactly: the cap is a bucket edge, so the capped
//! sums are the sums of the buckets below it and the cap times the visitors above.
//!
//! A bucket `k ≥ 1` holds revenues in `[2^((k−1)/4), 2^(k/4))` minor units (a bucket
//! is 19 % wide); bucket 0 holds revenues below one minor unit (none, or refunds), never
//! capped. A visitor whose revenue that day grows from `before` to `after` moves from
//! one bucket to another: counts are signed, so that a change adds like any other.

use crate::money::Currency;

/// Buckets per doubling of revenue.
const PER_DOUBLING: f64 = 4.0;

/// One bucket's visitors, revenue and squares (changes may be negative).
#[derive(Debug, Clone, Copy, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Bucket {
    /// Its index.
    pub index: u16,
    /// Visitors whose revenue that day falls in it.
    pub visitors: i64,
    /// Their revenue, minor units.
    pub sum: i64,
    /// The sum of the squares of their revenues.
    pub squares: f64,
}

/// The spread of one currency's per-visitor revenue: buckets by ascending index, only
/// those that ever held a visitor.
#[derive(Debug, Clone, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Spread {
    /// The buckets.
    pub buckets: Vec<Bucket>,
}

/// The bucket a revenue falls in.
pub fn bucket_of(minor: i64) -> u16 {
    if minor < 1 {
        return 0;
    }
    let index = ((minor as f64).log2() * PER_DOUBLING).floor() + 1.0;
    index.clamp(1.0, f64::from(u16::MAX)) as u16
}

/// The upper edge of a bucket, in minor units (what revenue in buckets above it is
/// capped to).
pub fn upper_edge(index: u16) -> f64 {
    (f64::from(index) / PER_DOUBLING).exp2()
}

impl Spread {
    /// A visitor's revenue that day went from `before` to `after` (`before` 0: the
    /// visitor had none, and is counted from now on).
    pub fn moved(&mut self, before: i64, after: i64) {
        if before != 0 {
            self.add_to(bucket_of(before), -1, -before, -(before as f64).powi(2));
        }
        self.add_to(bucket_of(after), 1, after, (after as f64).powi(2));
    }

    /// Adds another spread (another day's, a variant's or a change).
    pub fn add(&mut self, other: &Spread) {
        for bucket in &other.buckets {
            self.add_to(bucket.index, bucket.visitors, bucket.sum, bucket.squares);
        }
    }

    fn add_to(&mut self, index: u16, visitors: i64, sum: i64, squares: f64) {
        let at = match self.buckets.binary_search_by_key(&index, |b| b.index) {
            Ok(at) => at,
            Err(at) => {
                self.buckets.insert(
                    at,
                    Bucket {
                        index,
                        visitors: 0,
                        sum: 0,
                        squares: 0.0,
                    },
                );
                at
            }
        };
        if let Some(bucket) = self.buckets.get_mut(at) {
            bucket.visitors += visitors;
            bucket.sum = bucket.sum.saturating_add(sum);
            bucket.squares += squares;
        }
    }

    /// Visitors with revenue (in a bucket above 0).
    pub fn paying(&self) -> i64 {
        self.buckets
            .iter()
            .filter(|b| b.index > 0)
            .map(|b| b.visitors)
            .sum()
    }

    /// The bucket whose upper edge caps revenue at the `quantile` (0..1) of paying
    /// visitors' revenue: the first bucket at or past which that share of them lies.
    /// None without paying visitors.
    pub fn cap_at(&self, quantile: f64) -> Option<u16> {
        let paying = self.paying();
        if paying <= 0 {
            return None;
        }
        let wanted = (quantile * paying as f64).ceil() as i64;
        let mut seen = 0;
        for bucket in self.buckets.iter().filter(|b| b.index > 0) {
            seen += bucket.visitors;
            if seen >= wanted {
                return Some(bucket.index);
            }
        }
        self.buckets.last().map(|b| b.index)
    }

    /// The sum and the sum of squares of per-visitor revenue with every revenue in a
    /// bucket above `cap` taken as `cap`'s upper edge (none: uncapped).
    pub fn capped(&self, cap: Option<u16>) -> (f64, f64) {
        let edge = cap.map(upper_edge);
        self.buckets
            .iter()
            .fold((0.0, 0.0), |(sum, squares), bucket| match (cap, edge) {
                (Some(cap), Some(edge)) if bucket.index > cap => {
                    let visitors = bucket.visitors as f64;
                    (sum + visitors * edge, squares + visitors * edge * edge)
                }
                _ => (sum + bucket.sum as f64, squares + bucket.squares),
            })
    }
}

/// Spreads by currency (ascending), as [`super::ZoneCounts`] keeps them.
pub type Spreads = Vec<(Currency, Spread)>;

/// The spread of `currency` in `spreads`, created when missing.
pub fn spread_of(spreads: &mut Spreads, currency: Currency) -> Option<&mut Spread> {
    let at = match spreads.binary_search_by_key(&currency, |(c, _)| *c) {
        Ok(at) => at,
        Err(at) => {
            spreads.insert(at, (currency, Spread::default()));
            at
        }
    };
    spreads.get_mut(at).map(|(_, spread)| spread)
}

/// Adds `other` to `spreads`, currency by currency.
pub fn add_spreads(spreads: &mut Spreads, other: &Spreads) {
    for (currency, spread) in other {
        if let Some(mine) = spread_of(spreads, *currency) {
            mine.add(spread);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_a_quarter_doubling_wide() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(-5), 0);
        assert_eq!(bucket_of(1), 1);
        assert_eq!(bucket_of(2), 5);
        assert_eq!(bucket_of(1024), 41);
        for minor in [1, 7, 999, 12_345, 1_000_000_000] {
            let k = bucket_of(minor);
            assert!((minor as f64) < upper_edge(k), "{minor} in {k}");
            assert!((minor as f64) >= upper_edge(k - 1), "{minor} in {k}");
        }
    }

    #[test]
    fn a_visitor_moves_between_buckets_and_capping_is_exact_at_an_edge() {
        let mut spread = Spread::default();
        // 99 visitors spend 10.00, one spends 10,000.00 after two orders.
        for _ in 0..99 {
            spread.moved(0, 1_000);
        }
        spread.moved(0, 400_000);
        spread.moved(400_000, 1_000_000);
        assert_eq!(spread.paying(), 100);
        let (sum, squares) = spread.capped(None);
        assert_eq!(sum, 99.0 * 1_000.0 + 1_000_000.0);
        assert_eq!(squares, 99.0 * 1e6 + 1e12);
        // The 99th percentile is 10.00: the big spender counts as the edge above it.
        let cap = spread.cap_at(0.99).unwrap();
        assert_eq!(cap, bucket_of(1_000));
        let edge = upper_edge(cap);
        assert!(edge > 1_000.0 && edge < 1_200.0);
        let (sum, squares) = spread.capped(Some(cap));
        assert_eq!(sum, 99.0 * 1_000.0 + edge);
        assert_eq!(squares, 99.0 * 1e6 + edge * edge);
        // Changes add: the move as a change, added to an empty spread, is the spread.
        let mut total = Spread::default();
        total.add(&spread);
        assert_eq!(total.capped(None), spread.capped(None));
        assert_eq!(Spread::default().cap_at(0.99), None);
    }
}
