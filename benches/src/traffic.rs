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

use std::collections::{HashMap, VecDeque};
use std::fmt::Write;

use anyhow::{Context, bail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde::Serialize;
use vitrine_engine::experiment::{Experiment, Variant};
use vitrine_engine::zone::Strategy;
use vitrine_testkit::{AccountToml, ConfigToml, ExperimentToml, ZoneToml};

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

/// The admin token of the store the harness spawns (it reads experiment results).
pub const HARNESS_ADMIN_TOKEN: &str = "vitrine-loadtest-admin-token";

/// The config of the store the harness spawns (and the allocations bench opens): the demo's account and zone ids, with strategies a
/// store would put on each page, and loopback feed URLs allowed (the feed comes from
/// the harness).
pub fn store_config(demo_catalogue: bool) -> String {
    store_config_with(demo_catalogue, &[], true)
}

/// [`store_config`] with experiments on its zones, zone analytics on or off, and
/// [`HARNESS_ADMIN_TOKEN`].
pub fn store_config_with(
    demo_catalogue: bool,
    experiments: &[ExperimentToml],
    zone_analytics: bool,
) -> String {
    let mut account = AccountToml::new(ACCESS_KEY, SECRET_KEY, demo_catalogue);
    if !zone_analytics {
        account = account.zone_analytics(false);
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
    ConfigToml::new(&format!(
        "region = \"eu\"\n\n[feeds]\nallow_private_addresses = true\n\n[admin]\ntokens = [\"{HARNESS_ADMIN_TOKEN}\"]"
    ))
    .account(account)
    .to_toml()
}

/// Shoppers that click on what they are shown: for each strategy, the share of product
/// views that go to a product of a zone it filled in the previous answer.
#[derive(Debug)]
pub struct Clicks {
    prefer: Vec<(Strategy, f64)>,
    /// The spawned store's zones and their strategies.
    zones: Vec<(String, Strategy)>,
    /// Experiments of the spawned store: a visitor's variant decides the strategy.
    experiments: Vec<Experiment>,
    /// Product id (as the answers give it) → shelf index.
    index: HashMap<String, usize>,
}

impl Clicks {
    /// Reads `strategy=share,...` for the spawned store with `experiments`.
    pub fn new(
        prefer: &str,
        experiments: &[ExperimentToml],
        shelf: &Shelf,
    ) -> anyhow::Result<Clicks> {
        let strategy = |name: &str, what: &str| {
            Strategy::from_name(name.trim())
                .with_context(|| format!("{what}: unknown strategy {name:?}"))
        };
        let mut shares = Vec::new();
        for part in prefer.split(',').filter(|p| !p.trim().is_empty()) {
            let (name, share) = part
                .split_once('=')
                .with_context(|| format!("--prefer: {part:?} is not strategy=share"))?;
            let share: f64 = share
                .trim()
                .parse()
                .ok()
                .filter(|s: &f64| (0.0..=1.0).contains(s))
                .with_context(|| {
                    format!("--prefer: {name}: the share must be between 0 and 1, got {share:?}")
                })?;
            shares.push((strategy(name, "--prefer")?, share));
        }
        let mut zones = Vec::new();
        for (id, _, name, _, _) in STORE_ZONES {
            zones.push((id.to_owned(), strategy(name, "a store zone")?));
        }
        let mut built = Vec::new();
        for experiment in experiments {
            let mut variants = Vec::new();
            for (name, strategy_name) in &experiment.variants {
                let strategy = strategy(strategy_name, "--experiment")?;
                variants.push(Variant {
                    name: name.clone(),
                    weight: 1,
                    spec: vitrine_testkit::zone(&experiment.zone, strategy, 8),
                });
            }
            built.push(Experiment {
                id: experiment.id.clone(),
                zone: experiment.zone.clone(),
                start: None,
                end: None,
                variants,
            });
        }
        let index = shelf
            .products
            .iter()
            .enumerate()
            .filter_map(|(i, quoted)| {
                serde_json::from_str::<String>(quoted)
                    .ok()
                    .map(|id| (id, i))
            })
            .collect();
        Ok(Clicks {
            prefer: shares,
            zones,
            experiments: built,
            index,
        })
    }

    /// The share of views that go to zone `zone`'s products for `visitor`.
    fn share(&self, zone: &str, visitor: &str) -> f64 {
        let strategy = match self
            .experiments
            .iter()
            .find(|e| e.zone == zone)
            .and_then(|e| e.assign(visitor))
        {
            Some(variant) => variant.spec.strategy,
            None => self.zones.iter().find(|(z, _)| z == zone).map(|(_, s)| *s),
        };
        strategy
            .and_then(|s| self.prefer.iter().find(|(p, _)| *p == s))
            .map_or(0.0, |(_, share)| *share)
    }

    /// The products of each zone of an answer, as shelf indexes.
    fn shown(&self, response: &[u8]) -> Vec<(String, Vec<usize>)> {
        let Ok(answer) = serde_json::from_slice::<serde_json::Value>(response) else {
            return Vec::new();
        };
        let Some(zones) = answer["zones"].as_object() else {
            return Vec::new();
        };
        zones
            .iter()
            .map(|(zone, content)| {
                let items = content["items"]
                    .as_array()
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|i| i["Id"].as_str())
                            .filter_map(|id| self.index.get(id).copied())
                            .collect()
                    })
                    .unwrap_or_default();
                (zone.clone(), items)
            })
            .collect()
    }
}

