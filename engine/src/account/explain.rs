//! Explaining a zone: the fill serving would give a visitor on a page, read-only, with
//! the evidence each strategy recorded for its items and the candidates the filters
//! removed.

use std::sync::Arc;

use super::Account;
use super::resolve::Plan;
use super::visitor_view::{CurrencyAt, OnPage, Reads, VisitorSnapshot};
use crate::campaign::content::Placement;
use crate::campaign::segment::Reads as SegmentReads;
use crate::campaign::{CampaignSet, CampaignTrace, RequestContext, Skipped, choose};
use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::event::PageType;
use crate::models::AsOf;
use crate::money::Currency;
use crate::recommend::{
    Evidence, Fact, Facts, Pass, Rejection, RenderedItem, Trace, fill_zone_traced,
};
use crate::zone::{Strategy, ZoneSpec};

/// What to explain: a zone for a visitor (or none: a new shopper) on a product's page
/// (or none).
#[derive(Debug, Clone)]
pub struct ExplainRequest {
    /// The zone id.
    pub zone: String,
    /// A visitor id; `None` or an unknown id: a shopper with no history.
    pub visitor_id: Option<String>,
    /// The page's product id.
    pub product: Option<String>,
    /// The currency (else the account's default).
    pub currency: Option<Currency>,
    /// The time to explain at.
    pub now: UnixMillis,
    /// The page's type (for segments that read it).
    pub page_type: Option<PageType>,
    /// The page's category id.
    pub category: Option<String>,
    /// The request's device, referrer and UTM parameters (for segments that read them);
    /// none: the visitor's latest request's (a made-up or unknown shopper: none at all).
    pub context: Option<RequestContext>,
    /// Campaigns to judge in place of the live ones (a draft, previewed before it is
    /// published); none: the live ones.
    pub campaigns: Option<Arc<CampaignSet>>,
    /// A made-up shopper in place of a visitor of the account (`visitor_id` is then
    /// not read).
    pub made_up: Option<MadeUpShopper>,
}

/// A shopper made up for a preview: no history, new or returning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MadeUpShopper {
    /// Returning: first seen 30 days ago, in a second session; else new: first seen
    /// now, in a first session.
    pub returning: bool,
}

/// How long ago a made-up returning shopper was first seen.
const RETURNING_FIRST_SEEN_DAYS: i64 = 30;

/// A zone as it would be filled for a visitor, and why: each item with the strategy
/// that found it and its evidence, and the candidates the filters removed.
#[derive(Debug)]
pub struct Explanation {
    /// The zone as filled (an experiment's variant's strategy, fallback and count).
    pub spec: ZoneSpec,
    /// The experiment variant the visitor would see, if the zone is in one.
    pub variant: Option<(String, String)>,
    /// The catalogue version the items index into.
    pub catalogue: Arc<Catalogue>,
    /// The currency of the prices.
    pub currency: Currency,
    /// Whether the visitor id names a visitor the account knows.
    pub visitor_known: bool,
    /// The request's device, referrer and UTM parameters the segments were judged on.
    pub context: RequestContext,
    /// What the visitor's history holds: recent views, basket, purchases (products of
    /// the catalogue).
    pub history: (Vec<ProductIdx>, Vec<ProductIdx>, Vec<ProductIdx>),
    /// The items, in display order.
    pub items: Vec<ExplainedItem>,
    /// Candidates filtered out, in the order they were met, with the strategy that
    /// found them (at most [`MAX_REJECTED`]).
    pub rejected: Vec<(ProductIdx, Strategy, Rejection)>,
    /// When the zone has a list of campaigns: the list, the one shown and why each of
    /// the others was skipped.
    pub campaigns: Option<CampaignsExplained>,
}

/// A zone's campaigns for one explained request.
#[derive(Debug)]
pub struct CampaignsExplained {
    /// The campaigns, compiled.
    pub set: Arc<CampaignSet>,
    /// The position of the campaign shown in the zone's list (none: none qualified).
    pub shown: Option<usize>,
    /// The campaigns skipped: their position and why.
    pub skipped: Vec<(usize, Skipped)>,
}

/// Filtered candidates an explanation lists at most.
pub const MAX_REJECTED: usize = 100;

