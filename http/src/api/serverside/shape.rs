//! A serverside body read in one pass, straight into its [`ServeRequest`]: the reader
//! for the shapes the plugins send on every page (page views, product views, baskets),
//! with no document built.
//!
//! It takes the members it knows as they come ([`Reader`]: strings borrowed from the
//! body) and checks each value with the same checks as [`super::parse`]. It answers only
//! for a body that is valid and certain to read as the document reader reads it; for
//! anything else it answers `None` and the body is read whole ([`super::handle`]), which
//! names every problem with its path. So an error answer is always the whole reader's,
//! and a body read here gives the request the whole reader would give (held by the
//! differential tests below and the fuzzers' `serverside` target).
//!
//! Left to the whole reader: a member given twice, a `null` where a value is required,
//! an id written as a number, `data` before `name`, and the events of orders and
//! logins.

use vitrine_engine::CompactString;
use vitrine_engine::account::{ServeRequest, ZoneIds};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::event::{BasketLine, Event, Events, PageType};
use vitrine_fields::{Bump, Errors, Json, JsonValue, Reader, check_id, number_text};

use super::checks::{
    check_agent, check_ip, check_page, check_url, checked_client_id, currency_of, zone_id_fits,
};
use super::context::request_context;
use super::events::{basket_line, page_type_named, text_fits};
use crate::auth::CredentialFields;
use crate::config::Limits;
use crate::routes::Endpoint;

/// A body read in one pass: its credentials and its request.
#[derive(Debug, PartialEq)]
pub struct Read<'a> {
    /// The access key (`appId`).
    pub access_key: &'a str,
    /// The secret key (`secretKey`).
    pub secret: &'a str,
    /// The request, valid.
    pub request: ServeRequest,
}

/// The top-level strings a request reads, by place ([`URL`] … [`SECRET`]), as given
/// (`null` is absent).
#[derive(Debug, Default)]
struct Given<'a>([Option<&'a str>; 10]);

const URL: usize = 0;
const AGENT: usize = 1;
const IP: usize = 2;
const REFERER: usize = 3;
const VISITOR_ID: usize = 4;
const SESSION_ID: usize = 5;
const CURRENCY: usize = 6;
const SEARCH: usize = 7;
const ACCESS_KEY: usize = 8;
const SECRET: usize = 9;

impl<'a> Given<'a> {
    /// The string at `place`, when given.
    fn at(&self, place: usize) -> Option<&'a str> {
        self.0.get(place).copied().flatten()
    }

    /// The string at `place`, when given and not empty.
    fn nonempty(&self, place: usize) -> Option<&'a str> {
        self.at(place).filter(|text| !text.is_empty())
    }
}

/// Members met once: a member given twice is left to the whole reader.
#[derive(Debug, Default)]
struct Seen(u32);

impl Seen {
    fn first(&mut self, member: u32) -> Option<()> {
        let bit = 1 << member;
        let first = self.0 & bit == 0;
        self.0 |= bit;
        first.then_some(())
    }
}

/// `body` read in one pass into `arena` (escaped strings only), or `None` when it is
/// left to the whole reader.
pub fn read<'a>(
    body: &'a [u8],
    arena: &'a Bump,
    limits: &Limits,
    now: UnixMillis,
) -> Option<Read<'a>> {
    let mut reader = Reader::new(body, arena)?;
    let names = CredentialFields::of(Endpoint::Serverside);
    let secret_name = names.secret_key?;
    let mut given = Given::default();
    let mut seen = Seen::default();
    let mut events = Events::new();
    let mut zones = ZoneIds::new();
    reader.open_object()?;
    let mut read = 0;
    while let Some(key) = reader.next_key(read)? {
        read += 1;
        let place = match key {
            "events" => {
                seen.first(0)?;
                events = self::events(&mut reader, limits)?;
                continue;
            }
            "zones" => {
                seen.first(1)?;
                zones = self::zones(&mut reader, limits)?;
                continue;
            }
            "currentUrl" => URL,
            "userAgent" => AGENT,
            "ip" => IP,
            "referer" => REFERER,
            "visitorId" => VISITOR_ID,
            "sessionId" => SESSION_ID,
            "currency" => CURRENCY,
            "searchterm" => SEARCH,
            key if key == names.access_key => ACCESS_KEY,
            key if key == secret_name => SECRET,
            _ => {
                reader.value_at(1)?;
                continue;
            }
        };
        // `events` and `zones` are the first two members `seen` knows.
        seen.first(2 + place as u32)?;
        *given.0.get_mut(place)? = reader.text_or_null()?;
    }
    if !reader.end() {
        return None;
    }
    let access_key = given.at(ACCESS_KEY).filter(|key| !key.trim().is_empty())?;
    let secret = given.at(SECRET).filter(|key| !key.trim().is_empty())?;
    let request = checked(&given, events, zones, now)?;
    Some(Read {
        access_key,
        secret,
        request,
    })
}

