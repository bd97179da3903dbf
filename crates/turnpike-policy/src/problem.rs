//! What went wrong with a file: every problem at once, each with the place it was
//! found (`apis[1].endpoints[0]`) and, when the text is known, its line and column.
//! The one problem type: the config compiler reports these, and every policy kind's
//! build pushes its own into [`BuildCx`](crate::BuildCx).

use std::fmt;

/// A place in the source text, both 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

/// One thing wrong with a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where in the document, e.g. `apis[1].endpoints[0]`; empty for the whole file.
    pub path: String,
    pub location: Option<Location>,
    pub message: String,
}

impl Problem {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            path: path.into(),
            location: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(at) = self.location {
            write!(f, "line {}, column {}: ", at.line, at.column)?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// All problems found in one source, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems {
    /// The file name, or what the text came from.
    pub source_name: String,
    pub list: Vec<Problem>,
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.list.len();
        let noun = if n == 1 { "problem" } else { "problems" };
        write!(f, "{}: {n} {noun}", self.source_name)?;
        for p in &self.list {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}
