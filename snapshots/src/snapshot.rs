//! Snapshot files: a 64-byte header (magic, format version, kind, sequence, payload
//! length, payload CRC32C, header CRC32C, log position) followed by an rkyv archive. Layout in
//! `snapshots/FORMAT.md`.
//!
//! Files are named `<prefix>-<sequence, 20 digits>.snap`, written with
//! [`crate::atomic_write`], and opened by memory map. [`open_newest`] tries the newest
//! first and falls back to older ones when a file is truncated, corrupt or of another
//! format, reporting every file it skipped.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rkyv::api::high::HighValidator;
use rkyv::bytecheck::CheckBytes;
use rkyv::{Archive, Portable, rancor};

use crate::atomic::atomic_write;
use crate::error::{Error, Result, io_error};
use crate::frozen::Frozen;

/// First bytes of every snapshot file.
pub const MAGIC: [u8; 8] = *b"VTRNSNAP";
/// Version of the header layout and of the archived types; bump on any change.
pub const FORMAT_VERSION: u32 = 1;
/// Size of the header; the payload starts here (a multiple of 16, as rkyv needs).
pub const HEADER_LEN: usize = 64;

/// What a snapshot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// An account's catalogue.
    Catalogue = 1,
    /// An account's tracking state (visitors, sessions, orders, model counters).
    State = 2,
}

/// The header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the payload is.
    pub kind: u32,
    /// Increases with every snapshot of the same prefix.
    pub sequence: u64,
    /// Payload bytes.
    pub payload_len: u64,
    /// CRC32C of the payload.
    pub payload_crc: u32,
    /// Position in the log of changes (delta journal, later the WAL) that the payload
    /// includes: every record before it is reflected, none at or after it.
    pub position: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&self.kind.to_le_bytes());
        out[16..24].copy_from_slice(&self.sequence.to_le_bytes());
        out[24..32].copy_from_slice(&self.payload_len.to_le_bytes());
        out[32..36].copy_from_slice(&self.payload_crc.to_le_bytes());
        out[40..48].copy_from_slice(&self.position.to_le_bytes());
        let header_crc = crc32c::crc32c(&out[0..36]) ^ crc32c::crc32c(&out[40..48]);
        out[36..40].copy_from_slice(&header_crc.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Header, HeaderError> {
        let field = |range: std::ops::Range<usize>| bytes.get(range).ok_or(HeaderError::Short);
        let u32_at = |at: usize| -> std::result::Result<u32, HeaderError> {
            let b: [u8; 4] = field(at..at + 4)?
                .try_into()
                .map_err(|_| HeaderError::Short)?;
            Ok(u32::from_le_bytes(b))
        };
        let u64_at = |at: usize| -> std::result::Result<u64, HeaderError> {
            let b = field(at..at + 8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Ok(u64::from_le_bytes(a))
        };
        if field(0..8)? != MAGIC {
            return Err(HeaderError::Magic);
        }
        let stored_crc = u32_at(36)?;
        if crc32c::crc32c(field(0..36)?) ^ crc32c::crc32c(field(40..48)?) != stored_crc {
            return Err(HeaderError::Checksum);
        }
        let version = u32_at(8)?;
        if version != FORMAT_VERSION {
            return Err(HeaderError::Version(version));
        }
        Ok(Header {
            kind: u32_at(12)?,
            sequence: u64_at(16)?,
            payload_len: u64_at(24)?,
            payload_crc: u32_at(32)?,
            position: u64_at(40)?,
        })
    }
}

/// Why a snapshot's header does not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Fewer bytes than a header.
    #[error("file shorter than the header")]
    Short,
    /// Not the snapshot magic.
    #[error("not a snapshot (bad magic)")]
    Magic,
    /// The header's own checksum does not match.
    #[error("header checksum mismatch")]
    Checksum,
    /// Another format version (the one found).
    #[error("format version {0}, this build reads {FORMAT_VERSION}")]
    Version(u32),
}

/// The file name of a snapshot.
pub fn file_name(prefix: &str, sequence: u64) -> String {
    format!("{prefix}-{sequence:020}.snap")
}

/// Writes a snapshot atomically (temp file, fsync, rename, directory fsync).
pub fn write(
    dir: &Path,
    prefix: &str,
    kind: Kind,
    sequence: u64,
    position: u64,
    payload: &[u8],
) -> Result<PathBuf> {
    let header = Header {
        kind: kind as u32,
        sequence,
        position,
        payload_len: payload.len() as u64,
        payload_crc: crc32c::crc32c(payload),
    };
    let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
    bytes.extend_from_slice(&header.encode());
    bytes.extend_from_slice(payload);
    let name = file_name(prefix, sequence);
    atomic_write(dir, &name, &bytes)?;
    Ok(dir.join(name))
}

