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
pub(crate) struct RecipeTrial {
    /// The visitor before the request.
    pub(crate) snapshot: VisitorSnapshot,
    /// The catalogue version, rankings and neighbour lists the request was served from.
    pub(crate) catalogue: Arc<Catalogue>,
    pub(crate) rankings: Arc<RankingsVersion>,
    pub(crate) published: Arc<Neighbours>,
    pub(crate) currency: Currency,
    pub(crate) now: UnixMillis,
    /// The products the request brought that were new to the visitor.
    pub(crate) brought: SmallVec<[ProductIdx; 8]>,
    /// The tuned zone as configured, and the recipes to try on it.
    pub(crate) zone: ZoneSpec,
    pub(crate) grid: Vec<Recipe>,
    /// Whose session neighbourhood the recipes read, and as of which tick (none when
    /// no recipe reads it).
    pub(crate) sessions: Option<SessionsAsOf>,
}

/// The visitor whose sessions' neighbourhood a trial reads, as of the sessions' tick
/// the lists it was served from were sorted at: read when the trial is scored (off
/// the request path), as the sessions were then.
#[derive(Debug)]
pub(crate) struct SessionsAsOf {
    pub(crate) visitor_id: String,
    pub(crate) tick: u32,
}
