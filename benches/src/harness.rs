//! The store the load harness spawns, opened in-process, and the harness's shoppers
//! sending their bodies straight to the `/api/serverside` handler (the `allocations` and
//! `pages` benches).

#![expect(
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "a bench fails loudly where its setup does not hold; shopper indexes are taken modulo their number"
)]

use vitrine_http::config::{self, Overrides};
use vitrine_http::state::AppState;
use vitrine_ingest::jobs::FeedStatus;

use crate::deltas::{self, Categories, delta_body};
use crate::feedgen::{CATEGORIES, generate_feed, product_id};
use crate::traffic::{
    ACCESS_KEY, Credentials, Mix, SECRET_KEY, Shelf, Shopper, StoreOptions, ZoneMap,
    store_config_with,
};

/// Shoppers sending requests in turn (as the harness's connections do).
pub const SHOPPERS: usize = 32;

/// The harness's store with `products` products of the synthetic feed, in a temporary
/// directory, and [`SHOPPERS`] shoppers of the default mix.
#[derive(Debug)]
pub struct HarnessStore {
    /// The server's state.
    pub state: AppState,
    shelf: Shelf,
    mix: Mix,
    zones: ZoneMap,
    credentials: Credentials,
    shoppers: Vec<Shopper>,
    _dir: tempfile::TempDir,
}

impl HarnessStore {
    /// Opens the store and loads the synthetic feed through the server's pipeline.
    /// `VITRINE_BENCH_ZONE_ANALYTICS=off` opens it with zone analytics off (to measure
    /// what recording impressions costs), `VITRINE_BENCH_SELF_EVALUATION=off` with the
    /// zones' self-evaluation off. `VITRINE_BENCH_CAMPAIGNS=N` gives every product zone
    /// a list of N campaigns ([`campaign_lists`]); `VITRINE_BENCH_EXPERIMENTS=on` puts
    /// every product zone in an experiment ([`experiments`]). `VITRINE_BENCH_ZONE_CACHE_MIB=N` bounds
    /// the account's zone cache (0: off).
    pub fn open(products: usize) -> HarnessStore {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("vitrine.toml");
        let analytics = std::env::var("VITRINE_BENCH_ZONE_ANALYTICS").map_or(true, |v| v != "off");
        let judged = std::env::var("VITRINE_BENCH_SELF_EVALUATION").map_or(true, |v| v != "off");
        let options = StoreOptions {
            zone_analytics: analytics,
            self_evaluation: judged,
            ..StoreOptions::default()
        };
        std::fs::write(&path, store_config_with(&options)).expect("the config written");
        let overrides = Overrides {
            listen: None,
            data_dir: Some(dir.path().join("data")),
        };
        let config = config::load_file(&path, &overrides).expect("the harness's config");
        let state = AppState::open(config).expect("the store opens");
        // As the server does once the store is open.
        vitrine_http::api::serverside::prepare();
        let entry = state.account(ACCESS_KEY).expect("the harness's account");
        let mut feed = generate_feed(products, 42);
        let status = vitrine_ingest::runner::apply(&entry.jobs, &mut feed, state.pool(), &|_| {});
        assert!(matches!(status, FeedStatus::Complete { .. }), "{status:?}");
        if let Ok(mib) = std::env::var("VITRINE_BENCH_ZONE_CACHE_MIB") {
            let mib: usize = mib.parse().expect("VITRINE_BENCH_ZONE_CACHE_MIB: a number");
            entry.account.set_zone_cache_bytes(mib << 20);
        }
        let campaigns = crate::env_count("VITRINE_BENCH_CAMPAIGNS", 0);
        if campaigns > 0 {
            campaign_lists(&entry.jobs, campaigns);
        }
        if std::env::var("VITRINE_BENCH_EXPERIMENTS").is_ok_and(|v| v == "on") {
            experiments(&entry.jobs);
        }
        let mix = Mix::default();
        let shelf = Shelf::new(
            (0..products).map(product_id).collect(),
            (0..CATEGORIES).map(|c| format!("c{c}")).collect(),
            mix.zipf,
        )
        .expect("a shelf of products");
        HarnessStore {
            state,
            shelf,
            mix,
            zones: ZoneMap::default(),
            credentials: Credentials::new(ACCESS_KEY, SECRET_KEY),
            shoppers: (0..SHOPPERS).map(|w| Shopper::new(1, 1, w)).collect(),
            _dir: dir,
        }
    }

    /// The next request body of shopper `n` (modulo [`SHOPPERS`]).
    pub fn next_body(&mut self, n: usize) -> Vec<u8> {
        self.shoppers[n % SHOPPERS].next_request(
            &self.shelf,
            &self.mix,
            &self.zones,
            &self.credentials,
            None,
        )
    }

    /// Hands shopper `n` the answer to its last request (its session id).
    pub fn observe(&mut self, n: usize, answer: &[u8]) {
        self.shoppers[n % SHOPPERS].observe(answer, None);
    }

