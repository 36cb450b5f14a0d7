//! How a zone is filled for one request, decided in one place: serving, explain (and
//! the console's preview, which is an explain with a draft), and shadow tests all ask
//! [`AccountSettings::plan`], then judge a list of campaigns with
//! [`crate::campaign::choose`] against the same [`crate::campaign::segment::Shopper`]
//! (built by `VisitorSnapshot::shopper` from the visitor, the page and the request's
//! [`crate::campaign::RequestContext`]).
//!
//! Here too the requested zones' definitions, found once a request ([`Requested`]),
//! and what filling them may read ([`reads_sessions`], [`campaign_reads`]), judged from
//! the same settings, lists and experiments.
//!
//! The order: a shopper the store-wide holdout holds sees every zone filled by its
//! non-personal strategy; otherwise a running experiment on the zone (one written in the console first, then
//! one of the configuration) assigns the visitor a variant; a variant with a list of its
//! own shows it; a variant that does not show campaigns fills the zone by its own spec;
//! otherwise the zone's campaign list, when it has one, decides; otherwise the zone's
//! configuration.

use smallvec::SmallVec;

use super::request::ZoneIds;
use super::visitor_view::{AskedFrom, Reads, VisitorSnapshot};
use crate::campaign::choose;
use crate::campaign::segment::Reads as SegmentReads;
use crate::campaign::segment::Shopper;
use crate::campaign::{CampaignSet, ZoneCampaigns};
use crate::catalogue::UnixMillis;
use crate::event::Identity;
use crate::experiment::holdout::Holdout;
use crate::experiment::{Experiment, Variant};
use crate::recommend::{Context, NoTrace, ZoneItems, fill_zone};
use crate::zone::ZoneSpec;

use super::settings::AccountSettings;

/// How one zone is filled for one visitor at one moment.
#[derive(Debug, Clone, Copy)]
pub(super) enum Plan<'a> {
    /// The zone's list of campaigns: the first that qualifies is shown.
    Campaigns {
        /// The set the list is of.
        set: &'a CampaignSet,
        /// The list's position in the set's zones.
        list_at: usize,
        /// The list.
        list: &'a ZoneCampaigns,
        /// The experiment and variant the visitor sees, when one runs (a variant that
        /// shows the list).
        variant: Option<(&'a Experiment, &'a Variant)>,
    },
    /// Filled as a spec says: the zone's own, or an experiment variant's.
    Spec {
        /// The spec.
        spec: &'a ZoneSpec,
        /// The experiment and variant the visitor sees, when one runs.
        variant: Option<(&'a Experiment, &'a Variant)>,
    },
    /// The store-wide holdout holds the shopper: the zone as [`Holdout::spec`] makes it.
    Held(&'a Holdout),
}

impl<'a> Plan<'a> {
    /// The experiment and variant the visitor sees, when one runs.
    pub(crate) fn variant(&self) -> Option<(&'a Experiment, &'a Variant)> {
        match *self {
            Plan::Campaigns { variant, .. } | Plan::Spec { variant, .. } => variant,
            Plan::Held(_) => None,
        }
    }
}

/// What a console experiment splits shoppers by: the store's user id once the visitor
/// has one, else the email it gave, else the visitor id. So a shopper's devices, once
/// the store names the shopper on them (a login, an order), see one variant; a device
/// changes variant at most once, when its shopper is first named.
pub(crate) fn person_key<'a>(visitor_id: &'a str, identity: &'a Identity) -> &'a str {
    identity
        .user_id
        .as_deref()
        .or(identity.email.as_deref())
        .filter(|key| !key.is_empty())
        .unwrap_or(visitor_id)
}

/// Who a zone is filled for, as experiments split shoppers: the visitor id (which the
/// configuration's experiments split) and the person it is (its [`person_key`], which
/// the console's experiments and the holdout split).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Who<'a> {
    /// The visitor id.
    pub(crate) visitor_id: &'a str,
    /// The person key.
    pub(crate) person: &'a str,
}

