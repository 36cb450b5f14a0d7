//! Zone analytics: what each zone answer showed a visitor (kept per visitor, bounded)
//! and what came of it, counted per zone × variant × day.
//!
//! An answer's products are *impressions*. A later `product_view` of a shown product
//! in the same session is a *view-through*; a basket add of one, or an order line of
//! one, within the account's attribution window (default 7 days) is *basketed* or
//! *ordered*, with the line's units and revenue in the order's currency. Each shown
//! product is credited at most once for each of the three, to the latest answer that
//! showed it (last touch), and counted on the day the credited event happened. The
//! counters hold no identifier: an erasure removes the visitor's impressions and leaves
//! the counts.
//!
//! Files: `spread.rs` (revenue spreads for the experiments' statistics), `figures.rs`
//! (`Figures`, what an account holds of its analytics, site figures, activity and
//! predictions), `account.rs` (what an account records of the zones it shows and
//! attributes of its shoppers' clicks and orders).

use std::collections::VecDeque;

use compact_str::CompactString;

use crate::catalogue::UnixMillis;
use crate::money::Currency;

mod account;
pub(crate) mod figures;
pub mod spread;

pub use spread::{Spread, Spreads};

/// Zone answers remembered per visitor (the oldest makes room).
pub const MAX_ANSWERS: usize = 8;
/// Products remembered per answer (its first ones).
pub const MAX_ANSWER_ITEMS: usize = 20;
/// Days after an answer within which a basket add or an order line is credited to it,
/// unless the account says otherwise.
pub const DEFAULT_ATTRIBUTION_DAYS: u32 = 7;
/// Milliseconds in a (UTC) day.
pub const MILLIS_PER_DAY: UnixMillis = 24 * 60 * 60 * 1000;

/// The UTC day of an instant, as days since 1970-01-01.
pub fn day_of(at: UnixMillis) -> i32 {
    i32::try_from(at.div_euclid(MILLIS_PER_DAY)).unwrap_or(i32::MAX)
}

/// A shown product was viewed.
const VIEWED: u8 = 1;
/// A shown product was put in the basket.
const BASKETED: u8 = 2;
/// A shown product was ordered.
const ORDERED: u8 = 4;

/// Product ids of one zone answer, on the heap: a request's record moves them a few
/// times, and kept inline they would be copied at each move (archived as a vector, as
/// they were when inline).
pub type ShownProducts = Vec<CompactString>;

/// What a request's zones showed: two zones without a heap allocation (archived as a
/// vector).
pub type ShownZones = smallvec::SmallVec<[ShownZone; 2]>;

/// What one zone of one request showed, as logged.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ShownZone {
    /// The zone id.
    pub zone: CompactString,
    /// The experiment variant that answered (empty: no experiment).
    pub variant: CompactString,
    /// Product ids in display order.
    pub products: ShownProducts,
}

/// One zone answer as a visitor's impressions remember it (its products are in
/// [`Impressions::shown`]).
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Answer {
    /// The zone id.
    pub zone: CompactString,
    /// The experiment variant (empty: none).
    pub variant: CompactString,
    /// When it was shown.
    pub at: UnixMillis,
    /// [`session_key`] of the session it was shown in.
    pub session: u64,
    /// Its number among the visitor's answers.
    pub number: u32,
}

/// A product an answer showed, by its product key (the account's
/// [`crate::models::ProductKeys`]: 12 bytes where the id would take 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// [`Answer::number`] of the answer.
    pub answer: u32,
    /// The product's key.
    pub product: u32,
    /// What it was credited for (bits).
    pub credited: u8,
}

/// A shown product as a state snapshot keeps it: by id (keys last one process).
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct StoredShown {
    /// [`Answer::number`] of the answer.
    pub answer: u32,
    /// The product id.
    pub product: CompactString,
    /// What it was credited for (bits).
    pub credited: u8,
}

