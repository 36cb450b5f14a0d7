//! Who an account's shoppers are, as it holds them (`Tracking`): the visitors with
//! their state, the live sessions, every order id recorded (and the gate a state
//! snapshot cuts orders at, `cut.rs`), the identities linking devices (`key.rs`) and
//! the store's user records. `Account` holds one; events write to it
//! (`account/track.rs`), erasure removes from it (`account/identity/`).

pub(crate) mod cut;
pub(crate) mod key;

use std::collections::HashSet;

use time::Date;

use crate::catalogue::UnixMillis;
use crate::shards::{CountedMap, Sharded, sharded};
use crate::visitor::LiveVisitor;
use cut::OrderCut;
use key::IdentityKey;

/// An account's shoppers.
#[derive(Debug)]
pub(crate) struct Tracking {
    /// Visitor id → its state.
    pub(crate) visitors: CountedMap<String, LiveVisitor>,
    /// Session id → last request time.
    pub(crate) sessions: CountedMap<String, UnixMillis>,
    /// Every order id recorded (within the bound), with when.
    pub(crate) orders: CountedMap<String, UnixMillis>,
    /// The gate orders pass, so that a state snapshot holds an order whole or not at
    /// all.
    pub(crate) order_cut: OrderCut,
    /// Identity → the visitor ids it was seen on.
    pub(crate) identities: Sharded<IdentityKey, HashSet<String>>,
    /// The store's user records, by user id.
    pub(crate) users: Sharded<String, UserRecord>,
}

impl Default for Tracking {
    fn default() -> Tracking {
        Tracking {
            visitors: CountedMap::default(),
            sessions: CountedMap::default(),
            orders: CountedMap::default(),
            order_cut: OrderCut::default(),
            identities: sharded(),
            users: sharded(),
        }
    }
}

/// A user record from a delta's `Users` (or a user feed).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserRecord {
    /// `UserId`.
    pub user_id: String,
    /// `Email`.
    pub email: Option<String>,
    /// `FirstName`.
    pub first_name: Option<String>,
    /// `LastName`.
    pub last_name: Option<String>,
    /// `Title`.
    pub title: Option<String>,
    /// `DOB`.
    pub dob: Option<Date>,
    /// `Gender`.
    pub gender: Option<String>,
    /// `City`.
    pub city: Option<String>,
    /// `State`.
    pub state: Option<String>,
    /// `Country`.
    pub country: Option<String>,
    /// `GroupId`.
    pub group_id: Option<String>,
}