/// The page types a session visits, with the zones each asks for.
#[derive(Debug, Clone, Serialize)]
pub struct ZoneMap {
    pub homepage: Vec<String>,
    pub category_listing_page: Vec<String>,
    pub search_results: Vec<String>,
    pub product_page: Vec<String>,
    pub basket_page: Vec<String>,
    pub order_complete_page: Vec<String>,
}

impl ZoneMap {
    /// Parses `page_type=ZONE+ZONE;page_type=ZONE...` over the defaults: the zone ids of
    /// the embedded demo (and of the store `--spawn` provisions).
    pub fn parse(spec: Option<&str>) -> anyhow::Result<ZoneMap> {
        let mut map = ZoneMap::default();
        let Some(spec) = spec else {
            return Ok(map);
        };
        for part in spec.split(';').filter(|p| !p.trim().is_empty()) {
            let (page, zones) = part
                .split_once('=')
                .with_context(|| format!("--zones: {part:?} is not page_type=ZONE+ZONE"))?;
            let zones: Vec<String> = zones
                .split('+')
                .map(str::trim)
                .filter(|z| !z.is_empty())
                .map(str::to_owned)
                .collect();
            let slot = match page.trim() {
                "homepage" => &mut map.homepage,
                "category_listing_page" => &mut map.category_listing_page,
                "search_results" => &mut map.search_results,
                "product_page" => &mut map.product_page,
                "basket_page" => &mut map.basket_page,
                "order_complete_page" => &mut map.order_complete_page,
                other => bail!(
                    "--zones: unknown page type {other:?}; use homepage, category_listing_page, \
                     search_results, product_page, basket_page or order_complete_page"
                ),
            };
            *slot = zones;
        }
        Ok(map)
    }
}

