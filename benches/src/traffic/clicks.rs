//! Clicks on what the previous answer showed, per strategy of the zone that showed
//! it, and the map of zone ids to strategies they are read with.

use super::*;

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
                    campaigns: false,
                    list: None,
                });
            }
            built.push(Experiment {
                id: experiment.id.clone(),
                zone: experiment.zone.clone(),
                start: None,
                end: None,
                variants,
                split: vitrine_engine::experiment::Split::Sha256,
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
    pub(super) fn share(&self, zone: &str, visitor: &str) -> f64 {
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
    pub(super) fn shown(&self, response: &[u8]) -> Vec<(String, Vec<usize>)> {
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
