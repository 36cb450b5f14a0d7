//! The simulated shoppers of `vitrine-loadtest run`: sessions of page requests with the
//! events a store's server sends and the zones of each page type.
//!
//! A session lands (homepage, a category page or search results), browses 3–8 products
//! (drawn by Zipf popularity, or near the previous product so that products are viewed
//! together), sometimes sets a basket, sometimes orders it (unique order ids), sometimes
//! sends customer details. Every request carries the visitor id, the session id the
//! server handed out, and the zones configured for its page type. With [`Clicks`], a
//! shopper also clicks on what the previous answer showed: a share of product views,
//! per strategy of the zone that showed the products, goes to one of them, and the
//! basket holds the products the session actually viewed.

#![expect(
    clippy::indexing_slicing,
    reason = "a measuring tool: shelf indexes are bounded by construction; a panic aborts one run"
)]

mod clicks;
mod shopper;

pub use clicks::{Clicks, ZoneMap};
pub use shopper::Shopper;

use std::collections::{HashMap, VecDeque};
use std::fmt::Write;

use anyhow::{Context, bail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde::Serialize;
use vitrine_engine::experiment::{Experiment, Variant};
use vitrine_engine::zone::Strategy;
use vitrine_snapshots::threads::Layout;
use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, ExperimentToml, ZoneToml};

/// The account of a spawned server: the demo's keys, so the defaults of `--access-key`
/// and `--secret-key` fit both the demo and a spawned store.
pub const ACCESS_KEY: &str = vitrine_testkit::DEMO_KEY;
pub const SECRET_KEY: &str = vitrine_testkit::DEMO_SECRET;

/// The zones of the store the harness spawns: id, title, strategy, fallback, count.
pub const STORE_ZONES: [(&str, &str, &str, &[&str], usize); 7] = [
    (
        "HP-01",
        "Recommended for you",
        "personalized",
        &["trending"],
        8,
    ),
    (
        "PP-01",
        "Customers also viewed",
        "viewed_together",
        &["similar", "trending"],
        8,
    ),
    (
        "PP-02",
        "Recently viewed",
        "recently_viewed",
        &["trending"],
        6,
    ),
    (
        "CP-01",
        "Top in this category",
        "category_top",
        &["trending"],
        8,
    ),
    ("SR-01", "On offer", "on_offer", &["trending"], 8),
    (
        "BP-01",
        "Complete your basket",
        "basket_cross_sell",
        &["top_sellers", "trending"],
        6,
    ),
    (
        "OC-01",
        "Bought together",
        "bought_together",
        &["personalized", "top_sellers"],
        6,
    ),
];

/// The store origin the harness's browser requests come from; the store it spawns
/// allows it (`clientside.allowed_origins`), with limits per client address and per
/// visitor that a load from one machine does not reach.
pub const HARNESS_ORIGIN: &str = "https://shop.example";

/// The admin token of the store the harness spawns (it reads experiment results).
pub const HARNESS_ADMIN_TOKEN: &str = "vitrine-loadtest-admin-token";

/// The config of the store the harness spawns (and the allocations bench opens): the demo's account and zone ids, with strategies a
/// store would put on each page, and loopback feed URLs allowed (the feed comes from
/// the harness).
pub fn store_config(catalogue: CatalogueStart) -> String {
    store_config_with(&StoreOptions {
        catalogue,
        ..StoreOptions::default()
    })
}

/// What the store the harness spawns has beyond its zones ([`store_config_with`]).
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions<'a> {
    /// What its catalogue starts as.
    pub catalogue: CatalogueStart,
    /// Experiments on its zones.
    pub experiments: &'a [ExperimentToml],
    /// Whether it keeps zone analytics.
    pub zone_analytics: bool,
    /// Whether it judges its zones on sampled requests.
    pub self_evaluation: bool,
    /// Where its threads run (`cpu_layout`).
    pub cpu_layout: Layout,
}

impl Default for StoreOptions<'_> {
    /// An empty catalogue, no experiment, zone analytics and self-evaluation on.
    fn default() -> Self {
        StoreOptions {
            catalogue: CatalogueStart::Empty,
            experiments: &[],
            zone_analytics: true,
            self_evaluation: true,
            cpu_layout: Layout::Shared,
        }
    }
}

/// [`store_config`] with `options`, and [`HARNESS_ADMIN_TOKEN`].
pub fn store_config_with(options: &StoreOptions<'_>) -> String {
    let StoreOptions {
        catalogue,
        experiments,
        zone_analytics,
        self_evaluation,
        cpu_layout,
    } = *options;
    let mut account = AccountToml::new(ACCESS_KEY, SECRET_KEY, catalogue)
        .clientside("allowed_origins", &format!("[\"{HARNESS_ORIGIN}\"]"))
        .clientside("per_ip", "{ per_second = 100000, burst = 1000000 }")
        .clientside("per_visitor", "{ per_second = 100000, burst = 1000000 }");
    if !zone_analytics {
        account = account.without_zone_analytics();
    }
    if !self_evaluation {
        account = account.without_self_evaluation();
    }
    for (id, title, strategy, fallback, count) in STORE_ZONES {
        account = account.zone(
            ZoneToml::new(id, strategy, count)
                .titled(title)
                .fallback(fallback),
        );
    }
    for experiment in experiments {
        account = account.experiment(experiment.clone());
    }
    // Written only when it is not the default, so that builds older than the key read
    // the same file (`scripts/perf-compare`).
    let layout = match cpu_layout {
        Layout::Shared => "",
        Layout::Split => "cpu_layout = \"split\"\n",
    };
    ConfigToml::new(&format!(
        "region = \"eu\"\n{layout}\n[feeds]\nallow_private_addresses = true\n\n[admin]\ntokens = [\"{HARNESS_ADMIN_TOKEN}\"]"
    ))
    .account(account)
    .to_toml()
}

