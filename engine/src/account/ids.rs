//! Ids the account makes.

/// A new 128-bit random id, 32 lower-case hex characters.
pub fn new_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}
