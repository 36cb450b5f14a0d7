//! The zone cache and texts written ahead change no answer byte: two accounts on the
//! demo catalogue, one with the zone cache and its product texts prepared in each
//! models round, one with neither, take the same randomized requests (pages, baskets,
//! orders, currencies), with deltas opening and closing sale windows, whole new
//! catalogues and model rounds in between; every answer body is rendered by both and
//! compared byte for byte (past the visitor and session ids, which each account draws).

use vitrine_engine::account::{Account, AccountSettings, ServeRequest};
use vitrine_engine::catalogue::{Catalogue, UnixMillis};
use vitrine_engine::event::{BasketLine, Event, Identity, Order, PageType, PersonalDetails};
use vitrine_engine::money::Currency;
use vitrine_engine::zone::{Strategy, ZoneSpec};

use super::{CampaignTemplates, Rendering, TextCache, written};

const T0: UnixMillis = 1_800_000_000_000;
const HOUR: UnixMillis = 3_600_000;

fn zone(id: &str, strategy: Strategy, count: usize, fallback: Vec<Strategy>) -> ZoneSpec {
    ZoneSpec {
        fallback,
        ..vitrine_engine::testing::zone(id, strategy, count)
    }
}

fn account(catalogue: Catalogue) -> Account {
    let settings = AccountSettings {
        access_key: "cache-shop".to_owned(),
        default_currency: Currency::from_code("GBP").unwrap(),
        zones: vec![
            zone("TR", Strategy::Trending, 8, vec![]),
            zone("CT", Strategy::CategoryTop, 6, vec![Strategy::Trending]),
            zone("SIM", Strategy::Similar, 6, vec![Strategy::Trending]),
            zone("NA", Strategy::NewArrivals, 4, vec![Strategy::OnOffer]),
            zone(
                "RV",
                Strategy::RecentlyViewed,
                4,
                vec![Strategy::TopSellers],
            ),
        ],
        models: vitrine_engine::models::ModelSettings::default(),
        attribution_days: vitrine_engine::analytics::DEFAULT_ATTRIBUTION_DAYS,
        experiments: Vec::new(),
        zone_analytics: true,
        self_evaluation: false,
        tuning: vitrine_engine::tuning::Tuning::default(),
        max_visitors: None,
        time_zone: jiff::tz::TimeZone::UTC,
    };
    Account::new(settings, catalogue)
}

/// The body past the visitor and session ids.
fn past_ids(body: &[u8]) -> &[u8] {
    let at = body
        .windows(10)
        .position(|w| w == b",\"errors\":")
        .expect("the errors member");
    &body[at..]
}

#[test]
fn answers_are_byte_identical_with_and_without_the_zone_cache_and_prepared_texts() {
    let mut dice = vitrine_engine::demo::Sequence::new(5);
    let mut below = move |n: u64| dice.next_u64() % n;
    let first = vitrine_engine::demo::catalogue().unwrap();
    let ids: Vec<String> = first.iter().map(|(_, p)| p.id.to_string()).collect();
    let cached = account(first.clone());
    cached.set_zone_cache_bytes(vitrine_engine::zone_cache::SUGGESTED_BYTES);
    let plain = account(first);
    let texts = [
        TextCache::new(cached.catalogue()),
        TextCache::new(plain.catalogue()),
    ];
    let templates = minijinja::Environment::new();
    let content = std::collections::HashMap::new();
    let campaign_templates = CampaignTemplates::default();
    let rendering = |texts| Rendering {
        texts,
        templates: &templates,
        content: &content,
        campaign_templates: &campaign_templates,
    };
    let gbp = Currency::from_code("GBP").unwrap();
    let mut prepared = 0;
    let mut now = T0;
    for step in 0..3_000u64 {
        now += i64::try_from(below(30)).unwrap() * 60_000;
        if step % 101 == 100 {
            cached.rebuild_models();
            plain.rebuild_models();
            // A few at a time, so that versions change while some are written ahead.
            prepared += texts[0].prepare(&cached.catalogue(), gbp, 400);
        }
        if step % 173 == 172 {
            // A delta: a product's sale window moved around the coming hours.
            let mut edit = cached.catalogue().edit();
            let id = &ids[usize::try_from(below(ids.len() as u64)).unwrap()];
            if let Ok(Some(mut product)) = edit.product(id) {
                let from = now + i64::try_from(below(4)).unwrap() * HOUR;
                product.sale_from = Some(from);
                product.sale_until = Some(from + HOUR);
                if product.prices.sale_prices.is_empty() {
                    let mut sale = product.prices.prices.clone();
                    for price in &mut sale {
                        price.minor = price.minor * 3 / 4;
                    }
                    product.prices.sale_prices = sale;
                }
                edit.upsert_product(product).unwrap();
            }
            let next = edit.finish();
            cached.writer().swap_catalogue(next.clone());
            plain.writer().swap_catalogue(next);
        }
        if step % 1_201 == 1_200 {
            // A full feed: the same products as a new base.
            let next = vitrine_engine::demo::catalogue().unwrap();
            cached.writer().swap_catalogue(next.clone());
            plain.writer().swap_catalogue(next);
        }
        let product = ids[usize::try_from(below(ids.len() as u64)).unwrap()].as_str();
        let mut events = match below(3) {
            0 => vec![Event::PageView {
                page_type: PageType::Homepage,
                product_id: None,
                category_id: None,
                brand_id: None,
            }],
            1 => vec![Event::PageView {
                page_type: PageType::CategoryListingPage,
                product_id: None,
                category_id: Some(
                    vitrine_engine::demo::category_id(usize::try_from(below(6)).unwrap()).into(),
                ),
                brand_id: None,
            }],
            _ => vec![
                Event::PageView {
                    page_type: PageType::ProductPage,
                    product_id: Some(product.into()),
                    category_id: None,
                    brand_id: None,
                },
                Event::ProductView { id: product.into() },
            ],
        };
        let line = |id: &str| BasketLine {
            id: id.to_owned(),
            qty: 1.0,
            unit_price: 1.0,
        };
        match below(6) {
            0 => events.push(Event::SetBasket {
                items: vec![line(&ids[usize::try_from(below(40)).unwrap()])],
            }),
            1 => events.push(Event::Order(Box::new(Order {
                order_id: format!("o{step}"),
                items: vec![line(&ids[usize::try_from(below(40)).unwrap()])],
                total: None,
                identity: Identity::default(),
                details: PersonalDetails::default(),
            }))),
            _ => {}
        }
        let currency = (below(4) == 0).then(|| Currency::from_code("USD").unwrap());
        let request = ServeRequest {
            search: None,
            visitor_id: Some(format!("v{}", below(30))),
            session_id: None,
            currency,
            events: events.into(),
            zones: ["TR", "CT", "SIM", "NA", "RV"]
                .map(Into::into)
                .into_iter()
                .collect::<Vec<_>>()
                .into(),
            now,
            context: Default::default(),
        };
        let shown = currency.unwrap_or(Currency::from_code("GBP").unwrap());
        let a = cached.serve(request.clone());
        let b = plain.serve(request);
        let a = written(&a, Vec::new(), shown, rendering(&texts[0]), 0).body;
        let b = written(&b, Vec::new(), shown, rendering(&texts[1]), 0).body;
        assert_eq!(
            String::from_utf8_lossy(past_ids(&a)),
            String::from_utf8_lossy(past_ids(&b)),
            "step {step}"
        );
    }
    let figures = cached.zone_cache();
    assert!(figures.hits > 1_000, "{figures:?}");
    assert!(prepared > 5_000, "texts written ahead: {prepared}");
}