/// What a session does, as shares in [0, 1].
#[derive(Debug, Clone, Serialize)]
pub struct Mix {
    /// Visitors that come and go (a session picks one of them uniformly).
    pub visitors: u64,
    /// Fewest products viewed per session.
    pub browse_min: u32,
    /// Most products viewed per session.
    pub browse_max: u32,
    /// Share of product views near the previous product (viewed together) rather than
    /// drawn by popularity.
    pub related: f64,
    /// Share of sessions that put products in the basket.
    pub basket: f64,
    /// Share of basket sessions that order.
    pub order: f64,
    /// Share of sessions that send customer details on landing.
    pub details: f64,
    /// Share of sessions in the second currency (USD; the rest use the account's default).
    pub second_currency: f64,
    /// Share of identified shoppers that are B2B (an account id and the `trade` group).
    pub b2b: f64,
    /// Zipf exponent of product popularity.
    pub zipf: f64,
}

impl Default for Mix {
    /// The harness's defaults (`vitrine-loadtest run --help`).
    fn default() -> Mix {
        Mix {
            visitors: 50_000,
            browse_min: 3,
            browse_max: 8,
            related: 0.4,
            basket: 0.3,
            order: 0.35,
            details: 0.1,
            second_currency: 0.2,
            b2b: 0.1,
            zipf: 1.0,
        }
    }
}

impl Mix {
    /// Checks every share is in [0, 1] and the ranges are well-formed.
    pub fn check(&self) -> anyhow::Result<()> {
        for (name, share) in [
            ("--related-share", self.related),
            ("--basket-share", self.basket),
            ("--order-share", self.order),
            ("--details-share", self.details),
            ("--usd-share", self.second_currency),
            ("--b2b-share", self.b2b),
        ] {
            if !(0.0..=1.0).contains(&share) {
                bail!("{name} must be between 0 and 1, got {share}");
            }
        }
        if self.visitors == 0 {
            bail!("--visitors must be at least 1");
        }
        if self.browse_min == 0 || self.browse_min > self.browse_max {
            bail!(
                "--browse must be MIN-MAX with 1 <= MIN <= MAX, got {}-{}",
                self.browse_min,
                self.browse_max
            );
        }
        if !self.zipf.is_finite() || self.zipf <= 0.0 {
            bail!("--zipf must be above 0, got {}", self.zipf);
        }
        Ok(())
    }
}

/// The products and categories the shoppers see, ids already JSON-quoted.
#[derive(Debug)]
pub struct Shelf {
    products: Vec<String>,
    categories: Vec<String>,
    popularity: Zipf<f64>,
}

impl Shelf {
    pub fn new(products: Vec<String>, categories: Vec<String>, zipf: f64) -> anyhow::Result<Shelf> {
        if products.is_empty() {
            bail!("no product ids to browse");
        }
        let quote = |ids: Vec<String>| -> Vec<String> {
            ids.into_iter()
                .map(|id| serde_json::Value::String(id).to_string())
                .collect()
        };
        let popularity =
            Zipf::new(products.len() as f64, zipf).map_err(|e| anyhow::anyhow!("--zipf: {e}"))?;
        Ok(Shelf {
            products: quote(products),
            categories: quote(categories),
            popularity,
        })
    }

    pub fn len(&self) -> usize {
        self.products.len()
    }

    /// Whether there are no products (never: [`Shelf::new`] refuses an empty shelf).
    pub fn is_empty(&self) -> bool {
        self.products.is_empty()
    }

    /// A product index by popularity (index 0 the most popular).
    fn popular(&self, rng: &mut SmallRng) -> usize {
        let rank = self.popularity.sample(rng) as usize;
        rank.clamp(1, self.products.len()) - 1
    }
}

/// The fixed part of every request: credentials and client description.
#[derive(Debug)]
pub struct Credentials {
    prefix: String,
}

impl Credentials {
    /// A browser's: no credentials in the body (the access key is in the path), the
    /// user agent and address come from the connection.
    pub fn browser() -> Credentials {
        Credentials {
            prefix: "{".to_owned(),
        }
    }

    pub fn new(access_key: &str, secret_key: &str) -> Credentials {
        let quote = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
        Credentials {
            prefix: format!(
                r#"{{"appId":{},"secretKey":{},"userAgent":"Mozilla/5.0 (X11; Linux x86_64) vitrine-loadtest","#,
                quote(access_key),
                quote(secret_key)
            ),
        }
    }
}

#[cfg(test)]
mod tests;
