//! `[[accounts]]`: a store's keys, region, currency, zones, rate limits, memory and
//! model settings, attribution window and experiments, validated into [`AccountConfig`].

use std::collections::{HashMap, HashSet};

use vitrine_engine::AccountSettings;
use vitrine_engine::experiment::Experiment;
use vitrine_engine::models::{CoViewWindow, ModelSettings};
use vitrine_engine::money::Currency;
use vitrine_engine::tuning::{Pins, Tuning};
use vitrine_engine::zone::ZoneSpec;

use std::path::Path;

use super::checks::{ConfigError, Invalid, fraction, within};
use super::clientside::{ClientsideConfig, clientside};
use super::experiments::experiments;
use super::file::FileAccount;
use super::rate_limits::{RateLimit, rate_limit};
use super::region::Region;
use super::zones::{ZoneContent, zone_content, zone_spec};
use crate::routes::Endpoint;

/// One configured store account.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountConfig {
    /// Access key (`appId`, `appKey`, `AppKey`, `AccessKey` on the wire).
    pub access_key: String,
    /// Secret key.
    pub secret_key: String,
    /// Region of the account.
    pub region: Region,
    /// Currency of requests that name none.
    pub default_currency: Currency,
    /// `time_zone`: the IANA time zone campaign schedules keep days and hours in
    /// (default UTC).
    pub time_zone: jiff::tz::TimeZone,
    /// Its name as configured.
    pub time_zone_name: String,
    /// Whether the account starts with the generated demo catalogue.
    pub demo_catalogue: bool,
    /// Its zones.
    pub zones: Vec<ZoneSpec>,
    /// Content of its image, image-carousel and html zones, by zone id.
    pub content: HashMap<String, ZoneContent>,
    /// Request rate limits by endpoint (endpoints without one are not limited).
    pub rate_limits: Vec<(Endpoint, RateLimit)>,
    /// Visitors (and sessions) kept in memory at most; `memory.max_visitors` unless the
    /// account sets its own.
    pub max_visitors: usize,
    /// `[accounts.models]`: how much of the co-view and co-purchase models it keeps.
    pub models: ModelSettings,
    /// Days after a zone answer within which basket adds and order lines of the products
    /// it showed are credited to it.
    pub attribution_days: u32,
    /// `[[accounts.experiments]]`: A/B tests of its zones' strategies.
    pub experiments: Vec<Experiment>,
    /// Whether zone answers are recorded for analytics.
    pub zone_analytics: bool,
    /// Whether product zones are judged against what sampled shoppers do next.
    pub self_evaluation: bool,
    /// `[accounts.models] tuning` and the values it pins: whether the lists' window,
    /// partner damping and weight on direction tune themselves.
    pub tuning: Tuning,
    /// `[accounts.clientside]`: the browser script and its endpoint.
    pub clientside: ClientsideConfig,
    /// `deltas_without_secret.networks`: senders whose `/api/productdelta` and
    /// `/api/productdeltastatus` calls need no secret key (none by default).
    pub deltas_without_secret: Vec<ipnet::IpNet>,
}

impl AccountConfig {
    /// The engine's settings of the account (what a reload may replace in place).
    pub fn settings(&self) -> AccountSettings {
        AccountSettings {
            access_key: self.access_key.clone(),
            default_currency: self.default_currency,
            zones: self.zones.clone(),
            models: self.models,
            attribution_days: self.attribution_days,
            experiments: self.experiments.clone(),
            zone_analytics: self.zone_analytics,
            self_evaluation: self.self_evaluation,
            // Self-tuning is scored on the visitors self-evaluation samples.
            tuning: if self.self_evaluation {
                self.tuning
            } else {
                Tuning::Off
            },
            max_visitors: Some(self.max_visitors),
            time_zone: self.time_zone.clone(),
        }
    }
}

