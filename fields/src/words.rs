//! Searches of bytes eight at a time (a word's bytes tested at once, with no SIMD):
//! where a JSON string's plain text ends ([`first_escaped`]), and the first byte outside
//! a range ([`first_outside`]), which tells printable ASCII from anything else and lets
//! a check decode only what is not ([`any_char_outside`]).

/// Eight copies of the byte 1.
const ONES: u64 = 0x0101_0101_0101_0101;
/// Each byte's high bit.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The place of the first byte in `bytes` that a JSON string cannot hold as it is: a
/// `"`, a `\\` or a control byte (below 0x20). Where a body's string ends, and whether a
/// text must be escaped to be written as one. A word has a byte below `n` when
/// `(x - n·ONES) & !x & HIGHS` is not 0, and a byte equal to `c` when `x ^ c·ONES` has
/// one below 1; the lowest byte flagged is always one of the three, so its place is
/// exact.
pub fn first_escaped(bytes: &[u8]) -> Option<usize> {
    let zero_byte = |word: u64| word.wrapping_sub(ONES) & !word;
    first_flagged(
        bytes,
        |word| {
            zero_byte(word ^ (ONES * u64::from(b'"')))
                | zero_byte(word ^ (ONES * u64::from(b'\\')))
                | (word.wrapping_sub(ONES * 0x20) & !word)
        },
        special,
    )
}

/// Whether a byte ends a string's plain text: a quote, a backslash or a control byte.
fn special(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// The place of the first byte of `bytes` outside `low..=high` (`low` at least 1,
/// `high` below 0x80), or `None` when every byte is inside. A word has a byte below
/// `low` when `(x - low·ONES) & !x & HIGHS` is not 0, and a byte above `high` when
/// `((x + (0x7f - high)·ONES) | x) & HIGHS` is not 0; the lowest byte either flags is
/// always outside, so its place is exact.
pub fn first_outside(bytes: &[u8], low: u8, high: u8) -> Option<usize> {
    debug_assert!(low >= 1 && high < 0x80 && low <= high);
    let below = ONES * u64::from(low);
    let above = ONES * u64::from(0x7f - high);
    first_flagged(
        bytes,
        |word| (word.wrapping_sub(below) & !word) | word.wrapping_add(above) | word,
        |b| !(low..=high).contains(&b),
    )
}

/// Whether a character of `text` is `found`, where none inside `low..=high` is (see
/// [`first_outside`]): those are passed eight bytes at a time, and the text is decoded
/// from its first other byte on. What the checks of ids and URLs read text with, since
/// most is printable ASCII.
pub fn any_char_outside(text: &str, low: u8, high: u8, found: impl Fn(char) -> bool) -> bool {
    first_outside(text.as_bytes(), low, high)
        .and_then(|at| text.get(at..))
        .is_some_and(|rest| rest.chars().any(found))
}

/// The place of the first byte of `bytes` that `flags` marks in its word (the high bit
/// of the byte set in what it returns, the lowest such byte being one that `byte`
/// marks), read eight bytes at a time; the bytes past the last whole word by `byte`.
#[inline(always)]
fn first_flagged(
    bytes: &[u8],
    flags: impl Fn(u64) -> u64,
    byte: impl Fn(u8) -> bool,
) -> Option<usize> {
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let found = flags(u64::from_le_bytes(word)) & HIGHS;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?.iter().position(|&b| byte(b))?;
    Some(at + rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// A string's end is found where a byte-by-byte search finds it, wherever it is in
    /// its word and whatever bytes stand around it.
    #[test]
    fn a_strings_end_is_found_word_by_word_as_byte_by_byte() {
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
            let len = next(40);
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
        }
    }

    /// The first byte outside a range is found where a byte-by-byte search finds it,
    /// for the ranges the checks use and the edges around them.
    #[test]
    fn the_first_byte_outside_a_range_is_found_word_by_word_as_byte_by_byte() {
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
            let len = next(40);
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
        }
    }
}
