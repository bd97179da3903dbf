//! A GraphQL API as an MCP server, end to end: the real binary in front of
//! `turnpike echo --graphql` (a GraphQL back end that validates each query against the
//! Star Wars schema and answers data shaped to it), driven by the official MCP Python
//! SDK (tests/py/mcp_calls.py). Asserted: the Query and Mutation fields are tools with
//! JSON Schema inputs (an enum, an input object with its required field), queries
//! read-only; calls reach the back end as valid GraphQL documents with the arguments as
//! variables (the generated selection two levels deep, a publisher's selection as
//! written); the API's depth limit applies to a tool's document (a too deep selection is
//! a tool error, from the GraphQL policy's refusal); a bad enum value is `-32602`.

mod support;

use std::process::Command;

use serde_json::{json, Value};
use support::TempDir;

const SCHEMA: &str = include_str!("../../../bench/graphql/starwars/starwars-schema.graphql");

fn config(backend: &str) -> String {
    let schema = Value::String(SCHEMA.to_owned()).to_string();
    format!(
        r#"
apis:
  - name: starwars
    context: /starwars
    version: v1
    endpoints: ["http://{backend}"]
    resources:
      - {{ path: "/*", methods: [POST] }}
    graphql:
      limits: {{ max_depth: 4 }}
      schema: {schema}
    mcp:
      tools:
        - {{ operation: hero }}
        - {{ operation: createReview }}
        - {{ operation: human, selection: "{{ name height }}" }}
        - {{ operation: droid, name: deepDroid, selection: "{{ friends {{ friends {{ friends {{ friends {{ name }} }} }} }} }}" }}
"#
    )
}

#[test]
fn graphql_fields_are_tools_whose_calls_are_queries_through_the_chain() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(
        &["echo", "--port", "0", "--graphql"],
        "echo listening on http://",
    );
    let file = dir.path().join("graphql.yaml");
    std::fs::write(&file, config(&echo)).expect("write");
    let (_gw, gw) = support::start_file_gateway(&file, &dir.path().join("data"), &[]);
    let calls = json!([
        ["hero", {"episode": "JEDI"}],
        ["createReview", {"episode": "EMPIRE", "review": {"stars": 5, "commentary": "fine"}}],
        ["human", {"id": "1000"}],
        ["deepDroid", {"id": "2001"}],
        ["hero", {"episode": "PHANTOM"}]
    ]);
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_calls.py"
        ))
        .arg(format!("http://{gw}/mcp/starwars/v1"))
        .arg(calls.to_string())
        .output()
        .expect("python3 runs (scripts/install-test-deps.sh installs the mcp SDK)");
    assert!(
        out.status.success(),
        "mcp_calls.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");

    let tools = &r["tools"];
    assert_eq!(tools.as_object().map(|t| t.len()), Some(4), "{tools}");
    let episode = &tools["hero"]["schema"]["properties"]["episode"];
    assert_eq!(
        episode["enum"],
        json!(["NEWHOPE", "EMPIRE", "JEDI", "SITH"])
    );
    assert_eq!(tools["hero"]["read_only"], true);
    let review = &tools["createReview"]["schema"];
    assert_eq!(review["required"], json!(["review"]));
    assert_eq!(review["properties"]["review"]["required"], json!(["stars"]));
    assert_eq!(tools["createReview"]["read_only"], false);

    let calls = r["calls"].as_array().expect("calls");
    // The generated selection: the hero's own fields and its friends' (two levels).
    let hero = &calls[0]["structured"]["data"]["hero"];
    assert_eq!(calls[0]["is_error"], false, "{}", calls[0]);
    assert!(hero["name"].is_string(), "{hero}");
    let friend = &hero["friends"][0];
    assert!(friend["name"].is_string(), "{hero}");
    assert!(friend.get("friends").is_none(), "two levels only: {hero}");
    // A mutation with an input object as a variable.
    let created = &calls[1]["structured"]["data"]["createReview"];
    assert_eq!(calls[1]["is_error"], false, "{}", calls[1]);
    assert!(created["stars"].is_i64(), "{created}");
    // The publisher's selection, as written (serde_json's map sorts the keys).
    let human = &calls[2]["structured"]["data"]["human"];
    let keys: Vec<&String> = human
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["height", "name"], "{human}");
    // The API's max_depth refuses the deep selection: a tool error, not the back end's.
    assert_eq!(calls[3]["is_error"], true, "{}", calls[3]);
    assert!(
        calls[3]["text"].as_str().unwrap_or("").contains("depth"),
        "{}",
        calls[3]
    );
    // An enum value the schema does not have: Invalid params before any request.
    assert_eq!(calls[4]["error"], -32602, "{}", calls[4]);
}
