//! The quickstart's promise (issue 28): every curl line `turnpike up` prints after `Try:`
//! works as pasted into a shell, with the real admin password in it: on a first start
//! that generates the password, and on a start given `TURNPIKE_ADMIN_PASSWORD` (what
//! scripts/quickstart.sh does on every start), even one with shell-special characters.
//! A start given a password that is not the admin's prints no line that would fail.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use support::{Proc, TempDir, BIN};

/// Starts `turnpike up` on free ports in `dir`; returns it with the lines it printed up
/// to the portals' line, which follows the curl lines.
fn up(dir: &TempDir, password: Option<&str>) -> (Proc, Vec<String>) {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "up",
        "--cp-port",
        "0",
        "--http-port",
        "0",
        "--https-port",
        "off",
    ])
    .arg("--data-dir")
    .arg(dir.path())
    .env_remove("TURNPIKE_ADMIN_PASSWORD")
    .env("TURNPIKE_LOG", "warn")
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    if let Some(p) = password {
        cmd.env("TURNPIKE_ADMIN_PASSWORD", p);
    }
    let mut child = cmd.spawn().expect("spawn turnpike up");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    loop {
        let line = lines
            .next()
            .expect("`turnpike up` exited before it was up")
            .expect("read stdout");
        let done = line.trim_start().starts_with("web portals:");
        seen.push(line);
        if done {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    (Proc(child), seen)
}

/// The lines after `Try:` that are curl commands.
fn curl_lines(lines: &[String]) -> Vec<String> {
    let at = lines
        .iter()
        .position(|l| l == "Try:")
        .unwrap_or_else(|| panic!("no `Try:` in {lines:#?}"));
    lines[at + 1..]
        .iter()
        .map(|l| l.trim().to_owned())
        .filter(|l| l.starts_with("curl "))
        .collect()
}

/// Runs a printed line as a user pasting it into sh would; its stdout.
fn paste(line: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", &format!("{line} --fail-with-body")])
        .output()
        .expect("sh runs");
    let body = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "`{line}` failed: {body}");
    body
}

/// Both printed lines answer: the demo echoes, the Publisher API lists the demo API.
fn assert_pasted_lines_work(lines: &[String]) {
    let curls = curl_lines(lines);
    assert_eq!(curls.len(), 2, "{lines:#?}");
    assert!(curls.iter().all(|l| !l.contains("PASSWORD")), "{curls:#?}");
    assert_eq!(paste(&curls[0]), "hi");
    let apis: serde_json::Value = serde_json::from_str(&paste(&curls[1])).expect("json");
    assert!(apis.to_string().contains("\"/demo\""), "{apis}");
}

#[test]
fn a_first_start_prints_curl_lines_with_the_generated_password() {
    let dir = TempDir::new();
    let (_up, lines) = up(&dir, None);
    assert_pasted_lines_work(&lines);
}

#[test]
fn a_start_given_the_password_prints_it_quoted_and_a_wrong_one_is_not_printed() {
    let dir = TempDir::new();
    let password = r#"it's $HOME & "more""#;
    {
        let (_up, lines) = up(&dir, Some(password));
        assert_pasted_lines_work(&lines);
    }
    // The store keeps the first password: a different one given later is not the
    // admin's, so the only line printed is the one that needs none.
    let (_up, lines) = up(&dir, Some("not-the-admins"));
    let curls = curl_lines(&lines);
    assert_eq!(curls.len(), 1, "{lines:#?}");
    assert!(
        !lines.iter().any(|l| l.contains("not-the-admins")),
        "{lines:#?}"
    );
    assert_eq!(paste(&curls[0]), "hi");
}
