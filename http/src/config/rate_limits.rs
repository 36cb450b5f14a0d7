//! A rate limit's `{ per_second, burst }` table: an account's endpoints' and its
//! browser endpoints' ([`super::clientside`]).

use super::checks::{Invalid, within};
use super::file::FileRateLimit;

/// A token bucket: `per_second` requests a second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests a second, sustained.
    pub per_second: u32,
    /// Requests allowed at once after a quiet spell (the bucket's size).
    pub burst: u32,
}

impl RateLimit {
    /// The limit as a `governor` quota (both values are at least 1 once validated).
    pub fn quota(self) -> governor::Quota {
        let per_second =
            std::num::NonZeroU32::new(self.per_second).unwrap_or(std::num::NonZeroU32::MIN);
        let burst = std::num::NonZeroU32::new(self.burst).unwrap_or(per_second);
        governor::Quota::per_second(per_second).allow_burst(burst)
    }
}

/// A `{ per_second, burst }` table (`burst` defaults to `per_second`), validated; `key`
/// names its fields.
pub(super) fn rate_limit(
    file: &FileRateLimit,
    key: &impl Fn(&str) -> String,
) -> Result<RateLimit, Invalid> {
    let per_second =
        within(file.per_second, 1, 1_000_000).map_err(|m| Invalid::at(key(".per_second"), m))?;
    let burst = within(file.burst.unwrap_or(per_second), 1, 10_000_000)
        .map_err(|m| Invalid::at(key(".burst"), m))?;
    Ok(RateLimit {
        per_second: u32::try_from(per_second).unwrap_or(u32::MAX),
        burst: u32::try_from(burst).unwrap_or(u32::MAX),
    })
}
