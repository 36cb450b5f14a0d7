//! Currencies and amounts.
//!
//! Amounts are integers in the currency's minor unit (pence, cents; yen have none), so
//! prices compare and subtract exactly. Symbols and minor units come from ISO 4217 data
//! (the `iso_currency` crate), never from a hand-written table.
//!
//! The feed format of a price is `<amount> <ISO 4217 code>`, e.g. `3.49 GBP`:
//! [`Money::parse`] reads it, [`Money::display`] writes `£3.49`.

use std::fmt;

/// An ISO 4217 currency that has a minor unit (funds and metals such as XAU are refused),
/// stored as its ISO numeric code so that it archives as two bytes.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[rkyv(derive(Debug))]
pub struct Currency(u16);

/// The trading currencies by code, in code order: each ISO numeric code's currency
/// whose lookup by code gives it back.
static BY_CODE: std::sync::LazyLock<Vec<(u32, Currency)>> = std::sync::LazyLock::new(|| {
    let mut table: Vec<(u32, Currency)> = (0..1000u16)
        .filter_map(iso_currency::Currency::from_numeric)
        .filter_map(|iso| {
            let code = code_key(iso.code())?;
            let currency = Currency::looked_up(iso.code()).ok()?;
            Some((code, currency))
        })
        .collect();
    table.sort_unstable_by_key(|(code, _)| *code);
    table.dedup_by_key(|(code, _)| *code);
    table
});

/// A three-byte code as one number, ordered as the codes are (a search compares one
/// number, not three bytes).
fn code_key(code: &str) -> Option<u32> {
    let [a, b, c] = <[u8; 3]>::try_from(code.as_bytes()).ok()?;
    Some(u32::from_be_bytes([0, a, b, c]))
}

/// Why a currency code or price string was refused. The text is shown to store engineers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// Not three upper-case ASCII letters.
    #[error("expected a three-letter upper-case ISO 4217 code such as GBP, got {0:?}")]
    CodeFormat(String),
    /// Three letters, but not a current ISO 4217 code.
    #[error("{0:?} is not an ISO 4217 currency code")]
    UnknownCode(String),
    /// A code without a minor unit (funds, precious metals, testing codes).
    #[error("{0} is not a trading currency")]
    NotTrading(String),
    /// Not of the shape `<amount> <code>`.
    #[error("expected \"<amount> <ISO 4217 code>\" such as \"3.49 GBP\", got {0:?}")]
    PriceFormat(String),
    /// The amount is not a non-negative decimal with `.` as separator.
    #[error("amount {0:?} is not a non-negative decimal number with '.' as separator")]
    Amount(String),
    /// More decimal places than the currency has minor units.
    #[error("amount {amount:?} has more decimal places than {code} allows ({digits})")]
    Precision {
        /// The amount as written.
        amount: String,
        /// The currency code.
        code: &'static str,
        /// The currency's number of minor-unit digits.
        digits: u32,
    },
}

