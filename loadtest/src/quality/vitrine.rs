//! Vitrine's side of a quality run: a `vitrine` started for the run, the dataset's
//! products submitted as a full feed, the training interactions replayed through
//! `/api/serverside`, then each round's questions asked of every evaluated zone
//! before the round's interactions are sent.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use serde_json::{Value, json};
use vitrine_testkit::{AccountToml, CatalogueStart, ConfigToml, TestServer, ZoneToml};

use super::data::{Dataset, Query, Step};
use crate::eval::{Client, Kind};
use crate::provision::{FeedServer, FeedSubmission};

const ACCESS_KEY: &str = "quality-access-key";
const SECRET_KEY: &str = "quality-secret-key";
/// The spawned server's admin token (for its self-tuning's report).
const ADMIN_TOKEN: &str = "quality-admin-token-0123456789";
/// A product outside the catalogue that the run views to make the models stale while
/// it waits for a rebuild (it can never be recommended).
const TICK_PRODUCT: &str = "quality-tick";

/// The server of a run and its zones (zone id → strategy).
pub(crate) struct Vitrine {
    server: TestServer,
    pub(crate) zones: Vec<(String, String)>,
    client: Client,
    /// Items asked per zone: the run's k plus room for products the visitor has seen.
    count: usize,
}

impl Vitrine {
    /// Starts `binary` with one zone per strategy (each falling back to `trending`, as a
    /// store would configure it) and submits the dataset's products as its catalogue.
    pub(crate) async fn start(
        binary: &Path,
        data: &Dataset,
        strategies: &[String],
        count: usize,
        models: &[(&str, String)],
    ) -> anyhow::Result<Vitrine> {
        let mut account = AccountToml::new(ACCESS_KEY, SECRET_KEY, CatalogueStart::Empty);
        for (key, value) in models {
            account = account.model(key, value);
        }
        let mut zones = Vec::new();
        for spec in strategies {
            let (strategy, settings) = zone_spec(spec)?;
            let id = format!("Q-{}", slug(spec));
            let mut zone = ZoneToml::new(&id, strategy, count).titled(spec);
            if strategy != "trending" {
                zone = zone.fallback(&["trending"]);
            }
            for (key, value) in settings {
                zone = zone.setting(key, value);
            }
            account = account.zone(zone);
            zones.push((id, spec.clone()));
        }
        // The feed comes from this tool's own loopback server.
        let config = ConfigToml::new(&format!(
            "[feeds]\nallow_private_addresses = true\n\n[admin]\ntokens = [\"{ADMIN_TOKEN}\"]"
        ))
        .account(account)
        .to_toml();
        let server = TestServer::start(binary, Some(&config))?;
        let authority = server.addr().to_string();
        let feed = FeedServer::start(Bytes::from(feed(data)))?;
        FeedSubmission {
            authority: authority.clone(),
            access_key: ACCESS_KEY.to_owned(),
            secret_key: SECRET_KEY.to_owned(),
            url: feed.url.clone(),
        }
        .run()
        .await
        .context("submitting the dataset's products")?;
        drop(feed);
        let client = Client::connect(&format!("http://{authority}")).await?;
        Ok(Vitrine {
            server,
            zones,
            client,
            count,
        })
    }

    /// The server's log so far.
    pub(crate) fn log(&self) -> String {
        self.server.log()
    }

    fn body(visitor: &str, events: Value) -> Value {
        json!({
            "appId": ACCESS_KEY,
            "secretKey": SECRET_KEY,
            "currentUrl": "https://shop.example/",
            "userAgent": "vitrine-loadtest quality",
            "ip": "198.51.100.3",
            "visitorId": format!("q-{visitor}"),
            "events": events,
        })
    }

