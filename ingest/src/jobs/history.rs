//! Order history imported into an account ([`AccountJobs::import_orders`]): the
//! orders of the plugins' `orders` feed or of `vitrine import --orders`, counted for the
//! product models and written to each customer's record as live orders would be, and
//! logged so that a restart replays them.

use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::event::{Event, Order};
use vitrine_engine::state::Tracked;

use super::log::{self, RecordKind};
use super::{AccountJobs, SubmitError};
use crate::jobs::replica::port::Wait;

/// Orders applied and logged together at most (one log record, one fsync).
pub const IMPORT_CHUNK: usize = 1_000;

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportedOrders {
    /// Orders recorded.
    pub new: usize,
    /// Orders whose id was recorded before (live or imported): skipped.
    pub known: usize,
}

impl AccountJobs {
    /// Imports `orders` (each with its time), oldest first, in chunks of
    /// [`IMPORT_CHUNK`]: identities erased from the account are stripped, order lines
    /// naming a product by SKU are read as that product's id, each chunk is applied
    /// (first-seen order ids only; a chunk's time is its newest order's) and then logged
    /// (fsynced) as a record without a visitor.
    pub fn import_orders(
        &self,
        mut orders: Vec<(Order, UnixMillis)>,
    ) -> Result<ImportedOrders, SubmitError> {
        orders.sort_by_key(|(_, at)| *at);
        let account = &self.shared.account;
        let mut report = ImportedOrders::default();
        for chunk in orders.chunks(IMPORT_CHUNK) {
            let now = chunk.iter().map(|(_, at)| *at).max().unwrap_or_default();
            let catalogue = account.catalogue();
            let mut events: Vec<Event> = chunk
                .iter()
                .map(|(order, _)| {
                    let mut order = order.clone();
                    for line in &mut order.items {
                        if catalogue.idx_of(&line.id).is_none()
                            && let Some(product) = catalogue
                                .idx_of_sku(&line.id)
                                .and_then(|i| catalogue.product(i))
                        {
                            line.id = product.id.to_string();
                        }
                    }
                    Event::CustomerOrder(Box::new(order))
                })
                .collect();
            self.shared.forgotten.strip(&mut events);
            let stripped: Vec<Order> = events
                .iter()
                .filter_map(|event| match event {
                    Event::CustomerOrder(order) => Some(Order::clone(order)),
                    _ => None,
                })
                .collect();
            let new = account.import_orders(&stripped, now);
            report.new += new;
            report.known += stripped.len() - new;
            let tracked = Tracked {
                visitor_id: String::new(),
                session_id: String::new(),
                now,
                events: events.into(),
            };
            let payload =
                log::encode_tracked(&tracked).map_err(|e| SubmitError::Journal(e.into()))?;
            let published = self.is_replicated().then(|| payload.clone());
            self.shared
                .wal
                .append_durable(RecordKind::Events.code(), payload)?;
            // In a cluster the other nodes apply the imported orders too.
            if let Some(payload) = published {
                self.publish(RecordKind::Events, || payload, Wait::Stored)?;
            }
        }
        Ok(report)
    }
}
