//! Password guessing against the control plane, through real sockets from two client
//! addresses (127.0.0.1 is the attacker, 127.0.0.2 the owner): HTTP Basic on the REST
//! APIs, the token endpoint's password grant and the login form share one limit per
//! account and address; the attacker's lock does not lock the owner out. Time comes from
//! the control plane's injected clock.

mod km_support;

use std::net::{IpAddr, Ipv4Addr};

use base64::Engine;
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use km_support::{control_plane, urlencode, Cp, PASSWORD};
use serde_json::Value;

const ATTACKER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const OWNER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

struct Answer {
    status: u16,
    headers: http::HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// Sends `req` from the local address `from`.
async fn send_from(from: Ipv4Addr, req: Request<Full<Bytes>>) -> Answer {
    let mut conn = HttpConnector::new();
    conn.set_local_address(Some(IpAddr::V4(from)));
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(conn);
    let resp = client.request(req).await.expect("send");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// `GET /api/am/admin/v1/users` with HTTP Basic.
async fn basic(cp: &Cp, from: Ipv4Addr, user: &str, password: &str) -> Answer {
    let enc = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let req = Request::get(cp.url("/api/am/admin/v1/users"))
        .header("authorization", format!("Basic {enc}"))
        .body(Full::new(Bytes::new()))
        .expect("request");
    send_from(from, req).await
}

fn form(pairs: &[(&str, &str)]) -> Full<Bytes> {
    let body = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&");
    Full::new(Bytes::from(body))
}

/// A password grant through the built-in `turnpike-cli` client.
async fn password_grant(cp: &Cp, from: Ipv4Addr, user: &str, password: &str) -> Answer {
    let req = Request::post(cp.url("/oauth2/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("grant_type", "password"),
            ("client_id", "turnpike-cli"),
            ("username", user),
            ("password", password),
        ]))
        .expect("request");
    send_from(from, req).await
}

/// The portals' login form: fetch the page (for its CSRF cookie), then post it.
async fn login_form(cp: &Cp, from: Ipv4Addr, user: &str, password: &str) -> Answer {
    let redirect = cp.url("/callback");
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let params = [
        ("response_type", "code"),
        ("client_id", "turnpike-ui"),
        ("redirect_uri", redirect.as_str()),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
    ];
    let query = params
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let page = send_from(
        from,
        Request::get(cp.url(&format!("/oauth2/authorize?{query}")))
            .body(Full::new(Bytes::new()))
            .expect("request"),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let cookie = page.headers["set-cookie"].to_str().expect("cookie");
    let csrf = cookie
        .split(';')
        .next()
        .and_then(|c| c.strip_prefix("tp_csrf="))
        .expect("csrf cookie")
        .to_string();
    let mut fields = params.to_vec();
    fields.extend([
        ("csrf", csrf.as_str()),
        ("username", user),
        ("password", password),
    ]);
    let req = Request::post(cp.url("/oauth2/authorize"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", format!("tp_csrf={csrf}"))
        .body(form(&fields))
        .expect("request");
    send_from(from, req).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_guessing_locks_the_guessing_address_but_not_the_owner() {
    let cp = control_plane(true).await;
    let clock = cp.clock.clone().expect("manual clock");
    let mut statuses = Vec::new();
    for n in 0..400 {
        statuses.push(
            basic(&cp, ATTACKER, "admin", &format!("guess-{n}"))
                .await
                .status,
        );
    }
    assert!(statuses[..9].iter().all(|s| *s == 401), "{statuses:?}");
    assert!(statuses[9..].iter().all(|s| *s == 429), "{statuses:?}");
    // Locked: the right password from the guessing address is refused too, with the
    // admin API's error body and a Retry-After.
    let locked = basic(&cp, ATTACKER, "admin", PASSWORD).await;
    assert_eq!(locked.status, 429);
    assert_eq!(locked.json()["code"], "too_many_attempts");
    assert_eq!(locked.headers["retry-after"], "60");
    // The owner, from another address, gets in meanwhile.
    assert_eq!(basic(&cp, OWNER, "admin", PASSWORD).await.status, 200);
    // The lock ends.
    clock.advance(std::time::Duration::from_secs(61));
    assert_eq!(basic(&cp, ATTACKER, "admin", PASSWORD).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_count_across_basic_the_token_endpoint_and_the_login_form() {
    let cp = control_plane(true).await;
    // Basic failures lock the login form and the password grant.
    for n in 0..9 {
        assert_eq!(
            basic(&cp, ATTACKER, "pub", &format!("g{n}")).await.status,
            401
        );
    }
    let tenth = login_form(&cp, ATTACKER, "pub", "g9").await;
    assert_eq!(tenth.status, 429, "{}", tenth.body);
    assert_eq!(tenth.headers["retry-after"], "60");
    assert_eq!(
        password_grant(&cp, ATTACKER, "pub", PASSWORD).await.status,
        429
    );
    assert_eq!(login_form(&cp, OWNER, "pub", PASSWORD).await.status, 303);
    // And the other way round: login-form and token failures lock Basic.
    for n in 0..5 {
        assert_eq!(
            login_form(&cp, ATTACKER, "sub", &format!("g{n}"))
                .await
                .status,
            401
        );
    }
    for n in 5..9 {
        let r = password_grant(&cp, ATTACKER, "sub", &format!("g{n}")).await;
        assert_eq!(r.status, 400, "{}", r.body);
    }
    let tenth = basic(&cp, ATTACKER, "sub", "g9").await;
    assert_eq!(tenth.status, 429, "{}", tenth.body);
    assert_eq!(basic(&cp, ATTACKER, "sub", PASSWORD).await.status, 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_spraying_many_accounts_is_locked_for_all_of_them() {
    let cp = control_plane(true).await;
    let mut statuses = Vec::new();
    for n in 0..30 {
        let user = format!("nobody-{n}");
        statuses.push(basic(&cp, ATTACKER, &user, "guess").await.status);
    }
    assert!(statuses[..29].iter().all(|s| *s == 401), "{statuses:?}");
    assert_eq!(statuses[29], 429);
    assert_eq!(basic(&cp, ATTACKER, "admin", PASSWORD).await.status, 429);
    assert_eq!(basic(&cp, OWNER, "admin", PASSWORD).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_wrong_current_password_counts_too() {
    let cp = control_plane(true).await;
    let token = cp.bearer("sub", None).await;
    let mut last = 0;
    for n in 0..10 {
        let req = Request::post(cp.url("/api/am/devportal/v1/me/change-password"))
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                serde_json::json!({"currentPassword": format!("g{n}"), "newPassword": "a-new-password-1"})
                    .to_string(),
            )))
            .expect("request");
        last = send_from(ATTACKER, req).await.status;
    }
    assert_eq!(last, 429);
    assert_eq!(basic(&cp, ATTACKER, "sub", PASSWORD).await.status, 429);
}