impl Default for ZoneMap {
    fn default() -> ZoneMap {
        let zones = |ids: &[&str]| ids.iter().map(|z| (*z).to_owned()).collect();
        ZoneMap {
            homepage: zones(&["HP-01"]),
            category_listing_page: zones(&["CP-01"]),
            search_results: zones(&["SR-01"]),
            product_page: zones(&["PP-01", "PP-02"]),
            basket_page: zones(&["BP-01"]),
            order_complete_page: zones(&["OC-01"]),
        }
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Landing {
    Home,
    Category(usize),
    Search,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Page {
    Landing(Landing),
    Product(usize),
    Basket(Vec<usize>),
    OrderComplete(Vec<usize>),
}

#[derive(Debug, Clone, Copy)]
struct Identity {
    number: u64,
    b2b: bool,
}

/// One simulated shopper after another on one connection.
#[derive(Debug)]
pub struct Shopper {
    rng: SmallRng,
    run: u64,
    worker: usize,
    orders: u64,
    plan: VecDeque<Page>,
    visitor: u64,
    session: Option<String>,
    usd: bool,
    identity: Option<Identity>,
    details_due: bool,
    last_product: Option<usize>,
    /// Sessions started.
    sessions: u64,
    /// With [`Clicks`]: each zone's products in the previous answer.
    shown: Vec<(String, Vec<usize>)>,
    /// With [`Clicks`]: the products this session viewed, in order.
    viewed: Vec<usize>,
}

impl Shopper {
    /// `run` makes order ids unique across runs against the same server.
    pub fn new(seed: u64, run: u64, worker: usize) -> Shopper {
        Shopper {
            rng: SmallRng::seed_from_u64(
                seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            run,
            worker,
            orders: 0,
            plan: VecDeque::new(),
            visitor: 0,
            session: None,
            usd: false,
            identity: None,
            details_due: false,
            last_product: None,
            sessions: 0,
            shown: Vec::new(),
            viewed: Vec::new(),
        }
    }

    /// The number of the visitor whose session this is (`lt-<number>`).
    pub fn visitor(&self) -> u64 {
        self.visitor
    }

    /// Sessions this shopper has finished (every request of them sent).
    pub fn sessions_finished(&self) -> u64 {
        self.sessions - u64::from(!self.plan.is_empty())
    }

    /// With [`Clicks`]: a product of the previous answer to view instead of the planned
    /// one, by the preference for the strategy of the zone that showed it.
    fn click(&mut self, clicks: &Clicks) -> Option<usize> {
        let visitor = format!("lt-{}", self.visitor);
        for (zone, items) in &self.shown {
            let share = clicks.share(zone, &visitor);
            if !items.is_empty() && share > 0.0 && self.rng.random_bool(share) {
                return items.get(self.rng.random_range(0..items.len())).copied();
            }
        }
        None
    }

    fn start_session(&mut self, shelf: &Shelf, mix: &Mix) {
        self.sessions += 1;
        self.shown.clear();
        self.viewed.clear();
        self.visitor = self.rng.random_range(0..mix.visitors);
        self.session = None;
        self.usd = self.rng.random_bool(mix.second_currency);
        self.details_due = self.rng.random_bool(mix.details);
        let orders = self.rng.random_bool(mix.basket) && self.rng.random_bool(mix.order);
        // An order needs a customer identifier; so do customer details.
        self.identity = (self.details_due || orders).then(|| Identity {
            number: self.visitor,
            b2b: self.rng.random_bool(mix.b2b),
        });
        let landing = match self.rng.random_range(0..10) {
            0..=5 => Landing::Home,
            6..=8 if !shelf.categories.is_empty() => {
                Landing::Category(self.rng.random_range(0..shelf.categories.len()))
            }
            _ => Landing::Search,
        };
        self.plan.push_back(Page::Landing(landing));
        let views = self.rng.random_range(mix.browse_min..=mix.browse_max);
        let mut viewed = Vec::with_capacity(views as usize);
        let mut previous: Option<usize> = None;
        for _ in 0..views {
            let product = match previous {
                Some(p) if self.rng.random_bool(mix.related) => {
                    (p + self.rng.random_range(1..=8)) % shelf.len()
                }
                _ => shelf.popular(&mut self.rng),
            };
            previous = Some(product);
            viewed.push(product);
            self.plan.push_back(Page::Product(product));
        }
        let basket = orders || self.rng.random_bool(mix.basket);
        if basket {
            let lines = self.rng.random_range(1..=3.min(viewed.len()));
            let items: Vec<usize> = viewed[viewed.len() - lines..].to_vec();
            self.plan.push_back(Page::Basket(items.clone()));
            if orders {
                self.plan.push_back(Page::OrderComplete(items));
            }
        }
    }

    /// The body of the next request, starting a new session when the last one ended.
    pub fn next_request(
        &mut self,
        shelf: &Shelf,
        mix: &Mix,
        zones: &ZoneMap,
        credentials: &Credentials,
        clicks: Option<&Clicks>,
    ) -> Vec<u8> {
        if self.plan.is_empty() {
            self.start_session(shelf, mix);
        }
        let mut page = self
            .plan
            .pop_front()
            .unwrap_or(Page::Landing(Landing::Home));
        if let Some(clicks) = clicks {
            self.follow_clicks(&mut page, clicks);
        }
        let mut out = String::with_capacity(640);
        out.push_str(&credentials.prefix);
        let _ = write!(
            out,
            r#""ip":"198.51.{}.{}","visitorId":"lt-{}","#,
            (self.visitor >> 8) % 256,
            self.visitor % 256,
            self.visitor
        );
        if let Some(session) = &self.session {
            let _ = write!(out, r#""sessionId":"{session}","#);
        }
        if self.usd {
            out.push_str(r#""currency":"USD","#);
        }
        let path = match &page {
            Page::Landing(Landing::Home) => "/".to_owned(),
            Page::Landing(Landing::Category(c)) => format!("/c/{c}"),
            Page::Landing(Landing::Search) => "/search?q=lamp".to_owned(),
            Page::Product(p) => format!("/p/{p}"),
            Page::Basket(_) => "/basket".to_owned(),
            Page::OrderComplete(_) => "/checkout/complete".to_owned(),
        };
        let _ = write!(
            out,
            r#""currentUrl":"https://shop.example{path}","events":["#
        );
        let page_zones = match &page {
            Page::Landing(Landing::Home) => {
                out.push_str(r#"{"name":"page_view","data":{"page_type":"homepage"}}"#);
                &zones.homepage
            }
            Page::Landing(Landing::Category(c)) => {
                let _ = write!(
                    out,
                    r#"{{"name":"page_view","data":{{"page_type":"category_listing_page","category_id":{}}}}}"#,
                    shelf.categories[*c]
                );
                &zones.category_listing_page
            }
            Page::Landing(Landing::Search) => {
                out.push_str(r#"{"name":"page_view","data":{"page_type":"search_results"}}"#);
                &zones.search_results
            }
            Page::Product(p) => {
                let id = &shelf.products[*p];
                let _ = write!(
                    out,
                    r#"{{"name":"page_view","data":{{"page_type":"product_page","product_id":{id}}}}},{{"name":"product_view","data":{{"id":{id}}}}}"#
                );
                self.last_product = Some(*p);
                &zones.product_page
            }
            Page::Basket(items) => {
                out.push_str(r#"{"name":"page_view","data":{"page_type":"basket_page"}},{"name":"set_basket","data":{"items":"#);
                write_lines(&mut out, shelf, items);
                out.push_str("}}");
                &zones.basket_page
            }
            Page::OrderComplete(items) => {
                self.orders += 1;
                let _ = write!(
                    out,
                    r#"{{"name":"page_view","data":{{"page_type":"order_complete_page"}}}},{{"name":"order","data":{{"orderid":"lt-{}-{}-{}","items":"#,
                    self.run, self.worker, self.orders
                );
                write_lines(&mut out, shelf, items);
                let total: f64 = items.iter().map(|&p| unit_price(p)).sum();
                let _ = write!(out, r#","ordertotal":{total:.2}"#);
                if let Some(identity) = self.identity {
                    write_identity(&mut out, identity);
                }
                out.push_str(r#"}},{"name":"set_basket","data":{"items":[]}}"#);
                &zones.order_complete_page
            }
        };
        if self.details_due
            && let Some(identity) = self.identity
        {
            self.details_due = false;
            out.push_str(r#",{"name":"customer_details","data":{"firstname":"Alex","lastname":"Shopper","title":"Mx""#);
            write_identity(&mut out, identity);
            if identity.b2b {
                out.push_str(r#","group_id":"trade""#);
            }
            out.push_str("}}");
        }
        out.push_str(r#"],"zones":["#);
        for (i, zone) in page_zones.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::Value::String(zone.clone()).to_string());
        }
        out.push_str("]}");
        out.into_bytes()
    }

    /// With [`Clicks`]: a product page may become a click on a shown product; the
    /// basket (and the order of it) holds the last products the session viewed.
    fn follow_clicks(&mut self, page: &mut Page, clicks: &Clicks) {
        match page {
            Page::Product(p) => {
                if let Some(clicked) = self.click(clicks) {
                    *p = clicked;
                }
                self.viewed.push(*p);
            }
            Page::Basket(items) if !self.viewed.is_empty() => {
                let mut lines: Vec<usize> = Vec::with_capacity(items.len());
                for p in self.viewed.iter().rev() {
                    if lines.len() == items.len() {
                        break;
                    }
                    if !lines.contains(p) {
                        lines.push(*p);
                    }
                }
                lines.reverse();
                if let Some(Page::OrderComplete(ordered)) = self.plan.front_mut() {
                    ordered.clone_from(&lines);
                }
                *items = lines;
            }
            _ => {}
        }
    }

    /// Keeps the session id of the server's answer for the session's next requests
    /// (and, with [`Clicks`], what its zones showed).
    pub fn observe(&mut self, response: &[u8], clicks: Option<&Clicks>) {
        if let Some(clicks) = clicks {
            self.shown = clicks.shown(response);
        }
        if self.session.is_some() {
            return;
        }
        self.session = session_id(response).map(str::to_owned);
    }
}

fn unit_price(product: usize) -> f64 {
    5.0 + (product % 200) as f64 * 0.5
}

fn write_lines(out: &mut String, shelf: &Shelf, items: &[usize]) {
    out.push('[');
    for (i, &p) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"id":{},"qty":{},"unitprice":{:.2}}}"#,
            shelf.products[p],
            1 + p % 2,
            unit_price(p)
        );
    }
    out.push(']');
}

fn write_identity(out: &mut String, identity: Identity) {
    let n = identity.number;
    let _ = write!(out, r#","userid":"u{n}","email":"shopper{n}@example.com""#);
    if identity.b2b {
        let _ = write!(out, r#","accid":"acc-{}""#, n % 50);
    }
}

/// The `sessionId` near the start of a server-side answer, if it is a plain token.
fn session_id(response: &[u8]) -> Option<&str> {
    let head = &response[..response.len().min(512)];
    let key = br#""sessionId":""#;
    let start = head.windows(key.len()).position(|w| w == key)? + key.len();
    let len = head[start..].iter().position(|&b| b == b'"')?;
    let id = std::str::from_utf8(&head[start..start + len]).ok()?;
    id.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        .then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn mix() -> Mix {
        Mix {
            visitors: 1000,
            browse_min: 3,
            browse_max: 8,
            related: 0.4,
            basket: 0.5,
            order: 0.5,
            details: 0.3,
            second_currency: 0.2,
            b2b: 0.3,
            zipf: 1.0,
        }
    }

    fn shelf() -> Shelf {
        Shelf::new(
            (0..500).map(|i| format!("P{i:05}")).collect(),
            (0..20).map(|c| format!("c{c}")).collect(),
            1.0,
        )
        .unwrap()
    }

    #[test]
    fn clicking_shoppers_view_what_the_preferred_zone_showed() {
        let shelf = shelf();
        let credentials = Credentials::new("k", "s");
        let zones = ZoneMap::default();
        let mix = Mix {
            basket: 1.0,
            order: 1.0,
            ..mix()
        };
        // Every product view goes to a product PP-01 (viewed_together) showed.
        let clicks = Clicks::new("viewed_together=1", &[], &shelf).unwrap();
        assert!(Clicks::new("nope=1", &[], &shelf).is_err());
        assert!(Clicks::new("trending=2", &[], &shelf).is_err());
        let answer = br#"{"visitorId":"v","sessionId":"s","errors":[],"zones":{"PP-01":{"items":[{"Id":"P00400"},{"Id":"P00401"}]},"PP-02":{"items":[{"Id":"P00007"}]}}}"#;
        let mut shopper = Shopper::new(3, 1, 0);
        let mut viewed = Vec::new();
        let mut basket = None;
        for _ in 0..40 {
            let body = shopper.next_request(&shelf, &mix, &zones, &credentials, Some(&clicks));
            let request: Value = serde_json::from_slice(&body).unwrap();
            for event in request["events"].as_array().unwrap() {
                match event["name"].as_str().unwrap() {
                    "product_view" => viewed.push(event["data"]["id"].as_str().unwrap().to_owned()),
                    "set_basket" if basket.is_none() => {
                        basket = Some(event["data"]["items"].clone())
                    }
                    _ => {}
                }
            }
            shopper.observe(answer, Some(&clicks));
        }
        // The first view of a session follows a landing page's answer: all clicks.
        assert!(!viewed.is_empty());
        assert!(
            viewed.iter().all(|id| id == "P00400" || id == "P00401"),
            "{viewed:?}"
        );
        // The basket holds products the session viewed.
        let basket = basket.unwrap();
        for line in basket.as_array().unwrap() {
            assert!(
                viewed.contains(&line["id"].as_str().unwrap().to_owned()),
                "{basket}"
            );
        }
    }

    #[test]
    fn sessions_land_browse_3_to_8_products_and_order_with_unique_ids() {
        let (shelf, mix, zones) = (shelf(), mix(), ZoneMap::default());
        let credentials = Credentials::new("key", "secret \"quoted\"");
        let mut shopper = Shopper::new(1, 99, 3);
        let mut order_ids = std::collections::HashSet::new();
        let mut sessions = 0;
        let mut views_in_session = 0;
        let mut kinds = std::collections::HashSet::new();
        for _ in 0..5000 {
            let new_session = shopper.plan.is_empty();
            let body = shopper.next_request(&shelf, &mix, &zones, &credentials, None);
            let request: Value = serde_json::from_slice(&body).expect("valid JSON");
            assert_eq!(request["secretKey"], "secret \"quoted\"");
            let events = request["events"].as_array().unwrap();
            let page_type = events[0]["data"]["page_type"].as_str().unwrap();
            if new_session {
                if sessions > 0 {
                    assert!((3..=8).contains(&views_in_session), "{views_in_session}");
                }
                sessions += 1;
                views_in_session = 0;
                assert!(
                    ["homepage", "category_listing_page", "search_results"].contains(&page_type)
                );
                assert!(request.get("sessionId").is_none());
                shopper.observe(br#"{"visitorId":"x","sessionId":"s-1","errors":[]}"#, None);
            } else {
                assert_eq!(request["sessionId"], "s-1");
            }
            let zones_asked: Vec<&str> = request["zones"]
                .as_array()
                .unwrap()
                .iter()
                .map(|z| z.as_str().unwrap())
                .collect();
            for event in events {
                kinds.insert(event["name"].as_str().unwrap().to_owned());
            }
            match page_type {
                "product_page" => {
                    views_in_session += 1;
                    assert_eq!(events[1]["name"], "product_view");
                    assert_eq!(events[0]["data"]["product_id"], events[1]["data"]["id"]);
                    assert_eq!(zones_asked, ["PP-01", "PP-02"]);
                }
                "order_complete_page" => {
                    let order = &events[1]["data"];
                    assert!(order_ids.insert(order["orderid"].as_str().unwrap().to_owned()));
                    assert!(order["email"].is_string() && order["userid"].is_string());
                    assert_eq!(zones_asked, ["OC-01"]);
                }
                "basket_page" => assert_eq!(events[1]["name"], "set_basket"),
                _ => {}
            }
        }
        assert!(sessions > 300, "{sessions}");
        assert!(order_ids.len() > 50, "{}", order_ids.len());
        for kind in [
            "page_view",
            "product_view",
            "set_basket",
            "order",
            "customer_details",
        ] {
            assert!(kinds.contains(kind), "{kind} never sent");
        }
    }

    #[test]
    fn popularity_is_skewed_towards_the_first_products() {
        let shelf = shelf();
        let mut rng = SmallRng::seed_from_u64(5);
        let draws: Vec<usize> = (0..20_000).map(|_| shelf.popular(&mut rng)).collect();
        let top10 = draws.iter().filter(|&&p| p < 10).count();
        let last10 = draws.iter().filter(|&&p| p >= 490).count();
        assert!(top10 > 20 * last10.max(1), "{top10} vs {last10}");
        assert!(draws.iter().all(|&p| p < 500));
    }

    #[test]
    fn zone_map_overrides_named_page_types_and_rejects_unknown_ones() {
        let map = ZoneMap::parse(Some("product_page=A+B;homepage=H")).unwrap();
        assert_eq!(map.product_page, ["A", "B"]);
        assert_eq!(map.homepage, ["H"]);
        assert_eq!(map.basket_page, ["BP-01"]);
        let error = ZoneMap::parse(Some("landing=X")).unwrap_err().to_string();
        assert!(error.contains("unknown page type \"landing\""), "{error}");
    }

    #[test]
    fn session_ids_are_read_from_the_answer_head_only_when_plain() {
        assert_eq!(
            session_id(br#"{"visitorId":"v","sessionId":"abc_-9","errors":[]}"#),
            Some("abc_-9")
        );
        assert_eq!(session_id(br#"{"sessionId":"a\"b"}"#), None);
        assert_eq!(session_id(br#"{"errors":["x"]}"#), None);
    }
}
