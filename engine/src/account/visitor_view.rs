//! What a request reads of its visitor: [`VisitorSnapshot`], the visitor's history and
//! the facts segments read, copied so that the visitor's lock is released before zones
//! are filled; the recommenders' [`Context`] and the segments' [`Shopper`] built from it.

use std::sync::LazyLock;

use compact_str::CompactString;
use smallvec::SmallVec;

use crate::campaign::RequestContext;
use crate::campaign::segment::{Reads as SegmentReads, Shopper, UserFacts};
use crate::catalogue::{Catalogue, ProductIdx, UnixMillis};
use crate::event::{Identity, PageType};
use crate::models::Neighbours;
use crate::models::live::RankingsVersion;
use crate::money::Currency;
use crate::recommend::Context;
use crate::repurchases::Repurchases;
use crate::visitor::{LiveVisitor, MAX_RECENT_VIEWS, strongest};
use crate::visits::{RecentOrders, Visits};

use super::request::PageContext;

/// No neighbour lists (made once: an empty map still allocates its shards).
static UNLISTED: LazyLock<Neighbours> = LazyLock::new(Neighbours::default);

/// The parts of a visitor that zones consult, copied so the visitor's lock is released
/// before rendering; products as dense ids of the request's catalogue (those it lacks
/// cannot be shown, so they are left out).
#[derive(Debug, Default)]
pub(crate) struct VisitorSnapshot {
    pub(crate) identity: Identity,
    /// In basket order.
    pub(crate) basket: SmallVec<[ProductIdx; 16]>,
    pub(crate) purchased: SmallVec<[ProductIdx; 32]>,
    /// Newest first (all of them fit inline: at most [`MAX_RECENT_VIEWS`]).
    pub(crate) recent_views: SmallVec<[ProductIdx; MAX_RECENT_VIEWS]>,
    /// Whether `categories` and `brands` are filled.
    pub(crate) affinities: bool,
    /// What the visitor (and its other devices) bought, when a `buy_again` zone reads
    /// it.
    pub(crate) repurchases: Option<Repurchases>,
    /// `repurchases` in `buy_again`'s order as dense ids, with the orders of each
    /// (see [`VisitorSnapshot::rank_bought_again`]).
    pub(crate) bought_again: Vec<(ProductIdx, u32)>,
    pub(crate) categories: Vec<String>,
    pub(crate) brands: Vec<String>,
    /// What segments read, when a requested zone has a list of campaigns.
    pub(crate) segments: Option<SegmentFacts>,
    /// Products of the sessions most like what the shopper viewed last, when a zone reads
    /// them ([`Account::session_neighbourhood`]).
    pub(crate) similar_sessions: Vec<(ProductIdx, f32)>,
}

/// What segments read of a visitor, copied with its history (no heap allocation but
/// for what a segment of the request reads: the latest orders' revenue, affinities).
#[derive(Debug, Clone, Default)]
pub(crate) struct SegmentFacts {
    pub(super) visits: Visits,
    pub(super) basket_value: f64,
    pub(super) given_dob: Option<time::Date>,
    pub(crate) categories: Vec<(CompactString, f64)>,
    pub(crate) brands: Vec<(CompactString, f64)>,
}

/// The products of a visitor's basket lines as dense ids of `catalogue` (those it lacks
/// left out), in basket order.
fn basket_idx(
    visitor: &crate::visitor::Visitor,
    catalogue: &Catalogue,
) -> SmallVec<[ProductIdx; 16]> {
    visitor
        .basket
        .iter()
        .filter_map(|b| catalogue.idx_of(&b.id))
        .collect()
}

impl SegmentFacts {
    /// What segments that read `reads` read of `live`.
    fn of(live: &LiveVisitor, reads: SegmentReads) -> SegmentFacts {
        let visitor = live.state();
        let affinities = |list: &Vec<(CompactString, f64)>| {
            if reads.affinities {
                list.clone()
            } else {
                Vec::new()
            }
        };
        SegmentFacts {
            visits: live.visits().for_segments(if reads.orders {
                RecentOrders::Copied
            } else {
                RecentOrders::Left
            }),
            basket_value: crate::campaign::segment::basket_value(&visitor.basket),
            given_dob: visitor.details.dob.and_then(|d| d.date()),
            categories: affinities(&visitor.categories),
            brands: affinities(&visitor.brands),
        }
    }
}

/// Facts of a shopper no segment asked for (an account without campaigns on the
/// requested zones, or an untracked shopper).
static NO_FACTS: LazyLock<SegmentFacts> = LazyLock::new(SegmentFacts::default);

/// Names for a category or brand zone: the visitor's strongest first, then the most
/// popular; the page's own one and names the catalogue does not know are left out.
pub(super) fn affinity(
    visitor: &[String],
    popular: &[String],
    page: Option<&str>,
    count: usize,
    known: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(count);
    for name in visitor.iter().chain(popular) {
        if names.len() >= count {
            break;
        }
        if Some(name.as_str()) != page && !names.contains(name) && known(name) {
            names.push(name.clone());
        }
    }
    names
}

