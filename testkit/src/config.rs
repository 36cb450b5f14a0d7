//! Server configuration files for tests and tools: [`ConfigToml`] writes the TOML that
//! `vitrine serve --config` reads (see the README's configuration section), and the
//! keys of the embedded demo account.

use std::fmt::Write as _;

/// Access key of the demo account served without `--config`.
pub const DEMO_KEY: &str = "demo-access-key";
/// Secret key of the demo account served without `--config`.
pub const DEMO_SECRET: &str = "demo-secret-key";

/// A product zone of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneToml {
    /// `id`.
    pub id: String,
    /// `title`.
    pub title: String,
    /// `strategy` of a `recommender-product` zone.
    pub strategy: String,
    /// `fallback` strategies, in order.
    pub fallback: Vec<String>,
    /// `count`.
    pub count: usize,
    /// `page_types`; empty for every page type.
    pub page_types: Vec<String>,
    /// Further keys as `(key, TOML value)`, e.g. `("history", "5")` for a
    /// `personalized` zone.
    pub settings: Vec<(String, String)>,
}

impl ZoneToml {
    /// A zone `id` of `strategy` with `count` items, titled by its id, no fallback.
    pub fn new(id: &str, strategy: &str, count: usize) -> ZoneToml {
        ZoneToml {
            id: id.to_owned(),
            title: id.to_owned(),
            strategy: strategy.to_owned(),
            fallback: Vec::new(),
            count,
            page_types: Vec::new(),
            settings: Vec::new(),
        }
    }

    /// The same zone with `history` set.
    pub fn history(self, history: usize) -> ZoneToml {
        self.setting("history", &history.to_string())
    }

    /// The same zone with `key = value` (a TOML value) added.
    pub fn setting(mut self, key: &str, value: &str) -> ZoneToml {
        self.settings.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The same zone, shown only on these page types.
    pub fn on_pages(self, page_types: &[&str]) -> ZoneToml {
        ZoneToml {
            page_types: page_types.iter().map(|s| (*s).to_owned()).collect(),
            ..self
        }
    }

    /// The same zone with a title.
    pub fn titled(self, title: &str) -> ZoneToml {
        ZoneToml {
            title: title.to_owned(),
            ..self
        }
    }

    /// The same zone with fallback strategies.
    pub fn fallback(self, fallback: &[&str]) -> ZoneToml {
        ZoneToml {
            fallback: fallback.iter().map(|s| (*s).to_owned()).collect(),
            ..self
        }
    }
}

/// An A/B test of a zone: its variants by name and strategy (weights equal, each falling
/// back as the zone does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentToml {
    /// `id`.
    pub id: String,
    /// `zone`.
    pub zone: String,
    /// (`name`, `strategy`) of each variant, the control first.
    pub variants: Vec<(String, String)>,
}

/// An account of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountToml {
    /// `access_key`.
    pub access_key: String,
    /// `secret_key`.
    pub secret_key: String,
    /// `default_currency`.
    pub default_currency: String,
    /// `demo_catalogue`: what the account starts with.
    pub catalogue: CatalogueStart,
    /// Its zones.
    pub zones: Vec<ZoneToml>,
    /// `[accounts.models]` keys as `(key, TOML value)`; empty leaves the table out.
    pub models: Vec<(String, String)>,
    /// `[[accounts.experiments]]`.
    pub experiments: Vec<ExperimentToml>,
    /// `zone_analytics`; `None` leaves it out (on).
    pub zone_analytics: Option<bool>,
    /// `self_evaluation`; `None` leaves it out (on).
    pub self_evaluation: Option<bool>,
    /// `[accounts.clientside]` keys as `(key, TOML value)`; empty leaves the table out.
    pub clientside: Vec<(String, String)>,
}

/// What an account's catalogue starts as (`demo_catalogue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CatalogueStart {
    /// The generated demo catalogue (`demo_catalogue = true`).
    Demo,
    /// Empty, until a feed or deltas fill it (`demo_catalogue = false`).
    #[default]
    Empty,
}

impl AccountToml {
    /// An account in GBP with no zones, its catalogue starting as `catalogue` says.
    pub fn new(access_key: &str, secret_key: &str, catalogue: CatalogueStart) -> AccountToml {
        AccountToml {
            access_key: access_key.to_owned(),
            secret_key: secret_key.to_owned(),
            default_currency: "GBP".to_owned(),
            catalogue,
            zones: Vec::new(),
            models: Vec::new(),
            experiments: Vec::new(),
            zone_analytics: None,
            self_evaluation: None,
            clientside: Vec::new(),
        }
    }

