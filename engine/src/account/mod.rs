//! One store account: its catalogue version, visitors, sessions, orders, users and
//! popularity counters, and the server-side call that tracks events and fills zones.
//!
//! Concurrency: every map is a `DashMap`; a request locks only its own visitor's entry
//! while applying its events. The catalogue is an `ArcSwap`: a request loads one
//! version and uses it throughout, writers (the delta worker, feed builds) swap in a new
//! one. Events update the online models (popularity with time decay, units sold, co-view
//! and co-purchase pairs, see [`crate::models`]); [`Account::rebuild_models`] turns what
//! changed since its last round into rankings (published whole) and neighbour lists
//! (written in place, a list at a time): the server calls it on an interval off the
//! request path, and a catalogue with a new base gets its rankings and lists from whoever
//! swaps it in. Serving reads the latest ones and never waits.

//!
//! Modules: `serve` (the request: track, then fill zones), `request` (what a request
//! brings and what its events say about the page), `resolve` (how a zone is filled:
//! experiment variant, campaign list or configuration, decided once for serving,
//! explain, previews, shadow tests and backtests), `visitor_view` (what it reads of its
//! visitor), `track` (events applied to visitors, counters and models; replay),
//! `identity` (linking devices, erasure), `snapshot` (export and restore of the
//! tracking state), `explain` (why a zone shows what it shows), `bounds` (memory
//! bounds and eviction), `settings` (what the account is configured with), `ids`.
//! This file holds the account itself and its catalogue versions under the [`Writer`]
//! lock; `rebuild` the models' rebuild round. Features that keep state of their own hold
//! it in a part defined in their folder: `crate::tracking::Tracking` (visitors,
//! sessions, order ids, identities, users), `crate::models::live::Models` (counters,
//! pairs, sessions, rankings, lists), `crate::campaign::store::Campaigns`,
//! `crate::analytics::figures::Figures` (zone analytics, site figures, activity,
//! predictions) and `crate::tuning::tuners::Tuners`.
//!
//! A feature that acts on the whole account adds its methods to [`Account`] in its own
//! folder: `crate::prequential` (judging the zones on sampled requests),
//! `crate::tuning` (self-tuning's trials), `crate::shadow`, `crate::backtest`,
//! `crate::analytics` (impressions and attribution) and `crate::campaign::audiences`
//! (segment sizes). They read the account through `resolve`, `visitor_view` and
//! `request`, the crate-visible modules here; nothing here names their files, and the state
//! they keep in the account is defined where nothing of the account is named
//! (`crate::tuning::trial`, `crate::backtest::moments`), so that this file holds the
//! account's state without importing a feature (`scripts/import-circles`).

mod bounds;
#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod cut_tests;
mod explain;
mod identity;
mod ids;
#[cfg(test)]
mod pair_snapshot_tests;
mod rebuild;
#[cfg(test)]
mod repurchase_tests;
pub(crate) mod request;
pub(crate) mod resolve;
mod serve;
pub(crate) mod settings;
mod snapshot;
#[cfg(test)]
mod tests;
pub(crate) mod track;
pub(crate) mod visitor_view;
#[cfg(test)]
mod zone_cache_tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering, fence};

use arc_swap::ArcSwap;

pub use crate::analytics::figures::ActivityStats;
pub(crate) use crate::models::live::RankingsVersion;
pub use crate::tracking::UserRecord;
pub use bounds::{EVICT_TO, Evicted, INLINE_EVICT_TO, INLINE_SLACK, MemoryBounds};
pub use explain::{
    CampaignsExplained, ExplainRequest, ExplainedItem, Explanation, MAX_REJECTED, MadeUpShopper,
};
pub use identity::{Erasure, ErasureNames};
pub use ids::new_id;
pub use request::{Notice, ServeRequest, ZoneIds};
pub use serve::{
    CAMPAIGN_VARIANT_PREFIX, RenderedItem, RenderedZone, RenderedZones, ServeOutcome,
    campaign_variant,
};
pub use settings::AccountSettings;
pub use track::customer_visitor_id;
pub use visitor_view::MAX_DEVICES;

