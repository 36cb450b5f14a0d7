//! Per-visitor state: recent views, basket, purchases, ratings, identity and session.
//!
//! Every list is bounded so that one busy visitor cannot grow without limit.

use std::collections::VecDeque;

use compact_str::CompactString;
use smallvec::SmallVec;

use crate::analytics::Impressions;
use crate::campaign::{LatestRequest, RequestContext};
use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::event::{BasketLine, Identity, PageType, PersonalDetails};
use crate::models::ProductKeys;
use crate::money::Currency;
use crate::repurchases::Repurchases;
use crate::visits::Visits;

/// Most recent product views kept per visitor.
pub const MAX_RECENT_VIEWS: usize = 50;
/// Most recent purchased products kept per visitor: as many as their repurchases keep.
pub const MAX_PURCHASED: usize = crate::repurchases::MAX_BOUGHT;
/// Most recent ratings kept per visitor.
pub const MAX_RATINGS: usize = 100;
/// Most recent orders kept per visitor (with their personal details).
pub const MAX_ORDERS: usize = 100;
/// Categories and brands remembered per visitor (the weakest makes room).
pub const MAX_AFFINITIES: usize = 20;
/// A session idle for longer than this gets a new id.
pub const SESSION_IDLE_MILLIS: UnixMillis = 5 * 60 * 1000;

/// An order as remembered for one visitor.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct OrderRecord {
    /// The order id.
    pub order_id: String,
    /// Who ordered, as given with the order.
    pub identity: Identity,
    /// Personal details given with the order.
    pub details: PersonalDetails,
    /// When it was recorded.
    pub at: UnixMillis,
}

/// What the engine remembers of one visitor.
#[derive(Debug, Clone, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Visitor {
    /// Product ids viewed, oldest first, at most [`MAX_RECENT_VIEWS`], no repeats.
    pub recent_views: VecDeque<CompactString>,
    /// The current basket.
    pub basket: Vec<BasketLine>,
    /// Product ids bought, oldest first, at most [`MAX_PURCHASED`].
    pub purchased: VecDeque<CompactString>,
    /// Orders of this visitor.
    pub orders: VecDeque<OrderRecord>,
    /// (product id, rating), oldest first.
    pub ratings: VecDeque<(String, f64)>,
    /// (category id, weight) of the categories the visitor browsed, at most
    /// [`MAX_AFFINITIES`].
    pub categories: Vec<(CompactString, f64)>,
    /// (brand id, weight) of the brands the visitor browsed, at most [`MAX_AFFINITIES`].
    pub brands: Vec<(CompactString, f64)>,
    /// The identifiers linked to this visitor.
    pub identity: Identity,
    /// Personal details last given.
    pub details: PersonalDetails,
    /// Current session id.
    pub session_id: Option<String>,
    /// Last request of this visitor.
    pub last_seen: UnixMillis,
}

impl Visitor {
    /// Whether `id` is the visitor's latest view: a basket line of it was put in from
    /// its own page, and was counted when viewed (any other is a step of the visit of
    /// its own, see `Account::see_added`).
    pub fn is_latest_view(&self, id: &str) -> bool {
        self.recent_views.back().is_some_and(|view| view == id)
    }

    /// Whether the basket holds a line of `id`.
    pub fn has_in_basket(&self, id: &str) -> bool {
        self.basket.iter().any(|line| line.id == id)
    }

