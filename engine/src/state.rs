//! An account's tracking state as it leaves memory: the record of one request's events
//! for the write-ahead log ([`Tracked`]), and the entries of a state snapshot
//! ([`StateEntry`]). Both are rkyv archives; framing and files belong to the caller.

use crate::analytics::{ShownZones, StoredImpressions, ZoneCounts, ZoneDay};
use crate::campaign::StoredCampaignHistory;
use crate::catalogue::UnixMillis;
use crate::event::Events;
use crate::models::{Decaying, PairCount};
use crate::money::Currency;
use crate::repurchases::Repurchases;
use crate::visitor::Visitor;
use crate::visits::Visits;

/// The events of one `/api/serverside` request as logged: replaying it gives the same
/// visitor state and counts as serving it did.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Tracked {
    /// The visitor the events belong to.
    pub visitor_id: String,
    /// The session id the request was answered with.
    pub session_id: String,
    /// Time of the request.
    pub now: UnixMillis,
    /// The events, in request order.
    pub events: Events,
}

/// One `/api/serverside` request as logged since zone analytics: its events, the
/// currency its orders were in and what its zones showed. Replaying it gives the same
/// visitor state, counts and zone analytics as serving it did.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Served {
    /// The visitor, session, time and events.
    pub tracked: Tracked,
    /// The request's currency (given, or the account's default then).
    pub currency: Currency,
    /// What each filled product zone showed, in request order (zones that showed
    /// nothing left out).
    pub shown: ShownZones,
}

/// What an identity key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum IdentityKind {
    /// A store user id.
    User,
    /// An email address (lower-cased).
    Email,
    /// A B2B account id.
    Account,
}

