//! Segments: a rule over what Vitrine knows of the shopper at the moment of a request,
//! compiled once into a tree of typed [`Condition`]s and judged against a [`Shopper`].
//!
//! Nothing is parsed per request: lists of names are held sorted and lower-cased where
//! the comparison ignores case, ranges as numbers, time spans as milliseconds.

use compact_str::CompactString;

use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::event::{BasketLine, Identity, PageType};

/// The value of basket lines (major units of the request's currency).
pub fn basket_value(lines: &[BasketLine]) -> f64 {
    lines
        .iter()
        .map(|line| line.qty * line.unit_price)
        .filter(|v| v.is_finite())
        .sum()
}
use crate::money::Currency;
use crate::visits::Visits;

use super::request::{DeviceClass, RequestContext, UtmParameter};

/// Milliseconds in a day.
const DAY: UnixMillis = 86_400_000;

/// An inclusive range over a number; a bound left out is open.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Range {
    /// Smallest value in the range.
    pub min: Option<f64>,
    /// Largest value in the range.
    pub max: Option<f64>,
}

impl Range {
    /// Whether `value` is in the range.
    pub fn holds(&self, value: f64) -> bool {
        self.min.is_none_or(|min| value >= min) && self.max.is_none_or(|max| value <= max)
    }
}

/// A field of the store's user record (feed or delta `Users`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserField {
    /// `Country`.
    Country,
    /// `State`.
    State,
    /// `City`.
    City,
    /// `Gender`.
    Gender,
}

impl UserField {
    /// Every field, with its name in the campaign document.
    pub const ALL: [(&'static str, UserField); 4] = [
        ("Country", UserField::Country),
        ("State", UserField::State),
        ("City", UserField::City),
        ("Gender", UserField::Gender),
    ];
}

/// Names compared without regard to case: held lower-case.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Names(Box<[CompactString]>);

impl Names {
    /// The names given, lower-cased.
    pub fn folded<'a>(names: impl IntoIterator<Item = &'a str>) -> Names {
        Names(names.into_iter().map(|n| n.to_lowercase().into()).collect())
    }

    /// Whether `name` is one of them, ignoring case (ASCII names without folding them;
    /// others lower-cased as they are compared).
    pub fn has(&self, name: &str) -> bool {
        if name.is_ascii() {
            return self.0.iter().any(|n| n.eq_ignore_ascii_case(name));
        }
        self.0
            .iter()
            .any(|n| n.chars().eq(name.chars().flat_map(char::to_lowercase)))
    }

    /// Whether any of `names` is one of them.
    pub fn any<'a>(&self, mut names: impl Iterator<Item = &'a str>) -> bool {
        names.any(|n| self.has(n))
    }

    /// The names, lower-cased.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(CompactString::as_str)
    }
}

/// One condition of a segment's rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Every condition holds (an empty list holds).
    All(Vec<Condition>),
    /// At least one condition holds (an empty list does not).
    Any(Vec<Condition>),
    /// The condition does not hold.
    Not(Box<Condition>),
    /// New (`false`: this is its first session) or returning (`true`: it had sessions
    /// before this one).
    Returning(bool),
    /// Number of sessions, this one included.
    Sessions(Range),
    /// Whole days since it was first seen.
    DaysSinceFirstSeen(Range),
    /// Pages viewed in this session, this request's included.
    SessionPageViews(Range),
    /// Identified (by `customer_details` or an order: a user id or an email) or not.
    LoggedIn(bool),
    /// Its B2B account (`accid`) is one of these.
    B2bAccount(Names),
    /// Its user group (`group_id`, or its user record's `GroupId`) is one of these.
    UserGroup(Names),
    /// A field of its user record is one of these values.
    UserField {
        /// The field.
        field: UserField,
        /// The values it may have.
        values: Names,
    },
    /// Age in whole years, from the user record's `DOB` (or a date of birth given with
    /// an order or `customer_details`).
    Age(Range),
    /// Number of orders.
    Orders(Range),
    /// Revenue of its orders in the account's currency (major units): all of them, or
    /// those of the last `days` days.
    Revenue {
        /// The range of revenue.
        range: Range,
        /// Days back; `None`: lifetime.
        days: Option<u32>,
    },
    /// Whole days since its last order (never holds for a shopper who never ordered).
    DaysSinceLastOrder(Range),
    /// It bought a product of one of these categories.
    BoughtCategory(Names),
    /// It bought a product of one of these brands.
    BoughtBrand(Names),
    /// It viewed at least `min_views` products (or listing pages) of the category.
    CategoryAffinity {
        /// The category.
        category: CompactString,
        /// Views at least.
        min_views: f64,
    },
    /// It viewed at least `min_views` products (or pages) of the brand.
    BrandAffinity {
        /// The brand.
        brand: CompactString,
        /// Views at least.
        min_views: f64,
    },
    /// The value of its basket in the request's currency (major units).
    BasketValue(Range),
    /// Its basket holds a product of one of these categories.
    BasketCategory(Names),
    /// The request's page type is one of these.
    PageType(Vec<PageType>),
    /// The device class of the request's user agent is one of these.
    Device(Vec<DeviceClass>),
    /// The host of the request's referrer is one of these, or a subdomain of one.
    ReferrerHost(Names),
    /// A UTM parameter of the request's `currentUrl` is one of these values.
    Utm {
        /// The parameter.
        parameter: UtmParameter,
        /// The values it may have.
        values: Names,
    },
    /// The request's currency is one of these.
    Currency(Vec<Currency>),
}