    /// The ids of `lines` the basket does not hold yet, in their order: the lines a
    /// basket update or an order puts in (see `Account::see_added`).
    pub fn new_to_basket<'a>(&self, lines: &'a [BasketLine]) -> SmallVec<[&'a str; 4]> {
        lines
            .iter()
            .map(|line| line.id.as_str())
            .filter(|id| !self.has_in_basket(id))
            .collect()
    }

    /// Records a product view, moving a repeated product to the front.
    pub fn record_view(&mut self, product_id: &str) {
        // A repeated view moves its entry (no new copy of the id).
        let id = match self.recent_views.iter().position(|p| p == product_id) {
            Some(pos) => self.recent_views.remove(pos),
            None => None,
        };
        let id = id.unwrap_or_else(|| CompactString::from(product_id));
        push_bounded(&mut self.recent_views, id, MAX_RECENT_VIEWS);
    }

    /// Records a purchased product.
    pub fn record_purchase(&mut self, product_id: &str) {
        if !self.purchased.iter().any(|p| p == product_id) {
            push_bounded(
                &mut self.purchased,
                CompactString::from(product_id),
                MAX_PURCHASED,
            );
        }
    }

    /// Records a rating.
    pub fn record_rating(&mut self, product_id: &str, rating: f64) {
        self.ratings.retain(|(p, _)| p != product_id);
        push_bounded(
            &mut self.ratings,
            (product_id.to_owned(), rating),
            MAX_RATINGS,
        );
    }

    /// Records an order with its personal details.
    pub fn record_order(&mut self, order: OrderRecord) {
        push_bounded(&mut self.orders, order, MAX_ORDERS);
    }

    /// Merges newly given identifiers; a field given replaces the one remembered.
    pub fn link_identity(&mut self, identity: &Identity) {
        merge(&mut self.identity.user_id, &identity.user_id);
        merge(&mut self.identity.email, &identity.email);
        merge(&mut self.identity.account_id, &identity.account_id);
        merge(&mut self.identity.group_id, &identity.group_id);
    }

    /// Merges newly given personal details.
    pub fn merge_details(&mut self, details: &PersonalDetails) {
        merge(&mut self.details.title, &details.title);
        merge(&mut self.details.first_name, &details.first_name);
        merge(&mut self.details.last_name, &details.last_name);
        merge(&mut self.details.zipcode, &details.zipcode);
        if details.dob.is_some() {
            self.details.dob = details.dob;
        }
    }
}

/// A visitor as an account holds it: its [`Visitor`] state, and its recent views as
/// dense ids of one catalogue version, kept in step by the request path so that reading
/// them costs no id lookups. The dense ids are not stored (state snapshots hold the
/// [`Visitor`]): they are worked out again on first use after a restart and on each new
/// catalogue version (a delta may add, remove or renumber the viewed products).
#[derive(Debug, Default)]
pub struct LiveVisitor {
    state: Visitor,
    /// The catalogue version of `views` ([`Catalogue::version_id`]; 0: not worked out).
    views_version: u64,
    /// `state.recent_views` in the same order, as dense ids in `views_version`.
    views: VecDeque<Option<ProductIdx>>,
    /// `state.recent_views` in the same order, as [`ProductKeys`] keys (which never
    /// change), when as many.
    keys: VecDeque<u32>,
    /// `state.purchased` as dense ids of a catalogue version, and what they were worked
    /// out from (see [`LiveVisitor::purchased_idx`]).
    purchases: Option<Purchases>,
    /// What zones showed the visitor lately (none until a zone shows something).
    impressions: Option<Box<Impressions>>,
    /// The products bought, in how many orders (none until an order).
    repurchases: Option<Box<Repurchases>>,
    /// Its sessions, page views and orders, as segments read them.
    visits: Visits,
    /// What segments read of its latest request (for segment sizes).
    latest: LatestRequest,
}

/// A visitor's purchases as dense ids of one catalogue version.
#[derive(Debug)]
struct Purchases {
    version: u64,
    /// How many purchases there were, and the last one: purchases are only added (the
    /// oldest making room), so these two tell whether any was since.
    len: usize,
    last: Option<CompactString>,
    idx: Vec<ProductIdx>,
}

impl LiveVisitor {
    /// A visitor restored from its state.
    pub fn new(state: Visitor) -> LiveVisitor {
        LiveVisitor {
            state,
            ..LiveVisitor::default()
        }
    }

    /// Its state.
    pub fn state(&self) -> &Visitor {
        &self.state
    }

    /// Replaces its state, keeping its impressions, repurchases, visits and latest
    /// request.
    pub fn replace_state(&mut self, state: Visitor) {
        *self = LiveVisitor {
            state,
            impressions: self.impressions.take(),
            repurchases: self.repurchases.take(),
            visits: std::mem::take(&mut self.visits),
            latest: std::mem::take(&mut self.latest),
            ..LiveVisitor::default()
        };
    }

    /// Its sessions, page views and orders.
    pub fn visits(&self) -> &Visits {
        &self.visits
    }

