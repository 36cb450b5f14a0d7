//! `[[accounts.zones]]`: a zone's type, strategy and fallbacks, count, page types, its
//! recipe (`history` to `purchases`, each refused where the strategy does not read it),
//! and its content: the images of image zones and the checked template of html zones.

use std::fmt;

use vitrine_engine::event::PageType;
use vitrine_engine::tuning::recipe::RecipePins;
use vitrine_engine::visitor::MAX_RECENT_VIEWS;
use vitrine_engine::zone::{
    DEFAULT_CONTENT, DEFAULT_HISTORY, DEFAULT_LONG_TERM, DEFAULT_POPULARITY, DEFAULT_PURCHASES,
    DEFAULT_RECENCY, DEFAULT_SESSIONS, Strategy, ZoneKind, ZoneRecipe, ZoneSpec,
};

use super::checks::Invalid;
use super::file::{FileRecipe, FileZone};

/// Configured content of a zone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ZoneContent {
    /// `images` of image and image-carousel zones.
    pub images: Vec<ZoneImage>,
    /// `template` of an html zone (minijinja syntax, checked at load).
    pub template: Option<String>,
}

/// One configured image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneImage {
    /// `url` of the image.
    pub url: String,
    /// `link`: where a click goes (may be empty).
    pub link: String,
    /// `alt` text (may be empty).
    pub alt: String,
}

/// A zone as configured, its recipe read from `recipe` (the zone's own, or what an
/// experiment variant makes of it).
pub(super) fn zone_spec(
    zone: &FileZone,
    recipe: FileRecipe,
    key: &impl Fn(&str) -> String,
) -> Result<ZoneSpec, Invalid> {
    if zone.id.trim().is_empty() || zone.id.len() > 128 {
        return Err(Invalid::at(
            key("id"),
            "must be 1 to 128 characters".to_owned(),
        ));
    }
    let kind = ZoneKind::from_name(&zone.kind).ok_or_else(|| {
        Invalid::at(
            key("type"),
            format!(
                "unknown zone type {:?}; expected recommender-product, recommender-category, \
                 recommender-brand, image-carousel (or carousel), image (or staticimage) or html",
                zone.kind
            ),
        )
    })?;
    let shows_images = matches!(kind, ZoneKind::Image | ZoneKind::ImageCarousel);
    if shows_images && (zone.strategy.is_some() || !zone.fallback.is_empty()) {
        return Err(Invalid::at(
            key("strategy"),
            format!(
                "{} zones show their configured images; remove strategy and fallback",
                kind.name()
            ),
        ));
    }
    // html zones take product strategies for the items their template shows.
    let kind_filled = if kind == ZoneKind::Html {
        ZoneKind::RecommenderProduct
    } else {
        kind
    };
    let fits = |strategy: Strategy| -> Result<Strategy, StrategyError> {
        if strategy.kind() == kind_filled {
            Ok(strategy)
        } else {
            Err(StrategyError::WrongKind {
                strategy,
                kind,
                filled: kind_filled,
            })
        }
    };
    let main = match zone.strategy.as_deref() {
        Some(name) => Some(
            strategy(name)
                .and_then(fits)
                .map_err(|m| Invalid::at(key("strategy"), m))?,
        ),
        // Image zones have no items; an html zone without a strategy renders its
        // template without items.
        None if shows_images || kind == ZoneKind::Html => None,
        None => {
            return Err(Invalid::at(
                key("strategy"),
                "required for recommender zones".to_owned(),
            ));
        }
    };
    let mut fallback = Vec::with_capacity(zone.fallback.len());
    for (f, name) in zone.fallback.iter().enumerate() {
        fallback.push(
            strategy(name)
                .and_then(fits)
                .map_err(|m| Invalid::at(format!("{}[{f}]", key("fallback")), m))?,
        );
    }
    let count = zone.count.unwrap_or(8);
    if !(1..=100).contains(&count) {
        return Err(Invalid::at(
            key("count"),
            format!("must be between 1 and 100, got {count}"),
        ));
    }
    let page_types = page_types(zone, key)?;
    let strategies: Vec<Strategy> = main.into_iter().chain(fallback.iter().copied()).collect();
    let recipe = read_recipe(recipe, key, &strategies)?;
    Ok(ZoneSpec {
        id: zone.id.clone(),
        title: zone.title.clone(),
        kind,
        strategy: main,
        fallback,
        count: count as usize,
        page_types,
        recipe,
    })
}

