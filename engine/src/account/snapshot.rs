//! The tracking state as a state snapshot sees it: [`Account::export_state`] hands
//! every part out one entry at a time, [`Account::restore_entry`] takes it back.

use std::sync::atomic::Ordering;

use super::Account;
use crate::models::live::Counter;
use crate::tracking::key::IdentityKey;
use compact_str::CompactString;

use crate::analytics::{Impressions, ZoneCounts, ZoneDay};
use crate::campaign::LatestRequest;
use crate::catalogue::UnixMillis;
use crate::models::{Decaying, PairsCopy, ProductKeys, SessionsCopy};
use crate::shards::Sharded;
use crate::site::StoredSiteDay;
use crate::state::{IdentityKind, StateEntry};
use crate::visitor::LiveVisitor;
use crate::visits::Visits;

/// Rounds of copying again the visitors orders wrote to during an export, before its
/// cut.
const CATCH_UP_ROUNDS: usize = 8;

/// Visitors few enough to copy again with orders held.
const LEFT_FOR_THE_CUT: usize = 64;

impl Account {
    /// Hands every part of the tracking state to `sink`, one entry at a time (for a
    /// state snapshot). Each visitor is copied under its own short lock; requests go on
    /// meanwhile, so an entry may include events of requests served during the export.
    /// Orders are the exception: each is in the export whole or not at all (see `cut`):
    /// the account's shared parts are copied at one instant, with orders held, and the
    /// visitors orders wrote to since the copy began are copied again then.
    pub fn export_state(&self, sink: &mut dyn FnMut(StateEntry)) {
        sink(StateEntry::Clock(self.clock.load(Ordering::Relaxed)));
        self.export_campaigns(sink);
        let export = self.tracking.order_cut.begin();
        let ids: Vec<String> = self
            .tracking
            .visitors
            .read()
            .iter()
            .map(|e| e.key().clone())
            .collect();
        for id in ids {
            self.export_visitor(id, sink);
        }
        let orders: Vec<String> = self
            .tracking
            .orders
            .read()
            .iter()
            .map(|e| e.key().clone())
            .collect();
        for order in orders {
            sink(StateEntry::Order(order));
        }
        // The visitors orders wrote to meanwhile, copied again while orders go on, a
        // few rounds, so that few are left to copy with orders held.
        for _ in 0..CATCH_UP_ROUNDS {
            let Some(wrote) = export.take_wrote_over(LEFT_FOR_THE_CUT) else {
                break;
            };
            for id in wrote {
                self.export_visitor(id, sink);
            }
        }
        let mut at_cut = Vec::new();
        let counted = {
            let cut = export.cut();
            let mut keep = |entry| at_cut.push(entry);
            for id in &cut.wrote {
                self.export_visitor(id.clone(), &mut keep);
            }
            for order in &cut.ordered {
                keep(StateEntry::Order(order.clone()));
            }
            self.copy_counted()
        };
        drop(export);
        for entry in at_cut {
            sink(entry);
        }
        counted.sink(&self.models.product_keys, sink);
        // What a replay adds again to the same result (a session's latest time, a link
        // between an identity and a visitor): copied after the cut, orders going on. (A
        // session a replayed request started after the cut is then known already: the
        // site's figures do not count it as started a second time, nor at all.)
        self.export_idempotent(sink);
    }

    /// Hands one visitor's entries to `sink` (none once it is gone).
    fn export_visitor(&self, id: String, sink: &mut dyn FnMut(StateEntry)) {
        let Some((visitor, impressions, bought, (visits, latest))) =
            self.tracking.visitors.read().get(&id).map(|v| {
                let impressions = v.impressions().filter(|i| !i.is_empty()).map(|i| {
                    let name = |key| {
                        self.models
                            .product_keys
                            .name(key)
                            .map(|n| CompactString::from(&*n))
                    };
                    Box::new(i.to_stored(name))
                });
                let bought = v.repurchases().map(|r| Box::new(r.clone()));
                let visits =
                    (v.visits() != &Visits::default()).then(|| Box::new(v.visits().clone()));
                let latest =
                    (!v.latest_request().is_empty()).then(|| Box::new(v.latest_request().stored()));
                (
                    Box::new(v.state().clone()),
                    impressions,
                    bought,
                    (visits, latest),
                )
            })
        else {
            return;
        };
        sink(StateEntry::Visitor {
            id: id.clone(),
            visitor,
        });
        if let Some(visits) = visits {
            sink(StateEntry::Visits {
                visitor: id.clone(),
                visits,
            });
        }
        if let Some(request) = latest {
            sink(StateEntry::LatestRequest {
                visitor: id.clone(),
                request,
            });
        }
        if let Some(bought) = bought {
            sink(StateEntry::Repurchases {
                visitor: id.clone(),
                bought,
            });
        }
        if let Some(impressions) = impressions {
            sink(StateEntry::Impressions {
                visitor: id,
                impressions,
            });
        }
    }