impl Currency {
    /// Reads an ISO 4217 code: exactly three upper-case letters of a trading currency.
    pub fn from_code(code: &str) -> Result<Currency, MoneyError> {
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(MoneyError::CodeFormat(code.to_owned()));
        }
        // Every feed price and many requests name a currency: found in a table by code
        // (`iso_currency` matches the code against each of its own, some 600
        // instructions a call); a code the table lacks is looked up there.
        let key = code_key(code).unwrap_or_default();
        if let Ok(at) = BY_CODE.binary_search_by_key(&key, |(code, _)| *code)
            && let Some((_, currency)) = BY_CODE.get(at)
        {
            return Ok(*currency);
        }
        Currency::looked_up(code)
    }

    /// [`Currency::from_code`] of a well-formed `code`, read from `iso_currency`.
    fn looked_up(code: &str) -> Result<Currency, MoneyError> {
        let iso = iso_currency::Currency::from_code(code)
            .ok_or_else(|| MoneyError::UnknownCode(code.to_owned()))?;
        if iso.exponent().is_none() || iso.is_fund() || iso.is_special() {
            return Err(MoneyError::NotTrading(code.to_owned()));
        }
        Ok(Currency(iso.numeric()))
    }

    fn iso(self) -> Option<iso_currency::Currency> {
        iso_currency::Currency::from_numeric(self.0)
    }

    /// The three-letter code, e.g. `GBP` (`XXX` for a code this build does not know,
    /// which only a foreign snapshot could hold).
    pub fn code(self) -> &'static str {
        self.iso().map_or("XXX", |c| c.code())
    }

    /// Number of minor-unit digits: 2 for GBP, 0 for JPY, 3 for KWD.
    pub fn minor_digits(self) -> u32 {
        self.iso()
            .and_then(iso_currency::Currency::exponent)
            .map_or(0, u32::from)
    }

    /// The currency's symbol from ISO data, e.g. `£`.
    pub fn symbol(self) -> String {
        self.symbol_str().to_owned()
    }

    /// The currency's symbol, read once per currency from the ISO data (which builds a
    /// new string each time it is asked) and kept for the life of the process (one
    /// small string per currency ever shown), in a slot per ISO numeric code: read
    /// without a lock or a hash.
    pub fn symbol_str(self) -> &'static str {
        static SYMBOLS: [std::sync::OnceLock<&'static str>; 1000] =
            [const { std::sync::OnceLock::new() }; 1000];
        let Some(slot) = SYMBOLS.get(usize::from(self.0)) else {
            return "¤";
        };
        slot.get_or_init(|| match self.iso() {
            Some(iso) => Box::leak(iso.symbol().symbol.into_boxed_str()),
            None => "¤",
        })
    }

    fn scale(self) -> i64 {
        10_i64.pow(self.minor_digits())
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// An amount of one currency, in minor units.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[rkyv(derive(Debug))]
pub struct Money {
    /// Amount in minor units (pence for GBP).
    pub minor: i64,
    /// The currency of the amount.
    pub currency: Currency,
}

/// Largest amount accepted in minor units; keeps every sum and product far from overflow.
const MAX_MINOR: i64 = 1_000_000_000_000_000;

impl Money {
    /// Parses `<amount> <ISO 4217 code>` such as `3.49 GBP` or `350 JPY`.
    pub fn parse(text: &str) -> Result<Money, MoneyError> {
        let mut parts = text.split(' ').filter(|p| !p.is_empty());
        let (Some(amount), Some(code), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(MoneyError::PriceFormat(text.to_owned()));
        };
        let currency = Currency::from_code(code)?;
        let minor = parse_minor(amount, currency)?;
        Ok(Money { minor, currency })
    }

    /// The amount as a decimal number, for JSON `Price` fields.
    pub fn as_f64(self) -> f64 {
        self.minor as f64 / self.currency.scale() as f64
    }

    /// The amount as a plain decimal string with the currency's digits: `2.49`, `350`.
    pub fn decimal(self) -> String {
        let mut out = Vec::with_capacity(24);
        write_decimal(
            &mut out,
            self.minor,
            self.currency.minor_digits(),
            Thousands::Plain,
        );
        written(out)
    }

    /// The amount for display, with symbol and thousands separators: `£1,234.50`.
    pub fn display(self) -> String {
        let mut out = Vec::with_capacity(32);
        self.write_display(&mut out);
        written(out)
    }

    /// Appends [`Money::display`]'s text to `out`, as UTF-8, without allocating.
    pub fn write_display(self, out: &mut Vec<u8>) {
        let symbol = self.currency.symbol_str();
        if self.minor < 0 {
            out.push(b'-');
        }
        out.extend_from_slice(symbol.as_bytes());
        // Alphabetic symbols (e.g. "CHF", "kr") read better with a space before the digits.
        if symbol.chars().last().is_some_and(char::is_alphabetic) {
            out.push(b' ');
        }
        write_decimal(
            out,
            self.minor.abs(),
            self.currency.minor_digits(),
            Thousands::Grouped,
        );
    }
}

/// The text this module wrote: UTF-8 always (a symbol's text, ASCII digits and marks).
fn written(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

impl ArchivedCurrency {
    /// The currency, native.
    pub fn to_native(&self) -> Currency {
        Currency(self.0.to_native())
    }
}

impl ArchivedMoney {
    /// The amount, native.
    pub fn to_native(&self) -> Money {
        Money {
            minor: self.minor.to_native(),
            currency: self.currency.to_native(),
        }
    }
}

fn parse_minor(amount: &str, currency: Currency) -> Result<i64, MoneyError> {
    let bad = || MoneyError::Amount(amount.to_owned());
    let (whole, frac) = match amount.split_once('.') {
        Some((w, f)) => (w, f),
        None => (amount, ""),
    };
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || (amount.contains('.') && frac.is_empty())
    {
        return Err(bad());
    }
    let digits = currency.minor_digits();
    // Trailing zeros beyond the minor unit are harmless ("12.990 GBP"); other digits are not.
    let significant = frac.trim_end_matches('0');
    if significant.len() as u32 > digits {
        return Err(MoneyError::Precision {
            amount: amount.to_owned(),
            code: currency.code(),
            digits,
        });
    }
    let whole: i64 = whole.parse().map_err(|_| bad())?;
    let mut frac_value: i64 = 0;
    for b in significant.bytes() {
        frac_value = frac_value * 10 + i64::from(b - b'0');
    }
    let frac_value = frac_value * 10_i64.pow(digits - significant.len() as u32);
    let minor = whole
        .checked_mul(currency.scale())
        .and_then(|w| w.checked_add(frac_value))
        .filter(|m| *m <= MAX_MINOR)
        .ok_or_else(bad)?;
    Ok(minor)
}

/// Whether a written amount groups its thousands (`1,234.50`) or not (`1234.50`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Thousands {
    Grouped,
    Plain,
}

fn write_decimal(out: &mut Vec<u8>, minor: i64, digits: u32, thousands: Thousands) {
    let scale = 10_u64.pow(digits);
    if minor < 0 {
        out.push(b'-');
    }
    let minor = minor.unsigned_abs();
    let mut whole = itoa::Buffer::new();
    let whole = whole.format(minor / scale).as_bytes();
    if thousands == Thousands::Grouped {
        for (i, digit) in whole.iter().enumerate() {
            if i > 0 && (whole.len() - i).is_multiple_of(3) {
                out.push(b',');
            }
            out.push(*digit);
        }
    } else {
        out.extend_from_slice(whole);
    }
    if digits > 0 {
        let mut frac = itoa::Buffer::new();
        let frac = frac.format(minor % scale).as_bytes();
        out.push(b'.');
        out.extend(std::iter::repeat_n(
            b'0',
            (digits as usize).saturating_sub(frac.len()),
        ));
        out.extend_from_slice(frac);
    }
}

/// The percentage saved, rounded half up, as shown in `SavingPercent` (`"29%"`).
pub fn saving_percent(was: Money, now: Money) -> String {
    format!("{}%", saved_percent(was, now))
}

/// The number of [`saving_percent`]: the percentage saved, rounded half up (0 when
/// nothing is saved).
pub fn saved_percent(was: Money, now: Money) -> i128 {
    if was.minor <= 0 || now.minor >= was.minor {
        return 0;
    }
    let saved = (was.minor - now.minor) as i128 * 100;
    let was_minor = was.minor as i128;
    (saved * 2 + was_minor) / (was_minor * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every three-letter code reads the same through the table as through
    /// `iso_currency`'s lookup: the same currency or the same refusal.
    #[test]
    fn every_code_reads_as_iso_currency_reads_it() {
        let mut trading = 0;
        for a in b'A'..=b'Z' {
            for b in b'A'..=b'Z' {
                for c in b'A'..=b'Z' {
                    let code = String::from_utf8(vec![a, b, c]).unwrap();
                    let read = Currency::from_code(&code);
                    assert_eq!(read, Currency::looked_up(&code), "{code}");
                    trading += usize::from(read.is_ok());
                }
            }
        }
        assert!(trading > 100, "{trading} trading currencies");
        assert_eq!(BY_CODE.len(), trading);
    }

    fn gbp(minor: i64) -> Money {
        crate::testing::money(minor, "GBP")
    }

    #[test]
    fn parses_feed_prices() {
        assert_eq!(Money::parse("3.49 GBP").unwrap(), gbp(349));
        assert_eq!(Money::parse("3 GBP").unwrap(), gbp(300));
        assert_eq!(Money::parse("3.5 GBP").unwrap(), gbp(350));
        assert_eq!(Money::parse("12.990 GBP").unwrap(), gbp(1299));
        let yen = Money::parse("350 JPY").unwrap();
        assert_eq!(yen.minor, 350);
        assert_eq!(yen.display(), "¥350");
    }

    #[test]
    fn refuses_malformed_prices() {
        for bad in [
            "3.49", "GBP 3.49", "3,49 GBP", "-1 GBP", "3. GBP", ".5 GBP", "3.49 gbp",
        ] {
            assert!(Money::parse(bad).is_err(), "{bad} should be refused");
        }
        assert!(matches!(
            Money::parse("3.499 GBP"),
            Err(MoneyError::Precision { .. })
        ));
        assert!(matches!(
            Money::parse("1.5 JPY"),
            Err(MoneyError::Precision { .. })
        ));
        assert!(matches!(
            Money::parse("1 XAU"),
            Err(MoneyError::NotTrading(_))
        ));
        assert!(matches!(
            Money::parse("1 ABC"),
            Err(MoneyError::UnknownCode(_))
        ));
        assert!(Money::parse("99999999999999999999 GBP").is_err());
    }

    #[test]
    fn displays_with_symbol_and_minor_units() {
        assert_eq!(gbp(249).display(), "£2.49");
        assert_eq!(gbp(123_450).display(), "£1,234.50");
        assert_eq!(gbp(5).display(), "£0.05");
        assert_eq!(Money::parse("3.99 USD").unwrap().display(), "$3.99");
        assert_eq!(Money::parse("1.5 EUR").unwrap().display(), "€1.50");
        assert_eq!(
            Money::parse("1234567 USD").unwrap().display(),
            "$1,234,567.00"
        );
        assert_eq!(gbp(249).decimal(), "2.49");
    }

    #[test]
    fn round_trips_every_amount_of_a_range() {
        for minor in (0..100_000).step_by(7) {
            let money = gbp(minor);
            assert_eq!(
                Money::parse(&format!("{} GBP", money.decimal())).unwrap(),
                money
            );
        }
    }

    #[test]
    fn saving_percent_rounds_half_up() {
        assert_eq!(saving_percent(gbp(349), gbp(249)), "29%");
        assert_eq!(saving_percent(gbp(200), gbp(100)), "50%");
        assert_eq!(saving_percent(gbp(800), gbp(700)), "13%");
        assert_eq!(saving_percent(gbp(100), gbp(100)), "0%");
    }
}
