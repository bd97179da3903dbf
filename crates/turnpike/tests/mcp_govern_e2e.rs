//! Per-tool governance, resources and prompts of an API's MCP server, end to end with the
//! real binary, `turnpike echo` as the back end and the official MCP Python SDK
//! (tests/py/mcp_govern.py). Asserted: `getPet`'s own policy (two calls a minute) is
//! counted per application (the third call of one application is a tool error with
//! `code: throttled`, RateLimit headers and `Retry-After`; another application still has
//! its two); `deletePet`'s own scope refuses a caller without it with 403
//! `insufficient_scope` and lets one with it through; `initialize` advertises prompts
//! and resources; `prompts/get` fills in a template and refuses a missing argument;
//! `resources/read` serves the section's document and its OpenAPI document.

mod support;

use std::process::Command;

use serde_json::{json, Value};
use support::TempDir;

const READER: &str = "reader-key";
const ADMIN: &str = "admin-key";

fn config(echo: &str) -> String {
    format!(
        r##"
security:
  api_keys:
    - sha256: "ec4408df15da46b328f6f3246fa723d0aa6cb0f0a0dd9c4626080ab1b02aa3b2"  # reader-key
      application: reader
      subscriber: alice
      scopes: [pets:read]
    - sha256: "69a5265506c94c77b787a7d7377b7685a0eff82e33920a71e7ee22cd6154953e"  # admin-key
      application: admin-app
      subscriber: bob
      scopes: [pets:read, pets:admin]
  subscriptions:
    - {{ api: /pets/v1, application: reader, state: ACTIVE, tier: Unlimited }}
    - {{ api: /pets/v1, application: admin-app, state: ACTIVE, tier: Unlimited }}
throttling:
  advanced_policies:
    - {{ name: TwoPerMin, default_limit: {{ requests: 2, per: minute }} }}
apis:
  - name: pets
    context: /pets
    version: v1
    endpoints: ["http://{echo}"]
    auth: {{ api_key: true, subscription: true }}
    resources:
      - {{ path: "/pets/{{petId}}", methods: [GET, DELETE], scopes: [pets:read] }}
    mcp:
      tools:
        - {{ operation: getPet, throttling: TwoPerMin }}
        - {{ operation: deletePet, scopes: [pets:admin] }}
      prompts:
        - name: triage
          description: Triage a sick pet.
          arguments:
            - {{ name: petId, required: true }}
            - {{ name: symptom }}
          text: "Look pet {{{{petId}}}} up and triage: {{{{ symptom }}}}."
      documents:
        - {{ name: guide, title: Guide, text: "# Pets\nCall getPet first." }}
      openapi: |
        openapi: 3.0.3
        info: {{ title: Pets, version: v1 }}
        paths:
          /pets/{{petId}}:
            parameters:
              - {{ name: petId, in: path, required: true, schema: {{ type: string }} }}
            get: {{ operationId: getPet, responses: {{ "200": {{ description: the pet }} }} }}
            delete: {{ operationId: deletePet, responses: {{ "204": {{ description: gone }} }} }}
"##
    )
}

#[test]
fn tools_have_their_own_scopes_and_limits_and_the_server_its_prompts_and_resources() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let file = dir.path().join("govern.yaml");
    std::fs::write(&file, config(&echo)).expect("write");
    let (_gw, gw) = support::start_file_gateway(&file, &dir.path().join("data"), &[]);
    let url = format!("http://{gw}/mcp/pets/v1");
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_govern.py"
        ))
        .args([&url, READER, ADMIN])
        .output()
        .expect("python3 runs (scripts/install-test-deps.sh installs the mcp SDK)");
    assert!(
        out.status.success(),
        "mcp_govern.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");

    let reader = &r["reader"];
    assert_eq!(
        reader["capabilities"],
        json!({"tools": true, "prompts": true, "resources": true})
    );
    // The tool's policy: two calls a minute for this application, the third refused as
    // a tool error the agent can read.
    let calls = reader["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["is_error"], false, "{}", calls[0]);
    assert_eq!(calls[1]["is_error"], false, "{}", calls[1]);
    assert_eq!(calls[2]["is_error"], true, "{}", calls[2]);
    let refused = &calls[2]["structured"];
    assert_eq!(refused["code"], "throttled");
    assert_eq!(refused["policy"], "TwoPerMin");
    assert!(
        refused["retry_after"].as_u64().unwrap_or(0) >= 1,
        "{refused}"
    );

    // By hand: the same refusal's HTTP answer carries the throttler's headers.
    let throttled = &r["raw"]["throttled"];
    assert_eq!(throttled["status"], 200);
    assert_eq!(throttled["body"]["result"]["isError"], true);
    assert!(throttled["retry_after"].as_str().is_some(), "{throttled}");
    assert!(
        throttled["ratelimit"]
            .as_str()
            .is_some_and(|v| v.contains("r=0")),
        "{throttled}"
    );
    // The tool's own scope: the operation's (pets:read) is not enough.
    let unscoped = &r["raw"]["unscoped"];
    assert_eq!(unscoped["status"], 403);
    assert_eq!(unscoped["body"]["code"], "insufficient_scope");
    assert!(
        unscoped["www_authenticate"]
            .as_str()
            .is_some_and(|v| v.contains("error=\"insufficient_scope\"")
                && v.contains("scope=\"pets:admin\"")),
        "{unscoped}"
    );

    // Another application counts on its own, and holds the tool's scope.
    let admin = r["admin"]["calls"].as_array().expect("calls");
    assert_eq!(
        admin
            .iter()
            .map(|c| c["is_error"].clone())
            .collect::<Vec<_>>(),
        [false, false, false],
        "{admin:?}"
    );

    // Prompts and resources.
    assert_eq!(
        reader["prompts"],
        json!({"triage": [["petId", true], ["symptom", false]]})
    );
    assert_eq!(reader["prompt_text"], "Look pet 7 up and triage: limping.");
    assert_eq!(reader["prompt_role"], "user");
    assert_eq!(reader["prompt_missing_arg"], -32602);
    assert_eq!(
        reader["resources"],
        json!({"docs://openapi": "application/yaml", "docs://guide": "text/markdown"})
    );
    assert_eq!(reader["guide"], "# Pets\nCall getPet first.");
    assert_eq!(reader["openapi_starts"], "openapi: 3.0.3");
}
