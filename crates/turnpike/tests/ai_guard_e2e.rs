//! AI guardrails and answer caches end to end (issue 30 items 5 and 6): the real binary
//! as the gateway and as the provider (`turnpike echo --llm`), a small real HTTP guard
//! service in this test (it refuses prompts about "forbidden-topic"; a second one never
//! answers), and the official Python SDKs (tests/py/ai_guard.py) calling APIs with
//! guards (deny patterns, `max_tokens` cap, PII masking, JSON schema, the external
//! guard failing open and closed) and caches (exact, semantic).

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;

use serde_json::Value;
use support::{start, start_file_gateway, TempDir};

const KEY: &str = "ai-demo-key-123";
const OTHER_KEY: &str = "other-key-456";

/// A guard service on a free port: `{"allow": false}` for texts naming
/// "forbidden-topic", else `{"allow": true}`.
fn guard_service() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind guard");
    let addr = listener.local_addr().expect("guard addr").to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || answer_guard(conn));
        }
    });
    addr
}

fn answer_guard(mut conn: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let (head_end, length) = loop {
        let Ok(n) = conn.read(&mut chunk) else { return };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let Ok(n) = conn.read(&mut chunk) else { return };
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]);
    let verdict = if body.contains("forbidden-topic") {
        r#"{"allow": false, "reason": "off-topic"}"#
    } else {
        r#"{"allow": true}"#
    };
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{verdict}",
        verdict.len()
    );
}

fn config(echo: &str, guard: &str, dead: &str) -> String {
    let api = |name: &str, ai_extra: &str| {
        format!(
            r#"
  - name: {name}
    context: /{name}
    version: v1
    auth: {{ oauth2: false, api_key: true }}
    ai:
      providers: [{{ name: echo, kind: openai, url: "http://{echo}/v1" }}]
      models:
        - {{ name: gpt-4o-mini, provider: echo }}
        - {{ name: claude-sonnet-4-5, provider: echo }}
        - {{ name: text-embedding-3-small, provider: echo }}
{ai_extra}"#
        )
    };
    let names = ["g", "raw", "open", "closed", "sem"];
    let subs: String = names
        .iter()
        .flat_map(|n| {
            ["ai-demo", "other-app"].map(|app| {
                format!("    - {{ api: /{n}/v1, application: {app}, state: ACTIVE, tier: Big }}\n")
            })
        })
        .collect();
    let mut yaml = format!(
        r#"security:
  api_keys:
    - {{ sha256: "07d57a391962697fc4028c9b30c0cba4323664d7636b99ba0c1faa8206b6bcc8", application: ai-demo, subscriber: alice }}
    - {{ sha256: "d478331b7b6bc12865241a1c18ce61d255d3596a95c2225ed2e685145b139d44", application: other-app, subscriber: bob }}
  subscriptions:
{subs}
throttling:
  subscription_tiers:
    - name: Big
      quota: {{ requests: 100000, per: minute }}
      tokens: [{{ total: 10000000, per: minute }}]

apis:"#
    );
    yaml += &api(
        "g",
        &format!(
            r#"      guards:
        max_request_bytes: 16KiB
        max_tokens: 500
        deny: ["(?i)ignore (all )?previous instructions"]
        pii: {{ unmask: true }}
        json_schema: true
        external: {{ url: "http://{guard}/check", timeout: 2s }}
      cache: {{ ttl: 60s, max_size: 1MiB }}
"#
        ),
    );
    yaml += &api("raw", "      guards: { pii: { unmask: false } }\n");
    yaml += &api(
        "open",
        &format!("      guards: {{ external: {{ url: \"http://{dead}/\", timeout: 300ms, fail_open: true }} }}\n"),
    );
    yaml += &api(
        "closed",
        &format!("      guards: {{ external: {{ url: \"http://{dead}/\", timeout: 300ms }} }}\n"),
    );
    yaml += &api(
        "sem",
        "      cache: { semantic: { embedding_model: text-embedding-3-small, threshold: 0.9 } }\n",
    );
    yaml
}

