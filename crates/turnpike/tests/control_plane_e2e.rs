//! End to end with real processes: one `turnpike control-plane` (SQLite), two
//! `turnpike gateway --control-plane` processes, APIs published with `turnpike apply`.
//! A publish goes live on both gateways (with default-version routing); the control plane
//! is killed and both gateways keep serving without a single failed request; it restarts
//! on the same port and the next publish reaches both.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::{curl, start, start_env, wait_for_status, Proc, TempDir, BIN};

const TOKEN: &str = "e2e-gateway-token";
const PASSWORD: &str = "e2e-admin-password";

fn control_plane(dir: &Path, port: &str) -> (Proc, String) {
    let db = format!("sqlite://{}", dir.join("turnpike.db").display());
    start_env(
        &[
            "control-plane",
            "--database",
            &db,
            "--port",
            port,
            "--gateway-token",
            TOKEN,
        ],
        &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
        "control plane listening on http://",
    )
}

fn gateway(dir: &Path, cp: &str, id: &str) -> (Proc, String) {
    let data = dir.join(id);
    start(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            TOKEN,
            "--gateway-id",
            id,
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        "gateway listening on http://",
    )
}

fn apply(file: &Path, cp: &str, contexts: &[&str], echo: &str) {
    let mut yaml = String::from("apis:\n");
    for c in contexts {
        yaml.push_str(&format!(
            "  - name: {c}\n    context: /{c}\n    version: v1\n    default: true\n    \
             endpoints: [\"http://{echo}\"]\n    resources:\n      \
             - {{ path: \"/*\", methods: [GET, POST] }}\n"
        ));
    }
    std::fs::write(file, yaml).expect("write apis file");
    let out = Command::new(BIN)
        .args(["apply", "-f", file.to_str().expect("utf-8 path")])
        .args([
            "--control-plane",
            &format!("http://{cp}"),
            "--user",
            "admin",
        ])
        .env("TURNPIKE_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "warn")
        .output()
        .expect("run turnpike apply");
    assert!(
        out.status.success(),
        "apply failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn two_gateway_processes_follow_a_control_plane_through_its_restart() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let (cp_proc, cp) = control_plane(dir.path(), "0");
    let (_gw1, gw1) = gateway(dir.path(), &cp, "gw-1");
    let (_gw2, gw2) = gateway(dir.path(), &cp, "gw-2");
    let file = dir.path().join("apis.yaml");
    let live = Duration::from_secs(10);

    apply(&file, &cp, &["one"], &echo);
    for gw in [&gw1, &gw2] {
        wait_for_status(&format!("http://{gw}/one/v1/x"), 200, live);
        let (code, body) = curl(&format!("http://{gw}/one/x"));
        assert_eq!(
            (code, body.as_str()),
            (200, "hello"),
            "default version on {gw}"
        );
    }

    // Traffic on both gateways from here to the end: not one request may fail.
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let traffic = {
        let (stop, sent, failed) = (stop.clone(), sent.clone(), failed.clone());
        let urls = [
            format!("http://{gw1}/one/v1/x"),
            format!("http://{gw2}/one/x"),
        ];
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for u in &urls {
                    sent.fetch_add(1, Ordering::Relaxed);
                    if curl(u).0 != 200 {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
    };

    let port = cp.rsplit(':').next().expect("port").to_owned();
    drop(cp_proc); // SIGKILL: the control plane is gone
    std::thread::sleep(Duration::from_secs(2));
    for gw in [&gw1, &gw2] {
        assert_eq!(
            curl(&format!("http://{gw}/one/v1/x")).0,
            200,
            "{gw} serves while the control plane is down"
        );
    }

    let (_cp_again, cp) = control_plane(dir.path(), &port);
    apply(&file, &cp, &["one", "two"], &echo);
    for gw in [&gw1, &gw2] {
        wait_for_status(&format!("http://{gw}/two/v1/x"), 200, live);
    }

    stop.store(true, Ordering::Relaxed);
    traffic.join().expect("traffic thread");
    let (sent, failed) = (sent.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert!(sent > 10, "traffic ran ({sent} requests)");
    assert_eq!(
        failed, 0,
        "{failed} of {sent} requests failed across the restart"
    );
}
