//! Tests of zone analytics: impressions, credits and the counters.
use super::*;

const T0: UnixMillis = 1_800_000_000_000;

fn shown(zone: &str, products: &[&str]) -> ShownZone {
    ShownZone {
        zone: zone.into(),
        variant: CompactString::default(),
        products: products.iter().map(|p| (*p).into()).collect(),
    }
}

fn gbp() -> Currency {
    Currency::from_code("GBP").unwrap()
}

/// A product's key in these tests: its first byte.
fn key(id: &str) -> u32 {
    u32::from(id.as_bytes()[0])
}

impl Impressions {
    fn record_test(&mut self, shown: &[ShownZone], session: u64, now: UnixMillis) -> Tallies {
        let by_id = |z: usize, i: usize| Some(key(shown.get(z)?.products.get(i)?));
        self.record(shown, by_id, session, now)
    }
}

#[test]
fn an_answer_counts_once_per_visitor_and_day() {
    let mut impressions = Impressions::default();
    let first = impressions.record_test(&[shown("Z", &["a", "b"])], 1, T0);
    assert_eq!(first[0].counts.answers, 1);
    assert_eq!(first[0].counts.impressions, 2);
    assert_eq!(first[0].counts.visitors, 1);
    let again = impressions.record_test(&[shown("Z", &["a"])], 1, T0 + 1000);
    assert_eq!(again[0].counts.visitors, 0);
    let tomorrow = impressions.record_test(&[shown("Z", &["a"])], 1, T0 + MILLIS_PER_DAY);
    assert_eq!(tomorrow[0].counts.visitors, 1);
    assert_eq!(impressions.counted.len(), 1, "earlier days are forgotten");
}

#[test]
fn touches_are_credited_once_to_the_latest_answer_within_reach() {
    let window = 7 * MILLIS_PER_DAY;
    let mut impressions = Impressions::default();
    impressions.record_test(&[shown("A", &["a", "b"])], 1, T0);
    impressions.record_test(&[shown("B", &["b"])], 1, T0 + 10);
    // b: last touch is zone B.
    let view = Touch::View {
        product: key("b"),
        session: 1,
    };
    let credited = impressions.credit(view, T0 + 20, window).unwrap();
    assert_eq!(credited.key.zone, "B");
    assert_eq!(credited.counts.viewed, 1);
    // Viewed again: the older answer that showed it is credited, then nothing.
    assert_eq!(
        impressions.credit(view, T0 + 30, window).unwrap().key.zone,
        "A"
    );
    assert!(impressions.credit(view, T0 + 40, window).is_none());
    // Another session: no view-through.
    let elsewhere = Touch::View {
        product: key("a"),
        session: 2,
    };
    assert!(impressions.credit(elsewhere, T0 + 50, window).is_none());
    // An order line within the window, then one after it.
    let line = Touch::Order {
        product: key("a"),
        units: 2,
        minor: 1998,
        currency: gbp(),
    };
    let ordered = impressions
        .credit(line, T0 + MILLIS_PER_DAY, window)
        .unwrap();
    assert_eq!(ordered.key.day, day_of(T0 + MILLIS_PER_DAY));
    assert_eq!(ordered.counts.ordered_units, 2);
    assert_eq!(ordered.counts.revenue, vec![(gbp(), 1998)]);
    assert_eq!(
        ordered.counts.revenue_squares,
        vec![(gbp(), 1998.0 * 1998.0)]
    );
    assert_eq!(ordered.counts.ordering_visitors, 1);

    let late = Touch::Order {
        product: key("b"),
        units: 1,
        minor: 100,
        currency: gbp(),
    };
    assert!(impressions.credit(late, T0 + window + 11, window).is_none());
    // A product never shown earns nothing.
    assert!(
        impressions
            .credit(Touch::Basket { product: key("z") }, T0 + 60, window)
            .is_none()
    );
}

