//! The authorization code grant with PKCE over a real socket: the independent `oauth2`
//! crate builds the authorization URL and exchanges the code; the login form is filled
//! the way a browser does (CSRF cookie and hidden field, session cookie afterwards).

mod support;

use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::url;
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, CsrfToken, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, TokenResponse, TokenUrl,
};
use support::*;
use turnpike_keymanager::*;

const REDIRECT: &str = "http://portal.test/callback";

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

async fn start_portal() -> Km {
    let mut config = KeyManagerConfig::new("");
    config.public_clients = vec!["portal".into()];
    config.authorize_clients = vec![AuthorizeClient {
        client_id: "portal".into(),
        redirect_uris: vec![REDIRECT.into()],
    }];
    let km = start_with(config).await;
    let mut portal = client("portal", TokenFormat::Jwt, false);
    portal.grant_types = vec![GrantType::RefreshToken];
    km.store.add_client(portal);
    km
}

macro_rules! portal_client {
    ($km:expr) => {
        BasicClient::new(ClientId::new("portal".into()))
            .set_auth_uri(AuthUrl::new($km.url("/oauth2/authorize")).expect("url"))
            .set_token_uri(TokenUrl::new($km.url("/oauth2/token")).expect("url"))
            .set_redirect_uri(RedirectUrl::new(REDIRECT.into()).expect("url"))
    };
}

/// `name=value` of a `Set-Cookie` header naming `name`, with its attributes.
fn set_cookie(headers: &reqwest::header::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(str::to_owned)
}

fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap_or_default().to_owned()
}

/// Every hidden field of the login form.
fn hidden_fields(html: &str) -> Vec<(String, String)> {
    html.split("<input type=\"hidden\" ")
        .skip(1)
        .map(|rest| {
            let name = rest
                .split("name=\"")
                .nth(1)
                .expect("test value")
                .split('"')
                .next()
                .expect("test value");
            let value = rest
                .split("value=\"")
                .nth(1)
                .expect("test value")
                .split('"')
                .next()
                .expect("test value");
            (name.to_owned(), value.replace("&amp;", "&"))
        })
        .collect()
}

struct LoginOutcome {
    status: u16,
    location: Option<url::Url>,
    session: Option<String>,
    body: String,
}

/// Opens `auth_url`, then submits the form with `password` (and the CSRF cookie unless
/// `drop_csrf_cookie`).
async fn login(auth_url: &url::Url, password: &str, drop_csrf_cookie: bool) -> LoginOutcome {
    let page = http().get(auth_url.as_str()).send().await.expect("get");
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-security-policy"]
        .to_str()
        .expect("test value")
        .contains("default-src 'none'"));
    let csrf = set_cookie(page.headers(), "tp_csrf").expect("csrf cookie");
    assert!(csrf.contains("HttpOnly") && csrf.contains("SameSite=Strict"));
    assert!(!csrf.contains("Secure"), "http issuer: no Secure attribute");
    let html = page.text().await.expect("html");
    assert!(html.contains("<label for=\"password\">"));
    let mut form = hidden_fields(&html);
    form.push(("username".into(), "alice".into()));
    form.push(("password".into(), password.into()));
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&form)
        .finish();
    let mut req = http()
        .post(auth_url.as_str().split('?').next().expect("test value"))
        .header("content-type", "application/x-www-form-urlencoded");
    if !drop_csrf_cookie {
        req = req.header("cookie", cookie_pair(&csrf));
    }
    let resp = req.body(body).send().await.expect("post");
    let status = resp.status().as_u16();
    let location = resp
        .headers()
        .get("location")
        .map(|l| url::Url::parse(l.to_str().expect("test value")).expect("location"));
    let session = set_cookie(resp.headers(), "tp_session");
    LoginOutcome {
        status,
        location,
        session,
        body: resp.text().await.unwrap_or_default(),
    }
}

