//! `vitrine-loadtest eval`: offline quality of one zone against held-out interactions.
//!
//! Per visitor, in time order, the last `holdout` viewed products are held out; every
//! earlier event of every visitor is replayed through `/api/serverside` (in global time
//! order); after the server's models are rebuilt the zone is asked for each visitor
//! (on a product page of the last replayed view, or on the homepage) and scored against
//! the held-out products: HR@K, NDCG@K, MRR and catalogue coverage, next to a
//! most-popular baseline computed from the replayed events.
//!
//! `vitrine-loadtest gen-interactions` writes a dataset with planted structure: products
//! in clusters, visitors browsing within one cluster.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use serde_json::{Value, json};

use crate::target::{Target, authority, connect};

/// Settings of `vitrine-loadtest eval`.
#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    #[command(flatten)]
    target: Target,
    /// The zone to evaluate.
    #[arg(long)]
    zone: String,
    /// CSV with the header `visitor,product,timestamp,event` (event: view, basket,
    /// order or rate:<n>).
    #[arg(long)]
    interactions: PathBuf,
    /// Page the zone is asked for on.
    #[arg(long, value_enum, default_value_t = PageKind::ProductPage)]
    page_type: PageKind,
    /// Items scored per visitor.
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// Last viewed products held out per visitor.
    #[arg(long, default_value_t = 1)]
    holdout: usize,
    /// Where the JSON report is written.
    #[arg(long, default_value = "eval-report.json")]
    out: PathBuf,
}

/// Where the zone is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PageKind {
    /// The homepage.
    Homepage,
    /// The product page of the visitor's last replayed view (spelt as the API's
    /// page_type).
    #[value(name = "product_page")]
    ProductPage,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    View,
    Basket,
    Order,
    Rate(f64),
}

#[derive(Debug, Clone)]
pub(crate) struct Interaction {
    pub(crate) visitor: String,
    pub(crate) product: String,
    pub(crate) timestamp: i64,
    pub(crate) kind: Kind,
}

/// The lines of a CSV file after its `header` (which must be the first line), blank
/// lines left out, each with its line number (from 1).
pub(crate) fn csv_lines(path: &Path, header: &str) -> anyhow::Result<Vec<(usize, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, first)) if first.trim() == header => {}
        _ => bail!("{}: line 1: expected the header {header}", path.display()),
    }
    Ok(lines
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| (n + 1, line.to_owned()))
        .collect())
}

/// Reads the interactions file; errors name the line.
pub(crate) fn read_interactions(path: &Path) -> anyhow::Result<Vec<Interaction>> {
    let mut interactions = Vec::new();
    for (n, line) in csv_lines(path, "visitor,product,timestamp,event")? {
        let at = || format!("{}: line {n}", path.display());
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [visitor, product, timestamp, event] = fields.as_slice() else {
            bail!("{}: expected 4 fields, got {}", at(), fields.len());
        };
        if visitor.is_empty() || product.is_empty() {
            bail!("{}: visitor and product must not be empty", at());
        }
        let timestamp: i64 = timestamp
            .parse()
            .with_context(|| format!("{}: timestamp {timestamp:?} is not an integer", at()))?;
        let kind = match *event {
            "view" => Kind::View,
            "basket" => Kind::Basket,
            "order" => Kind::Order,
            other => match other.strip_prefix("rate:").map(str::parse::<f64>) {
                Some(Ok(rating)) if rating.is_finite() => Kind::Rate(rating),
                _ => bail!(
                    "{}: event {other:?} is not view, basket, order or rate:<n>",
                    at()
                ),
            },
        };
        interactions.push(Interaction {
            visitor: (*visitor).to_owned(),
            product: (*product).to_owned(),
            timestamp,
            kind,
        });
    }
    Ok(interactions)
}

/// Scores of one recommender over all evaluated visitors.
#[derive(Debug, Default, Clone)]
struct Scores {
    visitors: usize,
    hits: f64,
    ndcg: f64,
    reciprocal_ranks: f64,
    recommended: HashSet<String>,
}

