//! The price an item shows a visitor: account > group > product precedence, a sale
//! price only below the regular one, and the product's own and group sale prices only
//! inside its sale window (`SalePriceStartDate`..`SalePriceEndDate`) at the time of the
//! request: a window opens or closes with no rebuild.

use crate::catalogue::{ArchivedProduct, Catalogue, ProductIdx};
use crate::money::{Currency, Money, saving_percent};

use super::Context;

/// The price an item shows, after account > group > product precedence and sale rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemPrice {
    /// Current price: the sale price when one applies.
    pub price: Money,
    /// The regular price, present only when a sale price applies.
    pub was: Option<Money>,
}

impl ItemPrice {
    /// Amount saved, when on sale.
    pub fn saving(&self) -> Option<Money> {
        self.was.map(|was| Money {
            minor: was.minor - self.price.minor,
            ..was
        })
    }

    /// `SavingPercent`, e.g. `"29%"`, when on sale.
    pub fn saving_percent(&self) -> Option<String> {
        self.was.map(|was| saving_percent(was, self.price))
    }
}

/// The price of a product for a visitor, or `None` when it has none in the currency.
pub fn item_price(
    idx: ProductIdx,
    product: &ArchivedProduct,
    ctx: &Context<'_>,
) -> Option<ItemPrice> {
    priced(idx, product, ctx).map(|(price, _)| price)
}

/// [`item_price`], and whether it is the product's own price in the currency (the same
/// for every visitor, so its rendering can be shared) rather than an account or group
/// price.
pub fn priced(
    idx: ProductIdx,
    product: &ArchivedProduct,
    ctx: &Context<'_>,
) -> Option<(ItemPrice, bool)> {
    let account_set = ctx
        .account_id
        .and_then(|acc| ctx.catalogue.account_prices(acc, &product.id));
    let group_set = ctx.group_id.and_then(|group| product.group_prices(group));
    // Account prices are records of their own, with no sale window.
    let chosen = [(account_set, false), (group_set, true)]
        .into_iter()
        .find_map(|(set, windowed)| {
            set.filter(|set| set.price_in(ctx.currency()).is_some())
                .map(|set| (set, windowed))
        });
    let (regular, sale, windowed) = match chosen {
        Some((set, windowed)) => (
            set.price_in(ctx.currency()),
            set.sale_in(ctx.currency()),
            windowed,
        ),
        None => {
            let (regular, sale) = ctx.prices.of(idx);
            (regular, sale, true)
        }
    };
    let sale = sale.filter(|_| !windowed || product.sale_applies_at(ctx.now));
    // A product whose price depends on the time is rendered per request.
    let shared = chosen.is_none() && !product.has_sale_window();
    Some((price_from(regular?, sale)?, shared))
}

/// The price of product `idx` in `currency` that every visitor without an account or
/// group price sees, when it does not depend on the time (the product has no sale
/// window): the price [`priced`] calls shared. `None` otherwise, or without a price in
/// the currency.
pub fn shared_price(
    catalogue: &Catalogue,
    idx: ProductIdx,
    currency: Currency,
) -> Option<ItemPrice> {
    let product = catalogue.product(idx)?;
    if product.has_sale_window() {
        return None;
    }
    let (regular, sale) = catalogue.own_prices(idx, currency);
    price_from(regular?, sale)
}

fn price_from(regular: Money, sale: Option<Money>) -> Option<ItemPrice> {
    Some(match sale {
        Some(sale) if sale.minor < regular.minor => ItemPrice {
            price: sale,
            was: Some(regular),
        },
        _ => ItemPrice {
            price: regular,
            was: None,
        },
    })
}
