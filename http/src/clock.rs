//! The wall clock, read in one place: milliseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

use vitrine_engine::catalogue::UnixMillis;

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> UnixMillis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// An instant as RFC 3339 in UTC, to the millisecond (empty when out of range).
pub fn rfc3339(at: UnixMillis) -> String {
    jiff::Timestamp::from_millisecond(at).map_or_else(|_| String::new(), |t| t.to_string())
}