impl Scores {
    fn add(&mut self, ranked: &[String], held_out: &HashSet<&str>, k: usize) {
        self.visitors += 1;
        let top = ranked.iter().take(k);
        let mut dcg = 0.0;
        let mut first_hit = None;
        for (rank, id) in top.enumerate() {
            self.recommended.insert(id.clone());
            if held_out.contains(id.as_str()) {
                dcg += 1.0 / ((rank + 2) as f64).log2();
                first_hit.get_or_insert(rank);
            }
        }
        let ideal: f64 = (0..held_out.len().min(k))
            .map(|rank| 1.0 / ((rank + 2) as f64).log2())
            .sum();
        if let Some(rank) = first_hit {
            self.hits += 1.0;
            self.reciprocal_ranks += 1.0 / (rank + 1) as f64;
        }
        if ideal > 0.0 {
            self.ndcg += dcg / ideal;
        }
    }

    /// The scores; coverage is the share of the known products (those of the
    /// interactions, plus any other product recommended) that were recommended at all.
    fn report(&self, catalogue: &HashSet<&str>) -> Value {
        let known = catalogue.len()
            + self
                .recommended
                .iter()
                .filter(|id| !catalogue.contains(id.as_str()))
                .count();
        let per = |total: f64| {
            if self.visitors == 0 {
                0.0
            } else {
                total / self.visitors as f64
            }
        };
        json!({
            "hr_at_k": per(self.hits),
            "ndcg_at_k": per(self.ndcg),
            "mrr": per(self.reciprocal_ranks),
            "coverage": if known == 0 { 0.0 } else { self.recommended.len() as f64 / known as f64 },
        })
    }
}

/// One keep-alive HTTP/1.1 connection posting JSON.
pub(crate) struct Client {
    authority: String,
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

impl Client {
    /// Connects to `server` (`http://host:port`).
    pub(crate) async fn connect(server: &str) -> anyhow::Result<Client> {
        let authority = authority(server)?;
        let sender = connect(&authority).await?;
        Ok(Client { authority, sender })
    }

    async fn serverside(&mut self, body: &Value) -> anyhow::Result<Value> {
        self.post("/api/serverside", body).await
    }

