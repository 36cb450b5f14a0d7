//! The zone cache changes no answer: two accounts, one with the cache and one without,
//! take the same randomized traffic (views, baskets, orders, page types, currencies),
//! with deltas, whole new catalogues, sale windows and availability windows opening and
//! closing, and model rounds in between, and fill every zone with the same items at
//! the same prices.

use super::*;
use crate::catalogue::{GroupPrice, Product};
use crate::event::{BasketLine, Event, Identity, Order, PageType, PersonalDetails};
use crate::recommend::RenderedItem;
use crate::testing;
use crate::zone::Strategy;
use crate::zone::ZoneSpec;

const T0: UnixMillis = 1_800_000_000_000;
const HOUR: UnixMillis = 3_600_000;

/// A seeded sequence of choices.
struct Dice(crate::demo::Sequence);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
}

/// Product `n` of catalogue round `round`: in a category and brand, priced in two
/// currencies, some new, some on offer, some with a sale window or an availability
/// window around the traffic's hours, some hidden from recommenders.
fn product(n: u64, round: u64, dice: &mut Dice) -> Product {
    let id = format!("p{n:02}");
    let minor = i64::try_from(100 + n * 7 + round).unwrap_or(100);
    let mut prices = testing::priced(minor, "GBP");
    prices.prices.push(testing::money(minor * 2, "EUR"));
    let window = |dice: &mut Dice| {
        let from = T0 + i64::try_from(dice.below(48)).unwrap_or(0) * HOUR;
        (
            from,
            from + i64::try_from(1 + dice.below(6)).unwrap_or(1) * HOUR,
        )
    };
    let mut product = Product {
        prices,
        categories: vec![format!("c{}", n % 4)],
        brand: Some(format!("b{}", n % 3)),
        new_arrival: dice.below(4) == 0,
        on_offer: dice.below(5) == 0,
        exclude_from_recommenders: dice.below(20) == 0,
        search_tags: vec![format!("tag{}", n % 5)],
        ..testing::product(&id)
    };
    if dice.below(3) == 0 {
        product.prices.sale_prices = vec![testing::money(minor / 2, "GBP")];
        let (from, until) = window(dice);
        product.sale_from = Some(from);
        product.sale_until = Some(until);
    }
    if dice.below(6) == 0 {
        let (from, until) = window(dice);
        product.available_from = Some(from);
        product.available_until = Some(until);
    }
    if dice.below(10) == 0 {
        product.group_prices = vec![GroupPrice {
            group: "trade".to_owned(),
            prices: testing::priced(minor - 10, "GBP"),
        }];
    }
    product
}

fn catalogue(round: u64, dice: &mut Dice) -> Catalogue {
    testing::catalogue((0..40).map(|n| product(n, round, dice)))
}

fn zones() -> Vec<ZoneSpec> {
    let with = |id: &str, strategy: Strategy, count: usize, fallback: Vec<Strategy>| ZoneSpec {
        fallback,
        ..testing::zone(id, strategy, count)
    };
    let mut blended = with("VTH", Strategy::ViewedTogether, 4, vec![Strategy::Trending]);
    blended.recipe.context = 3;
    vec![
        with("TR", Strategy::Trending, 5, vec![]),
        with("TS", Strategy::TopSellers, 4, vec![Strategy::Trending]),
        with("CT", Strategy::CategoryTop, 5, vec![Strategy::Trending]),
        with("SIM", Strategy::Similar, 4, vec![Strategy::Trending]),
        with("VT", Strategy::ViewedTogether, 4, vec![Strategy::Similar]),
        with(
            "BT",
            Strategy::BoughtTogether,
            3,
            vec![Strategy::TopSellers],
        ),
        with("NA", Strategy::NewArrivals, 3, vec![]),
        with("OO", Strategy::OnOffer, 3, vec![Strategy::Trending]),
        with("RV", Strategy::RecentlyViewed, 4, vec![Strategy::Trending]),
        with("PER", Strategy::Personalized, 4, vec![Strategy::Trending]),
        blended,
    ]
}