    /// Hands the sessions' latest times and the identities' visitors to `sink`.
    fn export_idempotent(&self, sink: &mut dyn FnMut(StateEntry)) {
        let sessions: Vec<(String, UnixMillis)> = self
            .tracking
            .sessions
            .read()
            .iter()
            .map(|e| (e.key().clone(), *e.value()))
            .collect();
        for (id, last) in sessions {
            sink(StateEntry::Session { id, last });
        }
        let identities: Vec<(IdentityKey, Vec<String>)> = self
            .tracking
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
    }

    /// Copies what a replay would count again: counters, popularity, pairs, the
    /// sessions' products, the site's and the zones' figures. Taken at the cut, with
    /// orders held, so only copied: products are named after it ([`Counted::sink`]).
    fn copy_counted(&self) -> Counted {
        let popularity = |map: &Sharded<String, Decaying>| -> Vec<(String, Decaying)> {
            map.iter().map(|e| (e.key().clone(), *e.value())).collect()
        };
        Counted {
            counters: self
                .models
                .counters
                .iter()
                .map(|e| (e.key().clone(), *e.value()))
                .collect(),
            categories: popularity(&self.models.category_popularity),
            brands: popularity(&self.models.brand_popularity),
            coview: self.models.coview.copy(),
            copurchase: self.models.copurchase.copy(),
            sessions: self.models.similar_sessions.copy(),
            site: self.figures.site.entries(),
            zones: self.analytics_entries(),
        }
    }

    /// Hands the campaign documents to `sink` (for a state snapshot): written first, so
    /// that a restore compiles them before anything is served.
    fn export_campaigns(&self, sink: &mut dyn FnMut(StateEntry)) {
        let history = self.campaigns().history();
        if !history.versions.is_empty() {
            sink(StateEntry::Campaigns(Box::new((&history).into())));
        }
        let drafts = self.campaigns().drafts();
        if !drafts.is_empty() {
            sink(StateEntry::CampaignDrafts(Box::new(drafts)));
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
                // Its impressions may have been restored first.
                self.tracking
                    .visitors
                    .get_or_insert_with(id, LiveVisitor::default)
                    .replace_state(*visitor);
            }
            StateEntry::Impressions {
                visitor,
                impressions,
            } => {
                let restored =
                    Impressions::from_stored(*impressions, |id| self.models.product_keys.key(id));
                *self
                    .tracking
                    .visitors
                    .get_or_insert_with(visitor, LiveVisitor::default)
                    .impressions_mut() = restored;
            }
            StateEntry::Repurchases { visitor, bought } => {
                self.tracking
                    .visitors
                    .get_or_insert_with(visitor, LiveVisitor::default)
                    .restore_repurchases(*bought);
            }
            StateEntry::Visits { visitor, visits } => {
                *self
                    .tracking
                    .visitors
                    .get_or_insert_with(visitor, LiveVisitor::default)
                    .visits_mut() = *visits;
            }
            StateEntry::LatestRequest { visitor, request } => {
                self.tracking
                    .visitors
                    .get_or_insert_with(visitor, LiveVisitor::default)
                    .restore_latest_request(LatestRequest::from_stored(&request));
            }
            StateEntry::Campaigns(history) => self.campaigns.restore_history((*history).into()),
            StateEntry::CampaignDrafts(drafts) => self.campaigns.restore_drafts(*drafts),
            StateEntry::ZoneDay { key, counts } => self.restore_zone_day(*key, *counts),
            StateEntry::Clicks { key, clicked } => self.restore_clicks(*key, clicked),
            StateEntry::RevenueSpread { key, spread } => self.restore_revenue_spread(*key, *spread),
            StateEntry::SiteDay(day) => self.figures.site.restore(*day),
            StateEntry::Session { id, last } => {
                self.tracking.sessions.insert(id, last);
            }
            StateEntry::Order(order) => {
                // Snapshots keep order ids only: a restored one counts as seen when
                // the clock the snapshot restored says.
                self.tracking
                    .orders
                    .insert(order, self.clock.load(Ordering::Relaxed));
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
                self.tracking
                    .identities
                    .entry(key)
                    .or_default()
                    .extend(visitors);
            }
            StateEntry::Counter {
                product,
                popularity,
                units,
            } => {
                self.models.counters.insert(
                    product,
                    Counter {
                        popularity,
                        units,
                        queued: false,
                    },
                );
                self.models.rank_all.store(true, Ordering::Release);
            }
            StateEntry::CategoryPopularity { name, popularity } => {
                self.models.category_popularity.insert(name, popularity);
            }
            StateEntry::BrandPopularity { name, popularity } => {
                self.models.brand_popularity.insert(name, popularity);
            }
            StateEntry::CoView { product, partners } => {
                self.models
                    .coview
                    .restore_counts(&self.models.product_keys, &product, &partners);
            }
            StateEntry::CoPurchase { product, partners } => {
                self.models.copurchase.restore_counts(
                    &self.models.product_keys,
                    &product,
                    &partners,
                );
            }
            StateEntry::CoViewPairs { product, partners } => {
                self.models.coview.restore(
                    &self.models.product_keys,
                    &product,
                    &partners,
                    None,
                    None,
                );
            }
            StateEntry::CoViewPairsByDistance(pairs) => {
                self.models.coview.restore(
                    &self.models.product_keys,
                    &pairs.product,
                    &pairs.partners,
                    Some(&pairs.reach),
                    None,
                );
            }
            StateEntry::CoViewPairsDirected(pairs) => self
                .models
                .coview
                .restore_directed(&self.models.product_keys, &pairs),
            StateEntry::CoPurchasePairsDirected(pairs) => {
                self.models
                    .copurchase
                    .restore_directed(&self.models.product_keys, &pairs);
            }
            StateEntry::SessionProducts(session) => {
                self.models
                    .similar_sessions
                    .restore(&session, |id| self.models.product_keys.key(id));
            }
            StateEntry::CoPurchasePairs { product, partners } => {
                self.models.copurchase.restore(
                    &self.models.product_keys,
                    &product,
                    &partners,
                    None,
                    None,
                );
            }
            StateEntry::CoPurchasePairsByDistance(pairs) => {
                self.models.copurchase.restore(
                    &self.models.product_keys,
                    &pairs.product,
                    &pairs.partners,
                    Some(&pairs.reach),
                    None,
                );
            }
        }
        self.models.models_stale.store(true, Ordering::Release);
    }
}