fn query(url: &url::Url, key: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

#[tokio::test]
async fn code_with_pkce_logs_a_user_in_once_and_the_session_skips_the_form() {
    let km = start_portal().await;
    let oauth = portal_client!(km);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (auth_url, state) = oauth
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();

    let out = login(&auth_url, "alice-pw", false).await;
    assert_eq!(out.status, 303, "{}", out.body);
    let location = out.location.expect("redirect");
    assert!(location.as_str().starts_with(REDIRECT));
    assert_eq!(
        query(&location, "state").as_deref(),
        Some(state.secret().as_str())
    );
    let code = query(&location, "code").expect("code");
    let session = out.session.expect("session cookie");
    assert!(session.contains("HttpOnly") && session.contains("SameSite=Strict"));
    assert!(session.contains("Path=/oauth2"));

    let verifier_copy = PkceCodeVerifier::new(verifier.secret().clone());
    let token = oauth
        .exchange_code(AuthorizationCode::new(code.clone()))
        .set_pkce_verifier(verifier)
        .request_async(&http())
        .await
        .expect("code exchange");
    let claims = split(token.access_token().secret()).1;
    assert_eq!(claims["username"], "alice");
    assert_eq!(claims["client_id"], "portal");
    // alice may delegate only "read" of the client's read and write.
    assert_eq!(claims["scope"], "read");
    assert!(token.refresh_token().is_some(), "public client refresh");

    // A code is single-use.
    let again = oauth
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier_copy)
        .request_async(&http())
        .await;
    assert!(again.is_err(), "a used code must be refused");

    // With the session cookie the next authorization answers at once with a code.
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let (auth_url, _) = oauth
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();
    let resp = http()
        .get(auth_url.as_str())
        .header("cookie", cookie_pair(&session))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status(), 302);
    let loc = url::Url::parse(resp.headers()["location"].to_str().expect("test value"))
        .expect("test value");
    assert!(query(&loc, "code").is_some());

    // Logout ends the session: the login form again.
    let out = http()
        .post(km.url("/oauth2/logout"))
        .header("cookie", cookie_pair(&session))
        .send()
        .await
        .expect("logout");
    assert_eq!(out.status(), 204);
    assert!(set_cookie(out.headers(), "tp_session")
        .expect("test value")
        .contains("Max-Age=0"));
    let resp = http()
        .get(auth_url.as_str())
        .header("cookie", cookie_pair(&session))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status(), 200, "login page after logout");
}

#[tokio::test]
async fn a_wrong_verifier_or_an_expired_code_gets_no_token() {
    let km = start_portal().await;
    let oauth = portal_client!(km);
    for expire in [false, true] {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (auth_url, _) = oauth
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .url();
        let out = login(&auth_url, "alice-pw", false).await;
        let code = query(&out.location.expect("redirect"), "code").expect("code");
        let presented = if expire {
            km.clock.advance(std::time::Duration::from_secs(61));
            verifier
        } else {
            PkceCodeVerifier::new("x".repeat(64))
        };
        let (status, _, json) = km
            .post(
                "/oauth2/token",
                None,
                &[
                    ("grant_type", "authorization_code"),
                    ("client_id", "portal"),
                    ("code", &code),
                    ("redirect_uri", REDIRECT),
                    ("code_verifier", presented.secret()),
                ],
            )
            .await;
        assert_eq!(status, 400, "{json}");
        assert_eq!(json["error"], "invalid_grant");
    }
}

#[tokio::test]
async fn the_login_form_refuses_a_missing_csrf_cookie_and_a_wrong_password() {
    let km = start_portal().await;
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let (auth_url, _) = portal_client!(km)
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .url();
    let out = login(&auth_url, "alice-pw", true).await;
    assert_eq!(out.status, 403);
    assert!(out.location.is_none() && out.session.is_none());
    assert!(out.body.contains("expired"));
    let out = login(&auth_url, "wrong", false).await;
    assert_eq!(out.status, 401);
    assert!(out.location.is_none() && out.session.is_none());
    assert!(out.body.contains("Wrong username or password"));
}

#[tokio::test]
async fn bad_requests_never_redirect_to_unregistered_uris() {
    let km = start_portal().await;
    let challenge = "a".repeat(43);
    let get = |q: Vec<(&str, &str)>| {
        let url = format!(
            "{}?{}",
            km.url("/oauth2/authorize"),
            form_urlencoded::Serializer::new(String::new())
                .extend_pairs(q)
                .finish()
        );
        async move { http().get(url).send().await.expect("get") }
    };
    let base = |redirect: &'static str| {
        vec![
            ("response_type", "code"),
            ("client_id", "portal"),
            ("redirect_uri", redirect),
            ("state", "s1"),
        ]
    };
    // Unregistered redirect URI: an error page, no redirect.
    let mut q = base("http://evil.test/cb");
    q.push(("code_challenge", &challenge));
    q.push(("code_challenge_method", "S256"));
    let resp = get(q).await;
    assert_eq!(resp.status(), 400);
    assert!(resp.headers().get("location").is_none());
    // No PKCE, or plain PKCE: an error at the (registered) redirect URI.
    for extra in [vec![], vec![("code_challenge", challenge.as_str())]] {
        let mut q = base(REDIRECT);
        q.extend(extra);
        let resp = get(q).await;
        assert_eq!(resp.status(), 302);
        let loc = url::Url::parse(resp.headers()["location"].to_str().expect("test value"))
            .expect("test value");
        assert_eq!(query(&loc, "error").as_deref(), Some("invalid_request"));
        assert_eq!(query(&loc, "state").as_deref(), Some("s1"));
    }
    // Client-credentials clients cannot use the browser flow.
    let mut q = base(REDIRECT);
    q[1] = ("client_id", "app1");
    assert_eq!(get(q).await.status(), 400);
}

