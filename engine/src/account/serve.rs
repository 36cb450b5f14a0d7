//! Serving one request: [`Account::serve`] tracks the request's events (see `track`),
//! reads what zones need of the visitor and the shopper's other devices, and fills each
//! zone from the catalogue version the request loaded; plus the request and outcome
//! types. What a request reads of its visitor is `visitor_view`.

use compact_str::CompactString;
use smallvec::SmallVec;

use std::sync::Arc;

use super::Account;
use super::ids::new_id;
use super::request::Sampled;
use super::request::{Notice, PageContext, ServeRequest, ZoneIds};
use super::resolve::{Plan, Requested, campaign_reads, reads_sessions};
use super::settings::AccountSettings;
use super::visitor_view::{CurrencyAt, OnPage, Reads, VisitorSnapshot, affinity};
use crate::analytics::{ShownProducts, ShownZone, ShownZones};
use crate::campaign::segment::{Shopper, UserFacts};
use crate::campaign::{Campaign, CampaignSet, Judged, choose};
use crate::catalogue::{Catalogue, UnixMillis};
use crate::event::Events;
use crate::models::{AsOf, ProductKeys, TopNames};
use crate::recommend::NoTrace;
pub use crate::recommend::RenderedItem;
use crate::recommend::{Context, ZoneItems};
use crate::state::{Served, Tracked};
use crate::visitor::LiveVisitor;
use crate::zone::{ZoneKind, ZoneSpec};
use crate::zone_cache::{CachedItems, LazyGeneration, ZoneCache};

/// A filled zone.
#[derive(Debug)]
pub struct RenderedZone {
    /// The zone's definition: its position in [`ServeOutcome::settings`]' zones.
    pub spec: usize,
    /// Product items in display order (recommender-product zones).
    pub items: ZoneItems,
    /// Category or brand ids in display order (recommender-category and
    /// recommender-brand zones).
    pub names: Vec<String>,
    /// The experiment variant that filled it (empty: no experiment).
    pub variant: CompactString,
    /// The campaign shown, its position in the zone's list of
    /// [`ServeOutcome::campaigns`] (none: the zone has no list, or no campaign of it
    /// qualified).
    pub campaign: Option<usize>,
    /// The zone's list: its position in [`ServeOutcome::campaigns`]' zones (none: the
    /// zone has no list and is filled as configured).
    pub list: Option<usize>,
    /// The zone cache's list when `items` are its first items: their rendered text is
    /// kept with it ([`crate::zone_cache`]).
    pub cached: Option<CachedItems>,
}

/// A request's filled zones: two (a typical page's) without a heap allocation.
pub type RenderedZones = SmallVec<[RenderedZone; 2]>;

/// What a server-side call produced.
#[derive(Debug)]
pub struct ServeOutcome {
    /// Messages for the `errors` array of the 200.
    pub notices: Vec<Notice>,
    /// The account's settings the request was served with (a reload may replace them
    /// while it is answered).
    pub settings: Arc<AccountSettings>,
    /// Filled zones, in request order.
    pub zones: RenderedZones,
    /// The catalogue version the items index into.
    pub catalogue: Arc<Catalogue>,
    /// The request's events as applied and what its zones showed, for the write-ahead
    /// log (shared with the log's writer, which encodes it on its own thread).
    pub served: Arc<Served>,
    /// The campaigns the zones were filled with, when a zone of the request has a list.
    pub campaigns: Option<Arc<CampaignSet>>,
}

impl ServeOutcome {
    /// The definition of a filled zone.
    pub fn spec(&self, zone: &RenderedZone) -> Option<&ZoneSpec> {
        self.settings.zones.get(zone.spec)
    }

    /// The campaign a filled zone showed.
    pub fn campaign(&self, zone: &RenderedZone) -> Option<&Campaign> {
        let list = self.campaigns.as_deref()?.zones.get(zone.list?)?;
        list.campaigns.get(zone.campaign?)
    }

