//! OAuth 2.1 for agents over a real socket: dynamic client registration (RFC 7591) under
//! its policy (off: 404 and no `registration_endpoint`; an initial access token; redirect
//! URI rules; the cap; the per-address rate), then a registered public client's
//! authorization code with PKCE and a resource indicator (RFC 8707): the consent page
//! names the resource, Deny is `access_denied`, Allow is remembered, the token's `aud`
//! is the resource alone and gets no refresh token; an unknown or changed resource is
//! `invalid_target`. The login form is driven as a browser would (CSRF cookie and field).

mod support;

use serde_json::{json, Value};
use support::*;
use turnpike_keymanager::*;

const RESOURCE: &str = "http://gw.test:8280/pizza/v1";
const REDIRECT: &str = "http://127.0.0.1:33418/callback";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const IAT: &str = "initial-access-token-of-at-least-32-chars";

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

async fn start_agents(policy: Option<RegistrationPolicy>) -> Km {
    let mut config = KeyManagerConfig::new("");
    config.registration = policy;
    let km = start_with(config).await;
    km.store.add_api("/pizza/v1");
    km.store.add_api("/other/v1");
    km
}

fn policy() -> RegistrationPolicy {
    RegistrationPolicy {
        initial_access_token_sha256: Some(RegistrationPolicy::token_sha256(IAT)),
        owner: "agents".into(),
        scopes: vec!["read".into()],
        max_clients: 2,
        per_minute: 4,
        ..RegistrationPolicy::default()
    }
}

async fn register(km: &Km, token: Option<&str>, metadata: Value) -> (u16, Value) {
    let mut req = http().post(km.url("/oauth2/register")).json(&metadata);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("register");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn public_client() -> Value {
    json!({
        "client_name": "pizza agent",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "scope": "read write",
    })
}

async fn metadata(km: &Km) -> Value {
    let resp = http()
        .get(km.url("/.well-known/oauth-authorization-server"))
        .send()
        .await
        .expect("metadata");
    resp.json().await.expect("json")
}

#[tokio::test]
async fn registration_is_off_by_default() {
    let km = start_agents(None).await;
    assert!(metadata(&km).await.get("registration_endpoint").is_none());
    let (status, body) = register(&km, None, public_client()).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn registration_follows_its_policy() {
    let km = start_agents(Some(policy())).await;
    assert_eq!(
        metadata(&km).await["registration_endpoint"],
        km.url("/oauth2/register")
    );
    let (status, body) = register(&km, None, public_client()).await;
    assert_eq!((status, &body["error"]), (401, &json!("invalid_token")));
    let (status, body) = register(&km, Some("wrong"), public_client()).await;
    assert_eq!(status, 401, "{body}");

    let bad_uri =
        json!({"redirect_uris": ["http://agent.example/cb"], "token_endpoint_auth_method": "none"});
    let (status, body) = register(&km, Some(IAT), bad_uri).await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("invalid_redirect_uri"))
    );

    let (status, c) = register(&km, Some(IAT), public_client()).await;
    assert_eq!(status, 201, "{c}");
    assert!(
        c.get("client_secret").is_none(),
        "a public client has no secret"
    );
    assert_eq!(c["token_endpoint_auth_method"], "none");
    assert_eq!(c["redirect_uris"], json!([REDIRECT]));
    assert_eq!(c["scope"], "read", "a scope outside the policy is dropped");
    assert!(c["client_name"]
        .as_str()
        .unwrap_or("")
        .starts_with("pizza agent ("));

    let confidential = json!({"grant_types": ["client_credentials"], "scope": "read"});
    let (status, body) = register(&km, Some(IAT), confidential).await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("invalid_client_metadata")),
        "client_credentials is not in the policy's grant types"
    );
    let (status, c2) = register(&km, Some(IAT), public_client()).await;
    assert_eq!(status, 201, "{c2}");
    // The rate (4 a minute, refusals of the metadata included) and the cap (2 applications of `agents`).
    let (status, body) = register(&km, Some(IAT), public_client()).await;
    assert_eq!(
        (status, &body["error"]),
        (429, &json!("slow_down")),
        "{body}"
    );
    km.clock.advance(std::time::Duration::from_secs(60));
    let (status, body) = register(&km, Some(IAT), public_client()).await;
    assert_eq!(
        (status, &body["error"]),
        (403, &json!("access_denied")),
        "{body}"
    );
}