/// Snapshots of `prefix` in `dir`, newest (highest sequence) first.
pub fn list(dir: &Path, prefix: &str) -> Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(io_error("reading directory", dir)(e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(sequence) = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|rest| rest.strip_suffix(".snap"))
            .and_then(|digits| digits.parse::<u64>().ok())
        else {
            continue;
        };
        found.push((sequence, entry.path()));
    }
    found.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    Ok(found)
}

/// Reads only the header of a snapshot file.
pub fn read_header(path: &Path) -> Result<Header> {
    use std::io::Read;
    let mut bytes = [0u8; HEADER_LEN];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(io_error("reading the header of", path))?;
    Header::decode(&bytes).map_err(|reason| Error::Corrupt {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    })
}

/// Opens one snapshot: maps it, checks header, length and checksum, validates the archive.
pub fn open<T>(path: &Path, kind: Kind) -> Result<(Frozen<T>, Header)>
where
    T: Archive,
    T::Archived: Portable + for<'a> CheckBytes<HighValidator<'a, rancor::Error>>,
{
    let corrupt = |reason: String| Error::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let file = File::open(path).map_err(io_error("opening", path))?;
    // SAFETY: the map is read-only and snapshot files are never modified in place: they
    // are written whole under a temporary name and renamed, and only deleted once no
    // longer the newest. A file truncated by another process could still fault on access;
    // the data directory is locked against other Vitrine processes.
    let map = unsafe { Mmap::map(&file) }.map_err(io_error("mapping", path))?;
    let header = check(&map, path, kind)?;
    let range = HEADER_LEN..map.len();
    let frozen =
        Frozen::from_mmap(map, range).map_err(|e| corrupt(format!("archive invalid: {e}")))?;
    Ok((frozen, header))
}

/// Reads one snapshot whole: checks header, length and checksum, and returns the
/// payload (for payloads that are not one archive, such as a sequence of frames).
pub fn read_checked(path: &Path, kind: Kind) -> Result<(Vec<u8>, Header)> {
    let mut bytes = std::fs::read(path).map_err(io_error("reading", path))?;
    let header = check(&bytes, path, kind)?;
    Ok((bytes.split_off(HEADER_LEN), header))
}

/// Checks the bytes of a whole snapshot (header, kind, length, payload checksum) as
/// read from a file; for inspection and fuzzing.
pub fn check_bytes(bytes: &[u8], kind: Kind) -> Result<Header> {
    check(bytes, Path::new("<bytes>"), kind)
}

/// Checks a whole snapshot file's header, kind, length and payload checksum.
fn check(bytes: &[u8], path: &Path, kind: Kind) -> Result<Header> {
    let corrupt = |reason: String| Error::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let header = Header::decode(bytes).map_err(|e| corrupt(e.to_string()))?;
    if header.kind != kind as u32 {
        return Err(corrupt(format!(
            "holds kind {}, expected {}",
            header.kind, kind as u32
        )));
    }
    let end = HEADER_LEN as u64 + header.payload_len;
    if end != bytes.len() as u64 {
        return Err(corrupt(format!(
            "is {} bytes, the header says {end}",
            bytes.len()
        )));
    }
    let payload = bytes.get(HEADER_LEN..).unwrap_or_default();
    if crc32c::crc32c(payload) != header.payload_crc {
        return Err(corrupt("payload checksum mismatch".to_owned()));
    }
    Ok(header)
}

/// The log position the oldest kept snapshot of `prefix` covers (log records before it
/// are in every kept snapshot of that kind).
pub fn oldest_position(dir: &Path, prefix: &str) -> Result<Option<u64>> {
    match list(dir, prefix)?.last() {
        Some((_, oldest)) => Ok(Some(read_header(oldest)?.position)),
        None => Ok(None),
    }
}

/// What [`open_newest`] found.
#[derive(Debug)]
pub struct Opened<T: Archive> {
    /// The newest valid snapshot, if any.
    pub snapshot: Option<(Frozen<T>, Header, PathBuf)>,
    /// Newer files that were skipped, with the reason.
    pub skipped: Vec<Error>,
}

/// Renames a snapshot that failed its checks to `<name>.corrupt`, out of [`list`]'s
/// sight: it no longer counts as a kept snapshot (pruning would otherwise keep it in
/// place of a good one, and the log would be cut behind it), and stays for diagnosis.
pub fn set_aside(path: &Path) -> Result<PathBuf> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".corrupt");
    let aside = path.with_file_name(name);
    std::fs::rename(path, &aside).map_err(io_error("setting aside", path))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_error("syncing directory", dir))?;
    }
    Ok(aside)
}

/// Opens the newest valid snapshot of `prefix`, skipping (and reporting) broken ones,
/// which are set aside ([`set_aside`]).
pub fn open_newest<T>(dir: &Path, prefix: &str, kind: Kind) -> Result<Opened<T>>
where
    T: Archive,
    T::Archived: Portable + for<'a> CheckBytes<HighValidator<'a, rancor::Error>>,
{
    let mut skipped = Vec::new();
    for (_, path) in list(dir, prefix)? {
        match open::<T>(&path, kind) {
            Ok((frozen, header)) => {
                return Ok(Opened {
                    snapshot: Some((frozen, header, path)),
                    skipped,
                });
            }
            Err(error) => {
                set_aside(&path)?;
                skipped.push(error);
            }
        }
    }
    Ok(Opened {
        snapshot: None,
        skipped,
    })
}