    /// Its sessions, page views and orders, to change.
    pub fn visits_mut(&mut self) -> &mut Visits {
        &mut self.visits
    }

    /// What segments read of its latest request.
    pub fn latest_request(&self) -> &LatestRequest {
        &self.latest
    }

    /// Keeps what segments read of the request it just made (or of one a snapshot
    /// restores).
    pub fn remember_request(
        &mut self,
        page_type: Option<PageType>,
        currency: Option<Currency>,
        context: &RequestContext,
    ) {
        self.latest.remember(page_type, currency, context);
    }

    /// Replaces its latest request (a restored snapshot's).
    pub fn restore_latest_request(&mut self, latest: LatestRequest) {
        self.latest = latest;
    }

    /// What it bought, in how many orders.
    pub fn repurchases(&self) -> Option<&Repurchases> {
        self.repurchases.as_deref()
    }

    /// Replaces what it bought (a restored snapshot's).
    pub fn restore_repurchases(&mut self, repurchases: Repurchases) {
        self.repurchases = (!repurchases.is_empty()).then(|| Box::new(repurchases));
    }

    /// Records an order of `products` at `at`: its purchases ([`Visitor::record_purchase`])
    /// and its repurchases.
    pub fn record_order_lines<'a>(
        &mut self,
        products: impl IntoIterator<Item = &'a str> + Clone,
        at: UnixMillis,
    ) {
        for product in products.clone() {
            self.state.record_purchase(product);
        }
        self.repurchases
            .get_or_insert_with(Box::default)
            .record_order(products, at);
    }

    /// What zones showed it lately.
    pub fn impressions(&self) -> Option<&Impressions> {
        self.impressions.as_deref()
    }

    /// Its impressions, to change (made on first use).
    pub fn impressions_mut(&mut self) -> &mut Impressions {
        self.impressions.get_or_insert_with(Box::default)
    }

    /// Its impressions when it has any, to change.
    pub fn existing_impressions_mut(&mut self) -> Option<&mut Impressions> {
        self.impressions.as_deref_mut()
    }

    /// Its state, to change. Recent views change only through
    /// [`LiveVisitor::record_view`].
    pub fn state_mut(&mut self) -> &mut Visitor {
        &mut self.state
    }

    fn views_in_step(&self, version: u64) -> bool {
        self.views_version == version && self.views.len() == self.state.recent_views.len()
    }

    /// Records a product view ([`Visitor::record_view`]) of the product with `key` and,
    /// when `catalogue` has it, dense id `idx`.
    pub fn record_view(
        &mut self,
        product_id: &str,
        key: u32,
        idx: Option<ProductIdx>,
        catalogue: &Catalogue,
    ) {
        let repeated = self.state.recent_views.iter().position(|p| p == product_id);
        let views_in_step = self.views_in_step(catalogue.version_id());
        let keys_in_step = self.keys.len() == self.state.recent_views.len();
        self.state.record_view(product_id);
        if views_in_step {
            follow(&mut self.views, repeated, idx);
        } else {
            self.views_version = 0;
        }
        if keys_in_step {
            follow(&mut self.keys, repeated, key);
        } else {
            self.keys.clear();
        }
    }

    /// The product keys of the recent views, oldest first, as [`Visitor::recent_views`].
    /// Views that have no key yet get one when `catalogue` has their product; others
    /// (ids outside it) are [`crate::models::NO_KEY`].
    pub fn recent_keys(&mut self, keys: &ProductKeys, catalogue: &Catalogue) -> &VecDeque<u32> {
        if self.keys.len() != self.state.recent_views.len() {
            self.keys = self
                .state
                .recent_views
                .iter()
                .map(|id| match keys.existing(id) {
                    Some(key) => key,
                    None if catalogue.idx_of(id).is_some() => keys.key(id),
                    None => crate::models::NO_KEY,
                })
                .collect();
        }
        &self.keys
    }

    /// The recent views as dense ids of `catalogue`, newest first, leaving out those it
    /// lacks; worked out from the ids once per catalogue version.
    pub fn recent_idx(
        &mut self,
        catalogue: &Catalogue,
    ) -> smallvec::SmallVec<[ProductIdx; MAX_RECENT_VIEWS]> {
        if !self.views_in_step(catalogue.version_id()) {
            self.views = self
                .state
                .recent_views
                .iter()
                .map(|id| catalogue.idx_of(id))
                .collect();
            self.views_version = catalogue.version_id();
        }
        self.views.iter().rev().flatten().copied().collect()
    }

    /// The products bought as dense ids of `catalogue` (those it lacks left out); worked
    /// out from the ids when a purchase was added or the catalogue version changed.
    pub fn purchased_idx(&mut self, catalogue: &Catalogue) -> &[ProductIdx] {
        let purchased = &self.state.purchased;
        let current = self.purchases.as_ref().is_some_and(|p| {
            p.version == catalogue.version_id()
                && p.len == purchased.len()
                && p.last.as_ref() == purchased.back()
        });
        if !current {
            self.purchases = Some(Purchases {
                version: catalogue.version_id(),
                len: purchased.len(),
                last: purchased.back().cloned(),
                idx: purchased
                    .iter()
                    .filter_map(|id| catalogue.idx_of(id))
                    .collect(),
            });
        }
        self.purchases.as_ref().map_or(&[], |p| p.idx.as_slice())
    }

    /// [`LiveVisitor::recent_idx`] without keeping what it works out (for a visitor read
    /// under a shared lock).
    pub fn recent_idx_read(&self, catalogue: &Catalogue) -> Vec<ProductIdx> {
        if self.views_in_step(catalogue.version_id()) {
            return self.views.iter().rev().flatten().copied().collect();
        }
        self.state
            .recent_views
            .iter()
            .rev()
            .filter_map(|id| catalogue.idx_of(id))
            .collect()
    }
}

