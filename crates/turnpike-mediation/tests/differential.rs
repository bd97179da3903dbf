//! Differential test: every program of the corpus, run by turnpike-mediation on every
//! input, gives the same JSON value as the system `jq` binary (installed by
//! scripts/install-test-deps.sh). Values are compared parsed (numbers by value), since jq 1.6
//! writes `1.0` as `1` and jaq keeps `1.0`.

use std::io::Write;
use std::process::{Command, Stdio};

use turnpike_mediation::spec::{compile_transform, Context, Side};
use turnpike_mediation::Inputs;
use turnpike_model::mediation::{BodySpec, TransformSpec};

/// Programs whose meaning jq 1.6 and jaq share (the body-rewriting kind a gateway runs).
const PROGRAMS: &[&str] = &[
    ".",
    "{order: .}",
    "{id: .id, items: [.items[]? | {sku, qty: (.qty // 1)}]}",
    ".items |= map(select(.qty > 1))",
    "del(.secret) | .meta = ((.meta // {}) + {seen: true})",
    "to_entries | map({(.key | ascii_upcase): .value}) | add",
    "[paths] | length",
    "walk(if type == \"string\" then ascii_downcase else . end)",
    "{count: (.items | length), total: ([.items[]?.qty] | add)}",
    "if .id then {found: .id} else {missing: true} end",
    "[.items[]? | .sku] | sort | unique",
    ".tags // [] | map(tostring) | join(\",\")",
    "{ids: [.. | objects | select(has(\"id\")) | .id]}",
    "reduce (.items // [])[] as $i (0; . + ($i.qty // 0))",
    "with_entries(select(.value != null))",
    "[.items[]? | select(.sku | test(\"^a\"))]",
    "{first: .items[0]?, last: .items[-1]?}",
    ".name | split(\" \") | {given: .[0], family: .[-1]}",
    "keys",
    "[.[]?] | length",
    "{s: (.name | tostring), n: (.id | tostring | tonumber?)}",
    "tojson | fromjson",
    "{a: [.items[]? | .qty] | min, b: [.items[]? | .qty] | max}",
    "(.items // []) | group_by(.sku) | map({sku: .[0].sku, n: length})",
    "[limit(2; .items[]?)]",
    "{u: .name | @base64, d: (.name | @base64 | @base64d)}",
    "[splits(\", *\")?]",
    "{nested: {deep: {er: .}}} | .nested.deep.er.id",
    "any(.items[]?; .qty > 2), all(.items[]?; .qty > 0) | not",
];

/// The type cases of the issue: one-element arrays, strings holding JSON, empty arrays,
/// numbers, unicode, nulls.
const INPUTS: &[&str] = &[
    r#"{"id":7,"name":"Ada Lovelace","items":[{"sku":"a1","qty":2}],"secret":"x","tags":["t"]}"#,
    r#"{"id":null,"name":"{\"not\":\"json\"}","items":[],"tags":[],"meta":{}}"#,
    r#"{"id":1.5,"name":"Zoë 日本 🚀","items":[{"sku":"b","qty":1},{"sku":"a2","qty":3},{"sku":"b","qty":5}],"tags":[1,2.5,true]}"#,
    r#"{"id":-0,"name":"","items":[{"sku":"a","qty":1e3}],"extra":[[1],[[]],{}]}"#,
];

fn jq_available() -> bool {
    Command::new("jq").arg("--version").output().is_ok()
}

fn system_jq(program: &str, input: &str) -> Option<serde_json::Value> {
    let mut child = Command::new("jq")
        .args(["-c", program])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("jq starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("writes");
    let out = child.wait_with_output().expect("jq runs");
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).expect("utf8");
    let lines: Vec<&str> = text.lines().collect();
    // One output only (the gateway refuses zero or several).
    match lines.as_slice() {
        [one] => Some(serde_json::from_str(one).expect("jq writes JSON")),
        _ => None,
    }
}

fn ours(program: &str, input: &str) -> Option<serde_json::Value> {
    let spec = TransformSpec {
        body: Some(BodySpec {
            jq: Some(program.to_owned()),
            ..BodySpec::default()
        }),
        ..TransformSpec::default()
    };
    let cx = Context {
        name: "diff".into(),
        side: Side::Request,
        deadline: None,
        max_input: None,
        max_output: None,
        path_params: &[],
    };
    let t = compile_transform(&spec, &cx).unwrap_or_else(|e| panic!("{program}: {e:?}"));
    let body = t.body.expect("body step");
    let out = body.run(input.as_bytes(), &Inputs::default()).ok()?;
    Some(serde_json::from_slice(&out).expect("we write JSON"))
}

/// Equal as JSON values, numbers compared as doubles.
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) => x.as_f64() == y.as_f64(),
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Object(x), Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn the_corpus_agrees_with_the_jq_binary() {
    assert!(
        jq_available(),
        "the `jq` binary is missing: run scripts/install-test-deps.sh"
    );
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for program in PROGRAMS {
        for input in INPUTS {
            let want = system_jq(program, input);
            let got = ours(program, input);
            match (&want, &got) {
                (Some(w), Some(g)) if same(w, g) => compared += 1,
                (None, None) => compared += 1,
                _ => mismatches.push(format!(
                    "{program} on {input}:\n  jq:   {want:?}\n  ours: {got:?}"
                )),
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert_eq!(compared, PROGRAMS.len() * INPUTS.len());
}