    /// Sends one interaction of `visitor`, as a store's page would report it: in the
    /// session of their previous request while it is less than [`SESSION_GAP_MILLIS`]
    /// before this one (the file's times), as a store's client sends back the session
    /// id it was given.
    pub(crate) async fn send(
        &mut self,
        data: &Dataset,
        visitor: u32,
        step: &Step,
        shopper: &mut Shopper,
    ) -> anyhow::Result<()> {
        let Shopper { basket, orders, .. } = shopper;
        let name = &data.visitors[visitor as usize];
        let id = &data.items[step.item as usize];
        let events = match &step.kind {
            Kind::View => json!([
                {"name": "page_view", "data": {"page_type": "product_page", "product_id": id}},
                {"name": "product_view", "data": {"id": id}}
            ]),
            Kind::Rate(rating) => json!([
                {"name": "page_view", "data": {"page_type": "product_page", "product_id": id}},
                {"name": "product_view", "data": {"id": id}},
                {"name": "product_rate", "data": {"id": id, "rating": rating}}
            ]),
            Kind::Basket => {
                if !basket.contains(&step.item) {
                    basket.push(step.item);
                }
                let items: Vec<Value> = basket
                    .iter()
                    .map(|i| json!({"id": data.items[*i as usize], "qty": 1, "unitprice": 1.0}))
                    .collect();
                json!([{"name": "set_basket", "data": {"items": items}}])
            }
            Kind::Order => {
                // The basket built so far is ordered with this product.
                *orders += 1;
                if !basket.contains(&step.item) {
                    basket.push(step.item);
                }
                let items: Vec<Value> = basket
                    .drain(..)
                    .map(|i| json!({"id": data.items[i as usize], "qty": 1, "unitprice": 1.0}))
                    .collect();
                json!([{"name": "order", "data": {
                    "orderid": format!("q-{name}-{orders}"),
                    "userid": format!("q-{name}"),
                    "items": items
                }}])
            }
        };
        let mut body = Self::body(name, events);
        shopper.resume(&mut body, step.at);
        let response = self.client.post("/api/serverside", &body).await?;
        shopper.keep(&response, step.at);
        Ok(())
    }

    /// Asks every zone for the visitor of `query`, on the product page of their latest
    /// product (the homepage when they have none); the products of each zone's answer
    /// as dataset indexes, in order (products outside the dataset left out).
    pub(crate) async fn ask(
        &mut self,
        data: &Dataset,
        index: &HashMap<&str, u32>,
        query: &Query,
        shopper: &mut Shopper,
    ) -> anyhow::Result<Vec<Vec<u32>>> {
        // Asked as the product is reached: at its time.
        let at = data.sequences[query.visitor as usize][query.position].at;
        let name = &data.visitors[query.visitor as usize];
        let page = match data.history(query).last() {
            Some(step) => {
                json!({"page_type": "product_page", "product_id": data.items[step.item as usize]})
            }
            None => json!({"page_type": "homepage"}),
        };
        let mut body = Self::body(name, json!([{"name": "page_view", "data": page}]));
        let ids: Vec<&str> = self.zones.iter().map(|(id, _)| id.as_str()).collect();
        body["zones"] = json!(ids);
        shopper.resume(&mut body, at);
        let response = self.client.post("/api/serverside", &body).await?;
        shopper.keep(&response, at);
        let mut answers = Vec::new();
        for (id, _) in &self.zones {
            let items = response["zones"][id]["items"]
                .as_array()
                .with_context(|| format!("zone {id} is not in the answer: {response}"))?;
            answers.push(
                items
                    .iter()
                    .filter_map(|item| item["Id"].as_str().and_then(|i| index.get(i)).copied())
                    .take(self.count)
                    .collect(),
            );
        }
        Ok(answers)
    }