/// The request of `given`, checked as [`super::parse`] checks a store's request.
fn checked(
    given: &Given<'_>,
    events: Events,
    zones: ZoneIds,
    now: UnixMillis,
) -> Option<ServeRequest> {
    let mut errors = Errors::default();
    let url = given.at(URL)?;
    check_page(url, &mut errors);
    let agent = given.at(AGENT)?;
    check_agent(agent, &mut errors);
    if let Some(ip) = given.nonempty(IP) {
        check_ip(ip, &mut errors);
    }
    let referer = given.nonempty(REFERER);
    if let Some(referer) = referer {
        check_url(referer, "referer", &mut errors);
    }
    let visitor_id = match given.nonempty(VISITOR_ID) {
        Some(id) => Some(checked_client_id(id, "visitorId", &mut errors)?),
        None => None,
    };
    let session_id = match given.nonempty(SESSION_ID) {
        Some(id) => Some(checked_client_id(id, "sessionId", &mut errors)?),
        None => None,
    };
    let currency = match given.at(CURRENCY) {
        Some(code) => Some(currency_of(code, &mut errors)?),
        None => None,
    };
    let search = match given.nonempty(SEARCH) {
        Some(text) if text_fits(text) => Some(text.to_owned()),
        Some(_) => return None,
        None => None,
    };
    errors.is_empty().then(|| ServeRequest {
        search,
        visitor_id,
        session_id,
        currency,
        events,
        zones,
        now,
        context: request_context(Some(agent), referer, Some(url)),
    })
}

/// Whether the next value is `null` (then consumed), or else the container `open`
/// starts (then opened); anything else is left to the whole reader.
fn null_or(reader: &mut Reader<'_>, open: u8) -> Option<bool> {
    let next = reader.peek_token()?;
    if next == b'n' {
        reader.value_at(1)?;
        return Some(true);
    }
    if next != open {
        return None;
    }
    match open {
        b'{' => reader.open_object()?,
        _ => reader.open_array()?,
    }
    Some(false)
}

/// `events`: an array of the events read here, at most `limits.max_events`.
fn events(reader: &mut Reader<'_>, limits: &Limits) -> Option<Events> {
    let mut events = Events::new();
    if null_or(reader, b'[')? {
        return Some(events);
    }
    while reader.next_item(events.len())? {
        if events.len() >= limits.max_events {
            return None;
        }
        events.push(event(reader)?);
    }
    Some(events)
}

/// The events read here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PageView,
    ProductView,
    SetBasket,
}

/// One event: `name` before `data`.
fn event(reader: &mut Reader<'_>) -> Option<Event> {
    if null_or(reader, b'{')? {
        return None;
    }
    let mut kind = None;
    let mut event = None;
    let mut seen = Seen::default();
    let mut read = 0;
    while let Some(key) = reader.next_key(read)? {
        read += 1;
        match key {
            "name" => {
                seen.first(0)?;
                kind = Some(match reader.text_or_null()?? {
                    "page_view" => Kind::PageView,
                    "product_view" => Kind::ProductView,
                    "set_basket" => Kind::SetBasket,
                    _ => return None,
                });
            }
            "data" => {
                seen.first(1)?;
                let kind = kind?;
                event = Some(match reader.peek_token()? {
                    b'[' => listed_data(reader, kind)?,
                    _ if null_or(reader, b'{')? => absent_data(kind)?,
                    _ => data(reader, kind)?,
                });
            }
            _ => {
                reader.value_at(3)?;
            }
        }
    }
    event.or_else(|| absent_data(kind?))
}

