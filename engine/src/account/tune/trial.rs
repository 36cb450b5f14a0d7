//! A trial of `personalized`'s recipes as a request leaves it, scored later off the
//! request path (see `recipe`).

use std::sync::Arc;

use smallvec::SmallVec;

use crate::account::visitor_view::VisitorSnapshot;
use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::models::Neighbours;
use crate::models::live::RankingsVersion;
use crate::money::Currency;
use crate::tuning::recipe::Recipe;
use crate::zone::ZoneSpec;

/// A trial of the recipes, taken on a request: what the zone would have been filled
/// from for the visitor before it, and what it brought.
#[derive(Debug)]
pub(in crate::account) struct RecipeTrial {
    /// The visitor before the request.
    pub(in crate::account) snapshot: VisitorSnapshot,
    /// The catalogue version, rankings and neighbour lists the request was served from.
    pub(in crate::account) catalogue: Arc<Catalogue>,
    pub(in crate::account) rankings: Arc<RankingsVersion>,
    pub(in crate::account) published: Arc<Neighbours>,
    pub(in crate::account) currency: Currency,
    pub(in crate::account) now: UnixMillis,
    /// The products the request brought that were new to the visitor.
    pub(in crate::account) brought: SmallVec<[ProductIdx; 8]>,
    /// The tuned zone as configured, and the recipes to try on it.
    pub(in crate::account) zone: ZoneSpec,
    pub(in crate::account) grid: Vec<Recipe>,
    /// Whose session neighbourhood the recipes read, and as of which tick (none when
    /// no recipe reads it).
    pub(in crate::account) sessions: Option<SessionsAsOf>,
}

/// The visitor whose sessions' neighbourhood a trial reads, as of the sessions' tick
/// the lists it was served from were sorted at: read when the trial is scored (off
/// the request path), as the sessions were then.
#[derive(Debug)]
pub(in crate::account) struct SessionsAsOf {
    pub(in crate::account) visitor_id: String,
    pub(in crate::account) tick: u32,
}
