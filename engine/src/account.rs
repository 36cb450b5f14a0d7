//! One store account: its catalogue version, visitors, sessions, orders, users and
//! popularity counters, and the server-side call that tracks events and fills zones.
//!
//! Concurrency: every map is a `DashMap`; a request locks only its own visitor's entry
//! while applying its events. The catalogue is an `ArcSwap`: a request loads one
//! version and uses it throughout, writers (the delta worker, feed builds) swap in a new
//! one. Events update the online models (popularity with time decay, units sold, co-view
//! and co-purchase pairs, see [`crate::models`]); [`Account::rebuild_models`] turns them
//! into rankings and neighbour lists, swapped in whole: the server calls it on an
//! interval off the request path, and a catalogue with a new base gets its rankings
//! from whoever swaps it in. Serving reads the latest lists and never waits.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use arc_swap::ArcSwap;
use dashmap::DashMap;
use time::Date;

use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::event::{Event, Identity, PageType};
use crate::models::{
    CO_VIEW_WINDOW, CoCounts, Decaying, MAX_ORDER_LINES_PAIRED, Neighbours, ProductKeys,
    most_popular,
};
use crate::money::Currency;
use crate::recommend::{Context, ItemPrice, Rankings, fill_zone, item_price};
use crate::state::{IdentityKind, StateEntry, Tracked};
use crate::visitor::{OrderRecord, SESSION_IDLE_MILLIS, Visitor, add_affinity, strongest};
use crate::zone::{ZoneKind, ZoneSpec};

/// Settings of an account that the engine needs.
#[derive(Debug, Clone)]
pub struct AccountSettings {
    /// The access key naming the account.
    pub access_key: String,
    /// Currency used when a request names none.
    pub default_currency: Currency,
    /// The account's zones.
    pub zones: Vec<ZoneSpec>,
}

/// A user record from a delta's `Users` (or a user feed).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserRecord {
    /// `UserId`.
    pub user_id: String,
    /// `Email`.
    pub email: Option<String>,
    /// `FirstName`.
    pub first_name: Option<String>,
    /// `LastName`.
    pub last_name: Option<String>,
    /// `Title`.
    pub title: Option<String>,
    /// `DOB`.
    pub dob: Option<Date>,
    /// `Gender`.
    pub gender: Option<String>,
    /// `City`.
    pub city: Option<String>,
    /// `State`.
    pub state: Option<String>,
    /// `Country`.
    pub country: Option<String>,
    /// `GroupId`.
    pub group_id: Option<String>,
}

/// A server-side call, validated.
#[derive(Debug, Clone)]
pub struct ServeRequest {
    /// `visitorId`, when the caller has one.
    pub visitor_id: Option<String>,
    /// `sessionId`, when the caller has one.
    pub session_id: Option<String>,
    /// `currency`, when given.
    pub currency: Option<Currency>,
    /// Events to record, in order.
    pub events: Vec<Event>,
    /// Zone ids to fill, in order.
    pub zones: Vec<String>,
    /// Time of the request.
    pub now: UnixMillis,
}

/// Something a 200 reports in its `errors` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// `events[event]` is an order whose id was recorded before; it was not counted again.
    DuplicateOrder {
        /// Index in `events`.
        event: usize,
        /// The order id.
        order_id: String,
    },
    /// `zones[zone]` names no zone of the account.
    UnknownZone {
        /// Index in `zones`.
        zone: usize,
        /// The zone id asked for.
        id: String,
    },
    /// `zones[zone]` is configured for other page types than this request's.
    ZoneNotOnPage {
        /// Index in `zones`.
        zone: usize,
        /// The zone id asked for.
        id: String,
        /// The page type of the request.
        page_type: PageType,
    },
}

/// One product of a filled zone with the price it shows.
#[derive(Debug, Clone, Copy)]
pub struct RenderedItem {
    /// Dense id in the outcome's catalogue.
    pub product: ProductIdx,
    /// The price for this visitor.
    pub price: ItemPrice,
}

/// A filled zone.
#[derive(Debug)]
pub struct RenderedZone<'a> {
    /// The zone's definition.
    pub spec: &'a ZoneSpec,
    /// Product items in display order (recommender-product zones).
    pub items: Vec<RenderedItem>,
    /// Category or brand ids in display order (recommender-category and
    /// recommender-brand zones).
    pub names: Vec<String>,
}

/// What a server-side call produced.
#[derive(Debug)]
pub struct ServeOutcome<'a> {
    /// The visitor id to return (given or new).
    pub visitor_id: String,
    /// The session id to return (given, or new when absent, unknown or idle).
    pub session_id: String,
    /// Messages for the `errors` array of the 200.
    pub notices: Vec<Notice>,
    /// Filled zones, in request order.
    pub zones: Vec<RenderedZone<'a>>,
    /// The catalogue version the items index into.
    pub catalogue: Arc<Catalogue>,
    /// The request's events as applied, for the write-ahead log.
    pub tracked: Tracked,
}

