//! Per-visitor state: recent views, basket, purchases, ratings, identity and session.
//!
//! Every list is bounded so that one busy visitor cannot grow without limit.

use std::collections::VecDeque;

use crate::catalogue::UnixMillis;
use crate::event::{BasketLine, Identity, PersonalDetails};

/// Most recent product views kept per visitor.
pub const MAX_RECENT_VIEWS: usize = 50;
/// Most recent purchased products kept per visitor.
pub const MAX_PURCHASED: usize = 200;
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
    pub recent_views: VecDeque<String>,
    /// The current basket.
    pub basket: Vec<BasketLine>,
    /// Product ids bought, oldest first, at most [`MAX_PURCHASED`].
    pub purchased: VecDeque<String>,
    /// Orders of this visitor.
    pub orders: VecDeque<OrderRecord>,
    /// (product id, rating), oldest first.
    pub ratings: VecDeque<(String, f64)>,
    /// (category id, weight) of the categories the visitor browsed, at most
    /// [`MAX_AFFINITIES`].
    pub categories: Vec<(String, f64)>,
    /// (brand id, weight) of the brands the visitor browsed, at most [`MAX_AFFINITIES`].
    pub brands: Vec<(String, f64)>,
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
    /// Records a product view, moving a repeated product to the front.
    pub fn record_view(&mut self, product_id: &str) {
        // A repeated view moves its entry (no new copy of the id).
        let id = match self.recent_views.iter().position(|p| p == product_id) {
            Some(pos) => self.recent_views.remove(pos),
            None => None,
        };
        let id = id.unwrap_or_else(|| product_id.to_owned());
        push_bounded(&mut self.recent_views, id, MAX_RECENT_VIEWS);
    }

    /// Records a purchased product.
    pub fn record_purchase(&mut self, product_id: &str) {
        if !self.purchased.iter().any(|p| p == product_id) {
            push_bounded(&mut self.purchased, product_id.to_owned(), MAX_PURCHASED);
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

/// Adds `weight` to `name` in a bounded affinity list.
pub fn add_affinity(list: &mut Vec<(String, f64)>, name: &str, weight: f64) {
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
    list.push((name.to_owned(), weight));
}

/// An affinity list's names, strongest first (ties by name).
pub fn strongest(list: &[(String, f64)]) -> Vec<String> {
    let mut sorted: Vec<&(String, f64)> = list.iter().collect();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    sorted.into_iter().map(|(n, _)| n.clone()).collect()
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
            visitor.recent_views.front().map(String::as_str),
            Some("p10")
        );
        visitor.record_view("p10");
        assert_eq!(visitor.recent_views.back().map(String::as_str), Some("p10"));
        assert_eq!(visitor.recent_views.len(), MAX_RECENT_VIEWS);
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