#[tokio::test]
async fn discovery_and_rfc8414_metadata_name_the_authorization_endpoint() {
    let km = start_portal().await;
    for path in [
        "/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server",
    ] {
        let doc: serde_json::Value = reqwest::get(km.url(path))
            .await
            .expect("test value")
            .json()
            .await
            .expect("test value");
        assert_eq!(doc["authorization_endpoint"], km.url("/oauth2/authorize"));
        assert_eq!(doc["code_challenge_methods_supported"][0], "S256");
        assert_eq!(doc["response_types_supported"][0], "code");
        let methods = doc["token_endpoint_auth_methods_supported"].to_string();
        assert!(methods.contains("\"none\""), "{path}: {methods}");
    }
}

#[tokio::test]
async fn a_minted_client_token_is_short_lived_and_names_the_application() {
    let km = start().await;
    let token = km
        .km
        .mint_client_token("app1", Duration::from_secs(60))
        .await
        .expect("mint");
    let claims = split(&token).1;
    assert_eq!(claims["application"], "app-app1");
    assert_eq!(
        claims["exp"].as_u64().expect("test value") - claims["iat"].as_u64().expect("test value"),
        60
    );
    assert!(km
        .km
        .mint_client_token("nobody", Duration::from_secs(60))
        .await
        .is_err());
}

/// Posts a form page's hidden fields plus `extra`, with `cookies`.
async fn submit(
    km: &Km,
    html: &str,
    extra: &[(&str, &str)],
    cookies: &[String],
) -> reqwest::Response {
    let mut form = hidden_fields(html);
    form.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&form)
        .finish();
    http()
        .post(km.url("/oauth2/authorize"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", cookies.join("; "))
        .body(body)
        .send()
        .await
        .expect("post")
}

#[tokio::test]
async fn an_application_with_a_redirect_uri_gets_a_code_only_after_consent() {
    const APP_REDIRECT: &str = "https://shop.test/cb";
    let km = start_portal().await;
    km.store.add_client(ClientRecord {
        redirect_uris: vec![APP_REDIRECT.into()],
        ..client("shop", TokenFormat::Jwt, false)
    });
    let oauth = BasicClient::new(ClientId::new("shop".into()))
        .set_client_secret(oauth2::ClientSecret::new(SECRET.into()))
        .set_auth_uri(AuthUrl::new(km.url("/oauth2/authorize")).expect("url"))
        .set_token_uri(TokenUrl::new(km.url("/oauth2/token")).expect("url"))
        .set_redirect_uri(RedirectUrl::new(APP_REDIRECT.into()).expect("url"));
    for answer in ["deny", "allow"] {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (auth_url, state) = oauth
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .url();
        // Signing in shows the consent page, not a redirect.
        let out = login(&auth_url, "alice-pw", false).await;
        assert_eq!(out.status, 200, "{}", out.body);
        assert!(out.location.is_none());
        assert!(out.body.contains("Allow access?") && out.body.contains("App shop"));
        let session = cookie_pair(&out.session.expect("session"));
        // The consent form needs its CSRF cookie: a fresh GET (with the session) gives
        // the page and the cookie, and skips the password but not the consent.
        let page = http()
            .get(auth_url.as_str())
            .header("cookie", &session)
            .send()
            .await
            .expect("get");
        let csrf = cookie_pair(&set_cookie(page.headers(), "tp_csrf").expect("csrf"));
        let html = page.text().await.expect("html");
        assert!(html.contains("Allow access?"), "{html}");
        let resp = submit(&km, &html, &[("consent", answer)], &[session, csrf]).await;
        assert_eq!(resp.status(), 303);
        let loc = url::Url::parse(resp.headers()["location"].to_str().expect("loc")).expect("url");
        assert!(loc.as_str().starts_with(APP_REDIRECT));
        assert_eq!(
            query(&loc, "state").as_deref(),
            Some(state.secret().as_str())
        );
        if answer == "deny" {
            assert_eq!(query(&loc, "error").as_deref(), Some("access_denied"));
            assert!(query(&loc, "code").is_none());
            continue;
        }
        let code = query(&loc, "code").expect("code");
        let token = oauth
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(verifier)
            .request_async(&http())
            .await
            .expect("token");
        let claims = split(token.access_token().secret()).1;
        assert_eq!(claims["client_id"], "shop");
        assert_eq!(claims["username"], "alice");
        assert_eq!(claims["application"], "app-shop");
    }
}