#[test]
fn squares_follow_each_visitors_revenue_of_the_day() {
    let window = 7 * MILLIS_PER_DAY;
    let mut impressions = Impressions::default();
    impressions.record_test(&[shown("A", &["a", "b"])], 1, T0);
    let line = |product: &'static str, minor: i64| Touch::Order {
        product: key(product),
        units: 1,
        minor,
        currency: gbp(),
    };
    let mut day = ZoneCounts::default();
    day.add(
        &impressions
            .credit(line("a", 300), T0, window)
            .unwrap()
            .counts,
    );
    day.add(
        &impressions
            .credit(line("b", 200), T0, window)
            .unwrap()
            .counts,
    );
    // One visitor with 500 that day: 500², not 300² + 200².
    assert_eq!(day.revenue_in(gbp()), 500);
    assert_eq!(day.squares_in(gbp()), 250_000.0);
    assert_eq!(day.ordering_visitors, 1);
}

#[test]
fn a_visitor_keeps_the_latest_answers_only() {
    let mut impressions = Impressions::default();
    for i in 0..(MAX_ANSWERS + 3) {
        let products: Vec<String> = (0..30).map(|p| format!("p{p}")).collect();
        let products: Vec<&str> = products.iter().map(String::as_str).collect();
        impressions.record_test(&[shown(&format!("Z{i}"), &products)], 1, T0);
    }
    assert_eq!(impressions.answers.len(), MAX_ANSWERS);
    assert_eq!(impressions.answers[0].zone, "Z3");
    assert_eq!(impressions.shown.len(), MAX_ANSWERS * MAX_ANSWER_ITEMS);
    assert_eq!(impressions.shown[0].answer, impressions.answers[0].number);
    for answer in &impressions.answers {
        let products = impressions
            .shown
            .iter()
            .filter(|s| s.answer == answer.number);
        assert_eq!(products.count(), MAX_ANSWER_ITEMS);
    }
}

#[test]
fn impressions_are_stored_by_id_and_restored_by_key() {
    let mut impressions = Impressions::default();
    impressions.record_test(&[shown("A", &["a", "b"])], 1, T0);
    let view = Touch::View {
        product: key("b"),
        session: 1,
    };
    impressions.credit(view, T0 + 1, MILLIS_PER_DAY).unwrap();
    let name = |k: u32| Some(CompactString::from(char::from(k as u8).to_string()));
    let stored = impressions.to_stored(name);
    assert_eq!(stored.shown[1].product, "b");
    assert_eq!(stored.shown[1].credited, VIEWED);
    assert_eq!(Impressions::from_stored(stored, key), impressions);
    // A key without an id (never the case for a shown product) is left out.
    assert!(impressions.to_stored(|_| None).shown.is_empty());
}

#[test]
fn revenue_is_kept_per_currency_in_code_order() {
    let usd = Currency::from_code("USD").unwrap();
    let mut counts = ZoneCounts::default();
    counts.add_revenue(usd, 500);
    counts.add_revenue(gbp(), 250);
    counts.add_revenue(usd, 1);
    assert_eq!(counts.revenue, vec![(gbp(), 250), (usd, 501)]);
}

/// A zone's shown products archive as they did when they were kept inline (a small
/// vector of twelve): the log's records written before read the same.
#[test]
fn shown_products_archive_as_the_inline_vector_did() {
    for count in [0, 1, 12, 13, 40] {
        let ids: Vec<CompactString> = (0..count)
            .map(|i| CompactString::from(format!("P-{i:04}-a-longer-product-id")))
            .collect();
        let inline: smallvec::SmallVec<[CompactString; 12]> = ids.iter().cloned().collect();
        let heap: ShownProducts = ids;
        assert_eq!(
            rkyv::to_bytes::<rkyv::rancor::Error>(&inline)
                .unwrap()
                .as_slice(),
            rkyv::to_bytes::<rkyv::rancor::Error>(&heap)
                .unwrap()
                .as_slice(),
            "{count} products"
        );
    }
}