    /// The visitor id to return (given or new).
    pub fn visitor_id(&self) -> &str {
        &self.served.tracked.visitor_id
    }

    /// The session id to return (given, or new when absent, unknown or idle).
    pub fn session_id(&self) -> &str {
        &self.served.tracked.session_id
    }
}

impl Account {
    /// Tracks the request's events, then fills its zones (read-your-writes). The
    /// outcome is boxed: it holds the zones' items and the log record inline (about
    /// 2.7 KB), and the layers above pass it on without copying it each time.
    pub fn serve(&self, request: ServeRequest) -> Box<ServeOutcome> {
        let now = request.now;
        let settings = self.settings.load_full();
        let visitor_id = request.visitor_id.unwrap_or_else(new_id);
        let session_id = self.resolve_session(request.session_id, now);
        let mut notices = Vec::new();
        let currency = request.currency.unwrap_or(settings.default_currency);
        let mut page = PageContext {
            visitor_id: &visitor_id,
            currency: Some(currency),
            ..PageContext::default()
        };

        self.advance_clock(now);
        let catalogue = self.catalogue();
        // Before the visitor's entry (see `cut`).
        let ordering = self.tracking.order_cut.enter(&request.events);
        let mut visitor = match self.tracking.visitors.read().get_mut(&visitor_id) {
            Some(visitor) => visitor,
            None => self
                .tracking
                .visitors
                .get_or_insert_with(visitor_id.clone(), LiveVisitor::default),
        };
        // A sampled visitor's request first judges the zones (what it brings, before
        // it is applied).
        let sampled = Sampled {
            visitor_id: &visitor_id,
            events: &request.events,
            catalogue: &catalogue,
            zones: &settings.zones,
            currency,
            now,
        };
        if settings.self_evaluation && crate::prequential::sampled(&visitor_id) {
            self.judge_zones(&sampled, &mut visitor);
        }
        // And self-tuning takes one step in 20 of every visitor as a trial, and one
        // product put in the basket or ordered in 20.
        if settings.self_evaluation {
            self.take_trial(&sampled, &mut visitor);
            self.take_purchase_trial(&sampled, &visitor);
        }
        self.track(
            &mut visitor,
            &session_id,
            now,
            &request.events,
            &catalogue,
            &mut page,
            &mut notices,
        );
        // Segment sizes count what each visitor's latest request would match.
        visitor.remember_request(page.page_type, Some(currency), &request.context);
        let requested = Requested::of(&settings, &request.zones);
        let reads = Reads {
            affinities: requested.specs(&settings).any(|spec| {
                matches!(
                    spec.kind,
                    ZoneKind::RecommenderCategory | ZoneKind::RecommenderBrand
                )
            }),
            repurchases: requested.specs(&settings).any(ZoneSpec::reads_repurchases),
            campaigns: None,
        };
        let campaigns = self.campaigns_asked(&request.zones);
        let reads = Reads {
            campaigns: campaigns
                .as_deref()
                .and_then(|set| campaign_reads(set, &request.zones)),
            ..reads
        };
        let mut snapshot = VisitorSnapshot::of(&mut visitor, &catalogue, reads);
        drop(visitor);
        self.keep_bound(settings.max_visitors);
        self.record_customer_orders(&page.customer_orders, now);
        drop(ordering);
        self.absorb_other_devices(&visitor_id, &mut snapshot, &catalogue);
        if reads_sessions(&settings, campaigns.as_deref(), &requested) {
            snapshot.similar_sessions = self.session_neighbourhood(
                &visitor_id,
                &snapshot.latest_products(),
                &catalogue,
                AsOf::Now,
            );
        }

        let rankings = self.rankings_for(&catalogue);
        let published = self.models.neighbours.load();
        let top_names = self.models.top_names.load();
        let search = request.search.as_deref().map(str::to_lowercase);
        let ctx = snapshot.context(
            &catalogue,
            &rankings,
            &published,
            CurrencyAt { currency, now },
            OnPage {
                product: page.product.and_then(|id| catalogue.idx_of(id)),
                category: page.category,
                search: search.as_deref(),
            },
        );

        let generation = self.zone_cache_generation(&settings, &catalogue, &rankings, &published);
        let user = self.user_of(&snapshot, reads);
        let shopper = snapshot.shopper(
            &ctx,
            &page,
            &request.context,
            user.as_ref(),
            settings.default_currency,
        );
        let filling = Filling {
            settings: &settings,
            visitor_id: &visitor_id,
            now,
            from: FillFrom {
                ctx: &ctx,
                snapshot: &snapshot,
                page: &page,
                top_names: &top_names,
            },
            campaigns: campaigns.as_deref(),
            shopper: &shopper,
            cached: Cached {
                cache: &self.zone_cache,
                generation: &generation,
            },
        };
        let zones = fill_zones(&filling, &requested, &mut notices);
        drop(generation);
        drop(rankings);
        let items = zones.iter().map(|z| z.items.len() + z.names.len()).sum();
        self.figures.activity.record(now, items);
        let (shown, shown_keys) = if settings.zone_analytics {
            shown_products(&zones, &settings, &catalogue, &self.models.product_keys)
        } else {
            (ShownZones::new(), ShownKeys::new())
        };
        if !shown.is_empty()
            && let Some(mut visitor) = self.tracking.visitors.read().get_mut(&visitor_id)
        {
            let key = |z: usize, i: usize| shown_keys.get(z)?.get(i).copied();
            self.record_shown(&mut visitor, &shown, key, &session_id, now);
        }
        let tracked = Tracked {
            visitor_id,
            session_id,
            now,
            events: request.events,
        };
        Box::new(ServeOutcome {
            notices,
            settings,
            zones,
            catalogue,
            served: Arc::new(Served {
                tracked,
                currency,
                shown,
            }),
            campaigns,
        })
    }