fn run() -> Value {
    let dir = TempDir::new();
    let (_echo, echo) = start(
        &["echo", "--llm", "--port", "0"],
        "echo listening on http://",
    );
    let guard = guard_service();
    // Accepts connections (the kernel's backlog) and never answers.
    let dead = TcpListener::bind("127.0.0.1:0").expect("bind dead guard");
    let dead_addr = dead.local_addr().expect("addr").to_string();
    let cfg = dir.path().join("ai.yaml");
    std::fs::write(&cfg, config(&echo, &guard, &dead_addr)).expect("write config");
    let (_gw, gw) = start_file_gateway(&cfg, dir.path(), &[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/ai_guard.py");
    let out = Command::new("python3")
        .args([
            script,
            &format!("http://{gw}"),
            &format!("http://{echo}"),
            KEY,
            OTHER_KEY,
        ])
        .output()
        .expect("python3 runs");
    drop(dead);
    assert!(
        out.status.success(),
        "ai_guard.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script's JSON")
}

fn openai_code(v: &Value) -> &str {
    v["body"]["code"].as_str().unwrap_or_default()
}

#[test]
fn guards_and_caches_through_the_official_sdks() {
    let v = run();
    refusals(&v);
    pii(&v);
    external_and_schema(&v);
    caches(&v);
}

fn refusals(v: &Value) {
    let d = &v["deny_openai"];
    assert_eq!(d["status"], 400, "{d}");
    assert_eq!(
        openai_code(d),
        "ai_prompt_denied",
        "OpenAI's shape, its code: {d}"
    );
    assert_eq!(d["class"], "BadRequestError", "{d}");
    let d = &v["deny_anthropic"];
    assert_eq!(d["status"], 400, "{d}");
    assert_eq!(d["body"]["type"], "error", "Anthropic's shape: {d}");
    assert_eq!(d["body"]["error"]["type"], "invalid_request_error", "{d}");
    assert!(
        d["body"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("pattern")),
        "{d}"
    );
    let m = &v["max_tokens"];
    assert_eq!(m["status"], 400, "{m}");
    assert_eq!(openai_code(m), "ai_max_tokens_exceeded", "{m}");
}

fn pii(v: &Value) {
    let w = &v["pii_whole"];
    let saw = w["provider_saw"].as_str().unwrap_or_default();
    assert!(
        saw.contains("<EMAIL_1>") && saw.contains("<PHONE_1>"),
        "{w}"
    );
    assert!(
        !saw.contains("bob@example.com") && !saw.contains("555"),
        "{w}"
    );
    let answer = w["answer"].as_str().unwrap_or_default();
    assert!(answer.contains("bob@example.com"), "put back: {w}");
    assert!(answer.contains("+1 415 555 0134"), "put back: {w}");

    let r = &v["pii_raw"];
    assert!(
        r["answer"]
            .as_str()
            .is_some_and(|a| a.contains("<EMAIL_1>")),
        "{r}"
    );

    let s = &v["pii_stream"];
    let saw = s["provider_saw"].as_str().unwrap_or_default();
    assert!(saw.contains("<EMAIL_1>") && saw.contains("<CARD_1>"), "{s}");
    assert!(!saw.contains("alice.smith"), "{s}");
    let answer = s["answer"].as_str().unwrap_or_default();
    assert!(
        answer.contains("alice.smith@example.org") && answer.contains("4111 1111 1111 1111"),
        "{s}"
    );
    assert!(
        s["pieces"].as_array().is_some_and(|p| p.len() > 3),
        "streamed: {s}"
    );

    let a = &v["pii_stream_anthropic"];
    let saw = a["provider_saw"].as_str().unwrap_or_default();
    assert!(saw.contains("<IBAN_1>") && saw.contains("<EMAIL_1>"), "{a}");
    let answer = a["answer"].as_str().unwrap_or_default();
    assert!(
        answer.contains("DE89370400440532013000") && answer.contains("dan@example.net"),
        "{a}"
    );
}

fn external_and_schema(v: &Value) {
    let e = &v["external_refused"];
    assert_eq!(e["status"], 400, "{e}");
    assert_eq!(openai_code(e), "ai_guard_refused", "{e}");
    assert!(
        e["body"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("off-topic")),
        "{e}"
    );
    assert_eq!(v["external_allowed"]["status"], 200, "{v}");
    assert_eq!(v["fail_open"]["status"], 200, "fail open: {v}");
    let c = &v["fail_closed"];
    assert_eq!(c["status"], 503, "{c}");
    assert_eq!(openai_code(c), "ai_guard_unavailable", "{c}");

    let s = &v["schema_bad"];
    assert_eq!(s["status"], 502, "{s}");
    assert_eq!(openai_code(s), "ai_answer_invalid", "{s}");
    assert_eq!(v["schema_good"]["status"], 200, "{v}");
}

fn caches(v: &Value) {
    let e = &v["exact"];
    assert_eq!(e["x_cache"][0], "MISS", "{e}");
    assert_eq!(e["x_cache"][1], "HIT", "{e}");
    assert_eq!(e["x_cache"][2], "MISS", "another application: {e}");
    assert!(
        e["x_cache"][3].is_null(),
        "temperature 0.7 is not cached: {e}"
    );
    assert_eq!(e["same_answer"], true, "{e}");
    assert_eq!(
        e["calls_for_two"], 1,
        "one provider call for two requests: {e}"
    );
    assert_eq!(
        e["calls_after"], 3,
        "other app, warm temperature, stream: {e}"
    );

    let p = &v["exact_pii"];
    assert_eq!(p["x_cache"][1], "HIT", "{p}");
    assert!(
        p["answers"][1]
            .as_str()
            .is_some_and(|a| a.contains("carol@example.com")),
        "{p}"
    );

    let s = &v["semantic"];
    let (similar, dissimilar) = (s["similar"].as_f64(), s["dissimilar"].as_f64());
    assert!(
        similar >= Some(0.9) && dissimilar < Some(0.9),
        "the echo's vectors: {s}"
    );
    assert_eq!(s["x_cache"][0], "MISS", "{s}");
    assert_eq!(
        s["x_cache"][1], "HIT",
        "a paraphrase above the threshold: {s}"
    );
    assert_eq!(s["x_cache"][2], "MISS", "below the threshold: {s}");
    assert_eq!(
        s["answers"][1], s["answers"][0],
        "the first answer, reused: {s}"
    );
    assert_eq!(
        s["provider_calls"], 5,
        "2 misses x (embed + chat) + 1 embed: {s}"
    );
}
