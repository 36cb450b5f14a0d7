use super::*;
use crate::catalogue::Product;
use crate::catalogue::ProductIdx;
use crate::event::{BasketLine, Order, PersonalDetails};
use crate::event::{Event, Identity};
use crate::testing;
use crate::visitor::SESSION_IDLE_MILLIS;
use crate::zone::Strategy;
use std::sync::atomic::AtomicBool;

pub(super) const T0: UnixMillis = 1_800_000_000_000;

pub(super) fn account() -> Account {
    let products = ["a", "b", "c"].map(|id| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(id)
    });
    let zone = testing::zone("RV", Strategy::RecentlyViewed, 5);
    testing::account(vec![zone], testing::catalogue(products))
}

pub(super) fn request(
    visitor: &str,
    session: Option<&str>,
    events: Vec<Event>,
    now: UnixMillis,
) -> ServeRequest {
    ServeRequest {
        search: None,
        visitor_id: Some(visitor.into()),
        session_id: session.map(str::to_owned),
        currency: None,
        events: events.into(),
        zones: vec!["RV".into()].into(),
        now,
        context: Default::default(),
    }
}

pub(super) fn order(id: &str, email: &str) -> Event {
    Event::Order(Box::new(Order {
        order_id: id.into(),
        items: vec![BasketLine {
            id: "a".into(),
            qty: 1.0,
            unit_price: 1.0,
        }],
        total: None,
        identity: Identity {
            email: Some(email.into()),
            ..Identity::default()
        },
        details: PersonalDetails {
            first_name: Some("Ann".into()),
            ..PersonalDetails::default()
        },
    }))
}

#[test]
fn a_session_idle_for_more_than_five_minutes_gets_a_new_id() {
    let account = account();
    let first = account
        .serve(request("v", None, vec![], T0))
        .session_id()
        .to_owned();
    let active = account
        .serve(request("v", Some(&first), vec![], T0 + SESSION_IDLE_MILLIS))
        .session_id()
        .to_owned();
    assert_eq!(active, first, "exactly five idle minutes keeps the session");
    let later = T0 + 2 * SESSION_IDLE_MILLIS + 1;
    let renewed = account
        .serve(request("v", Some(&first), vec![], later))
        .session_id()
        .to_owned();
    assert_ne!(renewed, first);
    // Sweeping forgets idle sessions without touching active ones.
    account.expire_sessions(later + SESSION_IDLE_MILLIS + 1);
    let after_sweep = account
        .serve(request("v", Some(&renewed), vec![], later + 1_000))
        .session_id()
        .to_owned();
    assert_ne!(after_sweep, renewed);
}

#[test]
fn an_order_id_counts_once_per_account() {
    let account = account();
    let outcome = account.serve(request("v1", None, vec![order("o-1", "a@x.io")], T0));
    assert!(outcome.notices.is_empty());
    let outcome = account.serve(request("v2", None, vec![order("o-1", "b@x.io")], T0));
    assert_eq!(
        outcome.notices,
        vec![Notice::DuplicateOrder {
            event: 0,
            order_id: "o-1".into()
        }]
    );
    assert!(account.visitor("v2").unwrap().orders.is_empty());
    assert!(account.has_order("o-1"));
}

#[test]
fn what_waits_for_a_models_round_shows_until_a_round_publishes_it() {
    let account = account();
    assert!(
        !account.models_pending(),
        "a new account's catalogue is ranked"
    );
    let view = |id: &str| Event::ProductView { id: id.into() };
    account.serve(request("v", None, vec![view("a")], T0));
    assert!(account.models_pending(), "a counted view waits for a round");
    assert!(account.rebuild_models());
    assert!(!account.models_pending(), "the round published it");
    // A page view without a category or brand counts for no model.
    let home = Event::PageView {
        page_type: crate::event::PageType::Homepage,
        product_id: None,
        category_id: None,
        brand_id: None,
    };
    account.serve(request("w", None, vec![home], T0 + 1));
    assert!(!account.models_pending());
    // A new catalogue version waits to be ranked.
    let next = account.catalogue().edit().finish();
    account.writer().swap_catalogue(next);
    assert!(
        account.models_pending(),
        "a new version waits for its rankings"
    );
    account.rebuild_models();
    assert!(!account.models_pending());
}

