//! A hand-written reader of the JSON on a tool call's hot path (the JSON-RPC message,
//! the operation's answer): one pass over the bytes, a value kept as the slice of text
//! it is, no allocation. It is a shortcut of the serde path, never a judge: it reads
//! only what it is sure serde_json reads the same way, and gives up (`None`) on the
//! rest, which the caller then reads with serde_json as before (same answer, same
//! messages): any syntax error, an escape in a string it compares (a key), a `\u`
//! escape, a number with an exponent or more than [`MAX_DIGITS`] digits before or
//! after its point, nesting deeper than [`MAX_DEPTH`]. The tests below and the
//! proptests (fuzz.rs) hold it to serde_json on random text.

/// Deepest nesting read (serde_json's own bound is 128).
const MAX_DEPTH: u32 = 64;
/// Most digits read on either side of a number's point (18 fit any integer type).
const MAX_DIGITS: usize = 18;

/// The bytes a JSON string cannot hold as they are: `"`, `\` and the control characters
/// (they end a string's plain run; written, they are escaped).
pub(crate) static STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

const ONES: u64 = 0x0101_0101_0101_0101;
pub(crate) const HIGH: u64 = 0x8080_8080_8080_8080;

/// The bytes of an 8-byte word (its first byte the lowest) that [`STOPS`] holds, as a
/// mask whose lowest set bit is exact: the high bit of the first such byte. (A set bit
/// above it may be a false one, carried from the byte below: only the lowest is read.)
/// Eight bytes tested in ~12 instructions, where a table lookup per byte costs ~7 each.
#[inline(always)]
pub(crate) fn stops(word: u64) -> u64 {
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    zero(word ^ (ONES * u64::from(b'"'))) | zero(word ^ (ONES * u64::from(b'\\'))) | control
}

/// The 8 bytes at `at` as a word, when there are 8.
#[inline(always)]
pub(crate) fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    bytes
        .get(at..)?
        .first_chunk()
        .map(|w| u64::from_le_bytes(*w))
}

