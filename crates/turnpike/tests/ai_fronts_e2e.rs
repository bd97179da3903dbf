//! OpenAI's Responses API (`POST /responses`) and embeddings from Gemini and Bedrock
//! (docs/ai-gateway.md), end to end. Responses: the real
//! binary as the gateway and as the provider (`turnpike echo --llm`, playing an OpenAI,
//! an Anthropic, a Gemini and a Bedrock provider), driven by the official openai Python
//! SDK's `client.responses.create` (tests/py/ai_responses.py): for each provider kind a
//! whole call (instructions, string input, `max_output_tokens`), a streamed one parsed
//! by the SDK event by event, a function call and its output sent back as input
//! items; what the provider was sent (a chat request in its own API's shape); the
//! usage in the Responses names; `previous_response_id` and built-in tools refused 400.
//! Embeddings: the SDK's `client.embeddings.create` (base64 vectors, its default, and
//! floats) for models on Gemini (`:embedContent`, `:batchEmbedContents`) and Bedrock
//! (`InvokeModel` of Titan Text Embeddings v2 and Cohere Embed), the vectors the
//! provider made, and what it was sent (tests/py/ai_embeddings.py).

mod support;

use std::process::Command;

use serde_json::{json, Value};
use support::{start, start_file_gateway, TempDir};

const KEY: &str = "ai-demo-key-123";
const KEY_SHA: &str = "07d57a391962697fc4028c9b30c0cba4323664d7636b99ba0c1faa8206b6bcc8";
const MODELS: [&str; 4] = [
    "gpt-4o-mini",
    "claude-haiku",
    "gemini-2.0-flash",
    "bedrock-haiku",
];