#[test]
fn views_show_in_the_same_request_and_the_page_product_is_left_out() {
    let account = account();
    let view = |id: &str| Event::ProductView { id: id.into() };
    let outcome = account.serve(request("v", None, vec![view("a"), view("b")], T0));
    let ids: Vec<ProductIdx> = outcome.zones[0].items.iter().map(|i| i.product).collect();
    assert_eq!(
        ids,
        vec![0],
        "b is the page's product; a was viewed before it"
    );
}

#[test]
fn forget_removes_linked_visitors_users_and_identity_links_but_not_others() {
    let account = account();
    account.serve(request(
        "v1",
        None,
        vec![order("o-1", "Ann@Example.com")],
        T0,
    ));
    account.serve(request(
        "v2",
        None,
        vec![Event::CustomerDetails {
            identity: Box::new(Identity {
                email: Some("ann@example.com".into()),
                user_id: Some("u-1".into()),
                ..Identity::default()
            }),
            details: Box::new(PersonalDetails::default()),
        }],
        T0,
    ));
    account.serve(request(
        "other",
        None,
        vec![Event::ProductView { id: "c".into() }],
        T0,
    ));
    account.upsert_user(UserRecord {
        user_id: "u-1".into(),
        ..UserRecord::default()
    });

    let erasure = account.forget("ANN@example.com");
    assert_eq!(
        erasure,
        Erasure {
            visitors: 2,
            users: 1
        }
    );
    assert!(account.visitor("v1").is_none() && account.visitor("v2").is_none());
    assert!(account.visitor("other").is_some());
    assert!(account.user("u-1").is_none());
    assert!(!account.forget("u-1").matched());
    // The order id stays recorded (it is not personal data), so it is not counted twice.
    assert!(account.has_order("o-1"));
}

fn customer_order(id: &str, user: &str, products: &[&str]) -> Order {
    Order {
        order_id: id.into(),
        items: products
            .iter()
            .map(|p| BasketLine {
                id: (*p).into(),
                qty: 2.0,
                unit_price: 1.0,
            })
            .collect(),
        total: None,
        identity: Identity {
            user_id: Some(user.into()),
            email: Some(format!("{user}@example.com")),
            ..Identity::default()
        },
        details: PersonalDetails::default(),
    }
}

#[test]
fn an_order_placed_by_staff_counts_for_the_customer_and_the_models_not_the_staff_visitor() {
    let products = ["a", "b", "c"].map(|id| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(id)
    });
    let zones = vec![testing::zone("TS", Strategy::TopSellers, 3)];
    let account = testing::account(zones, testing::catalogue(products));
    let moto = Event::CustomerOrder(Box::new(customer_order("moto-1", "5", &["a", "b"])));
    account.serve(request("staff", None, vec![moto.clone()], T0));
    let staff = account.visitor("staff").unwrap();
    assert!(
        staff.purchased.is_empty(),
        "not the staff member's purchase"
    );
    assert!(
        staff.identity.user_id.is_none(),
        "staff is not linked to the customer"
    );
    let customer = account.visitor("customer:user:5").unwrap();
    assert!(customer.purchased.iter().any(|p| p == "a"));
    assert!(customer.purchased.iter().any(|p| p == "b"));
    assert!(account.has_order("moto-1"));
    // The same order id again is a duplicate, as for a live order.
    let again = account.serve(request("staff", None, vec![moto], T0 + 1));
    assert_eq!(
        again.notices.first(),
        Some(&Notice::DuplicateOrder {
            event: 0,
            order_id: "moto-1".into()
        })
    );
    // The customer's own device, once logged in, sees the order in its history.
    let login = Event::CustomerDetails {
        identity: Box::new(Identity {
            user_id: Some("5".into()),
            ..Identity::default()
        }),
        details: Box::new(PersonalDetails::default()),
    };
    account.serve(request("ann-phone", None, vec![login], T0 + 2));
    let phone = account.visitor("ann-phone").unwrap();
    assert_eq!(phone.identity.user_id.as_deref(), Some("5"));
    assert_eq!(
        account.same_person("ann-phone", &phone.identity),
        ["customer:user:5"]
    );
    // Units sold count for top sellers: a and b (2 units each), c sold none.
    account.rebuild_models();
    let mut top = request("anyone", None, vec![], T0 + 3);
    top.zones = vec!["TS".into()].into();
    let outcome = account.serve(top);
    let ids = first_zone_ids(&outcome);
    let mut sold = ids.clone();
    sold.sort_unstable();
    assert_eq!(sold, ["a", "b"]);
    // Erasing the customer removes their record too.
    account.forget("5@example.com");
    assert!(account.visitor("customer:user:5").is_none());
}

