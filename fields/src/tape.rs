//! The fast way into a [`Json`]: simd-json's tape of a body, turned into the arena's
//! document in one pass. Only for bodies on which simd-json and `serde_json` are known
//! to agree; anything else (a syntax error, a control byte, a deep document, a number
//! `serde_json` reads otherwise) is left to `serde_json` ([`Json::parse`]), whose
//! reading and errors stay the reference.
//!
//! Where the two parsers differ, and how each difference is kept out:
//! - `serde_json` refuses a raw control character in a string, simd-json does not: a
//!   body with any byte below 0x20 goes to `serde_json` (compact bodies, as plugins send
//!   them, have none);
//! - `serde_json` stops at 128 levels of nesting, simd-json at its own bound: a document
//!   deeper than [`MAX_DEPTH`] goes to `serde_json`;
//! - `-0` is a float for `serde_json` (`-0.0`) and the integer 0 for simd-json: the
//!   integer 0 read as signed is turned back into `-0.0`;
//! - a float that overflows is an error for `serde_json`: a non-finite one goes to
//!   `serde_json`. Finite floats are read correctly rounded by both (simd-json's
//!   default, `serde_json`'s `float_roundtrip`).

use std::cell::RefCell;

use bumpalo::Bump;
use simd_json::{Buffers, INPUT_PADDING, Node, StaticNode, Tape, fill_tape_padded};

use crate::Json;

/// The deepest nesting read through the tape; deeper documents are `serde_json`'s to
/// read or refuse (it stops at 128).
pub(crate) const MAX_DEPTH: usize = 64;

thread_local! {
    /// simd-json's buffers and tape, kept between bodies.
    static SCRATCH: RefCell<(Buffers, Tape<'static>)> =
        RefCell::new((Buffers::with_max_depth(4096, MAX_DEPTH + 1), Tape::null()));
}

/// `bytes` read through simd-json's tape into `arena` (strings borrowed from the
/// arena's copy of the body), or `None` when it is not certain to read as `serde_json`
/// reads it.
pub(crate) fn read<'a>(bytes: &[u8], arena: &'a Bump) -> Option<Json<'a>> {
    if bytes.iter().fold(false, |control, b| control | (*b < 0x20)) {
        return None;
    }
    let len = bytes.len();
    let input = arena.alloc_slice_fill_copy(len + INPUT_PADDING, b' ');
    input.get_mut(..len)?.copy_from_slice(bytes);
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.try_borrow_mut().ok()?;
        let (buffers, kept) = &mut *scratch;
        let mut tape: Tape<'a> = std::mem::replace(kept, Tape::null()).reset();
        let read = match fill_tape_padded(input, len, buffers, &mut tape) {
            Ok(()) => Reader {
                nodes: &tape.0,
                at: 0,
                arena,
            }
            .value(0),
            Err(_) => None,
        };
        *kept = tape.reset();
        read
    })
}

/// A walk over a tape's nodes, in order.
struct Reader<'t, 'a> {
    nodes: &'t [Node<'a>],
    at: usize,
    arena: &'a Bump,
}

impl<'a> Reader<'_, 'a> {
    fn next(&mut self) -> Option<Node<'a>> {
        let node = *self.nodes.get(self.at)?;
        self.at += 1;
        Some(node)
    }

    /// The value starting at the next node, `depth` levels in.
    fn value(&mut self, depth: usize) -> Option<Json<'a>> {
        let mut json = Json::Null;
        self.fill(&mut json, depth)?;
        Some(json)
    }

    /// Writes the value starting at the next node, `depth` levels in, into `slot`: a
    /// container's items straight into their places in the arena, sized from the tape.
    fn fill(&mut self, slot: &mut Json<'a>, depth: usize) -> Option<()> {
        *slot = match self.next()? {
            Node::String(text) => Json::String(text),
            Node::Static(node) => scalar(node)?,
            Node::Array { len, .. } => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let items = self.arena.alloc_slice_fill_copy(len, Json::Null);
                for item in items.iter_mut() {
                    self.fill(item, depth + 1)?;
                }
                Json::Array(items)
            }
            Node::Object { len, .. } => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let members = self.arena.alloc_slice_fill_copy(len, ("", Json::Null));
                for (key, value) in members.iter_mut() {
                    let Node::String(name) = self.next()? else {
                        return None;
                    };
                    *key = name;
                    self.fill(value, depth + 1)?;
                }
                Json::Object(members)
            }
        };
        Some(())
    }
}