/// Does to `list` what [`Visitor::record_view`] does to the recent views: the entry at
/// `repeated` moves to the end as `item`, or `item` is added (the oldest making room).
fn follow<T>(list: &mut VecDeque<T>, repeated: Option<usize>, item: T) {
    match repeated {
        Some(pos) => {
            list.remove(pos);
        }
        None if list.len() == MAX_RECENT_VIEWS => {
            list.pop_front();
        }
        None => {}
    }
    list.push_back(item);
}

impl std::ops::Deref for LiveVisitor {
    type Target = Visitor;

    fn deref(&self) -> &Visitor {
        &self.state
    }
}

/// Adds `weight` to `name` in a bounded affinity list.
pub fn add_affinity(list: &mut Vec<(CompactString, f64)>, name: &str, weight: f64) {
    if let Some(entry) = list.iter_mut().find(|(n, _)| n == name) {
        entry.1 += weight;
        return;
    }
    if list.len() >= MAX_AFFINITIES
        && let Some(weakest) = list
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.1.total_cmp(&b.1.1))
            .map(|(i, _)| i)
    {
        list.swap_remove(weakest);
    }
    list.push((CompactString::from(name), weight));
}

/// An affinity list's names, strongest first (ties by name).
pub fn strongest(list: &[(CompactString, f64)]) -> Vec<String> {
    let mut sorted: Vec<&(CompactString, f64)> = list.iter().collect();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    sorted.into_iter().map(|(n, _)| n.to_string()).collect()
}

fn merge(into: &mut Option<String>, from: &Option<String>) {
    if let Some(value) = from {
        *into = Some(value.clone());
    }
}