#[test]
fn imported_orders_count_once_and_reach_the_customers_record() {
    let account = account();
    let orders = [
        customer_order("h-1", "7", &["c"]),
        customer_order("h-2", "7", &["b", "c"]),
        customer_order("h-1", "7", &["a"]),
    ];
    assert_eq!(account.import_orders(&orders, T0), 2, "h-1 once");
    let customer = account.visitor("customer:user:7").unwrap();
    assert_eq!(customer.orders.len(), 2);
    assert!(!customer.purchased.iter().any(|p| p == "a"));
    // Replayed from the log (a record without a visitor id), nothing is counted twice.
    let logged = crate::state::Tracked {
        visitor_id: String::new(),
        session_id: String::new(),
        now: T0,
        events: orders
            .iter()
            .map(|order| Event::CustomerOrder(Box::new(order.clone())))
            .collect(),
    };
    let restarted = self::account();
    restarted.replay(&logged);
    assert_eq!(
        restarted.visitor("customer:user:7").unwrap().orders.len(),
        2
    );
    assert!(restarted.visitor("").is_none(), "no visitor for the import");
}

#[test]
fn a_search_term_puts_matching_products_first() {
    let products = ["red shoe", "blue hat", "red hat"].map(|title| Product {
        title: title.into(),
        prices: testing::priced(100, "GBP"),
        ..testing::product(&title.replace(' ', "-"))
    });
    let zone = testing::zone("T", Strategy::Trending, 3);
    let account = testing::account(vec![zone], testing::catalogue(products));
    let mut searched = request("v", None, vec![], T0);
    searched.zones = vec!["T".into()].into();
    searched.search = Some("HAT".into());
    let outcome = account.serve(searched);
    let ids = first_zone_ids(&outcome);
    assert_eq!(ids.len(), 3);
    assert!(
        ids[..2].contains(&"blue-hat".to_owned()) && ids[..2].contains(&"red-hat".to_owned()),
        "{ids:?}"
    );
    assert_eq!(ids[2], "red-shoe");
}

/// The product ids of an outcome's first zone, in order.
fn first_zone_ids(outcome: &ServeOutcome) -> Vec<String> {
    outcome.zones[0]
        .items
        .iter()
        .map(|i| outcome.catalogue.product(i.product).unwrap().id.to_string())
        .collect()
}

/// A catalogue of `ids`, each priced 1.00 GBP.
fn priced_catalogue(ids: &[String]) -> Catalogue {
    testing::catalogue(ids.iter().map(|id| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(id)
    }))
}

