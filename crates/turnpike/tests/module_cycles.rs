//! Import cycles between the modules of each workspace crate may only shrink (issue 26:
//! "no import cycle between modules of the gateway, config and admin crates; a test
//! keeps it so"). A module's edges are the `use crate::`/`super::`/`self::` trees and
//! the inline `crate::a::b` paths of its file (its `#[cfg(test)] mod` tail left out),
//! each resolved to the longest module prefix that is a file; a cycle is a strongly
//! connected group of two or more files (Tarjan). Today's groups are listed in
//! [`ALLOWED`]: a group found must lie inside one of them, so no new cycle forms and no
//! existing one grows. When a step breaks one, shrink or drop its entry.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The cycles that exist, by crate (file paths below `src/`).
const ALLOWED: &[(&str, &[&str])] = &[
    (
        "turnpike-analytics",
        &["aggregate.rs", "event.rs", "rollup.rs"],
    ),
    (
        "turnpike-bench",
        &["matrix.rs", "report/graphql.rs", "report/mod.rs"],
    ),
    ("turnpike-graphql", &["analysis.rs", "explain.rs"]),
    (
        "turnpike-keymanager",
        &[
            "clientauth.rs",
            "error.rs",
            "keys.rs",
            "token.rs",
            "verify.rs",
        ],
    ),
    ("turnpike-keymanager", &["authorize.rs", "login_page.rs"]),
    ("turnpike-mediation", &["error.rs", "json.rs", "xml.rs"]),
    ("turnpike-throttle", &["cluster.rs", "store.rs"]),
    ("turnpike-throttle", &["compile.rs", "throttler.rs"]),
];

type Module = Vec<String>;

#[test]
fn no_new_import_cycle_between_modules() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names: Vec<String> = std::fs::read_dir(&crates)
        .expect("crates dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("src").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut offences = Vec::new();
    let mut found = 0;
    for name in &names {
        for group in cycles(&crates.join(name).join("src")) {
            found += 1;
            eprintln!(
                "{name}: {}",
                Vec::from_iter(group.iter().cloned()).join(", ")
            );
            let allowed = ALLOWED
                .iter()
                .any(|(c, files)| c == name && group.iter().all(|f| files.contains(&f.as_str())));
            if !allowed {
                offences.push(format!("{name}: {}", Vec::from_iter(group).join(", ")));
            }
        }
    }
    assert!(
        found > 0,
        "the scan found no cycle at all: is it reading the sources?"
    );
    assert!(
        offences.is_empty(),
        "import cycles that are new or grew (break them: a shared type moves down, a \
         callback becomes a parameter):\n{}",
        offences.join("\n")
    );
}

/// The import cycles of one crate's modules, each as its set of files.
fn cycles(src: &Path) -> Vec<BTreeSet<String>> {
    let mods = module_files(src);
    let index: BTreeMap<&Module, usize> = mods.keys().enumerate().map(|(i, m)| (m, i)).collect();
    let mut edges = vec![BTreeSet::new(); mods.len()];
    for (i, (module, file)) in mods.iter().enumerate() {
        let text = std::fs::read_to_string(src.join(file)).expect("read source");
        for path in paths_used(without_tests(&strip_comments(&text))) {
            if let Some(target) = resolve(&mods, module, &path) {
                if !target.is_empty() && target != module {
                    edges[i].insert(index[target]);
                }
            }
        }
    }
    let files: Vec<&String> = mods.values().collect();
    strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.into_iter().map(|i| files[i].clone()).collect())
        .collect()
}

/// Module path -> file (relative to `src/`, `/`-separated).
fn module_files(src: &Path) -> BTreeMap<Module, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![PathBuf::from(src)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("read dir")
            .filter_map(|e| e.ok())
        {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let Ok(rel) = p.strip_prefix(src) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            let Some(stem) = rel.strip_suffix(".rs") else {
                continue;
            };
            let mut module: Module = stem.split('/').map(str::to_owned).collect();
            if module.last().map(String::as_str) == Some("mod") {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
            }
            out.insert(module, rel);
        }
    }
    out
}

