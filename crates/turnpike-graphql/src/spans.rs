//! Source spans at any byte offset, for the AST the fast parser builds. apollo-compiler
//! exposes no constructor for a [`SourceSpan`] from offsets (its parser makes them from
//! its syntax tree), but it does expose the spans of the diagnostics its parser reports
//! and [`SourceSpan::recompose`] (the start of one span, the end of another). Parsing a
//! text of `n` unexpected characters gives one diagnostic of length 1 at every offset
//! `0..n`; `recompose(unit(start), unit(end - 1))` is then the span `start..end`.
//!
//! The spans belong to that template's file, not to the query's: only their offsets are
//! exact. That is all the success path reads (the analysis records byte offsets and
//! turns them into line and column itself); a document that fails validation is parsed
//! again by apollo-compiler for its diagnostics (see `analyzer.rs`).
//!
//! Tables (16 bytes an offset) are built once per power-of-two size class (4 to 64 KiB)
//! on first use, and checked offset by offset: if apollo-compiler ever reports them
//! differently, the class is empty and the fast parser declines every query of that size.

use std::sync::OnceLock;

use apollo_compiler::diagnostic::ToCliReport;
use apollo_compiler::parser::{Parser, SourceSpan};

/// The smallest class holds offsets `0..=4096`.
const MIN_CLASS_BITS: u32 = 12;
/// The largest holds 64 KiB (the default byte cap; building it takes apollo-compiler
/// ~0.1 s once): longer queries take apollo-compiler's parser.
const CLASSES: usize = 5;

static TABLES: [OnceLock<Option<Box<[SourceSpan]>>>; CLASSES] =
    [const { OnceLock::new() }; CLASSES];

/// Unit spans `i..i + 1` for every offset of a text of up to `len` bytes (`len`
/// included, so that an end offset `len` is `unit(len - 1)`'s end).
#[derive(Clone, Copy)]
pub(crate) struct Spans {
    units: &'static [SourceSpan],
}

impl Spans {
    /// The table for texts of up to `len` bytes; `None` when `len` is out of range or
    /// apollo-compiler's diagnostics no longer give unit spans.
    pub(crate) fn for_len(len: usize) -> Option<Spans> {
        let bits = usize::BITS - len.max(1).leading_zeros();
        let class = bits.saturating_sub(MIN_CLASS_BITS) as usize;
        let table = TABLES.get(class)?;
        let units = table
            .get_or_init(|| build(1usize << (class as u32 + MIN_CLASS_BITS)))
            .as_deref()?;
        (units.len() > len).then_some(Spans { units })
    }

    /// The span `start..end` (`start < end <= len`).
    #[inline]
    pub(crate) fn span(&self, start: usize, end: usize) -> Option<SourceSpan> {
        let first = *self.units.get(start)?;
        let last = *self.units.get(end.checked_sub(1)?)?;
        SourceSpan::recompose(Some(first), Some(last))
    }
}

/// Parses `n + 1` unexpected characters and keeps the diagnostics' spans, if each is
/// exactly `i..i + 1` in one file.
fn build(n: usize) -> Option<Box<[SourceSpan]>> {
    let text = "%".repeat(n + 1);
    let errors = match Parser::new().parse_ast(text, "spans.graphql") {
        Ok(_) => return None,
        Err(e) => e.errors,
    };
    let mut units = Vec::with_capacity(n + 1);
    for d in errors.iter() {
        let Some(span) = d.error.location() else {
            continue;
        };
        if span.offset() == units.len() && span.node_len() == 1 {
            units.push(span);
        }
    }
    let file = units.first()?.file_id();
    let exact = units.len() == n + 1
        && units
            .iter()
            .enumerate()
            .all(|(i, s)| s.file_id() == file && s.offset() == i && s.end_offset() == i + 1);
    exact.then(|| units.into_boxed_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_span_is_exact() {
        let spans = Spans::for_len(5000).expect("a table");
        for (s, e) in [(0, 1), (0, 5000), (17, 18), (4095, 4097), (3, 4999)] {
            let span = spans.span(s, e).expect("a span");
            assert_eq!((span.offset(), span.end_offset()), (s, e));
        }
        assert!(Spans::for_len(10).is_some());
    }
}