    /// The same account with `key = value` (a TOML value) in `[accounts.clientside]`.
    pub fn clientside(mut self, key: &str, value: &str) -> AccountToml {
        self.clientside.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The same account with `zone_analytics = false`.
    pub fn without_zone_analytics(self) -> AccountToml {
        AccountToml {
            zone_analytics: Some(false),
            ..self
        }
    }

    /// The same account with `self_evaluation = false`.
    pub fn without_self_evaluation(self) -> AccountToml {
        AccountToml {
            self_evaluation: Some(false),
            ..self
        }
    }

    /// The same account with `experiment` added.
    pub fn experiment(mut self, experiment: ExperimentToml) -> AccountToml {
        self.experiments.push(experiment);
        self
    }

    /// The same account with `[accounts.models]` set.
    pub fn models(self, partners: usize, neighbours: usize) -> AccountToml {
        self.model("partners", &partners.to_string())
            .model("neighbours", &neighbours.to_string())
    }

    /// The same account with `key = value` (a TOML value) in `[accounts.models]`.
    pub fn model(mut self, key: &str, value: &str) -> AccountToml {
        self.models.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The same account with `zone` added.
    pub fn zone(mut self, zone: ZoneToml) -> AccountToml {
        self.zones.push(zone);
        self
    }
}

/// A configuration file: top-level lines (and tables) as given, then the accounts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigToml {
    /// TOML placed before the accounts, e.g. `region = "eu"` or a `[durability]` table.
    pub preamble: String,
    /// The accounts.
    pub accounts: Vec<AccountToml>,
}

impl ConfigToml {
    /// A configuration with `preamble` and no accounts.
    pub fn new(preamble: &str) -> ConfigToml {
        ConfigToml {
            preamble: preamble.to_owned(),
            accounts: Vec::new(),
        }
    }

    /// The same configuration with `account` added.
    pub fn account(mut self, account: AccountToml) -> ConfigToml {
        self.accounts.push(account);
        self
    }

    /// The TOML text.
    pub fn to_toml(&self) -> String {
        let quoted = |text: &str| serde_json::Value::from(text).to_string();
        let mut out = self.preamble.trim_end().to_owned();
        out.push('\n');
        for account in &self.accounts {
            let _ = write!(
                out,
                "\n[[accounts]]\naccess_key = {}\nsecret_key = {}\ndefault_currency = {}\n\
                 demo_catalogue = {}\n",
                quoted(&account.access_key),
                quoted(&account.secret_key),
                quoted(&account.default_currency),
                account.catalogue == CatalogueStart::Demo,
            );
            if let Some(on) = account.self_evaluation {
                let _ = writeln!(out, "self_evaluation = {on}");
            }
            if let Some(on) = account.zone_analytics {
                let _ = writeln!(out, "zone_analytics = {on}");
            }
            if !account.models.is_empty() {
                out.push_str("\n  [accounts.models]\n");
                for (key, value) in &account.models {
                    let _ = writeln!(out, "  {key} = {value}");
                }
            }
            if !account.clientside.is_empty() {
                out.push_str("\n  [accounts.clientside]\n");
                for (key, value) in &account.clientside {
                    let _ = writeln!(out, "  {key} = {value}");
                }
            }
            for zone in &account.zones {
                let list = |items: &[String]| -> String {
                    let quoted: Vec<String> = items.iter().map(|s| quoted(s)).collect();
                    quoted.join(", ")
                };
                let _ = write!(
                    out,
                    "\n  [[accounts.zones]]\n  id = {}\n  title = {}\n  \
                     type = \"recommender-product\"\n  strategy = {}\n  fallback = [{}]\n  \
                     count = {}\n",
                    quoted(&zone.id),
                    quoted(&zone.title),
                    quoted(&zone.strategy),
                    list(&zone.fallback),
                    zone.count,
                );
                if !zone.page_types.is_empty() {
                    let _ = writeln!(out, "  page_types = [{}]", list(&zone.page_types));
                }
                for (key, value) in &zone.settings {
                    let _ = writeln!(out, "  {key} = {value}");
                }
            }
            for experiment in &account.experiments {
                let _ = write!(
                    out,
                    "\n  [[accounts.experiments]]\n  id = {}\n  zone = {}\n",
                    quoted(&experiment.id),
                    quoted(&experiment.zone),
                );
                for (name, strategy) in &experiment.variants {
                    let _ = write!(
                        out,
                        "    [[accounts.experiments.variants]]\n    name = {}\n    strategy = {}\n",
                        quoted(name),
                        quoted(strategy),
                    );
                }
            }
        }
        out
    }
}
