//! One simulated shopper: a session of page requests, each body written as a store's
//! server writes it.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Landing {
    Home,
    Category(usize),
    Search,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Page {
    Landing(Landing),
    Product(usize),
    Basket(Vec<usize>),
    OrderComplete(Vec<usize>),
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Identity {
    number: u64,
    b2b: bool,
}

/// One simulated shopper after another on one connection.
#[derive(Debug)]
pub struct Shopper {
    rng: SmallRng,
    run: u64,
    worker: usize,
    orders: u64,
    pub(super) plan: VecDeque<Page>,
    visitor: u64,
    session: Option<String>,
    usd: bool,
    identity: Option<Identity>,
    details_due: bool,
    last_product: Option<usize>,
    /// Sessions started.
    sessions: u64,
    /// With [`Clicks`]: each zone's products in the previous answer.
    shown: Vec<(String, Vec<usize>)>,
    /// With [`Clicks`]: the products this session viewed, in order.
    viewed: Vec<usize>,
}

impl Shopper {
    /// `run` makes order ids unique across runs against the same server.
    pub fn new(seed: u64, run: u64, worker: usize) -> Shopper {
        Shopper {
            rng: SmallRng::seed_from_u64(
                seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            run,
            worker,
            orders: 0,
            plan: VecDeque::new(),
            visitor: 0,
            session: None,
            usd: false,
            identity: None,
            details_due: false,
            last_product: None,
            sessions: 0,
            shown: Vec::new(),
            viewed: Vec::new(),
        }
    }

    /// The number of the visitor whose session this is (`lt-<number>`).
    pub fn visitor(&self) -> u64 {
        self.visitor
    }

    /// Sessions this shopper has finished (every request of them sent).
    pub fn sessions_finished(&self) -> u64 {
        self.sessions - u64::from(!self.plan.is_empty())
    }

    /// With [`Clicks`]: a product of the previous answer to view instead of the planned
    /// one, by the preference for the strategy of the zone that showed it.
    fn click(&mut self, clicks: &Clicks) -> Option<usize> {
        let visitor = format!("lt-{}", self.visitor);
        for (zone, items) in &self.shown {
            let share = clicks.share(zone, &visitor);
            if !items.is_empty() && share > 0.0 && self.rng.random_bool(share) {
                return items.get(self.rng.random_range(0..items.len())).copied();
            }
        }
        None
    }

    fn start_session(&mut self, shelf: &Shelf, mix: &Mix) {
        self.sessions += 1;
        self.shown.clear();
        self.viewed.clear();
        self.visitor = self.rng.random_range(0..mix.visitors);
        self.session = None;
        self.usd = self.rng.random_bool(mix.second_currency);
        self.details_due = self.rng.random_bool(mix.details);
        let orders = self.rng.random_bool(mix.basket) && self.rng.random_bool(mix.order);
        // An order needs a customer identifier; so do customer details.
        self.identity = (self.details_due || orders).then(|| Identity {
            number: self.visitor,
            b2b: self.rng.random_bool(mix.b2b),
        });
        let landing = match self.rng.random_range(0..10) {
            0..=5 => Landing::Home,
            6..=8 if !shelf.categories.is_empty() => {
                Landing::Category(self.rng.random_range(0..shelf.categories.len()))
            }
            _ => Landing::Search,
        };
        self.plan.push_back(Page::Landing(landing));
        let views = self.rng.random_range(mix.browse_min..=mix.browse_max);
        let mut viewed = Vec::with_capacity(views as usize);
        let mut previous: Option<usize> = None;
        for _ in 0..views {
            let product = match previous {
                Some(p) if self.rng.random_bool(mix.related) => {
                    (p + self.rng.random_range(1..=8)) % shelf.len()
                }
                _ => shelf.popular(&mut self.rng),
            };
            previous = Some(product);
            viewed.push(product);
            self.plan.push_back(Page::Product(product));
        }
        let basket = orders || self.rng.random_bool(mix.basket);
        if basket {
            let lines = self.rng.random_range(1..=3.min(viewed.len()));
            let items: Vec<usize> = viewed[viewed.len() - lines..].to_vec();
            self.plan.push_back(Page::Basket(items.clone()));
            if orders {
                self.plan.push_back(Page::OrderComplete(items));
            }
        }
    }

    /// The body of the next request, starting a new session when the last one ended.
    pub fn next_request(
        &mut self,
        shelf: &Shelf,
        mix: &Mix,
        zones: &ZoneMap,
        credentials: &Credentials,
        clicks: Option<&Clicks>,
    ) -> Vec<u8> {
        if self.plan.is_empty() {
            self.start_session(shelf, mix);
        }
        let mut page = self
            .plan
            .pop_front()
            .unwrap_or(Page::Landing(Landing::Home));
        if let Some(clicks) = clicks {
            self.follow_clicks(&mut page, clicks);
        }
        let mut out = String::with_capacity(640);
        out.push_str(&credentials.prefix);
        let _ = write!(
            out,
            r#""ip":"198.51.{}.{}","visitorId":"lt-{}","#,
            (self.visitor >> 8) % 256,
            self.visitor % 256,
            self.visitor
        );
        if let Some(session) = &self.session {
            let _ = write!(out, r#""sessionId":"{session}","#);
        }
        if self.usd {
            out.push_str(r#""currency":"USD","#);
        }
        let path = match &page {
            Page::Landing(Landing::Home) => "/".to_owned(),
            Page::Landing(Landing::Category(c)) => format!("/c/{c}"),
            Page::Landing(Landing::Search) => "/search?q=lamp".to_owned(),
            Page::Product(p) => format!("/p/{p}"),
            Page::Basket(_) => "/basket".to_owned(),
            Page::OrderComplete(_) => "/checkout/complete".to_owned(),
        };
        let _ = write!(
            out,
            r#""currentUrl":"https://shop.example{path}","events":["#
        );
        let page_zones = match &page {
            Page::Landing(Landing::Home) => {
                out.push_str(r#"{"name":"page_view","data":{"page_type":"homepage"}}"#);
                &zones.homepage
            }
            Page::Landing(Landing::Category(c)) => {
                let _ = write!(
                    out,
                    r#"{{"name":"page_view","data":{{"page_type":"category_listing_page","category_id":{}}}}}"#,
                    shelf.categories[*c]
                );
                &zones.category_listing_page
            }
            Page::Landing(Landing::Search) => {
                out.push_str(r#"{"name":"page_view","data":{"page_type":"search_results"}}"#);
                &zones.search_results
            }
            Page::Product(p) => {
                let id = &shelf.products[*p];
                let _ = write!(
                    out,
                    r#"{{"name":"page_view","data":{{"page_type":"product_page","product_id":{id}}}}},{{"name":"product_view","data":{{"id":{id}}}}}"#
                );
                self.last_product = Some(*p);
                &zones.product_page
            }
            Page::Basket(items) => {
                out.push_str(r#"{"name":"page_view","data":{"page_type":"basket_page"}},{"name":"set_basket","data":{"items":"#);
                write_lines(&mut out, shelf, items);
                out.push_str("}}");
                &zones.basket_page
            }
            Page::OrderComplete(items) => {
                self.orders += 1;
                let _ = write!(
                    out,
                    r#"{{"name":"page_view","data":{{"page_type":"order_complete_page"}}}},{{"name":"order","data":{{"orderid":"lt-{}-{}-{}","items":"#,
                    self.run, self.worker, self.orders
                );
                write_lines(&mut out, shelf, items);
                let total: f64 = items.iter().map(|&p| unit_price(p)).sum();
                let _ = write!(out, r#","ordertotal":{total:.2}"#);
                if let Some(identity) = self.identity {
                    write_identity(&mut out, identity);
                }
                out.push_str(r#"}},{"name":"set_basket","data":{"items":[]}}"#);
                &zones.order_complete_page
            }
        };
        if self.details_due
            && let Some(identity) = self.identity
        {
            self.details_due = false;
            out.push_str(r#",{"name":"customer_details","data":{"firstname":"Alex","lastname":"Shopper","title":"Mx""#);
            write_identity(&mut out, identity);
            if identity.b2b {
                out.push_str(r#","group_id":"trade""#);
            }
            out.push_str("}}");
        }
        out.push_str(r#"],"zones":["#);
        for (i, zone) in page_zones.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::Value::String(zone.clone()).to_string());
        }
        out.push_str("]}");
        out.into_bytes()
    }

    /// With [`Clicks`]: a product page may become a click on a shown product; the
    /// basket (and the order of it) holds the last products the session viewed.
    fn follow_clicks(&mut self, page: &mut Page, clicks: &Clicks) {
        match page {
            Page::Product(p) => {
                if let Some(clicked) = self.click(clicks) {
                    *p = clicked;
                }
                self.viewed.push(*p);
            }
            Page::Basket(items) if !self.viewed.is_empty() => {
                let mut lines: Vec<usize> = Vec::with_capacity(items.len());
                for p in self.viewed.iter().rev() {
                    if lines.len() == items.len() {
                        break;
                    }
                    if !lines.contains(p) {
                        lines.push(*p);
                    }
                }
                lines.reverse();
                if let Some(Page::OrderComplete(ordered)) = self.plan.front_mut() {
                    ordered.clone_from(&lines);
                }
                *items = lines;
            }
            _ => {}
        }
    }

    /// Keeps the session id of the server's answer for the session's next requests
    /// (and, with [`Clicks`], what its zones showed).
    pub fn observe(&mut self, response: &[u8], clicks: Option<&Clicks>) {
        if let Some(clicks) = clicks {
            self.shown = clicks.shown(response);
        }
        if self.session.is_some() {
            return;
        }
        self.session = session_id(response).map(str::to_owned);
    }
}

fn unit_price(product: usize) -> f64 {
    5.0 + (product % 200) as f64 * 0.5
}

fn write_lines(out: &mut String, shelf: &Shelf, items: &[usize]) {
    out.push('[');
    for (i, &p) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"id":{},"qty":{},"unitprice":{:.2}}}"#,
            shelf.products[p],
            1 + p % 2,
            unit_price(p)
        );
    }
    out.push(']');
}

fn write_identity(out: &mut String, identity: Identity) {
    let n = identity.number;
    let _ = write!(out, r#","userid":"u{n}","email":"shopper{n}@example.com""#);
    if identity.b2b {
        let _ = write!(out, r#","accid":"acc-{}""#, n % 50);
    }
}

/// The `sessionId` near the start of a server-side answer, if it is a plain token.
pub(super) fn session_id(response: &[u8]) -> Option<&str> {
    let head = &response[..response.len().min(512)];
    let key = br#""sessionId":""#;
    let start = head.windows(key.len()).position(|w| w == key)? + key.len();
    let len = head[start..].iter().position(|&b| b == b'"')?;
    let id = std::str::from_utf8(&head[start..start + len]).ok()?;
    id.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        .then_some(id)
}
