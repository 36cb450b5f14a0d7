//! What a visitor bought again and again: per product, the orders it was in and when it
//! was last bought. `buy_again` ranks a visitor's products by it; every other zone
//! leaves bought products out.
//!
//! Bounded like the visitor's other lists: at most [`MAX_BOUGHT`] products, the one
//! bought longest ago making room.

use compact_str::CompactString;

use crate::catalogue::UnixMillis;

/// Products whose repurchases a visitor keeps (as many as [`crate::visitor::Visitor`]'s
/// purchases, [`crate::visitor::MAX_PURCHASED`], which is this bound).
pub const MAX_BOUGHT: usize = 200;

/// One product a visitor bought.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Bought {
    /// The product id.
    pub product: CompactString,
    /// Orders it was in.
    pub orders: u32,
    /// When it was last ordered.
    pub last: UnixMillis,
}

/// A visitor's bought products, the latest bought last.
#[derive(Debug, Clone, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Repurchases {
    bought: Vec<Bought>,
}

impl Repurchases {
    /// Records one order of `products` at `at` (a product listed twice in it counts
    /// once).
    pub fn record_order<'a>(
        &mut self,
        products: impl IntoIterator<Item = &'a str>,
        at: UnixMillis,
    ) {
        let mut order: smallvec::SmallVec<[&str; 16]> = smallvec::SmallVec::new();
        for product in products {
            if !order.contains(&product) {
                order.push(product);
            }
        }
        for product in order {
            match self.bought.iter().position(|b| b.product == product) {
                Some(pos) => {
                    let mut entry = self.bought.remove(pos);
                    entry.orders = entry.orders.saturating_add(1);
                    entry.last = entry.last.max(at);
                    self.bought.push(entry);
                }
                None => {
                    if self.bought.len() == MAX_BOUGHT {
                        self.bought.remove(0);
                    }
                    self.bought.push(Bought {
                        product: CompactString::from(product),
                        orders: 1,
                        last: at,
                    });
                }
            }
        }
    }

    /// The products, the latest bought last.
    pub fn entries(&self) -> &[Bought] {
        &self.bought
    }

    /// Whether nothing was bought.
    pub fn is_empty(&self) -> bool {
        self.bought.is_empty()
    }

    /// Adds another device's purchases of the same shopper: orders add up, the later
    /// time is kept.
    pub fn absorb(&mut self, other: &Repurchases) {
        for theirs in &other.bought {
            match self.bought.iter_mut().find(|b| b.product == theirs.product) {
                Some(mine) => {
                    mine.orders = mine.orders.saturating_add(theirs.orders);
                    mine.last = mine.last.max(theirs.last);
                }
                None => self.bought.push(theirs.clone()),
            }
        }
    }

    /// The products in `buy_again`'s order: bought in the most orders first, then the
    /// latest bought.
    pub fn ranked(&self) -> Vec<&Bought> {
        let mut ranked: Vec<&Bought> = self.bought.iter().collect();
        ranked.sort_by(|a, b| {
            b.orders
                .cmp(&a.orders)
                .then(b.last.cmp(&a.last))
                .then_with(|| a.product.cmp(&b.product))
        });
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(r: &Repurchases) -> Vec<(&str, u32)> {
        r.ranked()
            .into_iter()
            .map(|b| (b.product.as_str(), b.orders))
            .collect()
    }

    #[test]
    fn ranks_by_orders_then_the_latest_bought() {
        let mut r = Repurchases::default();
        r.record_order(["milk", "bread", "milk"], 1_000);
        r.record_order(["eggs"], 2_000);
        r.record_order(["bread", "tea"], 3_000);
        r.record_order(["milk"], 4_000);
        // milk in 2 orders (listed twice in the first), bread 2, tea and eggs 1.
        assert_eq!(
            ids(&r),
            vec![("milk", 2), ("bread", 2), ("tea", 1), ("eggs", 1)]
        );
        let milk = &r.entries()[r.entries().len() - 1];
        assert_eq!((milk.product.as_str(), milk.last), ("milk", 4_000));
    }

    #[test]
    fn keeps_at_most_the_bound_dropping_the_longest_ago() {
        let mut r = Repurchases::default();
        for n in 0..(MAX_BOUGHT + 5) {
            r.record_order([format!("p{n}").as_str()], n as UnixMillis);
        }
        assert_eq!(r.entries().len(), MAX_BOUGHT);
        assert_eq!(r.entries()[0].product, "p5");
        // A product bought again moves to the end and is not dropped next.
        r.record_order(["p5"], 10_000);
        r.record_order(["new"], 10_001);
        assert!(r.entries().iter().any(|b| b.product == "p5"));
        assert!(!r.entries().iter().any(|b| b.product == "p6"));
    }

    #[test]
    fn another_device_adds_its_orders() {
        let mut mine = Repurchases::default();
        mine.record_order(["milk"], 1_000);
        let mut theirs = Repurchases::default();
        theirs.record_order(["milk", "tea"], 2_000);
        mine.absorb(&theirs);
        assert_eq!(ids(&mine), vec![("milk", 2), ("tea", 1)]);
    }
}