    /// Fills the zones of a request for a shopper who is not tracked (a crawler, or a
    /// browser without consent): the page's type, product and category are read from
    /// its events, the zones are filled as for a new shopper, and nothing is recorded:
    /// no visitor, session, counter, model or impression, and no log record (the
    /// outcome's `served` holds no events and nothing shown). The visitor and session
    /// ids answered are empty.
    pub fn serve_anonymous(&self, request: &ServeRequest) -> Box<ServeOutcome> {
        let now = request.now;
        let settings = self.settings.load_full();
        let currency = request.currency.unwrap_or(settings.default_currency);
        let mut page = PageContext {
            visitor_id: "",
            currency: Some(currency),
            ..PageContext::default()
        };
        for event in request.events.iter() {
            page.see(event);
        }
        let catalogue = self.catalogue();
        let snapshot = VisitorSnapshot::default();
        let rankings = self.rankings_for(&catalogue);
        let published = self.models.neighbours.load();
        let top_names = self.models.top_names.load();
        let search = request.search.as_deref().map(str::to_lowercase);
        let ctx = snapshot.context(
            &catalogue,
            &rankings,
            &published,
            CurrencyAt { currency, now },
            OnPage {
                product: page.product.and_then(|id| catalogue.idx_of(id)),
                category: page.category,
                search: search.as_deref(),
            },
        );
        let mut notices = Vec::new();
        let campaigns = self.campaigns_asked(&request.zones);
        let shopper = snapshot.shopper(
            &ctx,
            &page,
            &request.context,
            None,
            settings.default_currency,
        );
        let generation = self.zone_cache_generation(&settings, &catalogue, &rankings, &published);
        let filling = Filling {
            settings: &settings,
            visitor_id: "",
            now,
            from: FillFrom {
                ctx: &ctx,
                snapshot: &snapshot,
                page: &page,
                top_names: &top_names,
            },
            campaigns: campaigns.as_deref(),
            shopper: &shopper,
            cached: Cached {
                cache: &self.zone_cache,
                generation: &generation,
            },
        };
        let zones = fill_zones(
            &filling,
            &Requested::of(&settings, &request.zones),
            &mut notices,
        );
        drop(generation);
        drop(rankings);
        Box::new(ServeOutcome {
            notices,
            settings,
            zones,
            catalogue,
            served: Arc::new(Served {
                tracked: Tracked {
                    visitor_id: String::new(),
                    session_id: String::new(),
                    now,
                    events: Events::new(),
                },
                currency,
                shown: ShownZones::new(),
            }),
            campaigns,
        })
    }

