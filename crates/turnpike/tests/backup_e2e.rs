//! Backup and restore with real processes: a control plane on SQLite with a gateway
//! following it; `turnpike export` of the configuration, then `turnpike backup` taken
//! while the control plane runs; more changes (APIs, and an application's subscriptions,
//! both applied from a file); the control plane stopped, `turnpike restore` of the
//! backup, the control plane started again: `turnpike export` gives the same file
//! (applications and subscriptions included) as before the changes, and the gateway (which served a newer version than
//! the restored database holds) converges to the restored APIs. `turnpike migrate
//! --check` says what an upgrade would do and writes nothing.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{follower, get, start, start_env, wait_until, Proc, TempDir, BIN};

const TOKEN: &str = "backup-gateway-token";
const PASSWORD: &str = "backup-admin-password";

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
        ],
        &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
        "control plane listening on http://",
    )
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("TURNPIKE_LOG", "warn")
        .env("TURNPIKE_PASSWORD", PASSWORD)
        .output()
        .expect("run turnpike")
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "turnpike {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn export(cp: &str) -> String {
    ok(&["export", "--control-plane", &format!("http://{cp}")])
}

/// Applies the APIs `/{c}/v1` for each of `contexts` (pruning others) and the
/// application `shop` of admin subscribed to each of `subscribed`.
fn apply(dir: &Path, cp: &str, echo: &str, contexts: &[&str], subscribed: &[&str]) {
    let mut yaml = String::from("apis:\n");
    for c in contexts {
        yaml.push_str(&format!(
            "  - name: {c}\n    context: /{c}\n    version: v1\n    endpoints: [\"http://{echo}\"]\n    resources:\n      - {{ path: \"/*\", methods: [GET, POST] }}\n"
        ));
    }
    yaml.push_str("applications:\n  - name: shop\n    owner: admin\n    subscriptions:\n");
    for c in subscribed {
        yaml.push_str(&format!(
            "      - {{ context: /{c}, version: v1, tier: Unlimited }}\n"
        ));
    }
    let file = dir.join("apis.yaml");
    std::fs::write(&file, yaml).expect("write");
    ok(&[
        "apply",
        "-f",
        file.to_str().expect("utf-8"),
        "--control-plane",
        &format!("http://{cp}"),
        "--prune",
    ]);
}

fn wait_status(url: &str, code: u16) {
    wait_until(&format!("{url} to answer {code}"), || get(url).0 == code);
}

#[test]
fn backup_then_restore_gives_the_same_export_and_the_gateway_converges() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let db_path = dir.path().join("cp.db");
    let db = format!("sqlite://{}", db_path.display());
    let (cp_proc, cp) = control_plane(&db, "0");
    let port = cp.rsplit(':').next().expect("port").to_owned();
    let data = dir.path().join("gw");
    let (_gw, gw, _) = follower(&data, &format!("http://{cp}"), TOKEN, "0", &[]);

    apply(dir.path(), &cp, &echo, &["alpha", "beta"], &["alpha"]);
    wait_status(&format!("http://{gw}/beta/v1/x"), 200);
    let before = export(&cp);
    assert!(
        before.contains("/alpha") && before.contains("/beta"),
        "{before}"
    );
    assert!(
        before.contains("name: shop") && before.contains("context: /alpha"),
        "applications and subscriptions are exported: {before}"
    );

    let backup = dir.path().join("backup.db");
    let said = ok(&[
        "backup",
        "--database",
        &db,
        "-o",
        backup.to_str().expect("utf-8"),
    ]);
    assert!(said.contains("backup written"), "{said}");
    let again = run(&[
        "backup",
        "--database",
        &db,
        "-o",
        backup.to_str().expect("utf-8"),
    ]);
    assert!(!again.status.success(), "a backup never overwrites a file");

    apply(
        dir.path(),
        &cp,
        &echo,
        &["alpha", "gamma"],
        &["alpha", "gamma"],
    );
    wait_status(&format!("http://{gw}/gamma/v1/x"), 200);
    wait_status(&format!("http://{gw}/beta/v1/x"), 404);
    assert_ne!(export(&cp), before);

    drop(cp_proc);
    ok(&[
        "restore",
        "--database",
        &db,
        "-f",
        backup.to_str().expect("utf-8"),
    ]);
    let (_cp, cp) = control_plane(&db, &port);
    assert_eq!(
        export(&cp),
        before,
        "the restored configuration exports as before"
    );
    // The gateway served a newer version than the restored database holds: it gets the
    // whole restored snapshot.
    wait_status(&format!("http://{gw}/beta/v1/x"), 200);
    wait_status(&format!("http://{gw}/gamma/v1/x"), 404);
}

#[test]
fn migrate_check_says_what_an_upgrade_would_do_and_writes_nothing() {
    let dir = TempDir::new();
    let fresh = dir.path().join("fresh.db");
    let url = format!("sqlite://{}", fresh.display());
    let out = run(&["migrate", "--check", "--database", &url]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "pending migrations: exit 1: {out:?}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("schema version 0") && text.contains("pending:   1 core"),
        "{text}"
    );
    assert!(!fresh.exists(), "--check created the database");

    let said = ok(&["migrate", "--database", &url]);
    assert!(said.contains("up to date"), "{said}");
    let out = run(&["migrate", "--check", "--database", &url]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("pending"));

    let out = run(&[
        "restore",
        "--database",
        &url,
        "-f",
        dir.path().join("none.db").to_str().expect("utf-8"),
    ]);
    assert!(!out.status.success(), "restoring a missing file fails");
}