fn push_bounded<T>(list: &mut VecDeque<T>, item: T, max: usize) {
    if list.len() == max {
        list.pop_front();
    }
    list.push_back(item);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_views_are_bounded_and_deduplicated() {
        let mut visitor = Visitor::default();
        for i in 0..(MAX_RECENT_VIEWS + 10) {
            visitor.record_view(&format!("p{i}"));
        }
        assert_eq!(visitor.recent_views.len(), MAX_RECENT_VIEWS);
        assert_eq!(
            visitor.recent_views.front().map(CompactString::as_str),
            Some("p10")
        );
        visitor.record_view("p10");
        assert_eq!(
            visitor.recent_views.back().map(CompactString::as_str),
            Some("p10")
        );
        assert_eq!(visitor.recent_views.len(), MAX_RECENT_VIEWS);
    }

    /// The dense ids kept in step give what resolving the ids afresh gives, through
    /// repeated views, evictions, views of unknown products and a new base.
    #[test]
    fn recent_views_as_dense_ids_stay_in_step() {
        let catalogue =
            crate::testing::catalogue((0..80).map(|i| crate::testing::product(&format!("p{i}"))));
        let fresh = |live: &LiveVisitor, catalogue: &Catalogue| -> Vec<ProductIdx> {
            live.recent_views
                .iter()
                .rev()
                .filter_map(|id| catalogue.idx_of(id))
                .collect()
        };
        let keys = ProductKeys::default();
        let mut live = LiveVisitor::default();
        assert!(live.recent_idx(&catalogue).is_empty());
        for n in 0..300u64 {
            // 90 ids of which 80 exist; repeats and evictions past MAX_RECENT_VIEWS.
            let id = format!("p{}", (n * 37) % 90);
            let idx = catalogue.idx_of(&id);
            live.record_view(&id, keys.key(&id), idx, &catalogue);
            if n % 7 == 0 {
                assert_eq!(
                    live.recent_idx(&catalogue).to_vec(),
                    fresh(&live, &catalogue)
                );
                let expected: VecDeque<u32> =
                    live.recent_views.iter().map(|id| keys.key(id)).collect();
                assert_eq!(*live.recent_keys(&keys, &catalogue), expected);
                assert_eq!(live.views_version, catalogue.version_id());
            }
        }
        assert_eq!(
            live.recent_idx(&catalogue).to_vec(),
            fresh(&live, &catalogue)
        );
        assert_eq!(live.recent_idx_read(&catalogue), fresh(&live, &catalogue));
        // Another base: worked out again.
        let other = crate::testing::catalogue(
            (0..80)
                .rev()
                .map(|i| crate::testing::product(&format!("p{i}"))),
        );
        assert_ne!(other.version_id(), catalogue.version_id());
        assert_eq!(live.recent_idx_read(&other), fresh(&live, &other));
        assert_eq!(live.recent_idx(&other).to_vec(), fresh(&live, &other));
        // Purchases: worked out again when one is added, also once the oldest makes room.
        let bought = |live: &LiveVisitor, catalogue: &Catalogue| -> Vec<ProductIdx> {
            live.purchased
                .iter()
                .filter_map(|id| catalogue.idx_of(id))
                .collect()
        };
        for n in 0..(MAX_PURCHASED as u64 + 30) {
            live.state_mut()
                .record_purchase(&format!("p{}", (n * 13) % 300));
            if n % 3 == 0 {
                let expected = bought(&live, &catalogue);
                assert_eq!(live.purchased_idx(&catalogue), expected);
            }
        }
        assert_eq!(live.purchased.len(), MAX_PURCHASED);
        live.state_mut().record_purchase("p5000");
        live.state_mut().record_purchase("p1");
        let expected = bought(&live, &catalogue);
        assert_eq!(live.purchased_idx(&catalogue), expected);
        // A restored visitor starts without them.
        let restored = LiveVisitor::new(live.state().clone());
        assert_eq!(restored.views_version, 0);
        // A new version of the same base that adds a viewed product: it shows.
        let mut edit = catalogue.edit();
        edit.upsert_product(crate::testing::product("p85")).unwrap();
        let next = edit.finish();
        assert_ne!(next.version_id(), catalogue.version_id());
        assert!(fresh(&live, &next).contains(&next.idx_of("p85").unwrap()));
        assert_eq!(live.recent_idx(&next).to_vec(), fresh(&live, &next));
        assert_eq!(restored.recent_idx_read(&other), fresh(&live, &other));
    }

    #[test]
    fn identity_links_merge() {
        let mut visitor = Visitor::default();
        visitor.link_identity(&Identity {
            user_id: Some("u1".into()),
            ..Identity::default()
        });
        visitor.link_identity(&Identity {
            email: Some("a@b.c".into()),
            ..Identity::default()
        });
        assert_eq!(visitor.identity.user_id.as_deref(), Some("u1"));
        assert_eq!(visitor.identity.email.as_deref(), Some("a@b.c"));
    }
}