/// What an erasure removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Erasure {
    /// Visitors whose state was removed.
    pub visitors: usize,
    /// User records removed.
    pub users: usize,
}

impl Erasure {
    /// Whether anything matched.
    pub fn matched(&self) -> bool {
        self.visitors + self.users > 0
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Counter {
    popularity: Decaying,
    units: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum IdentityKey {
    User(String),
    Email(String),
    Account(String),
}

#[derive(Debug)]
struct RankingsVersion {
    catalogue: Arc<Catalogue>,
    rankings: Rankings,
}

/// An account's whole in-memory state.
#[derive(Debug)]
pub struct Account {
    settings: AccountSettings,
    catalogue: ArcSwap<Catalogue>,
    visitors: DashMap<String, Visitor>,
    /// session id → last request time.
    sessions: DashMap<String, UnixMillis>,
    /// Every order id ever recorded.
    orders: DashMap<String, ()>,
    identities: DashMap<IdentityKey, HashSet<String>>,
    users: DashMap<String, UserRecord>,
    counters: DashMap<String, Counter>,
    category_popularity: DashMap<String, Decaying>,
    brand_popularity: DashMap<String, Decaying>,
    /// Keys of the products in `coview` and `copurchase`.
    product_keys: ProductKeys,
    coview: CoCounts,
    copurchase: CoCounts,
    rankings: ArcSwap<RankingsVersion>,
    neighbours: ArcSwap<Neighbours>,
    /// The latest request time seen: the reference time of decayed popularity.
    clock: AtomicI64,
    /// Set by every counted interaction (product counters, co-view and co-purchase pairs
    /// are counted with them, categories, brands); cleared by a rebuild.
    models_stale: AtomicBool,
}

/// Score added to a product's trending counter per kind of interaction.
const VIEW_SCORE: f64 = 1.0;
const BASKET_SCORE: f64 = 2.0;
const ORDER_SCORE: f64 = 4.0;

impl Account {
    /// A new account serving `catalogue`.
    pub fn new(settings: AccountSettings, catalogue: Catalogue) -> Account {
        let catalogue = Arc::new(catalogue);
        let rankings = RankingsVersion {
            rankings: Rankings::build(&catalogue, |_| (0.0, 0)),
            catalogue: Arc::clone(&catalogue),
        };
        Account {
            settings,
            catalogue: ArcSwap::new(catalogue),
            visitors: DashMap::new(),
            sessions: DashMap::new(),
            orders: DashMap::new(),
            identities: DashMap::new(),
            users: DashMap::new(),
            counters: DashMap::new(),
            category_popularity: DashMap::new(),
            brand_popularity: DashMap::new(),
            product_keys: ProductKeys::default(),
            coview: CoCounts::default(),
            copurchase: CoCounts::default(),
            rankings: ArcSwap::from_pointee(rankings),
            neighbours: ArcSwap::from_pointee(Neighbours::default()),
            clock: AtomicI64::new(0),
            models_stale: AtomicBool::new(false),
        }
    }

    /// The account's settings.
    pub fn settings(&self) -> &AccountSettings {
        &self.settings
    }

    /// The current catalogue version.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.catalogue.load_full()
    }

    /// Makes `catalogue` the current version; requests in flight keep the one they loaded.
    /// A catalogue with a new base is ranked here, on the caller's thread, before it is
    /// served (rankings index products by dense id, which a new base renumbers).
    pub fn swap_catalogue(&self, catalogue: Catalogue) {
        let catalogue = Arc::new(catalogue);
        if !self.rankings.load().catalogue.same_base(&catalogue) {
            self.rankings.store(Arc::new(self.rank(&catalogue)));
        }
        self.catalogue.store(catalogue);
    }

    /// Rebuilds the rankings (decayed popularity, units sold) of the current catalogue and
    /// the co-view and co-purchase neighbour lists from the counters, and swaps them in.
    /// Runs on the caller's thread, its parallel parts on the current rayon pool.
    /// Nothing is done when no interaction was counted and the current catalogue version
    /// is already ranked (decay does not change the order of popularity, only its scale).
    pub fn rebuild_models(&self) {
        let catalogue = self.catalogue();
        let ranked = Arc::ptr_eq(&self.rankings.load().catalogue, &catalogue);
        if !self.models_stale.swap(false, Ordering::AcqRel) && ranked {
            return;
        }
        self.rankings.store(Arc::new(self.rank(&catalogue)));
        let (viewed_together, bought_together) = rayon::join(
            || self.coview.neighbours(&self.product_keys),
            || self.copurchase.neighbours(&self.product_keys),
        );
        let now = self.clock.load(Ordering::Relaxed);
        self.neighbours.store(Arc::new(Neighbours {
            viewed_together,
            bought_together,
            top_categories: most_popular(&self.category_popularity, now),
            top_brands: most_popular(&self.brand_popularity, now),
        }));
    }

    fn rank(&self, catalogue: &Arc<Catalogue>) -> RankingsVersion {
        let now = self.clock.load(Ordering::Relaxed);
        let rankings = Rankings::build(catalogue, |p| {
            self.counters
                .get(p.id.as_str())
                .map_or((0.0, 0), |c| (c.popularity.value_at(now), c.units))
        });
        RankingsVersion {
            catalogue: Arc::clone(catalogue),
            rankings,
        }
    }

    /// Adds or replaces a user record.
    pub fn upsert_user(&self, user: UserRecord) {
        self.users.insert(user.user_id.clone(), user);
    }

    /// Replaces every user record (a feed's `Users`).
    pub fn replace_users(&self, users: Vec<UserRecord>) {
        self.users.clear();
        for user in users {
            self.users.insert(user.user_id.clone(), user);
        }
    }

    /// Every user record, ordered by user id.
    pub fn users(&self) -> Vec<UserRecord> {
        let mut users: Vec<UserRecord> = self.users.iter().map(|u| u.clone()).collect();
        users.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        users
    }

    /// A user record by user id.
    pub fn user(&self, user_id: &str) -> Option<UserRecord> {
        self.users.get(user_id).map(|u| u.clone())
    }

    /// A copy of a visitor's state.
    pub fn visitor(&self, visitor_id: &str) -> Option<Visitor> {
        self.visitors.get(visitor_id).map(|v| v.clone())
    }

    /// Number of visitors with state.
    pub fn visitor_count(&self) -> usize {
        self.visitors.len()
    }

    /// Whether an order id has been recorded.
    pub fn has_order(&self, order_id: &str) -> bool {
        self.orders.contains_key(order_id)
    }

    /// Forgets sessions idle for longer than the session timeout.
    pub fn expire_sessions(&self, now: UnixMillis) {
        self.sessions
            .retain(|_, last| now - *last <= SESSION_IDLE_MILLIS);
    }

    /// Tracks the request's events, then fills its zones (read-your-writes).
    pub fn serve(&self, request: ServeRequest) -> ServeOutcome<'_> {
        let now = request.now;
        let visitor_id = request.visitor_id.unwrap_or_else(new_id);
        let session_id = self.resolve_session(request.session_id, now);
        let mut notices = Vec::new();
        let mut page = PageContext {
            visitor_id: visitor_id.clone(),
            ..PageContext::default()
        };

        self.clock.fetch_max(now, Ordering::Relaxed);
        let catalogue = self.catalogue();
        let mut visitor = match self.visitors.get_mut(&visitor_id) {
            Some(visitor) => visitor,
            None => self.visitors.entry(visitor_id.clone()).or_default(),
        };
        self.track(
            &mut visitor,
            &session_id,
            now,
            &request.events,
            &catalogue,
            &mut page,
            &mut notices,
        );
        let affinities = self.settings.zones.iter().any(|spec| {
            matches!(
                spec.kind,
                ZoneKind::RecommenderCategory | ZoneKind::RecommenderBrand
            ) && request.zones.contains(&spec.id)
        });
        let mut snapshot = VisitorSnapshot::of(&visitor, affinities);
        drop(visitor);
        // The same shopper on other devices (linked by user id or email): their history
        // counts too. Read after this visitor's entry is released, one entry at a time.
        for other in self.same_person(&visitor_id, &snapshot.identity) {
            if let Some(other) = self.visitors.get(&other) {
                snapshot.absorb(&other);
            }
        }

        let rankings = self.rankings_for(&catalogue);
        let neighbours = self.neighbours.load();
        let product = page.product.as_deref().and_then(|id| catalogue.idx_of(id));
        let ctx = Context {
            catalogue: &catalogue,
            rankings: &rankings.rankings,
            neighbours: &neighbours,
            currency: request.currency.unwrap_or(self.settings.default_currency),
            now,
            account_id: snapshot.identity.account_id.as_deref(),
            group_id: snapshot.identity.group_id.as_deref(),
            product,
            category: page.category.as_deref(),
            basket: snapshot.basket.iter().map(String::as_str).collect(),
            purchased: snapshot.purchased.iter().map(String::as_str).collect(),
            recent_views: snapshot
                .recent_views
                .iter()
                .rev()
                .map(String::as_str)
                .collect(),
        };

        let mut zones = Vec::with_capacity(request.zones.len());
        for (index, zone_id) in request.zones.iter().enumerate() {
            let Some(spec) = self.settings.zones.iter().find(|z| z.id == *zone_id) else {
                notices.push(Notice::UnknownZone {
                    zone: index,
                    id: zone_id.clone(),
                });
                continue;
            };
            if let Some(page_type) = page.page_type
                && !spec.page_types.is_empty()
                && !spec.page_types.contains(&page_type)
            {
                notices.push(Notice::ZoneNotOnPage {
                    zone: index,
                    id: zone_id.clone(),
                    page_type,
                });
                continue;
            }
            let mut names = Vec::new();
            let items = match spec.kind {
                // An html zone's template shows the products of its strategy, if any.
                ZoneKind::RecommenderProduct | ZoneKind::Html => fill_zone(spec, &ctx)
                    .into_iter()
                    .filter_map(|idx| {
                        let product = catalogue.product(idx)?;
                        Some(RenderedItem {
                            product: idx,
                            price: item_price(idx, product, &ctx)?,
                        })
                    })
                    .collect(),
                ZoneKind::RecommenderCategory => {
                    names = affinity(
                        &snapshot.categories,
                        &neighbours.top_categories,
                        page.category.as_deref(),
                        spec.count,
                        |id| {
                            catalogue.category(id).is_some()
                                || !catalogue.in_category(id).is_empty()
                        },
                    );
                    Vec::new()
                }
                ZoneKind::RecommenderBrand => {
                    names = affinity(
                        &snapshot.brands,
                        &neighbours.top_brands,
                        page.brand.as_deref(),
                        spec.count,
                        |id| catalogue.brand(id).is_some() || !catalogue.of_brand(id).is_empty(),
                    );
                    Vec::new()
                }
                ZoneKind::ImageCarousel | ZoneKind::Image => Vec::new(),
            };
            zones.push(RenderedZone { spec, items, names });
        }
        drop(ctx);
        drop(rankings);
        let tracked = Tracked {
            visitor_id: visitor_id.clone(),
            session_id: session_id.clone(),
            now,
            events: request.events,
        };
        ServeOutcome {
            visitor_id,
            session_id,
            notices,
            zones,
            catalogue,
            tracked,
        }
    }

    /// Applies logged events again (recovery): the same state changes and counts as
    /// when they were served, without filling zones.
    pub fn replay(&self, tracked: &Tracked) {
        let now = tracked.now;
        self.clock.fetch_max(now, Ordering::Relaxed);
        self.sessions
            .entry(tracked.session_id.clone())
            .and_modify(|last| *last = (*last).max(now))
            .or_insert(now);
        let catalogue = self.catalogue();
        let mut page = PageContext {
            visitor_id: tracked.visitor_id.clone(),
            ..PageContext::default()
        };
        let mut visitor = self.visitors.entry(tracked.visitor_id.clone()).or_default();
        self.track(
            &mut visitor,
            &tracked.session_id,
            now,
            &tracked.events,
            &catalogue,
            &mut page,
            &mut Vec::new(),
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn track(
        &self,
        visitor: &mut Visitor,
        session_id: &str,
        now: UnixMillis,
        events: &[Event],
        catalogue: &Catalogue,
        page: &mut PageContext,
        notices: &mut Vec<Notice>,
    ) {
        visitor.session_id = Some(session_id.to_owned());
        visitor.last_seen = now;
        for (index, event) in events.iter().enumerate() {
            let at = EventAt {
                index,
                now,
                catalogue,
            };
            self.apply_event(visitor, &at, event, page, notices);
        }
    }

    /// Hands every part of the tracking state to `sink`, one entry at a time (for a
    /// state snapshot). Each visitor is copied under its own short lock; requests go on
    /// meanwhile, so an entry may include events of requests served during the export.
    pub fn export_state(&self, sink: &mut dyn FnMut(StateEntry)) {
        sink(StateEntry::Clock(self.clock.load(Ordering::Relaxed)));
        let ids: Vec<String> = self.visitors.iter().map(|e| e.key().clone()).collect();
        for id in ids {
            let Some(visitor) = self.visitors.get(&id).map(|v| Box::new(v.clone())) else {
                continue;
            };
            sink(StateEntry::Visitor { id, visitor });
        }
        let sessions: Vec<(String, UnixMillis)> = self
            .sessions
            .iter()
            .map(|e| (e.key().clone(), *e.value()))
            .collect();
        for (id, last) in sessions {
            sink(StateEntry::Session { id, last });
        }
        let orders: Vec<String> = self.orders.iter().map(|e| e.key().clone()).collect();
        for order in orders {
            sink(StateEntry::Order(order));
        }
        let identities: Vec<(IdentityKey, Vec<String>)> = self
            .identities
            .iter()
            .map(|e| (e.key().clone(), e.value().iter().cloned().collect()))
            .collect();
        for (key, visitors) in identities {
            let (kind, key) = match key {
                IdentityKey::User(k) => (IdentityKind::User, k),
                IdentityKey::Email(k) => (IdentityKind::Email, k),
                IdentityKey::Account(k) => (IdentityKind::Account, k),
            };
            sink(StateEntry::Identity {
                kind,
                key,
                visitors,
            });
        }
        let counters: Vec<(String, Counter)> = self
            .counters
            .iter()
            .map(|e| (e.key().clone(), *e.value()))
            .collect();
        for (product, counter) in counters {
            sink(StateEntry::Counter {
                product,
                popularity: counter.popularity,
                units: counter.units,
            });
        }
        let popularity = |map: &DashMap<String, Decaying>| -> Vec<(String, Decaying)> {
            map.iter().map(|e| (e.key().clone(), *e.value())).collect()
        };
        for (name, popularity) in popularity(&self.category_popularity) {
            sink(StateEntry::CategoryPopularity { name, popularity });
        }
        for (name, popularity) in popularity(&self.brand_popularity) {
            sink(StateEntry::BrandPopularity { name, popularity });
        }
        for (product, partners) in self.coview.entries(&self.product_keys) {
            sink(StateEntry::CoView { product, partners });
        }
        for (product, partners) in self.copurchase.entries(&self.product_keys) {
            sink(StateEntry::CoPurchase { product, partners });
        }
    }

    /// Restores one entry of a state snapshot (into an account that has no tracking
    /// state yet).
    pub fn restore_entry(&self, entry: StateEntry) {
        match entry {
            StateEntry::Clock(clock) => {
                self.clock.fetch_max(clock, Ordering::Relaxed);
            }
            StateEntry::Visitor { id, visitor } => {
                self.visitors.insert(id, *visitor);
            }
            StateEntry::Session { id, last } => {
                self.sessions.insert(id, last);
            }
            StateEntry::Order(order) => {
                self.orders.insert(order, ());
            }
            StateEntry::Identity {
                kind,
                key,
                visitors,
            } => {
                let key = match kind {
                    IdentityKind::User => IdentityKey::User(key),
                    IdentityKind::Email => IdentityKey::Email(key),
                    IdentityKind::Account => IdentityKey::Account(key),
                };
                self.identities.entry(key).or_default().extend(visitors);
            }
            StateEntry::Counter {
                product,
                popularity,
                units,
            } => {
                self.counters.insert(product, Counter { popularity, units });
            }
            StateEntry::CategoryPopularity { name, popularity } => {
                self.category_popularity.insert(name, popularity);
            }
            StateEntry::BrandPopularity { name, popularity } => {
                self.brand_popularity.insert(name, popularity);
            }
            StateEntry::CoView { product, partners } => {
                self.coview.restore(&self.product_keys, &product, &partners);
            }
            StateEntry::CoPurchase { product, partners } => {
                self.copurchase
                    .restore(&self.product_keys, &product, &partners);
            }
        }
        self.models_stale.store(true, Ordering::Release);
    }

    /// Removes every record tied to `identifier`: matched by email (case-insensitive),
    /// user id, B2B account id or visitor id. Aggregate counters stay.
    pub fn forget(&self, identifier: &str) -> Erasure {
        let email = identifier.to_lowercase();
        let mut visitor_ids: HashSet<String> = HashSet::new();
        let mut user_ids: HashSet<String> = HashSet::new();
        let mut emails: HashSet<String> = HashSet::new();

        if self.visitors.contains_key(identifier) {
            visitor_ids.insert(identifier.to_owned());
        }
        if self.users.contains_key(identifier) {
            user_ids.insert(identifier.to_owned());
        }
        for user in self.users.iter() {
            if user
                .email
                .as_deref()
                .is_some_and(|e| e.to_lowercase() == email)
            {
                user_ids.insert(user.user_id.clone());
            }
        }
        for key in [
            IdentityKey::User(identifier.to_owned()),
            IdentityKey::Email(email.clone()),
            IdentityKey::Account(identifier.to_owned()),
        ] {
            if let Some(linked) = self.identities.get(&key) {
                visitor_ids.extend(linked.iter().cloned());
                match key {
                    IdentityKey::User(id) => {
                        user_ids.insert(id);
                    }
                    IdentityKey::Email(e) => {
                        emails.insert(e);
                    }
                    IdentityKey::Account(_) => {}
                }
            }
        }
        // A person's user id and email lead to each other; a shared B2B account id does not
        // lead to its other users.
        for user_id in user_ids.clone() {
            if let Some(user) = self.users.get(&user_id)
                && let Some(e) = &user.email
            {
                emails.insert(e.to_lowercase());
            }
            if let Some(linked) = self.identities.get(&IdentityKey::User(user_id)) {
                visitor_ids.extend(linked.iter().cloned());
            }
        }
        for e in &emails {
            if let Some(linked) = self.identities.get(&IdentityKey::Email(e.clone())) {
                visitor_ids.extend(linked.iter().cloned());
            }
        }

        let mut erasure = Erasure::default();
        for visitor_id in &visitor_ids {
            if let Some((_, visitor)) = self.visitors.remove(visitor_id) {
                erasure.visitors += 1;
                if let Some(session) = &visitor.session_id {
                    self.sessions.remove(session);
                }
                if let Some(user_id) = &visitor.identity.user_id {
                    user_ids.insert(user_id.clone());
                }
            }
        }
        for user_id in &user_ids {
            if self.users.remove(user_id).is_some() {
                erasure.users += 1;
            }
        }
        self.identities.retain(|key, linked| {
            linked.retain(|v| !visitor_ids.contains(v));
            let erased_key = match key {
                IdentityKey::User(id) => user_ids.contains(id),
                IdentityKey::Email(e) => emails.contains(e) || *e == email,
                IdentityKey::Account(_) => false,
            };
            !linked.is_empty() && !erased_key
        });
        erasure
    }

    fn resolve_session(&self, given: Option<String>, now: UnixMillis) -> String {
        if let Some(id) = given
            && let Some(mut last) = self.sessions.get_mut(&id)
            && now - *last <= SESSION_IDLE_MILLIS
        {
            *last = now;
            return id;
        }
        let id = new_id();
        self.sessions.insert(id.clone(), now);
        id
    }

    fn apply_event(
        &self,
        visitor: &mut Visitor,
        at: &EventAt<'_>,
        event: &Event,
        page: &mut PageContext,
        notices: &mut Vec<Notice>,
    ) {
        let (index, now, catalogue) = (at.index, at.now, at.catalogue);
        match event {
            Event::PageView {
                page_type,
                product_id,
                category_id,
                brand_id,
            } => {
                page.page_type = Some(*page_type);
                if product_id.is_some() {
                    page.product.clone_from(product_id);
                }
                if let Some(category) = category_id {
                    page.category = Some(category.clone());
                    self.browse_category(visitor, category, now);
                }
                if let Some(brand) = brand_id {
                    page.brand = Some(brand.clone());
                    self.browse_brand(visitor, brand, now);
                }
            }
            Event::ProductView { id } => {
                let key = self.product_keys.key(id);
                for earlier in visitor
                    .recent_views
                    .iter()
                    .rev()
                    .filter(|v| *v != id)
                    .take(CO_VIEW_WINDOW)
                {
                    self.coview.add(self.product_keys.key(earlier), key, 1.0);
                }
                visitor.record_view(id);
                page.product = Some(id.clone());
                self.count(id, VIEW_SCORE, 0, now);
                if let Some(product) = catalogue.idx_of(id).and_then(|i| catalogue.product(i)) {
                    for category in catalogue.categories_of(product) {
                        self.browse_category(visitor, category, now);
                    }
                    if let Some(brand) = catalogue.brand_of(product) {
                        self.browse_brand(visitor, brand, now);
                    }
                }
            }
            Event::ProductRate { id, rating } => visitor.record_rating(id, *rating),
            Event::SetBasket { items } => {
                for item in items {
                    if !visitor.basket.iter().any(|b| b.id == item.id) {
                        self.count(&item.id, BASKET_SCORE, 0, now);
                    }
                }
                visitor.basket = items.clone();
            }
            Event::Order(order) => {
                let fresh = match self.orders.entry(order.order_id.clone()) {
                    dashmap::Entry::Occupied(_) => false,
                    dashmap::Entry::Vacant(slot) => {
                        slot.insert(());
                        true
                    }
                };
                if !fresh {
                    notices.push(Notice::DuplicateOrder {
                        event: index,
                        order_id: order.order_id.clone(),
                    });
                    return;
                }
                for line in &order.items {
                    let units = line.qty.max(0.0).round() as u64;
                    self.count(&line.id, ORDER_SCORE, units.max(1), now);
                    visitor.record_purchase(&line.id);
                }
                let mut lines: Vec<u32> = Vec::new();
                for line in &order.items {
                    let key = self.product_keys.key(&line.id);
                    if lines.len() < MAX_ORDER_LINES_PAIRED && !lines.contains(&key) {
                        lines.push(key);
                    }
                }
                for (i, a) in lines.iter().enumerate() {
                    for b in lines.iter().skip(i + 1) {
                        self.copurchase.add(*a, *b, 1.0);
                    }
                }
                visitor.basket.clear();
                self.link_visitor(&page.visitor_id, &order.identity);
                visitor.link_identity(&order.identity);
                visitor.merge_details(&order.details);
                visitor.record_order(OrderRecord {
                    order_id: order.order_id.clone(),
                    identity: order.identity.clone(),
                    details: order.details.clone(),
                    at: now,
                });
            }
            Event::CustomerDetails { identity, details } => {
                self.link_visitor(&page.visitor_id, identity);
                visitor.link_identity(identity);
                visitor.merge_details(details);
            }
        }
    }

    fn link_visitor(&self, visitor_id: &str, identity: &Identity) {
        if let Some(user_id) = &identity.user_id {
            self.link(IdentityKey::User(user_id.clone()), visitor_id);
        }
        if let Some(email) = &identity.email {
            self.link(IdentityKey::Email(email.to_lowercase()), visitor_id);
        }
        if let Some(account_id) = &identity.account_id {
            self.link(IdentityKey::Account(account_id.clone()), visitor_id);
        }
    }

    /// Other visitors linked to the same user id or email (a B2B account id is shared by
    /// a company's users and links nobody's history), at most [`MAX_DEVICES`].
    fn same_person(&self, visitor_id: &str, identity: &Identity) -> Vec<String> {
        let keys = [
            identity.user_id.clone().map(IdentityKey::User),
            identity
                .email
                .as_ref()
                .map(|e| IdentityKey::Email(e.to_lowercase())),
        ];
        let mut others: Vec<String> = Vec::new();
        for key in keys.into_iter().flatten() {
            if let Some(linked) = self.identities.get(&key) {
                for other in linked.iter() {
                    if other != visitor_id && !others.contains(other) && others.len() < MAX_DEVICES
                    {
                        others.push(other.clone());
                    }
                }
            }
        }
        others.sort();
        others
    }

    fn link(&self, key: IdentityKey, visitor_id: &str) {
        self.identities
            .entry(key)
            .or_default()
            .insert(visitor_id.to_owned());
    }

    fn browse_category(&self, visitor: &mut Visitor, category: &str, now: UnixMillis) {
        add_affinity(&mut visitor.categories, category, 1.0);
        self.popular(&self.category_popularity, category, now);
    }

    fn browse_brand(&self, visitor: &mut Visitor, brand: &str, now: UnixMillis) {
        add_affinity(&mut visitor.brands, brand, 1.0);
        self.popular(&self.brand_popularity, brand, now);
    }

    /// Counts one interaction with a category or brand.
    fn popular(&self, counters: &DashMap<String, Decaying>, name: &str, now: UnixMillis) {
        match counters.get_mut(name) {
            Some(mut counter) => counter.add(1.0, now),
            None => counters.entry(name.to_owned()).or_default().add(1.0, now),
        }
        self.models_stale.store(true, Ordering::Release);
    }

    fn count(&self, product_id: &str, score: f64, units: u64, now: UnixMillis) {
        self.models_stale.store(true, Ordering::Release);
        let mut counter = match self.counters.get_mut(product_id) {
            Some(counter) => counter,
            None => self.counters.entry(product_id.to_owned()).or_default(),
        };
        counter.popularity.add(score, now);
        counter.units += units;
    }

    /// Rankings for the request's catalogue: the published ones when they index the same
    /// base (versions of one base keep their dense ids; products added since join at the
    /// next rebuild). Only a request racing the swap of a new base ranks it itself.
    fn rankings_for(&self, catalogue: &Arc<Catalogue>) -> Arc<RankingsVersion> {
        let current = self.rankings.load_full();
        if current.catalogue.same_base(catalogue) {
            return current;
        }
        Arc::new(self.rank(catalogue))
    }
}

#[derive(Debug, Default)]
struct PageContext {
    visitor_id: String,
    page_type: Option<PageType>,
    product: Option<String>,
    category: Option<String>,
    brand: Option<String>,
}

/// The parts of a visitor that zones consult, copied so the visitor's lock is released
/// before rendering.
#[derive(Debug)]
struct VisitorSnapshot {
    identity: Identity,
    basket: Vec<String>,
    purchased: Vec<String>,
    recent_views: Vec<String>,
    /// Whether `categories` and `brands` are filled.
    affinities: bool,
    categories: Vec<String>,
    brands: Vec<String>,
}

/// Where an event sits in its request.
struct EventAt<'a> {
    index: usize,
    now: UnixMillis,
    catalogue: &'a Catalogue,
}

/// Names for a category or brand zone: the visitor's strongest first, then the most
/// popular; the page's own one and names the catalogue does not know are left out.
fn affinity(
    visitor: &[String],
    popular: &[String],
    page: Option<&str>,
    count: usize,
    known: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(count);
    for name in visitor.iter().chain(popular) {
        if names.len() >= count {
            break;
        }
        if Some(name.as_str()) != page && !names.contains(name) && known(name) {
            names.push(name.clone());
        }
    }
    names
}

/// Other devices of one shopper whose history is merged into a request's, at most.
pub const MAX_DEVICES: usize = 8;

impl VisitorSnapshot {
    /// Adds another device's history after this one's own: its views (newest first)
    /// after this visitor's, its purchases, its categories and brands.
    fn absorb(&mut self, other: &Visitor) {
        for id in other.recent_views.iter().rev() {
            if !self.recent_views.contains(id) {
                self.recent_views.insert(0, id.clone());
            }
        }
        for id in &other.purchased {
            if !self.purchased.contains(id) {
                self.purchased.push(id.clone());
            }
        }
        if !self.affinities {
            return;
        }
        for name in strongest(&other.categories) {
            if !self.categories.contains(&name) {
                self.categories.push(name);
            }
        }
        for name in strongest(&other.brands) {
            if !self.brands.contains(&name) {
                self.brands.push(name);
            }
        }
    }

    /// What a request reads of a visitor; the category and brand affinities (sorted,
    /// so not free) only when a category or brand zone asks for them.
    fn of(visitor: &Visitor, affinities: bool) -> VisitorSnapshot {
        VisitorSnapshot {
            identity: visitor.identity.clone(),
            basket: visitor.basket.iter().map(|b| b.id.clone()).collect(),
            purchased: visitor.purchased.iter().cloned().collect(),
            recent_views: visitor.recent_views.iter().cloned().collect(),
            affinities,
            categories: if affinities {
                strongest(&visitor.categories)
            } else {
                Vec::new()
            },
            brands: if affinities {
                strongest(&visitor.brands)
            } else {
                Vec::new()
            },
        }
    }
}

/// A new 128-bit random id, 32 lower-case hex characters.
pub fn new_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{CatalogueBuilder, PriceSet, Product};
    use crate::event::{BasketLine, Order, PersonalDetails};
    use crate::zone::Strategy;

    const T0: UnixMillis = 1_800_000_000_000;

    fn gbp() -> Currency {
        Currency::from_code("GBP").unwrap()
    }

    fn account() -> Account {
        let mut builder = CatalogueBuilder::new();
        for id in ["a", "b", "c"] {
            builder.upsert_product(Product {
                id: id.into(),
                prices: PriceSet {
                    prices: vec![crate::Money {
                        minor: 100,
                        currency: gbp(),
                    }],
                    sale_prices: vec![],
                },
                ..Product::default()
            });
        }
        let zone = ZoneSpec {
            id: "RV".into(),
            title: "Recently viewed".into(),
            kind: ZoneKind::RecommenderProduct,
            strategy: Some(Strategy::RecentlyViewed),
            fallback: vec![],
            count: 5,
            page_types: vec![],
        };
        let settings = AccountSettings {
            access_key: "k".into(),
            default_currency: gbp(),
            zones: vec![zone],
        };
        Account::new(settings, builder.build().unwrap())
    }

    fn request(
        visitor: &str,
        session: Option<&str>,
        events: Vec<Event>,
        now: UnixMillis,
    ) -> ServeRequest {
        ServeRequest {
            visitor_id: Some(visitor.into()),
            session_id: session.map(str::to_owned),
            currency: None,
            events,
            zones: vec!["RV".into()],
            now,
        }
    }

    fn order(id: &str, email: &str) -> Event {
        Event::Order(Order {
            order_id: id.into(),
            items: vec![BasketLine {
                id: "a".into(),
                qty: 1.0,
                unit_price: 1.0,
            }],
            total: None,
            identity: Identity {
                email: Some(email.into()),
                ..Identity::default()
            },
            details: PersonalDetails {
                first_name: Some("Ann".into()),
                ..PersonalDetails::default()
            },
        })
    }

    #[test]
    fn a_session_idle_for_more_than_five_minutes_gets_a_new_id() {
        let account = account();
        let first = account.serve(request("v", None, vec![], T0)).session_id;
        let active = account
            .serve(request("v", Some(&first), vec![], T0 + SESSION_IDLE_MILLIS))
            .session_id;
        assert_eq!(active, first, "exactly five idle minutes keeps the session");
        let later = T0 + 2 * SESSION_IDLE_MILLIS + 1;
        let renewed = account
            .serve(request("v", Some(&first), vec![], later))
            .session_id;
        assert_ne!(renewed, first);
        // Sweeping forgets idle sessions without touching active ones.
        account.expire_sessions(later + SESSION_IDLE_MILLIS + 1);
        let after_sweep = account
            .serve(request("v", Some(&renewed), vec![], later + 1_000))
            .session_id;
        assert_ne!(after_sweep, renewed);
    }

    #[test]
    fn an_order_id_counts_once_per_account() {
        let account = account();
        let outcome = account.serve(request("v1", None, vec![order("o-1", "a@x.io")], T0));
        assert!(outcome.notices.is_empty());
        let outcome = account.serve(request("v2", None, vec![order("o-1", "b@x.io")], T0));
        assert_eq!(
            outcome.notices,
            vec![Notice::DuplicateOrder {
                event: 0,
                order_id: "o-1".into()
            }]
        );
        assert!(account.visitor("v2").unwrap().orders.is_empty());
        assert!(account.has_order("o-1"));
    }

    #[test]
    fn views_show_in_the_same_request_and_the_page_product_is_left_out() {
        let account = account();
        let view = |id: &str| Event::ProductView { id: id.into() };
        let outcome = account.serve(request("v", None, vec![view("a"), view("b")], T0));
        let ids: Vec<ProductIdx> = outcome.zones[0].items.iter().map(|i| i.product).collect();
        assert_eq!(
            ids,
            vec![0],
            "b is the page's product; a was viewed before it"
        );
    }

    #[test]
    fn forget_removes_linked_visitors_users_and_identity_links_but_not_others() {
        let account = account();
        account.serve(request(
            "v1",
            None,
            vec![order("o-1", "Ann@Example.com")],
            T0,
        ));
        account.serve(request(
            "v2",
            None,
            vec![Event::CustomerDetails {
                identity: Identity {
                    email: Some("ann@example.com".into()),
                    user_id: Some("u-1".into()),
                    ..Identity::default()
                },
                details: PersonalDetails::default(),
            }],
            T0,
        ));
        account.serve(request(
            "other",
            None,
            vec![Event::ProductView { id: "c".into() }],
            T0,
        ));
        account.upsert_user(UserRecord {
            user_id: "u-1".into(),
            ..UserRecord::default()
        });

        let erasure = account.forget("ANN@example.com");
        assert_eq!(
            erasure,
            Erasure {
                visitors: 2,
                users: 1
            }
        );
        assert!(account.visitor("v1").is_none() && account.visitor("v2").is_none());
        assert!(account.visitor("other").is_some());
        assert!(account.user("u-1").is_none());
        assert!(!account.forget("u-1").matched());
        // The order id stays recorded (it is not personal data), so it is not counted twice.
        assert!(account.has_order("o-1"));
    }
}
