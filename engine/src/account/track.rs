//! Tracking: applying a request's events to the visitor and the account's counters
//! and online models, on serving ([`Account::serve`]) and on recovery
//! ([`Account::replay`]), and session resolution.

use smallvec::SmallVec;

use super::Account;
use super::ids::new_id;
use super::request::{Notice, PageContext};
use crate::analytics::{MILLIS_PER_DAY, ShownZone, Touch, session_key};
use crate::catalogue::{Catalogue, UnixMillis};
use crate::event::{Event, Identity, Order};
use crate::models::{
    CO_VIEW_WINDOW, EARLIER_PURCHASES_PAIRED, MAX_ORDER_LINES_PAIRED, NO_KEY, Reach,
    UNCATALOGUED_KEYS, reach_of,
};
use crate::money::Currency;
use crate::state::{Served, Tracked};
use crate::visitor::{LiveVisitor, OrderRecord, SESSION_IDLE_MILLIS, Visitor, add_affinity};
use crate::visits::SessionStart;

/// Score added to a product's trending counter per kind of interaction.
const VIEW_SCORE: f64 = 1.0;
const BASKET_SCORE: f64 = 2.0;
const ORDER_SCORE: f64 = 4.0;

impl Account {
    /// Applies logged events again (recovery): the same state changes and counts as
    /// when they were served, without filling zones.
    /// A record without a visitor id holds imported orders ([`Account::import_orders`]).
    /// Orders count their revenue in the account's default currency (records of this
    /// kind were logged before requests logged theirs, see [`Account::replay_served`]).
    pub fn replay(&self, tracked: &Tracked) {
        self.replay_with(tracked, None, &[]);
    }

    /// Applies a logged request again (recovery): its events, then what its zones
    /// showed, as when it was served.
    pub fn replay_served(&self, served: &Served) {
        self.replay_with(&served.tracked, Some(served.currency), &served.shown);
    }

    fn replay_with(&self, tracked: &Tracked, currency: Option<Currency>, shown: &[ShownZone]) {
        let now = tracked.now;
        if tracked.visitor_id.is_empty() {
            let orders: Vec<Order> = tracked
                .events
                .iter()
                .filter_map(|event| match event {
                    Event::CustomerOrder(order) => Some(Order::clone(order)),
                    _ => None,
                })
                .collect();
            self.import_orders(&orders, now);
            return;
        }
        self.advance_clock(now);
        let mut started = false;
        let mut last =
            self.tracking
                .sessions
                .get_or_insert_with(tracked.session_id.clone(), || {
                    started = true;
                    now
                });
        *last = (*last).max(now);
        drop(last);
        if started {
            self.figures.site.session_started(now);
        }
        let catalogue = self.catalogue();
        // Before the visitor's entry (see `cut`).
        let ordering = self.tracking.order_cut.enter(&tracked.events);
        let mut page = PageContext {
            visitor_id: &tracked.visitor_id,
            currency,
            ..PageContext::default()
        };
        let mut visitor = self
            .tracking
            .visitors
            .get_or_insert_with(tracked.visitor_id.clone(), LiveVisitor::default);
        self.track(
            &mut visitor,
            &tracked.session_id,
            now,
            &tracked.events,
            &catalogue,
            &mut page,
            &mut Vec::new(),
        );
        self.record_shown(
            &mut visitor,
            shown,
            |z, i| self.shown_key_by_id(shown, z, i),
            &tracked.session_id,
            now,
        );
        drop(visitor);
        self.record_customer_orders(&page.customer_orders, now);
        drop(ordering);
        self.keep_bound(self.settings.load().max_visitors);
    }

