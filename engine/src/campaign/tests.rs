//! Campaigns through an account: the first qualifying campaign with enough items is
//! shown, a segment reads what the request's events just recorded, a paused campaign is
//! skipped, and the history and a visitor's visits go through a state snapshot.

use compact_str::CompactString;

use super::content::{Content, Custom, Source};
use super::segment::{Condition, Range, Reads};
use super::*;
use crate::account::{Account, ServeRequest};
use crate::catalogue::{Product, UnixMillis};
use crate::event::{Event, PageType};
use crate::testing;
use crate::zone::Strategy;

const T0: UnixMillis = 1_800_000_000_000;

fn account() -> Account {
    let products = ["a", "b", "c", "d"].map(|id| Product {
        prices: testing::priced(500, "GBP"),
        ..testing::product(id)
    });
    testing::account(
        vec![testing::zone("Z", Strategy::Trending, 4)],
        testing::catalogue(products),
    )
}

fn manual(id: &str, segment: Option<usize>, products: &[&str], min_items: usize) -> Campaign {
    let spec = testing::zone("Z", Strategy::Trending, 4);
    Campaign {
        id: id.to_owned(),
        variant: crate::account::campaign_variant(id),
        name: id.to_owned(),
        title: None,
        enabled: true,
        segment,
        schedule: None,
        content: Content::Custom(Box::new(Custom {
            source: Source::Manual {
                products: products.iter().map(|p| CompactString::from(*p)).collect(),
                categories: Vec::new(),
                brands: Vec::new(),
            },
            filters: Vec::new(),
            boosts: Vec::new(),
            pins: Vec::new(),
            interned: Default::default(),
            spec: crate::zone::ZoneSpec {
                strategy: None,
                ..spec
            },
        })),
        min_items,
    }
}

fn set(campaigns: Vec<Campaign>, segments: Vec<Segment>) -> CampaignSet {
    let reads = segments
        .iter()
        .fold(Reads::default(), |r, s| r.with(s.rule.reads()));
    CampaignSet {
        experiments: Vec::new(),
        holdout: None,
        version: 1,
        segments,
        zones: vec![ZoneCampaigns {
            zone: "Z".to_owned(),
            key: super::zone_key("Z"),
            version: 1,
            campaigns,
            reads,
        }],
    }
}

fn install(account: &Account, set: CampaignSet) {
    let version = CampaignVersion {
        version: set.version,
        at: T0,
        author: "test".to_owned(),
        summary: "test".to_owned(),
        document: std::sync::Arc::default(),
    };
    assert!(account.campaigns().install(version, set));
}

fn shown(account: &Account, visitor: &str, events: Vec<Event>) -> (Vec<String>, Option<usize>) {
    let outcome = account.serve(ServeRequest {
        visitor_id: Some(visitor.into()),
        session_id: None,
        currency: None,
        events: events.into(),
        zones: vec!["Z".into()].into(),
        now: T0,
        search: None,
        context: RequestContext::default(),
    });
    let zone = outcome.zones.first().expect("the zone");
    let ids = zone
        .items
        .iter()
        .filter_map(|i| outcome.catalogue.product(i.product))
        .map(|p| p.id.to_string())
        .collect();
    (ids, zone.campaign)
}

fn page(page_type: PageType) -> Event {
    Event::PageView {
        page_type,
        product_id: None,
        category_id: None,
        brand_id: None,
    }
}

#[test]
fn the_first_qualifying_campaign_with_enough_items_is_shown() {
    let account = account();
    let two_pages = Segment {
        id: "busy".to_owned(),
        name: "busy".to_owned(),
        rule: Condition::SessionPageViews(Range {
            min: Some(2.0),
            max: None,
        }),
    };
    install(
        &account,
        set(
            vec![
                manual("busy", Some(0), &["a"], 1),
                manual("short", None, &["b", "missing"], 2),
                manual("everyone", None, &["c", "d"], 1),
            ],
            vec![two_pages],
        ),
    );
    // One page view: not in the segment; the second campaign has one item of two.
    assert_eq!(
        shown(&account, "v", vec![page(PageType::Homepage)]),
        (vec!["c".to_owned(), "d".to_owned()], Some(2))
    );
    // The same session's second page view is read by the same request's segment.
    assert_eq!(
        shown(
            &account,
            "w",
            vec![page(PageType::Homepage), page(PageType::Other)]
        ),
        (vec!["a".to_owned()], Some(0))
    );
}

#[test]
fn a_paused_campaign_is_skipped_and_none_qualifying_leaves_the_zone_empty() {
    let account = account();
    let mut paused = manual("paused", None, &["a"], 1);
    paused.enabled = false;
    install(&account, set(vec![paused], Vec::new()));
    assert_eq!(shown(&account, "v", Vec::new()), (Vec::new(), None));
}