impl<'a> Who<'a> {
    /// `visitor_id`, known by `identity`.
    pub(crate) fn of(visitor_id: &'a str, identity: &'a Identity) -> Who<'a> {
        Who {
            visitor_id,
            person: person_key(visitor_id, identity),
        }
    }
}

impl AccountSettings {
    /// How `zone` is filled for `who` at `now`,
    /// with `campaigns` (the live set, a draft, or none when no requested zone has a list
    /// or an experiment of the console).
    pub(super) fn plan<'a>(
        &'a self,
        zone: &'a ZoneSpec,
        Who { visitor_id, person }: Who<'_>,
        now: UnixMillis,
        campaigns: Option<&'a CampaignSet>,
    ) -> Plan<'a> {
        if let Some(holdout) = campaigns.and_then(|set| set.holdout.as_ref())
            && holdout.holds(person)
        {
            return Plan::Held(holdout);
        }
        // An experiment written in the console (which splits people: see
        // [`person_key`]), then one of the configuration (which splits visitor ids).
        let variant = campaigns
            .and_then(|set| {
                let experiment = set.experiment(&zone.id, now)?;
                Some((experiment, experiment.assign(person)?))
            })
            .or_else(|| self.variant(zone, visitor_id, now));
        if let (Some(set), Some((_, v))) = (campaigns, variant)
            && let Some(list_at) = v.list
            && let Some(list) = set.zones.get(list_at)
        {
            return Plan::Campaigns {
                set,
                list_at,
                list,
                variant,
            };
        }
        let shows_campaigns = variant.is_none_or(|(_, v)| v.campaigns);
        let list = campaigns.and_then(|set| Some((set, set.zone_at(&zone.id)?)));
        match list {
            Some((set, (list_at, list))) if shows_campaigns => Plan::Campaigns {
                set,
                list_at,
                list,
                variant,
            },
            _ => Plan::Spec {
                spec: variant.map_or(zone, |(_, v)| &v.spec),
                variant,
            },
        }
    }
}

impl AccountSettings {
    /// The experiment running on `zone` at `now` and the variant `visitor_id` sees.
    pub(crate) fn variant(
        &self,
        zone: &ZoneSpec,
        visitor_id: &str,
        now: UnixMillis,
    ) -> Option<(&Experiment, &Variant)> {
        let experiment = self
            .experiments
            .iter()
            .find(|e| e.zone == zone.id && e.runs_at(now))?;
        Some((experiment, experiment.assign(visitor_id)?))
    }
}

/// The zones a request asks for, in its order, each with the place of its definition
/// in the settings' zones (none: the account has no zone of that id). Found once a
/// request; what serving asks of the zones afterwards reads them by place instead of
/// comparing every definition's id again.
pub(crate) struct Requested<'a> {
    zones: SmallVec<[(&'a str, Option<usize>); 4]>,
}

impl<'a> Requested<'a> {
    /// The places of `ids` in `settings`' zones.
    pub(crate) fn of(settings: &AccountSettings, ids: &'a ZoneIds) -> Requested<'a> {
        let place = |id: &str| settings.zones.iter().position(|spec| spec.id == id);
        Requested {
            zones: ids.iter().map(|id| (id.as_str(), place(id))).collect(),
        }
    }

    /// How many zones the request asks for.
    pub(crate) fn len(&self) -> usize {
        self.zones.len()
    }

    /// Each requested zone's id and place, in request order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a str, Option<usize>)> + '_ {
        self.zones.iter().copied()
    }

    /// The definitions of the requested zones the account has, in request order.
    pub(crate) fn specs<'s>(
        &self,
        settings: &'s AccountSettings,
    ) -> impl Iterator<Item = &'s ZoneSpec> + use<'s, '_, 'a> {
        self.zones
            .iter()
            .filter_map(|(_, place)| settings.zones.get((*place)?))
    }
}