    /// Waits until the models include everything sent so far: two model rebuilds
    /// completed after now (the second began after the first ended, so after every
    /// interaction already answered), making the models stale between them.
    pub(crate) async fn await_models(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        let before = self.rebuilds().await?;
        loop {
            let tick = json!([{"name": "product_view", "data": {"id": TICK_PRODUCT}}]);
            self.client
                .post("/api/serverside", &Self::body("quality-tick", tick))
                .await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            if self.rebuilds().await? >= before + 2 {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(300) {
                bail!("the models were not rebuilt within 5 minutes");
            }
        }
    }

    /// What the server's self-tuning of the co-view lists knows
    /// (`GET /admin/api/accounts/{key}/models`).
    pub(crate) async fn tuning(&mut self) -> anyhow::Result<Value> {
        let header = format!("Bearer {ADMIN_TOKEN}");
        let text = self
            .client
            .get_with(
                &format!("/admin/api/accounts/{ACCESS_KEY}/models"),
                &[("authorization", &header)],
            )
            .await?;
        serde_json::from_str(&text).with_context(|| format!("the models answer: {text}"))
    }

    /// Model rebuilds of the account so far, from `/metrics`.
    async fn rebuilds(&mut self) -> anyhow::Result<u64> {
        let text = self.client.get_text("/metrics").await?;
        let prefix =
            format!("vitrine_model_rebuild_duration_seconds_count{{account=\"{ACCESS_KEY}\"}}");
        Ok(text
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|count| count.trim().parse::<f64>().ok())
            .map_or(0, |count| count as u64))
    }
}

/// A pause after which a shopper's next request starts a new session (the usual cut
/// in session-based recommendation).
pub(crate) const SESSION_GAP_MILLIS: i64 = 30 * 60 * 1000;

/// What the replay keeps of a shopper between requests: the basket so far, the orders
/// placed, and the session id the server gave with the time of the request it came
/// back from.
#[derive(Debug, Default)]
pub(crate) struct Shopper {
    pub(crate) basket: Vec<u32>,
    pub(crate) orders: usize,
    session: Option<(String, i64)>,
}

impl Shopper {
    /// Sends the session back in `body` if the last request was less than
    /// [`SESSION_GAP_MILLIS`] before `at`.
    fn resume(&self, body: &mut Value, at: i64) {
        if let Some((id, last)) = &self.session
            && at - last < SESSION_GAP_MILLIS
        {
            body["sessionId"] = json!(id);
        }
    }

    /// Keeps the session id of `response`, as of `at`.
    fn keep(&mut self, response: &Value, at: i64) {
        if let Some(id) = response["sessionId"].as_str() {
            self.session = Some((id.to_owned(), at));
        }
    }
}

/// A `--strategies` entry: a strategy, optionally with `:KEY=NUMBER` zone keys (e.g.
/// `personalized:history=5:recency=0.7`; the server checks the keys and values).
fn zone_spec(spec: &str) -> anyhow::Result<(&str, Vec<(&str, &str)>)> {
    let mut parts = spec.split(':');
    let strategy = parts.next().unwrap_or(spec);
    let mut settings = Vec::new();
    for part in parts {
        match part.split_once('=') {
            Some((key, value)) if value.parse::<f64>().is_ok() => settings.push((key, value)),
            _ => bail!(
                "--strategies {spec}: expected STRATEGY or STRATEGY:KEY=NUMBER..., got {part:?}"
            ),
        }
    }
    Ok((strategy, settings))
}

/// The dataset's products as a feed: id, title, categories (declared) and a price.
fn feed(data: &Dataset) -> Vec<u8> {
    let mut categories: Vec<&str> = data
        .details
        .iter()
        .flat_map(|d| d.categories.iter().map(String::as_str))
        .collect();
    categories.sort_unstable();
    categories.dedup();
    let category_id = |name: &str| format!("cat-{}", slug(name));
    let products: Vec<Value> = data
        .items
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let details = data.details.get(i);
            let mut record = vitrine_testkit::records::product(id, "9.99 GBP");
            if let Some(details) = details {
                if let Some(title) = &details.title {
                    record["Title"] = json!(title);
                }
                record["Categories"] = json!(
                    details
                        .categories
                        .iter()
                        .map(|c| category_id(c))
                        .collect::<Vec<_>>()
                );
            }
            record
        })
        .collect();
    let declared: Vec<Value> = categories
        .iter()
        .map(|name| {
            json!({"Id": category_id(name), "DisplayName": name, "Link": format!("/c/{}", slug(name)), "ParentIds": []})
        })
        .collect();
    serde_json::to_vec(
        &json!({"Version": 2, "Categories": declared, "Brands": [], "Products": products}),
    )
    .unwrap_or_default()
}

fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}
