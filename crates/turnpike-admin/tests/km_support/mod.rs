//! Helpers for the key-manager tests: a control plane with its key manager on
//! `127.0.0.1:0` (SQLite, an injectable clock, four users), a small HTTP client over real
//! sockets, token helpers, and a gateway following the control plane.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use turnpike_admin::{AdminConfig, AppState};
use turnpike_config::Snapshot;
use turnpike_gateway::{Gateway, GatewayHandle, ServerSettings};
use turnpike_keymanager::{Clock, ManualClock, SystemClock};
use turnpike_store::testing::TestDbs;
use turnpike_store::{PasswordParams, Store};
use turnpike_sync::{FollowerConfig, FollowerHandle};

pub const GW_TOKEN: &str = "gw-token-for-km-tests";
pub const PASSWORD: &str = "password1";

/// A control plane serving on a real socket, with its key manager.
pub struct Cp {
    pub addr: SocketAddr,
    pub state: AppState,
    pub clock: Option<Arc<ManualClock>>,
    /// The databases' source (the PostgreSQL server, for outage tests).
    pub dbs: TestDbs,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Cp {
    fn drop(&mut self) {
        self.state.begin_shutdown();
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// Starts a control plane; `manual_clock` makes the key manager's time a `ManualClock`.
pub async fn control_plane(manual_clock: bool) -> Cp {
    control_plane_on(TestDbs::sqlite(), manual_clock).await
}

/// [`control_plane`] on a real PostgreSQL server the harness starts.
#[allow(dead_code)]
pub async fn control_plane_on_postgres() -> Cp {
    control_plane_on(TestDbs::postgres(), false).await
}

async fn control_plane_on(dbs: TestDbs, manual_clock: bool) -> Cp {
    let url = dbs.fresh_url().await;
    let store = Store::open_with(&url, PasswordParams::insecure_fast())
        .await
        .expect("store");
    let manual = manual_clock.then(|| Arc::new(ManualClock::at_secs(SystemClock.now_secs())));
    let clock: Arc<dyn Clock> = match &manual {
        Some(m) => m.clone(),
        None => Arc::new(SystemClock),
    };
    let state = AppState::with_clock(
        store,
        AdminConfig {
            gateway_token: GW_TOKEN.into(),
            long_poll: std::time::Duration::from_secs(5),
            body_limit: 64 * 1024,
            ..AdminConfig::default()
        },
        clock.clone(),
    );
    for (name, role) in [
        ("admin", "admin"),
        ("pub", "publisher"),
        ("sub", "subscriber"),
        ("sub2", "subscriber"),
    ] {
        turnpike_admin::create_user_with(&state, "test", name, PASSWORD, &[role.to_string()])
            .await
            .expect("user");
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    turnpike_admin::security::enable_with_clock(&state, &format!("http://{addr}"), clock)
        .await
        .expect("key manager");
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(turnpike_admin::serve(listener, state.clone(), async move {
        let _ = rx.await;
    }));
    Cp {
        addr,
        state,
        clock: manual,
        dbs,
        stop: Some(stop),
    }
}

/// `application/x-www-form-urlencoded` escaping of one key or value.
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub json: Value,
}

impl Resp {
    pub fn challenge(&self) -> String {
        self.headers
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What to send as the `Authorization` header.
#[derive(Clone, Copy)]
pub enum Auth<'a> {
    None,
    Basic(&'a str),
    Bearer(&'a str),
}

fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// One request; `body` is (content type, bytes).
pub async fn send(method: Method, url: &str, auth: Auth<'_>, body: Option<(&str, String)>) -> Resp {
    send_req(Request::builder().method(method).uri(url), auth, body).await
}

/// [`send`] with one more header.
#[allow(dead_code)]
pub async fn send_with_header(
    method: Method,
    url: &str,
    auth: Auth<'_>,
    header: (&str, &str),
    body: Option<(&str, String)>,
) -> Resp {
    let b = Request::builder()
        .method(method)
        .uri(url)
        .header(header.0, header.1);
    send_req(b, auth, body).await
}

async fn send_req(
    mut b: http::request::Builder,
    auth: Auth<'_>,
    body: Option<(&str, String)>,
) -> Resp {
    match auth {
        Auth::None => {}
        Auth::Basic(user) => {
            let raw = format!("{user}:{PASSWORD}");
            let enc = base64::engine::general_purpose::STANDARD.encode(raw);
            b = b.header("authorization", format!("Basic {enc}"));
        }
        Auth::Bearer(token) => b = b.header("authorization", format!("Bearer {token}")),
    }
    let body = match body {
        Some((ctype, bytes)) => {
            b = b.header("content-type", ctype);
            Full::new(Bytes::from(bytes))
        }
        None => Full::new(Bytes::new()),
    };
    let resp = client()
        .request(b.body(body).expect("request"))
        .await
        .expect("send");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Resp {
        status,
        headers,
        json: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

impl Cp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        auth: Auth<'_>,
        body: Option<Value>,
    ) -> Resp {
        let body = body.map(|v| ("application/json", v.to_string()));
        send(method, &self.url(path), auth, body).await
    }

    /// `PUT` with `If-Match`, as `pub`.
    pub async fn put_if_match(&self, path: &str, etag: &str, body: Value) -> Resp {
        let enc = base64::engine::general_purpose::STANDARD.encode(format!("pub:{PASSWORD}"));
        let req = Request::builder()
            .method(Method::PUT)
            .uri(self.url(path))
            .header("authorization", format!("Basic {enc}"))
            .header("if-match", etag)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("request");
        let resp = client().request(req).await.expect("send");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        Resp {
            status,
            headers,
            json: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    /// A successful call (2xx) as `auth`; returns the JSON.
    pub async fn ok(
        &self,
        method: Method,
        path: &str,
        auth: Auth<'_>,
        body: Option<Value>,
    ) -> Value {
        let r = self.call(method.clone(), path, auth, body).await;
        assert!(
            (200..300).contains(&r.status),
            "{method} {path}: {} {}",
            r.status,
            r.json
        );
        r.json
    }

    /// `POST /oauth2/token` with a form.
    pub async fn token_form(&self, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> Resp {
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let mut b = Request::builder()
            .method(Method::POST)
            .uri(self.url("/oauth2/token"))
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some((id, secret)) = basic {
            let enc = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
            b = b.header("authorization", format!("Basic {enc}"));
        }
        let resp = client()
            .request(b.body(Full::new(Bytes::from(body))).expect("request"))
            .await
            .expect("send");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        Resp {
            status,
            headers,
            json: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    /// A REST-API token for `user` through the built-in `turnpike-cli` client.
    pub async fn login(&self, user: &str, scope: Option<&str>) -> Value {
        let mut form = vec![
            ("grant_type", "password"),
            ("client_id", "turnpike-cli"),
            ("username", user),
            ("password", PASSWORD),
        ];
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        let r = self.token_form(&form, None).await;
        assert_eq!(r.status, 200, "login {user}: {}", r.json);
        r.json
    }

    pub async fn bearer(&self, user: &str, scope: Option<&str>) -> String {
        self.login(user, scope).await["access_token"]
            .as_str()
            .expect("access_token")
            .to_string()
    }

    /// An application of `owner` subscribed to `api_id`, with OAuth2 keys (`keys` is the
    /// generate-keys body). Returns (application id, consumer key, consumer secret).
    pub async fn subscribed_app(
        &self,
        owner: &str,
        api_id: &str,
        keys: Value,
    ) -> (String, String, String) {
        let app = self
            .ok(
                Method::POST,
                "/api/am/devportal/v1/applications",
                Auth::Basic(owner),
                Some(json!({"name": format!("app-{}", turnpike_store::new_id())})),
            )
            .await;
        let app_id = app["id"].as_str().expect("app id").to_string();
        self.ok(
            Method::POST,
            "/api/am/devportal/v1/subscriptions",
            Auth::Basic(owner),
            Some(
                json!({"applicationId": app_id, "apiId": api_id, "throttlingPolicy": "Unlimited"}),
            ),
        )
        .await;
        let k = self
            .ok(
                Method::POST,
                &format!("/api/am/devportal/v1/applications/{app_id}/generate-keys"),
                Auth::Basic(owner),
                Some(keys),
            )
            .await;
        (
            app_id,
            k["consumerKey"].as_str().expect("key").to_string(),
            k["consumerSecret"].as_str().expect("secret").to_string(),
        )
    }

    /// A client_credentials token of an application (optionally narrowed to `scope`).
    pub async fn app_token(&self, ck: &str, cs: &str, scope: Option<&str>) -> String {
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        let r = self.token_form(&form, Some((ck, cs))).await;
        assert_eq!(r.status, 200, "{}", r.json);
        r.json["access_token"].as_str().expect("token").to_string()
    }

    pub async fn version(&self) -> u64 {
        self.state.store().current_version().await.expect("version")
    }
}

/// A gateway on `127.0.0.1:0` following the control plane.
pub async fn gateway(
    cp: SocketAddr,
    dir: &std::path::Path,
) -> (GatewayHandle, FollowerHandle, SocketAddr) {
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(
        FollowerConfig::new(format!("http://{cp}"), GW_TOKEN, "gw-km"),
        snapshots.clone(),
    );
    let mut settings = ServerSettings::local(dir);
    settings.https_port = None;
    let bound = Gateway::builder(settings)
        .snapshots(snapshots)
        .bind()
        .await
        .expect("bind gateway");
    let addr = bound.http_addr().expect("http addr");
    (bound.spawn(), follower, addr)
}

/// Waits (at most `limit`) until the gateway serves version `v` or later.
pub async fn converge(f: &FollowerHandle, v: u64, limit: std::time::Duration) {
    tokio::time::timeout(limit, f.wait_for(v))
        .await
        .unwrap_or_else(|_| panic!("the gateway did not reach version {v} within {limit:?}"));
}