    /// POSTs `body` to `path`; the JSON answer of a 200, else an error with the body.
    pub(crate) async fn post(&mut self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let request = Request::post(path)
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(serde_json::to_vec(body)?)))?;
        let response = self.sender.send_request(request).await?;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await?.to_bytes();
        let value: Value = serde_json::from_slice(&bytes).context("response is not JSON")?;
        if status != 200 {
            bail!("{path} answered {status}: {value}");
        }
        Ok(value)
    }

    /// GETs `path`: the body as text.
    pub(crate) async fn get_text(&mut self, path: &str) -> anyhow::Result<String> {
        self.get_with(path, &[]).await
    }

    /// GETs `path` with `headers`: the body as text.
    pub(crate) async fn get_with(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<String> {
        let mut request = Request::get(path).header("host", &self.authority);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(Bytes::new()))?;
        let response = self.sender.send_request(request).await?;
        let bytes = response.into_body().collect().await?.to_bytes();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Runs the evaluation and writes the report.
pub(crate) fn eval(args: EvalArgs) -> anyhow::Result<()> {
    if args.k == 0 || args.holdout == 0 {
        bail!("--k and --holdout must be at least 1");
    }
    let interactions = read_interactions(&args.interactions)?;
    let catalogue: HashSet<&str> = interactions.iter().map(|i| i.product.as_str()).collect();
    let mut by_visitor: BTreeMap<&str, Vec<&Interaction>> = BTreeMap::new();
    for interaction in &interactions {
        by_visitor
            .entry(interaction.visitor.as_str())
            .or_default()
            .push(interaction);
    }
    // Split each visitor's history: everything before the first of the last `holdout`
    // views is replayed; those views are held out.
    let mut replay: Vec<&Interaction> = Vec::new();
    let mut held: BTreeMap<&str, (HashSet<&str>, Option<&str>)> = BTreeMap::new();
    for (visitor, events) in &mut by_visitor {
        events.sort_by_key(|e| e.timestamp);
        let views: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == Kind::View)
            .map(|(i, _)| i)
            .collect();
        if views.len() <= args.holdout {
            replay.extend(events.iter().copied());
            continue;
        }
        let cut = views[views.len() - args.holdout];
        let earlier = &events[..cut];
        let held_out: HashSet<&str> = views[views.len() - args.holdout..]
            .iter()
            .map(|&i| events[i].product.as_str())
            .collect();
        let context = earlier
            .iter()
            .rev()
            .find(|e| e.kind == Kind::View)
            .map(|e| e.product.as_str());
        replay.extend(earlier.iter().copied());
        held.insert(visitor, (held_out, context));
    }
    replay.sort_by_key(|e| e.timestamp);

    // The baseline: most interacted-with products of the replayed events.
    let mut popularity: HashMap<&str, u64> = HashMap::new();
    for event in &replay {
        *popularity.entry(event.product.as_str()).or_default() += 1;
    }
    let mut popular: Vec<(&str, u64)> = popularity.into_iter().collect();
    popular.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (zone_scores, baseline_scores, replayed) = runtime.block_on(async {
        let mut client = Client::connect(&args.target.server).await?;
        let base = |visitor: &str| {
            json!({
                "appId": args.target.access_key,
                "secretKey": args.target.secret_key,
                "currentUrl": "https://shop.example/",
                "userAgent": "vitrine-loadtest eval",
                "ip": "198.51.100.2",
                "visitorId": format!("eval-{visitor}"),
            })
        };
        let mut baskets: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut orders = 0usize;
        for event in &replay {
            let data = match &event.kind {
                Kind::View => json!([
                    {"name": "page_view", "data": {"page_type": "product_page", "product_id": event.product}},
                    {"name": "product_view", "data": {"id": event.product}}
                ]),
                Kind::Basket => {
                    let basket = baskets.entry(event.visitor.as_str()).or_default();
                    if !basket.contains(&event.product.as_str()) {
                        basket.push(&event.product);
                    }
                    let items: Vec<Value> = basket
                        .iter()
                        .map(|id| json!({"id": id, "qty": 1, "unitprice": 1.0}))
                        .collect();
                    json!([{"name": "set_basket", "data": {"items": items}}])
                }
                Kind::Order => {
                    orders += 1;
                    baskets.remove(event.visitor.as_str());
                    json!([{"name": "order", "data": {
                        "orderid": format!("eval-{}-{orders}", event.visitor),
                        "userid": format!("eval-{}", event.visitor),
                        "items": [{"id": event.product, "qty": 1, "unitprice": 1.0}]
                    }}])
                }
                Kind::Rate(rating) => json!([{"name": "product_rate", "data": {"id": event.product, "rating": rating}}]),
            };
            let mut body = base(&event.visitor);
            body["events"] = data;
            client.serverside(&body).await?;
        }
        // The server rebuilds its models every second; give it two.
        tokio::time::sleep(Duration::from_millis(2_100)).await;

        let mut zone_scores = Scores::default();
        let mut baseline_scores = Scores::default();
        for (visitor, (held_out, context)) in &held {
            let mut body = base(visitor);
            let page = match (args.page_type, context) {
                (PageKind::ProductPage, Some(product)) => {
                    json!({"page_type": "product_page", "product_id": product})
                }
                _ => json!({"page_type": "homepage"}),
            };
            body["events"] = json!([{"name": "page_view", "data": page}]);
            body["zones"] = json!([args.zone]);
            let response = client.serverside(&body).await?;
            let ranked: Vec<String> = response["zones"][&args.zone]["items"]
                .as_array()
                .with_context(|| format!("zone {} not in the response: {response}", args.zone))?
                .iter()
                .filter_map(|item| item["Id"].as_str().map(str::to_owned))
                .collect();
            zone_scores.add(&ranked, held_out, args.k);
            let baseline: Vec<String> = popular
                .iter()
                .map(|(id, _)| *id)
                .filter(|id| Some(*id) != *context)
                .take(args.k)
                .map(str::to_owned)
                .collect();
            baseline_scores.add(&baseline, held_out, args.k);
        }
        anyhow::Ok((zone_scores, baseline_scores, replay.len()))
    })?;

    let report = json!({
        "settings": {
            "server": args.target.server,
            "access_key": args.target.access_key,
            "zone": args.zone,
            "interactions": args.interactions.display().to_string(),
            "page_type": match args.page_type { PageKind::Homepage => "homepage", PageKind::ProductPage => "product_page" },
            "k": args.k,
            "holdout": args.holdout,
        },
        "visitors_evaluated": zone_scores.visitors,
        "events_replayed": replayed,
        "catalogue_products": catalogue.len(),
        "zone": zone_scores.report(&catalogue),
        "most_popular_baseline": baseline_scores.report(&catalogue),
    });
    let line = |name: &str, scores: &Value| {
        println!(
            "{name:<22} HR@{k:<3} {:.4}  NDCG@{k:<3} {:.4}  MRR {:.4}  coverage {:.4}",
            scores["hr_at_k"].as_f64().unwrap_or(0.0),
            scores["ndcg_at_k"].as_f64().unwrap_or(0.0),
            scores["mrr"].as_f64().unwrap_or(0.0),
            scores["coverage"].as_f64().unwrap_or(0.0),
            k = args.k,
        );
    };
    println!(
        "{} visitors evaluated, {} events replayed, {} products in the interactions",
        zone_scores.visitors,
        replayed,
        catalogue.len()
    );
    line(&format!("zone {}", args.zone), &report["zone"]);
    line("most popular", &report["most_popular_baseline"]);
    std::fs::write(&args.out, serde_json::to_vec_pretty(&report)?)
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!("report written to {}", args.out.display());
    Ok(())
}

