//! The crate dependency rules of docs/ARCHITECTURE.md ("Crates" table, column "must not
//! depend on") hold: read from the document, checked against `cargo metadata`'s resolved
//! graph (normal dependencies, followed transitively). In that column, each backquoted
//! name is a crate the row's crate must not reach; `turnpike-*` stands for every other
//! workspace crate; in a `;`-separated part, names after `except` are allowed; text from
//! the first `(` on explains and is not read.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// crate -> the names it must not reach, from the document's table.
fn rules(doc: &str, workspace: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let table = doc
        .split("## Crates")
        .nth(1)
        .expect("docs/ARCHITECTURE.md has a \"## Crates\" section");
    for line in table.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(name), Some(rule)) = (cells.get(1), cells.get(3)) else {
            continue;
        };
        let Some(name) = name.strip_prefix('`').and_then(|n| n.strip_suffix('`')) else {
            continue; // the header and separator rows
        };
        let rule = rule.split('(').next().unwrap_or("");
        let names = |s: &str| -> Vec<String> {
            s.split('`').skip(1).step_by(2).map(str::to_owned).collect()
        };
        let mut forbidden = BTreeSet::new();
        // `a; b except c; d`: an exception applies within its `;`-separated part.
        for part in rule.split(';') {
            let (forbid, allow) = part.split_once("except").unwrap_or((part, ""));
            let allowed = names(allow);
            for n in names(forbid) {
                let expanded: Vec<String> = if n == "turnpike-*" {
                    workspace.iter().filter(|w| *w != name).cloned().collect()
                } else {
                    vec![n]
                };
                forbidden.extend(expanded.into_iter().filter(|n| !allowed.contains(n)));
            }
        }
        out.insert(name.to_owned(), forbidden);
    }
    out
}

/// The resolved graph: package name -> names of its normal dependencies; and the
/// workspace's members.
fn graph() -> (HashMap<String, Vec<String>>, BTreeSet<String>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let name_of: HashMap<&str, &str> = m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let workspace: BTreeSet<String> = m["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|id| name_of.get(id.as_str()?).map(|n| n.to_string()))
        .collect();
    let mut deps = HashMap::new();
    for node in m["resolve"]["nodes"].as_array().expect("resolve") {
        let Some(name) = node["id"].as_str().and_then(|id| name_of.get(id)) else {
            continue;
        };
        let normal: Vec<String> = node["deps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k["kind"].is_null()))
            })
            .filter_map(|d| name_of.get(d["pkg"].as_str()?).map(|n| n.to_string()))
            .collect();
        deps.entry(name.to_string())
            .or_insert_with(Vec::new)
            .extend(normal);
    }
    (deps, workspace)
}

/// Every crate `from` reaches, with one path to each (for the failure message).
fn reach(deps: &HashMap<String, Vec<String>>, from: &str) -> BTreeMap<String, String> {
    let mut seen = BTreeMap::new();
    let mut stack = vec![(from.to_string(), from.to_string())];
    while let Some((at, path)) = stack.pop() {
        for d in deps.get(&at).into_iter().flatten() {
            if !seen.contains_key(d) {
                let p = format!("{path} -> {d}");
                seen.insert(d.clone(), p.clone());
                stack.push((d.clone(), p));
            }
        }
    }
    seen
}

#[test]
fn crates_depend_only_as_the_architecture_allows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("the doc");
    let (deps, workspace) = graph();
    let rules = rules(&doc, &workspace);
    // Every workspace crate has a row, and every row names a workspace crate.
    let named: BTreeSet<String> = rules.keys().cloned().collect();
    assert_eq!(
        named, workspace,
        "the Crates table and the workspace differ"
    );
    let mut broken = Vec::new();
    for (krate, forbidden) in &rules {
        let reached = reach(&deps, krate);
        for f in forbidden {
            if let Some(path) = reached.get(f) {
                broken.push(format!("{krate} must not depend on {f}: {path}"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // The rules say something: the leaf crates are kept free of IO and of the others.
    assert!(rules["turnpike-model"].contains("tokio"));
    assert!(rules["turnpike-gateway"].contains("turnpike-store"));
    // The pipeline kernel stays a kernel: the validators and the throttler depend on it,
    // never the other way round, and no IO client comes in through it.
    let kernel = &rules["turnpike-policy"];
    for f in [
        "turnpike-auth",
        "turnpike-throttle",
        "turnpike-config",
        "redis",
        "hyper",
    ] {
        assert!(
            kernel.contains(f),
            "the turnpike-policy row must forbid {f}"
        );
    }
}

#[test]
fn the_rule_reader_understands_wildcards_and_exceptions() {
    let ws: BTreeSet<String> = ["turnpike-a", "turnpike-b", "turnpike-c"]
        .map(String::from)
        .into();
    let doc = "## Crates\n\n| crate | owns | must not depend on |\n|---|---|---|\n\
               | `turnpike-a` | x | `turnpike-*` except `turnpike-b`; `tokio` (reads `x`) |\n\
               | `turnpike-b` | y | `turnpike-c` |\n\nafter\n";
    let r = rules(doc, &ws);
    assert_eq!(
        r["turnpike-a"],
        ["tokio", "turnpike-c"].map(String::from).into()
    );
    assert_eq!(r["turnpike-b"], ["turnpike-c"].map(String::from).into());
    let doc = doc.replace("`turnpike-*` except `turnpike-b`; `tokio`", "`tokio`");
    assert_eq!(
        rules(&doc, &ws)["turnpike-a"],
        ["tokio"].map(String::from).into()
    );
}

/// The files under `dir` (recursively) whose Rust source implements `Policy` or
/// `PolicyKind`, as paths relative to `dir`.
fn policy_impls(dir: &Path, root: &Path, out: &mut BTreeSet<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            policy_impls(&path, root, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let implements = text.lines().map(str::trim_start).any(|l| {
            l.starts_with("impl") && (l.contains("Policy for ") || l.contains("PolicyKind for "))
        });
        if implements {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.insert(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// turnpike-config compiles chains; every kind's `impl Policy`/`impl PolicyKind` lives in
/// the kind's own crate (docs/ARCHITECTURE.md, "Adding a policy kind").
#[test]
fn config_implements_no_policy_kind() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../turnpike-config/src");
    let mut found = BTreeSet::new();
    policy_impls(&src, &src, &mut found);
    assert!(
        found.is_empty(),
        "turnpike-config implements Policy/PolicyKind in {found:?}: a kind's `impl` lives in \
         its own crate (docs/ARCHITECTURE.md, \"Adding a policy kind\")"
    );
}