/// Deletes snapshots of `prefix` older than the newest `keep`.
pub fn prune(dir: &Path, prefix: &str, keep: usize) -> Result<usize> {
    let mut removed = 0;
    for (_, path) in list(dir, prefix)?.into_iter().skip(keep) {
        std::fs::remove_file(&path).map_err(io_error("removing", &path))?;
        removed += 1;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, PartialEq)]
    struct Sample {
        name: String,
        values: Vec<u32>,
    }

    fn sample(n: u32) -> Vec<u8> {
        let value = Sample {
            name: format!("sample {n}"),
            values: (0..1000).map(|i| i * n).collect(),
        };
        Frozen::from_value(&value).unwrap().bytes().to_vec()
    }

    #[test]
    fn writes_and_opens_the_newest() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "cat", Kind::Catalogue, 1, 0, &sample(1)).unwrap();
        write(tmp.path(), "cat", Kind::Catalogue, 2, 7, &sample(2)).unwrap();
        let opened = open_newest::<Sample>(tmp.path(), "cat", Kind::Catalogue).unwrap();
        let (frozen, header, _) = opened.snapshot.unwrap();
        assert!(opened.skipped.is_empty());
        assert_eq!(header.sequence, 2);
        assert_eq!(header.position, 7);
        assert!(frozen.is_mapped());
        assert_eq!(frozen.get().name, "sample 2");
        assert_eq!(frozen.get().values[3].to_native(), 6);
    }

    #[test]
    fn corrupt_truncated_and_foreign_files_fall_back_to_an_older_one() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "cat", Kind::Catalogue, 1, 0, &sample(1)).unwrap();
        let flipped = write(tmp.path(), "cat", Kind::Catalogue, 2, 7, &sample(2)).unwrap();
        let mut bytes = std::fs::read(&flipped).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&flipped, &bytes).unwrap();
        let truncated = write(tmp.path(), "cat", Kind::Catalogue, 3, 0, &sample(3)).unwrap();
        let bytes = std::fs::read(&truncated).unwrap();
        std::fs::write(&truncated, &bytes[..bytes.len() - 10]).unwrap();
        std::fs::write(tmp.path().join(file_name("cat", 4)), b"garbage!".repeat(20)).unwrap();
        std::fs::write(tmp.path().join(file_name("cat", 5)), b"").unwrap();

        let opened = open_newest::<Sample>(tmp.path(), "cat", Kind::Catalogue).unwrap();
        let (frozen, header, _) = opened.snapshot.unwrap();
        assert_eq!(header.sequence, 1);
        assert_eq!(frozen.get().name, "sample 1");
        let reasons: Vec<String> = opened.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(reasons.len(), 4, "{reasons:#?}");
        assert!(
            reasons[0].contains("shorter than the header"),
            "{}",
            reasons[0]
        );
        assert!(reasons[1].contains("bad magic"), "{}", reasons[1]);
        assert!(
            reasons[2].contains("bytes, the header says"),
            "{}",
            reasons[2]
        );
        assert!(
            reasons[3].contains("payload checksum mismatch"),
            "{}",
            reasons[3]
        );
        // The broken files are set aside: they no longer count as kept snapshots, so
        // pruning keeps the good one and a cut of the log never goes behind it.
        let kept: Vec<u64> = list(tmp.path(), "cat")
            .unwrap()
            .iter()
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(kept, [1]);
        assert!(
            flipped
                .with_file_name(format!("{}.corrupt", file_name("cat", 2)))
                .exists()
        );
        write(tmp.path(), "cat", Kind::Catalogue, 6, 9, &sample(6)).unwrap();
        assert_eq!(prune(tmp.path(), "cat", 2).unwrap(), 0);
        assert_eq!(oldest_position(tmp.path(), "cat").unwrap(), Some(0));
    }

    #[test]
    fn a_valid_checksum_over_an_invalid_archive_is_still_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(tmp.path(), "cat", Kind::Catalogue, 1, 0, &[0xAB; 64]).unwrap();
        let error = open::<Sample>(&path, Kind::Catalogue)
            .unwrap_err()
            .to_string();
        assert!(error.contains("archive invalid"), "{error}");
    }

    #[test]
    fn prune_keeps_the_newest() {
        let tmp = tempfile::tempdir().unwrap();
        for n in 1..=4 {
            write(tmp.path(), "cat", Kind::Catalogue, n, 0, &sample(n as u32)).unwrap();
        }
        assert_eq!(prune(tmp.path(), "cat", 2).unwrap(), 2);
        let left: Vec<u64> = list(tmp.path(), "cat")
            .unwrap()
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        assert_eq!(left, [4, 3]);
    }
}