/// Rebuilding round by round (only what changed each time) publishes the same
/// rankings and neighbour lists as one rebuild after everything.
#[test]
fn rebuilding_what_changed_matches_a_rebuild_from_scratch() {
    let ids: Vec<String> = (0..40).map(|i| format!("p{i:02}")).collect();
    let catalogue = || priced_catalogue(&ids);
    let stepwise = testing::account(vec![], catalogue());
    let at_once = testing::account(vec![], catalogue());
    let mut sequence = crate::demo::Sequence::new(3);
    let mut next = move |n: u64| sequence.next_u64() % n;
    for round in 0..30 {
        for v in 0..5 {
            let mut events: Vec<Event> = (0..4)
                .map(|_| Event::ProductView {
                    id: ids[next(40) as usize].as_str().into(),
                })
                .collect();
            if next(3) == 0 {
                events.push(Event::Order(Box::new(Order {
                    order_id: format!("o{round}-{v}"),
                    items: (0..3)
                        .map(|_| BasketLine {
                            id: ids[next(40) as usize].clone(),
                            qty: 1.0,
                            unit_price: 1.0,
                        })
                        .collect(),
                    total: None,
                    identity: Identity::default(),
                    details: PersonalDetails::default(),
                })));
            }
            let visitor = format!("v{}", next(8));
            let now = T0 + round * 3_600_000;
            stepwise.serve(request(&visitor, None, events.clone(), now));
            at_once.serve(request(&visitor, None, events, now));
        }
        stepwise.rebuild_models();
    }
    at_once.rebuild_models();
    let (a, b) = (
        stepwise.models.rankings.load(),
        at_once.models.rankings.load(),
    );
    assert_eq!(a.rankings.trending, b.rankings.trending);
    assert_eq!(a.rankings.top_sellers, b.rankings.top_sellers);
    let lists = |account: &Account| {
        let neighbours = account.models.neighbours.load();
        let sorted = |lists: &crate::models::ProductLists| {
            let mut all: Vec<(ProductIdx, Vec<ProductIdx>)> = lists
                .iter()
                .map(|e| (*e.key(), e.value().iter().map(|(idx, _)| *idx).collect()))
                .collect();
            all.sort();
            all
        };
        (
            sorted(&neighbours.viewed_together),
            sorted(&neighbours.bought_together),
        )
    };
    let (viewed, bought) = lists(&stepwise);
    assert!(viewed.len() > 30 && !bought.is_empty());
    assert_eq!((viewed, bought), lists(&at_once));
}

/// Rounds running while requests are tracked miss nothing: after the last request,
/// one more round publishes what a single round after everything does. (A round that
/// cleared the stale flag between a request's mark and its counting left that count
/// unranked until some later event.)
#[test]
fn rounds_racing_requests_miss_no_count() {
    let ids: Vec<String> = (0..12).map(|i| format!("p{i:02}")).collect();
    let catalogue = || priced_catalogue(&ids);
    let raced = testing::account(vec![], catalogue());
    let serial = testing::account(vec![], catalogue());
    let mut sequence = crate::demo::Sequence::new(11);
    for burst in 0..1000_i64 {
        let views: Vec<(String, UnixMillis)> = (0..8)
            .map(|n| {
                let id = ids[(sequence.next_u64() % 12) as usize].clone();
                (id, T0 + burst * 100 + n)
            })
            .collect();
        let serve = |account: &Account| {
            for (id, now) in &views {
                let events = vec![Event::ProductView {
                    id: id.as_str().into(),
                }];
                account.serve(request("v", None, events, *now));
            }
        };
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                serve(&raced);
                done.store(true, Ordering::Release);
            });
            while !done.load(Ordering::Acquire) {
                raced.rebuild_models();
            }
        });
        raced.rebuild_models();
        serve(&serial);
        serial.rebuild_models();
        let (a, b) = (raced.models.rankings.load(), serial.models.rankings.load());
        assert_eq!(a.rankings.trending, b.rankings.trending, "burst {burst}");
    }
}

