//! Test helpers: a control plane over a fresh database with three users, and a client that
//! calls the router without a socket.

#![allow(dead_code)]

use std::time::Duration;

use axum::body::Body;
use axum::Router;
use base64::Engine;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;
use turnpike_admin::{AdminConfig, AppState};
use turnpike_store::{PasswordParams, Store};

pub const TOKEN: &str = "gw-token-for-tests";

#[derive(Clone)]
pub struct Cp {
    pub state: AppState,
    pub app: Router,
}

pub async fn control_plane(url: &str) -> Cp {
    let store = Store::open_with(url, PasswordParams::insecure_fast())
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"));
    let state = AppState::new(
        store,
        AdminConfig {
            gateway_token: TOKEN.into(),
            long_poll: Duration::from_secs(2),
            body_limit: 64 * 1024,
            ..AdminConfig::default()
        },
    );
    for (name, role) in [
        ("admin", "admin"),
        ("pub", "publisher"),
        ("sub", "subscriber"),
        ("sub2", "subscriber"),
    ] {
        turnpike_admin::create_user_with(&state, "test", name, "password1", &[role.to_string()])
            .await
            .expect("user");
    }
    let app = turnpike_admin::router(state.clone());
    Cp { state, app }
}

pub fn basic(user: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:password1"))
    )
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub json: Value,
}

impl Resp {
    pub fn etag(&self) -> String {
        self.headers
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }

    pub fn fields(&self) -> Vec<String> {
        self.json["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e["field"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Cp {
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        user: Option<&str>,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut b = Request::builder().method(method).uri(path);
        if let Some(u) = user {
            b = b.header("authorization", basic(u));
        }
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = match body {
            Some(v) => b
                .header("content-type", "application/json")
                .body(Body::from(v.to_string())),
            None => b.body(Body::empty()),
        }
        .expect("request");
        self.raw(req).await
    }

    pub async fn raw(&self, req: Request<Body>) -> Resp {
        let resp = self.app.clone().oneshot(req).await.expect("infallible");
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            json,
        }
    }

    pub async fn get(&self, path: &str, user: &str) -> Resp {
        self.call(Method::GET, path, Some(user), None, &[]).await
    }

    pub async fn post(&self, path: &str, user: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(user), Some(body), &[])
            .await
    }

    /// Creates an API as `pub` and returns its id.
    pub async fn create_api(
        &self,
        context: &str,
        version: &str,
        endpoint: &str,
        default: bool,
    ) -> String {
        let r = self
            .post(
                "/api/am/publisher/v1/apis",
                "pub",
                serde_json::json!({
                    "name": "Echo", "context": context, "version": version,
                    "isDefaultVersion": default, "endpoints": [endpoint],
                    "resources": [{"path": "/*", "methods": ["GET", "POST"]}],
                    "policies": ["Gold", "Unlimited"]
                }),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
        r.json["id"].as_str().expect("id").to_string()
    }

    pub async fn lifecycle(&self, id: &str, action: &str) -> Resp {
        let path = format!(
            "/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action={}",
            action.replace(' ', "%20")
        );
        self.call(Method::POST, &path, Some("pub"), None, &[]).await
    }
}