#[test]
fn history_drafts_and_visits_go_through_a_state_snapshot() {
    let account = account();
    install(
        &account,
        set(vec![manual("one", None, &["a"], 1)], Vec::new()),
    );
    shown(
        &account,
        "v",
        vec![page(PageType::Homepage), page(PageType::Other)],
    );
    account.campaigns().apply_draft(draft::Draft {
        part: draft::zone_part("Z"),
        body: Some("{\"campaigns\": []}".to_owned()),
        author: "maya".to_owned(),
        at: T0,
        based_on: 1,
        id: 7,
    });
    let mut entries = Vec::new();
    account.export_state(&mut |entry| entries.push(entry));
    let restored = self::account();
    for entry in entries {
        restored.restore_entry(entry);
    }
    assert_eq!(
        restored.campaigns().history(),
        account.campaigns().history()
    );
    assert_eq!(restored.campaigns().drafts(), account.campaigns().drafts());
    assert!(restored.campaigns().drafts().get("zone:Z").is_some());
    let visits = |a: &Account| {
        let mut found = None;
        a.export_state(&mut |entry| {
            if let crate::state::StateEntry::Visits { visitor, visits } = entry
                && visitor == "v"
            {
                found = Some(*visits);
            }
        });
        found.expect("the visitor's visits")
    };
    assert_eq!(visits(&restored), visits(&account));
    assert_eq!(visits(&restored).session_page_views, 2);
    // A version not after the latest (a record applied twice) changes nothing.
    let again = CampaignVersion {
        version: 1,
        at: T0,
        author: "again".to_owned(),
        summary: String::new(),
        document: std::sync::Arc::default(),
    };
    assert!(!restored.campaigns().install(again, CampaignSet::default()));
}

#[test]
fn a_segments_size_reads_each_visitors_latest_request_through_a_state_snapshot() {
    let account = account();
    let phone = RequestContext {
        device: Some(DeviceClass::Mobile),
        referrer_host: Some("www.google.com".into()),
        ..RequestContext::default()
    };
    for (visitor, context) in [("phone", phone), ("desk", RequestContext::default())] {
        account.serve(ServeRequest {
            visitor_id: Some(visitor.into()),
            session_id: None,
            currency: None,
            events: vec![page(PageType::ProductPage)].into(),
            zones: vec!["Z".into()].into(),
            now: T0,
            search: None,
            context,
        });
    }
    let rule = Condition::All(vec![
        Condition::Device(vec![DeviceClass::Mobile]),
        Condition::ReferrerHost(segment::Names::folded(["google.com"])),
        Condition::PageType(vec![PageType::ProductPage]),
    ]);
    assert_eq!(account.segment_size(&rule, T0).matching, 1);
    // Through the archive a state snapshot writes.
    let restored = self::account();
    account.export_state(&mut |entry| {
        let bytes = rkyv::to_bytes::<rkyv::rancor::Error>(&entry).expect("archived");
        let entry = rkyv::from_bytes::<crate::state::StateEntry, rkyv::rancor::Error>(&bytes)
            .expect("read back");
        restored.restore_entry(entry);
    });
    assert_eq!(restored.segment_size(&rule, T0).matching, 1);
    assert_eq!(restored.segment_size(&rule, T0).visitors, 2);
}

#[test]
fn names_compare_without_regard_to_case() {
    let names = segment::Names::folded(["Électroménager", "GB"]);
    assert!(names.has("électroménager"));
    assert!(names.has("gb"));
    assert!(names.has("Gb"));
    assert!(!names.has("FR"));
}

#[test]
fn merged_filters_keep_what_every_filter_alone_keeps() {
    use super::content::Filter;
    // a: 3.00 in shoes by Acme; b: 6.00 in shoes by Bolt; c: 9.00 in hats by Acme;
    // d: 12.00 in hats by Cord; e: 7.00 in socks, no brand.
    let product = |id: &str, minor: i64, category: &str, brand: Option<&str>| Product {
        prices: testing::priced(minor, "GBP"),
        categories: testing::names(&[category]),
        brand: brand.map(str::to_owned),
        ..testing::product(id)
    };
    let account = testing::account(
        vec![testing::zone("Z", Strategy::Trending, 4)],
        testing::catalogue([
            product("a", 300, "shoes", Some("Acme")),
            product("b", 600, "shoes", Some("Bolt")),
            product("c", 900, "hats", Some("Acme")),
            product("d", 1200, "hats", Some("Cord")),
            product("e", 700, "socks", None),
        ]),
    );
    let ids = |list: &[&str]| super::content::Ids::of(list.iter().copied());
    let version = std::cell::Cell::new(0);
    let with = |filters: Vec<Filter>| {
        let mut campaign = manual("all", None, &["a", "b", "c", "d", "e"], 0);
        if let Content::Custom(custom) = &mut campaign.content {
            custom.filters = filters;
            custom.spec.count = 5;
        }
        let mut next = set(vec![campaign], Vec::new());
        version.set(version.get() + 1);
        next.version = version.get();
        install(&account, next);
        shown(&account, "v", Vec::new()).0
    };
    let price = |min: Option<f64>, max: Option<f64>| Filter::Price { min, max };
    // Two price filters: both bounds hold.
    assert_eq!(
        with(vec![price(Some(5.0), None), price(None, Some(9.0))]),
        ["b", "c", "e"]
    );
    // Two brand exclusions and a category exclusion; a product without a brand passes
    // a brand exclusion.
    assert_eq!(
        with(vec![
            Filter::BrandNotIn(ids(&["Bolt"])),
            Filter::BrandNotIn(ids(&["Cord"])),
            Filter::CategoryNotIn(ids(&["shoes"])),
        ]),
        ["c", "e"]
    );
    // An exclusion of ids the catalogue does not know excludes nothing; an inclusion of
    // them includes nothing.
    assert_eq!(
        with(vec![Filter::CategoryNotIn(ids(&["gloves"]))]),
        ["a", "b", "c", "d", "e"]
    );
    assert!(with(vec![Filter::BrandIn(ids(&["Nobody"]))]).is_empty());
    // Inclusions each hold: in hats and by Acme.
    assert_eq!(
        with(vec![
            Filter::CategoryIn(ids(&["hats", "socks"])),
            Filter::BrandIn(ids(&["Acme"])),
        ]),
        ["c"]
    );
}