/// The event of `kind` without `data`: only a basket may leave it out (an empty one).
fn absent_data(kind: Kind) -> Option<Event> {
    (kind == Kind::SetBasket).then(|| Event::SetBasket { items: Vec::new() })
}

/// An event's `data` given as a list: PHP's empty array for a `page_view` that names no
/// page (`other`), or a basket's bare lines, as the Magento module sends them.
fn listed_data(reader: &mut Reader<'_>, kind: Kind) -> Option<Event> {
    reader.open_array()?;
    match kind {
        Kind::PageView if !reader.next_item(0)? => Some(Event::PageView {
            page_type: PageType::Other,
            product_id: None,
            category_id: None,
            brand_id: None,
        }),
        Kind::SetBasket => Some(Event::SetBasket {
            items: lines(reader)?,
        }),
        _ => None,
    }
}

/// An event's `data` object, after its `{`.
fn data(reader: &mut Reader<'_>, kind: Kind) -> Option<Event> {
    let mut page_type = None;
    let mut ids: [Option<CompactString>; 3] = Default::default();
    let mut items = Vec::new();
    let mut seen = Seen::default();
    let mut read = 0;
    while let Some(key) = reader.next_key(read)? {
        read += 1;
        let known = match (kind, key) {
            (Kind::PageView, "page_type") => {
                seen.first(0)?;
                page_type = Some(page_type_named(reader.text_or_null()??)?);
                true
            }
            (Kind::PageView, "product_id") => id(reader, &mut seen, &mut ids, 0)?,
            (Kind::PageView, "category_id") => id(reader, &mut seen, &mut ids, 1)?,
            (Kind::PageView, "brand_id") => id(reader, &mut seen, &mut ids, 2)?,
            (Kind::ProductView, "id") => id(reader, &mut seen, &mut ids, 0)?,
            (Kind::SetBasket, "items") => {
                seen.first(4)?;
                if !null_or(reader, b'[')? {
                    items = lines(reader)?;
                }
                true
            }
            _ => false,
        };
        if !known {
            reader.value_at(4)?;
        }
    }
    let [first, category_id, brand_id] = ids;
    Some(match kind {
        Kind::PageView => Event::PageView {
            page_type: page_type?,
            product_id: first,
            category_id,
            brand_id,
        },
        Kind::ProductView => Event::ProductView { id: first? },
        Kind::SetBasket => Event::SetBasket { items },
    })
}

/// An id member into `ids[at]`: a string, checked (empty or `null` is absent).
fn id(
    reader: &mut Reader<'_>,
    seen: &mut Seen,
    ids: &mut [Option<CompactString>; 3],
    at: usize,
) -> Option<bool> {
    seen.first(1 + at as u32)?;
    let slot = ids.get_mut(at)?;
    *slot = match reader.text_or_null()? {
        Some(id) if !id.is_empty() => {
            check_id(id).ok()?;
            Some(CompactString::from(id))
        }
        _ => None,
    };
    Some(true)
}

/// A basket's lines, after the `[` of `items`: objects of an `id` string and `qty` and
/// `unitprice` numbers.
fn lines(reader: &mut Reader<'_>) -> Option<Vec<BasketLine>> {
    let mut lines = Vec::new();
    while reader.next_item(lines.len())? {
        reader.open_object()?;
        let (mut id, mut qty, mut unit_price) = (None, None, None);
        let mut seen = Seen::default();
        let mut read = 0;
        while let Some(key) = reader.next_key(read)? {
            read += 1;
            match key {
                "id" => {
                    seen.first(0)?;
                    let text = reader.text_or_null()??;
                    check_id(text).ok()?;
                    id = Some(text.to_owned());
                }
                "qty" => {
                    seen.first(1)?;
                    qty = Some(number(reader)?);
                }
                "unitprice" => {
                    seen.first(2)?;
                    unit_price = Some(number(reader)?);
                }
                _ => {
                    reader.value_at(6)?;
                }
            }
        }
        lines.push(basket_line(id?, qty?, unit_price?)?);
    }
    Some(lines)
}

