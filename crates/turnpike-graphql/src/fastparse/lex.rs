//! The fast parser's lexer: the next significant token (whitespace, commas and comments
//! skipped and counted toward the token cap), numbers and quoted strings checked as
//! apollo-parser's lexer checks them, and a quoted string's value with its escapes
//! resolved. Block strings, control characters in strings and non-ASCII outside strings
//! and comments are declined.

use super::{Declined, FastParser, Parsed, Tok, Token};

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl FastParser<'_> {
    /// The next significant token; ignored tokens (whitespace, commas, comments) are
    /// skipped and counted.
    pub(super) fn lex(&mut self) -> Parsed<Token> {
        let b = self.bytes;
        let mut ignored = 0;
        let mut comma = false;
        loop {
            match b.get(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => {
                    self.pos += 1;
                    ignored += 1;
                }
                Some(b',') => {
                    self.pos += 1;
                    ignored += 1;
                    comma = true;
                }
                Some(b'#') => {
                    while let Some(&c) = b.get(self.pos) {
                        if c == b'\n' || c == b'\r' {
                            break;
                        }
                        self.pos += 1;
                    }
                    ignored += 1;
                }
                _ => break,
            }
        }
        self.count(ignored + 1)?;
        let start = self.pos;
        let Some(&c) = b.get(start) else {
            return Ok(Token {
                kind: Tok::Eof,
                start,
                end: start,
                comma,
            });
        };
        let kind = match c {
            b'!' | b'$' | b'&' | b'(' | b')' | b':' | b'=' | b'@' | b'[' | b']' | b'{' | b'|'
            | b'}' => {
                self.pos += 1;
                Tok::Punct(c)
            }
            b'.' => {
                if b.get(start..start + 3) != Some(b"...") {
                    return Err(Declined::Syntax);
                }
                self.pos += 3;
                Tok::Spread
            }
            c if is_name_start(c) => {
                self.pos += 1;
                while b.get(self.pos).is_some_and(|&c| is_name_continue(c)) {
                    self.pos += 1;
                }
                Tok::Name
            }
            b'-' | b'0'..=b'9' => self.number()?,
            b'"' => self.string()?,
            _ => return Err(Declined::Unsupported),
        };
        Ok(Token {
            kind,
            start,
            end: self.pos,
            comma,
        })
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - from
    }

    fn number(&mut self) -> Parsed<Tok> {
        let b = self.bytes;
        if b.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let first = b.get(self.pos).copied();
        let n = self.digits();
        if n == 0 || (first == Some(b'0') && n > 1) {
            return Err(Declined::Syntax);
        }
        let mut kind = Tok::Int;
        if b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(Declined::Syntax);
            }
            kind = Tok::Float;
        }
        if matches!(b.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(b.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Declined::Syntax);
            }
            kind = Tok::Float;
        }
        match b.get(self.pos) {
            Some(&c) if c == b'.' || is_name_start(c) => Err(Declined::Syntax),
            _ => Ok(kind),
        }
    }

    /// A quoted string (block strings are declined); its value is decoded later.
    fn string(&mut self) -> Parsed<Tok> {
        let b = self.bytes;
        if b.get(self.pos..self.pos + 3) == Some(b"\"\"\"") {
            return Err(Declined::Unsupported);
        }
        self.pos += 1;
        loop {
            match b.get(self.pos) {
                None | Some(b'\n' | b'\r') => return Err(Declined::Syntax),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Tok::Str);
                }
                Some(b'\\') => self.pos += 2,
                Some(&c) if c < 0x20 && c != b'\t' => return Err(Declined::Unsupported),
                Some(_) => self.pos += 1,
            }
        }
    }

    /// The value of a quoted string token, escapes resolved.
    pub(super) fn string_value(&self, t: Token) -> Parsed<String> {
        let raw = self
            .src
            .get(t.start + 1..t.end - 1)
            .ok_or(Declined::Syntax)?;
        if !raw.contains('\\') {
            return Ok(raw.to_owned());
        }
        let mut out = String::with_capacity(raw.len());
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() != 4 || !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                        return Err(Declined::Unsupported);
                    }
                    let code = u32::from_str_radix(&hex, 16).map_err(|_| Declined::Syntax)?;
                    out.push(char::from_u32(code).ok_or(Declined::Unsupported)?);
                }
                _ => return Err(Declined::Syntax),
            }
        }
        Ok(out)
    }
}
