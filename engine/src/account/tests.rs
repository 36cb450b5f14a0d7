use super::*;
use crate::catalogue::Product;
use crate::catalogue::ProductIdx;
use crate::event::{BasketLine, Order, PersonalDetails};
use crate::event::{Event, Identity};
use crate::testing;
use crate::zone::Strategy;

const T0: UnixMillis = 1_800_000_000_000;

fn account() -> Account {
    let products = ["a", "b", "c"].map(|id| Product {
        prices: testing::priced(100, "GBP"),
        ..testing::product(id)
    });
    let zone = testing::zone("RV", Strategy::RecentlyViewed, 5);
    testing::account(vec![zone], testing::catalogue(products))
}

fn request(
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
        events,
        zones: vec!["RV".into()],
        now,
    }
}

fn order(id: &str, email: &str) -> Event {
    Event::Order(Order {
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
    })
}

#[test]
fn a_session_idle_for_more_than_five_minutes_gets_a_new_id() {
    let account = account();
    let first = account.serve(request("v", None, vec![], T0)).session_id;
    let active = account
        .serve(request("v", Some(&first), vec![], T0 + SESSION_IDLE_MILLIS))
        .session_id;
    assert_eq!(active, first, "exactly five idle minutes keeps the session");
    let later = T0 + 2 * SESSION_IDLE_MILLIS + 1;
    let renewed = account
        .serve(request("v", Some(&first), vec![], later))
        .session_id;
    assert_ne!(renewed, first);
    // Sweeping forgets idle sessions without touching active ones.
    account.expire_sessions(later + SESSION_IDLE_MILLIS + 1);
    let after_sweep = account
        .serve(request("v", Some(&renewed), vec![], later + 1_000))
        .session_id;
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
            identity: Identity {
                email: Some("ann@example.com".into()),
                user_id: Some("u-1".into()),
                ..Identity::default()
            },
            details: PersonalDetails::default(),
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