/// A JSON number, or a decimal number written as text (`"1.0000"`, as the plugins send
/// database values).
fn number(reader: &mut Reader<'_>) -> Option<f64> {
    let value = reader.value_at(6)?;
    match value {
        Json::Integer(_) | Json::Number(_) => value.as_number().filter(|n| n.is_finite()),
        Json::String(text) => number_text(text),
        _ => None,
    }
}

/// A zone as the vendor's Magento module sends it, `{"id": "HP-01", "data": {...}}`:
/// its id (`data` is not used).
fn zone_object<'a>(reader: &mut Reader<'a>) -> Option<&'a str> {
    reader.open_object()?;
    let mut id = None;
    let mut read = 0;
    while let Some(key) = reader.next_key(read)? {
        read += 1;
        if key == "id" && id.is_none() {
            id = Some(reader.text_or_null()??);
        } else if key == "id" {
            return None;
        } else {
            reader.value_at(3)?;
        }
    }
    id
}

/// `zones`: an array of zone ids, as strings or as the Magento module's objects, at
/// most `limits.max_zones`.
fn zones(reader: &mut Reader<'_>, limits: &Limits) -> Option<ZoneIds> {
    let mut zones = ZoneIds::new();
    if null_or(reader, b'[')? {
        return Some(zones);
    }
    while reader.next_item(zones.len())? {
        if zones.len() >= limits.max_zones {
            return None;
        }
        let id = if reader.peek_token()? == b'{' {
            zone_object(reader)?
        } else {
            reader.text_or_null()??
        };
        if !zone_id_fits(id) {
            return None;
        }
        zones.push(id.into());
    }
    Some(zones)
}

#[cfg(test)]
mod tests {
    use vitrine_fields::{Fields, KeyMatch};

    use super::*;
    use crate::api::serverside::{Sender, parse};
    use crate::auth::{self, Presented};

    const NOW: UnixMillis = 1_800_000_000_000;

    /// What the whole reader (`serde_json`'s document, as the reference) makes of a
    /// body: its credentials and request when it finds no problem.
    fn whole(body: &[u8]) -> Option<(Presented<'_>, ServeRequest)> {
        let arena = Box::leak(Box::new(Bump::new()));
        let json = Box::leak(Box::new(Json::parse_with_serde(body, arena).ok()?));
        let mut errors = Errors::default();
        let fields = Fields::of(&*json, "", KeyMatch::Exact, &mut errors)?;
        let presented = auth::read(&fields, Endpoint::Serverside, &mut errors);
        let request = parse(&fields, &Limits::default(), NOW, Sender::Store, &mut errors);
        errors.is_empty().then_some((presented?, request?))
    }

    /// Whether `body` is read in one pass; when it is, the whole reader finds no problem
    /// in it and reads the same credentials and request.
    fn agrees(body: &[u8]) -> bool {
        let arena = Bump::new();
        let Some(fast) = read(body, &arena, &Limits::default(), NOW) else {
            return false;
        };
        let presented = Presented::with_secret(Endpoint::Serverside, fast.access_key, fast.secret);
        assert_eq!(
            Some((presented, fast.request)),
            whole(body),
            "{}",
            String::from_utf8_lossy(body)
        );
        true
    }