    /// The campaigns, when a zone of `zones` has a list or an experiment written in the
    /// console (one load of the set; none, and nothing more done, for an account whose
    /// campaigns were never changed).
    fn campaigns_asked(&self, zones: &ZoneIds) -> Option<Arc<CampaignSet>> {
        let set = self.campaigns.load();
        if set.holdout.is_some() {
            return Some(arc_swap::Guard::into_inner(set));
        }
        if set.zones.is_empty() && set.experiments.is_empty() {
            return None;
        }
        let asked =
            |zone: &str| set.zone(zone).is_some() || set.experiments.iter().any(|e| e.zone == zone);
        if !zones.iter().any(|z| asked(z)) {
            return None;
        }
        Some(arc_swap::Guard::into_inner(set))
    }

    /// The shopper's user record, when a segment of a requested zone reads it.
    fn user_of(&self, snapshot: &VisitorSnapshot, reads: Reads) -> Option<UserFacts> {
        if !reads.campaigns.is_some_and(|r| r.user) {
            return None;
        }
        self.user_facts(snapshot.identity.user_id.as_deref()?)
    }
}

impl Account {
    /// Adds the history of the same shopper on other devices (linked by user id or
    /// email) to `snapshot`. Read with the visitor's own entry released, one entry at a
    /// time.
    pub(super) fn absorb_other_devices(
        &self,
        visitor_id: &str,
        snapshot: &mut VisitorSnapshot,
        catalogue: &Catalogue,
    ) {
        for other in self.same_person(visitor_id, &snapshot.identity) {
            if let Some(other) = self.tracking.visitors.read().get(&other) {
                snapshot.absorb(&other, catalogue);
            }
        }
        snapshot.rank_bought_again(catalogue);
    }
}

/// The keys of each shown zone's products, in the order of [`ShownZones`].
type ShownKeys = SmallVec<[SmallVec<[u32; 12]>; 2]>;

/// The products each filled zone shows, by id (as logged) and by key (as the
/// visitor's impressions keep them, read by dense index), for the zones that show any.
fn shown_products(
    zones: &[RenderedZone],
    settings: &AccountSettings,
    catalogue: &Catalogue,
    product_keys: &ProductKeys,
) -> (ShownZones, ShownKeys) {
    let mut shown = ShownZones::new();
    let mut keys = ShownKeys::new();
    let indexed = product_keys.indexed(catalogue);
    for zone in zones.iter().filter(|zone| !zone.items.is_empty()) {
        let Some(spec) = settings.zones.get(zone.spec) else {
            continue;
        };
        let mut products = ShownProducts::with_capacity(zone.items.len());
        let mut product_keys_shown = SmallVec::new();
        for item in &zone.items {
            if let Some(product) = catalogue.product(item.product) {
                let id = product.id.as_str();
                products.push(CompactString::from(id));
                product_keys_shown.push(indexed.key(item.product, id));
            }
        }
        shown.push(ShownZone {
            zone: CompactString::from(spec.id.as_str()),
            variant: zone.variant.clone(),
            products,
        });
        keys.push(product_keys_shown);
    }
    (shown, keys)
}

/// What zones are filled from: the recommenders' context, the visitor's history, the
/// page and the most popular names.
#[derive(Clone, Copy)]
struct FillFrom<'a, 'c> {
    ctx: &'a Context<'c>,
    snapshot: &'a VisitorSnapshot,
    page: &'a PageContext<'a>,
    top_names: &'a TopNames,
}

