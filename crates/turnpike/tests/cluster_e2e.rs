//! A highly available control plane, end to end with real processes: two
//! `turnpike control-plane` processes on one real PostgreSQL (started by the harness),
//! gateways following one, the other, or both.
//!
//! - a change made on either control plane reaches a gateway that follows the other;
//! - a control plane restarted on the same port sends its gateway a delta, not the whole
//!   file (the gateway's status report counts what it received);
//! - a gateway given both URLs fails over when its first control plane dies and goes back
//!   to it once it returns;
//! - `turnpike cluster status` and the control plane's `/metrics` report a stopped gateway
//!   as lagging (non-zero exit).

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{apply_yaml, curl, get, start, start_env, wait_for_status, Proc, TempDir, BIN};

const TOKEN: &str = "ha-gateway-token";
const PASSWORD: &str = "ha-admin-password";
const LIVE: Duration = Duration::from_secs(15);

fn control_plane(db: &str, port: &str) -> (Proc, String) {
    start_env(
        &[
            "control-plane",
            "--database",
            db,
            "--port",
            port,
            "--gateway-token",
            TOKEN,
            "--gateway-max-lag",
            "1",
        ],
        &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
        "control plane listening on http://",
    )
}

/// A gateway following `cps` (comma-separated addresses, first preferred). A snapshot
/// age of 4 s makes its long-poll wait 1 s: a stopped one is noticed within seconds.
fn gateway(dir: &Path, cps: &[&str], id: &str) -> (Proc, String) {
    let urls: Vec<String> = cps.iter().map(|c| format!("http://{c}")).collect();
    let data = dir.join(id);
    start(
        &[
            "gateway",
            "--control-plane",
            &urls.join(","),
            "--control-plane-failback",
            "1",
            "--max-snapshot-age",
            "4",
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

/// Publishes `/{name}/v1` (open, to the echo back end) through the control plane `cp`.
fn publish(dir: &Path, cp: &str, name: &str, echo: &str) {
    let yaml = format!(
        "apis:\n  - name: {name}\n    context: /{name}\n    version: v1\n    \
         endpoints: [\"http://{echo}\"]\n    resources:\n      \
         - {{ path: \"/*\", methods: [GET, POST] }}\n"
    );
    apply_yaml(&dir.join(format!("{name}.yaml")), &yaml, cp, PASSWORD);
}

fn cluster_status(cp: &str, max_lag: &str) -> Output {
    Command::new(BIN)
        .args(["cluster", "status", "--control-plane"])
        .arg(format!("http://{cp}"))
        .args(["--user", "admin", "--max-lag", max_lag])
        .env("TURNPIKE_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "warn")
        .output()
        .expect("run turnpike cluster status")
}

/// One gateway's entry in `/gateways`, once `ok` holds for it (or panics after [`LIVE`]).
fn gateway_entry(cp: &str, id: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + LIVE;
    loop {
        let out = Command::new("curl")
            .args(["-s", "-u", &format!("admin:{PASSWORD}")])
            .arg(format!("http://{cp}/api/am/admin/v1/gateways"))
            .output()
            .expect("curl runs");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let entry = v["list"]
            .as_array()
            .and_then(|l| l.iter().find(|g| g["id"] == id).cloned());
        if let Some(g) = entry.filter(|g| ok(g)) {
            return g;
        }
        assert!(Instant::now() < deadline, "{id} on {cp}: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn port_of(addr: &str) -> String {
    addr.rsplit(':').next().expect("port").to_owned()
}

#[test]
fn two_control_planes_on_one_postgres_serve_every_gateway() {
    let pg = turnpike_store::testing::PgServer::start();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let db = rt.block_on(pg.create_database("ha"));
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let (cp_a_proc, cp_a) = control_plane(&db, "0");
    let (_cp_b, cp_b) = control_plane(&db, "0");
    let (_g_a, g_a) = gateway(dir.path(), &[&cp_a], "follows-a");
    let (g_b_proc, g_b) = gateway(dir.path(), &[&cp_b], "follows-b");
    let (_g_ab, g_ab) = gateway(dir.path(), &[&cp_a, &cp_b], "follows-both");

    // A change on each control plane reaches the gateway following the other.
    publish(dir.path(), &cp_a, "one", &echo);
    wait_for_status(&format!("http://{g_b}/one/v1/x"), 200, LIVE);
    publish(dir.path(), &cp_b, "two", &echo);
    wait_for_status(&format!("http://{g_a}/two/v1/x"), 200, LIVE);
    for gw in [&g_a, &g_b, &g_ab] {
        assert_eq!(
            curl(&format!("http://{gw}/one/v1/x")),
            (200, "hello".into())
        );
        wait_for_status(&format!("http://{gw}/two/v1/x"), 200, LIVE);
    }
    let ok = cluster_status(&cp_b, "5");
    assert!(ok.status.success(), "all converged: {ok:?}");
    let table = String::from_utf8_lossy(&ok.stdout);
    for id in ["follows-a", "follows-b", "follows-both"] {
        assert!(table.contains(id), "{id} missing from:\n{table}");
    }

    // Control plane A dies: the gateway with both URLs fails over to B, the one with A
    // only keeps serving what it has.
    let before = gateway_entry(&cp_b, "follows-a", |g| g["report"]["fulls"].is_u64());
    let port_a = port_of(&cp_a);
    drop(cp_a_proc);
    publish(dir.path(), &cp_b, "three", &echo);
    wait_for_status(&format!("http://{g_ab}/three/v1/x"), 200, LIVE);
    let g = gateway_entry(&cp_b, "follows-both", |g| g["upToDate"] == true);
    assert_eq!(g["controlPlane"], cp_b.as_str(), "{g}");
    assert_eq!(curl(&format!("http://{g_a}/two/v1/x")).0, 200);

    // A restarts on its port: its gateway gets the change it missed as a delta (the
    // manifest of the version it holds comes from the database), and the gateway with
    // both URLs goes back to A.
    let (_cp_a2, cp_a2) = control_plane(&db, &port_a);
    wait_for_status(&format!("http://{g_a}/three/v1/x"), 200, LIVE);
    let g = gateway_entry(&cp_b, "follows-a", |g| {
        g["upToDate"] == true && g["report"]["version"] == g["servingVersion"]
    });
    assert_eq!(g["report"]["kind"], "delta", "{g}");
    assert_eq!(
        g["report"]["fulls"], before["report"]["fulls"],
        "the restarted control plane sent a full file: {g}"
    );
    let g = gateway_entry(&cp_a2, "follows-both", |g| {
        g["controlPlane"] == cp_a2.as_str()
    });
    assert_eq!(g["upToDate"], true, "{g}");

    // A stopped gateway shows as lagging: the CLI exits non-zero, the metric counts it.
    drop(g_b_proc);
    let deadline = Instant::now() + LIVE;
    let lagging = loop {
        let out = cluster_status(&cp_a2, "1");
        if !out.status.success() {
            break out;
        }
        assert!(Instant::now() < deadline, "a stopped gateway never lagged");
        std::thread::sleep(Duration::from_millis(250));
    };
    let table = String::from_utf8_lossy(&lagging.stdout);
    let line = table
        .lines()
        .find(|l| l.starts_with("follows-b"))
        .unwrap_or_else(|| panic!("no follows-b line in:\n{table}"));
    assert!(line.contains("LAGGING"), "{table}");
    assert!(
        String::from_utf8_lossy(&lagging.stderr).contains("1 of 3 gateways lag"),
        "{lagging:?}"
    );
    let (code, metrics) = get(&format!("http://{cp_b}/metrics"));
    assert_eq!(code, 200);
    assert!(metrics.contains("turnpike_gateways_lagging 1"), "{metrics}");
    assert!(
        metrics.contains("turnpike_gateway_lag_seconds{gateway=\"follows-b\"}"),
        "{metrics}"
    );
}
