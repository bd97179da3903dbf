//! The control plane's command-line client through the real binary against a real
//! `turnpike control-plane` (SQLite) on port 0: `turnpike login --password-stdin` prints a
//! token the REST API takes; `turnpike apply --dry-run` of a file naming an unknown policy
//! fails listing the problem; a real run of a file whose second API is bad changes
//! nothing (the first API is not created either).

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{start_env, TempDir, BIN};

const PASSWORD: &str = "cli-e2e-admin-password";

fn control_plane(dir: &Path) -> (support::Proc, String) {
    let db = format!("sqlite://{}", dir.join("turnpike.db").display());
    start_env(
        &[
            "control-plane",
            "--database",
            &db,
            "--port",
            "0",
            "--gateway-token",
            "cli-e2e-token",
        ],
        &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
        "control plane listening on http://",
    )
}

/// `turnpike ARGS` with `stdin` written to its standard input (no password in the
/// environment).
fn turnpike(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("TURNPIKE_PASSWORD")
        .env_remove("TURNPIKE_TOKEN")
        .env("TURNPIKE_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn turnpike");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("turnpike runs")
}

/// `GET` a REST path as admin: (status, body).
fn rest_get(cp: &str, path: &str, bearer: Option<&str>) -> (u16, String) {
    let auth = match bearer {
        Some(t) => vec!["-H".to_owned(), format!("authorization: Bearer {t}")],
        None => vec!["-u".to_owned(), format!("admin:{PASSWORD}")],
    };
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}"])
        .args(&auth)
        .arg(format!("http://{cp}{path}"))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

fn apply(cp: &str, file: &Path, extra: &[&str]) -> Output {
    let cp_url = format!("http://{cp}");
    let mut args = vec![
        "apply",
        "-f",
        file.to_str().expect("utf-8 path"),
        "--control-plane",
        &cp_url,
        "--user",
        "admin",
        "--password",
        PASSWORD,
    ];
    args.extend_from_slice(extra);
    turnpike(&args, "")
}

fn api(name: &str, throttling: Option<&str>) -> String {
    let t = throttling.map_or(String::new(), |t| format!("    throttling: {t}\n"));
    format!(
        "  - name: {name}\n    context: /{name}\n    version: v1\n{t}    \
         endpoints: [\"http://127.0.0.1:9\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
    )
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn login_reads_the_password_from_stdin_and_prints_a_token() {
    let dir = TempDir::new();
    let (_cp, cp) = control_plane(dir.path());
    let cp_url = format!("http://{cp}");
    let args = [
        "login",
        "--control-plane",
        &cp_url,
        "--user",
        "admin",
        "--password-stdin",
    ];
    let out = turnpike(&args, &format!("{PASSWORD}\n"));
    assert!(out.status.success(), "{}", text(&out));
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(!token.is_empty(), "a token is printed");
    let (status, _) = rest_get(&cp, "/api/am/publisher/v1/apis", Some(&token));
    assert_eq!(status, 200, "the REST API takes the printed token");

    let wrong = turnpike(&args, "not-the-password\n");
    assert!(!wrong.status.success(), "a wrong password fails");
    assert!(String::from_utf8_lossy(&wrong.stdout).trim().is_empty());

    // No password anywhere and stdin not a terminal: a clear error, no prompt.
    let none = turnpike(&["login", "--control-plane", &cp_url], "");
    assert!(!none.status.success());
    assert!(
        text(&none).contains("--password-stdin"),
        "the error says how to give one: {}",
        text(&none)
    );
}

#[test]
fn apply_checks_the_whole_file_before_writing_anything() {
    let dir = TempDir::new();
    let (_cp, cp) = control_plane(dir.path());
    let file = dir.path().join("apis.yaml");

    // A dry run of a file naming an unknown policy fails and names it.
    std::fs::write(
        &file,
        format!("apis:\n{}", api("one", Some("NoSuchPolicy"))),
    )
    .expect("write");
    let out = apply(&cp, &file, &["--dry-run"]);
    assert!(
        !out.status.success(),
        "dry run of a bad file: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("apis[0].throttling") && text(&out).contains("NoSuchPolicy"),
        "{}",
        text(&out)
    );

    // The second API is bad: the real run changes nothing, not even the first API.
    std::fs::write(
        &file,
        format!(
            "apis:\n{}{}",
            api("first", None),
            api("second", Some("NoSuchPolicy"))
        ),
    )
    .expect("write");
    let out = apply(&cp, &file, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("nothing was applied"), "{}", text(&out));
    let (status, body) = rest_get(&cp, "/api/am/publisher/v1/apis", None);
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(list["count"], 0, "no API was written: {body}");

    // A control-plane tier the file does not declare is a known name, not a problem.
    let created = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-u"])
        .arg(format!("admin:{PASSWORD}"))
        .args(["-H", "content-type: application/json", "-d"])
        .arg(r#"{"name": "CpOnly", "requestCount": 100, "unitSeconds": 60}"#)
        .arg(format!(
            "http://{cp}/api/am/admin/v1/throttling/policies/advanced"
        ))
        .output()
        .expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&created.stdout), "201");
    std::fs::write(&file, format!("apis:\n{}", api("ok", Some("CpOnly")))).expect("write");
    let out = apply(&cp, &file, &["--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = apply(&cp, &file, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let (_, body) = rest_get(&cp, "/api/am/publisher/v1/apis", None);
    assert!(body.contains("\"context\":\"/ok\""), "{body}");
}