/// The account's zone cache, and its generation for the request's versions.
#[derive(Clone, Copy)]
struct Cached<'a> {
    cache: &'a ZoneCache,
    generation: &'a LazyGeneration<'a>,
}

/// A request's zones as they are filled: the account's settings, who asks and when,
/// what the zones are filled from, the campaigns that may take them and the shopper
/// their segments judge, and the zone cache.
struct Filling<'a, 'c> {
    settings: &'a AccountSettings,
    visitor_id: &'a str,
    now: UnixMillis,
    from: FillFrom<'a, 'c>,
    campaigns: Option<&'a CampaignSet>,
    shopper: &'a Shopper<'a>,
    cached: Cached<'a>,
}

/// Fills the zones asked for, in order; a zone the account does not have, or that is
/// not shown on the page's type, becomes a notice.
fn fill_zones(
    filling: &Filling<'_, '_>,
    requested: &Requested<'_>,
    notices: &mut Vec<Notice>,
) -> RenderedZones {
    let Filling {
        settings,
        visitor_id,
        now,
        from,
        campaigns,
        shopper,
        cached,
    } = *filling;
    let FillFrom { ctx, snapshot, .. } = from;
    let mut zones = RenderedZones::with_capacity(requested.len());
    // Who experiments split: the visitor, and the person it is (`resolve.rs`).
    let who = super::resolve::Who::of(visitor_id, &snapshot.identity);
    let uncached = LazyGeneration::new(None);
    let mut judged = Judged::default();
    // What a held-out shopper's category and brand zones read: no affinity of theirs.
    let mut nobody = None::<VisitorSnapshot>;
    for (index, (zone_id, place)) in requested.iter().enumerate() {
        let Some((position, spec)) = place.and_then(|at| Some((at, settings.zones.get(at)?)))
        else {
            notices.push(Notice::UnknownZone {
                zone: index,
                id: zone_id.to_string(),
            });
            continue;
        };
        if let Some(page_type) = from.page.page_type
            && !spec.page_types.is_empty()
            && !spec.page_types.contains(&page_type)
        {
            notices.push(Notice::ZoneNotOnPage {
                zone: index,
                id: zone_id.to_string(),
                page_type,
            });
            continue;
        }
        // An experiment's variant, the zone's campaigns or its configuration
        // (`resolve.rs`).
        let (spec_filled, variant) = match settings.plan(spec, who, now, campaigns) {
            Plan::Campaigns {
                set,
                list_at,
                list,
                variant,
            } => {
                let chosen = choose(set, list, shopper, &mut judged, ctx, &mut NoTrace);
                // Analytics count the campaign shown as the zone's variant (an
                // experiment's variant keeps its own name).
                let variant = match variant {
                    Some((_, v)) => CompactString::from(v.name.as_str()),
                    None => chosen
                        .campaign
                        .and_then(|at| list.campaigns.get(at))
                        .map_or_else(CompactString::default, |c| c.variant.clone()),
                };
                zones.push(RenderedZone {
                    spec: position,
                    items: chosen.items,
                    names: Vec::new(),
                    variant,
                    campaign: chosen.campaign,
                    list: Some(list_at),
                    cached: None,
                });
                continue;
            }
            Plan::Spec { spec, variant } => (spec, variant.map(|(_, v)| v)),
            Plan::Held(holdout) => {
                let nobody = nobody.get_or_insert_with(VisitorSnapshot::default);
                let nobody = FillFrom {
                    snapshot: nobody,
                    ..from
                };
                let uncached = Cached {
                    generation: &uncached,
                    ..cached
                };
                let mut filled = fill(position, &holdout.spec(spec), nobody, uncached);
                filled.variant = holdout.held.clone();
                zones.push(filled);
                continue;
            }
        };
        // A variant's zone is not the zone's own: filled without the cache.
        let cached = if variant.is_none() {
            cached
        } else {
            Cached {
                generation: &uncached,
                ..cached
            }
        };
        let mut filled = fill(position, spec_filled, from, cached);
        if let Some(variant) = variant {
            filled.variant = CompactString::from(variant.name.as_str());
        }
        zones.push(filled);
    }
    zones
}

