//! What an account is configured with ([`AccountSettings`]).

use crate::experiment::Experiment;
use crate::models::ModelSettings;
use crate::money::Currency;
use crate::zone::ZoneSpec;

/// Settings of an account that the engine needs.
#[derive(Debug, Clone)]
pub struct AccountSettings {
    /// The access key naming the account.
    pub access_key: String,
    /// Currency used when a request names none.
    pub default_currency: Currency,
    /// The account's zones.
    pub zones: Vec<ZoneSpec>,
    /// How much of the co-view and co-purchase models it keeps.
    pub models: ModelSettings,
    /// Days after a zone answer within which a basket add or an order line of a
    /// product it showed is credited to it.
    pub attribution_days: u32,
    /// A/B tests of its zones' strategies.
    pub experiments: Vec<Experiment>,
    /// Whether zone answers are recorded for analytics (impressions and attribution).
    pub zone_analytics: bool,
    /// Whether the product zones are judged against what sampled shoppers do next
    /// ([`crate::prequential`]).
    pub self_evaluation: bool,
    /// Whether the co-view lists' setting tunes itself on the sampled shoppers
    /// ([`crate::tuning`]; needs `self_evaluation`), and what is pinned.
    pub tuning: crate::tuning::Tuning,
    /// Visitors (and live sessions) kept at most; `None`: unbounded. The background
    /// pass keeps them under it; a request that finds the account more than
    /// [`INLINE_SLACK`](crate::account::INLINE_SLACK) over it evicts inline ([`Account::keep_bound`](crate::account::Account::keep_bound)), so that the bound
    /// holds whatever the scheduling.
    pub max_visitors: Option<usize>,
    /// The account's time zone (IANA), in which campaign schedules keep days and hours.
    pub time_zone: jiff::tz::TimeZone,
}