fn config(echo: &str, dir: &std::path::Path) -> String {
    let secret = dir.join("aws.secret");
    std::fs::write(&secret, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY").expect("write secret");
    let key_id = dir.join("aws.id");
    std::fs::write(&key_id, "AKIDEXAMPLE").expect("write key id");
    let (secret, key_id) = (secret.display(), key_id.display());
    format!(
        r#"
security:
  api_keys:
    - {{ sha256: "{KEY_SHA}", application: app, subscriber: alice }}
  subscriptions:
    - {{ api: /ai/v1, application: app, state: ACTIVE, tier: Plenty }}
throttling:
  subscription_tiers:
    - {{ name: Plenty, quota: {{ requests: 100000, per: minute }} }}
apis:
  - name: ai
    context: /ai
    version: v1
    auth: {{ oauth2: false, api_key: true }}
    ai:
      providers:
        - {{ name: oa, kind: openai, url: "http://{echo}/v1" }}
        - {{ name: an, kind: anthropic, url: "http://{echo}/v1" }}
        - {{ name: gem, kind: gemini, url: "http://{echo}" }}
        - {{ name: bed, kind: bedrock, url: "http://{echo}", region: us-east-1,
             key_id: "file:{key_id}", key: "file:{secret}" }}
      models:
        - {{ name: gpt-4o-mini, provider: oa }}
        - {{ name: claude-haiku, provider: an, model: claude-haiku-4-5 }}
        - {{ name: gemini-2.0-flash, provider: gem }}
        - {{ name: bedrock-haiku, provider: bed, model: "anthropic.claude-3-haiku-20240307-v1:0" }}
        - {{ name: gemini-embed, provider: gem, model: text-embedding-004 }}
        - {{ name: titan-embed, provider: bed, model: "amazon.titan-embed-text-v2:0" }}
        - {{ name: cohere-embed, provider: bed, model: cohere.embed-english-v3 }}
        - {{ name: nova-embed, provider: bed, model: "amazon.nova-2-multimodal-embeddings-v1:0" }}
"#
    )
}

fn check(model: &str, v: &Value) {
    let w = &v["whole"];
    assert_eq!(w["object"], "response", "{model}: {w}");
    assert_eq!(w["status"], "completed", "{model}: {w}");
    assert!(
        w["id"].as_str().is_some_and(|i| i.starts_with("resp_")),
        "{model}: {w}"
    );
    assert!(
        w["text"].as_str().is_some_and(|t| t.contains("Say hello")),
        "{model}: {w}"
    );
    assert_eq!(w["instructions"], "Be brief.", "{model}: {w}");
    let u = &w["usage"];
    assert!(
        u["input"].as_u64() > Some(0) && u["output"].as_u64() > Some(0),
        "{model}: {u}"
    );
    assert_eq!(
        u["total"].as_u64(),
        Some(u["input"].as_u64().unwrap_or(0) + u["output"].as_u64().unwrap_or(0)),
        "{model}: {u}"
    );

    let s = &v["stream"];
    let kinds: Vec<&str> = s["kinds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(kinds.first(), Some(&"response.created"), "{model}: {s}");
    assert_eq!(kinds.last(), Some(&"response.completed"), "{model}: {s}");
    for k in [
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ] {
        assert!(kinds.contains(&k), "{model}: {k} missing: {s}");
    }
    let deltas = kinds
        .iter()
        .filter(|k| **k == "response.output_text.delta")
        .count();
    assert!(deltas >= 2, "{model}: the text came in deltas: {s}");
    assert!(
        s["text"].as_str().is_some_and(|t| !t.is_empty()) && s["text"] == s["final_text"],
        "{model}: {s}"
    );
    assert!(s["usage"]["output"].as_u64() > Some(0), "{model}: {s}");

    let c = &v["tool_call"][0];
    assert_eq!(c["name"], "get_weather", "{model}: {v}");
    let args: Value =
        serde_json::from_str(c["arguments"].as_str().unwrap_or("")).expect("JSON arguments");
    assert!(args["city"].is_string(), "{model}: {c}");
    assert!(
        v["tool_result"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("snow, -3 C")),
        "{model}: the function's output reached the provider: {v}"
    );
}

/// The echo playing every provider, and a gateway in front of it: (echo, gateway).
fn setup(dir: &TempDir) -> (support::Proc, String, support::Proc, String) {
    let (echo_proc, echo) = start(
        &[
            "echo",
            "--llm",
            "--llm-tokens-per-second",
            "500",
            "--port",
            "0",
        ],
        "echo listening on http://",
    );
    let cfg = dir.path().join("ai.yaml");
    std::fs::write(&cfg, config(&echo, dir.path())).expect("write config");
    let (gw_proc, gw) = start_file_gateway(&cfg, dir.path(), &[]);
    (echo_proc, echo, gw_proc, gw)
}

/// Runs a script of tests/py with the gateway's URL, the key, the echo's URL and `args`;
/// its JSON.
fn run(script: &str, gw: &str, echo: &str, args: &[&str]) -> Value {
    let script = format!("{}/tests/py/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(&script)
        .args([
            format!("http://{gw}"),
            KEY.to_owned(),
            format!("http://{echo}"),
        ])
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{script} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script's JSON")
}

#[test]
fn the_openai_sdk_responses_api_through_every_provider_kind() {
    let dir = TempDir::new();
    let (_echo, echo, _gw, gw) = setup(&dir);
    let v = run("ai_responses.py", &gw, &echo, &MODELS);
    for model in MODELS {
        check(model, &v[model]);
    }

    // Each provider was sent a chat call in its own API's shape.
    let oa = &v["gpt-4o-mini"]["whole_sent"];
    assert_eq!(oa["path"], "/v1/chat/completions", "{oa}");
    assert_eq!(oa["body"]["messages"][0]["role"], "system", "{oa}");
    assert_eq!(oa["body"]["max_completion_tokens"], 32, "{oa}");
    assert_eq!(oa["body"]["temperature"], 0.5, "{oa}");
    let an = &v["claude-haiku"]["whole_sent"];
    assert_eq!(an["path"], "/v1/messages", "{an}");
    assert_eq!(an["body"]["system"], "Be brief.", "{an}");
    assert_eq!(an["body"]["max_tokens"], 32, "{an}");
    let gem = &v["gemini-2.0-flash"]["tool_result_sent"];
    assert!(
        gem["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(":generateContent")),
        "{gem}"
    );
    let fr = &gem["body"]["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(fr["name"], "get_weather", "{fr}");
    let bed = &v["bedrock-haiku"]["whole_sent"];
    assert!(
        bed["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("/converse")),
        "{bed}"
    );

    let r = &v["refused"];
    for what in ["previous_response_id", "web_search"] {
        assert_eq!(r[what]["status"], 400, "{what}: {r}");
    }
    let msg = r["previous_response_id"]["body"]["message"].to_string();
    assert!(msg.contains("previous_response_id"), "{msg}");
    let msg = r["web_search"]["body"]["message"].to_string();
    assert!(msg.contains("built-in tools"), "{msg}");
}

#[test]
fn gemini_and_bedrock_embeddings_through_the_openai_sdk() {
    let dir = TempDir::new();
    let (_echo, echo, _gw, gw) = setup(&dir);
    let v = run("ai_embeddings.py", &gw, &echo, &[]);
    let g = &v["gemini-embed"];
    assert_eq!(g["one"]["dims"], json!([768]), "{g}");
    assert_eq!(
        g["one"]["sent"]["path"], "/models/text-embedding-004:embedContent",
        "{g}"
    );
    assert_eq!(
        g["one"]["sent"]["body"]["content"]["parts"][0]["text"], "The capital of France",
        "{g}"
    );
    assert_eq!(g["batch"]["dims"], json!([768, 768]), "{g}");
    assert_eq!(
        g["batch"]["sent"]["path"], "/models/text-embedding-004:batchEmbedContents",
        "{g}"
    );
    assert_eq!(g["short"]["dims"], json!([64]), "outputDimensionality: {g}");
    let t = &v["titan-embed"];
    assert_eq!(t["one"]["dims"], json!([1024]), "{t}");
    assert_eq!(
        t["one"]["sent"]["path"], "/model/amazon.titan-embed-text-v2%3A0/invoke",
        "{t}"
    );
    assert_eq!(
        t["one"]["sent"]["body"],
        json!({"inputText": "The capital of France"}),
        "{t}"
    );
    assert_eq!(t["short"]["dims"], json!([256]), "{t}");
    // Titan's own count (a few tokens), not the gateway's estimate of the whole body.
    assert!(t["one"]["prompt_tokens"].as_u64() < Some(8), "{t}");
    assert!(
        t["one"]["auth"]
            .as_str()
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")),
        "signed: {t}"
    );
    assert_eq!(t["batch"]["status"], 400, "Titan takes one text: {t}");
    let c = &v["cohere-embed"];
    assert_eq!(c["batch"]["dims"], json!([1024, 1024]), "{c}");
    assert_eq!(
        c["batch"]["sent"]["body"]["texts"],
        json!(["The capital of France", "Bananas are yellow"]),
        "{c}"
    );
    for (model, m) in [("gemini-embed", g), ("titan-embed", t), ("cohere-embed", c)] {
        // The same text gives the same vector whether sent alone or in a batch, as
        // floats or base64; different texts differ.
        assert!(
            m["same"].as_f64().is_some_and(|s| s > 0.9999),
            "{model}: {m}"
        );
        assert!(
            m["different"].as_f64().is_some_and(|s| s < 0.9),
            "{model}: {m}"
        );
        assert!(m["one"]["prompt_tokens"].as_u64() > Some(0), "{model}: {m}");
    }
    assert_eq!(v["nova-embed"]["one"]["status"], 400, "{v}");
    let msg = v["nova-embed"]["one"]["body"]["message"].to_string();
    assert!(
        msg.contains("Titan Text Embeddings and Cohere Embed"),
        "{msg}"
    );
}