/// A zone and variant a visitor was counted in on one day.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Counted {
    /// The zone id.
    pub zone: CompactString,
    /// The variant.
    pub variant: CompactString,
    /// The day.
    pub day: i32,
    /// Whether it was counted among the zone's visitors (shown it that day).
    pub shown: bool,
    /// Whether it was counted among the ordering visitors that day.
    pub ordered: bool,
    /// Its attributed revenue that day, in minor units per currency.
    pub revenue: Vec<(Currency, i64)>,
}

/// A visitor's impressions: the latest answers, the products they showed (in one list,
/// so that a visitor's answers share one allocation), and where the visitor was counted
/// today.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Impressions {
    /// Answers, oldest first, at most [`MAX_ANSWERS`].
    pub answers: VecDeque<Answer>,
    /// The answers' products, oldest answer first, at most [`MAX_ANSWER_ITEMS`] each.
    pub shown: VecDeque<Shown>,
    /// Zones and variants the visitor was counted in, on the latest day only.
    pub counted: Vec<Counted>,
    /// The number the next answer takes.
    pub next: u32,
}

/// [`Impressions`] as a state snapshot keeps them: products by id.
#[derive(Debug, Clone, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct StoredImpressions {
    /// [`Impressions::answers`].
    pub answers: Vec<Answer>,
    /// [`Impressions::shown`], by id.
    pub shown: Vec<StoredShown>,
    /// [`Impressions::counted`].
    pub counted: Vec<Counted>,
    /// [`Impressions::next`].
    pub next: u32,
}

/// The key of a day's counters.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct ZoneDay {
    /// The zone id.
    pub zone: CompactString,
    /// The variant (empty: none).
    pub variant: CompactString,
    /// The UTC day ([`day_of`]).
    pub day: i32,
}

/// A zone's counters for one variant and day.
#[derive(Debug, Clone, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ZoneCounts {
    /// Answers given.
    pub answers: u64,
    /// Products shown.
    pub impressions: u64,
    /// Distinct visitors shown the zone.
    pub visitors: u64,
    /// Shown products viewed afterwards in the same session.
    pub viewed: u64,
    /// Shown products put in the basket within the window.
    pub basketed: u64,
    /// Order lines of shown products within the window.
    pub ordered_lines: u64,
    /// Units of those lines.
    pub ordered_units: u64,
    /// Distinct visitors with such an order line.
    pub ordering_visitors: u64,
    /// Revenue of those lines in minor units, per currency (ascending codes).
    pub revenue: Vec<(Currency, i64)>,
    /// Per currency (ascending codes), the sum over visitors of the square of each
    /// visitor's attributed revenue that day, in minor units (for the variance of
    /// revenue per visitor).
    pub revenue_squares: Vec<(Currency, f64)>,
    /// Clicks on shown products, reported by the browser script. Kept in state snapshots
    /// as their own entries ([`crate::state::StateEntry::Clicks`]): skipped here so that
    /// the archived counters keep the layout older snapshots have.
    #[rkyv(with = rkyv::with::Skip)]
    pub clicked: u64,
    /// Per currency (ascending codes), how per-visitor revenue that day is spread (what
    /// experiments cap it with). Kept in state snapshots as their own entries
    /// ([`crate::state::StateEntry::RevenueSpread`]), like `clicked`.
    #[rkyv(with = rkyv::with::Skip)]
    pub revenue_spread: Spreads,
}

impl ZoneCounts {
    /// Adds another day's (or variant's) counts to these.
    pub fn add(&mut self, other: &ZoneCounts) {
        self.answers += other.answers;
        self.impressions += other.impressions;
        self.visitors += other.visitors;
        self.viewed += other.viewed;
        self.basketed += other.basketed;
        self.ordered_lines += other.ordered_lines;
        self.ordered_units += other.ordered_units;
        self.ordering_visitors += other.ordering_visitors;
        self.clicked += other.clicked;
        for (currency, minor) in &other.revenue {
            self.add_revenue(*currency, *minor);
        }
        for (currency, squares) in &other.revenue_squares {
            self.add_squares(*currency, *squares);
        }
        spread::add_spreads(&mut self.revenue_spread, &other.revenue_spread);
    }

