//! TLS between gateways and the control plane (real processes, 127.0.0.1 port 0). A
//! control plane serving HTTPS with its generated self-signed certificate is followed by a
//! gateway that trusts that certificate (`--control-plane-ca`): it becomes ready and an
//! API published over HTTPS reaches it. A gateway trusting another CA, and one trusting
//! only the web PKI roots (the default), refuse the certificate: never ready, nothing
//! served. With `--tls-client-ca` (mTLS) a gateway presenting a certificate that CA signed
//! follows, one without a certificate is refused. (Rotation without a restart is
//! turnpike-tls's `tests/rotation.rs`, on the same code the control plane runs.)

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use support::{follower, get, start_env, wait_until, Proc, TempDir};

const TOKEN: &str = "tls-gateway-token";
const PASSWORD: &str = "tls-admin-password";

fn control_plane(dir: &Path, tls: &[&str]) -> (Proc, String) {
    let db = format!("sqlite://{}", dir.join("cp.db").display());
    let mut args = vec![
        "control-plane",
        "--database",
        &db,
        "--port",
        "0",
        "--gateway-token",
        TOKEN,
    ];
    args.extend_from_slice(tls);
    let (p, url) = start_env(
        &args,
        &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
        "control plane listening on ",
    );
    assert!(url.starts_with("https://"), "{url}");
    (p, url)
}

/// A control plane serving HTTPS with its generated pair: (process, URL, its certificate
/// file, the same as a string).
fn self_signed_control_plane(dir: &Path) -> (Proc, String, PathBuf, String) {
    let cp_dir = dir.join("cp");
    let cp_dir_s = cp_dir.to_str().expect("utf-8").to_owned();
    let (p, cp) = control_plane(dir, &["--tls-self-signed", "--tls-dir", &cp_dir_s]);
    let cert = cp_dir.join("tls").join("cert.pem");
    let cert_s = cert.to_str().expect("utf-8").to_owned();
    (p, cp, cert, cert_s)
}

/// A following gateway: (process, traffic address, management address).
fn gateway(data: &Path, cp: &str, tls: &[&str]) -> (Proc, String, String) {
    follower(data, cp, TOKEN, "0", tls)
}

/// A REST call over HTTPS with curl, trusting `ca`; the JSON answer.
fn rest(cp: &str, ca: &Path, method: &str, path: &str, body: Option<&str>) -> serde_json::Value {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--fail-with-body", "--cacert"])
        .arg(ca)
        .args(["-u", &format!("admin:{PASSWORD}"), "-X", method])
        .args(["-H", "content-type: application/json"]);
    if let Some(b) = body {
        cmd.args(["-d", b]);
    }
    let out = cmd.arg(format!("{cp}{path}")).output().expect("curl runs");
    assert!(out.status.success(), "{method} {path}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

fn ready(mgmt: &str) -> u16 {
    get(&format!("http://{mgmt}/ready")).0
}

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca() -> Ca {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).expect("ca");
    Ca { cert, key }
}

/// A certificate `ca` signs for 127.0.0.1: (cert file, key file).
fn leaf(dir: &Path, name: &str, ca: &Ca, usage: ExtendedKeyUsagePurpose) -> (PathBuf, PathBuf) {
    let key = KeyPair::generate().expect("key");
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()]).expect("params");
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, &ca.cert, &ca.key).expect("sign");
    let (c, k) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&c, cert.pem()).expect("write");
    std::fs::write(&k, key.serialize_pem()).expect("write");
    (c, k)
}

#[test]
fn gateways_follow_an_https_control_plane_they_verify_and_refuse_one_they_cannot() {
    let dir = TempDir::new();
    let (_cp, cp, cert, cert_s) = self_signed_control_plane(dir.path());

    let (_good, gw, mgmt) = gateway(
        &dir.path().join("good"),
        &cp,
        &["--control-plane-ca", &cert_s],
    );
    wait_until("the verifying gateway is ready", || ready(&mgmt) == 200);

    let other = ca();
    let other_pem = dir.path().join("other-ca.pem");
    std::fs::write(&other_pem, other.cert.pem()).expect("write");
    let other_s = other_pem.to_str().expect("utf-8").to_owned();
    let (_wrong, gw_wrong, mgmt_wrong) = gateway(
        &dir.path().join("wrong"),
        &cp,
        &["--control-plane-ca", &other_s],
    );
    let (_default, _, mgmt_default) = gateway(&dir.path().join("default"), &cp, &[]);

    let api = rest(
        &cp,
        &cert,
        "POST",
        "/api/am/publisher/v1/apis",
        Some(
            r#"{"name":"Tls","context":"/tls","version":"v1","endpoints":["http://127.0.0.1:9"],"resources":[{"path":"/*","methods":["GET"]}]}"#,
        ),
    );
    let id = api["id"].as_str().expect("api id");
    rest(
        &cp,
        &cert,
        "POST",
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action=Publish"),
        None,
    );
    // Secured by default: 401 from the gateway means the API arrived (404 before).
    wait_until("the API on the verifying gateway", || {
        get(&format!("http://{gw}/tls/v1/x")).0 == 401
    });

    for (name, m) in [
        ("another CA", &mgmt_wrong),
        ("the web PKI roots", &mgmt_default),
    ] {
        let (code, body) = get(&format!("http://{m}/ready"));
        assert_eq!(
            code, 503,
            "a gateway trusting {name} must not follow: {body}"
        );
    }
    let (code, body) = get(&format!("http://{gw_wrong}/tls/v1/x"));
    assert_eq!(
        code, 503,
        "nothing served from an unverified control plane: {body}"
    );
}

