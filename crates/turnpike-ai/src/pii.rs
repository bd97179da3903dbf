//! Personal data in prompt texts: e-mail addresses, phone numbers, card numbers (a
//! candidate is one only if its Luhn check digit holds) and IBANs (only if mod 97 is 1).
//! [`Scanner::mask`] replaces each with a placeholder (`<EMAIL_1>`, the same value the
//! same placeholder within one request) and records the pairs in [`Masks`], which puts
//! the originals back in an answer, whole ([`Masks::unmask`]) or streamed piece by piece
//! ([`Unmasker`], which holds back a tail that may be a placeholder cut in two).
//!
//! Bounded: a text longer than [`MAX_TEXT_BYTES`] is refused rather than scanned in part
//! (an unscanned tail would leak), and at most [`MAX_VALUES`] distinct values are masked
//! per request (more is refused). The regexes are linear-time (`regex` crate).

use regex::Regex;
use turnpike_model::ai_guard::PiiKind;

/// Longest text scanned.
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// Most distinct values masked in one request.
pub const MAX_VALUES: usize = 256;
/// Longest placeholder (`<PHONE_256>`): what a stream holds back at most.
const MAX_PLACEHOLDER: usize = 12;

/// Why a text could not be masked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TooMuch {
    Text,
    Values,
}

/// The compiled detectors, in the order they claim spans (a card number is also a run
/// of digits a phone pattern would take).
pub struct Scanner {
    detectors: Vec<(PiiKind, Regex)>,
}

/// The placeholders of one request and the values they stand for.
#[derive(Debug, Default, Clone)]
pub struct Masks {
    pairs: Vec<(String, String)>,
    counts: [usize; 4],
}

fn label(kind: PiiKind) -> (&'static str, usize) {
    match kind {
        PiiKind::Email => ("EMAIL", 0),
        PiiKind::Phone => ("PHONE", 1),
        PiiKind::Card => ("CARD", 2),
        PiiKind::Iban => ("IBAN", 3),
    }
}

fn pattern(kind: PiiKind) -> &'static str {
    match kind {
        PiiKind::Email => {
            r"[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,8}\.[A-Za-z]{2,24}"
        }
        PiiKind::Card => r"\b\d(?:[ \-]?\d){12,18}\b",
        PiiKind::Iban => r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b",
        PiiKind::Phone => {
            r"(?:\+\d{1,3}[ .\-]?)?(?:\(\d{1,4}\)[ .\-]?)?\d{2,4}(?:[ .\-]?\d{2,4}){2,4}\b"
        }
    }
}

/// Whether a candidate of `kind` is one (check digits, digit counts).
fn valid(kind: PiiKind, text: &str) -> bool {
    let digits = || text.bytes().filter(u8::is_ascii_digit);
    match kind {
        PiiKind::Email => true,
        PiiKind::Card => luhn(text),
        PiiKind::Iban => iban(text),
        // A run of 7 or 8 digits without a `+` is as often a date or an amount.
        PiiKind::Phone => {
            let n = digits().count();
            (7..=15).contains(&n) && (n >= 9 || text.starts_with('+'))
        }
    }
}