use crate::catalogue::{Catalogue, UnixMillis};
use crate::models::{Neighbours, SessionIndex, TopNames, most_popular};
use crate::shards::Graveyard;
use crate::site::SiteDay;
use crate::visitor::Visitor;

/// An account's whole in-memory state.
#[derive(Debug)]
pub struct Account {
    /// Its access key (never changes).
    access_key: String,
    /// Its zones and default currency (replaced by a configuration reload).
    pub(crate) settings: ArcSwap<AccountSettings>,
    pub(crate) catalogue: ArcSwap<Catalogue>,
    /// Its shoppers: visitors, sessions, order ids, identities, user records.
    pub(crate) tracking: crate::tracking::Tracking,
    /// What it learns from its shoppers: counters, popularity, pairs, sessions, and
    /// what the models round publishes from them.
    pub(crate) models: crate::models::live::Models,
    /// What it measures of itself: zone analytics, store-wide figures, activity and
    /// the zones' predictions.
    pub(crate) figures: crate::analytics::figures::Figures,
    /// Catalogue versions replaced, dropped off the request path ([`Account::sweep`]).
    graveyard: Graveyard,
    /// Held by the one [`Writer`] at a time.
    writer: parking_lot::Mutex<()>,
    /// Held by the request evicting inline (others over the limit wait for it).
    inline_eviction: parking_lot::Mutex<()>,
    /// Visitors, then sessions, evicted inline by requests, since the process started.
    evicted_inline: [AtomicU64; 2],
    /// Its self-tuning: the lists', the recipe's (with the trials to score) and the
    /// sessions' neighbourhood's.
    pub(crate) tuners: crate::tuning::tuners::Tuners<crate::tuning::trial::RecipeTrial>,
    /// The latest request time seen: the reference time of decayed popularity.
    clock: AtomicI64,
    /// Its campaigns: the compiled set, the documents' history and the drafts.
    pub(crate) campaigns: crate::campaign::store::Campaigns,
    /// Draft campaign lists judged beside the live ones ([`crate::shadow`]).
    pub(crate) shadows: parking_lot::RwLock<Vec<Arc<crate::shadow::Shadow>>>,
    /// The judged moments backtests replay ([`crate::backtest`]).
    pub(crate) moments: crate::backtest::moments::Moments,
    /// Product zones that are the same for every visitor of a page
    /// ([`crate::zone_cache`]).
    zone_cache: crate::zone_cache::ZoneCache,
}

impl Account {
    /// A new account serving `catalogue`.
    pub fn new(settings: AccountSettings, catalogue: Catalogue) -> Account {
        let models = settings.models;
        let tuning = settings.tuning;
        let tuners = crate::tuning::tuners::Tuners::new(
            &settings.zones,
            tuning,
            &models,
            settings.tunes_recipe(),
            settings.tunes_sessions(),
        );
        let similar_sessions = SessionIndex::new(models.sessions);
        similar_sessions.configure(tuners.sessions.active());
        let catalogue = Arc::new(catalogue);
        Account {
            access_key: settings.access_key.clone(),
            settings: ArcSwap::from_pointee(settings),
            catalogue: ArcSwap::new(Arc::clone(&catalogue)),
            tracking: crate::tracking::Tracking::default(),
            models: crate::models::live::Models::new(models, &catalogue, similar_sessions),
            figures: crate::analytics::figures::Figures::default(),
            graveyard: Graveyard::default(),
            writer: parking_lot::Mutex::new(()),
            inline_eviction: parking_lot::Mutex::new(()),
            evicted_inline: [AtomicU64::new(0), AtomicU64::new(0)],
            tuners,
            clock: AtomicI64::new(0),
            campaigns: crate::campaign::store::Campaigns::default(),
            shadows: parking_lot::RwLock::default(),
            moments: crate::backtest::moments::Moments::default(),
            zone_cache: crate::zone_cache::ZoneCache::default(),
        }
    }

