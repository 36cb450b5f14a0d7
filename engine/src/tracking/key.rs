//! How a shopper's identities are keyed, each to the visitor ids it was seen on.

/// A shopper's identity: a store user id, an email (lower-case) or a B2B account id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum IdentityKey {
    /// A store user id.
    User(String),
    /// An email, lower-case.
    Email(String),
    /// A B2B account id.
    Account(String),
}