/// One item of an explained zone.
#[derive(Debug)]
pub struct ExplainedItem {
    /// The item and its price.
    pub item: RenderedItem,
    /// The strategy that found it.
    pub strategy: Strategy,
    /// Whether that is a fallback of the zone.
    pub fallback: bool,
    /// Its score under that strategy, where it has one.
    pub score: Option<f64>,
    /// The facts behind it.
    pub facts: Vec<Fact>,
    /// The rule of a custom recommender that placed it (pin, or its source with the
    /// boosts it matched).
    pub placement: Option<Placement>,
}

/// Records what filling a zone did, for an explanation.
#[derive(Debug, Default)]
struct Recorder {
    chosen: Vec<(ProductIdx, Strategy, Evidence)>,
    rejected: Vec<(ProductIdx, Strategy, Rejection)>,
    placed: Vec<(ProductIdx, Placement)>,
    skipped: Vec<(usize, Skipped)>,
}

impl CampaignTrace for Recorder {
    fn skipped(&mut self, position: usize, why: Skipped) {
        self.skipped.push((position, why));
    }

    fn placed(&mut self, idx: ProductIdx, how: Placement) {
        self.placed.push((idx, how));
    }

    fn restart(&mut self) {
        self.chosen.clear();
        self.rejected.clear();
        self.placed.clear();
    }
}

impl Trace for Recorder {
    const FACTS: Facts = Facts::Kept;

    fn chosen(
        &mut self,
        idx: ProductIdx,
        strategy: Strategy,
        _pass: Pass,
        evidence: &dyn Fn() -> Evidence,
    ) {
        self.chosen.push((idx, strategy, evidence()));
    }

    fn rejected(&mut self, idx: ProductIdx, strategy: Strategy, why: Rejection) {
        let known = self.rejected.iter().any(|(i, _, _)| *i == idx);
        if !known && self.rejected.len() < MAX_REJECTED {
            self.rejected.push((idx, strategy, why));
        }
    }
}

impl MadeUpShopper {
    /// What segments read of the shopper at `now`.
    fn facts(self, now: UnixMillis) -> super::visitor_view::SegmentFacts {
        let mut visits = crate::visits::Visits::default();
        if self.returning {
            visits.seen(
                now - RETURNING_FIRST_SEEN_DAYS * 86_400_000,
                crate::visits::SessionStart::New,
            );
        }
        visits.seen(now, crate::visits::SessionStart::New);
        visits.page_viewed();
        super::visitor_view::SegmentFacts {
            visits,
            ..Default::default()
        }
    }
}