/// Three shoes (a, b, c) priced in GBP, and a zone SIM of `similar` products.
fn shoe_shop() -> Account {
    let products = ["a", "b", "c"].map(|id| Product {
        prices: testing::priced(100, "GBP"),
        categories: vec!["shoes".into()],
        ..testing::product(id)
    });
    let zone = testing::zone("SIM", Strategy::Similar, 5);
    testing::account(vec![zone], testing::catalogue(products))
}

#[test]
fn an_anonymous_request_fills_zones_from_its_page_and_records_nothing() {
    let account = shoe_shop();
    let page = Event::PageView {
        page_type: crate::event::PageType::ProductPage,
        product_id: Some("a".into()),
        category_id: None,
        brand_id: None,
    };
    let mut anonymous = request(
        "",
        None,
        vec![page, Event::ProductView { id: "a".into() }],
        T0,
    );
    anonymous.zones = vec!["SIM".into(), "NOPE".into()].into();
    let outcome = account.serve_anonymous(&anonymous);
    assert_eq!(
        first_zone_ids(&outcome),
        ["b", "c"],
        "similar to the page's product, not itself"
    );
    assert!(matches!(
        outcome.notices[..],
        [Notice::UnknownZone { zone: 1, .. }]
    ));
    assert_eq!((account.visitor_count(), account.session_count()), (0, 0));
    assert!(outcome.served.tracked.events.is_empty() && outcome.served.shown.is_empty());
    assert_eq!(outcome.visitor_id(), "");
}

#[test]
fn a_click_counts_for_the_zone_and_day_and_survives_a_state_snapshot() {
    let account = account();
    let click = crate::state::Clicked {
        visitor_id: "v".into(),
        zone: "RV".into(),
        now: T0,
    };
    assert!(account.record_click(&click));
    assert!(account.record_click(&click));
    assert!(!account.record_click(&crate::state::Clicked {
        zone: "NOPE".into(),
        ..click.clone()
    }));
    let day = crate::analytics::day_of(T0);
    let counted = account.zone_analytics(day, day);
    assert_eq!(counted.len(), 1);
    assert_eq!(counted[0].1.clicked, 2);
    let restored = self::account();
    account.export_state(&mut |entry| restored.restore_entry(entry));
    assert_eq!(restored.zone_analytics(day, day)[0].1.clicked, 2);
}

#[test]
fn a_product_shown_again_is_credited_to_the_zone_when_viewed() {
    // The second answer reads the shown products' keys by index, not by id: a view of
    // one of them is credited to the zone all the same.
    let account = shoe_shop();
    let page = || Event::PageView {
        page_type: crate::event::PageType::ProductPage,
        product_id: Some("a".into()),
        category_id: None,
        brand_id: None,
    };
    let mut shown = Vec::new();
    let mut sessions = std::collections::HashMap::new();
    for (visitor, at) in [("v", T0), ("v", T0 + 1_000), ("w", T0 + 2_000)] {
        let session = sessions.get(visitor).map(String::as_str);
        let mut asked = request(visitor, session, vec![page()], at);
        asked.zones = vec!["SIM".into()].into();
        let outcome = account.serve(asked);
        sessions.insert(visitor, outcome.session_id().to_owned());
        shown.push(first_zone_ids(&outcome));
    }
    assert!(shown.iter().all(|ids| ids == &["b", "c"]), "{shown:?}");
    for visitor in ["v", "w"] {
        let view = request(
            visitor,
            Some(&sessions[visitor]),
            vec![Event::ProductView { id: "c".into() }],
            T0 + 3_000,
        );
        account.serve(ServeRequest {
            zones: Vec::new().into(),
            ..view
        });
    }
    let day = crate::analytics::day_of(T0);
    let counted = account.zone_analytics(day, day);
    assert_eq!(counted.len(), 1);
    assert_eq!(
        (
            counted[0].1.answers,
            counted[0].1.impressions,
            counted[0].1.viewed
        ),
        (3, 6, 2)
    );
}
