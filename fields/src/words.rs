//! Searches of bytes sixteen at a time, in one SIMD register through `wide` (SSE2 on
//! x86-64, NEON on ARM, plain bytes elsewhere), all safe code: where a JSON string's
//! plain text ends ([`first_escaped`], [`first_escaped_from`]), the first of a byte
//! ([`first_byte`]), and the first byte outside a range ([`first_outside`]), which
//! tells printable ASCII from anything else and lets a check decode only what is not
//! ([`any_char_outside`]).
//!
//! A text of sixteen bytes or more is read in whole registers, its last one ending at
//! its last byte (overlapping the one before); a shorter text is read byte by byte.

use wide::u8x16;

/// The place of the first byte in `bytes` that a JSON string cannot hold as it is: a
/// `"`, a `\\` or a control byte (below 0x20). Whether a text must be escaped to be
/// written as one.
pub fn first_escaped(bytes: &[u8]) -> Option<usize> {
    first_escaped_from(bytes, 0)
}

/// The place in `bytes` of the first byte from `from` on that a JSON string cannot hold
/// as it is (see [`first_escaped`]): where a body's string that starts at `from` ends.
/// The bytes before `from` are not searched, but let the last register of a string near
/// the body's end be read whole.
pub(crate) fn first_escaped_from(bytes: &[u8], from: usize) -> Option<usize> {
    let (quote, backslash, control) = (u8x16::splat(b'"'), u8x16::splat(b'\\'), u8x16::splat(0x1f));
    first_marked(
        bytes,
        from,
        |lanes| {
            (lanes.cmp_eq(quote) | lanes.cmp_eq(backslash) | lanes.max(control).cmp_eq(control))
                .move_mask()
        },
        special,
    )
}

/// Whether a byte ends a string's plain text: a quote, a backslash or a control byte.
fn special(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// The place of the first `byte` in `bytes` (`memchr`, inlined: a short text costs a
/// register or a few bytes, not a call).
pub fn first_byte(bytes: &[u8], byte: u8) -> Option<usize> {
    let wanted = u8x16::splat(byte);
    first_marked(
        bytes,
        0,
        |lanes| lanes.cmp_eq(wanted).move_mask(),
        |b| b == byte,
    )
}

/// The place of the first byte of `bytes` outside `low..=high`, or `None` when every
/// byte is inside.
pub fn first_outside(bytes: &[u8], low: u8, high: u8) -> Option<usize> {
    let (lowest, highest) = (u8x16::splat(low), u8x16::splat(high));
    first_marked(
        bytes,
        0,
        |lanes| {
            let inside = lanes.max(lowest).cmp_eq(lanes) & lanes.min(highest).cmp_eq(lanes);
            !inside.move_mask() & 0xffff
        },
        |b| !(low..=high).contains(&b),
    )
}

/// Whether a character of `text` is `found`, where none inside `low..=high` is (see
/// [`first_outside`]): those are passed sixteen bytes at a time, and the text is
/// decoded from its first other byte on. What the checks of ids and URLs read text
/// with, since most is printable ASCII.
pub fn any_char_outside(text: &str, low: u8, high: u8, found: impl Fn(char) -> bool) -> bool {
    first_outside(text.as_bytes(), low, high)
        .and_then(|at| text.get(at..))
        .is_some_and(|rest| rest.chars().any(found))
}

/// The place of the first byte of `bytes` from `from` on that the search marks: by
/// `lanes` sixteen bytes at a time (a bit for each byte marked, the first byte's the
/// lowest), the last sixteen ending at the last byte; byte by byte through `byte` when
/// `bytes` is shorter than sixteen.
#[inline(always)]
fn first_marked(
    bytes: &[u8],
    from: usize,
    lanes: impl Fn(u8x16) -> i32,
    byte: impl Fn(u8) -> bool,
) -> Option<usize> {
    let register = |at: usize| {
        let mut sixteen = [0; 16];
        sixteen.copy_from_slice(bytes.get(at..at + 16)?);
        Some(lanes(u8x16::new(sixteen)))
    };
    let Some(last) = bytes.len().checked_sub(16) else {
        let rest = bytes.get(from..)?.iter().position(|&b| byte(b))?;
        return Some(from + rest);
    };
    bytes.get(from..)?;
    let mut at = from;
    while at < last {
        let found = register(at)?;
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize);
        }
        at += 16;
    }
    // The last sixteen bytes, less those searched already (or before `from`).
    let found = register(last)? >> at.checked_sub(last)?;
    (found != 0).then(|| at + found.trailing_zeros() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// A string's end is found where a byte-by-byte search finds it, wherever it is in
    /// its register, whatever bytes stand around it, and from wherever the search
    /// starts (past the end: none).
    #[test]
    fn a_strings_end_is_found_as_byte_by_byte() {
        let mut random = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut next = |bound: usize| (random() % bound as u64) as usize;
        let bytes: [u8; 12] = [
            b'"',
            b'\\',
            0,
            0x1f,
            0x20,
            0x21,
            b'a',
            0x7f,
            0x80,
            0xff,
            0x5b,
            0x22 ^ 0x80,
        ];
        for _ in 0..50_000 {
            let len = next(70);
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    if next(4) == 0 {
                        bytes[next(bytes.len())]
                    } else {
                        b'a' + next(26) as u8
                    }
                })
                .collect();
            assert_eq!(
                first_escaped(&text),
                text.iter().position(|&b| special(b)),
                "{text:?}"
            );
            let from = next(len + 2);
            assert_eq!(
                first_escaped_from(&text, from),
                text.get(from..)
                    .and_then(|rest| rest.iter().position(|&b| special(b)))
                    .map(|at| from + at),
                "{text:?} from {from}"
            );
        }
    }

    /// The first byte outside a range, and the first of a byte, are found where a
    /// byte-by-byte search finds them, for the ranges the checks use and the edges
    /// around them.
    #[test]
    fn the_first_byte_outside_a_range_is_found_as_byte_by_byte() {
        let mut random = xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = |bound: usize| (random() % bound as u64) as usize;
        let ranges = [
            (0x21, 0x7e),
            (0x20, 0x7f),
            (1, 0x7f),
            (b'0', b'9'),
            (b'a', b'a'),
        ];
        let edges: [u8; 12] = [
            0, 1, 0x1f, 0x20, 0x21, b'0', b'9', 0x7e, 0x7f, 0x80, 0x81, 0xff,
        ];
        for _ in 0..50_000 {
            let (low, high) = ranges[next(ranges.len())];
            let len = next(70);
            let text: Vec<u8> = (0..len)
                .map(|_| match next(8) {
                    0 => edges[next(edges.len())],
                    1 => next(256) as u8,
                    _ => low + next(usize::from(high - low) + 1) as u8,
                })
                .collect();
            assert_eq!(
                first_outside(&text, low, high),
                text.iter().position(|b| !(low..=high).contains(b)),
                "{text:?} {low}..={high}"
            );
            assert_eq!(
                first_byte(&text, high),
                text.iter().position(|&b| b == high),
                "{text:?} {high}"
            );
        }
    }
}