/// The zone's recipe from what it `given` (`history`, `recency`, `long_term`, `context`,
/// `content`, `sessions`, `popularity` and `purchases`; the defaults for the others),
/// each refused where none of the zone's `strategies` (its strategy and fallbacks) reads
/// it.
fn read_recipe(
    given: FileRecipe,
    key: &impl Fn(&str) -> String,
    strategies: &[Strategy],
) -> Result<ZoneRecipe, Invalid> {
    let uses = |wanted: &[Strategy]| strategies.iter().any(|s| wanted.contains(s));
    let personal = uses(&[Strategy::Personalized]);
    let recency_read = personal || uses(&[Strategy::ViewedTogether, Strategy::BoughtTogether]);
    let only_personal = |name: &str| {
        Invalid::at(
            key(name),
            "only the personalized strategy starts from the visitor's history; \
             remove it or use personalized"
                .to_owned(),
        )
    };
    let history = match given.history {
        None => DEFAULT_HISTORY,
        Some(_) if !personal => return Err(only_personal("history")),
        Some(history) => {
            if !(1..=MAX_RECENT_VIEWS as i64).contains(&history) {
                return Err(Invalid::at(
                    key("history"),
                    format!("must be between 1 and {MAX_RECENT_VIEWS}, got {history}"),
                ));
            }
            history as usize
        }
    };
    let recency = match given.recency {
        None => DEFAULT_RECENCY,
        Some(_) if !recency_read => {
            return Err(Invalid::at(
                key("recency"),
                "only the personalized, viewed_together and bought_together strategies \
                 weigh the visitor's history; remove it or use one of them"
                    .to_owned(),
            ));
        }
        // Greater than 0 (0 would leave all but the latest out: history = 1 does that).
        Some(recency) if recency > 0.0 && recency <= 1.0 => recency,
        Some(recency) => {
            return Err(Invalid::at(
                key("recency"),
                format!("must be greater than 0 and at most 1, got {recency}"),
            ));
        }
    };
    let long_term = match given.long_term {
        None => DEFAULT_LONG_TERM,
        Some(_) if !personal => return Err(only_personal("long_term")),
        Some(weight) if (0.0..=100.0).contains(&weight) => weight,
        Some(weight) => {
            return Err(Invalid::at(
                key("long_term"),
                format!("must be between 0 and 100, got {weight}"),
            ));
        }
    };
    let context = match given.context {
        None => 0,
        Some(_) if !uses(&[Strategy::ViewedTogether, Strategy::BoughtTogether]) => {
            return Err(Invalid::at(
                key("context"),
                "only the viewed_together and bought_together strategies read the \
                 visitor's history with the page's product; remove it or use one of them"
                    .to_owned(),
            ));
        }
        Some(n) if (0..=MAX_RECENT_VIEWS as i64).contains(&n) => n as usize,
        Some(n) => {
            return Err(Invalid::at(
                key("context"),
                format!("must be between 0 and {MAX_RECENT_VIEWS}, got {n}"),
            ));
        }
    };
    // viewed_together and bought_together blend only with `context` (else they list the
    // page's product's pairs in their order).
    let blends = uses(&[Strategy::Personalized, Strategy::BasketCrossSell])
        || (context > 0 && uses(&[Strategy::ViewedTogether, Strategy::BoughtTogether]));
    let content = match given.content {
        None => DEFAULT_CONTENT,
        Some(_) if !blends => {
            return Err(Invalid::at(
                key("content"),
                "only blends mix content with pairs: personalized, basket_cross_sell, and \
                 viewed_together or bought_together with context above 0; remove it, use one \
                 of them or set context"
                    .to_owned(),
            ));
        }
        Some(weight) if (0.0..=1.0).contains(&weight) => weight,
        Some(weight) => {
            return Err(Invalid::at(
                key("content"),
                format!("must be between 0 and 1, got {weight}"),
            ));
        }
    };
    // A weight of `personalized`'s recipe, between 0 and `max`.
    let part = |name: &str, given: Option<f64>, default: f64, max: f64| match given {
        None => Ok(default),
        Some(_) if !personal => Err(only_personal(name)),
        Some(weight) if (0.0..=max).contains(&weight) => Ok(weight),
        Some(weight) => Err(Invalid::at(
            key(name),
            format!("must be between 0 and {max}, got {weight}"),
        )),
    };
    let sessions = part("sessions", given.sessions, DEFAULT_SESSIONS, 10.0)?;
    let popularity = part("popularity", given.popularity, DEFAULT_POPULARITY, 10.0)?;
    let purchases = part("purchases", given.purchases, DEFAULT_PURCHASES, 1.0)?;
    Ok(ZoneRecipe {
        history,
        recency,
        long_term,
        context,
        content,
        sessions,
        popularity,
        purchases,
        pinned: RecipePins {
            history: given.history.is_some(),
            long_term: given.long_term.is_some(),
            sessions: given.sessions.is_some(),
            popularity: given.popularity.is_some(),
            purchases: given.purchases.is_some(),
        },
    })
}