    fn magento_bodies() -> Vec<Vec<u8>> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/vendor-requests/magento-serverside.jsonl"
        );
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| {
                // The request as the module wrote it, its members in their order.
                let start = line.find(r#""request": "#).unwrap() + r#""request": "#.len();
                line.as_bytes()[start..line.len() - 1].to_vec()
            })
            .collect()
    }

    /// Bodies of the shapes every page sends, as the plugins and the load harness write
    /// them.
    const PAGES: [&str; 8] = [
        r#"{"appId":"k","secretKey":"s","userAgent":"Mozilla/5.0 (X11; Linux x86_64) vitrine-loadtest","ip":"198.51.0.7","visitorId":"lt-7","sessionId":"3f2a","currentUrl":"https://shop.example/p/P0000042","events":[{"name":"page_view","data":{"page_type":"product_page","product_id":"P0000042"}},{"name":"product_view","data":{"id":"P0000042"}}],"zones":["PP-01","PP-02"]}"#,
        r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","visitorId":"v","currency":"USD","currentUrl":"https://shop.example/basket","events":[{"name":"page_view","data":{"page_type":"basket_page"}},{"name":"set_basket","data":{"items":[{"id":"P1","qty":2,"unitprice":12.5},{"id":"P2","qty":1.5,"unitprice":0,"children":[]}]}}],"zones":["BP-01"]}"#,
        r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","currentUrl":"https://shop.example/search?q=lamp","searchterm":"lamp","referer":"https://www.example.org/x","events":[{"name":"page_view","data":{"page_type":"search_results"}}],"zones":[]}"#,
        "{\n  \"appId\": \"k\",\n  \"secretKey\": \"s\",\n  \"userAgent\": \"curl/8\",\n  \"currentUrl\": \"https:\\/\\/shop.example\\/c\\/lamps?utm_source=mail\",\n  \"events\": [ { \"name\": \"page_view\", \"data\": { \"page_type\": \"category_listing_page\", \"category_id\": \"c\\u00e9\" } } ]\n}",
        r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","currentUrl":"magento-admin","ip":"","visitorId":"","sessionId":null,"referer":null,"currency":null,"searchterm":"","events":null,"zones":null,"extra":{"nested":[1,{"a":null}]}}"#,
        r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","currentUrl":"https://shop.example/","events":[{"name":"set_basket"},{"name":"set_basket","data":null},{"name":"set_basket","data":{"items":null}},{"name":"set_basket","data":[]}]}"#,
        r#"{"appId":"k","secretKey":"s","userAgent":"curl/8","currentUrl":"https://shop.example/","events":[{"name":"page_view","data":{"page_type":"content_page","product_id":"","brand_id":"b1","extra":[{}]},"extra":true}],"zones":[{"id":"HP-01","data":{"x":1}},"HP-02"]}"#,
        r#"{"secretKey":"s","zones":["Z"],"currentUrl":"https://shop.example/","appId":"k","userAgent":"curl/8","events":[]}"#,
    ];

    /// Every plugin's page body and the harness's are read in one pass, as the whole
    /// reader reads them.
    #[test]
    fn the_pages_plugins_send_are_read_in_one_pass_as_whole() {
        let mut read = 0;
        for body in magento_bodies() {
            let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let pages = value["events"].as_array().unwrap().iter().all(|event| {
                ["page_view", "product_view", "set_basket"]
                    .contains(&event["name"].as_str().unwrap())
            });
            assert_eq!(agrees(&body), pages, "{}", String::from_utf8_lossy(&body));
            read += usize::from(pages);
        }
        assert!(read >= 10, "{read} of the module's bodies are pages");
        for body in PAGES {
            assert!(agrees(body.as_bytes()), "{body}");
        }
    }

    /// Bodies with a problem, or of a shape read whole, are left to the whole reader.
    #[test]
    fn other_bodies_are_left_to_the_whole_reader() {
        let page = PAGES[0];
        let swaps: &[(&str, &str)] = &[
            (r#""appId":"k""#, r#""appId":" ""#),
            (r#""appId":"k""#, r#""appId":null"#),
            (r#""secretKey":"s","#, ""),
            (r#""ip":"198.51.0.7""#, r#""ip":"1.2.3""#),
            (r#""visitorId":"lt-7""#, r#""visitorId":"lt 7""#),
            (r#""visitorId":"lt-7""#, r#""visitorId":7"#),
            (
                r#""visitorId":"lt-7""#,
                r#""visitorId":"a","visitorId":"b""#,
            ),
            (
                r#""currentUrl":"https://shop.example/p/P0000042""#,
                r#""currentUrl":"/p""#,
            ),
            (r#""currentUrl":"https://shop.example/p/P0000042","#, ""),
            (
                r#""userAgent":"Mozilla/5.0 (X11; Linux x86_64) vitrine-loadtest","#,
                "",
            ),
            (r#""product_id":"P0000042""#, r#""product_id":42"#),
            (r#""page_type":"product_page""#, r#""page_type":"nowhere""#),
            (r#""page_type":"product_page","#, ""),
            (r#"{"id":"P0000042"}"#, r#"{"id":""}"#),
            (r#"{"id":"P0000042"}"#, "[]"),
            (r#"{"id":"P0000042"}"#, "null"),
            (
                r#""name":"product_view","data":{"id":"P0000042"}"#,
                r#""data":{"id":"P0000042"},"name":"product_view""#,
            ),
            (r#""name":"product_view""#, r#""name":"product_rate""#),
            (r#""name":"product_view""#, r#""name":"order""#),
            (r#""zones":["PP-01","PP-02"]"#, r#""zones":["PP-01",""]"#),
            (r#""zones":["PP-01","PP-02"]"#, r#""zones":"PP-01""#),
            (r#""zones":["PP-01","PP-02"]"#, r#""zones":[{"data":{}}]"#),
            (
                r#""zones":["PP-01","PP-02"]"#,
                r#""zones":[{"id":"A","id":"B"}]"#,
            ),
            (
                r#""sessionId":"3f2a""#,
                r#""sessionId":"3f2a","currency":"XYZ""#,
            ),
            (
                r#""sessionId":"3f2a""#,
                r#""sessionId":"3f2a","searchterm":"ab""#,
            ),
        ];
        for (from, to) in swaps {
            assert!(page.contains(from), "{from}");
            let body = page.replacen(from, to, 1);
            assert!(!agrees(body.as_bytes()), "{body}");
        }
        let basket = PAGES[1];
        for (from, to) in [
            (r#""qty":2"#, r#""qty":0"#),
            (r#""qty":2"#, r#""qty":"2x""#),
            (r#""qty":2"#, r#""qty":"1e2""#),
            (r#""unitprice":12.5"#, r#""unitprice":-1"#),
            (r#""id":"P1","#, ""),
            (r#"{"id":"P1""#, r#"["P1""#),
        ] {
            let body = basket.replacen(from, to, 1);
            assert!(!agrees(body.as_bytes()), "{body}");
        }
        let many_zones = format!(
            r#"{{"appId":"k","secretKey":"s","userAgent":"a","currentUrl":"https://s.example/","zones":[{}]}}"#,
            vec![r#""Z""#; Limits::default().max_zones + 1].join(",")
        );
        assert!(!agrees(many_zones.as_bytes()));
        for tail in [" x", "}", ","] {
            assert!(!agrees(format!("{page}{tail}").as_bytes()));
        }
    }

    /// Bodies of every shape, bent at random places: wherever one is read in one pass,
    /// the whole reader finds no problem and reads the same request.
    #[test]
    fn bent_bodies_read_in_one_pass_read_as_whole() {
        let mut seeds: Vec<Vec<u8>> = PAGES.iter().map(|p| p.as_bytes().to_vec()).collect();
        seeds.extend(magento_bodies());
        let pieces: [&[u8]; 16] = [
            b"\"",
            b"{",
            b"}",
            b"[",
            b"]",
            b",",
            b":",
            b"null",
            b"0",
            b"-1",
            b"\\u0041",
            b" ",
            b"\"name\"",
            b"\"id\"",
            b"\"\"",
            b"\"page_view\"",
        ];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let mut read = 0;
        for _ in 0..20_000 {
            let mut body = seeds[next(seeds.len())].clone();
            for _ in 0..1 + next(2) {
                let at = next(body.len() + 1);
                match next(3) {
                    0 => {
                        let piece = pieces[next(pieces.len())];
                        body.splice(at..at, piece.iter().copied());
                    }
                    1 if at < body.len() => {
                        let end = (at + 1 + next(8)).min(body.len());
                        body.drain(at..end);
                    }
                    _ if at < body.len() => body[at] = b' ' + next(95) as u8,
                    _ => {}
                }
            }
            read += usize::from(agrees(&body));
        }
        assert!(
            read > 1_000,
            "only {read} bent bodies were read in one pass"
        );
    }
}