/// What a request reads of a visitor beyond its history (see [`VisitorSnapshot::of`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Reads {
    /// The category and brand affinities.
    pub(super) affinities: bool,
    /// The repurchases.
    pub(super) repurchases: bool,
    /// What the segments of the requested zones' campaigns read (none: no requested
    /// zone has a list).
    pub(super) campaigns: Option<SegmentReads>,
}

/// Products of the sessions most like the shopper's read per request, at most (the
/// zones' filters may leave many out).
pub(super) const SESSION_PRODUCTS: usize = 200;

/// Other devices of one shopper whose history is merged into a request's, at most.
pub const MAX_DEVICES: usize = 8;

/// A currency at a time: the prices and the clock a context reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CurrencyAt {
    /// The currency prices are read in.
    pub(crate) currency: Currency,
    /// The time.
    pub(crate) now: UnixMillis,
}

/// What a context is on: the page's product, category and search term.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OnPage<'a> {
    /// The page's product.
    pub(crate) product: Option<ProductIdx>,
    /// The page's category.
    pub(crate) category: Option<&'a str>,
    /// The search term, lower-cased.
    pub(crate) search: Option<&'a str>,
}

/// Where a shopper asked from, as segments read it: the page type and the request's
/// context (device, referrer, campaign parameters).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AskedFrom<'a> {
    /// The page type.
    pub(crate) page_type: Option<PageType>,
    /// The request's context.
    pub(crate) request: &'a RequestContext,
}