/// The authorization URL of a registered public client, with PKCE and `resource`.
fn authorize_url(km: &Km, client_id: &str, resource: &str) -> String {
    let q: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &s256_challenge(VERIFIER)),
            ("code_challenge_method", "S256"),
            ("scope", "read"),
            ("state", "st"),
            ("resource", resource),
        ])
        .finish();
    km.url(&format!("/oauth2/authorize?{q}"))
}

fn hidden_fields(html: &str) -> Vec<(String, String)> {
    html.split("<input type=\"hidden\" name=\"")
        .skip(1)
        .filter_map(|rest| {
            let (name, rest) = rest.split_once('"')?;
            let value = rest.split("value=\"").nth(1)?.split('"').next()?;
            Some((name.to_owned(), value.replace("&amp;", "&")))
        })
        .collect()
}

/// `name=value` of the cookie `name` the response sets.
fn cookie(resp: &reqwest::Response, name: &str) -> String {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .find(|v| v.starts_with(&format!("{name}=")))
        .expect("the cookie is set")
        .to_owned()
}

/// A form page's HTML and the cookies to post it with (its CSRF cookie, the session).
async fn form_page(resp: reqwest::Response, session: &str) -> (String, String) {
    let cookies = format!("{}; {session}", cookie(&resp, "tp_csrf"));
    (resp.text().await.expect("html"), cookies)
}

