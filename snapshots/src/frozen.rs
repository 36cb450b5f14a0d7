//! [`Frozen<T>`]: an rkyv archive of a `T`, in owned aligned memory or in a read-only
//! memory map, validated once and then read in place (zero copy) for as long as it lives.
//!
//! This is the one place where archived bytes are turned into references without
//! validation on every access; every such `unsafe` block says why it is sound.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use memmap2::Mmap;
use rkyv::api::high::{HighSerializer, HighValidator};
use rkyv::bytecheck::CheckBytes;
use rkyv::rancor;
use rkyv::ser::allocator::ArenaHandle;
use rkyv::util::AlignedVec;
use rkyv::{Archive, Portable, Serialize};

enum Backing {
    Owned(AlignedVec),
    Mapped(Mmap),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Owned(v) => v.as_slice(),
            Backing::Mapped(m) => m,
        }
    }
}

/// A validated rkyv archive of a `T`.
pub struct Frozen<T: Archive> {
    backing: Backing,
    range: Range<usize>,
    _type: PhantomData<fn() -> T>,
}

impl<T: Archive> fmt::Debug for Frozen<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.backing {
            Backing::Owned(_) => "owned",
            Backing::Mapped(_) => "mapped",
        };
        f.debug_struct("Frozen")
            .field("backing", &kind)
            .field("bytes", &self.range.len())
            .finish()
    }
}

/// Why archived bytes were refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidArchive(pub String);

impl<T> Frozen<T>
where
    T: Archive,
    T::Archived: Portable + for<'a> CheckBytes<HighValidator<'a, rancor::Error>>,
{
    /// Serializes `value` into owned memory.
    pub fn from_value(value: &T) -> Result<Frozen<T>, InvalidArchive>
    where
        T: for<'a> Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>,
    {
        let bytes =
            rkyv::to_bytes::<rancor::Error>(value).map_err(|e| InvalidArchive(e.to_string()))?;
        let range = 0..bytes.len();
        Ok(Frozen {
            backing: Backing::Owned(bytes),
            range,
            _type: PhantomData,
        })
    }

    /// Validates the archive at `range` of a memory map and keeps the map.
    pub fn from_mmap(map: Mmap, range: Range<usize>) -> Result<Frozen<T>, InvalidArchive> {
        let bytes = map
            .get(range.clone())
            .ok_or_else(|| InvalidArchive(format!("payload {range:?} is outside the file")))?;
        rkyv::access::<T::Archived, rancor::Error>(bytes)
            .map_err(|e| InvalidArchive(e.to_string()))?;
        Ok(Frozen {
            backing: Backing::Mapped(map),
            range,
            _type: PhantomData,
        })
    }

    /// The archived value, read in place.
    pub fn get(&self) -> &T::Archived {
        let bytes = self.bytes();
        // SAFETY: `bytes` is exactly the range that was either produced by
        // `rkyv::to_bytes` for this `T` (`from_value`) or passed `rkyv::access` validation
        // for `T::Archived` (`from_mmap`). The backing memory is owned by `self`, never
        // written after construction (the map is read-only, the vector is private), and
        // lives as long as the returned reference.
        unsafe { rkyv::access_unchecked::<T::Archived>(bytes) }
    }

    /// The archive's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.backing
            .bytes()
            .get(self.range.clone())
            .unwrap_or_default()
    }

    /// Whether the archive is read from a memory map.
    pub fn is_mapped(&self) -> bool {
        matches!(self.backing, Backing::Mapped(_))
    }
}
