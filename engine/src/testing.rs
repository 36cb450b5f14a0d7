//! Builders for tests, benches and tools: products, prices, zones and accounts in a
//! line each. Compiled for the engine's own tests, and for other crates with the
//! `testing` feature (which `vitrine-testkit` turns on and re-exports); the server
//! never calls them.
//!
//! Products start bare (an id and the title `Product <id>`); tests add what they need
//! with struct update syntax: `Product { prices: priced(1000, "GBP"), ..product("a") }`.

#![expect(
    clippy::expect_used,
    reason = "builders of test data fail loudly on a bad literal, such as a currency code"
)]

use crate::account::{Account, AccountSettings};
use crate::catalogue::{Catalogue, CatalogueBuilder, PriceSet, Product};
use crate::event::{BasketLine, Event, Identity, Order, PersonalDetails};
use crate::money::{Currency, Money};
use crate::zone::{Strategy, ZoneSpec};

/// The access key of [`account`].
pub const ACCESS_KEY: &str = "k";

/// A currency by ISO 4217 code.
pub fn currency(code: &str) -> Currency {
    Currency::from_code(code).expect("an ISO 4217 currency code")
}

/// Pounds sterling, the default currency of [`account`].
pub fn gbp() -> Currency {
    currency("GBP")
}

/// An amount in minor units of `code`.
pub fn money(minor: i64, code: &str) -> Money {
    Money {
        minor,
        currency: currency(code),
    }
}

/// A regular price and no sale price.
pub fn priced(minor: i64, code: &str) -> PriceSet {
    PriceSet {
        prices: vec![money(minor, code)],
        sale_prices: Vec::new(),
    }
}

/// Owned names (categories, tags, ids) from literals.
pub fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// A basket line of one product `id`, one unit at 1.
pub fn line(id: &str) -> BasketLine {
    BasketLine {
        id: id.into(),
        qty: 1.0,
        unit_price: 1.0,
    }
}

/// An order `order_id` of the products `ids`, a [`line`] each in that order, no total,
/// identity or details.
pub fn order(order_id: &str, ids: &[impl AsRef<str>]) -> Event {
    Event::Order(Box::new(Order {
        order_id: order_id.into(),
        items: ids.iter().map(|id| line(id.as_ref())).collect(),
        total: None,
        identity: Identity::default(),
        details: PersonalDetails::default(),
    }))
}

/// A product with an id and the title `Product <id>`, nothing else.
pub fn product(id: &str) -> Product {
    Product {
        id: id.to_owned(),
        title: format!("Product {id}"),
        ..Product::default()
    }
}

/// A catalogue of `products`, in order (dense ids 0, 1, ...).
pub fn catalogue(products: impl IntoIterator<Item = Product>) -> Catalogue {
    let mut builder = CatalogueBuilder::new();
    for product in products {
        builder.upsert_product(product);
    }
    builder
        .build()
        .expect("a catalogue of test products archives")
}

/// A product zone on every page type: `strategy`, no fallback, `count` items.
pub fn zone(id: &str, strategy: Strategy, count: usize) -> ZoneSpec {
    ZoneSpec {
        id: id.to_owned(),
        title: id.to_owned(),
        kind: strategy.kind(),
        strategy: Some(strategy),
        fallback: Vec::new(),
        count,
        page_types: Vec::new(),
        recipe: crate::zone::ZoneRecipe::default(),
    }
}

/// An account [`ACCESS_KEY`] in GBP with `zones`, serving `catalogue`.
pub fn account(zones: Vec<ZoneSpec>, catalogue: Catalogue) -> Account {
    account_with_models(zones, catalogue, crate::models::ModelSettings::default())
}

/// [`account`] with its own model settings.
pub fn account_with_models(
    zones: Vec<ZoneSpec>,
    catalogue: Catalogue,
    models: crate::models::ModelSettings,
) -> Account {
    let settings = AccountSettings {
        access_key: ACCESS_KEY.to_owned(),
        default_currency: gbp(),
        zones,
        models,
        attribution_days: crate::analytics::DEFAULT_ATTRIBUTION_DAYS,
        experiments: Vec::new(),
        zone_analytics: true,
        self_evaluation: true,
        tuning: crate::tuning::Tuning::default(),
        max_visitors: None,
        time_zone: jiff::tz::TimeZone::UTC,
    };
    Account::new(settings, catalogue)
}