    /// Submits a delta replacing `size` products of the catalogue (a new title and
    /// price; which ones moves with `round`) through the account's log and worker, as
    /// `POST /api/delta` does, and waits until it is applied: the next requests are
    /// served from a new catalogue version.
    pub fn apply_delta(&self, size: usize, round: usize) {
        let entry = self
            .state
            .account(ACCESS_KEY)
            .expect("the harness's account");
        let body = delta_body(self.shelf.len(), size, round, Categories::Kept);
        let token = deltas::submit(&entry.jobs, &body);
        deltas::wait_applied(&entry.jobs, &token);
    }

    /// What self-tuning chose by now: the co-view lists' setting and `personalized`'s
    /// recipe, as a line for a bench's output.
    pub fn tuning_summary(&self) -> String {
        let Some(entry) = self.state.account(ACCESS_KEY) else {
            return String::from("no account");
        };
        let lists = entry.account.model_tuning();
        let recipe = entry.account.recipe_tuning();
        format!(
            "co-view lists {:?} ({} switches); recipe {:?} ({} switches, {} trials dropped)",
            lists.active,
            lists.switches.len(),
            recipe.active,
            recipe.switches.len(),
            recipe.dropped,
        )
    }

    /// One models round of the account, as the server runs one every second
    /// ([`vitrine_http::state::AccountEntry::models_round`]).
    pub fn rebuild_models(&self) {
        if let Some(entry) = self.state.account(ACCESS_KEY) {
            self.state.pool().install(|| entry.models_round());
        }
    }
}

/// Gives every product zone of the store a list of `n` campaigns through the admin
/// API's change path: the first `n - 1` each for a segment of three conditions that the
/// harness's shoppers meet but for the last (so every request judges them all), then one
/// for everyone whose custom content is the zone's own strategy and fallbacks through
/// five filters that nearly every product passes (so the zone shows about what it shows
/// without campaigns, filtered while it is filled).
pub fn campaign_lists(jobs: &vitrine_ingest::jobs::AccountJobs, n: usize) {
    use serde_json::json;
    use vitrine_ingest::jobs::{CampaignChange, ChangeRequest};
    let segments = json!({"segments": [{"id": "big-spenders", "rule": {"all": [
        {"sessions": {"min": 1}},
        {"sessionPageViews": {"min": 0}},
        {"basketValue": {"min": 1e9}},
    ]}}]});
    fn change(jobs: &vitrine_ingest::jobs::AccountJobs, change: CampaignChange<'_>) {
        jobs.change_campaigns(ChangeRequest {
            change,
            if_match: None,
            author: "bench",
            now: 0,
        })
        .expect("the campaigns are accepted");
    }
    change(jobs, CampaignChange::Segments(&segments));
    let filters = json!([
        {"price": {"min": 0.01}},
        {"price": {"max": 1e9}},
        {"categoryNotIn": ["no-such-category"]},
        {"brandNotIn": ["no-such-brand"]},
        {"searchTag": ["no-such-tag"]},
    ]);
    for (zone, _, strategy, fallback, _) in crate::traffic::STORE_ZONES {
        let mut list: Vec<serde_json::Value> = (1..n)
            .map(|i| {
                json!({"id": format!("segment-{i}"), "segment": "big-spenders",
                    "content": {"type": "custom", "source": {"strategy": strategy, "fallback": fallback},
                        "filters": filters}})
            })
            .collect();
        // The segments' campaigns are never shown (their fifth filter would keep
        // nothing); the one for everyone has a fifth that every product passes.
        let mut kept = filters.clone();
        if let Some(last) = kept.as_array_mut().and_then(|f| f.last_mut()) {
            *last = json!({"brandNotIn": ["no-such-brand-either"]});
        }
        list.push(json!({"id": "everyone",
            "content": {"type": "custom", "source": {"strategy": strategy, "fallback": fallback},
                "filters": kept}}));
        let body = json!({"campaigns": list});
        change(jobs, CampaignChange::Zone { zone, body: &body });
    }
}

/// Starts an experiment of the console on every product zone: two variants of the
/// zone's own strategy and fallbacks, half each, so that the zone shows what it shows
/// without one and only the experiment's cost is added (assignment, the set's load,
/// the variant's fill without the zone cache).
pub fn experiments(jobs: &vitrine_ingest::jobs::AccountJobs) {
    use serde_json::json;
    use vitrine_ingest::jobs::{CampaignChange, ChangeRequest, ExperimentAction};
    let change = |id: &str, action: ExperimentAction<'_>| {
        jobs.change_campaigns(ChangeRequest {
            change: CampaignChange::Experiment { id, action },
            if_match: None,
            author: "bench",
            now: 0,
        })
        .expect("the experiment is accepted");
    };
    for (zone, _, strategy, fallback, _) in crate::traffic::STORE_ZONES {
        let variant = |name: &str| {
            json!({"name": name, "share": 50, "kind": "strategy", "strategy": strategy,
                "fallback": fallback})
        };
        let body = json!({"zone": zone, "variants": [variant("A"), variant("B")]});
        let id = format!("bench-{zone}");
        change(&id, ExperimentAction::Put(&body));
        change(&id, ExperimentAction::Start);
    }
}