/// The Luhn check over the digits of `text` (separators skipped), 13 to 19 digits.
pub fn luhn(text: &str) -> bool {
    let digits: Vec<u32> = text.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match (i % 2, d * 2) {
            (0, _) => d,
            (_, x) if x > 9 => x - 9,
            (_, x) => x,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// ISO 13616: the first four characters moved to the end, letters as 10..35, the
/// number mod 97 is 1.
pub fn iban(text: &str) -> bool {
    let compact: Vec<u8> = text.bytes().filter(|b| *b != b' ').collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut rem: u32 = 0;
    for &b in tail.iter().chain(head) {
        let v = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

impl Scanner {
    /// The detectors for `kinds` (all four when empty).
    pub fn new(kinds: &[PiiKind]) -> Scanner {
        let all = [PiiKind::Card, PiiKind::Iban, PiiKind::Email, PiiKind::Phone];
        let detectors = all
            .into_iter()
            .filter(|k| kinds.is_empty() || kinds.contains(k))
            .filter_map(|k| Regex::new(pattern(k)).ok().map(|r| (k, r)))
            .collect();
        Scanner { detectors }
    }

    /// The spans of personal data in `text`, in order, not overlapping.
    pub fn find(&self, text: &str) -> Result<Vec<(usize, usize, PiiKind)>, TooMuch> {
        if text.len() > MAX_TEXT_BYTES {
            return Err(TooMuch::Text);
        }
        let mut spans: Vec<(usize, usize, PiiKind)> = Vec::new();
        for (kind, re) in &self.detectors {
            for m in re.find_iter(text) {
                let overlaps = spans.iter().any(|s| m.start() < s.1 && s.0 < m.end());
                if !overlaps && valid(*kind, m.as_str()) {
                    spans.push((m.start(), m.end(), *kind));
                    if spans.len() > MAX_VALUES {
                        return Err(TooMuch::Values);
                    }
                }
            }
        }
        spans.sort_unstable_by_key(|s| s.0);
        Ok(spans)
    }

    /// `text` with its personal data replaced by placeholders (None: none found).
    pub fn mask(&self, text: &str, masks: &mut Masks) -> Result<Option<String>, TooMuch> {
        let spans = self.find(text)?;
        if spans.is_empty() {
            return Ok(None);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end, kind) in spans {
            out.push_str(text.get(at..start).unwrap_or_default());
            out.push_str(masks.placeholder(kind, text.get(start..end).unwrap_or_default())?);
            at = end;
        }
        out.push_str(text.get(at..).unwrap_or_default());
        Ok(Some(out))
    }
}

impl Masks {
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The placeholder of `value` (a new one the first time).
    fn placeholder(&mut self, kind: PiiKind, value: &str) -> Result<&str, TooMuch> {
        let found = self.pairs.iter().position(|(_, v)| v == value);
        let at = match found {
            Some(at) => at,
            None => {
                if self.pairs.len() >= MAX_VALUES {
                    return Err(TooMuch::Values);
                }
                let (name, slot) = label(kind);
                let n = self.counts.get_mut(slot).map_or(0, |c| {
                    *c += 1;
                    *c
                });
                self.pairs.push((format!("<{name}_{n}>"), value.to_owned()));
                self.pairs.len() - 1
            }
        };
        Ok(self.pairs.get(at).map_or("", |(p, _)| p.as_str()))
    }

    /// `text` with every placeholder replaced by its value.
    pub fn unmask(&self, text: &str) -> String {
        let mut out = text.to_owned();
        // Longest first: `<EMAIL_12>` is not `<EMAIL_1>` followed by `2>`, but keep it
        // simple and safe anyway.
        let mut pairs: Vec<&(String, String)> = self.pairs.iter().collect();
        pairs.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        for (p, v) in pairs {
            if out.contains(p.as_str()) {
                out = out.replace(p.as_str(), v);
            }
        }
        out
    }
}

/// Puts the originals back into a streamed answer's text pieces: a piece is passed on
/// up to a `<` that may begin a placeholder; that tail waits for the next piece (at most
/// [`MAX_PLACEHOLDER`] bytes are ever held).
#[derive(Debug, Default)]
pub struct Unmasker {
    held: String,
}

impl Unmasker {
    /// What of `piece` (after what was held) can go out now.
    pub fn push(&mut self, masks: &Masks, piece: &str) -> String {
        self.held.push_str(piece);
        let keep_from = self.held.rfind('<').filter(|&i| {
            let tail = self.held.get(i..).unwrap_or_default();
            tail.len() < MAX_PLACEHOLDER && !tail.contains('>') && maybe_placeholder(tail)
        });
        let ready = match keep_from {
            Some(i) => {
                let tail = self.held.split_off(i);
                std::mem::replace(&mut self.held, tail)
            }
            None => std::mem::take(&mut self.held),
        };
        masks.unmask(&ready)
    }

    /// The stream ended: whatever was held.
    pub fn flush(&mut self, masks: &Masks) -> String {
        masks.unmask(&std::mem::take(&mut self.held))
    }

    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }
}

/// Whether `tail` (starting with `<`, no `>`) can still grow into `<NAME_N>`.
fn maybe_placeholder(tail: &str) -> bool {
    tail.bytes()
        .skip(1)
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_digits_decide() {
        assert!(luhn("4111 1111 1111 1111"));
        assert!(!luhn("4111 1111 1111 1112"));
        assert!(iban("GB82 WEST 1234 5698 7654 32"));
        assert!(iban("DE89370400440532013000"));
        assert!(!iban("DE89370400440532013001"));
    }

    #[test]
    fn masks_each_kind_and_puts_them_back() {
        let s = Scanner::new(&[]);
        let mut m = Masks::default();
        let text = "mail bob@example.com or +44 20 7946 0958, card 4111-1111-1111-1111, \
                    iban DE89370400440532013000, again bob@example.com, not 4111-1111-1111-1112";
        let out = s.mask(text, &mut m).expect("bounded").expect("found");
        assert!(out.contains("<EMAIL_1>") && !out.contains("bob@"), "{out}");
        assert_eq!(out.matches("<EMAIL_1>").count(), 2, "{out}");
        assert!(out.contains("<PHONE_1>"), "{out}");
        assert!(
            out.contains("<CARD_1>") && out.contains("<IBAN_1>"),
            "{out}"
        );
        assert!(
            out.contains("4111-1111-1111-1112"),
            "a bad Luhn digit: {out}"
        );
        assert_eq!(m.unmask(&out), text);
    }

    #[test]
    fn a_placeholder_cut_across_pieces_comes_back_whole() {
        let s = Scanner::new(&[PiiKind::Email]);
        let mut m = Masks::default();
        let masked = s.mask("to a@b.io now", &mut m).expect("ok").expect("found");
        for cut in 0..masked.len() {
            let (a, b) = masked.split_at(cut);
            let mut u = Unmasker::default();
            let mut got = u.push(&m, a);
            got.push_str(&u.push(&m, b));
            got.push_str(&u.flush(&m));
            assert_eq!(got, "to a@b.io now", "cut at {cut}");
        }
        let mut u = Unmasker::default();
        let one_by_one: String = masked.chars().map(|c| u.push(&m, &c.to_string())).collect();
        assert_eq!(one_by_one + &u.flush(&m), "to a@b.io now");
    }

    #[test]
    fn caps_refuse_rather_than_scan_in_part() {
        let s = Scanner::new(&[PiiKind::Email]);
        let many: String = (0..300).map(|i| format!("u{i}@x.io ")).collect();
        assert_eq!(s.mask(&many, &mut Masks::default()), Err(TooMuch::Values));
        let long = "a".repeat(MAX_TEXT_BYTES + 1);
        assert_eq!(s.mask(&long, &mut Masks::default()), Err(TooMuch::Text));
    }
}
