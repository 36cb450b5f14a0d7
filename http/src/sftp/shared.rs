//! What every SSH session shares: the server's state, failed logins per address
//! ([`LoginFailures`]) and what each account's area holds.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Instant;

use dashmap::DashMap;

use super::area::Areas;
use crate::state::AppState;

/// Failed logins per client address, limited with a token bucket (`governor`): an
/// address that used its failures up is refused until it has earned one back.
#[derive(Debug)]
pub struct LoginFailures {
    limiter: governor::DefaultKeyedRateLimiter<IpAddr>,
    /// Addresses refused until the instant: set when a failure finds the bucket empty.
    blocked: DashMap<IpAddr, Instant>,
}

impl LoginFailures {
    /// `per_minute` failures a minute per address, all of them at once after a quiet one.
    pub fn new(per_minute: u32) -> LoginFailures {
        let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        LoginFailures {
            limiter: governor::RateLimiter::keyed(governor::Quota::per_minute(per_minute)),
            blocked: DashMap::new(),
        }
    }

    /// Whether logins from `address` are refused now.
    pub fn is_blocked(&self, address: IpAddr) -> bool {
        let now = Instant::now();
        match self.blocked.get(&address).map(|until| *until) {
            Some(until) if until > now => true,
            Some(_) => {
                self.blocked.remove(&address);
                false
            }
            None => false,
        }
    }

    /// Counts a failed login from `address`; true when that used its last allowed one,
    /// so that the address is refused from now on, for as long as the bucket says.
    pub fn fail(&self, address: IpAddr) -> bool {
        use governor::clock::{Clock, DefaultClock};
        match self.limiter.check_key(&address) {
            Ok(()) => false,
            Err(not_until) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                self.blocked.insert(address, Instant::now() + wait);
                // Addresses whose block ended are forgotten, so the map stays small.
                let now = Instant::now();
                self.blocked.retain(|_, until| *until > now);
                self.limiter.retain_recent();
                true
            }
        }
    }
}

/// What every SSH session shares.
#[derive(Debug)]
pub struct Shared {
    /// The server's state: accounts, their jobs, the feed runner.
    pub state: Arc<AppState>,
    /// Failed logins per address.
    pub failures: LoginFailures,
    /// What each account's area holds: its uploads completed lately.
    pub areas: Arc<Areas>,
}