    /// Records orders placed for customers outside any visitor's request (the store's
    /// order history, imported): each first-seen order id is counted for the product
    /// models and written to its customer's record, as a live order would be; repeated
    /// order ids are skipped. Returns how many were new.
    pub fn import_orders(&self, orders: &[Order], now: UnixMillis) -> usize {
        self.advance_clock(now);
        let ordering = self.tracking.order_cut.enter_orders();
        let mut notices = Vec::new();
        let fresh: Vec<Order> = orders
            .iter()
            .enumerate()
            .filter(|(index, order)| self.count_order(order, *index, now, &mut notices, &[]))
            .map(|(_, order)| order.clone())
            .collect();
        if !fresh.is_empty() {
            self.models.mark_stale();
        }
        self.record_customer_orders(&fresh, now);
        drop(ordering);
        fresh.len()
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "borrows from four owners: the visitor's locked entry, the request, the catalogue version and the outcome being built"
    )]
    pub(super) fn track<'e>(
        &self,
        live: &mut LiveVisitor,
        session_id: &str,
        now: UnixMillis,
        events: &'e [Event],
        catalogue: &Catalogue,
        page: &mut PageContext<'e>,
        notices: &mut Vec<Notice>,
    ) {
        let visitor = live.state_mut();
        let session = if visitor.session_id.as_deref() == Some(session_id) {
            SessionStart::Continued
        } else {
            visitor.session_id = Some(session_id.to_owned());
            SessionStart::New
        };
        visitor.last_seen = now;
        live.visits_mut().seen(now, session);
        let settings = self.settings.load();
        let default_currency = settings.default_currency;
        let currency = page.currency.unwrap_or(default_currency);
        let window = UnixMillis::from(settings.attribution_days) * MILLIS_PER_DAY;
        drop(settings);
        let session = session_key(session_id);
        let visitor_key = session_key(page.visitor_id);
        for (index, event) in events.iter().enumerate() {
            let at = EventAt {
                index,
                now,
                catalogue,
                session,
                visitor: visitor_key,
                window,
                currency,
                default_currency,
            };
            match event {
                Event::ProductView { id } => self.view_product(live, &at, id, page),
                other => self.apply_event(live, &at, other, page, notices),
            }
        }
        // Once, after every counter, pair and queue the events wrote.
        if events.iter().any(counts_for_models) {
            self.models.mark_stale();
        }
        self.count_store(live, page, now);
    }

    /// While the store-wide holdout is on, counts the request in the visitor's group
    /// (held out or personalized, by the person it is once its events are applied):
    /// the visitor, and the revenue of its new orders.
    fn count_store(&self, live: &mut LiveVisitor, page: &PageContext<'_>, now: UnixMillis) {
        let set = self.campaigns.load();
        let Some(holdout) = set.holdout.as_ref() else {
            return;
        };
        let person = super::resolve::person_key(page.visitor_id, &live.state().identity);
        let group = holdout.group(person);
        let tally = live.impressions_mut().count_store(
            crate::experiment::holdout::STORE_ZONE,
            group,
            page.ordered,
            now,
        );
        self.tally(tally);
    }

    pub(super) fn resolve_session(&self, given: Option<String>, now: UnixMillis) -> String {
        if let Some(id) = given
            && let Some(mut last) = self.tracking.sessions.read().get_mut(&id)
            && now - *last <= SESSION_IDLE_MILLIS
        {
            *last = now;
            return id;
        }
        let id = new_id();
        self.tracking.sessions.insert(id.clone(), now);
        self.figures.site.session_started(now);
        id
    }

    fn apply_event<'e>(
        &self,
        live: &mut LiveVisitor,
        at: &EventAt<'_>,
        event: &'e Event,
        page: &mut PageContext<'e>,
        notices: &mut Vec<Notice>,
    ) {
        let (index, now) = (at.index, at.now);
        let visitor = live.state_mut();
        match event {
            Event::PageView {
                category_id,
                brand_id,
                ..
            } => {
                page.see(event);
                live.visits_mut().page_viewed();
                let visitor = live.state_mut();
                if let Some(category) = category_id {
                    self.browse_category(visitor, category, now);
                }
                if let Some(brand) = brand_id {
                    self.browse_brand(visitor, brand, now);
                }
            }
            // Through `view_product`, which keeps the visitor's dense ids in step.
            Event::ProductView { .. } => {}
            Event::ProductRate { id, rating } => visitor.record_rating(id, *rating),
            Event::SetBasket { items } => {
                let added = visitor.new_to_basket(items);
                let keys = self.see_added(live, at, &added);
                for (id, key) in added.iter().zip(keys) {
                    if let Some(key) = key {
                        self.models.count(id, BASKET_SCORE, 0, now);
                        self.models
                            .similar_sessions
                            .view(at.session, at.visitor, key, now);
                    }
                }
                live.state_mut().basket = items.clone();
                for id in added {
                    self.attribute(live, id, |product| Touch::Basket { product }, at);
                }
            }
            Event::Order(order) => {
                let earlier = self.earlier_purchases(visitor);
                if !self.count_order(order, index, now, notices, &earlier) {
                    return;
                }
                // A line new to the basket was put in it on the way to the order
                // (bought from a listing, or last before checkout without a basket
                // sync): a step of the visit as a basket line is ([`Account::see_added`]).
                let added = visitor.new_to_basket(&order.items);
                self.see_added(live, at, &added);
                // The order's lines are the session's too (those put in the basket
                // before already are).
                for line in &order.items {
                    if let Some(key) = self.models.product_keys.existing(&line.id) {
                        self.models
                            .similar_sessions
                            .view(at.session, at.visitor, key, now);
                    }
                }
                self.tracking.order_cut.wrote(page.visitor_id);
                live.record_order_lines(order.items.iter().map(|line| line.id.as_str()), now);
                let visitor = live.state_mut();
                visitor.basket.clear();
                self.link_visitor(page.visitor_id, &order.identity);
                visitor.link_identity(&order.identity);
                visitor.merge_details(&order.details);
                visitor.record_order(OrderRecord {
                    order_id: order.order_id.clone(),
                    identity: order.identity.clone(),
                    details: order.details.clone(),
                    at: now,
                });
                let revenue = order
                    .items
                    .iter()
                    .map(|line| minor_units(line.qty * line.unit_price, at.currency))
                    .fold(0_i64, i64::saturating_add);
                self.figures
                    .site
                    .order_placed(at.session, now, at.currency, revenue);
                let before = page.ordered.map_or(0, |(_, minor)| minor);
                page.ordered = Some((at.currency, before.saturating_add(revenue)));
                // Segments count revenue in the account's currency: the order's total
                // (which the contract gives in it), else its lines when in it.
                let base = at.default_currency;
                let in_base = match order.total {
                    Some(total) => minor_units(total, base),
                    None if at.currency == base => revenue,
                    None => 0,
                };
                live.visits_mut().ordered(now, in_base);
                for line in &order.items {
                    let touch = |product| Touch::Order {
                        product,
                        units: line.qty.max(0.0).round() as u64,
                        minor: minor_units(line.qty * line.unit_price, at.currency),
                        currency: at.currency,
                    };
                    self.attribute(live, &line.id, touch, at);
                }
            }
            Event::CustomerDetails { identity, details } => {
                self.link_visitor(page.visitor_id, identity);
                visitor.link_identity(identity);
                visitor.merge_details(details);
            }
            Event::CustomerOrder(order) => {
                // The customer's record is another entry of `visitors`, which cannot be
                // locked while this visitor's entry is: it is written once that is
                // released ([`Account::record_customer_orders`]).
                if self.count_order(order, index, now, notices, &[]) {
                    page.customer_orders.push(Order::clone(order));
                }
            }
        }
    }

    /// A product view: what it teaches ([`Account::see_product`]), its attribution to
    /// a zone that showed the product, and the page's product.
    fn view_product<'e>(
        &self,
        live: &mut LiveVisitor,
        at: &EventAt<'_>,
        id: &'e str,
        page: &mut PageContext<'e>,
    ) {
        let key = self.see_product(live, at, id, Sight::Viewed);
        let view = |product| Touch::View {
            product,
            session: at.session,
        };
        // The view's key is known: no second lookup of the id.
        self.attribute_key(live, key, view, at);
        page.see_product(id);
    }

    /// The visitor saw the product `id` (viewed it, or put it in the basket from
    /// elsewhere than its own page): co-view pairs with the visitor's previous views,
    /// the session's products ([`SessionIndex`](crate::models::SessionIndex), when
    /// [`Sight::Viewed`]), the view itself, the product's popularity and its categories'
    /// and brand's affinities. Returns the product's key when it is counted.
    fn see_product(
        &self,
        live: &mut LiveVisitor,
        at: &EventAt<'_>,
        id: &str,
        sight: Sight,
    ) -> Option<u32> {
        let (now, catalogue) = (at.now, at.catalogue);
        let idx = catalogue.idx_of(id);
        let key = self.countable(id, catalogue);
        if let Some(key) = key {
            // The pairing weakens with the distance in the visitor's views: 1 for the
            // previous product, 1/2 for the one before, and so on; counted by distance
            // too, for the shorter windows.
            let earlier: SmallVec<[(u32, f32, Reach); CO_VIEW_WINDOW]> = live
                .recent_keys(&self.models.product_keys, catalogue)
                .iter()
                .rev()
                .filter(|k| **k != key && **k != NO_KEY)
                .take(CO_VIEW_WINDOW)
                .enumerate()
                .map(|(before, earlier)| {
                    let weight = 1.0 / (before as f32 + 1.0);
                    (*earlier, weight, reach_of(before + 1, weight))
                })
                .collect();
            self.models.coview.add_all(key, &earlier);
            if sight == Sight::Viewed {
                self.models
                    .similar_sessions
                    .view(at.session, at.visitor, key, now);
            }
            self.models.count(id, VIEW_SCORE, 0, now);
        }
        live.record_view(id, key.unwrap_or(NO_KEY), idx, catalogue);
        let visitor = live.state_mut();
        if let Some(product) = idx.and_then(|i| catalogue.product(i)) {
            for category in catalogue.categories_of(product) {
                self.browse_category(visitor, category, now);
            }
            if let Some(brand) = catalogue.brand_of(product) {
                self.browse_brand(visitor, brand, now);
            }
        }
        key
    }

    /// Products `added` to the basket: a line put in from elsewhere than its product's
    /// page (a listing, a zone, a quick order) was seen all the same, a step of the
    /// visit as a view is, paired with the views before it ([`Account::see_product`]).
    /// One put in from its own page (the visitor's latest view) was counted when it was
    /// viewed. Returns each line's key where it is counted, looked up once.
    fn see_added(
        &self,
        live: &mut LiveVisitor,
        at: &EventAt<'_>,
        added: &[&str],
    ) -> SmallVec<[Option<u32>; 4]> {
        added
            .iter()
            .map(|id| {
                if !live.state().is_latest_view(id) {
                    self.see_product(live, at, id, Sight::Added)
                } else {
                    self.countable(id, at.catalogue)
                }
            })
            .collect()
    }

    /// The keys of the visitor's latest distinct purchases, latest first, at most
    /// [`EARLIER_PURCHASES_PAIRED`] (those never counted left out).
    fn earlier_purchases(&self, visitor: &Visitor) -> SmallVec<[u32; EARLIER_PURCHASES_PAIRED]> {
        visitor
            .purchased
            .iter()
            .rev()
            .filter_map(|id| self.models.product_keys.existing(id))
            .take(EARLIER_PURCHASES_PAIRED)
            .collect()
    }

    /// Records an order id once per account and counts a first-seen order for the
    /// product models: units sold, trending, co-purchase pairs: the order's lines with
    /// each other (counted at distance 1, each pair weighing 1 over how far apart the
    /// lines are in the order: the next line 1, the one after 1/2, as a shopper fills
    /// a basket aisle by aisle) and each with the shopper's `earlier` purchases
    /// (latest first; see [`EARLIER_PURCHASES_PAIRED`]). Returns whether it was new; a
    /// repeated order id is a notice and counts nothing.
    fn count_order(
        &self,
        order: &Order,
        index: usize,
        now: UnixMillis,
        notices: &mut Vec<Notice>,
        earlier: &[u32],
    ) -> bool {
        let fresh = {
            let mut fresh = false;
            self.tracking
                .orders
                .get_or_insert_with(order.order_id.clone(), || {
                    fresh = true;
                    now
                });
            fresh
        };
        if fresh {
            self.tracking.order_cut.counted(&order.order_id);
        } else {
            notices.push(Notice::DuplicateOrder {
                event: index,
                order_id: order.order_id.clone(),
            });
            return false;
        }
        let catalogue = self.catalogue.load();
        let mut lines: Vec<u32> = Vec::new();
        for line in &order.items {
            let Some(key) = self.countable(&line.id, &catalogue) else {
                continue;
            };
            let units = line.qty.max(0.0).round() as u64;
            self.models.count(&line.id, ORDER_SCORE, units.max(1), now);
            if lines.len() < MAX_ORDER_LINES_PAIRED && !lines.contains(&key) {
                lines.push(key);
            }
        }
        for (i, a) in lines.iter().enumerate() {
            for (apart, b) in lines.iter().skip(i + 1).enumerate() {
                self.models.copurchase.add(*a, *b, 1.0 / (apart + 1) as f32);
            }
        }
        let before: SmallVec<[(u32, f32, Reach); EARLIER_PURCHASES_PAIRED]> = earlier
            .iter()
            .filter(|key| !lines.contains(key))
            .enumerate()
            .map(|(back, key)| {
                let distance = back + 2;
                let weight = 1.0 / distance as f32;
                (*key, weight, reach_of(distance, weight))
            })
            .collect();
        if !before.is_empty() {
            for line in &lines {
                self.models.copurchase.add_all(*line, &before);
            }
        }
        true
    }

    /// Writes orders placed for customers (see [`Event::CustomerOrder`]) to each
    /// customer's own record: purchases, identity, details and the order itself, linked
    /// by user id and email like a live order, so the customer's devices see them.
    /// Called with no visitor entry locked, under the orders' gate (see `cut`).
    pub(super) fn record_customer_orders(&self, orders: &[Order], now: UnixMillis) {
        for order in orders {
            let Some(id) = customer_visitor_id(&order.identity) else {
                continue;
            };
            self.tracking.order_cut.wrote(&id);
            self.link_visitor(&id, &order.identity);
            let mut live = self
                .tracking
                .visitors
                .get_or_insert_with(id, LiveVisitor::default);
            live.record_order_lines(order.items.iter().map(|line| line.id.as_str()), now);
            let customer = live.state_mut();
            customer.link_identity(&order.identity);
            customer.merge_details(&order.details);
            customer.last_seen = customer.last_seen.max(now);
            customer.record_order(OrderRecord {
                order_id: order.order_id.clone(),
                identity: order.identity.clone(),
                details: order.details.clone(),
                at: now,
            });
        }
    }

    fn browse_category(&self, visitor: &mut Visitor, category: &str, now: UnixMillis) {
        add_affinity(&mut visitor.categories, category, 1.0);
        self.models
            .popular(&self.models.category_popularity, category, now);
    }

    fn browse_brand(&self, visitor: &mut Visitor, brand: &str, now: UnixMillis) {
        add_affinity(&mut visitor.brands, brand, 1.0);
        self.models
            .popular(&self.models.brand_popularity, brand, now);
    }

    /// The product key of `id` when its interactions may be counted: a product of
    /// `catalogue` always, any other id (a product a delta may still bring, or an id
    /// made up by a client) only while the ids counted outside the catalogue stay under
    /// [`UNCATALOGUED_KEYS`], so that made-up ids cannot grow the counters and pair
    /// tables without bound. The catalogue is looked up only for an id without a key.
    fn countable(&self, id: &str, catalogue: &Catalogue) -> Option<u32> {
        if let Some(key) = self.models.product_keys.existing(id) {
            return Some(key);
        }
        let room = catalogue.len().saturating_add(UNCATALOGUED_KEYS);
        (self.models.product_keys.len() < room || catalogue.idx_of(id).is_some())
            .then(|| self.models.product_keys.key(id))
    }
}

