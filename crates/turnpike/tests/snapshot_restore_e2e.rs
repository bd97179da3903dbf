//! A gateway that starts while its control plane is down (real processes): it serves the
//! last good snapshot it saved on disk and reports itself ready; one with nothing saved
//! (or a damaged file) reports not ready on `/ready` and stays live on `/health`, and
//! becomes ready once the control plane is back.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{get, start, start_env, start_printing, wait_for_status, Proc, TempDir, BIN};

const TOKEN: &str = "restore-gateway-token";
const PASSWORD: &str = "restore-admin-password";

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

/// A following gateway: (process, traffic address, management address).
fn gateway(data: &Path, cp: &str) -> (Proc, String, String) {
    let (p, found) = start_printing(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            TOKEN,
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--metrics-addr",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        &[],
        &["gateway metrics on http://", "gateway listening on http://"],
    );
    let mgmt = found[0].trim_end_matches("/metrics").to_owned();
    (p, found[1].clone(), mgmt)
}

fn apply(file: &Path, cp: &str, echo: &str) {
    let yaml = format!(
        "apis:\n  - name: kept\n    context: /kept\n    version: v1\n    \
         endpoints: [\"http://{echo}\"]\n    resources:\n      \
         - {{ path: \"/*\", methods: [GET, POST] }}\n"
    );
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
    assert!(out.status.success(), "apply failed: {out:?}");
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_gateway_restarted_while_the_control_plane_is_down_serves_its_saved_snapshot() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let (cp_proc, cp) = control_plane(dir.path(), "0");
    let data = dir.path().join("gw");
    let (gw_proc, gw, mgmt) = gateway(&data, &cp);
    apply(&dir.path().join("apis.yaml"), &cp, &echo);
    wait_for_status(
        &format!("http://{gw}/kept/v1/x"),
        200,
        Duration::from_secs(10),
    );
    assert_eq!(get(&format!("http://{mgmt}/ready")).0, 200);
    let saved = data.join("snapshot.json");
    wait_until("the snapshot saved on disk", || {
        std::fs::read_to_string(&saved).is_ok_and(|t| t.contains("/kept"))
    });

    // The control plane is lost, then the gateway restarts (both SIGKILL).
    let cp_port = cp.rsplit(':').next().expect("port").to_owned();
    drop(cp_proc);
    drop(gw_proc);
    let (_gw, gw, mgmt) = gateway(&data, &cp);
    assert_eq!(
        get(&format!("http://{mgmt}/ready")).0,
        200,
        "ready from disk"
    );
    assert_eq!(
        get(&format!("http://{gw}/kept/v1/x")).0,
        200,
        "the saved API is served"
    );

    // Nothing saved: live, not ready, and it says why.
    let (_empty, gw_empty, mgmt_empty) = gateway(&dir.path().join("fresh"), &cp);
    assert_eq!(get(&format!("http://{mgmt_empty}/health")).0, 200);
    let (code, body) = get(&format!("http://{mgmt_empty}/ready"));
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("\"code\":\"no_snapshot\""), "{body}");

    // A damaged copy is not served either.
    let damaged = dir.path().join("damaged");
    std::fs::create_dir_all(&damaged).expect("mkdir");
    let text = std::fs::read_to_string(&saved).expect("saved");
    std::fs::write(
        damaged.join("snapshot.json"),
        text.replace("/kept", "/kepT"),
    )
    .expect("write");
    let (_bad, gw_bad, mgmt_bad) = gateway(&damaged, &cp);
    assert_eq!(get(&format!("http://{mgmt_bad}/ready")).0, 503);
    assert_eq!(get(&format!("http://{gw_bad}/kepT/v1/x")).0, 404);

    // The control plane comes back: the fresh gateway catches up and turns ready.
    let (_cp, _) = control_plane(dir.path(), &cp_port);
    wait_for_status(
        &format!("http://{gw_empty}/kept/v1/x"),
        200,
        Duration::from_secs(15),
    );
    wait_until("the fresh gateway ready", || {
        get(&format!("http://{mgmt_empty}/ready")).0 == 200
    });
}