/// What a replay would count again, as copied at a state snapshot's cut.
struct Counted {
    counters: Vec<(String, Counter)>,
    categories: Vec<(String, Decaying)>,
    brands: Vec<(String, Decaying)>,
    coview: PairsCopy,
    copurchase: PairsCopy,
    sessions: SessionsCopy,
    site: Vec<StoredSiteDay>,
    zones: Vec<(ZoneDay, ZoneCounts)>,
}

impl Counted {
    /// Hands the copy to `sink`, its products named by `keys`.
    fn sink(self, keys: &ProductKeys, sink: &mut dyn FnMut(StateEntry)) {
        for (product, counter) in self.counters {
            sink(StateEntry::Counter {
                product,
                popularity: counter.popularity,
                units: counter.units,
            });
        }
        for (name, popularity) in self.categories {
            sink(StateEntry::CategoryPopularity { name, popularity });
        }
        for (name, popularity) in self.brands {
            sink(StateEntry::BrandPopularity { name, popularity });
        }
        let tables: [(_, fn(_) -> StateEntry); 2] = [
            (self.coview, StateEntry::CoViewPairsDirected),
            (self.copurchase, StateEntry::CoPurchasePairsDirected),
        ];
        for (copy, entry) in tables {
            for pairs in copy.named(keys) {
                sink(entry(Box::new(pairs)));
            }
        }
        let names = keys.names();
        let name = |key: u32| names.get(key as usize).map(|n| n.to_string());
        for session in self.sessions.named(name) {
            sink(StateEntry::SessionProducts(Box::new(session)));
        }
        for day in self.site {
            sink(StateEntry::SiteDay(Box::new(day)));
        }
        for (key, counts) in self.zones {
            let clicked = counts.clicked;
            if clicked > 0 {
                sink(StateEntry::Clicks {
                    key: Box::new(key.clone()),
                    clicked,
                });
            }
            if !counts.revenue_spread.is_empty() {
                sink(StateEntry::RevenueSpread {
                    key: Box::new(key.clone()),
                    spread: Box::new(counts.revenue_spread.clone()),
                });
            }
            sink(StateEntry::ZoneDay {
                key: Box::new(key),
                counts: Box::new(counts),
            });
        }
    }
}