/// Whether `event` may change what the model rounds rebuild from: product, basket
/// and order counts, pairs, and category or brand popularity.
fn counts_for_models(event: &Event) -> bool {
    match event {
        Event::PageView {
            category_id,
            brand_id,
            ..
        } => category_id.is_some() || brand_id.is_some(),
        Event::ProductView { .. }
        | Event::SetBasket { .. }
        | Event::Order(_)
        | Event::CustomerOrder(_) => true,
        Event::ProductRate { .. } | Event::CustomerDetails { .. } => false,
    }
}

/// The visitor id under which a customer's own record is kept, from the order's
/// identity: by user id, else by email (lower-cased), else by B2B account id.
pub fn customer_visitor_id(identity: &Identity) -> Option<String> {
    if let Some(user) = &identity.user_id {
        return Some(format!("customer:user:{user}"));
    }
    if let Some(email) = &identity.email {
        return Some(format!("customer:email:{}", email.to_lowercase()));
    }
    identity
        .account_id
        .as_ref()
        .map(|account| format!("customer:account:{account}"))
}

/// How a visitor saw a product ([`Account::see_product`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sight {
    /// Viewed on its page: a step of the session, kept in the session index.
    Viewed,
    /// Put in the basket from elsewhere than its page (a listing, a zone, a quick
    /// order): paired with the views before it, not a step of the session.
    Added,
}

/// Where an event sits in its request.
pub(crate) struct EventAt<'a> {
    index: usize,
    pub(crate) now: UnixMillis,
    catalogue: &'a Catalogue,
    /// [`session_key`] of the request's session.
    session: u64,
    /// The same hash of the visitor's id.
    visitor: u64,
    /// The account's attribution window.
    pub(crate) window: UnixMillis,
    /// The currency of the request's orders.
    currency: Currency,
    /// The account's currency.
    default_currency: Currency,
}

/// An amount in minor units of `currency`, rounded (0 for one that is not finite or
/// not positive).
fn minor_units(amount: f64, currency: Currency) -> i64 {
    let scaled = amount * 10f64.powi(currency.minor_digits() as i32);
    if scaled.is_finite() && scaled > 0.0 {
        scaled.round().min(i64::MAX as f64) as i64
    } else {
        0
    }
}