fn strip_comments(s: &str) -> String {
    let mut no_blocks = String::with_capacity(s.len());
    let mut rest = s;
    // An unclosed `/*` (a glob in a string: "/*") is text, not a comment.
    while let Some((i, j)) = rest
        .find("/*")
        .and_then(|i| rest[i..].find("*/").map(|j| (i, i + j)))
    {
        no_blocks.push_str(&rest[..i]);
        rest = &rest[j + 2..];
    }
    no_blocks.push_str(rest);
    let mut out = String::with_capacity(no_blocks.len());
    for line in no_blocks.lines() {
        let keep = match line.find("//") {
            Some(i) if line[..i].matches('"').count() % 2 == 0 => &line[..i],
            _ => line,
        };
        out.push_str(keep);
        out.push('\n');
    }
    out
}

/// The text before the first `#[cfg(test)] mod ... {`.
fn without_tests(s: &str) -> &str {
    let mut from = 0;
    while let Some(i) = s[from..].find("#[cfg(test)]") {
        let at = from + i;
        let after = s[at + "#[cfg(test)]".len()..].trim_start();
        let after = after
            .strip_prefix("pub(crate)")
            .or_else(|| after.strip_prefix("pub"))
            .map_or(after, str::trim_start);
        if after.starts_with("mod ") && after.split('\n').next().is_some_and(|l| l.contains('{')) {
            return &s[..at];
        }
        from = at + 1;
    }
    s
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path the text names through a `use` tree or inline from `crate`/`super`/`self`.
fn paths_used(s: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in s.match_indices("use") {
        let before = s[..i].chars().next_back();
        let after = s[i + 3..].chars().next();
        if before.is_some_and(is_ident) || !after.is_some_and(char::is_whitespace) {
            continue;
        }
        let Some(end) = s[i + 3..].find(';') else {
            continue;
        };
        let tree: String = s[i + 3..i + 3 + end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        expand(&[], &tree, &mut out);
    }
    for root in ["crate::", "super::", "self::"] {
        for (i, _) in s.match_indices(root) {
            if s[..i].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let tail = &s[i..];
            let end = tail
                .char_indices()
                .find(|&(_, c)| !(is_ident(c) || c == ':'))
                .map_or(tail.len(), |(j, _)| j);
            let path: Vec<String> = tail[..end]
                .split("::")
                .take_while(|p| !p.is_empty())
                .map(str::to_owned)
                .collect();
            if path.len() > 1 {
                out.push(path);
            }
        }
    }
    out
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    let split = |p: &str| -> Vec<String> {
        p.split("::")
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let Some(open) = tree.find('{') else {
        let name = tree.split(" as ").next().unwrap_or(tree);
        out.push([prefix.to_vec(), split(name)].concat());
        return;
    };
    let head = [prefix.to_vec(), split(tree[..open].trim_end_matches(':'))].concat();
    let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
    let body = &tree[open + 1..close];
    let (mut depth, mut start) = (0, 0);
    let mut parts = Vec::new();
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    for part in parts {
        if part.trim() == "self" {
            out.push(head.clone());
        } else {
            expand(&head, part, out);
        }
    }
}

/// The module a path names, as the longest prefix that is a file.
fn resolve<'m>(
    mods: &'m BTreeMap<Module, String>,
    from: &Module,
    path: &[String],
) -> Option<&'m Module> {
    let target: Module = match path.first().map(String::as_str) {
        Some("crate") => path[1..].to_vec(),
        Some("self" | "super") => {
            let mut base = from.clone();
            let mut rest = path;
            if rest.first().map(String::as_str) == Some("self") {
                rest = &rest[1..];
            }
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
            [base, rest.to_vec()].concat()
        }
        _ => return None,
    };
    (0..=target.len())
        .rev()
        .find_map(|k| mods.get_key_value(&target[..k]).map(|(m, _)| m))
}

/// Tarjan's strongly connected components.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'e> {
        edges: &'e [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}