/// The variant name analytics count a campaign's answers under: `campaign:<id>`.
pub fn campaign_variant(id: &str) -> CompactString {
    let mut name = CompactString::const_new(CAMPAIGN_VARIANT_PREFIX);
    name.push_str(id);
    name
}

/// What begins the variant name of a campaign's answers.
pub const CAMPAIGN_VARIANT_PREFIX: &str = "campaign:";

/// Fills one zone of the account for the request in `ctx`: products with their prices
/// for product and html zones, category or brand names for category and brand zones,
/// nothing for image zones (their content is configuration).
fn fill(
    position: usize,
    spec: &ZoneSpec,
    from: FillFrom<'_, '_>,
    Cached { cache, generation }: Cached<'_>,
) -> RenderedZone {
    let FillFrom {
        ctx,
        snapshot,
        page,
        top_names,
    } = from;
    let catalogue = ctx.catalogue;
    let mut names = Vec::new();
    let mut cached = None;
    let items = match spec.kind {
        // An html zone's template shows the products of its strategy, if any.
        ZoneKind::RecommenderProduct | ZoneKind::Html => {
            let (items, list) = cache.items(generation, position, spec, ctx);
            cached = list;
            items
        }
        ZoneKind::RecommenderCategory => {
            names = affinity(
                &snapshot.categories,
                &top_names.categories,
                page.category,
                spec.count,
                |id| catalogue.category(id).is_some() || !catalogue.in_category(id).is_empty(),
            );
            ZoneItems::new()
        }
        ZoneKind::RecommenderBrand => {
            names = affinity(
                &snapshot.brands,
                &top_names.brands,
                page.brand,
                spec.count,
                |id| catalogue.brand(id).is_some() || !catalogue.of_brand(id).is_empty(),
            );
            ZoneItems::new()
        }
        ZoneKind::ImageCarousel | ZoneKind::Image => ZoneItems::new(),
    };
    RenderedZone {
        spec: position,
        items,
        names,
        variant: CompactString::default(),
        campaign: None,
        list: None,
        cached,
    }
}

impl Account {
    /// Products of the sessions most like what `visitor_id` viewed last (`latest`,
    /// dense ids of `catalogue`, the latest first; see
    /// [`crate::models::SessionIndex::neighbourhood`]) as dense ids of `catalogue`
    /// (those it lacks left out), the highest score first, at most
    /// [`SESSION_PRODUCTS`](super::visitor_view::SESSION_PRODUCTS); the sessions read `as_of` a tick.
    pub(crate) fn session_neighbourhood(
        &self,
        visitor_id: &str,
        latest: &[crate::catalogue::ProductIdx],
        catalogue: &Catalogue,
        as_of: AsOf,
    ) -> Vec<(crate::catalogue::ProductIdx, f32)> {
        let keys: SmallVec<[u32; crate::visitor::MAX_RECENT_VIEWS]> = latest
            .iter()
            .filter_map(|idx| {
                let product = catalogue.product(*idx)?;
                self.models.product_keys.existing(product.id.as_str())
            })
            .collect();
        let visitor = crate::analytics::session_key(visitor_id);
        let scored = self.models.similar_sessions.neighbourhood(
            &keys,
            visitor,
            super::visitor_view::SESSION_PRODUCTS,
            as_of,
        );
        scored
            .into_iter()
            .filter_map(|(key, score)| {
                let name = self.models.product_keys.name(key)?;
                Some((catalogue.idx_of(&name)?, score))
            })
            .collect()
    }
}