    /// How per-visitor revenue in `currency` is spread (empty: none).
    pub fn spread_in(&self, currency: Currency) -> Option<&Spread> {
        self.revenue_spread
            .iter()
            .find(|(c, _)| *c == currency)
            .map(|(_, spread)| spread)
    }

    /// Adds to the sum of squares of a currency.
    pub fn add_squares(&mut self, currency: Currency, squares: f64) {
        match self
            .revenue_squares
            .binary_search_by_key(&currency, |(c, _)| *c)
        {
            Ok(at) => {
                if let Some((_, sum)) = self.revenue_squares.get_mut(at) {
                    *sum += squares;
                }
            }
            Err(at) => self.revenue_squares.insert(at, (currency, squares)),
        }
    }

    /// Revenue in `currency`, in minor units.
    pub fn revenue_in(&self, currency: Currency) -> i64 {
        self.revenue
            .iter()
            .find(|(c, _)| *c == currency)
            .map_or(0, |(_, minor)| *minor)
    }

    /// The sum of squares of per-visitor revenue in `currency`.
    pub fn squares_in(&self, currency: Currency) -> f64 {
        self.revenue_squares
            .iter()
            .find(|(c, _)| *c == currency)
            .map_or(0.0, |(_, sum)| *sum)
    }

    /// Adds revenue in a currency.
    pub fn add_revenue(&mut self, currency: Currency, minor: i64) {
        match self.revenue.binary_search_by_key(&currency, |(c, _)| *c) {
            Ok(at) => {
                if let Some((_, sum)) = self.revenue.get_mut(at) {
                    *sum = sum.saturating_add(minor);
                }
            }
            Err(at) => self.revenue.insert(at, (currency, minor)),
        }
    }
}

/// A stable 64-bit key of a session id (the same in every process).
pub fn session_key(session_id: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(session_id.as_bytes());
    hasher.finish()
}

/// What a visitor did with a product (by key) that a zone may have shown.
#[derive(Debug, Clone, Copy)]
pub enum Touch {
    /// A product view in the session `session` ([`session_key`]).
    View {
        /// The product's key.
        product: u32,
        /// The session.
        session: u64,
    },
    /// A product newly in the basket.
    Basket {
        /// The product's key.
        product: u32,
    },
    /// An order line.
    Order {
        /// The product's key.
        product: u32,
        /// Units ordered.
        units: u64,
        /// The line's value in minor units of `currency`.
        minor: i64,
        /// The order's currency.
        currency: Currency,
    },
}

impl Touch {
    fn product(&self) -> u32 {
        match self {
            Touch::View { product, .. }
            | Touch::Basket { product }
            | Touch::Order { product, .. } => *product,
        }
    }

    fn bit(&self) -> u8 {
        match self {
            Touch::View { .. } => VIEWED,
            Touch::Basket { .. } => BASKETED,
            Touch::Order { .. } => ORDERED,
        }
    }
}

/// The counts one request adds: two zones' without a heap allocation.
pub type Tallies = smallvec::SmallVec<[Tally; 2]>;

/// A change to the account's counters worked out from a visitor's impressions.
#[derive(Debug, PartialEq)]
pub struct Tally {
    /// Whose counters.
    pub key: ZoneDay,
    /// What to add.
    pub counts: ZoneCounts,
}

impl Impressions {
    /// These impressions as a state snapshot keeps them (`name` gives a key's id; a
    /// product without one is left out).
    pub fn to_stored(&self, name: impl Fn(u32) -> Option<CompactString>) -> StoredImpressions {
        StoredImpressions {
            answers: self.answers.iter().cloned().collect(),
            shown: self
                .shown
                .iter()
                .filter_map(|s| {
                    Some(StoredShown {
                        answer: s.answer,
                        product: name(s.product)?,
                        credited: s.credited,
                    })
                })
                .collect(),
            counted: self.counted.clone(),
            next: self.next,
        }
    }