#[test]
fn with_a_client_ca_only_gateways_presenting_a_signed_certificate_follow() {
    let dir = TempDir::new();
    let ca = ca();
    let ca_pem = dir.path().join("ca.pem");
    std::fs::write(&ca_pem, ca.cert.pem()).expect("write");
    let (cert, key) = leaf(dir.path(), "cp", &ca, ExtendedKeyUsagePurpose::ServerAuth);
    let (gw_cert, gw_key) = leaf(dir.path(), "gw", &ca, ExtendedKeyUsagePurpose::ClientAuth);
    let s = |p: &Path| p.to_str().expect("utf-8").to_owned();
    let (_cp, cp) = control_plane(
        dir.path(),
        &[
            "--tls-cert",
            &s(&cert),
            "--tls-key",
            &s(&key),
            "--tls-client-ca",
            &s(&ca_pem),
        ],
    );
    let (_with, _, mgmt_with) = gateway(
        &dir.path().join("with"),
        &cp,
        &[
            "--control-plane-ca",
            &s(&ca_pem),
            "--control-plane-cert",
            &s(&gw_cert),
            "--control-plane-key",
            &s(&gw_key),
        ],
    );
    let (_without, _, mgmt_without) = gateway(
        &dir.path().join("without"),
        &cp,
        &["--control-plane-ca", &s(&ca_pem)],
    );
    wait_until("the gateway with a client certificate is ready", || {
        ready(&mgmt_with) == 200
    });
    assert_eq!(ready(&mgmt_without), 503, "no client certificate: refused");
}

/// `turnpike ARGS` with the admin password in the environment: (success, stdout, stderr).
fn cli(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(support::BIN)
        .args(args)
        .env("TURNPIKE_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "warn")
        .envs(env.iter().copied())
        .output()
        .expect("run turnpike");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_cli_and_analytics_shipping_verify_an_https_control_plane() {
    let dir = TempDir::new();
    let (_cp, cp, cert, cert_s) = self_signed_control_plane(dir.path());

    // Never silently insecure: without the CA, the self-signed certificate is refused
    // and the error says why.
    let (ok, _, err) = cli(&["cluster", "status", "--control-plane", &cp], &[]);
    assert!(!ok, "an unverified control plane was used");
    assert!(
        err.contains("certificate"),
        "the refusal names the certificate: {err}"
    );

    // With --ca (or TURNPIKE_CA_FILE) every command works over HTTPS.
    let file = dir.path().join("api.yaml");
    std::fs::write(
        &file,
        "apis:\n  - name: Shipped\n    context: /shipped\n    version: v1\n    endpoints: [\"http://127.0.0.1:9\"]\n    resources:\n      - { path: \"/*\", methods: [GET] }\n",
    )
    .expect("write");
    let file_s = file.to_str().expect("utf-8");
    let (ok, out, err) = cli(
        &["apply", "-f", file_s, "--control-plane", &cp],
        &[("TURNPIKE_CA_FILE", &cert_s)],
    );
    assert!(ok, "apply over HTTPS: {out}{err}");
    let (ok, out, err) = cli(
        &["export", "--control-plane", &cp, "--ca", &cert_s, "-o", "-"],
        &[],
    );
    assert!(
        ok && out.contains("/shipped"),
        "export over HTTPS: {out}{err}"
    );
    let (ok, token, err) = cli(&["login", "--control-plane", &cp, "--ca", &cert_s], &[]);
    assert!(
        ok && token.trim().len() > 20,
        "login over HTTPS: {token}{err}"
    );

    // A gateway verifying the control plane ships its analytics over the same HTTPS.
    let (_gw, gw, mgmt) = gateway(
        &dir.path().join("gw"),
        &cp,
        &["--control-plane-ca", &cert_s, "--analytics-interval", "0.3"],
    );
    wait_until("the gateway is ready", || ready(&mgmt) == 200);
    // Open (the file names no security) over a back end that is not there: 502 means
    // the API arrived (404 before).
    wait_until("the applied API on the gateway", || {
        get(&format!("http://{gw}/shipped/v1/x")).0 == 502
    });
    for _ in 0..3 {
        assert_eq!(get(&format!("http://{gw}/shipped/v1/x")).0, 502);
    }
    wait_until("the gateway's analytics at the control plane", || {
        let summary = rest(
            &cp,
            &cert,
            "GET",
            "/api/am/admin/v1/analytics/summary",
            None,
        );
        summary["totals"]["requests"].as_u64() >= Some(4)
    });

    let (ok, out, err) = cli(
        &[
            "cluster",
            "status",
            "--control-plane",
            &cp,
            "--ca",
            &cert_s,
            "--json",
        ],
        &[],
    );
    assert!(ok, "cluster status over HTTPS: {out}{err}");
    let status: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(status["count"], 1, "{status}");
}