/// Whether filling the `requested` zones may read the sessions most like the
/// shopper's: a zone, one of its experiment's variants or one of its campaigns fills
/// products by a spec that reads them ([`ZoneSpec::reads_sessions`]).
pub(super) fn reads_sessions(
    settings: &AccountSettings,
    campaigns: Option<&CampaignSet>,
    requested: &Requested<'_>,
) -> bool {
    requested.iter().any(|(zone, place)| {
        let configured = place.and_then(|at| settings.zones.get(at));
        let varied = settings
            .experiments
            .iter()
            .filter(|e| e.zone == zone)
            .flat_map(|e| e.variants.iter().map(|v| &v.spec));
        let campaigned = campaigns
            .and_then(|set| set.zone(zone))
            .into_iter()
            .flat_map(|list| list.campaigns.iter().filter_map(|c| c.content.spec()));
        configured
            .into_iter()
            .chain(varied)
            .chain(campaigned)
            .any(ZoneSpec::reads_sessions)
            || campaigns.is_some_and(|set| console_reads_sessions(set, zone))
    })
}

/// What the segments of the requested zones' lists (their own, and their experiments'
/// variants') read; none when no requested zone has one.
pub(super) fn campaign_reads(set: &CampaignSet, zones: &ZoneIds) -> Option<SegmentReads> {
    let mut reads = None::<SegmentReads>;
    for zone in zones.iter() {
        let zone = zone.as_str();
        let lists = set
            .experiments
            .iter()
            .filter(|e| e.zone == zone)
            .flat_map(|e| {
                e.variants
                    .iter()
                    .filter_map(|v| v.list.and_then(|at| set.zones.get(at)))
            });
        for list in set.zone(zone).into_iter().chain(lists) {
            reads = Some(reads.unwrap_or_default().with(list.reads));
        }
    }
    reads
}

/// Whether a variant of an experiment of the console on `zone` fills products by a spec
/// that reads the sessions most like the shopper's (its own, or its list's).
fn console_reads_sessions(set: &CampaignSet, zone: &str) -> bool {
    set.experiments
        .iter()
        .filter(|e| e.zone == zone)
        .flat_map(|e| e.variants.iter())
        .any(|v| {
            v.spec.reads_sessions()
                || v.list.and_then(|at| set.zones.get(at)).is_some_and(|list| {
                    list.campaigns
                        .iter()
                        .filter_map(|c| c.content.spec())
                        .any(ZoneSpec::reads_sessions)
                })
        })
}

/// What a judged request reads of its visitor while a shadow test runs: everything
/// segments may read.
pub(crate) const JUDGED_READS: Reads = Reads {
    affinities: false,
    repurchases: false,
    campaigns: Some(SegmentReads::ALL),
};

/// `spec` as `set` fills it for the judged shopper `who` (a visitor id and its person
/// key), resolved as serving resolves it: its items, and the campaign shown (its
/// position in the zone's list) when the zone's list decided.
pub(crate) fn fill_judged(
    settings: &AccountSettings,
    spec: &ZoneSpec,
    who: Who<'_>,
    set: &CampaignSet,
    shopper: &Shopper<'_>,
    ctx: &Context<'_>,
) -> (ZoneItems, Option<usize>) {
    match settings.plan(spec, who, ctx.now, Some(set)) {
        Plan::Campaigns { set, list, .. } => {
            let judged = &mut crate::campaign::Judged::default();
            let chosen = choose(set, list, shopper, judged, ctx, &mut NoTrace);
            (chosen.items, chosen.campaign)
        }
        Plan::Spec { spec, .. } => (fill_zone(spec, ctx), None),
        Plan::Held(holdout) => (fill_zone(&holdout.spec(spec), ctx), None),
    }
}

/// A judged request's visitor as shadow tests read it: its id, its history before the
/// request, the recommenders' context on the page of its latest view, and the page
/// type and request context of its latest request.
#[derive(Clone, Copy)]
pub(crate) struct Judged<'a, 'c> {
    pub(crate) visitor_id: &'a str,
    pub(crate) snapshot: &'a VisitorSnapshot,
    pub(crate) ctx: &'a Context<'c>,
    pub(crate) latest: AskedFrom<'a>,
}
