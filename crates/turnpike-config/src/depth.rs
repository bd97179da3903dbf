//! A nesting-depth check run on YAML or JSON text before any parser sees it: one linear
//! pass, no recursion, so a file of 200 KB of `[` is refused in microseconds with the
//! line and column where the limit was crossed, instead of costing a parser (and the
//! position scanner, `spans.rs`) seconds of CPU. Flow collections (`[`, `{`, the only
//! nesting JSON has) are counted outside quoted scalars and comments; block nesting is
//! bounded by the indentation plus the `- ` / `? ` / `: ` indicators at a line's start.

use crate::error::Location;

/// Deepest nesting accepted. Real gateway files nest about 8 levels; serde's own
/// recursion limit (128) is never reached after this check.
pub const MAX_DEPTH: usize = 64;

/// Where the text nests deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    pub location: Location,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the document nests deeper than {MAX_DEPTH} levels (line {}, column {})",
            self.location.line, self.location.column
        )
    }
}

impl std::error::Error for TooDeep {}

/// `Ok` when no place in `text` nests deeper than [`MAX_DEPTH`].
pub fn check_depth(text: &str) -> Result<(), TooDeep> {
    let mut flow = 0usize;
    let mut quote: Option<u8> = None;
    let mut line = 1usize;
    let mut line_start = 0usize;
    let mut at_line_start = true;
    let bytes = text.as_bytes();
    let mut i = 0usize;
    let too_deep = |i: usize, line: usize, line_start: usize| TooDeep {
        location: Location {
            line,
            column: i - line_start + 1,
        },
    };
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
            line_start = i + 1;
            at_line_start = true;
            i += 1;
            continue;
        }
        if at_line_start && quote.is_none() && flow == 0 {
            // Block structure: indentation and the indicators that open a nested node.
            let mut j = i;
            let mut depth = 0usize;
            while j < bytes.len() {
                match bytes[j] {
                    b' ' | b'\t' => depth += 1,
                    b'-' | b'?' | b':'
                        if matches!(bytes.get(j + 1), Some(b' ' | b'\t' | b'\n') | None) =>
                    {
                        depth += 2
                    }
                    _ => break,
                }
                j += 1;
            }
            // One level takes at least one column of indentation or an indicator.
            if depth > 4 * MAX_DEPTH {
                return Err(too_deep(j, line, line_start));
            }
            at_line_start = false;
            i = j;
            continue;
        }
        at_line_start = false;
        match quote {
            Some(b'"') => match b {
                b'\\' => i += 1,
                b'"' => quote = None,
                _ => {}
            },
            Some(_) => {
                if b == b'\'' {
                    if bytes.get(i + 1) == Some(&b'\'') {
                        i += 1;
                    } else {
                        quote = None;
                    }
                }
            }
            None => match b {
                b'"' | b'\'' => quote = Some(b),
                b'#' if i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n') => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'[' | b'{' => {
                    flow += 1;
                    if flow > MAX_DEPTH {
                        return Err(too_deep(i, line, line_start));
                    }
                }
                b']' | b'}' => flow = flow.saturating_sub(1),
                _ => {}
            },
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_nesting_is_counted_outside_quotes_and_comments() {
        assert!(check_depth(&"[".repeat(MAX_DEPTH)).is_ok());
        let e = check_depth(&format!("a: 1\nb: {}", "[".repeat(200_000)));
        assert_eq!(
            e.map_err(|e| e.location),
            Err(Location {
                line: 2,
                column: 3 + MAX_DEPTH + 1
            })
        );
        let quoted = format!(
            "a: \"{}\"\nb: '{}'\n# {}",
            "[".repeat(500),
            "{".repeat(500),
            "[".repeat(500)
        );
        assert!(check_depth(&quoted).is_ok());
        assert!(check_depth(&format!("{{\"a\": {}1{}}}", "[".repeat(60), "]".repeat(60))).is_ok());
        assert!(check_depth(&format!("{{\"a\": {}1{}}}", "[".repeat(80), "]".repeat(80))).is_err());
    }

    #[test]
    fn block_nesting_is_bounded_by_indentation_and_indicators() {
        let ordinary = "apis:\n  - name: a\n    resources:\n      - { path: /x }\n";
        assert!(check_depth(ordinary).is_ok());
        assert!(check_depth(&format!("{}x\n", "- ".repeat(100_000))).is_err());
        assert!(check_depth(&format!("a:\n{}b: 1\n", " ".repeat(100_000))).is_err());
    }
}
