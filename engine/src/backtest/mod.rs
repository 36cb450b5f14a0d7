//! What a backtest answers ([`crate::Account::backtest`]): a draft list against the
//! live one on the kept judged moments, paired on what each shopper did next, with who
//! each version reached and what it showed.
//!
//! Files: `moments.rs` (the judged moments an account keeps), `account.rs` (the
//! backtest run over them, and how a moment is kept).

use crate::catalogue::{ArchivedProduct, UnixMillis};
use crate::shadow::Paired;

mod account;
pub(crate) mod moments;

pub use moments::{MAX_MOMENT_BYTES, MAX_MOMENTS};

/// Why a backtest was not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BacktestError {
    /// The account has no such product zone.
    #[error("no product zone {0:?} in the account")]
    NoZone(String),
}

/// A backtest's figures.
#[derive(Debug)]
pub struct Backtest {
    /// The zone.
    pub zone: String,
    /// The moments judged.
    pub moments: u64,
    /// Each product a moment's request brought is a paired trial of both versions
    /// (hit rate and MRR, and the draft's differences with their intervals).
    pub paired: Paired,
    /// What the live version showed.
    pub live: Version,
    /// What the draft showed.
    pub draft: Version,
    /// Every product either version showed, by how its exposure changed (the most
    /// lost first, the most gained last).
    pub exposure: Vec<Exposure>,
}

/// What one version showed over the moments.
#[derive(Debug)]
pub struct Version {
    /// Each campaign shown, with its segment and how many moments it was shown at,
    /// the most shown first.
    pub reach: Vec<Reach>,
    /// Moments at which no campaign was shown (none qualified, or the zone has no
    /// list and is filled as configured).
    pub uncampaigned: u64,
    /// What the products shown were.
    pub shares: Shares,
}

/// A campaign's reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// The campaign's id.
    pub campaign: String,
    /// Its segment's id (none: everyone).
    pub segment: Option<String>,
    /// Moments it was shown at.
    pub moments: u64,
}

/// One product's exposure in both versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// The product's id.
    pub product: String,
    /// Moments the live version showed it at.
    pub live: u64,
    /// Moments the draft showed it at.
    pub draft: u64,
}

impl Exposure {
    /// Draft minus live.
    pub fn change(&self) -> i64 {
        i64::try_from(self.draft).unwrap_or(i64::MAX) - i64::try_from(self.live).unwrap_or(i64::MAX)
    }
}

/// Counts of shown products by what they were at the moment shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shares {
    /// Products shown.
    pub shown: u64,
    /// On offer (`OnOffer`).
    pub on_offer: u64,
    /// New arrivals.
    pub new: u64,
    /// Outside their date window (`StartDate`, `EndDate`) at the moment.
    pub out_of_window: u64,
}

impl Shares {
    /// Counts a product shown at `now`.
    pub fn count(&mut self, product: &ArchivedProduct, now: UnixMillis) {
        self.shown += 1;
        self.on_offer += u64::from(product.on_offer);
        self.new += u64::from(product.new_arrival);
        let before = product
            .available_from
            .as_ref()
            .is_some_and(|from| now < from.to_native());
        let after = product
            .available_until
            .as_ref()
            .is_some_and(|until| now > until.to_native());
        self.out_of_window += u64::from(before || after);
    }

    /// Adds other counts.
    pub fn add(&mut self, other: &Shares) {
        self.shown += other.shown;
        self.on_offer += other.on_offer;
        self.new += other.new;
        self.out_of_window += other.out_of_window;
    }

    /// A count as a share of the products shown (none without any).
    pub fn share(&self, count: u64) -> Option<f64> {
        #[expect(
            clippy::cast_precision_loss,
            reason = "counts far below 2^53 are exact in an f64"
        )]
        (self.shown > 0).then(|| count as f64 / self.shown as f64)
    }
}
