//! Tracking events as the engine sees them: already validated, typed, free of wire
//! details. `vitrine-http` converts the JSON of `/api/serverside` into these.

use compact_str::CompactString;
use time::Date;

/// A date of birth, kept as its Julian day number (so that it archives as a plain
/// integer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct BirthDate(pub i32);

impl BirthDate {
    /// The day of `date`.
    pub fn of(date: Date) -> BirthDate {
        BirthDate(date.to_julian_day())
    }

    /// The date, when the day number is one.
    pub fn date(self) -> Option<Date> {
        Date::from_julian_day(self.0).ok()
    }
}

/// The `page_type` of a `page_view` event.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub enum PageType {
    /// `homepage`
    Homepage,
    /// `search_results`
    SearchResults,
    /// `category_listing_page`
    CategoryListingPage,
    /// `product_page`
    ProductPage,
    /// `basket_page`
    BasketPage,
    /// `order_complete_page`
    OrderCompletePage,
    /// `other`
    Other,
}

impl PageType {
    /// Every page type, in the order of the contract.
    pub const ALL: [PageType; 7] = [
        PageType::Homepage,
        PageType::SearchResults,
        PageType::CategoryListingPage,
        PageType::ProductPage,
        PageType::BasketPage,
        PageType::OrderCompletePage,
        PageType::Other,
    ];

    /// The wire name, e.g. `product_page`.
    pub fn name(self) -> &'static str {
        match self {
            PageType::Homepage => "homepage",
            PageType::SearchResults => "search_results",
            PageType::CategoryListingPage => "category_listing_page",
            PageType::ProductPage => "product_page",
            PageType::BasketPage => "basket_page",
            PageType::OrderCompletePage => "order_complete_page",
            PageType::Other => "other",
        }
    }

    /// The page type of a wire name.
    pub fn from_name(name: &str) -> Option<PageType> {
        PageType::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// One line of a basket or an order.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct BasketLine {
    /// Product id.
    pub id: String,
    /// Quantity.
    pub qty: f64,
    /// Unit price in the request's currency.
    pub unit_price: f64,
}

/// Identifiers that tie a visitor to a known customer.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Identity {
    /// The store's user id.
    pub user_id: Option<String>,
    /// Email address as sent.
    pub email: Option<String>,
    /// B2B account id.
    pub account_id: Option<String>,
    /// User group, for group prices.
    pub group_id: Option<String>,
}

/// Personal details that an order or a login may carry.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct PersonalDetails {
    /// Title (Mr, Ms, ...).
    pub title: Option<String>,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Delivery zip or postcode.
    pub zipcode: Option<String>,
    /// Date of birth.
    pub dob: Option<BirthDate>,
}

/// A completed order.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Order {
    /// `orderid`, recorded once per account.
    pub order_id: String,
    /// Order lines.
    pub items: Vec<BasketLine>,
    /// `ordertotal`, in the base currency.
    pub total: Option<f64>,
    /// Who ordered.
    pub identity: Identity,
    /// Personal details given with the order.
    pub details: PersonalDetails,
}

/// A request's events: two (a typical page's) without a heap allocation; archived as
/// a vector.
pub type Events = smallvec::SmallVec<[Event; 2]>;

/// Archives a boxed value as the value itself, in place (rkyv's `Inline` does so for a
/// reference): an event keeps a large, rare part of it on the heap, so that every event
/// is small in memory, while its log record holds the part inline as it always has.
#[derive(Debug)]
pub struct BoxedInline;

impl<T: rkyv::Archive> rkyv::with::ArchiveWith<Box<T>> for BoxedInline {
    type Archived = T::Archived;
    type Resolver = T::Resolver;

    fn resolve_with(field: &Box<T>, resolver: T::Resolver, out: rkyv::Place<T::Archived>) {
        T::resolve(field, resolver, out);
    }
}

impl<T, S> rkyv::with::SerializeWith<Box<T>, S> for BoxedInline
where
    T: rkyv::Serialize<S>,
    S: rkyv::rancor::Fallible + ?Sized,
{
    fn serialize_with(field: &Box<T>, serializer: &mut S) -> Result<T::Resolver, S::Error> {
        T::serialize(field, serializer)
    }
}

impl<T, D> rkyv::with::DeserializeWith<T::Archived, Box<T>, D> for BoxedInline
where
    T: rkyv::Archive,
    T::Archived: rkyv::Deserialize<T, D>,
    D: rkyv::rancor::Fallible + ?Sized,
{
    fn deserialize_with(field: &T::Archived, deserializer: &mut D) -> Result<Box<T>, D::Error> {
        rkyv::Deserialize::deserialize(field, deserializer).map(Box::new)
    }
}

/// A tracking event of `/api/serverside`.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Event {
    /// `page_view`
    PageView {
        /// The kind of page.
        page_type: PageType,
        /// Product on a product page.
        product_id: Option<CompactString>,
        /// Category on a category listing page.
        category_id: Option<CompactString>,
        /// Brand on a brand page.
        brand_id: Option<CompactString>,
    },
    /// `product_view`
    ProductView {
        /// Product id.
        id: CompactString,
    },
    /// `product_rate`
    ProductRate {
        /// Product id.
        id: CompactString,
        /// The rating given.
        rating: f64,
    },
    /// `set_basket`: the full basket; empty clears it.
    SetBasket {
        /// Basket lines.
        items: Vec<BasketLine>,
    },
    /// `order` (on the heap: an order is large and rare, a request's events are kept
    /// inline).
    Order(#[rkyv(with = BoxedInline)] Box<Order>),
    /// `customer_details`: a customer identified themselves.
    CustomerDetails {
        /// Identifiers given.
        #[rkyv(with = BoxedInline)]
        identity: Box<Identity>,
        /// Personal details given.
        #[rkyv(with = BoxedInline)]
        details: Box<PersonalDetails>,
    },
    /// An order placed for a customer by someone else: by staff on the customer's behalf
    /// (the plugins' `moto_order_track`), or imported from the store's order history. It
    /// counts for the product models and the customer's own purchase history (kept on
    /// the customer's record, see `Account::customer_visitor_id`), not for the visitor
    /// whose request carried it. (Last variant: logs written before it read the same.)
    CustomerOrder(#[rkyv(with = BoxedInline)] Box<Order>),
}