    /// Impressions restored from a state snapshot (`key` gives an id's key).
    pub fn from_stored(stored: StoredImpressions, key: impl Fn(&str) -> u32) -> Impressions {
        Impressions {
            answers: stored.answers.into(),
            shown: stored
                .shown
                .iter()
                .map(|s| Shown {
                    answer: s.answer,
                    product: key(&s.product),
                    credited: s.credited,
                })
                .collect(),
            counted: stored.counted,
            next: stored.next,
        }
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty() && self.counted.is_empty()
    }

    /// Remembers the zones one request showed at `now` in `session` (`key(z, i)`: the
    /// key of the `i`th product of the `z`th zone); the counts to add.
    pub fn record(
        &mut self,
        shown: &[ShownZone],
        key: impl Fn(usize, usize) -> Option<u32>,
        session: u64,
        now: UnixMillis,
    ) -> Tallies {
        let day = day_of(now);
        self.counted.retain(|c| c.day >= day);
        let mut tallies = Tallies::new();
        for (z, zone) in shown.iter().enumerate() {
            let mut counts = ZoneCounts {
                answers: 1,
                impressions: zone.products.len() as u64,
                ..ZoneCounts::default()
            };
            if self.count(&zone.zone, &zone.variant, day, |c| &mut c.shown) {
                counts.visitors = 1;
            }
            // The oldest answer makes room, with its products.
            if self.answers.len() >= MAX_ANSWERS
                && let Some(oldest) = self.answers.pop_front()
            {
                while self
                    .shown
                    .front()
                    .is_some_and(|s| s.answer == oldest.number)
                {
                    self.shown.pop_front();
                }
            }
            let number = self.next;
            self.next = self.next.wrapping_add(1);
            self.shown.extend(
                (0..zone.products.len().min(MAX_ANSWER_ITEMS)).filter_map(|i| {
                    Some(Shown {
                        answer: number,
                        product: key(z, i)?,
                        credited: 0,
                    })
                }),
            );
            self.answers.push_back(Answer {
                zone: zone.zone.clone(),
                variant: zone.variant.clone(),
                at: now,
                session,
                number,
            });
            tallies.push(Tally {
                key: ZoneDay {
                    zone: zone.zone.clone(),
                    variant: zone.variant.clone(),
                    day,
                },
                counts,
            });
        }
        tallies
    }

    /// Credits `touch` at `now` to the latest answer that showed its product and was not
    /// credited for it yet: within the same session for a view, within `window` for a
    /// basket add or an order line. The counts to add, if any answer was credited.
    pub fn credit(&mut self, touch: Touch, now: UnixMillis, window: UnixMillis) -> Option<Tally> {
        let bit = touch.bit();
        let product = touch.product();
        // The latest answer in reach that showed the product and was not credited for it.
        let in_reach = |answer: &Answer| {
            answer.at <= now
                && match touch {
                    Touch::View { session, .. } => answer.session == session,
                    Touch::Basket { .. } | Touch::Order { .. } => now - answer.at <= window,
                }
        };
        let (answer, shown) = self.shown.iter_mut().rev().find_map(|shown| {
            if shown.product != product || shown.credited & bit != 0 {
                return None;
            }
            let answer = self.answers.iter().find(|a| a.number == shown.answer)?;
            in_reach(answer).then_some((answer, shown))
        })?;
        shown.credited |= bit;
        let (zone, variant) = (answer.zone.clone(), answer.variant.clone());
        let day = day_of(now);
        let mut counts = ZoneCounts::default();
        match touch {
            Touch::View { .. } => counts.viewed = 1,
            Touch::Basket { .. } => counts.basketed = 1,
            Touch::Order {
                units,
                minor,
                currency,
                ..
            } => {
                counts.ordered_lines = 1;
                counts.ordered_units = units;
                counts.add_revenue(currency, minor);
                self.counted.retain(|c| c.day >= day);
                if self.count(&zone, &variant, day, |c| &mut c.ordered) {
                    counts.ordering_visitors = 1;
                }
                self.add_visitor_revenue(&zone, &variant, day, currency, minor, &mut counts);
            }
        }
        Some(Tally {
            key: ZoneDay { zone, variant, day },
            counts,
        })
    }

