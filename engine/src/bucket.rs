//! A token bucket over request time: at most `rate` takes a second, a second's worth at
//! once. Bounds the background work a request may start (self-tuning's trials,
//! self-evaluation's judgements) whatever the traffic.

use crate::catalogue::UnixMillis;

/// Takes left and when they were last filled.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: u32,
    tokens: f64,
    filled: Option<UnixMillis>,
}

impl TokenBucket {
    /// A full bucket of `rate` takes a second.
    pub fn new(rate: u32) -> TokenBucket {
        TokenBucket {
            rate,
            tokens: f64::from(rate),
            filled: None,
        }
    }

    /// Takes a token at `now` if there is one (refilled at the rate since the last
    /// call; a clock going back refills nothing).
    pub fn take(&mut self, now: UnixMillis) -> bool {
        let rate = f64::from(self.rate);
        let since = self
            .filled
            .map_or(0, |filled| now.saturating_sub(filled).max(0));
        #[expect(
            clippy::cast_precision_loss,
            reason = "milliseconds far below 2^53 are exact in an f64"
        )]
        let refill = since as f64 / 1_000.0 * rate;
        self.tokens = (self.tokens + refill).min(rate);
        if self.filled.is_none_or(|filled| now > filled) {
            self.filled = Some(now);
        }
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }

    /// A new rate; the tokens left stay, within it.
    pub fn set_rate(&mut self, rate: u32) {
        self.rate = rate;
        self.tokens = self.tokens.min(f64::from(rate));
    }

    /// The rate.
    pub fn rate(&self) -> u32 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seconds_worth_at_once_then_the_rate() {
        let mut bucket = TokenBucket::new(5);
        let taken = (0..10).filter(|_| bucket.take(1_000)).count();
        assert_eq!(taken, 5, "a full bucket holds a second's worth");
        assert!(!bucket.take(1_100), "half a token refilled");
        assert!(bucket.take(1_200), "a whole one after 200 ms");
        // A clock going back refills nothing.
        assert!(!bucket.take(500));
        // Ten idle seconds refill a second's worth, not ten.
        let taken = (0..10).filter(|_| bucket.take(11_200)).count();
        assert_eq!(taken, 5);
    }
}