/// What a rule reads beyond the request: each costs a lookup, done only when a segment
/// of a requested zone asks for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// The store's user record (user fields, the record's group, its date of birth).
    pub user: bool,
    /// The visitor's category and brand affinities.
    pub affinities: bool,
    /// The request's user agent, referrer and URL.
    pub request: bool,
    /// The latest orders' times (revenue over a number of days).
    pub orders: bool,
}

impl Reads {
    /// Everything a segment may read (a preview, a shadow test).
    pub const ALL: Reads = Reads {
        user: true,
        affinities: true,
        request: true,
        orders: true,
    };

    /// Both.
    pub fn with(self, other: Reads) -> Reads {
        Reads {
            user: self.user || other.user,
            affinities: self.affinities || other.affinities,
            request: self.request || other.request,
            orders: self.orders || other.orders,
        }
    }
}

impl Condition {
    /// What judging the condition reads.
    pub fn reads(&self) -> Reads {
        match self {
            Condition::All(list) | Condition::Any(list) => list
                .iter()
                .fold(Reads::default(), |reads, c| reads.with(c.reads())),
            Condition::Not(inner) => inner.reads(),
            Condition::UserGroup(_) | Condition::UserField { .. } | Condition::Age(_) => Reads {
                user: true,
                ..Reads::default()
            },
            Condition::CategoryAffinity { .. } | Condition::BrandAffinity { .. } => Reads {
                affinities: true,
                ..Reads::default()
            },
            Condition::Device(_) | Condition::ReferrerHost(_) | Condition::Utm { .. } => Reads {
                request: true,
                ..Reads::default()
            },
            Condition::Revenue { days: Some(_), .. } => Reads {
                orders: true,
                ..Reads::default()
            },
            _ => Reads::default(),
        }
    }

    /// The number of conditions in the tree, this one included.
    pub fn size(&self) -> usize {
        match self {
            Condition::All(list) | Condition::Any(list) => {
                1 + list.iter().map(Condition::size).sum::<usize>()
            }
            Condition::Not(inner) => 1 + inner.size(),
            _ => 1,
        }
    }

    /// Whether the shopper meets the condition.
    pub fn holds(&self, shopper: &Shopper<'_>) -> bool {
        let days_since = |at: UnixMillis| ((shopper.now - at).max(0) / DAY) as f64;
        match self {
            Condition::All(list) => list.iter().all(|c| c.holds(shopper)),
            Condition::Any(list) => list.iter().any(|c| c.holds(shopper)),
            Condition::Not(inner) => !inner.holds(shopper),
            Condition::Returning(returning) => shopper.visits.returning() == *returning,
            Condition::Sessions(range) => range.holds(f64::from(shopper.visits.sessions)),
            Condition::DaysSinceFirstSeen(range) => {
                let first = match shopper.visits.first_seen {
                    0 => shopper.now,
                    at => at,
                };
                range.holds(days_since(first))
            }
            Condition::SessionPageViews(range) => {
                range.holds(f64::from(shopper.visits.session_page_views))
            }
            Condition::LoggedIn(wanted) => {
                let identified =
                    shopper.identity.user_id.is_some() || shopper.identity.email.is_some();
                identified == *wanted
            }
            Condition::B2bAccount(names) => shopper
                .identity
                .account_id
                .as_deref()
                .is_some_and(|a| names.has(a)),
            Condition::UserGroup(names) => shopper.group().is_some_and(|g| names.has(g)),
            Condition::UserField { field, values } => shopper
                .user
                .and_then(|user| user.field(*field))
                .is_some_and(|v| values.has(v)),
            Condition::Age(range) => shopper.age().is_some_and(|age| range.holds(age)),
            Condition::Orders(range) => range.holds(f64::from(shopper.visits.orders)),
            Condition::Revenue { range, days } => {
                let minor = match days {
                    Some(days) => shopper
                        .visits
                        .revenue_since(shopper.now - UnixMillis::from(*days) * DAY),
                    None => shopper.visits.revenue_minor,
                };
                range.holds(
                    minor as f64 / 10f64.powi(shopper.account_currency.minor_digits() as i32),
                )
            }
            Condition::DaysSinceLastOrder(range) => match shopper.visits.last_order {
                0 => false,
                at => range.holds(days_since(at)),
            },
            Condition::BoughtCategory(names) => shopper.purchased.iter().any(|&idx| {
                let catalogue = shopper.catalogue;
                catalogue
                    .product(idx)
                    .is_some_and(|p| names.any(catalogue.categories_of(p)))
            }),
            Condition::BoughtBrand(names) => shopper.purchased.iter().any(|&idx| {
                let catalogue = shopper.catalogue;
                catalogue
                    .product(idx)
                    .and_then(|p| catalogue.brand_of(p))
                    .is_some_and(|b| names.has(b))
            }),
            Condition::CategoryAffinity {
                category,
                min_views,
            } => affinity(shopper.categories, category) >= *min_views,
            Condition::BrandAffinity { brand, min_views } => {
                affinity(shopper.brands, brand) >= *min_views
            }
            Condition::BasketValue(range) => range.holds(shopper.basket_value),
            Condition::BasketCategory(names) => shopper.basket.iter().any(|&idx| {
                let catalogue = shopper.catalogue;
                catalogue
                    .product(idx)
                    .is_some_and(|p| names.any(catalogue.categories_of(p)))
            }),
            Condition::PageType(types) => shopper.page_type.is_some_and(|t| types.contains(&t)),
            Condition::Device(classes) => {
                shopper.request.device.is_some_and(|d| classes.contains(&d))
            }
            Condition::ReferrerHost(names) => {
                shopper
                    .request
                    .referrer_host
                    .as_deref()
                    .is_some_and(|host| {
                        names.iter().any(|wanted| {
                            host.eq_ignore_ascii_case(wanted)
                                || host.len() > wanted.len()
                                    && host
                                        .get(host.len() - wanted.len()..)
                                        .is_some_and(|end| end.eq_ignore_ascii_case(wanted))
                                    && host.as_bytes().get(host.len() - wanted.len() - 1)
                                        == Some(&b'.')
                        })
                    })
            }
            Condition::Utm { parameter, values } => shopper
                .request
                .utm(*parameter)
                .is_some_and(|v| values.has(v)),
            Condition::Currency(currencies) => currencies.contains(&shopper.currency),
        }
    }
}