/// Writes interactions with planted structure: `products` demo-style ids (`P00001`...)
/// in clusters of `cluster` consecutive products; each visitor browses 4–9 products of
/// one cluster (popular clusters more often), sometimes baskets and orders one.
pub(crate) fn generate(
    visitors: usize,
    products: usize,
    cluster: usize,
    seed: u64,
    out: &Path,
) -> anyhow::Result<()> {
    if products == 0 || cluster == 0 || cluster > products {
        bail!("--products must be at least 1 and --cluster between 1 and --products");
    }
    let mut rng = vitrine_benches::feedgen::Rng::new(seed);
    let clusters = products / cluster;
    let mut text = String::from("visitor,product,timestamp,event\n");
    let mut time = 1_800_000_000_000i64;
    for v in 0..visitors {
        // Skewed cluster choice: low cluster numbers are popular.
        let c = rng.skewed(clusters);
        let views = 4 + rng.below(6) as usize;
        for _ in 0..views {
            let p = c * cluster + rng.below(cluster as u64) as usize;
            time += 1 + rng.below(5_000) as i64;
            text.push_str(&format!("v{v},P{:05},{time},view\n", p + 1));
            if rng.below(10) == 0 {
                text.push_str(&format!("v{v},P{:05},{},basket\n", p + 1, time + 1));
                if rng.below(2) == 0 {
                    text.push_str(&format!("v{v},P{:05},{},order\n", p + 1, time + 2));
                }
            }
        }
    }
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_count_hits_ranks_and_ideal_gain() {
        let mut scores = Scores::default();
        let held: HashSet<&str> = ["b"].into_iter().collect();
        scores.add(&["a".into(), "b".into()], &held, 10);
        scores.add(&["c".into()], &held, 10);
        scores.add(&["a".into(), "b".into()], &held, 1);
        let catalogue: HashSet<&str> = ["a", "b", "c", "d"].into_iter().collect();
        let report = scores.report(&catalogue);
        assert_eq!(report["hr_at_k"], 1.0 / 3.0);
        assert_eq!(report["mrr"], 0.5 / 3.0);
        let ndcg = (1.0 / 3f64.log2()) / 3.0;
        assert!((report["ndcg_at_k"].as_f64().unwrap() - ndcg).abs() < 1e-12);
        assert_eq!(report["coverage"], 0.75);
    }

    #[test]
    fn interaction_files_are_checked_line_by_line() {
        let dir = std::env::temp_dir().join(format!("vitrine-eval-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("i.csv");
        std::fs::write(
            &path,
            "visitor,product,timestamp,event\nv1,P1,5,view\nv1,P2,6,rate:4.5\n",
        )
        .unwrap();
        let read = read_interactions(&path).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[1].kind, Kind::Rate(4.5));
        std::fs::write(&path, "visitor,product,timestamp,event\nv1,P1,x,view\n").unwrap();
        let error = read_interactions(&path).unwrap_err().to_string();
        assert!(
            error.contains("line 2: timestamp \"x\" is not an integer"),
            "{error}"
        );
        std::fs::write(&path, "visitor,product,timestamp,event\nv1,P1,1,click\n").unwrap();
        let error = read_interactions(&path).unwrap_err().to_string();
        assert!(error.contains("line 2: event \"click\""), "{error}");
        std::fs::write(&path, "a,b\n").unwrap();
        assert!(
            read_interactions(&path)
                .unwrap_err()
                .to_string()
                .contains("line 1")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
