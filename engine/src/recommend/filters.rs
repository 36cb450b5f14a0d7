//! The filters every recommender applies, and why a candidate did not pass them.

use crate::catalogue::{ArchivedProduct, ProductIdx};
use crate::zone::Strategy;

use super::{Context, RenderedItem, priced};

/// Why a candidate was not shown: the filters of every recommender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Not in the catalogue version of the request.
    NotInCatalogue,
    /// `ExcludeFromRecommenders`.
    Excluded,
    /// Outside its `StartDate`..`EndDate` window.
    NotLive,
    /// B2B visibility: not for the visitor's account.
    NotVisible,
    /// The page's own product.
    PageProduct,
    /// Already in the visitor's basket.
    InBasket,
    /// Already bought by the visitor.
    Bought,
    /// No price in the request's currency (for this visitor).
    NoPrice,
}

impl Rejection {
    /// The reason in words.
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::NotInCatalogue => "not in the catalogue",
            Rejection::Excluded => "excluded from recommenders",
            Rejection::NotLive => "outside its start and end dates",
            Rejection::NotVisible => "not visible to the visitor's B2B account",
            Rejection::PageProduct => "the page's own product",
            Rejection::InBasket => "already in the basket",
            Rejection::Bought => "already bought",
            Rejection::NoPrice => "no price in the request's currency",
        }
    }
}

/// Whether a product may be shown to this visitor at all: the filters of every
/// recommender (currency, `ExcludeFromRecommenders`, date window, B2B visibility, not the
/// page's own product, not already in the basket or bought, but for `buy_again`, the
/// strategy that found it, whose products are the bought ones).
/// The item to show when it may be, with its price; else why not.
pub(super) fn admissible(
    idx: ProductIdx,
    strategy: Strategy,
    ctx: &Context<'_>,
) -> Result<RenderedItem, Rejection> {
    admitted(idx, strategy, ctx).map(|(item, _)| item)
}

/// [`admissible`], with the product (for the filters a campaign adds).
pub(super) fn admitted<'c>(
    idx: ProductIdx,
    strategy: Strategy,
    ctx: &Context<'c>,
) -> Result<(RenderedItem, &'c ArchivedProduct), Rejection> {
    let product = ctx
        .catalogue
        .product(idx)
        .ok_or(Rejection::NotInCatalogue)?;
    let rejected = if product.exclude_from_recommenders {
        Some(Rejection::Excluded)
    } else if !product.is_live_at(ctx.now) {
        Some(Rejection::NotLive)
    } else if !product.visible_to(ctx.account_id) {
        Some(Rejection::NotVisible)
    } else if ctx.product == Some(idx) {
        Some(Rejection::PageProduct)
    } else if ctx.basket.contains(&idx) {
        Some(Rejection::InBasket)
    } else if strategy != Strategy::BuyAgain && ctx.purchased.contains(&idx) {
        Some(Rejection::Bought)
    } else {
        None
    };
    if let Some(rejection) = rejected {
        return Err(rejection);
    }
    let (price, shared_price) = priced(idx, product, ctx).ok_or(Rejection::NoPrice)?;
    Ok((
        RenderedItem {
            product: idx,
            price,
            shared_price,
        },
        product,
    ))
}
