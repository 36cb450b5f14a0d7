//! What the strategy and explain tests share: a small catalogue, an account with one
//! zone, and events.

use vitrine_engine::Account;
use vitrine_engine::account::{ExplainRequest, Explanation, ServeRequest};
use vitrine_engine::catalogue::{
    Catalogue, CatalogueBuilder, PriceSet, Product, ProductIdx, UnixMillis, Visibility,
};
use vitrine_engine::event::{BasketLine, Event, Identity, Order, PageType, PersonalDetails};
use vitrine_engine::recommend::Fact;
use vitrine_engine::zone::Strategy;
use vitrine_testkit::{self as testkit, money, priced};

pub(crate) const T0: UnixMillis = 1_800_000_000_000;

pub(crate) fn product(id: &str) -> Product {
    Product {
        title: id.to_uppercase(),
        prices: priced(1000, "GBP"),
        categories: testkit::names(&["c"]),
        ..testkit::product(id)
    }
}

/// a..f priced in GBP; `usd` only in USD; `b2b` only for account `acme`; `sku-b` is b's
/// SKU; a's related products and associations point at the others.
pub(crate) fn catalogue() -> Catalogue {
    let mut builder = CatalogueBuilder::new();
    builder.upsert_product(Product {
        related_products: vec!["SKU-B".into(), "c".into(), "usd".into(), "nope".into()],
        associated_ids: vec!["d".into(), "missing".into()],
        associated_skus: vec!["SKU-B".into()],
        ..product("a")
    });
    builder.upsert_product(Product {
        sku: Some("SKU-B".into()),
        ..product("b")
    });
    for id in ["c", "d", "e", "f"] {
        builder.upsert_product(product(id));
    }
    builder.upsert_product(Product {
        prices: PriceSet {
            prices: vec![money(500, "USD")],
            sale_prices: vec![],
        },
        ..product("usd")
    });
    builder.upsert_product(Product {
        visibility: Visibility::OnlyAccounts(vec!["acme".into()]),
        ..product("b2b")
    });
    builder.build().unwrap()
}

pub(crate) fn account(strategy: Strategy) -> Account {
    account_with(strategy, catalogue())
}

pub(crate) fn account_with(strategy: Strategy, catalogue: Catalogue) -> Account {
    testkit::account(vec![testkit::zone("Z", strategy, 10)], catalogue)
}

pub(crate) fn view(id: &str) -> Event {
    Event::ProductView { id: id.into() }
}

pub(crate) fn product_page(id: &str) -> Event {
    Event::PageView {
        page_type: PageType::ProductPage,
        product_id: Some(id.into()),
        category_id: None,
        brand_id: None,
    }
}

/// A line of one `id` at 10.
pub(crate) fn line(id: &str) -> BasketLine {
    BasketLine {
        id: id.into(),
        qty: 1.0,
        unit_price: 10.0,
    }
}

/// The basket of a [`line`] of each of `ids`, reported whole.
pub(crate) fn basket(ids: &[&str]) -> Event {
    Event::SetBasket {
        items: ids.iter().map(|id| line(id)).collect(),
    }
}

pub(crate) fn order(id: &str, items: &[&str]) -> Event {
    Event::Order(Box::new(Order {
        order_id: id.into(),
        items: items.iter().map(|id| line(id)).collect(),
        total: None,
        identity: Identity {
            user_id: Some(format!("user-{id}")),
            ..Identity::default()
        },
        details: PersonalDetails::default(),
    }))
}

/// An order of `user`'s as the store's order history reports it (`customer_order`):
/// counted for the product models and the customer's purchases, not a step of a visit.
pub(crate) fn customer_order(user: &str, id: &str, items: &[&str]) -> Event {
    Event::CustomerOrder(Box::new(Order {
        order_id: id.into(),
        items: items.iter().map(|id| line(id)).collect(),
        total: None,
        identity: Identity {
            user_id: Some(user.into()),
            ..Identity::default()
        },
        details: PersonalDetails::default(),
    }))
}

pub(crate) fn track(account: &Account, visitor: &str, events: Vec<Event>, now: UnixMillis) {
    account.serve(ServeRequest {
        search: None,
        visitor_id: Some(visitor.into()),
        session_id: None,
        currency: None,
        events: events.into(),
        zones: vec![].into(),
        now,
        context: Default::default(),
    });
}

/// The zone's ids for `visitor` after `events`.
pub(crate) fn zone(
    account: &Account,
    visitor: &str,
    events: Vec<Event>,
    currency: &str,
) -> Vec<String> {
    let outcome = account.serve(ServeRequest {
        search: None,
        visitor_id: Some(visitor.into()),
        session_id: None,
        currency: Some(testkit::currency(currency)),
        events: events.into(),
        zones: vec!["Z".into()].into(),
        now: T0 + 1_000,
        context: Default::default(),
    });
    outcome.zones[0]
        .items
        .iter()
        .map(|item| {
            outcome
                .catalogue
                .product(item.product)
                .unwrap()
                .id
                .to_string()
        })
        .collect()
}

pub(crate) fn explain(
    account: &Account,
    visitor: Option<&str>,
    product: Option<&str>,
) -> Explanation {
    account
        .explain(&ExplainRequest {
            zone: "Z".into(),
            visitor_id: visitor.map(Into::into),
            product: product.map(Into::into),
            currency: None,
            now: T0 + 1_000,
            page_type: None,
            category: None,
            context: None,
            campaigns: None,
            made_up: None,
        })
        .unwrap()
}

pub(crate) fn id_of(explanation: &Explanation, idx: ProductIdx) -> String {
    explanation.catalogue.product(idx).unwrap().id.to_string()
}

/// The explained items as (id, strategy, facts with ids for indexes).
pub(crate) fn explained(e: &Explanation) -> Vec<(String, Strategy, Vec<String>)> {
    e.items
        .iter()
        .map(|item| {
            let facts = item
                .facts
                .iter()
                .map(|fact| match fact {
                    Fact::ViewedWith {
                        with,
                        strength,
                        weight,
                    } => {
                        format!("viewed with {} {strength:.2} x{weight}", id_of(e, *with))
                    }
                    Fact::BoughtWith {
                        with,
                        strength,
                        weight,
                    } => {
                        format!("bought with {} {strength:.2} x{weight}", id_of(e, *with))
                    }
                    Fact::SimilarTo(with) => format!("similar to {}", id_of(e, *with)),
                    Fact::ListedBy(by) => format!("listed by {}", id_of(e, *by)),
                    Fact::Popularity { rank, .. } => format!("rank {rank}"),
                    Fact::UnitsSold(units) => format!("{units} sold"),
                    Fact::RecentlyViewed(at) => format!("viewed {at}"),
                    other => format!("{other:?}"),
                })
                .collect();
            (id_of(e, item.item.product), item.strategy, facts)
        })
        .collect()
}
