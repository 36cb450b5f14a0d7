//! The fast way into a [`Json`]: one pass over a body's bytes, straight into the arena's
//! document, its strings borrowed from the body. Only for bodies it is certain to read
//! as `serde_json` reads them; anything else (a syntax error, a deep document, a number
//! `serde_json` reads otherwise, a lone surrogate) is left to `serde_json`
//! ([`Json::parse`]), whose reading and errors stay the reference.
//!
//! What is read here, and how it matches `serde_json`:
//! - the body must be UTF-8 (checked once, for all of it): `serde_json` refuses a
//!   string that is not, and anything outside strings that is not ASCII is a syntax
//!   error;
//! - whitespace is `serde_json`'s four bytes; a string with a raw control byte is left
//!   to `serde_json`, which refuses it;
//! - escapes are JSON's: `\uXXXX` outside the surrogates, and a surrogate pair; a lone
//!   surrogate is left to `serde_json`;
//! - an integer within 64 bits is [`Json::Integer`] (`-0` is `-0.0`, as `serde_json`
//!   reads it); one beyond is left to `serde_json`, which reads it as a float;
//! - a number with a fraction or an exponent is read correctly rounded
//!   (`str::parse::<f64>`, as `serde_json`'s `float_roundtrip`); one that overflows is
//!   left to `serde_json`, which refuses it;
//! - a document deeper than [`MAX_DEPTH`] is left to `serde_json` (which stops at 128).

use bumpalo::Bump;

use crate::Json;
use crate::words::first_escaped_from;

/// The deepest nesting read here; deeper documents are `serde_json`'s to read or refuse.
pub(crate) const MAX_DEPTH: usize = 64;

/// `bytes` read into `arena` (strings borrowed from `bytes` where they hold no escape),
/// or `None` when it is not certain to read as `serde_json` reads it.
pub(crate) fn read<'a>(bytes: &'a [u8], arena: &'a Bump) -> Option<Json<'a>> {
    let mut scan = Reader::new(bytes, arena)?;
    scan.items.reserve(16);
    scan.members.reserve(16);
    let json = scan.value_at(0)?;
    scan.end().then_some(json)
}

