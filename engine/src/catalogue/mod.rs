//! The product catalogue: products under dense `u32` ids, categories, brands and
//! account-specific prices.
//!
//! A [`Catalogue`] is immutable once built: an rkyv archive of [`CatalogueData`] held in
//! a [`vitrine_snapshots::Frozen`] container (owned memory after a build, a memory map
//! after a restart) and read in place, so a snapshot serves without being deserialized.
//! Readers hold one version for a whole request. Changes go through a
//! [`CatalogueBuilder`] (from scratch, or from an existing version with
//! [`Catalogue::to_builder`]) or a [`crate::overlay::CatalogueEdit`], and produce a new
//! version that the account's writer swaps in. External ids (strings) map to dense
//! [`ProductIdx`] through one table.
//!
//! Modules:
//! - `model`: the owned product model ([`Product`], [`StoredProduct`] from one field
//!   list), prices, visibility, category and brand records.
//! - `layout`: the archived content of a version ([`CatalogueData`]), price columns.
//! - `read`: [`Catalogue`], the read API over base and overlay.
//! - `build`: [`CatalogueBuilder`] and the way from a version back to a builder.
//! - `search`: finding products, categories and brands by id or title, for the
//!   console's pickers.

mod build;
mod layout;
#[expect(
    missing_debug_implementations,
    reason = "rkyv's resolver of StoredProduct, derived inside product_fields!, has no Debug"
)]
mod model;
mod read;
pub mod search;

pub use build::CatalogueBuilder;
pub use layout::{
    ArchivedCatalogueData, ArchivedPriceColumn, ArchivedProduct, CatalogueData, NO_PRICE,
    PriceColumn,
};
pub use model::{
    ArchivedBrand, ArchivedCategory, ArchivedGroupPrice, ArchivedPriceSet, ArchivedStoredProduct,
    ArchivedVisibility, Brand, Category, GroupPrice, PriceSet, Product, StoredProduct, Visibility,
};
pub(crate) use read::{BaseHandle, Edited, next_version};
pub use read::{Catalogue, FULL_DIFF_LIMIT, OwnPrices};

/// Dense index of a product inside one catalogue version.
pub type ProductIdx = u32;

/// Milliseconds since the Unix epoch, UTC.
pub type UnixMillis = i64;

/// Why a catalogue could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the catalogue could not be archived: {0}")]
pub struct CatalogueError(pub(crate) String);
