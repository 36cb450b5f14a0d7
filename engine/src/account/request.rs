//! What a server-side call brings ([`ServeRequest`]: its events, the zones it asks for,
//! its context), what its events say about the page ([`PageContext`]), and what a 200
//! reports beside its zones ([`Notice`]).

use compact_str::CompactString;
use smallvec::SmallVec;

use crate::campaign::RequestContext;
use crate::catalogue::UnixMillis;
use crate::event::{Event, Events, Order, PageType};
use crate::money::Currency;

/// A server-side call, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeRequest {
    /// `visitorId`, when the caller has one.
    pub visitor_id: Option<String>,
    /// `sessionId`, when the caller has one.
    pub session_id: Option<String>,
    /// `currency`, when given.
    pub currency: Option<Currency>,
    /// Events to record, in order.
    pub events: Events,
    /// Zone ids to fill, in order (inline: zone ids are short).
    pub zones: ZoneIds,
    /// Time of the request.
    pub now: UnixMillis,
    /// What the shopper searched for (`searchterm`), on a search results page.
    pub search: Option<String>,
    /// The device, referrer and UTM parameters, read when a segment needs them.
    pub context: RequestContext,
}

/// Something a 200 reports in its `errors` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// `events[event]` is an order whose id was recorded before; it was not counted again.
    DuplicateOrder {
        /// Index in `events`.
        event: usize,
        /// The order id.
        order_id: String,
    },
    /// `zones[zone]` names no zone of the account.
    UnknownZone {
        /// Index in `zones`.
        zone: usize,
        /// The zone id asked for.
        id: String,
    },
    /// `zones[zone]` is configured for other page types than this request's.
    ZoneNotOnPage {
        /// Index in `zones`.
        zone: usize,
        /// The zone id asked for.
        id: String,
        /// The page type of the request.
        page_type: PageType,
    },
}

/// The zone ids a request asks for: four without a heap allocation.
pub type ZoneIds = SmallVec<[CompactString; 4]>;

/// What a request's events say about its page, borrowed from the request.
#[derive(Debug, Default)]
pub(crate) struct PageContext<'a> {
    pub(crate) visitor_id: &'a str,
    pub(crate) page_type: Option<PageType>,
    pub(crate) product: Option<&'a str>,
    pub(crate) category: Option<&'a str>,
    pub(crate) brand: Option<&'a str>,
    /// Orders placed for customers, written to their records once the request's
    /// visitor is released.
    pub(crate) customer_orders: Vec<Order>,
    /// The currency of the request's orders (`None`: the account's default).
    pub(crate) currency: Option<Currency>,
    /// The revenue of the request's new orders, in minor units of their currency.
    pub(crate) ordered: Option<(Currency, i64)>,
}

impl<'a> PageContext<'a> {
    /// What an event says of the page: a page view its type, product, category and
    /// brand (each when given), a product view its product.
    pub(crate) fn see(&mut self, event: &'a Event) {
        match event {
            Event::PageView {
                page_type,
                product_id,
                category_id,
                brand_id,
            } => {
                self.page_type = Some(*page_type);
                self.product = product_id.as_deref().or(self.product);
                self.category = category_id.as_deref().or(self.category);
                self.brand = brand_id.as_deref().or(self.brand);
            }
            Event::ProductView { id } => self.see_product(id),
            _ => {}
        }
    }

    /// The page shows the product `id`.
    pub(crate) fn see_product(&mut self, id: &'a str) {
        self.product = Some(id);
    }
}

/// A request self-evaluation and self-tuning take a sample of, before it is applied:
/// who sent it, what it brings, the catalogue and zones it is served with, and when,
/// in which currency.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sampled<'a> {
    pub(crate) visitor_id: &'a str,
    pub(crate) events: &'a [Event],
    pub(crate) catalogue: &'a std::sync::Arc<crate::catalogue::Catalogue>,
    pub(crate) zones: &'a [crate::zone::ZoneSpec],
    pub(crate) currency: Currency,
    pub(crate) now: UnixMillis,
}
