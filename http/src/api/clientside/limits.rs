//! What an account keeps for its browser requests: its limits per client address and
//! per visitor (keyed token buckets, pruned by the session sweep), its zone templates
//! and its script, by host.

use std::net::IpAddr;

use vitrine_engine::shards::TextHasher;

use super::{html, script};
use crate::config::{ClientsideConfig, RateLimit};

/// A rate limit per key (client address, visitor id), its table hashed as the
/// engine's maps of outside keys are ([`TextHasher`]: keys are the client's choice).
pub(super) type Keyed<K> = governor::DefaultKeyedRateLimiter<
    K,
    governor::middleware::NoOpMiddleware<
        <governor::clock::DefaultClock as governor::clock::Clock>::Instant,
    >,
    TextHasher,
>;

/// What an account keeps for its browser requests: its limits per client address and
/// per visitor, and its zone templates.
#[derive(Debug)]
pub struct ClientsideState {
    pub(super) per_ip: Keyed<IpAddr>,
    pub(super) per_visitor: Keyed<String>,
    pub(crate) cards: html::Cards,
    /// The script, by host its pages load it from.
    pub(crate) scripts: script::Scripts,
}

fn keyed<K: std::hash::Hash + Eq + Clone>(limit: RateLimit) -> Keyed<K> {
    governor::RateLimiter::dashmap_with_hasher(limit.quota(), TextHasher::default())
}

impl ClientsideState {
    /// The state of an account configured with `config`.
    pub fn new(config: &ClientsideConfig) -> Result<ClientsideState, minijinja::Error> {
        Ok(ClientsideState {
            per_ip: keyed(config.per_ip),
            per_visitor: keyed(config.per_visitor),
            cards: html::Cards::new(config.card_template.as_deref())?,
            scripts: script::Scripts::default(),
        })
    }

    /// Forgets the clients and visitors whose limits are full again (the session sweep
    /// calls it, so that the tables hold only recent clients).
    pub fn sweep(&self) {
        self.per_ip.retain_recent();
        self.per_visitor.retain_recent();
        self.per_ip.shrink_to_fit();
        self.per_visitor.shrink_to_fit();
    }
}