/// A scalar as `serde_json` reads it (`None`: one it would refuse or read otherwise).
fn scalar(node: StaticNode) -> Option<Json<'static>> {
    Some(match node {
        StaticNode::Null => Json::Null,
        StaticNode::Bool(b) => Json::Bool(b),
        StaticNode::U64(n) => Json::Integer(i128::from(n)),
        // `-0` is read by simd-json as a signed 0, by `serde_json` as `-0.0`.
        StaticNode::I64(0) => Json::Number(-0.0),
        StaticNode::I64(n) => Json::Integer(i128::from(n)),
        StaticNode::F64(f) if f.is_finite() => Json::Number(f),
        StaticNode::F64(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document as `serde_json` alone reads it, or its error, as text (`-0.0` and
    /// `0.0` told apart).
    fn by_serde(text: &[u8]) -> String {
        let arena = Bump::new();
        match Json::parse_with_serde(text, &arena) {
            Ok(json) => format!("{json:?}"),
            Err(error) => format!("error: {error}"),
        }
    }

    fn by_parse(text: &[u8]) -> String {
        let arena = Bump::new();
        match Json::parse(text, &arena) {
            Ok(json) => format!("{json:?}"),
            Err(error) => format!("error: {error}"),
        }
    }

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// Every text where the two parsers could part reads as `serde_json` reads it.
    #[test]
    fn the_tape_reads_every_text_as_serde_json_does() {
        let mut texts: Vec<String> = [
            "-0",
            "0",
            "-1",
            "[-0, 0, -0.0, 0.0, -0e1]",
            "1E2",
            "1e-2",
            "0.1",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "123456789012345678901234567890",
            "2.2250738585072011e-308",
            "1.7976931348623157e308",
            "1e309",
            "-1e400",
            "4.9e-324",
            "1e-400",
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud83d\ude00""#,
            r#""\u00e9 \n \" \\ \/""#,
            "\"a\u{1}b\"",
            "\"tab\there\"",
            "\"é ü 😀\"",
            r#"{"a":1,"a":2}"#,
            "{\n  \"a\": [1, 2]\n}",
            " {} ",
            "\u{feff}{}",
            r#"{"a":[1,2,{"b":null}]}"#,
            "[1,]",
            "{,}",
            "",
            "   ",
            "tru",
            "nulll",
            r#""\x""#,
            "[1 2]",
            r#"{"a" 1}"#,
            "{} x",
            "\"unterminated",
            "[\"\u{7f}\"]",
            "true",
            "false",
            "null",
        ]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
        for depth in [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 127, 128, 129, 300] {
            texts.push(nested(depth));
        }
        // Numbers of every shape: long significands, large and small exponents.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5_000 {
            let digits = next() % 10u64.pow(1 + (next() % 19) as u32);
            let fraction = next() % 1_000_000_000;
            let exponent = (next() % 700) as i64 - 350;
            texts.push(format!(
                "[{digits}.{fraction}e{exponent}, -{digits}, {digits}.5]"
            ));
        }
        for text in &texts {
            assert_eq!(
                by_parse(text.as_bytes()),
                by_serde(text.as_bytes()),
                "{text:?}"
            );
        }
    }

    /// A compact body, as plugins send it, is read through the tape, not `serde_json`.
    #[test]
    fn a_compact_body_is_read_through_the_tape() {
        let body = br#"{"appId":"k","events":[{"name":"product_view","data":{"id":"P1"}}],"zones":["Z"],"total":12.5}"#;
        let arena = Bump::new();
        assert!(read(body, &arena).is_some());
        assert!(
            read(b"{\n}", &arena).is_none(),
            "a control byte goes to serde_json"
        );
        assert!(read(nested(MAX_DEPTH + 1).as_bytes(), &arena).is_none());
    }
}