pub(super) fn page_types(
    zone: &FileZone,
    key: &impl Fn(&str) -> String,
) -> Result<Vec<PageType>, Invalid> {
    let mut page_types = Vec::with_capacity(zone.page_types.len());
    for (p, name) in zone.page_types.iter().enumerate() {
        let page_type = PageType::from_name(name).ok_or_else(|| {
            let all: Vec<&str> = PageType::ALL.iter().map(|p| p.name()).collect();
            Invalid::at(
                format!("{}[{p}]", key("page_types")),
                format!(
                    "unknown page type {name:?}; expected one of {}",
                    all.join(", ")
                ),
            )
        })?;
        page_types.push(page_type);
    }
    Ok(page_types)
}

/// The images or template of a zone, checked against its type.
pub(super) fn zone_content(
    zone: &FileZone,
    kind: ZoneKind,
    key: &impl Fn(&str) -> String,
) -> Result<ZoneContent, Invalid> {
    let takes_images = matches!(kind, ZoneKind::Image | ZoneKind::ImageCarousel);
    if !takes_images && !zone.images.is_empty() {
        return Err(Invalid::at(
            key("images"),
            format!(
                "{} zones have no images; only image and image-carousel zones do",
                kind.name()
            ),
        ));
    }
    if kind != ZoneKind::Html && zone.template.is_some() {
        return Err(Invalid::at(
            key("template"),
            format!("{} zones have no template; only html zones do", kind.name()),
        ));
    }
    let mut content = ZoneContent::default();
    match kind {
        ZoneKind::Image | ZoneKind::ImageCarousel => {
            if zone.images.is_empty() {
                return Err(Invalid::at(
                    key("images"),
                    "at least one image is required".to_owned(),
                ));
            }
            if kind == ZoneKind::Image && zone.images.len() > 1 {
                return Err(Invalid::at(
                    key("images"),
                    format!(
                        "an image zone shows one image, got {}; use image-carousel for several",
                        zone.images.len()
                    ),
                ));
            }
            for (n, image) in zone.images.iter().enumerate() {
                if image.url.trim().is_empty() {
                    return Err(Invalid::at(
                        format!("{}[{n}].url", key("images")),
                        "must not be empty".to_owned(),
                    ));
                }
                content.images.push(ZoneImage {
                    url: image.url.clone(),
                    link: image.link.clone(),
                    alt: image.alt.clone(),
                });
            }
        }
        ZoneKind::Html => {
            let Some(template) = &zone.template else {
                return Err(Invalid::at(
                    key("template"),
                    "required for html zones".to_owned(),
                ));
            };
            vitrine_ingest::templates::check(template)
                .map_err(|e| Invalid::at(key("template"), format!("not a valid template: {e}")))?;
            content.template = Some(template.clone());
        }
        ZoneKind::RecommenderProduct
        | ZoneKind::RecommenderCategory
        | ZoneKind::RecommenderBrand => {}
    }
    Ok(content)
}

/// Why a strategy name cannot fill a zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StrategyError {
    /// No strategy has the name.
    Unknown(String),
    /// The strategy fills zones of another kind than `filled` (the zone's `kind`, or
    /// recommender-product for html zones).
    WrongKind {
        strategy: Strategy,
        kind: ZoneKind,
        filled: ZoneKind,
    },
}

impl fmt::Display for StrategyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrategyError::Unknown(name) => {
                let available: Vec<&str> = Strategy::AVAILABLE.iter().map(|(n, _)| *n).collect();
                write!(
                    f,
                    "unknown strategy {name:?}; available: {}",
                    available.join(", ")
                )
            }
            StrategyError::WrongKind {
                strategy,
                kind,
                filled,
            } => {
                let fitting: Vec<&str> = Strategy::AVAILABLE
                    .iter()
                    .filter(|(_, s)| s.kind() == *filled)
                    .map(|(n, _)| *n)
                    .collect();
                write!(
                    f,
                    "strategy {:?} does not fill {} zones; use one of {}",
                    strategy.name(),
                    kind.name(),
                    fitting.join(", ")
                )
            }
        }
    }
}

/// The strategy of a name.
pub(super) fn strategy(name: &str) -> Result<Strategy, StrategyError> {
    Strategy::from_name(name).ok_or_else(|| StrategyError::Unknown(name.to_owned()))
}