/// One entry of a state snapshot. A snapshot is a sequence of them; restoring them in
/// any order into an empty account gives the state that was written.
#[derive(Debug, Clone, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum StateEntry {
    /// The latest request time seen.
    Clock(UnixMillis),
    /// A visitor's whole state.
    Visitor {
        /// Visitor id.
        id: String,
        /// Its state.
        visitor: Box<Visitor>,
    },
    /// A live session and its last request.
    Session {
        /// Session id.
        id: String,
        /// Last request time.
        last: UnixMillis,
    },
    /// A recorded order id.
    Order(String),
    /// Visitors linked to an identifier.
    Identity {
        /// What the key is.
        kind: IdentityKind,
        /// The identifier.
        key: String,
        /// Linked visitor ids.
        visitors: Vec<String>,
    },
    /// A product's counters.
    Counter {
        /// Product id.
        product: String,
        /// Decayed popularity.
        popularity: Decaying,
        /// Units sold.
        units: u64,
    },
    /// A category's decayed popularity.
    CategoryPopularity {
        /// Category id.
        name: String,
        /// Its popularity.
        popularity: Decaying,
    },
    /// A brand's decayed popularity.
    BrandPopularity {
        /// Brand id.
        name: String,
        /// Its popularity.
        popularity: Decaying,
    },
    /// A product's co-view partners and counts, as written before inherited counts
    /// were kept (read, no longer written: see [`StateEntry::CoViewPairs`]).
    CoView {
        /// Product id.
        product: String,
        /// Partner ids and counts.
        partners: Vec<(String, f32)>,
    },
    /// A product's co-purchase partners and counts, as written before inherited counts
    /// were kept (read, no longer written: see [`StateEntry::CoPurchasePairs`]).
    CoPurchase {
        /// Product id.
        product: String,
        /// Partner ids and counts.
        partners: Vec<(String, f32)>,
    },
    /// A visitor's zone impressions (boxed: entries keep the size they had before).
    Impressions {
        /// Visitor id.
        visitor: String,
        /// Its impressions.
        impressions: Box<StoredImpressions>,
    },
    /// A zone's counters for one variant and day.
    ZoneDay {
        /// Zone, variant and day.
        key: Box<ZoneDay>,
        /// The counters.
        counts: Box<ZoneCounts>,
    },
    /// A product's co-view partners, counts and inherited counts.
    CoViewPairs {
        /// Product id.
        product: String,
        /// Its pairs.
        partners: Vec<PairCount>,
    },
    /// A product's co-purchase partners, counts and inherited counts (read, no longer
    /// written: see [`StateEntry::CoPurchasePairsByDistance`]).
    CoPurchasePairs {
        /// Product id.
        product: String,
        /// Its pairs.
        partners: Vec<PairCount>,
    },
    /// A zone's clicks for one variant and day (the one counter [`ZoneDay`] entries do
    /// not carry).
    Clicks {
        /// Zone, variant and day.
        key: Box<ZoneDay>,
        /// Clicks.
        clicked: u64,
    },
    /// A day's store-wide figures (see [`crate::site`]).
    SiteDay(Box<crate::site::StoredSiteDay>),
    /// A product's co-view partners, counts, inherited counts and counts by distance
    /// (written instead of [`StateEntry::CoViewPairs`], which is still read; boxed).
    CoViewPairsByDistance(Box<PairsByDistance>),
    /// The products a visitor bought, in how many orders and when last (see
    /// [`crate::repurchases`]; written after the visitor's [`StateEntry::Visitor`]).
    Repurchases {
        /// Visitor id.
        visitor: String,
        /// What it bought.
        bought: Box<Repurchases>,
    },
    /// A product's co-purchase partners, counts, inherited counts and counts by
    /// distance: 1 for the lines of one order, 2 and 3 for a shopper's purchases one
    /// and two before it (written instead of [`StateEntry::CoPurchasePairs`], which is
    /// still read, as if every count were of one order; boxed).
    CoPurchasePairsByDistance(Box<PairsByDistance>),
    /// A visitor's sessions, page views and orders (see [`crate::visits`]; written
    /// after the visitor's [`StateEntry::Visitor`]).
    Visits {
        /// Visitor id.
        visitor: String,
        /// Its visits.
        visits: Box<Visits>,
    },
    /// The account's campaign documents, every version kept (see [`crate::campaign`]).
    Campaigns(Box<StoredCampaignHistory>),
    /// A product's co-view pairs with their counts by distance and by direction
    /// (written instead of [`StateEntry::CoViewPairsByDistance`], which is still read,
    /// each count taken as half in either direction).
    CoViewPairsDirected(Box<crate::models::DirectedPairs>),
    /// A product's co-purchase pairs likewise (written instead of
    /// [`StateEntry::CoPurchasePairsByDistance`], which is still read).
    CoPurchasePairsDirected(Box<crate::models::DirectedPairs>),
    /// A recent session's products, for `similar_sessions` (written oldest first).
    SessionProducts(Box<crate::models::StoredSession>),
    /// What segments read of a visitor's latest request (see
    /// [`crate::campaign::request`]; written after the visitor's [`StateEntry::Visitor`]).
    LatestRequest {
        /// Visitor id.
        visitor: String,
        /// Its latest request.
        request: Box<crate::campaign::request::StoredRequest>,
    },
    /// The account's campaign drafts (see [`crate::campaign::draft`]).
    CampaignDrafts(Box<crate::campaign::draft::Drafts>),
    /// A zone's spread of per-visitor revenue for one variant and day (the other counter
    /// [`ZoneDay`] entries do not carry; see [`crate::analytics::spread`]).
    RevenueSpread {
        /// Zone, variant and day.
        key: Box<ZoneDay>,
        /// Its spread, by currency.
        spread: Box<crate::analytics::Spreads>,
    },
}

/// A product's co-view partners, counts, inherited counts and counts by distance.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct PairsByDistance {
    /// Product id.
    pub product: String,
    /// Its pairs.
    pub partners: Vec<PairCount>,
    /// Each pair's counts at distance 1 and at distance 3 at most, in the order of
    /// `partners` (see [`crate::models::Reach`]).
    pub reach: Vec<[f32; 2]>,
}

/// A click on a product a zone showed, as the log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Clicked {
    /// The visitor who clicked (for the variant the zone showed them).
    pub visitor_id: String,
    /// The zone id.
    pub zone: String,
    /// When.
    pub now: UnixMillis,
}