/// A zone's items as ids and prices.
fn shown(outcome: &ServeOutcome) -> Vec<Vec<(String, ItemPriceText)>> {
    outcome
        .zones
        .iter()
        .map(|zone| {
            zone.items
                .iter()
                .map(|item: &RenderedItem| {
                    let id = outcome
                        .catalogue
                        .product(item.product)
                        .map(|p| p.id.to_string())
                        .unwrap_or_default();
                    (id, ItemPriceText::of(item))
                })
                .collect()
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq)]
struct ItemPriceText(String, Option<String>, bool);

impl ItemPriceText {
    fn of(item: &RenderedItem) -> ItemPriceText {
        ItemPriceText(
            item.price.price.display(),
            item.price.was.map(|w| w.display()),
            item.shared_price,
        )
    }
}

/// One shopper's request: a page (home, category or product), maybe a basket change
/// or an order, every zone asked for.
fn request(dice: &mut Dice, now: UnixMillis, orders: &mut u64) -> ServeRequest {
    let visitor = format!("v{}", dice.below(25));
    let product = format!("p{:02}", dice.below(44));
    let mut events = match dice.below(4) {
        0 => vec![Event::PageView {
            page_type: PageType::Homepage,
            product_id: None,
            category_id: None,
            brand_id: None,
        }],
        1 => vec![Event::PageView {
            page_type: PageType::CategoryListingPage,
            product_id: None,
            category_id: Some(format!("c{}", dice.below(5)).into()),
            brand_id: None,
        }],
        _ => vec![
            Event::PageView {
                page_type: PageType::ProductPage,
                product_id: Some(product.as_str().into()),
                category_id: None,
                brand_id: None,
            },
            Event::ProductView {
                id: product.as_str().into(),
            },
        ],
    };
    let line = |id: String| BasketLine {
        id,
        qty: 1.0,
        unit_price: 1.0,
    };
    match dice.below(8) {
        0 => events.push(Event::SetBasket {
            items: (0..dice.below(4))
                .map(|_| line(format!("p{:02}", dice.below(40))))
                .collect(),
        }),
        1 => {
            *orders += 1;
            events.push(Event::Order(Box::new(Order {
                order_id: format!("o{orders}"),
                items: (0..1 + dice.below(3))
                    .map(|_| line(format!("p{:02}", dice.below(40))))
                    .collect(),
                total: None,
                identity: Identity::default(),
                details: PersonalDetails::default(),
            })));
        }
        _ => {}
    }
    let currency = match dice.below(5) {
        0 => Some(testing::currency("EUR")),
        _ => None,
    };
    ServeRequest {
        search: (dice.below(15) == 0).then(|| format!("tag{}", dice.below(5))),
        visitor_id: Some(visitor),
        session_id: None,
        currency,
        events: events.into(),
        zones: zones()
            .iter()
            .map(|zone| zone.id.as_str().into())
            .collect::<Vec<_>>()
            .into(),
        now,
        context: Default::default(),
    }
}

#[test]
fn the_zone_cache_fills_every_zone_as_filling_it_for_the_request_does() {
    let mut dice = Dice(crate::demo::Sequence::new(11));
    let first = catalogue(0, &mut dice);
    let cached = testing::account(zones(), first.clone());
    cached.set_zone_cache_bytes(crate::zone_cache::SUGGESTED_BYTES);
    let plain = testing::account(zones(), first);
    let mut now = T0;
    let mut orders = 0;
    for step in 0..4_000u64 {
        // Minutes to an hour between requests: sale and availability windows open and
        // close along the way.
        now += i64::try_from(dice.below(20)).unwrap_or(0) * 60_000;
        if step % 97 == 96 {
            cached.rebuild_models();
            plain.rebuild_models();
        }
        if step % 211 == 210 {
            // A delta: a product changed or added, one removed.
            let mut edit = cached.catalogue().edit();
            let n = dice.below(44);
            let changed = product(n, step, &mut dice);
            edit.upsert_product(changed).expect("a valid product");
            edit.remove_product(&format!("p{:02}", dice.below(40)));
            let next = edit.finish();
            cached.writer().swap_catalogue(next.clone());
            plain.writer().swap_catalogue(next);
        }
        if step % 1_009 == 1_008 {
            // A whole new catalogue (a full feed: a new base).
            let next = catalogue(step, &mut dice);
            cached.writer().swap_catalogue(next.clone());
            plain.writer().swap_catalogue(next);
        }
        let request = request(&mut dice, now, &mut orders);
        let a = cached.serve(request.clone());
        let b = plain.serve(request);
        assert_eq!(shown(&a), shown(&b), "step {step}");
    }
    let figures = cached.zone_cache();
    assert!(
        figures.hits > 1_000 && figures.misses > 100,
        "the traffic reused cached zones and filled new ones: {figures:?}"
    );
    assert_eq!(plain.zone_cache().hits + plain.zone_cache().misses, 0);
}

#[test]
fn a_basket_that_empties_a_cached_list_fills_the_zone_for_the_request() {
    let products = (0..30).map(|n| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(&format!("p{n:02}"))
    });
    let zone = testing::zone("TR", Strategy::Trending, 4);
    let cached = testing::account(vec![zone.clone()], testing::catalogue(products.clone()));
    cached.set_zone_cache_bytes(crate::zone_cache::SUGGESTED_BYTES);
    let plain = testing::account(vec![zone], testing::catalogue(products));
    let basket: Vec<BasketLine> = (0..25)
        .map(|n| BasketLine {
            id: format!("p{n:02}"),
            qty: 1.0,
            unit_price: 1.0,
        })
        .collect();
    let ask = |visitor: &str, events: Vec<Event>| ServeRequest {
        search: None,
        visitor_id: Some(visitor.into()),
        session_id: None,
        currency: None,
        events: events.into(),
        zones: vec!["TR".into()].into(),
        now: T0,
        context: Default::default(),
    };
    for account in [&cached, &plain] {
        account.serve(ask("warm", vec![]));
    }
    let events = vec![Event::SetBasket { items: basket }];
    let a = cached.serve(ask("full-basket", events.clone()));
    let b = plain.serve(ask("full-basket", events));
    assert_eq!(shown(&a), shown(&b));
    assert_eq!(a.zones[0].items.len(), 4);
}