impl Account {
    /// Fills a zone as [`Account::serve`] would for the visitor on the product's page,
    /// and says why: read-only (no event, session or visitor is recorded). `None` when
    /// the account has no such zone.
    pub fn explain(&self, request: &ExplainRequest) -> Option<Explanation> {
        let settings = self.settings.load_full();
        let spec = settings.zones.iter().find(|z| z.id == request.zone)?;
        let catalogue = self.catalogue();
        let currency = request.currency.unwrap_or(settings.default_currency);
        let visitor_id = match request.made_up {
            Some(_) => "",
            None => request.visitor_id.as_deref().unwrap_or(""),
        };
        let mut snapshot = self
            .tracking
            .visitors
            .read()
            .get_mut(visitor_id)
            .map(|mut live| {
                VisitorSnapshot::of(
                    &mut live,
                    &catalogue,
                    Reads {
                        affinities: false,
                        repurchases: true,
                        campaigns: Some(SegmentReads::ALL),
                    },
                )
            });
        let visitor_known = snapshot.is_some();
        let context = match (&request.context, request.made_up) {
            (Some(context), _) => context.clone(),
            (None, Some(_)) => RequestContext::default(),
            (None, None) => self
                .tracking
                .visitors
                .read()
                .get(visitor_id)
                .map(|live| live.latest_request().context())
                .unwrap_or_default(),
        };
        if let Some(snapshot) = snapshot.as_mut() {
            self.absorb_other_devices(visitor_id, snapshot, &catalogue);
        }
        let mut snapshot = snapshot.unwrap_or_default();
        if let Some(made_up) = request.made_up {
            snapshot.segments = Some(made_up.facts(request.now));
        }
        let set = request
            .campaigns
            .as_ref()
            .map_or_else(|| self.campaigns.compiled(), Arc::clone);
        // Decided as serving decides (`resolve.rs`).
        let who = super::resolve::Who::of(visitor_id, &snapshot.identity);
        let plan = settings.plan(spec, who, request.now, Some(&set));
        let variant = plan.variant();
        let held = match plan {
            Plan::Held(holdout) => Some(holdout.spec(spec)),
            _ => None,
        };
        let filled = held
            .as_ref()
            .unwrap_or_else(|| variant.map_or(spec, |(_, v)| &v.spec));
        let zones: super::request::ZoneIds = smallvec::smallvec![spec.id.as_str().into()];
        let requested = super::resolve::Requested::of(&settings, &zones);
        if super::resolve::reads_sessions(&settings, Some(&set), &requested) {
            snapshot.similar_sessions = self.session_neighbourhood(
                visitor_id,
                &snapshot.latest_products(),
                &catalogue,
                AsOf::Now,
            );
        }
        let rankings = self.rankings_for(&catalogue);
        let published = self.models.neighbours.load();
        let ctx = snapshot.context(
            &catalogue,
            &rankings,
            &published,
            CurrencyAt {
                currency,
                now: request.now,
            },
            OnPage {
                product: request
                    .product
                    .as_deref()
                    .and_then(|id| catalogue.idx_of(id)),
                category: request.category.as_deref(),
                search: None,
            },
        );
        let mut recorder = Recorder::default();
        let (items, campaigns) = match plan {
            Plan::Campaigns { list, .. } => {
                let user = snapshot
                    .identity
                    .user_id
                    .as_deref()
                    .and_then(|id| self.user_facts(id));
                let page = super::request::PageContext {
                    page_type: request.page_type,
                    product: request.product.as_deref(),
                    category: request.category.as_deref(),
                    ..Default::default()
                };
                let shopper = snapshot.shopper(
                    &ctx,
                    &page,
                    &context,
                    user.as_ref(),
                    settings.default_currency,
                );
                let judged = &mut crate::campaign::Judged::default();
                let chosen = choose(&set, list, &shopper, judged, &ctx, &mut recorder);
                let explained = CampaignsExplained {
                    set: Arc::clone(&set),
                    shown: chosen.campaign,
                    skipped: std::mem::take(&mut recorder.skipped),
                };
                (chosen.items, Some(explained))
            }
            Plan::Spec { spec, .. } => (fill_zone_traced(spec, &ctx, &mut recorder), None),
            Plan::Held(_) => (fill_zone_traced(filled, &ctx, &mut recorder), None),
        };
        let shown_spec = campaigns
            .as_ref()
            .and_then(|c| {
                let list = c.set.zone(&spec.id)?;
                list.campaigns.get(c.shown?)?.content.spec()
            })
            .unwrap_or(filled);
        // The items in the order served, each with what the strategy recorded choosing
        // it: the evidence is the reason it was served, not a second computation.
        let items = items
            .into_iter()
            .map(|item| {
                let (strategy, evidence) = recorder
                    .chosen
                    .iter()
                    .find(|(idx, _, _)| *idx == item.product)
                    .map(|(_, strategy, evidence)| (*strategy, evidence.clone()))
                    .unwrap_or((Strategy::Associated, Evidence::default()));
                let placement = recorder
                    .placed
                    .iter()
                    .find(|(idx, _)| *idx == item.product)
                    .map(|(_, how)| how.clone());
                ExplainedItem {
                    item,
                    strategy,
                    fallback: shown_spec.strategy != Some(strategy),
                    score: evidence.score,
                    facts: evidence.facts,
                    placement,
                }
            })
            .collect();
        let history = (
            snapshot.recent_views.to_vec(),
            snapshot.basket.to_vec(),
            snapshot.purchased.to_vec(),
        );
        drop(rankings);
        Some(Explanation {
            spec: filled.clone(),
            variant: match plan {
                Plan::Held(holdout) => Some((
                    crate::experiment::holdout::HOLDOUT_SPLIT.to_owned(),
                    holdout.held.to_string(),
                )),
                _ => variant.map(|(e, v)| (e.id.clone(), v.name.clone())),
            },
            catalogue: Arc::clone(&catalogue),
            currency,
            visitor_known,
            context,
            history,
            items,
            rejected: recorder.rejected,
            campaigns,
        })
    }
}