/// The weight of `name` in an affinity list (0 when absent).
fn affinity(list: &[(CompactString, f64)], name: &str) -> f64 {
    list.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map_or(0.0, |(_, weight)| *weight)
}

/// The user record's fields segments read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserFacts {
    /// `Country`.
    pub country: Option<String>,
    /// `State`.
    pub state: Option<String>,
    /// `City`.
    pub city: Option<String>,
    /// `Gender`.
    pub gender: Option<String>,
    /// `GroupId`.
    pub group_id: Option<String>,
    /// `DOB`.
    pub dob: Option<time::Date>,
}

impl UserFacts {
    fn field(&self, field: UserField) -> Option<&str> {
        match field {
            UserField::Country => self.country.as_deref(),
            UserField::State => self.state.as_deref(),
            UserField::City => self.city.as_deref(),
            UserField::Gender => self.gender.as_deref(),
        }
    }
}

/// What a segment is judged against: the shopper at the moment of the request, after
/// the request's events were applied.
#[derive(Debug, Clone, Copy)]
pub struct Shopper<'a> {
    /// The request's time.
    pub now: UnixMillis,
    /// Its visits and orders (other devices of the same shopper included).
    pub visits: &'a Visits,
    /// Its identifiers.
    pub identity: &'a Identity,
    /// Its user record, when it has one and a segment reads it.
    pub user: Option<&'a UserFacts>,
    /// A date of birth given with an order or `customer_details`.
    pub given_dob: Option<time::Date>,
    /// The catalogue version of the request.
    pub catalogue: &'a Catalogue,
    /// What it bought, as dense ids of `catalogue`.
    pub purchased: &'a [ProductIdx],
    /// Its basket's products, as dense ids of `catalogue`.
    pub basket: &'a [ProductIdx],
    /// Its basket's value in the request's currency (major units).
    pub basket_value: f64,
    /// Its category affinities (when a segment reads them).
    pub categories: &'a [(CompactString, f64)],
    /// Its brand affinities (when a segment reads them).
    pub brands: &'a [(CompactString, f64)],
    /// The page type of the request.
    pub page_type: Option<PageType>,
    /// The request's device, referrer and UTM parameters.
    pub request: &'a RequestContext,
    /// The request's currency.
    pub currency: Currency,
    /// The account's currency (revenue is counted in it).
    pub account_currency: Currency,
}

impl Shopper<'_> {
    fn group(&self) -> Option<&str> {
        self.identity
            .group_id
            .as_deref()
            .or_else(|| self.user.and_then(|u| u.group_id.as_deref()))
    }

    fn age(&self) -> Option<f64> {
        let dob = self.user.and_then(|u| u.dob).or(self.given_dob)?;
        let today = time::OffsetDateTime::from_unix_timestamp(self.now / 1000)
            .ok()?
            .date();
        let mut years = today.year() - dob.year();
        if (today.month() as u8, today.day()) < (dob.month() as u8, dob.day()) {
            years -= 1;
        }
        Some(f64::from(years))
    }
}
