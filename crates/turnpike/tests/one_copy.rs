//! One copy of each small rule (issue 26, S0.2): a hash, a clock, a state enum, an API id,
//! a Content-Length read, a query split, a problem type. Each rule below has a ceiling on
//! how many times its pattern may appear in `crates/*/src`; ceilings only go down. When a
//! copy is removed, lower the ceiling; when one is added, call the shared one instead.
//! A failure names the files that hold the pattern.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A rule: its name, how a source text's hits are counted, and the most hits allowed.
struct Rule {
    name: &'static str,
    count: fn(&str, &str) -> usize,
    ceiling: usize,
}

const RULES: &[Rule] = &[
    Rule {
        name:
            "civil-from-days date arithmetic `719_468` (use turnpike_model::clock::civil_from_days)",
        count: |_, text| text.matches("719_468").count(),
        ceiling: 2, // turnpike-model/src/clock.rs: civil_from_days and its inverse
    },
    Rule {
        name: "FNV-1a offset basis `cbf2_9ce4_8422_2325` (use turnpike_model::fnv)",
        count: |_, text| text.matches("cbf2_9ce4_8422_2325").count(),
        ceiling: 1,
    },
    Rule {
        name: "`trait Clock` (use turnpike_model::clock::Clock)",
        count: |_, text| text.matches("trait Clock").count(),
        ceiling: 1,
    },
    Rule {
        name: "`enum SubscriptionState` (use turnpike_model::SubscriptionState)",
        count: |_, text| text.matches("enum SubscriptionState").count(),
        ceiling: 1,
    },
    Rule {
        name: "`fn api_id` (use turnpike_model::api_id)",
        count: |_, text| text.matches("fn api_id").count(),
        ceiling: 1,
    },
    Rule {
        name: "inline `format!(\"{}/{}\", x.context, ...)` API ids (use turnpike_model::api_id)",
        count: |_, text| inline_api_ids(text),
        ceiling: 0,
    },
    Rule {
        name: "Content-Length parsed by hand: `CONTENT_LENGTH)` then `parse` within 160 chars",
        count: |path, text| {
            if path.ends_with("turnpike-policy/src/http.rs") {
                return 0;
            }
            followed_within(text, "CONTENT_LENGTH)", "parse", 160)
        },
        ceiling: 0,
    },
    Rule {
        name: "query split by hand: `split('&')` within 80 chars of `split_once('=')`",
        count: |_, text| near(text, "split('&')", "split_once('='", 80),
        ceiling: 1,
    },
    Rule {
        name: "problem types: `struct SpecError`, `struct BuildError`, `type FieldProblem`, \
               `type SpecProblem`",
        count: |_, text| {
            [
                "struct SpecError",
                "struct BuildError",
                "type FieldProblem",
                "type SpecProblem",
            ]
            .iter()
            .map(|p| text.matches(p).count())
            .sum()
        },
        ceiling: 0,
    },
];

#[test]
fn each_small_rule_has_one_copy() {
    let sources = rust_sources();
    assert!(sources.len() > 100, "the scan found too few sources");
    let mut failures = Vec::new();
    for rule in RULES {
        let hits: BTreeMap<&str, usize> = sources
            .iter()
            .map(|(path, text)| (path.as_str(), (rule.count)(path, text)))
            .filter(|(_, n)| *n > 0)
            .collect();
        let total: usize = hits.values().sum();
        if total > rule.ceiling {
            let files: Vec<String> = hits.iter().map(|(p, n)| format!("  {p}: {n}")).collect();
            failures.push(format!(
                "{}: {total} copies, ceiling {}\n{}",
                rule.name,
                rule.ceiling,
                files.join("\n")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "duplicate rules grew:\n{}",
        failures.join("\n")
    );
}

/// Every `.rs` file below `crates/*/src`, as (path from `crates/`, text).
fn rust_sources() -> Vec<(String, String)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .expect("crates dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    let mut out = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("read dir")
            .filter_map(|e| e.ok())
        {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&p).expect("read source");
                let rel = p.strip_prefix(&crates).unwrap_or(&p);
                out.push((rel.to_string_lossy().replace('\\', "/"), text));
            }
        }
    }
    out
}

/// `format!("{}/{}", <path>.context` with only whitespace before the path.
fn inline_api_ids(text: &str) -> usize {
    const OPEN: &str = "format!(\"{}/{}\",";
    text.match_indices(OPEN)
        .filter(|(i, _)| {
            let arg: String = text[i + OPEN.len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            arg.ends_with(".context")
        })
        .count()
}

/// How many `first`s have a `then` starting within `window` bytes after them.
fn followed_within(text: &str, first: &str, then: &str, window: usize) -> usize {
    text.match_indices(first)
        .filter(|(i, _)| {
            let start = i + first.len();
            let end = floor_char_boundary(text, start + window);
            text[start..end].contains(then)
        })
        .count()
}

/// How many `a`s have a `b` within `window` bytes before or after them.
fn near(text: &str, a: &str, b: &str, window: usize) -> usize {
    text.match_indices(a)
        .filter(|(i, _)| {
            let start = ceil_char_boundary(text, i.saturating_sub(window + b.len()));
            let end = floor_char_boundary(text, i + a.len() + window + b.len());
            text[start..end].contains(b)
        })
        .count()
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}
