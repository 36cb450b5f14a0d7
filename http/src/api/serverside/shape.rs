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
//! differential tests in `shape/tests.rs` and the fuzzers' `serverside` target).
//!
//! Left to the whole reader: a member it reads given twice, a `null` where a value is
//! required, an id written as a number, `data` before `name`, and the events of orders
//! and logins.

use smallvec::SmallVec;
use vitrine_engine::CompactString;
use vitrine_engine::account::{ServeRequest, ZoneIds};
use vitrine_engine::campaign::RequestContext;
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
///
/// Never inlined: reading the body stays one function in a profile (`benches/README.md`
/// measures it), at the cost of one call.
#[inline(never)]
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
    // Filled where it is returned: its lists are not moved.
    let mut out = Read {
        access_key: "",
        secret: "",
        request: ServeRequest {
            search: None,
            visitor_id: None,
            session_id: None,
            currency: None,
            events: Events::new(),
            zones: ZoneIds::new(),
            now,
            context: RequestContext::default(),
        },
    };
    reader.open_object()?;
    let mut read = 0;
    while let Some(key) = reader.next_name(read)? {
        read += 1;
        let place = match key {
            b"events" => {
                seen.first(0)?;
                self::events(&mut reader, limits, &mut out.request.events)?;
                continue;
            }
            b"zones" => {
                seen.first(1)?;
                self::zones(&mut reader, limits, &mut out.request.zones)?;
                continue;
            }
            b"currentUrl" => URL,
            b"userAgent" => AGENT,
            b"ip" => IP,
            b"referer" => REFERER,
            b"visitorId" => VISITOR_ID,
            b"sessionId" => SESSION_ID,
            b"currency" => CURRENCY,
            b"searchterm" => SEARCH,
            key if key == names.access_key.as_bytes() => ACCESS_KEY,
            key if key == secret_name.as_bytes() => SECRET,
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
    out.access_key = given.at(ACCESS_KEY).filter(|key| not_blank(key))?;
    out.secret = given.at(SECRET).filter(|key| not_blank(key))?;
    checked(&given, &mut out.request)?;
    Some(out)
}

/// Whether a key holds more than whitespace, as `str::trim` judges it: a key that
/// starts with printable ASCII (never whitespace) is answered at its first byte.
fn not_blank(key: &str) -> bool {
    key.as_bytes().first().is_some_and(u8::is_ascii_graphic) || !key.trim().is_empty()
}

/// The top-level values of `given` into `request`, checked as [`super::parse`] checks
/// a store's request; `None` if one is wrong.
fn checked(given: &Given<'_>, request: &mut ServeRequest) -> Option<()> {
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
    if !errors.is_empty() {
        return None;
    }
    request.visitor_id = visitor_id;
    request.session_id = session_id;
    request.currency = currency;
    request.search = search;
    request.context = request_context(Some(agent), referer, Some(url));
    Some(())
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

/// `events`: an array of the events read here, at most `limits.max_events`, into
/// `list` (empty).
fn events(reader: &mut Reader<'_>, limits: &Limits, list: &mut Events) -> Option<()> {
    bounded_list(reader, limits.max_events, list, event)
}

/// An array of at most `max` items, each read by `item`, or `null` (empty), into
/// `list` (empty).
fn bounded_list<'a, A: smallvec::Array>(
    reader: &mut Reader<'a>,
    max: usize,
    list: &mut SmallVec<A>,
    mut item: impl FnMut(&mut Reader<'a>) -> Option<A::Item>,
) -> Option<()> {
    if null_or(reader, b'[')? {
        return Some(());
    }
    while reader.next_item(list.len())? {
        if list.len() >= max {
            return None;
        }
        list.push(item(reader)?);
    }
    Some(())
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
    while let Some(key) = reader.next_name(read)? {
        read += 1;
        match key {
            b"name" => {
                seen.first(0)?;
                kind = Some(match reader.bytes_or_null()?? {
                    b"page_view" => Kind::PageView,
                    b"product_view" => Kind::ProductView,
                    b"set_basket" => Kind::SetBasket,
                    _ => return None,
                });
            }
            b"data" => {
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
    while let Some(key) = reader.next_name(read)? {
        read += 1;
        let known = match (kind, key) {
            (Kind::PageView, b"page_type") => {
                seen.first(0)?;
                page_type = Some(page_type_named(reader.text_or_null()??)?);
                true
            }
            (Kind::PageView, b"product_id") => id(reader, &mut seen, &mut ids, 0)?,
            (Kind::PageView, b"category_id") => id(reader, &mut seen, &mut ids, 1)?,
            (Kind::PageView, b"brand_id") => id(reader, &mut seen, &mut ids, 2)?,
            (Kind::ProductView, b"id") => id(reader, &mut seen, &mut ids, 0)?,
            (Kind::SetBasket, b"items") => {
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
        while let Some(key) = reader.next_name(read)? {
            read += 1;
            match key {
                b"id" => {
                    seen.first(0)?;
                    let text = reader.text_or_null()??;
                    check_id(text).ok()?;
                    id = Some(text.to_owned());
                }
                b"qty" => {
                    seen.first(1)?;
                    qty = Some(number(reader)?);
                }
                b"unitprice" => {
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
    while let Some(key) = reader.next_name(read)? {
        read += 1;
        if key == b"id" && id.is_none() {
            id = Some(reader.text_or_null()??);
        } else if key == b"id" {
            return None;
        } else {
            reader.value_at(3)?;
        }
    }
    id
}

/// `zones`: an array of zone ids, as strings or as the Magento module's objects, at
/// most `limits.max_zones`, into `list` (empty).
fn zones(reader: &mut Reader<'_>, limits: &Limits, list: &mut ZoneIds) -> Option<()> {
    bounded_list(reader, limits.max_zones, list, |reader| {
        let id = if reader.peek_token()? == b'{' {
            zone_object(reader)?
        } else {
            reader.text_or_null()??
        };
        zone_id_fits(id).then(|| id.into())
    })
}

#[cfg(test)]
mod tests;
