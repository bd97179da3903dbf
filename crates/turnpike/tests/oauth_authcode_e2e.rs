//! The authorization code grant with PKCE for an application, end to end with the real
//! binary and an independent client: `turnpike control-plane` (SQLite); through the REST
//! APIs an application registers a redirect URI with its keys; authlib (Python, Debian's
//! python3-authlib) reads RFC 8414's metadata, builds the S256 authorization URL and
//! exchanges the code, while `requests` plays the browser through the login and consent
//! pages (tests/py/authcode_pkce.py). Asserted: the metadata (`none` among the token
//! endpoint's methods), login then consent, the token's claims, a replayed code and a
//! wrong verifier refused, Deny answered `access_denied`, an unregistered redirect URI
//! never redirected to; and keys without a redirect URI get `unauthorized_client`.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use support::{sqlite_control_plane, TempDir};

const PASSWORD: &str = "authcode-e2e-admin-password";
const REDIRECT: &str = "http://127.0.0.1:1/app/callback";

fn rest(cp: &str, method: &str, path: &str, body: Value) -> (u16, Value) {
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method])
        .args(["-u", &format!("admin:{PASSWORD}")])
        .args([
            "-H",
            "content-type: application/json",
            "-d",
            &body.to_string(),
        ])
        .arg(format!("http://{cp}{path}"))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (
        code.trim().parse().unwrap_or(0),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// Debian's interpreter, where apt puts python3-authlib (a pyenv `python3` may shadow it).
fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

#[test]
fn an_application_signs_a_user_in_with_authorization_code_and_pkce() {
    let dir = TempDir::new();
    let (_cp, cp) = sqlite_control_plane(dir.path(), "turnpike.db", "gw-token-authcode", PASSWORD);
    let (status, app) = rest(
        &cp,
        "POST",
        "/api/am/devportal/v1/applications",
        json!({"name": "webshop"}),
    );
    assert_eq!(status, 201, "{app}");
    let app_id = app["id"].as_str().expect("id");

    // Keys without a redirect URI cannot use the browser flow.
    let (status, plain) = rest(
        &cp,
        "POST",
        &format!("/api/am/devportal/v1/applications/{app_id}/generate-keys"),
        json!({"keyType": "SANDBOX"}),
    );
    assert_eq!(status, 201, "{plain}");
    let out = Command::new("curl")
        .args(["-s", "-u"])
        .arg(format!(
            "{}:{}",
            plain["consumerKey"].as_str().expect("ck"),
            plain["consumerSecret"].as_str().expect("cs")
        ))
        .args([
            "-d",
            "grant_type=authorization_code&code=x&redirect_uri=http://a/b&code_verifier=y",
        ])
        .arg(format!("http://{cp}/oauth2/token"))
        .output()
        .expect("curl");
    let refused: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(refused["error"], "unauthorized_client", "{refused}");

    // A bad redirect URI is a field error; a good one is registered.
    let keys_path = format!("/api/am/devportal/v1/applications/{app_id}/generate-keys");
    let (status, bad) = rest(
        &cp,
        "POST",
        &keys_path,
        json!({"redirectUris": ["not a url", "https://x/cb#frag"]}),
    );
    assert_eq!(status, 400, "{bad}");
    let (status, keys) = rest(&cp, "POST", &keys_path, json!({"redirectUris": [REDIRECT]}));
    assert_eq!(status, 201, "{keys}");
    assert_eq!(keys["redirectUris"], json!([REDIRECT]));
    let (ck, cs) = (
        keys["consumerKey"].as_str().expect("ck"),
        keys["consumerSecret"].as_str().expect("cs"),
    );

    let out = Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/authcode_pkce.py"
        ))
        .args([&format!("http://{cp}"), ck, cs, REDIRECT, "admin", PASSWORD])
        .output()
        .expect("python3 runs (scripts/install-test-deps.sh installs python3-authlib)");
    assert!(
        out.status.success(),
        "authcode_pkce.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");

    let meta = &r["metadata"];
    assert_eq!(
        meta["authorization_endpoint"],
        format!("http://{cp}/oauth2/authorize")
    );
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    let methods = meta["token_endpoint_auth_methods_supported"]
        .as_array()
        .expect("methods");
    assert!(
        methods.contains(&json!("none")) && methods.contains(&json!("client_secret_basic")),
        "{meta}"
    );
    assert!(meta["grant_types_supported"]
        .as_array()
        .expect("grants")
        .contains(&json!("authorization_code")));

    let allow = &r["allow"];
    assert_eq!(allow["login_status"], 200, "{r}");
    assert_eq!(
        allow["login_names_app"], true,
        "the login page names the application"
    );
    assert_eq!(allow["consent_status"], 200, "{r}");
    assert_eq!(allow["consent_page"], true, "{r}");
    assert_eq!(allow["answer_status"], 303, "{r}");
    assert_eq!(allow["redirected_to"], REDIRECT);
    assert_eq!(allow["state_kept"], true);
    // An Allow is remembered (per user, client and scopes): the next visit redirects.
    assert_eq!(allow["second_visit_asks_consent"], false);
    assert_eq!(allow["second_visit_redirects"], true);

    assert_eq!(r["token"]["token_type"], "Bearer", "{r}");
    assert_eq!(r["claims"]["client_id"], ck);
    assert_eq!(r["claims"]["sub"], "admin");
    assert_eq!(r["claims"]["username"], "admin");
    assert_eq!(r["claims"]["keytype"], "PRODUCTION");
    assert_eq!(r["introspection_active"], true);

    assert_eq!(r["replay"], json!([400, "invalid_grant"]));
    assert_eq!(r["wrong_verifier"], json!([400, "invalid_grant"]));
    assert_eq!(r["deny"], json!(["access_denied"]));
    assert_eq!(r["unregistered_redirect"], json!([400, null]));
}