/// One pass over a body, read value by value: the document reader above, and a
/// request's own reader, which takes the members it knows as they come (their strings
/// borrowed from the body) and builds no document.
///
/// Every method answers `None` where the body is not certain to read as `serde_json`
/// reads it (the same cases as the document's); the caller then leaves the body to
/// [`crate::Json::parse`].
///
/// The methods a request's reader calls for each token are always inlined: in its loop
/// the position then stays in a register, and their answers do not go through memory
/// (benches/README.md, "Reading a page's body under 6 k").
#[derive(Debug)]
pub struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    arena: &'a Bump,
    /// The items of the arrays still open, innermost last.
    items: Vec<Json<'a>>,
    /// The members of the objects still open, innermost last.
    members: Vec<(&'a str, Json<'a>)>,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`, which must be UTF-8; strings with escapes are
    /// written into `arena`.
    pub fn new(bytes: &'a [u8], arena: &'a Bump) -> Option<Reader<'a>> {
        Some(Reader {
            text: simdutf8::basic::from_utf8(bytes).ok()?,
            bytes,
            at: 0,
            arena,
            items: Vec::new(),
            members: Vec::new(),
        })
    }

    /// The next value's first byte, not consumed.
    #[inline(always)]
    pub fn peek_token(&mut self) -> Option<u8> {
        self.skip_space();
        self.peek()
    }

    /// The start of an object (`{`), consumed.
    #[inline(always)]
    pub fn open_object(&mut self) -> Option<()> {
        (self.next_token()? == b'{').then_some(())
    }

    /// The key of the next member of an object of which `read` members were read (the
    /// separators and the `:` consumed), or `Some(None)` at its end (`}` consumed).
    pub fn next_key(&mut self, read: usize) -> Option<Option<&'a str>> {
        self.next_key_as(read, Self::string)
    }

    /// [`Reader::next_key`]'s key as bytes (unescaped), for a reader that compares keys
    /// with its own: no check that the key's ends fall between characters, which only
    /// a `str` needs (the body is UTF-8, and a key that equals a text is one).
    #[inline(always)]
    pub fn next_name(&mut self, read: usize) -> Option<Option<&'a [u8]>> {
        self.next_key_as(read, Self::string_bytes)
    }

    #[inline(always)]
    fn next_key_as<T>(
        &mut self,
        read: usize,
        key: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Option<T>> {
        match (self.next_token()?, read) {
            (b'}', _) => return Some(None),
            (b'"', 0) => {}
            (b',', 1..) if self.next_token()? == b'"' => {}
            _ => return None,
        }
        let key = key(self)?;
        (self.next_token()? == b':').then_some(Some(key))
    }

    /// The start of an array (`[`), consumed.
    #[inline(always)]
    pub fn open_array(&mut self) -> Option<()> {
        (self.next_token()? == b'[').then_some(())
    }

    /// Whether another item follows in an array of which `read` items were read (its
    /// separator consumed); `Some(false)` at its end (`]` consumed).
    #[inline(always)]
    pub fn next_item(&mut self, read: usize) -> Option<bool> {
        self.skip_space();
        match (self.peek()?, read) {
            (b']', _) => {
                self.at += 1;
                Some(false)
            }
            (_, 0) => Some(true),
            (b',', 1..) => {
                self.at += 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// The next value when it is a string (borrowed), or `Some(None)` when it is
    /// `null`; `None` for any other.
    #[inline(always)]
    pub fn text_or_null(&mut self) -> Option<Option<&'a str>> {
        match self.next_token()? {
            b'"' => self.string().map(Some),
            b'n' => self.literal("ull", None),
            _ => None,
        }
    }

    /// [`Reader::text_or_null`]'s string as bytes (unescaped), for a reader that
    /// compares it with its own texts (see [`Reader::next_name`]).
    #[inline(always)]
    pub fn bytes_or_null(&mut self) -> Option<Option<&'a [u8]>> {
        match self.next_token()? {
            b'"' => self.string_bytes().map(Some),
            b'n' => self.literal("ull", None),
            _ => None,
        }
    }

    /// Whether the body ends here (whitespace aside).
    pub fn end(&mut self) -> bool {
        self.skip_space();
        self.at == self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.at += 1;
        }
    }

    /// The next byte after any whitespace, consumed.
    fn next_token(&mut self) -> Option<u8> {
        let mut b = self.peek()?;
        // Whitespace is below `!`: a compact body's next byte is taken at once.
        if b <= b' ' {
            self.skip_space();
            b = self.peek()?;
        }
        self.at += 1;
        Some(b)
    }

    /// The next value, whole (strings borrowed, containers in the arena), `depth`
    /// levels in.
    pub fn value_at(&mut self, depth: usize) -> Option<Json<'a>> {
        Some(match self.next_token()? {
            b'"' => Json::String(self.string()?),
            b'{' if depth < MAX_DEPTH => self.object(depth + 1)?,
            b'[' if depth < MAX_DEPTH => self.array(depth + 1)?,
            b't' => self.literal("rue", Json::Bool(true))?,
            b'f' => self.literal("alse", Json::Bool(false))?,
            b'n' => self.literal("ull", Json::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        })
    }

    fn literal<T>(&mut self, rest: &str, json: T) -> Option<T> {
        let end = self.at + rest.len();
        (self.bytes.get(self.at..end)? == rest.as_bytes()).then(|| {
            self.at = end;
            json
        })
    }

    /// An object's members, after its `{`.
    fn object(&mut self, depth: usize) -> Option<Json<'a>> {
        let open = self.members.len();
        while let Some(key) = self.next_key(self.members.len() - open)? {
            let value = self.value_at(depth)?;
            self.members.push((key, value));
        }
        let members = self.arena.alloc_slice_copy(self.members.get(open..)?);
        self.members.truncate(open);
        Some(Json::Object(members))
    }

    /// An array's items, after its `[`.
    fn array(&mut self, depth: usize) -> Option<Json<'a>> {
        let open = self.items.len();
        while self.next_item(self.items.len() - open)? {
            let item = self.value_at(depth)?;
            self.items.push(item);
        }
        let items = self.arena.alloc_slice_copy(self.items.get(open..)?);
        self.items.truncate(open);
        Some(Json::Array(items))
    }

    /// A string's text, after its opening quote: borrowed from the body when it holds
    /// no escape, else unescaped into the arena.
    #[inline(always)]
    fn string(&mut self) -> Option<&'a str> {
        let (start, end) = self.string_end()?;
        match self.bytes.get(end)? {
            b'"' => self.text.get(start..end),
            b'\\' => self.escaped(start, end),
            _ => None,
        }
    }

    /// [`Reader::string`] as bytes.
    #[inline(always)]
    fn string_bytes(&mut self) -> Option<&'a [u8]> {
        let (start, end) = self.string_end()?;
        match self.bytes.get(end)? {
            b'"' => self.bytes.get(start..end),
            b'\\' => self.escaped(start, end).map(str::as_bytes),
            _ => None,
        }
    }

    /// A string's start (here, after its opening quote) and the end of its plain text
    /// (its closing quote, or its first escape), the reader moved past that end.
    #[inline(always)]
    fn string_end(&mut self) -> Option<(usize, usize)> {
        let start = self.at;
        let end = first_escaped_from(self.bytes, start)?;
        self.at = end + 1;
        Some((start, end))
    }

    /// The rest of a string with escapes, from `start`; its first escape at `at`.
    fn escaped(&mut self, start: usize, mut at: usize) -> Option<&'a str> {
        let mut out = bumpalo::collections::String::new_in(self.arena);
        out.push_str(self.text.get(start..at)?);
        loop {
            // `at` is on a backslash.
            let escape = *self.bytes.get(at + 1)?;
            at += 2;
            match escape {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let unit = self.hex4(at)?;
                    at += 4;
                    let code = match unit {
                        0xD800..=0xDBFF => {
                            if self.bytes.get(at..at + 2)? != b"\\u" {
                                return None;
                            }
                            let low = self.hex4(at + 2)?;
                            if !(0xDC00..=0xDFFF).contains(&low) {
                                return None;
                            }
                            at += 6;
                            0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        }
                        0xDC00..=0xDFFF => return None,
                        unit => unit,
                    };
                    out.push(char::from_u32(code)?);
                }
                _ => return None,
            }
            let run = first_escaped_from(self.bytes, at)?;
            out.push_str(self.text.get(at..run)?);
            at = run;
            match self.bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some(out.into_bump_str());
                }
                b'\\' => {}
                _ => return None,
            }
        }
    }

    /// The four hex digits at `at`, as a number.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.text.get(at..at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(digits, 16).ok()
    }

    /// A number, after its first byte (a digit or `-`).
    fn number(&mut self) -> Option<Json<'a>> {
        let start = self.at - 1;
        let negative = self.bytes.get(start) == Some(&b'-');
        let digits = if negative { self.at } else { start };
        let mut end = digits;
        let mut magnitude: u64 = 0;
        while let Some(&b) = self.bytes.get(end).filter(|b| b.is_ascii_digit()) {
            magnitude = magnitude
                .checked_mul(10)?
                .checked_add(u64::from(b - b'0'))?;
            end += 1;
        }
        // One digit at least, and no leading zero before another digit.
        if end == digits || (self.bytes.get(digits) == Some(&b'0') && end - digits > 1) {
            return None;
        }
        let mut float = false;
        if self.bytes.get(end) == Some(&b'.') {
            end = self.digits(end + 1)?;
            float = true;
        }
        if let Some(b'e' | b'E') = self.bytes.get(end) {
            end += 1;
            if let Some(b'+' | b'-') = self.bytes.get(end) {
                end += 1;
            }
            end = self.digits(end)?;
            float = true;
        }
        self.at = end;
        if float {
            let number: f64 = self.text.get(start..end)?.parse().ok()?;
            return number.is_finite().then_some(Json::Number(number));
        }
        Some(match (negative, magnitude) {
            (false, n) => Json::Integer(i128::from(n)),
            // `serde_json` reads `-0` as a float.
            (true, 0) => Json::Number(-0.0),
            (true, n) if n <= 1 << 63 => Json::Integer(-i128::from(n)),
            // Below `i64::MIN`: a float for `serde_json`.
            (true, _) => return None,
        })
    }

    /// The end of one or more digits from `at`.
    fn digits(&self, at: usize) -> Option<usize> {
        let count = self
            .bytes
            .get(at..)?
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        (count > 0).then_some(at + count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

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

    /// A body of every shape the plugins send, bent at random places: every bent text
    /// reads as `serde_json` reads it, or is left to it.
    #[test]
    fn bent_bodies_read_as_serde_json_reads_them() {
        let seeds: [&[u8]; 3] = [
            br#"{"appId":"k","visitorId":"v1","currentUrl":"https:\/\/shop.example\/p\/1","events":[{"name":"page_view","data":{"page_type":"product_page","product_id":"P1"}},{"name":"order","data":{"orderid":"O-1","items":[{"id":"P1","qty":2,"unitprice":12.5}],"ordertotal":25.00}}],"zones":["PP-01",{"id":"PP-02","data":[]}]}"#,
            b"{\n  \"name\": \"caf\\u00e9 \\ud83d\\ude00\",\n  \"n\": [-0, 1e2, 18446744073709551615, true, false, null]\n}",
            "{\"é\":\"ü 😀\",\"a\":[[[{}]]]}".as_bytes(),
        ];
        let pieces: [&[u8]; 14] = [
            b"\"", b"\\", b"{", b"}", b"[", b"]", b",", b":", b"-", b"0", b"e", b"\\u", b"\n",
            b"\xff",
        ];
        let mut random = xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = |bound: usize| (random() % bound as u64) as usize;
        for _ in 0..20_000 {
            let mut text = seeds[next(seeds.len())].to_vec();
            for _ in 0..1 + next(3) {
                let at = next(text.len() + 1);
                match next(3) {
                    0 => {
                        let piece = pieces[next(pieces.len())];
                        text.splice(at..at, piece.iter().copied());
                    }
                    1 if at < text.len() => {
                        text.remove(at);
                    }
                    _ if at < text.len() => text[at] = next(256) as u8,
                    _ => {}
                }
            }
            assert_eq!(
                by_parse(&text),
                by_serde(&text),
                "{}",
                String::from_utf8_lossy(&text)
            );
        }
    }

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// Every text where the two readings could part reads as `serde_json` reads it.
    #[test]
    fn every_text_reads_as_serde_json_reads_it() {
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
            r#""\u0000 \b\f\r\t""#,
            r#""\"""#,
            r#""\\""#,
            r#""a\""#,
            r#""\u12""#,
            r#""\u12g4""#,
            r#""\uD83D""#,
            r#""\uD83Dx""#,
            r#""\uD83D\u0041""#,
            r#""\uDE00\uD83D""#,
            r#""\uD83D\uDE00\uD83D\uDE00 after""#,
            r#"{"\u0061":1}"#,
            "\"caf\u{e9}\\n\"",
            "{\"a\":1,}",
            "{\"a\":1 \"b\":2}",
            "{\"a\":}",
            "{\"a\"}",
            "{1:2}",
            "[,1]",
            "[1,,2]",
            "[01]",
            "[-]",
            "[-01]",
            "[1.]",
            "[.5]",
            "[1e]",
            "[1e+]",
            "[+1]",
            "[1E+2, 1e-2, 1.5E3, -0.0e0]",
            "[0, 10, 100, -10]",
            "[9223372036854775807, -9223372036854775807, 9223372036854775808]",
            "[1.0000000000000002, 0.30000000000000004, 5e-324, 2.5e-324]",
            "[truE]",
            "[nul]",
            "{\"a\":[{\"b\":[{}]},[]],\"c\":{}}",
            "\t\r\n[ 1 ,\t2 ]\r\n",
            "[1]\u{0}",
            "\u{0}[1]",
            "\"\u{7f}\u{80}\"",
        ]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
        for depth in [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 127, 128, 129, 300] {
            texts.push(nested(depth));
        }
        // Numbers of every shape: long significands, large and small exponents.
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
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

    /// A body as plugins send it, compact or indented, with escapes or without, is read
    /// here, not by `serde_json`; a deep one is left to `serde_json`.
    #[test]
    fn a_plugins_body_is_read_in_one_pass() {
        let arena = Bump::new();
        for body in [
            &br#"{"appId":"k","events":[{"name":"product_view","data":{"id":"P1"}}],"zones":["Z"],"total":12.5}"#[..],
            b"{\n  \"currentUrl\": \"https:\\/\\/shop.example\\/p\",\n  \"zones\": []\n}",
            br#"{"name":"caf\u00e9 \ud83d\ude00"}"#,
        ] {
            assert!(read(body, &arena).is_some(), "{}", String::from_utf8_lossy(body));
        }
        assert!(read(nested(MAX_DEPTH).as_bytes(), &arena).is_some());
        assert!(read(nested(MAX_DEPTH + 1).as_bytes(), &arena).is_none());
        let body = br#"{"k":"no escapes"}"#;
        let Some(Json::Object([(key, Json::String(text))])) = read(body, &arena) else {
            panic!("an object of one string");
        };
        assert!(body.as_ptr_range().contains(&key.as_ptr()));
        assert!(body.as_ptr_range().contains(&text.as_ptr()));
    }
}
