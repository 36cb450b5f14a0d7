//! The order history feed of the vendor's plugins: CSV with the header
//! `OrderId,UserId,Email,DateTimeStamp,ProdCode,Quantity,UnityPrice,LinePrice` (the
//! vendor's spelling `UnityPrice`; `UnitPrice` is read too), one order line a row,
//! unquoted, quantities like `2.0000`, times as `YYYY-MM-DD HH:MM:SS` (UTC).
//!
//! Rows are grouped into orders by `OrderId` (the first row of an order gives its user,
//! email and time). Invalid rows are skipped and reported with their line number; a
//! history with more than half of its rows invalid is refused as a whole, as a feed is.

use std::collections::HashMap;

use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::event::{BasketLine, Identity, Order, PersonalDetails};
use vitrine_fields::{check_id, looks_like_email, number_text, parse_instant};

/// Most row problems kept in a report (the count is always complete).
pub const MAX_REPORTED_ROWS: usize = 100;

/// An order history read from CSV.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OrderHistory {
    /// The orders with their times, in the order of their first row.
    pub orders: Vec<(Order, UnixMillis)>,
    /// Rows read (without the header).
    pub rows: usize,
    /// Rows skipped as invalid.
    pub skipped: usize,
    /// The first [`MAX_REPORTED_ROWS`] problems: `line N: field: reason`.
    pub problems: Vec<String>,
}

impl OrderHistory {
    /// A one-line account of the history and its skipped rows.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "{} orders from {} rows; {} rows skipped",
            self.orders.len(),
            self.rows,
            self.skipped
        );
        if !self.problems.is_empty() {
            text.push_str(": ");
            text.push_str(&self.problems.join("; "));
        }
        text
    }
}

/// Why a history was refused as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrdersError {
    /// Not text, or no header with the required columns.
    #[error("the order history is not CSV with the columns OrderId, ProdCode and Quantity: {0}")]
    Header(String),
    /// More than half of the rows are invalid.
    #[error(
        "{skipped} of {rows} order rows are invalid, more than half; nothing was imported: {problems}"
    )]
    MostlyInvalid {
        /// Rows skipped.
        skipped: usize,
        /// Rows read.
        rows: usize,
        /// The first problems.
        problems: String,
    },
}

/// Reads an order history; `now` is the time of rows without a `DateTimeStamp`.
pub fn parse(bytes: &[u8], now: UnixMillis) -> Result<OrderHistory, OrdersError> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| OrdersError::Header(format!("not UTF-8 ({e})")))?;
    let mut lines = text
        .split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim_end_matches('\r')))
        .filter(|(_, line)| !line.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(OrdersError::Header("the file is empty".to_owned()));
    };
    let columns = Columns::of(header)?;
    let mut history = OrderHistory::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (number, line) in lines {
        history.rows += 1;
        match columns.row(line, now) {
            Ok(row) => match index.get(&row.order_id) {
                Some(&at) => {
                    if let Some((order, _)) = history.orders.get_mut(at) {
                        order.items.push(row.line);
                        order.total = add(order.total, row.line_price);
                    }
                }
                None => {
                    index.insert(row.order_id.clone(), history.orders.len());
                    history.orders.push((
                        Order {
                            order_id: row.order_id,
                            items: vec![row.line],
                            total: row.line_price,
                            identity: row.identity,
                            details: PersonalDetails::default(),
                        },
                        row.at,
                    ));
                }
            },
            Err(problem) => {
                history.skipped += 1;
                if history.problems.len() < MAX_REPORTED_ROWS {
                    history.problems.push(format!("line {number}: {problem}"));
                }
            }
        }
    }
    if history.skipped * 2 > history.rows {
        return Err(OrdersError::MostlyInvalid {
            skipped: history.skipped,
            rows: history.rows,
            problems: history.problems.join("; "),
        });
    }
    Ok(history)
}

