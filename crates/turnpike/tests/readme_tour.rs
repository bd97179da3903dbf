//! README's "Quick tour", run as written: every `$` line of its `sh` block in a shell
//! against a real `turnpike up` (free ports, a scratch data dir), with the README's
//! addresses and password placeholder replaced by the real ones; each must exit 0 and
//! print the lines shown under it. A tour edited in the README is tested as edited.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use support::{Proc, TempDir, BIN};

const PASSWORD: &str = "readme-tour-admin-password";
const README_PASSWORD: &str = "the admin password turnpike up printed";

/// One `$` line and the output lines shown under it.
struct Step {
    command: String,
    shows: Vec<String>,
}

/// The steps of the first `sh` block after `## Quick tour`.
fn tour(readme: &str) -> Vec<Step> {
    let section = readme
        .split_once("\n## Quick tour\n")
        .map(|(_, s)| s)
        .expect("README has a `## Quick tour` section");
    let block = section
        .split_once("```sh\n")
        .and_then(|(_, b)| b.split_once("\n```"))
        .map(|(b, _)| b)
        .expect("the tour has an sh block");
    let mut steps: Vec<Step> = Vec::new();
    for line in block.lines() {
        match (line.strip_prefix("$ "), steps.last_mut()) {
            (Some(command), _) => steps.push(Step {
                command: command.to_owned(),
                shows: Vec::new(),
            }),
            (None, Some(step)) if !line.trim().is_empty() => step.shows.push(line.to_owned()),
            _ => {}
        }
    }
    steps
}

/// `turnpike up` on free ports; its gateway URL and control plane address.
fn up(dir: &Path) -> (Proc, String, String) {
    let mut child = Command::new(BIN)
        .args([
            "up",
            "--cp-port",
            "0",
            "--http-port",
            "0",
            "--https-port",
            "off",
        ])
        .arg("--data-dir")
        .arg(dir)
        .env("TURNPIKE_ADMIN_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn turnpike up");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let (mut gw, mut cp) = (String::new(), String::new());
    loop {
        let line = lines.next().expect("`turnpike up` exited").expect("stdout");
        let word = |prefix: &str| {
            line.trim_start()
                .strip_prefix(prefix)
                .and_then(|s| s.split_whitespace().next())
                .map(str::to_owned)
        };
        if let Some(g) = word("gateway:") {
            gw = g;
        }
        if let Some(c) = word("control plane:") {
            cp = c.trim_end_matches("/api/am/openapi.json").to_owned();
        }
        if line.starts_with("Try:") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    (Proc(child), gw, cp)
}

#[test]
fn the_readme_quick_tour_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let steps = tour(&readme);
    assert!(steps.len() >= 5, "the tour has its commands");
    let dir = TempDir::new();
    let (_up, gw, cp) = up(&dir.path().join("data"));
    // The tour's relative paths (examples/...) are the repository's.
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("examples")).expect("mkdir");
    for f in std::fs::read_dir(root.join("examples")).expect("examples") {
        let f = f.expect("entry").path();
        if let Some(name) = f.file_name().filter(|_| f.is_file()) {
            std::fs::copy(&f, work.join("examples").join(name)).expect("copy");
        }
    }
    let mut exports = String::new();
    for step in &steps {
        let command = step
            .command
            .replace("http://127.0.0.1:8280", &gw)
            .replace(README_PASSWORD, PASSWORD);
        if command.starts_with("export ") {
            exports.push_str(&command);
            exports.push('\n');
            continue;
        }
        let bin_dir = Path::new(BIN).parent().expect("bin dir");
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{exports}{command}"))
            .current_dir(&work)
            .env("PATH", path)
            .env("TURNPIKE_CONTROL_PLANE", &cp)
            .env_remove("TURNPIKE_PASSWORD")
            .env_remove("TURNPIKE_TOKEN")
            .env("TURNPIKE_LOG", "warn")
            .output()
            .expect("sh runs");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "`{command}` failed: {printed}");
        for want in &step.shows {
            assert!(
                printed.lines().any(|l| l.trim_end() == want),
                "`{command}` does not print {want:?}: {printed}"
            );
        }
    }
}