    /// Its campaigns: the compiled set, the documents' history and the drafts.
    pub fn campaigns(&self) -> &crate::campaign::store::Campaigns {
        &self.campaigns
    }

    /// The account's access key.
    pub fn access_key(&self) -> &str {
        &self.access_key
    }

    /// The account's settings now.
    pub fn settings(&self) -> Arc<AccountSettings> {
        self.settings.load_full()
    }

    /// Replaces the account's zones and default currency (a configuration reload):
    /// requests from now on are served with them, those being served finish with the
    /// old ones. The access key does not change.
    pub fn replace_settings(&self, settings: AccountSettings) {
        self.reconfigure_lists(crate::tuning::Lists::CoView, &settings);
        self.reconfigure_lists(crate::tuning::Lists::CoPurchase, &settings);
        self.models
            .similar_sessions
            .set_capacity(settings.models.sessions);
        self.models
            .similar_sessions
            .configure(self.tuners.sessions.reconfigure(
                settings.tuning,
                settings.tunes_sessions(),
                &settings.models,
            ));
        self.tuners.recipe.reconfigure(
            &settings.zones,
            settings.tunes_recipe(),
            settings.models.tuning_trials_per_second,
        );
        let zones = match self.tuners.recipe.active() {
            Some(recipe) => crate::tuning::recipe::with_recipe(&settings.zones, recipe),
            None => settings.zones,
        };
        self.settings.store(Arc::new(AccountSettings {
            access_key: self.access_key.clone(),
            zones,
            ..settings
        }));
    }

