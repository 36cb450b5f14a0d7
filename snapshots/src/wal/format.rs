//! The log's bytes: segment file names, the record frame (length, CRC32C, sequence,
//! kind, payload), reading a segment up to its first bad or torn record, and recovery
//! of a log directory (see `FORMAT.md`).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::record::{KIND_GAP, MAX_PAYLOAD, Record, Recovery};
use crate::error::{Result, io_error};

pub(super) fn segment_name(first_sequence: u64) -> String {
    format!("{first_sequence:020}.wal")
}

/// Segment files of `dir` as (first sequence, path), in order.
pub fn segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(io_error("reading directory", dir)(e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(first) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".wal"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        found.push((first, entry.path()));
    }
    found.sort();
    Ok(found)
}

/// Appends one record to `out`: length, CRC32C, then the body (sequence, kind,
/// payload), the checksum taken over the body's parts in turn (no copy of it).
pub(super) fn encode(sequence: u64, kind: u8, payload: &[u8], out: &mut Vec<u8>) {
    let mut head = [0u8; 9];
    let (number, kind_byte) = head.split_at_mut(8);
    number.copy_from_slice(&sequence.to_le_bytes());
    kind_byte.copy_from_slice(&[kind]);
    let body_len = head.len() + payload.len();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&head), payload);
    out.reserve(8 + body_len);
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
}

/// Where a segment ends early and why: (byte offset, reason).
pub type SegmentEnd = (usize, String);

/// Reads the records of a segment's bytes whose first record has sequence `first`;
/// for inspection and fuzzing.
pub fn decode_segment(bytes: &[u8], first: u64) -> (Vec<Record>, Option<SegmentEnd>) {
    read_segment(bytes, first)
}

/// Reads one segment file without changing it (for inspection and tests): its intact
/// records, and where and why it ends early, if it does.
pub fn read_segment_file(path: &Path) -> Result<(Vec<Record>, Option<SegmentEnd>)> {
    let bytes = fs::read(path).map_err(io_error("reading", path))?;
    let first = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1);
    Ok(read_segment(&bytes, first))
}

/// Starts the segment `first` with a [`KIND_GAP`] record saying the log had reached
/// `ended`, fsynced with its directory.
pub(super) fn write_gap(dir: &Path, ended: u64, first: u64) -> Result<()> {
    fs::create_dir_all(dir).map_err(io_error("creating", dir))?;
    let path = dir.join(segment_name(first));
    let mut bytes = Vec::new();
    encode(first, KIND_GAP, &ended.to_le_bytes(), &mut bytes);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .map_err(io_error("creating", &path))?;
    file.write_all(&bytes).map_err(io_error("writing", &path))?;
    file.sync_all().map_err(io_error("syncing", &path))?;
    sync_dir(dir)
}

/// Reads the records of one segment; returns them and, if the segment ends in a bad or
/// torn record, its offset and the reason.
fn read_segment(bytes: &[u8], expected: u64) -> (Vec<Record>, Option<(usize, String)>) {
    let mut records = Vec::new();
    let mut offset = 0;
    let mut sequence = expected;
    while offset < bytes.len() {
        let le_u32 = |at: usize| -> Option<u32> {
            let field: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
            Some(u32::from_le_bytes(field))
        };
        let (Some(len), Some(crc)) = (le_u32(offset), le_u32(offset + 4)) else {
            return (records, Some((offset, "torn record header".to_owned())));
        };
        let len = len as usize;
        if !(9..=MAX_PAYLOAD + 9).contains(&len) {
            return (
                records,
                Some((offset, format!("implausible record length {len}"))),
            );
        }
        let Some(body) = bytes.get(offset + 8..offset + 8 + len) else {
            return (
                records,
                Some((offset, "torn record (file ends inside it)".to_owned())),
            );
        };
        if crc32c::crc32c(body) != crc {
            return (
                records,
                Some((offset, "record checksum mismatch".to_owned())),
            );
        }
        let mut seq_bytes = [0u8; 8];
        seq_bytes.copy_from_slice(body.get(0..8).unwrap_or(&[0; 8]));
        let found = u64::from_le_bytes(seq_bytes);
        if found != sequence {
            return (
                records,
                Some((
                    offset,
                    format!("sequence {found} where {sequence} was expected"),
                )),
            );
        }
        records.push(Record {
            sequence: found,
            kind: body.get(8).copied().unwrap_or_default(),
            payload: body.get(9..).unwrap_or_default().to_vec(),
        });
        sequence += 1;
        offset += 8 + len;
    }
    (records, None)
}

/// Reads every segment of `dir` in order, cuts the log at the first bad or torn record
/// (truncating that segment, removing later ones) and returns what is left.
pub fn recover(dir: &Path) -> Result<Recovery> {
    fs::create_dir_all(dir).map_err(io_error("creating directory", dir))?;
    let mut recovery = Recovery::default();
    let segments = segments(dir)?;
    let mut expected: Option<u64> = None;
    let mut cut = false;
    for (first, path) in segments {
        if cut {
            fs::remove_file(&path).map_err(io_error("removing", &path))?;
            recovery.removed_segments += 1;
            continue;
        }
        let expected_here = expected.unwrap_or(first);
        let mut bytes = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(io_error("reading", &path))?;
        let (records, bad) = read_segment(&bytes, first);
        // A segment may start later than expected only after a gap record that names
        // exactly where the log had ended: a lost segment in between is still a cut.
        let gap = records
            .first()
            .is_some_and(|r| r.kind == KIND_GAP && r.payload == expected_here.to_le_bytes());
        if first != expected_here && !(first > expected_here && gap) {
            recovery.truncated = Some(format!(
                "{} starts at sequence {first}, {expected_here} was expected",
                path.display()
            ));
            fs::remove_file(&path).map_err(io_error("removing", &path))?;
            recovery.removed_segments += 1;
            cut = true;
            continue;
        }
        expected = Some(first + records.len() as u64);
        recovery
            .records
            .extend(records.into_iter().filter(|r| r.kind != KIND_GAP));
        if let Some((offset, reason)) = bad {
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(io_error("opening", &path))?;
            file.set_len(offset as u64)
                .map_err(io_error("truncating", &path))?;
            file.sync_all().map_err(io_error("syncing", &path))?;
            recovery.truncated = Some(format!(
                "{} at byte {offset}: {reason}; cut there",
                path.display()
            ));
            cut = true;
        }
    }
    recovery.next_sequence = expected.unwrap_or(0);
    Ok(recovery)
}

pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error("syncing directory", dir))
}