    /// Counts one request of the visitor store-wide (under the pseudo-zone `zone`, the
    /// visitor's group as `variant`) on the day of `now`: the visitor the first time that
    /// day, and the revenue of the request's new orders (`ordered`, in minor units of
    /// their currency) with the visitor among the ordering ones.
    pub fn count_store(
        &mut self,
        zone: &str,
        variant: &str,
        ordered: Option<(Currency, i64)>,
        now: UnixMillis,
    ) -> Tally {
        let day = day_of(now);
        self.counted.retain(|c| c.day >= day);
        let mut counts = ZoneCounts {
            answers: 1,
            ..ZoneCounts::default()
        };
        if self.count(zone, variant, day, |c| &mut c.shown) {
            counts.visitors = 1;
        }
        if let Some((currency, minor)) = ordered {
            if self.count(zone, variant, day, |c| &mut c.ordered) {
                counts.ordering_visitors = 1;
            }
            counts.add_revenue(currency, minor);
            self.add_visitor_revenue(zone, variant, day, currency, minor, &mut counts);
        }
        Tally {
            key: ZoneDay {
                zone: zone.into(),
                variant: variant.into(),
                day,
            },
            counts,
        }
    }

    /// Adds `minor` to the visitor's revenue on (zone, variant, day), and to `counts` what
    /// that changes in the sum of squares and the spread of per-visitor revenue.
    fn add_visitor_revenue(
        &mut self,
        zone: &str,
        variant: &str,
        day: i32,
        currency: Currency,
        minor: i64,
        counts: &mut ZoneCounts,
    ) {
        let Some(entry) = self
            .counted
            .iter_mut()
            .find(|c| c.day == day && c.zone == zone && c.variant == variant)
        else {
            return;
        };
        // The visitor's revenue that day grows from `before` to `after`: the sum of
        // squares grows by the difference of their squares.
        let before = match entry.revenue.iter_mut().find(|(c, _)| *c == currency) {
            Some((_, sum)) => std::mem::replace(sum, sum.saturating_add(minor)),
            None => {
                entry.revenue.push((currency, minor));
                0
            }
        };
        let after = before.saturating_add(minor);
        counts.add_squares(currency, (after as f64).powi(2) - (before as f64).powi(2));
        if let Some(spread) = spread::spread_of(&mut counts.revenue_spread, currency) {
            spread.moved(before, after);
        }
    }

    /// Sets the flag `which` picks of the visitor's entry for (zone, variant, day);
    /// whether it was not set before.
    fn count(
        &mut self,
        zone: &str,
        variant: &str,
        day: i32,
        which: impl Fn(&mut Counted) -> &mut bool,
    ) -> bool {
        let entry = match self
            .counted
            .iter()
            .position(|c| c.day == day && c.zone == zone && c.variant == variant)
        {
            Some(at) => self.counted.get_mut(at),
            None => {
                self.counted.push(Counted {
                    zone: zone.into(),
                    variant: variant.into(),
                    day,
                    shown: false,
                    ordered: false,
                    revenue: Vec::new(),
                });
                self.counted.last_mut()
            }
        };
        let Some(entry) = entry else { return false };
        let flag = which(entry);
        !std::mem::replace(flag, true)
    }
}

#[cfg(test)]
mod tests;