    /// The current catalogue version.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.catalogue.load_full()
    }

    /// The account's writer lock: the one way to swap in a catalogue version. Whoever
    /// makes the next version (startup replay, the delta worker, a rebuild's swap) loads
    /// the current one, edits it and swaps the result in while holding this, so that no
    /// change is lost between load and swap. Blocks while another writer holds it.
    pub fn writer(&self) -> Writer<'_> {
        Writer {
            account: self,
            _lock: self.writer.lock(),
        }
    }

    /// Moves the clock forward to `now` (never back). Read first: requests within the
    /// same millisecond leave it alone instead of writing its cache line each.
    fn advance_clock(&self, now: UnixMillis) {
        if self.clock.load(Ordering::Relaxed) < now {
            self.clock.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// Drops the catalogue versions replaced by a swap that no request uses any more,
    /// on the caller's thread (a background one: a version's overlay or mapping can take
    /// milliseconds to free); returns how many.
    pub fn sweep(&self) -> usize {
        self.graveyard.sweep()
    }

    /// Adds or replaces a user record.
    pub fn upsert_user(&self, user: UserRecord) {
        self.tracking.users.insert(user.user_id.clone(), user);
    }

    /// Removes a user record; whether there was one.
    pub fn remove_user(&self, user_id: &str) -> bool {
        self.tracking.users.remove(user_id).is_some()
    }

    /// Replaces every user record (a feed's `Users`).
    pub fn replace_users(&self, users: Vec<UserRecord>) {
        self.tracking.users.clear();
        for user in users {
            self.tracking.users.insert(user.user_id.clone(), user);
        }
    }

    /// Every user record, ordered by user id.
    pub fn users(&self) -> Vec<UserRecord> {
        let mut users: Vec<UserRecord> = self.tracking.users.iter().map(|u| u.clone()).collect();
        users.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        users
    }

    /// A user record by user id.
    pub fn user(&self, user_id: &str) -> Option<UserRecord> {
        self.tracking.users.get(user_id).map(|u| u.clone())
    }

    /// A copy of a visitor's state.
    pub fn visitor(&self, visitor_id: &str) -> Option<Visitor> {
        self.tracking
            .visitors
            .read()
            .get(visitor_id)
            .map(|v| v.state().clone())
    }

    /// Number of visitors with state.
    pub fn visitor_count(&self) -> usize {
        self.tracking.visitors.len()
    }

    /// Number of live sessions.
    pub fn session_count(&self) -> usize {
        self.tracking.sessions.len()
    }

    /// The store-wide figures of the UTC days `from..=to` ([`crate::analytics::day_of`]),
    /// added up.
    pub fn site_figures(&self, from: i32, to: i32) -> SiteDay {
        self.figures.site.total(from, to)
    }

    /// Number of order ids recorded.
    pub fn order_count(&self) -> usize {
        self.tracking.orders.len()
    }

    /// Requests served and items shown since the process started, and requests on the
    /// UTC day of `now`.
    pub fn activity(&self, now: UnixMillis) -> ActivityStats {
        self.figures.activity.stats(now)
    }

    /// Whether an order id has been recorded.
    pub fn has_order(&self, order_id: &str) -> bool {
        self.tracking.orders.read().contains_key(order_id)
    }

    /// Bounds the zone cache to `bytes` (0 turns it off; [`crate::zone_cache`]).
    pub fn set_zone_cache_bytes(&self, bytes: usize) {
        self.zone_cache.set_bound(bytes);
    }

    /// The zone cache's hits, misses and size.
    pub fn zone_cache(&self) -> crate::zone_cache::ZoneCacheFigures {
        self.zone_cache.figures()
    }

    /// The zone cache's generation for a request of these versions, looked up when a
    /// zone first needs it (none when the rankings are not the published ones: a
    /// request racing the swap of a new base ranks it itself, and such rankings are its
    /// own).
    fn zone_cache_generation<'a>(
        &self,
        settings: &'a Arc<AccountSettings>,
        catalogue: &'a Arc<Catalogue>,
        rankings: &'a Arc<RankingsVersion>,
        neighbours: &'a Arc<Neighbours>,
    ) -> crate::zone_cache::LazyGeneration<'a> {
        let published = Arc::ptr_eq(rankings, &self.models.rankings.load());
        crate::zone_cache::LazyGeneration::new(published.then_some(
            crate::zone_cache::VersionRefs {
                settings,
                catalogue,
                rankings,
                neighbours,
            },
        ))
    }

    /// Rankings for the request's catalogue: the published ones when they index the same
    /// base (versions of one base keep their dense ids; products added since join at the
    /// next rebuild). Only a request racing the swap of a new base ranks it itself.
    pub(crate) fn rankings_for(&self, catalogue: &Arc<Catalogue>) -> Arc<RankingsVersion> {
        let current = self.models.rankings.load_full();
        if current.catalogue.same_base(catalogue) {
            return current;
        }
        Arc::new(self.models.rank(catalogue))
    }
}

/// The writer's hold on an account ([`Account::writer`]): while it lives, nobody else
/// swaps the account's catalogue version.
#[derive(Debug)]
pub struct Writer<'a> {
    account: &'a Account,
    _lock: parking_lot::MutexGuard<'a, ()>,
}

impl Writer<'_> {
    /// Makes `catalogue` the current version; requests in flight keep the one they loaded.
    /// A catalogue with a new base is ranked here, on the caller's thread, before it is
    /// served (rankings index products by dense id, which a new base renumbers).
    pub fn swap_catalogue(&self, catalogue: Catalogue) {
        let account = self.account;
        let catalogue = Arc::new(catalogue);
        if !account
            .models
            .rankings
            .load()
            .catalogue
            .same_base(&catalogue)
        {
            account
                .models
                .rankings
                .store(Arc::new(account.models.rank(&catalogue)));
            // Neighbour lists are in dense ids too: moved to the new base here, so that
            // requests on it read them at once (the next rebuild recounts them).
            let _lock = account.models.lists_lock.lock();
            let neighbours = account.models.neighbours.load().rebase(&catalogue);
            account.models.neighbours.store(Arc::new(neighbours));
            account.models.models_stale.store(true, Ordering::Release);
        }
        let replaced = account.catalogue.swap(catalogue);
        account.graveyard.bury(replaced);
        account.graveyard.sweep();
    }

    /// The account written to.
    pub fn account(&self) -> &Account {
        self.account
    }
}
