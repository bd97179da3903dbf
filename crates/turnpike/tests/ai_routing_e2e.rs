//! Model routing and fallback end to end (issue 30 item 4, docs/ai-gateway.md "Routing
//! and fallback"): the real binary as the gateway and as two providers (`turnpike echo
//! --llm`, whose model `error-NNN` answers that status), a third provider's port closed,
//! and the official OpenAI Python SDK (tests/py/ai_routing.py). A model with targets
//! weighted 3:1 answers from each in that share; a model whose first target answers 500
//! (whole and streamed) or 429 (falling back to an Anthropic-kind provider, translated)
//! or refuses the connection or does not answer in time is answered by the next; when
//! every target fails, the last failure is the answer; the provider whose port is closed is suspended after two
//! failures (`/metrics`), and once a provider listens there and the suspension is over
//! it answers again; a model the caller's tier does not list is refused 403
//! `model_not_allowed` in OpenAI's error shape; token usage is reported under the
//! provider and model that answered.

mod support;

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{get, start, start_printing, Proc, TempDir};

/// `printf %s ai-routing-key | sha256sum`
const KEY: &str = "ai-routing-key";
const KEY_SHA256: &str = "56d901d56db4962fc0c0251f035f1335f1ee40ee2f928b33c367f5809a99ce18";

fn config(echo1: &str, echo2: &str, down: u16, hang: u16) -> String {
    format!(
        r#"
security:
  api_keys:
    - {{ sha256: "{KEY_SHA256}", application: router, subscriber: alice }}
  subscriptions:
    - {{ api: /ai/v1, application: router, state: ACTIVE, tier: Limited }}
throttling:
  subscription_tiers:
    - name: Limited
      quota: {{ requests: 10000, per: minute }}
      models: [weighted, fail500, fail429, refused, allfail, slow]
apis:
  - name: ai
    context: /ai
    version: v1
    auth: {{ oauth2: false, api_key: true }}
    timeouts: {{ response: 2s }}
    ai:
      providers:
        - {{ name: a, kind: openai, url: "http://{echo1}/v1" }}
        - {{ name: b, kind: openai, url: "http://{echo2}/v1" }}
        - {{ name: flaky500, kind: openai, url: "http://{echo1}/v1" }}
        - {{ name: flaky429, kind: openai, url: "http://{echo2}/v1" }}
        - {{ name: claude, kind: anthropic, url: "http://{echo2}/v1" }}
        - {{ name: down, kind: openai, url: "http://127.0.0.1:{down}/v1" }}
        - {{ name: broken1, kind: openai, url: "http://{echo1}/v1" }}
        - {{ name: broken2, kind: openai, url: "http://{echo2}/v1" }}
        - {{ name: hang, kind: openai, url: "http://127.0.0.1:{hang}/v1" }}
      models:
        - name: weighted
          targets: [{{ provider: a, model: model-a, weight: 3 }}, {{ provider: b, model: model-b, weight: 1 }}]
        - name: fail500
          targets: [{{ provider: flaky500, model: error-500 }}, {{ provider: b, model: model-b, weight: 0 }}]
        - name: fail429
          targets: [{{ provider: flaky429, model: error-429 }}, {{ provider: claude, model: claude-x, weight: 0 }}]
        - name: refused
          targets: [{{ provider: down, model: down-m }}, {{ provider: a, model: model-a, weight: 0 }}]
        - name: allfail
          targets: [{{ provider: broken1, model: error-503 }}, {{ provider: broken2, model: error-502, weight: 0 }}]
        - name: slow
          targets: [{{ provider: hang, model: hang-m }}, {{ provider: b, model: model-b, weight: 0 }}]
        - {{ name: secret, provider: a }}
      fallback: {{ suspend_after: 2, suspend_for: 4s }}
"#
    )
}

/// A port on 127.0.0.1 where nothing listens (bound, then released).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A DB-less gateway on `cfg` with `/metrics` on its own listener: (it, its address,
/// the metrics address).
fn gateway(cfg: &Path, data: &Path) -> (Proc, String, String) {
    let (proc, mut printed) = start_printing(
        &[
            "gateway",
            "--config",
            cfg.to_str().expect("utf-8 path"),
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--metrics-addr",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        &[("TURNPIKE_LOG", "error")],
        &["gateway metrics on http://", "gateway listening on http://"],
    );
    let gw = printed.pop().expect("listening address");
    let metrics = printed.pop().expect("metrics address");
    (proc, gw, metrics.trim_end_matches("/metrics").to_owned())
}

fn sdk(gw: &str, phase: &str) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/ai_routing.py");
    let out = Command::new("python3")
        .args([script, &format!("http://{gw}"), KEY, phase])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "ai_routing.py {phase} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script's JSON")
}

/// The value of the series `name{...provider="p"...}`.
fn provider_series(metrics: &str, name: &str, provider: &str) -> Option<u64> {
    let (_, text) = get(&format!("http://{metrics}/metrics"));
    let label = format!("provider=\"{provider}\"");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&label))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