async fn post_form(km: &Km, cookie: &str, form: &[(String, String)]) -> reqwest::Response {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    http()
        .post(km.url("/oauth2/authorize"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", cookie)
        .body(body)
        .send()
        .await
        .expect("post")
}

/// Signs alice in on the login page; returns the consent page, the cookies to post it
/// with, and the session cookie.
async fn sign_in(km: &Km, url: &str) -> (String, String, String) {
    let page = http().get(url).send().await.expect("login page");
    assert_eq!(page.status(), 200);
    let csrf = cookie(&page, "tp_csrf");
    let mut form = hidden_fields(&page.text().await.expect("html"));
    form.push(("username".into(), "alice".into()));
    form.push(("password".into(), "alice-pw".into()));
    let consent = post_form(km, &csrf, &form).await;
    assert_eq!(consent.status(), 200, "the consent page follows the login");
    let session = cookie(&consent, "tp_session");
    let (html, cookies) = form_page(consent, &session).await;
    (html, cookies, session)
}

/// A GET of `url` with the browser's session cookie.
async fn with_session(url: &str, session: &str, what: &str) -> reqwest::Response {
    http()
        .get(url)
        .header("cookie", session)
        .send()
        .await
        .expect(what)
}

fn query_param(location: &str, name: &str) -> Option<String> {
    let q = location.split_once('?')?.1;
    form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

async fn exchange(km: &Km, client_id: &str, code: &str, resource: Option<&str>) -> (u16, Value) {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("client_id", client_id),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    if let Some(r) = resource {
        form.push(("resource", r));
    }
    let (status, _, body) = km.post("/oauth2/token", None, &form).await;
    (status, body)
}

#[tokio::test]
async fn an_agent_gets_a_token_bound_to_one_api_after_consent() {
    let km = start_agents(Some(RegistrationPolicy {
        initial_access_token_sha256: None,
        ..policy()
    }))
    .await;
    let (status, c) = register(&km, None, public_client()).await;
    assert_eq!(status, 201, "{c}");
    let client_id = c["client_id"].as_str().expect("client_id");

    // An unknown resource goes back to the client as invalid_target.
    let unknown = http()
        .get(authorize_url(&km, client_id, "http://gw.test:8280/nope/v1"))
        .send()
        .await
        .expect("authorize");
    let location = unknown.headers()["location"].to_str().expect("location");
    assert_eq!(
        query_param(location, "error").as_deref(),
        Some("invalid_target")
    );

    // The consent page names the client, the scope and the resource; Deny says no.
    let url = authorize_url(&km, client_id, RESOURCE);
    let (html, cookies, session) = sign_in(&km, &url).await;
    assert!(html.contains("pizza agent"), "{html}");
    assert!(
        html.contains(&format!("<code id=\"resource\">{RESOURCE}</code>")),
        "{html}"
    );
    assert!(html.contains("<code>read</code>"), "{html}");
    let mut deny = hidden_fields(&html);
    deny.push(("consent".into(), "deny".into()));
    let denied = post_form(&km, &cookies, &deny).await;
    let location = denied.headers()["location"].to_str().expect("location");
    assert_eq!(
        query_param(location, "error").as_deref(),
        Some("access_denied")
    );

    // Allow: a code, exchanged (public client: no secret) for a token bound to the API.
    let page = with_session(&url, &session, "consent again").await;
    assert_eq!(page.status(), 200, "deny remembers nothing");
    let (html, cookies) = form_page(page, &session).await;
    let mut allow = hidden_fields(&html);
    allow.push(("consent".into(), "allow".into()));
    let allowed = post_form(&km, &cookies, &allow).await;
    let location = allowed.headers()["location"].to_str().expect("location");
    let code = query_param(location, "code").expect("code");
    let (status, body) =
        exchange(&km, client_id, &code, Some("http://gw.test:8280/other/v1")).await;
    assert_eq!((status, &body["error"]), (400, &json!("invalid_target")));
    // The code was spent by that attempt: ask again, and the consent is remembered.
    let again = with_session(&url, &session, "authorize again").await;
    assert_eq!(
        again.status(),
        302,
        "a remembered consent redirects at once"
    );
    let location = again.headers()["location"].to_str().expect("location");
    let code = query_param(location, "code").expect("code");
    let (status, token) = exchange(&km, client_id, &code, Some(RESOURCE)).await;
    assert_eq!(status, 200, "{token}");
    assert!(
        token.get("refresh_token").is_none(),
        "a bound grant is not refreshed"
    );
    let jwks = km.km.jwks();
    let claims = verify_independently(
        token["access_token"].as_str().expect("jwt"),
        &serde_json::to_value(jwks).expect("jwks"),
    );
    assert_eq!(claims["aud"], json!([RESOURCE]));
    assert_eq!(claims["scope"], "read");
    assert_eq!(claims["subscriber"], "agents");
    assert_eq!(claims["username"], "alice");

    // Other scopes are another consent.
    let more = authorize_url(&km, client_id, RESOURCE).replace("scope=read", "scope=read+write");
    let page = with_session(&more, &session, "get").await;
    assert_eq!(page.status(), 200, "new scopes ask again");
}

#[tokio::test]
async fn client_credentials_take_a_resource_too() {
    let km = start_agents(None).await;
    let (status, _, body) = km
        .post(
            "/oauth2/token",
            Some(("app1", SECRET)),
            &[("grant_type", "client_credentials"), ("resource", RESOURCE)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, claims, _, _) = split(body["access_token"].as_str().expect("jwt"));
    assert_eq!(claims["aud"], json!([RESOURCE]));
    for bad in [
        "http://gw.test/nope/v1",
        "pizza/v1",
        "http://gw.test/pizza/v1#x",
    ] {
        let (status, _, body) = km
            .post(
                "/oauth2/token",
                Some(("app1", SECRET)),
                &[("grant_type", "client_credentials"), ("resource", bad)],
            )
            .await;
        assert_eq!(
            (status, &body["error"]),
            (400, &json!("invalid_target")),
            "{bad}"
        );
    }
    let (status, _, body) = km
        .post(
            "/oauth2/token",
            Some(("opaque1", SECRET)),
            &[("grant_type", "client_credentials"), ("resource", RESOURCE)],
        )
        .await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("invalid_target")),
        "{body}"
    );
}

/// Serves client ID metadata documents on 127.0.0.1 (port 0), counting the fetches:
/// `/client.json` names itself, `/other.json` names another client, `/moved` redirects,
/// `/large.json` is over 5 KiB.
async fn document_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use axum::response::IntoResponse;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let (b, h) = (base.clone(), hits.clone());
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let (b, h) = (b.clone(), h.clone());
        async move {
            h.fetch_add(1, Ordering::SeqCst);
            let doc = |id: String, pad: usize| {
                axum::Json(json!({"client_id": id, "client_name": "docs agent",
                    "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                    "padding": "x".repeat(pad)}))
                .into_response()
            };
            match uri.path() {
                "/client.json" => doc(format!("{b}/client.json"), 0),
                "/other.json" => doc(format!("{b}/client.json"), 0),
                "/large.json" => doc(format!("{b}/large.json"), 6000),
                "/moved" => axum::response::Redirect::temporary("/client.json").into_response(),
                _ => axum::http::StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, hits)
}

async fn refusal_page(km: &Km, client_id: &str) -> (u16, String) {
    let resp = http()
        .get(authorize_url(km, client_id, RESOURCE))
        .send()
        .await
        .expect("authorize");
    (
        resp.status().as_u16(),
        resp.text().await.unwrap_or_default(),
    )
}

#[tokio::test]
async fn a_client_id_metadata_document_is_fetched_under_its_policy() {
    let (base, hits) = document_server().await;
    let client_id = format!("{base}/client.json");

    // Off by default: the URL is an unknown client and nothing is fetched.
    let km = start_agents(None).await;
    assert!(metadata(&km)
        .await
        .get("client_id_metadata_document_supported")
        .is_none());
    let (status, html) = refusal_page(&km, &client_id).await;
    assert_eq!(status, 400, "{html}");
    assert!(html.contains("unknown client"), "{html}");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);

    // On, but loopback addresses are not allowed (as on a real server).
    let mut config = KeyManagerConfig::new("");
    config.metadata_documents = Some(MetadataDocumentPolicy {
        owner: "agents".into(),
        scopes: vec!["read".into()],
        ..MetadataDocumentPolicy::default()
    });
    let strict = start_with(config).await;
    assert_eq!(
        metadata(&strict).await["client_id_metadata_document_supported"],
        true
    );
    let (status, html) = refusal_page(&strict, &client_id).await;
    assert_eq!(status, 400);
    assert!(
        html.contains("not a usable metadata document URL"),
        "http is refused: {html}"
    );
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);

    // Allowed for the test: each bad document is refused with its reason.
    let mut config = KeyManagerConfig::new("");
    config.metadata_documents = Some(MetadataDocumentPolicy {
        owner: "agents".into(),
        scopes: vec!["read".into()],
        allow_private_addresses: true,
        ..MetadataDocumentPolicy::default()
    });
    let km = start_with(config).await;
    km.store.add_api("/pizza/v1");
    for (path, why) in [
        ("/other.json", "names another client_id"),
        ("/moved", "redirects are not followed"),
        ("/large.json", "larger than 5 KiB"),
    ] {
        let (status, html) = refusal_page(&km, &format!("{base}{path}")).await;
        assert_eq!(status, 400, "{path}");
        assert!(html.contains(why), "{path}: {html}");
    }

    // A good document: login, consent naming the client, a code, a bound token.
    let before = hits.load(std::sync::atomic::Ordering::SeqCst);
    let url = authorize_url(&km, &client_id, RESOURCE);
    let (html, cookies, session) = sign_in(&km, &url).await;
    assert!(html.contains("docs agent"), "{html}");
    let mut allow = hidden_fields(&html);
    allow.push(("consent".into(), "allow".into()));
    let allowed = post_form(&km, &cookies, &allow).await;
    let location = allowed.headers()["location"].to_str().expect("location");
    let code = query_param(location, "code").expect("code");
    let (status, token) = exchange(&km, &client_id, &code, Some(RESOURCE)).await;
    assert_eq!(status, 200, "{token}");
    let (_, claims, _, _) = split(token["access_token"].as_str().expect("jwt"));
    assert_eq!(claims["aud"], json!([RESOURCE]));
    assert_eq!(claims["subscriber"], "agents");
    // The document was fetched once for all of it: cached.
    let again = with_session(&url, &session, "authorize again").await;
    assert_eq!(again.status(), 302, "consent remembered");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), before + 1);
}