/// The index of the first [`STOPS`] byte at or after `at`: eight bytes at a time,
/// then the last few one by one.
#[inline(always)]
pub(crate) fn next_stop(bytes: &[u8], mut at: usize) -> Option<usize> {
    while let Some(w) = word_at(bytes, at) {
        let m = stops(w);
        if m != 0 {
            return Some(at + (m.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let n = bytes
        .get(at..)?
        .iter()
        .position(|&b| STOPS[usize::from(b)])?;
    Some(at + n)
}

/// A name a key or a string value is compared with where it stands (a few word
/// compares, not a scan for the string's end and a compare after): its text, and its
/// first and last eight bytes as little-endian words. A text of more than 16 bytes is
/// compared as a slice; one holding a [`STOPS`] byte (which a JSON string escapes) is
/// never found in place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Expected<T = &'static str> {
    pub text: T,
    words: Words,
}

#[derive(Clone, Copy, Debug)]
struct Words {
    /// The first eight bytes (fewer: zero-padded).
    head: u64,
    /// Which of `head`'s bytes are the text's.
    mask: u64,
    /// The last eight bytes (a text longer than eight).
    tail: u64,
    /// No byte of [`STOPS`].
    plain: bool,
}

const fn words(b: &[u8]) -> Words {
    let (mut head, mut tail, mut plain, mut i) = (0u64, 0u64, true, 0);
    while i < b.len() {
        plain &= !STOPS[b[i] as usize];
        if i < 8 {
            head |= (b[i] as u64) << (8 * i);
        }
        if b.len() > 8 && i + 8 >= b.len() {
            tail |= (b[i] as u64) << (8 * (i + 8 - b.len()));
        }
        i += 1;
    }
    let mask = match b.len() {
        8.. => u64::MAX,
        n => (1u64 << (8 * n)) - 1,
    };
    Words {
        head,
        mask,
        tail,
        plain,
    }
}

impl Expected {
    pub(crate) const fn new(text: &'static str) -> Self {
        let words = words(text.as_bytes());
        assert!(words.plain, "no byte a string escapes");
        Expected { text, words }
    }
}

impl Expected<String> {
    /// A name known at run time (an argument's).
    pub(crate) fn owned(text: String) -> Self {
        let words = words(text.as_bytes());
        Expected { text, words }
    }
}

impl<T: AsRef<str>> Expected<T> {
    /// `bytes` from `from` start with the text (`from + len` is in `bytes`).
    #[inline(always)]
    fn at(&self, bytes: &[u8], from: usize) -> bool {
        let text = self.text.as_ref().as_bytes();
        let (len, w) = (text.len(), &self.words);
        if !w.plain {
            return false;
        }
        match word_at(bytes, from) {
            Some(x) if len <= 8 => (x ^ w.head) & w.mask == 0,
            Some(x) if len <= 16 => x == w.head && word_at(bytes, from + len - 8) == Some(w.tail),
            _ => bytes.get(from..from + len) == Some(text),
        }
    }
}

/// A cursor over JSON text.
pub(crate) struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Scan { text, at: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    #[inline(always)]
    fn space(&mut self) {
        // Most calls find a value's first byte or a delimiter: one test.
        while let Some(&b) = self.text.as_bytes().get(self.at) {
            if b > b' ' || !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return;
            }
            self.at += 1;
        }
    }

    /// `want`, after whitespace.
    fn eat(&mut self, want: u8) -> Option<()> {
        self.space();
        (self.next()? == want).then_some(())
    }

    /// The first byte of the next value (after whitespace), not consumed.
    pub(crate) fn ahead(&mut self) -> Option<u8> {
        self.space();
        self.peek()
    }

    /// Nothing but whitespace is left.
    pub(crate) fn end(mut self) -> Option<()> {
        self.space();
        (self.at == self.text.len()).then_some(())
    }

    /// Moves the cursor past the next `"`, `\` or control character in a string: which.
    #[inline(always)]
    fn string_run(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        let at = next_stop(bytes, self.at)?;
        self.at = at + 1;
        bytes.get(at).copied()
    }

    /// A string without escapes (after whitespace): its text between the quotes.
    pub(crate) fn plain_str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        match self.string_run()? {
            b'"' => self.text.get(start..self.at - 1),
            _ => None,
        }
    }

    /// Whether the next value (after whitespace) is the string `want` as it is, without
    /// an escape: then it is read; else nothing is.
    #[inline(always)]
    pub(crate) fn str_is<T: AsRef<str>>(&mut self, want: &Expected<T>) -> bool {
        self.space();
        let bytes = self.text.as_bytes();
        let at = self.at;
        let len = want.text.as_ref().len();
        let quoted = bytes.get(at) == Some(&b'"') && bytes.get(at + 1 + len) == Some(&b'"');
        let hit = quoted && want.at(bytes, at + 1);
        if hit {
            self.at = at + len + 2;
        }
        hit
    }

    /// One value (after whitespace): its text. (Inlined: a call per argument's value
    /// cost more than the few instructions it wraps around `skip`.)
    #[inline(always)]
    pub(crate) fn value(&mut self) -> Option<&'a str> {
        self.space();
        let start = self.at;
        self.skip(0)?;
        self.text.get(start..self.at)
    }

    /// An object (after whitespace): each member's key (a string without escapes) given
    /// to `member`, which reads the member's value.
    pub(crate) fn object(
        &mut self,
        member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.members(|s, _| s.plain_str(), member)
    }

    /// An object whose keys are looked up among `names`: `member` is given the key's
    /// index there (`names.len()`: another key) and reads the value. The n-th member's
    /// key is first compared in place with `names[n]` (the order a sender usually
    /// keeps), and only when that misses read as a string and looked for.
    pub(crate) fn object_of<T: AsRef<str>>(
        &mut self,
        names: &[Expected<T>],
        member: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        let key = |s: &mut Self, n: usize| match names.get(n) {
            Some(e) if s.str_is(e) => Some(n),
            _ => {
                let key = s.plain_str()?;
                let i = names.iter().position(|e| e.text.as_ref() == key);
                Some(i.unwrap_or(names.len()))
            }
        };
        self.members(key, member)
    }

    /// An object's members: `key` reads the n-th key (after whitespace), `member` its
    /// value.
    #[inline(always)]
    fn members<K>(
        &mut self,
        mut key: impl FnMut(&mut Self, usize) -> Option<K>,
        mut member: impl FnMut(&mut Self, K) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.ahead()? == b'}' {
            self.at += 1;
            return Some(());
        }
        let mut n = 0;
        loop {
            let k = key(self, n)?;
            n += 1;
            self.eat(b':')?;
            member(self, k)?;
            self.space();
            match self.next()? {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// The text read so far ends here (a byte offset).
    pub(crate) fn position(&self) -> usize {
        self.at
    }

    /// One value from its first byte.
    fn skip(&mut self, depth: u32) -> Option<()> {
        match self.next()? {
            b'"' => self.skip_str(),
            b'{' => self.skip_container(b'}', depth),
            b'[' => self.skip_container(b']', depth),
            b't' => self.literal(b"rue"),
            b'f' => self.literal(b"alse"),
            b'n' => self.literal(b"ull"),
            b'-' => self.number(),
            b'0'..=b'9' => {
                self.at -= 1;
                self.number()
            }
            _ => None,
        }
    }

    fn literal(&mut self, rest: &[u8]) -> Option<()> {
        let end = self.at + rest.len();
        (self.text.as_bytes().get(self.at..end)? == rest).then(|| self.at = end)
    }

    /// The rest of a string after its opening quote.
    fn skip_str(&mut self) -> Option<()> {
        loop {
            match self.string_run()? {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// The rest of an array or object after its opening bracket.
    fn skip_container(&mut self, close: u8, depth: u32) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        if self.ahead()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            if close == b'}' {
                self.eat(b'"')?;
                self.skip_str()?;
                self.eat(b':')?;
            }
            self.space();
            self.skip(depth + 1)?;
            self.space();
            match self.next()? {
                b',' => {}
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// A number from its first digit (after any `-`).
    fn number(&mut self) -> Option<()> {
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => {
                let digits = self.digits();
                if digits + 1 > MAX_DIGITS {
                    return None;
                }
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            let digits = self.digits();
            if digits == 0 || digits > MAX_DIGITS {
                return None;
            }
        }
        match self.peek() {
            Some(b'0'..=b'9' | b'e' | b'E' | b'.') => None,
            _ => Some(()),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - start
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::value::RawValue;

    /// The scanner's reading of one value (the whole text), where it reads one.
    pub(crate) fn scanned(text: &str) -> Option<&str> {
        let mut s = Scan::new(text);
        let v = s.value()?;
        s.end().map(|()| v)
    }

    /// Whatever the scanner reads, serde_json reads the same way: a value it takes is
    /// one serde_json takes whole (as a raw value, and as a parsed `Value` when the
    /// scanner gave up on nothing a parse checks more than a skip does).
    pub(crate) fn agrees_with_serde(text: &str) {
        if let Some(v) = scanned(text) {
            let raw = serde_json::from_str::<&RawValue>(text);
            assert_eq!(raw.map(|r| r.get()).ok(), Some(v.trim()), "{text:?}");
            let value = serde_json::from_str::<serde_json::Value>(text);
            assert!(value.is_ok(), "{text:?}: {value:?}");
        }
    }

    #[test]
    fn reads_what_serde_reads_and_gives_up_on_the_rest() {
        for text in [
            r#" {"a" : [1, -2, 0.5, -0, true, false, null, "s\n\"\\\/"], "b": {}, "c": []} "#,
            "0",
            "-12.25",
            r#""é""#,
            "123456789012345678",
        ] {
            assert!(scanned(text).is_some(), "{text}");
            agrees_with_serde(text);
        }
        for text in [
            "",
            "{",
            "[1,]",
            r#"{"a":1,}"#,
            "01",
            "1.",
            "-",
            "1e2",
            "1E2",
            "1.5e3",
            "1234567890123456789",
            "0.1234567890123456789",
            r#""\u0041""#,
            r#""\x""#,
            "\"a\u{1}\"",
            "tru",
            "nul",
            r#"{"a" 1}"#,
            r#"{1:2}"#,
            "[1 2]",
            "1 2",
            "+1",
            ".5",
            "--1",
            "NaN",
        ] {
            assert_eq!(scanned(text), None, "{text:?}");
        }
        let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
        assert_eq!(scanned(&deep), None);
        let ok = format!("{}{}", "[".repeat(60), "]".repeat(60));
        assert!(scanned(&ok).is_some());
    }

    /// A string is `Expected` exactly when it is the text, unescaped, at every length and
    /// whatever stands around it (the words read past the string's end included).
    #[test]
    fn a_string_compared_in_place_is_the_text_exactly() {
        const TEXT: &str = "abcdefghijklmnopqrstu";
        let mut expected: Vec<_> = (1..=TEXT.len()).map(|n| TEXT[..n].to_string()).collect();
        expected.push("a\"b".into());
        expected.push("a\\".into());
        for e in expected.into_iter().map(Expected::owned) {
            let t = e.text.as_str();
            let mut cases = vec![format!("\"{t}\""), format!("\"{t}\":1,\"k\":[2]}}")];
            cases.push(format!("\"{t}x\""));
            cases.push(format!("\"{}\"", &t[..t.len() - 1]));
            cases.push(format!("\"{t}"));
            cases.push(format!("\"\\{t}\""));
            for i in 0..t.len() {
                let mut changed = t.as_bytes().to_vec();
                changed[i] ^= 0x20;
                let changed = String::from_utf8(changed).expect("ascii");
                cases.push(format!("  \"{changed}\":0"));
            }
            for case in cases {
                let mut s = Scan::new(&case);
                let plain = Scan::new(&case).plain_str();
                let hit = s.str_is(&e);
                assert_eq!(hit, plain == Some(t), "{t:?} in {case:?}");
                if e.text.len() <= 16 && !t.contains(['"', '\\']) {
                    let as_const = Expected::new(TEXT.get(..t.len()).expect("prefix"));
                    assert_eq!(Scan::new(&case).str_is(&as_const), hit, "{case:?}");
                }
                let read = if hit { s.position() } else { 0 };
                let mut p = Scan::new(&case);
                let end = if p.plain_str() == Some(t) {
                    p.position()
                } else {
                    0
                };
                assert_eq!(read, end, "{case:?}");
            }
        }
    }

    /// Keys in another order, or unknown, are found as a plain read finds them.
    #[test]
    fn keys_are_looked_up_in_any_order() {
        let names = [
            Expected::new("a"),
            Expected::new("bb"),
            Expected::new("ccc"),
        ];
        let text = r#"{"bb":1,"a":2,"x":3,"ccc":4,"a\u0041":5}"#;
        let mut got = Vec::new();
        let mut s = Scan::new(text);
        let read = s.object_of(&names, |s, i| {
            got.push((i, s.value()?));
            Some(())
        });
        assert_eq!(read, None, "an escaped key gives up");
        assert_eq!(got, [(1, "1"), (0, "2"), (3, "3"), (2, "4")]);
    }

    #[test]
    fn an_object_gives_its_keys_without_escapes() {
        let mut keys = Vec::new();
        let mut s = Scan::new(r#" { "a" : 1 , "b":{"x":[2]} } "#);
        s.object(|s, k| {
            keys.push((k, s.value()?));
            Some(())
        })
        .expect("read");
        assert_eq!(s.position(), 28, "after the object, not the space after it");
        assert!(s.end().is_some());
        assert_eq!(keys, [("a", "1"), ("b", r#"{"x":[2]}"#)]);
        let mut s = Scan::new(r#"{"a\"b":1}"#);
        assert_eq!(s.object(|s, _| s.value().map(|_| ())), None);
    }
}