/// `turnpike echo --llm` on `port`, its first call made (a debug build's tokenizer
/// loads then, which on a busy machine may take longer than the API's response timeout).
fn echo(port: &str) -> (Proc, String) {
    let (p, addr) = start(
        &["echo", "--llm", "--port", port],
        "echo listening on http://",
    );
    let body = r#"{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}"#;
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "60"])
        .args(["-H", "content-type: application/json", "-d", body])
        .arg(format!("http://{addr}/v1/chat/completions"))
        .output()
        .expect("curl runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200",
        "echo --llm answers"
    );
    (p, addr)
}

#[test]
fn models_route_by_weight_fall_back_suspend_and_recover() {
    let dir = TempDir::new();
    let (_e1, echo1) = echo("0");
    let (_e2, echo2) = echo("0");
    let down = closed_port();
    // Takes connections (the kernel's backlog) and never answers.
    let hang = TcpListener::bind("127.0.0.1:0").expect("bind");
    let hang_port = hang.local_addr().expect("addr").port();
    let cfg = dir.path().join("ai.yaml");
    std::fs::write(&cfg, config(&echo1, &echo2, down, hang_port)).expect("write config");
    let (_gw, gw, metrics) = gateway(&cfg, dir.path());

    let v = sdk(&gw, "routes");
    // Smooth weighted round robin over a cycle of 4: exactly 3 of every 4 calls.
    assert_eq!(v["weighted"]["model-a"], 30, "{v}");
    assert_eq!(v["weighted"]["model-b"], 10, "{v}");
    // The answer names the model that answered (the provider's), as Kong and LiteLLM do.
    assert_eq!(v["fail500"]["model"], "model-b", "{v}");
    assert!(
        v["fail500"]["content"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{v}"
    );
    assert_eq!(
        v["fail500_stream"]["models"],
        serde_json::json!(["model-b"]),
        "{v}"
    );
    assert!(
        v["fail500_stream"]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{v}"
    );
    // 429 from an OpenAI provider, answered by an Anthropic one, translated back.
    assert_eq!(v["fail429"]["model"], "claude-x", "{v}");
    assert!(
        v["fail429"]["content"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{v}"
    );
    assert_eq!(
        v["refused"],
        serde_json::json!(["model-a", "model-a", "model-a"]),
        "{v}"
    );
    // No answer within the API's response timeout: the next target answers.
    assert_eq!(v["slow"]["model"], "model-b", "{v}");
    // Every target failed: the last failure is the answer, in OpenAI's shape.
    assert_eq!(v["allfail"]["status"], 502, "{v}");
    assert_eq!(v["not_allowed"]["status"], 403, "{v}");
    assert_eq!(v["not_allowed"]["body"]["code"], "model_not_allowed", "{v}");
    assert!(
        v["not_allowed"]["body"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("secret")),
        "{v}"
    );

    // Two refused connections in a row suspended `down`; the third call went straight
    // to the standby (two failures counted, not three). Read first: the gauge is
    // timed (the suspension lasts 4 s).
    assert_eq!(
        provider_series(&metrics, "turnpike_ai_provider_suspended", "down"),
        Some(1)
    );
    assert_eq!(
        provider_series(
            &metrics,
            "turnpike_ai_provider_consecutive_failures",
            "down"
        ),
        Some(2)
    );
    assert_eq!(
        provider_series(&metrics, "turnpike_ai_provider_suspensions_total", "down"),
        Some(1)
    );
    assert_eq!(
        provider_series(&metrics, "turnpike_ai_provider_suspended", "a"),
        Some(0)
    );

    // Token usage is reported under the provider and model that answered: the
    // Anthropic-kind fallback of `fail429`, never the provider that refused.
    let (_, text) = get(&format!("http://{metrics}/metrics"));
    let answered = |provider: &str, model: &str| {
        let labels =
            format!("gen_ai_provider_name=\"{provider}\",gen_ai_response_model=\"{model}\"");
        text.lines()
            .any(|l| l.starts_with("gen_ai_client_token_usage_count{") && l.contains(&labels))
    };
    assert!(answered("claude", "claude-x"), "{text}");
    assert!(answered("b", "model-b"), "{text}");
    assert!(
        !text.contains("gen_ai_provider_name=\"flaky429\""),
        "{text}"
    );

    // The provider comes up; once the suspension is over its first call is its probe.
    let (_e3, _) = echo(&down.to_string());
    std::thread::sleep(Duration::from_millis(4100));
    let v = sdk(&gw, "recovered");
    assert_eq!(v["refused"]["model"], "down-m", "{v}");
    assert_eq!(
        provider_series(&metrics, "turnpike_ai_provider_suspended", "down"),
        Some(0)
    );
    assert_eq!(
        provider_series(
            &metrics,
            "turnpike_ai_provider_consecutive_failures",
            "down"
        ),
        Some(0)
    );
}