/// The `[[accounts]]`, validated: keys unique, secrets long enough, zones well-formed.
pub(super) fn accounts(
    file: &[FileAccount],
    region: Region,
    max_visitors: usize,
    base: &Path,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<Vec<AccountConfig>, ConfigError> {
    let mut accounts = Vec::with_capacity(file.len());
    let mut keys = HashSet::new();
    for (i, account) in file.iter().enumerate() {
        let key = |field: &str| format!("accounts[{i}].{field}");
        if account.access_key.trim().is_empty() {
            return Err(err(&key("access_key"), "must not be empty".to_owned()));
        }
        if !keys.insert(account.access_key.clone()) {
            return Err(err(
                &key("access_key"),
                format!("{:?} is used by an earlier account", account.access_key),
            ));
        }
        if account.secret_key.len() < 8 {
            return Err(err(
                &key("secret_key"),
                "must be at least 8 characters".to_owned(),
            ));
        }
        let account_region = match &account.region {
            None => region,
            Some(r) => Region::parse(r).ok_or_else(|| {
                err(
                    &key("region"),
                    format!("expected \"eu\" or \"us\", got {r:?}"),
                )
            })?,
        };
        let default_currency = Currency::from_code(&account.default_currency)
            .map_err(|e| err(&key("default_currency"), e.to_string()))?;
        let time_zone_name = account
            .time_zone
            .clone()
            .unwrap_or_else(|| "UTC".to_owned());
        let time_zone =
            vitrine_engine::campaign::schedule::time_zone(&time_zone_name).ok_or_else(|| {
                err(
                    &key("time_zone"),
                    format!(
                        "{time_zone_name:?} is not an IANA time zone (such as \"Europe/London\")"
                    ),
                )
            })?;
        let mut zones = Vec::with_capacity(account.zones.len());
        let mut content = HashMap::new();
        let mut zone_ids = HashSet::new();
        for (z, zone) in account.zones.iter().enumerate() {
            let zone_key = |field: &str| format!("accounts[{i}].zones[{z}].{field}");
            let spec =
                zone_spec(zone, zone.recipe(), &zone_key).map_err(|e| err(&e.key, e.message))?;
            let zone_content =
                zone_content(zone, spec.kind, &zone_key).map_err(|e| err(&e.key, e.message))?;
            if zone_content != ZoneContent::default() {
                content.insert(spec.id.clone(), zone_content);
            }
            if !zone_ids.insert(spec.id.clone()) {
                return Err(err(
                    &zone_key("id"),
                    format!("zone {:?} is defined twice", spec.id),
                ));
            }
            zones.push(spec);
        }
        let mut rate_limits = Vec::with_capacity(account.rate_limits.len());
        for (name, limit) in &account.rate_limits {
            let limit_key = |field: &str| key(&format!("rate_limits.{name}{field}"));
            let endpoint = Endpoint::of_config_name(name).ok_or_else(|| {
                let names: Vec<&str> = Endpoint::ALL
                    .iter()
                    .filter_map(|e| e.config_name())
                    .collect();
                err(
                    &limit_key(""),
                    format!("unknown endpoint; expected one of {}", names.join(", ")),
                )
            })?;
            let limit = rate_limit(limit, &limit_key).map_err(|e| err(&e.key, e.message))?;
            rate_limits.push((endpoint, limit));
        }
        let max_visitors = match account.max_visitors {
            None => max_visitors,
            Some(n) => within(n, 100, 1_000_000_000)
                .map_err(|m| err(&key("max_visitors"), m.to_string()))?
                as usize,
        };
        let mut models = ModelSettings::default();
        let mut pins = Pins::default();
        let mut tuning_on = true;
        if let Some(file) = &account.models {
            if let Some(n) = file.partners {
                models.partners = within(n, 8, 1024)
                    .map_err(|m| err(&key("models.partners"), m.to_string()))?
                    as usize;
            }
            models.neighbours = match file.neighbours {
                Some(n) => within(n, 1, models.partners as u64)
                    .map_err(|m| err(&key("models.neighbours"), m.to_string()))?
                    as usize,
                None => models.neighbours.min(models.partners),
            };
            if let Some(power) = file.partner_damping {
                models.partner_damping = fraction(power, 0.0, 1.0)
                    .map_err(|m| err(&key("models.partner_damping"), m.to_string()))?;
                pins.partner_damping = Some(models.partner_damping);
            }
            // The co-purchase lists start from the co-view lists' damping unless
            // given their own.
            models.purchase_partner_damping = models.partner_damping;
            if let Some(power) = file.purchase_partner_damping {
                models.purchase_partner_damping = fraction(power, 0.0, 1.0)
                    .map_err(|m| err(&key("models.purchase_partner_damping"), m.to_string()))?;
                pins.purchase_partner_damping = Some(models.purchase_partner_damping);
            }
            let window = |name: &str, steps: u64| {
                usize::try_from(steps)
                    .ok()
                    .and_then(CoViewWindow::of_steps)
                    .ok_or_else(|| {
                        err(
                            &key(&format!("models.{name}")),
                            format!("must be 1, 3 or 10, got {steps}"),
                        )
                    })
            };
            if let Some(steps) = file.co_view_window {
                models.co_view_window = window("co_view_window", steps)?;
                pins.co_view_window = Some(models.co_view_window);
            }
            if let Some(steps) = file.co_purchase_window {
                models.co_purchase_window = window("co_purchase_window", steps)?;
                pins.co_purchase_window = Some(models.co_purchase_window);
            }
            if let Some(share) = file.co_view_forward {
                models.co_view_forward = fraction(share, 0.0, 1.0)
                    .map_err(|m| err(&key("models.co_view_forward"), m.to_string()))?;
                pins.co_view_forward = Some(models.co_view_forward);
            }
            if let Some(share) = file.co_purchase_forward {
                models.co_purchase_forward = fraction(share, 0.0, 1.0)
                    .map_err(|m| err(&key("models.co_purchase_forward"), m.to_string()))?;
                pins.co_purchase_forward = Some(models.co_purchase_forward);
            }
            if let Some(n) = file.sessions {
                models.sessions = within(n, 0, 10_000_000)
                    .map_err(|m| err(&key("models.sessions"), m.to_string()))?
                    as usize;
            }
            if let Some(n) = file.session_neighbours {
                let most = vitrine_engine::models::SAMPLED_SESSIONS as u64;
                models.session_setting.neighbours = within(n, 1, most)
                    .map_err(|m| err(&key("models.session_neighbours"), m.to_string()))?
                    as usize;
                pins.session_neighbours = Some(models.session_setting.neighbours);
            }
            if let Some(n) = file.session_steps {
                let most = vitrine_engine::models::SESSION_STEPS as u64;
                models.session_setting.steps = within(n, 1, most)
                    .map_err(|m| err(&key("models.session_steps"), m.to_string()))?
                    as usize;
                pins.session_steps = Some(models.session_setting.steps);
            }
            if let Some(rate) = file.tuning_trials_per_second {
                models.tuning_trials_per_second = within(rate, 1, 100_000)
                    .map_err(|m| err(&key("models.tuning_trials_per_second"), m.to_string()))?
                    as u32;
            }
            match file.tuning.as_deref() {
                None | Some("auto") => {}
                Some("off") => tuning_on = false,
                Some(other) => {
                    return Err(err(
                        &key("models.tuning"),
                        format!("must be \"auto\" or \"off\", got \"{other}\""),
                    ));
                }
            }
            if let Some(power) = file.seed_damping {
                models.seed_damping = fraction(power, 0.0, 1.0)
                    .map_err(|m| err(&key("models.seed_damping"), m.to_string()))?;
                // The co-purchase lists follow a configured seed damping unless given
                // their own.
                models.purchase_seed_damping = models.seed_damping;
            }
            if let Some(power) = file.purchase_seed_damping {
                models.purchase_seed_damping = fraction(power, 0.0, 1.0)
                    .map_err(|m| err(&key("models.purchase_seed_damping"), m.to_string()))?;
            }
        }
        let attribution_days = match account.attribution_days {
            None => vitrine_engine::analytics::DEFAULT_ATTRIBUTION_DAYS,
            Some(n) => {
                within(n, 1, 90).map_err(|m| err(&key("attribution_days"), m.to_string()))? as u32
            }
        };
        let experiments = experiments(account, &zones, i).map_err(|e| err(&e.key, e.message))?;
        accounts.push(AccountConfig {
            models,
            attribution_days,
            experiments,
            zone_analytics: account.zone_analytics.unwrap_or(true),
            self_evaluation: account.self_evaluation.unwrap_or(true),
            tuning: if tuning_on {
                Tuning::Auto(pins)
            } else {
                Tuning::Off
            },
            deltas_without_secret: trusted_networks(account, &key)
                .map_err(|e| err(&e.key, e.message))?,
            clientside: clientside(&account.clientside, base, &|field| {
                key(&format!("clientside.{field}"))
            })
            .map_err(|e| err(&e.key, e.message))?,
            max_visitors,
            access_key: account.access_key.clone(),
            secret_key: account.secret_key.clone(),
            region: account_region,
            default_currency,
            time_zone,
            time_zone_name,
            demo_catalogue: account.demo_catalogue,
            zones,
            content,
            rate_limits,
        });
    }
    Ok(accounts)
}

/// `deltas_without_secret = { networks = ["10.0.0.0/8", "192.0.2.7/32"] }`: networks in
/// CIDR form (a bare address is one host).
fn trusted_networks(
    account: &FileAccount,
    key: &impl Fn(&str) -> String,
) -> Result<Vec<ipnet::IpNet>, Invalid> {
    let Some(trusted) = &account.deltas_without_secret else {
        return Ok(Vec::new());
    };
    if trusted.networks.is_empty() {
        return Err(Invalid::at(
            key("deltas_without_secret.networks"),
            "give at least one network, such as \"10.0.0.0/8\" (or leave the key out)",
        ));
    }
    trusted
        .networks
        .iter()
        .enumerate()
        .map(|(n, text)| {
            text.parse::<ipnet::IpNet>()
                .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| {
                    Invalid::at(
                        format!("{}[{n}]", key("deltas_without_secret.networks")),
                        format!(
                            "expected a network such as \"10.0.0.0/8\" or an address, got {text:?}"
                        ),
                    )
                })
        })
        .collect()
}