fn add(total: Option<f64>, price: Option<f64>) -> Option<f64> {
    match (total, price) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// The positions of the columns in the header.
#[derive(Debug)]
struct Columns {
    order_id: usize,
    user_id: Option<usize>,
    email: Option<usize>,
    time: Option<usize>,
    product: usize,
    quantity: usize,
    unit_price: Option<usize>,
    line_price: Option<usize>,
}

/// One valid row.
#[derive(Debug)]
struct Row {
    order_id: String,
    identity: Identity,
    at: UnixMillis,
    line: BasketLine,
    line_price: Option<f64>,
}

impl Columns {
    fn of(header: &str) -> Result<Columns, OrdersError> {
        let names: Vec<&str> = header.split(',').map(str::trim).collect();
        let find = |wanted: &[&str]| names.iter().position(|n| wanted.contains(n));
        let required = |name: &str| {
            find(&[name]).ok_or_else(|| OrdersError::Header(format!("no column {name}")))
        };
        Ok(Columns {
            order_id: required("OrderId")?,
            user_id: find(&["UserId"]),
            email: find(&["Email"]),
            time: find(&["DateTimeStamp"]),
            product: required("ProdCode")?,
            quantity: required("Quantity")?,
            unit_price: find(&["UnityPrice", "UnitPrice"]),
            line_price: find(&["LinePrice"]),
        })
    }

    fn row(&self, line: &str, now: UnixMillis) -> Result<Row, RowError> {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let cell = |at: usize| cells.get(at).copied().unwrap_or_default();
        let optional = |at: Option<usize>| at.map(cell).filter(|c| !c.is_empty());
        let id = |name: &str, value: &str| {
            check_id(value)
                .map(|()| value.to_owned())
                .map_err(|e| RowError::Cell {
                    column: name.to_owned(),
                    problem: e.to_string(),
                })
        };
        let number = |name: &str, value: &str| {
            number_text(value).ok_or_else(|| RowError::Cell {
                column: name.to_owned(),
                problem: format!("expected a number, got {value:?}"),
            })
        };
        let order_id = id("OrderId", cell(self.order_id))?;
        let product = id("ProdCode", cell(self.product))?;
        let qty = number("Quantity", cell(self.quantity))?;
        if qty <= 0.0 {
            return Err(RowError::Cell {
                column: "Quantity".to_owned(),
                problem: format!("must be greater than 0, got {qty}"),
            });
        }
        let unit_price = match optional(self.unit_price) {
            Some(text) => number("UnityPrice", text)?,
            None => 0.0,
        };
        let line_price = optional(self.line_price)
            .map(|text| number("LinePrice", text))
            .transpose()?;
        if unit_price < 0.0 || line_price.is_some_and(|p| p < 0.0) {
            return Err(RowError::NegativePrice);
        }
        let user_id = optional(self.user_id)
            .map(|text| id("UserId", text))
            .transpose()?;
        let email = match optional(self.email) {
            Some(text) if looks_like_email(text) => Some(text.to_owned()),
            Some(text) => {
                return Err(RowError::Cell {
                    column: "Email".to_owned(),
                    problem: format!("{text:?} is not an email address"),
                });
            }
            None => None,
        };
        let at = match optional(self.time) {
            Some(text) => parse_instant(text)
                .or_else(|| parse_instant(&text.replacen(' ', "T", 1)))
                .ok_or_else(|| RowError::Cell {
                    column: "DateTimeStamp".to_owned(),
                    problem: format!("expected YYYY-MM-DD HH:MM:SS, got {text:?}"),
                })?,
            None => now,
        };
        Ok(Row {
            order_id,
            identity: Identity {
                user_id,
                email,
                ..Identity::default()
            },
            at,
            line: BasketLine {
                id: product,
                qty,
                unit_price,
            },
            line_price,
        })
    }
}

/// Why a row of the order CSV was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum RowError {
    /// A cell that does not read (its column, and what is wrong).
    #[error("{column}: {problem}")]
    Cell { column: String, problem: String },
    /// A negative unit or line price.
    #[error("prices must not be negative")]
    NegativePrice,
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "OrderId,UserId,Email,DateTimeStamp,ProdCode,Quantity,UnityPrice,LinePrice";

    #[test]
    fn rows_group_into_orders_as_the_plugin_writes_them() {
        let csv = format!(
            "{HEADER}\n000000101,501,ann@example.com,2024-03-01 10:11:12,2001,2.0000,45.0000,90.0000\
             \n000000101,501,ann@example.com,2024-03-01 10:11:12,2002,1.0000,12.5000,12.5000\
             \n000000102,,guest@example.com,2024-03-02 09:00:00,2003,1.0000,20.0000,20.0000"
        );
        let history = parse(csv.as_bytes(), 0).unwrap();
        assert_eq!((history.rows, history.skipped), (3, 0));
        let (first, at) = &history.orders[0];
        assert_eq!(first.order_id, "000000101");
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.items[0].qty, 2.0);
        assert_eq!(first.total, Some(102.5));
        assert_eq!(first.identity.user_id.as_deref(), Some("501"));
        assert_eq!(*at, 1_709_287_872_000);
        let (guest, _) = &history.orders[1];
        assert_eq!(guest.identity.user_id, None);
        assert_eq!(guest.identity.email.as_deref(), Some("guest@example.com"));
    }

    #[test]
    fn invalid_rows_are_skipped_and_reported_and_a_mostly_invalid_history_refused() {
        let csv = format!(
            "{HEADER}\n1,,a@b.co,2024-03-01 10:11:12,P1,1,1,1\n2,,a@b.co,yesterday,P1,1,1,1\
             \n3,,a@b.co,2024-03-01 10:11:12,P1,1,1,1"
        );
        let history = parse(csv.as_bytes(), 0).unwrap();
        assert_eq!(history.skipped, 1);
        assert_eq!(
            history.problems,
            ["line 3: DateTimeStamp: expected YYYY-MM-DD HH:MM:SS, got \"yesterday\""]
        );
        let bad = format!("{HEADER}\n1,,,,P1,none,1,1\n2,,,,,1,1,1\n3,,,,P1,1,1,1");
        assert!(matches!(
            parse(bad.as_bytes(), 0),
            Err(OrdersError::MostlyInvalid {
                skipped: 2,
                rows: 3,
                ..
            })
        ));
        assert!(matches!(
            parse(b"Id,Qty\n1,2", 0),
            Err(OrdersError::Header(m)) if m.contains("OrderId")
        ));
    }
}