impl VisitorSnapshot {
    /// What recommenders consult for this visitor when a zone is judged or a recipe
    /// tried on what they do next ([`crate::prequential`]): [`VisitorSnapshot::context`]
    /// on the page of their latest view, no category or search term.
    pub(crate) fn judged_context<'a>(
        &'a self,
        catalogue: &'a Catalogue,
        rankings: &'a RankingsVersion,
        published: &'a Neighbours,
        at: CurrencyAt,
    ) -> Context<'a> {
        let product = self.recent_views.first().copied();
        let on = OnPage {
            product,
            ..OnPage::default()
        };
        self.context(catalogue, rankings, published, at, on)
    }

    /// What recommenders consult for this visitor: `catalogue` with its `rankings` and
    /// the `published` neighbour lists (none when they index another base: a request
    /// racing a feed's swap reads none until they are moved to this one), in a currency
    /// at a time, on a page.
    pub(super) fn context<'a>(
        &'a self,
        catalogue: &'a Catalogue,
        rankings: &'a RankingsVersion,
        published: &'a Neighbours,
        CurrencyAt { currency, now }: CurrencyAt,
        OnPage {
            product,
            category,
            search,
        }: OnPage<'a>,
    ) -> Context<'a> {
        Context {
            catalogue,
            rankings: &rankings.rankings,
            neighbours: if published.indexes(catalogue) {
                published
            } else {
                &UNLISTED
            },
            prices: catalogue.prices_in(currency),
            now,
            account_id: self.identity.account_id.as_deref(),
            group_id: self.identity.group_id.as_deref(),
            product,
            category,
            basket: &self.basket,
            purchased: &self.purchased,
            bought_again: &self.bought_again,
            recent_views: &self.recent_views,
            similar_sessions: &self.similar_sessions,
            search,
        }
    }

    /// The products of the visitor's history: recent views, basket lines, purchases
    /// (a product in more than one, more than once).
    pub(crate) fn products(&self) -> impl Iterator<Item = ProductIdx> + '_ {
        self.recent_views
            .iter()
            .chain(&self.basket)
            .chain(&self.purchased)
            .copied()
    }

    /// Whether the visitor viewed `product` lately, has it in the basket or bought it:
    /// what a request brings that is new to them never is.
    pub(crate) fn has(&self, product: ProductIdx) -> bool {
        self.recent_views.contains(&product)
            || self.basket.contains(&product)
            || self.purchased.contains(&product)
    }

    /// What `similar_sessions` compares with other sessions: the latest views (newest
    /// first), then the basket's lines (the latest added first), then the purchases
    /// (the latest first), each once.
    pub(crate) fn latest_products(&self) -> SmallVec<[ProductIdx; 32]> {
        let mut latest: SmallVec<[ProductIdx; 32]> = SmallVec::new();
        let history = self
            .recent_views
            .iter()
            .chain(self.basket.iter().rev())
            .chain(self.purchased.iter().rev());
        for idx in history {
            if latest.len() == crate::models::SESSION_STEPS {
                break;
            }
            if !latest.contains(idx) {
                latest.push(*idx);
            }
        }
        latest
    }

    /// The shopper as segments see it: this visitor at the request's time, on its page.
    pub(crate) fn shopper<'a>(
        &'a self,
        ctx: &Context<'a>,
        page: &PageContext<'_>,
        request: &'a RequestContext,
        user: Option<&'a UserFacts>,
        account_currency: Currency,
    ) -> Shopper<'a> {
        let at = CurrencyAt {
            currency: ctx.currency(),
            now: ctx.now,
        };
        let from = AskedFrom {
            page_type: page.page_type,
            request,
        };
        self.shopper_at(ctx.catalogue, at, from, user, account_currency)
    }

    /// The shopper as segments see it, in `catalogue` and a currency at a time, on a
    /// page type with a request context: the one place a [`Shopper`] is made, for
    /// serving, explain and previews, shadow tests and segment sizes alike.
    pub(crate) fn shopper_at<'a>(
        &'a self,
        catalogue: &'a Catalogue,
        CurrencyAt { currency, now }: CurrencyAt,
        AskedFrom { page_type, request }: AskedFrom<'a>,
        user: Option<&'a UserFacts>,
        account_currency: Currency,
    ) -> Shopper<'a> {
        let facts = self.segments.as_ref().unwrap_or(&NO_FACTS);
        Shopper {
            now,
            visits: &facts.visits,
            identity: &self.identity,
            user,
            given_dob: facts.given_dob,
            catalogue,
            purchased: &self.purchased,
            basket: &self.basket,
            basket_value: facts.basket_value,
            categories: &facts.categories,
            brands: &facts.brands,
            page_type,
            request,
            currency,
            account_currency,
        }
    }

    /// What segments read of `live` as it is now, and no history beyond its basket and
    /// purchases (what a segment's size reads of each visitor).
    pub(crate) fn for_segments(
        live: &LiveVisitor,
        catalogue: &Catalogue,
        reads: SegmentReads,
    ) -> VisitorSnapshot {
        let visitor = live.state();
        VisitorSnapshot {
            identity: visitor.identity.clone(),
            basket: basket_idx(visitor, catalogue),
            purchased: visitor
                .purchased
                .iter()
                .filter_map(|id| catalogue.idx_of(id))
                .collect(),
            segments: Some(SegmentFacts::of(live, reads)),
            ..VisitorSnapshot::default()
        }
    }

    /// Adds another device's history after this one's own: its views (newest first)
    /// after this visitor's, its purchases, its categories and brands.
    pub(super) fn absorb(&mut self, other: &LiveVisitor, catalogue: &Catalogue) {
        for idx in other.recent_idx_read(catalogue) {
            if !self.recent_views.contains(&idx) {
                self.recent_views.push(idx);
            }
        }
        for idx in other.purchased.iter().filter_map(|id| catalogue.idx_of(id)) {
            if !self.purchased.contains(&idx) {
                self.purchased.push(idx);
            }
        }
        if let (Some(mine), Some(theirs)) = (&mut self.repurchases, other.repurchases()) {
            mine.absorb(theirs);
        }
        if let Some(facts) = &mut self.segments {
            facts.visits.absorb(other.visits());
        }
        if !self.affinities {
            return;
        }
        for name in strongest(&other.categories) {
            if !self.categories.contains(&name) {
                self.categories.push(name);
            }
        }
        for name in strongest(&other.brands) {
            if !self.brands.contains(&name) {
                self.brands.push(name);
            }
        }
    }

    /// Ranks what the visitor bought for `buy_again`, as dense ids of `catalogue`
    /// (products it lacks left out); after other devices are absorbed.
    pub(super) fn rank_bought_again(&mut self, catalogue: &Catalogue) {
        if let Some(repurchases) = &self.repurchases {
            self.bought_again = repurchases
                .ranked()
                .into_iter()
                .filter_map(|b| Some((catalogue.idx_of(&b.product)?, b.orders)))
                .collect();
        }
    }

    /// What a request reads of a visitor; the category and brand affinities (sorted,
    /// so not free) only when a category or brand zone asks for them, the repurchases
    /// only when a `buy_again` zone does.
    pub(crate) fn of(
        live: &mut LiveVisitor,
        catalogue: &Catalogue,
        Reads {
            affinities,
            repurchases,
            campaigns,
        }: Reads,
    ) -> VisitorSnapshot {
        // Recent views from the dense ids kept in step with them (no id lookups).
        let recent_views = live.recent_idx(catalogue);
        let purchased = SmallVec::from_slice(live.purchased_idx(catalogue));
        let visitor = live.state();
        VisitorSnapshot {
            identity: visitor.identity.clone(),
            basket: basket_idx(visitor, catalogue),
            purchased,
            recent_views,
            affinities,
            segments: campaigns.map(|reads| SegmentFacts::of(live, reads)),
            repurchases: repurchases.then(|| live.repurchases().cloned().unwrap_or_default()),
            bought_again: Vec::new(),
            similar_sessions: Vec::new(),
            categories: if affinities {
                strongest(&visitor.categories)
            } else {
                Vec::new()
            },
            brands: if affinities {
                strongest(&visitor.brands)
            } else {
                Vec::new()
            },
        }
    }
}
