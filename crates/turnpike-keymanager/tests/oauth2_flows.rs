//! The key manager over a real socket, driven by the independent `oauth2` crate, with
//! JWTs verified by independent libraries against the served JWKS.

mod support;

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, ClientId, ClientSecret, IntrospectionUrl, RefreshToken, ResourceOwnerPassword,
    ResourceOwnerUsername, RevocationUrl, Scope, TokenIntrospectionResponse, TokenResponse,
    TokenUrl,
};
use support::*;
use turnpike_keymanager::{KeyManagerConfig, SigningAlg};

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

macro_rules! oauth_client {
    ($km:expr, $id:expr) => {
        BasicClient::new(ClientId::new($id.to_string()))
            .set_client_secret(ClientSecret::new(SECRET.to_string()))
            .set_token_uri(TokenUrl::new($km.url("/oauth2/token")).expect("url"))
            .set_revocation_url(RevocationUrl::new($km.url("/oauth2/revoke")).expect("url"))
            .set_introspection_url(
                IntrospectionUrl::new($km.url("/oauth2/introspect")).expect("url"),
            )
    };
}

async fn jwks(km: &Km) -> serde_json::Value {
    reqwest::get(km.url("/oauth2/jwks"))
        .await
        .expect("jwks")
        .json()
        .await
        .expect("json")
}

#[tokio::test]
async fn client_credentials_jwt_verifies_against_the_served_jwks() {
    let km = start().await;
    let client = oauth_client!(km, "app1");
    let token = client
        .exchange_client_credentials()
        .add_scope(Scope::new("read".into()))
        .request_async(&http())
        .await
        .expect("token");
    assert!(
        token.refresh_token().is_none(),
        "no refresh token for client_credentials"
    );
    assert_eq!(token.expires_in().map(|d| d.as_secs()), Some(600));
    let claims = verify_independently(token.access_token().secret(), &jwks(&km).await);
    assert_eq!(claims["iss"], km.base.as_str());
    assert_eq!(claims["sub"], "app1");
    assert_eq!(claims["aud"][0], "turnpike");
    assert_eq!(claims["scope"], "read");
    assert_eq!(claims["client_id"], "app1");
    assert_eq!(claims["application"], "app-app1");
    assert_eq!(claims["subscriber"], "alice");
    let (iat, exp, nbf) = (
        claims["iat"].as_u64(),
        claims["exp"].as_u64(),
        claims["nbf"].as_u64(),
    );
    assert_eq!(exp.zip(iat).map(|(e, i)| e - i), Some(600));
    assert_eq!(nbf, iat);
    assert!(claims["jti"].as_str().is_some_and(|j| !j.is_empty()));
    let (header, ..) = split(token.access_token().secret());
    assert_eq!(header["typ"], "at+jwt");
}

#[tokio::test]
async fn form_client_authentication_works_and_two_methods_are_refused() {
    let km = start().await;
    let client = oauth_client!(km, "app1").set_auth_type(AuthType::RequestBody);
    let token = client
        .exchange_client_credentials()
        .request_async(&http())
        .await
        .expect("token");
    assert_eq!(
        token.scopes().map(|s| s.len()),
        Some(2),
        "all allowed scopes by default"
    );
    let (status, _, body) = km
        .post(
            "/oauth2/token",
            Some(("app1", SECRET)),
            &[
                ("grant_type", "client_credentials"),
                ("client_secret", SECRET),
            ],
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request"))
    );
}

#[tokio::test]
async fn bad_client_credentials_get_401_with_a_challenge() {
    let km = start().await;
    for creds in [("app1", "wrong"), ("nobody", SECRET)] {
        let (status, headers, body) = km
            .post(
                "/oauth2/token",
                Some(creds),
                &[("grant_type", "client_credentials")],
            )
            .await;
        assert_eq!(status, 401);
        assert_eq!(body["error"], "invalid_client");
        assert!(headers["www-authenticate"]
            .to_str()
            .unwrap_or("")
            .starts_with("Basic"));
        assert_eq!(headers["cache-control"], "no-store");
    }
    // Malformed Authorization headers are invalid_client too.
    for raw in ["Basic !!!", "Bearer abc", "Basic", "Basic YWJj"] {
        let resp = http()
            .post(km.url("/oauth2/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("authorization", raw)
            .body("grant_type=client_credentials")
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 401, "{raw}");
    }
}

#[tokio::test]
async fn request_errors_use_rfc6749_codes() {
    let km = start().await;
    let c = Some(("app1", SECRET));
    let cases: [(&[(&str, &str)], &str); 5] = [
        (
            &[("grant_type", "authorization_code")],
            "unauthorized_client",
        ),
        (&[], "invalid_request"),
        (
            &[("grant_type", "client_credentials"), ("scope", "admin")],
            "invalid_scope",
        ),
        (&[("grant_type", "password")], "invalid_request"),
        (
            &[
                ("grant_type", "client_credentials"),
                ("grant_type", "password"),
            ],
            "invalid_request",
        ),
    ];
    for (form, code) in cases {
        let (status, _, body) = km.post("/oauth2/token", c, form).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some(code)),
            "{form:?}"
        );
    }
    let (status, _, body) = km
        .post(
            "/oauth2/token",
            Some(("cconly", SECRET)),
            &[
                ("grant_type", "password"),
                ("username", "alice"),
                ("password", "alice-pw"),
            ],
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unauthorized_client"))
    );
    let resp = http()
        .post(km.url("/oauth2/token"))
        .basic_auth("app1", Some(SECRET))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 400);
}

#[tokio::test]
async fn password_grant_rotates_refresh_tokens_and_reuse_revokes_the_family() {
    let km = start().await;
    let client = oauth_client!(km, "app1");
    let first = client
        .exchange_password(
            &ResourceOwnerUsername::new("alice".into()),
            &ResourceOwnerPassword::new("alice-pw".into()),
        )
        .request_async(&http())
        .await
        .expect("password grant");
    let claims = verify_independently(first.access_token().secret(), &jwks(&km).await);
    assert_eq!(
        (claims["sub"].as_str(), claims["scope"].as_str()),
        (Some("alice"), Some("read"))
    );
    let r1 = first.refresh_token().expect("refresh token").clone();
    let second = client
        .exchange_refresh_token(&r1)
        .request_async(&http())
        .await
        .expect("refresh");
    let r2 = second.refresh_token().expect("rotated").clone();
    assert_ne!(r1.secret(), r2.secret());
    // Replaying the old refresh token is refused and revokes the family...
    let replay = client
        .exchange_refresh_token(&r1)
        .request_async(&http())
        .await;
    assert!(replay.is_err(), "reused refresh token must fail");
    let (status, _, body) = km
        .post(
            "/oauth2/token",
            Some(("app1", SECRET)),
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", r2.secret()),
            ],
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    // ...including access tokens issued from it.
    let jti = verify_independently(second.access_token().secret(), &jwks(&km).await)["jti"].clone();
    let revoked = km.km.revoked().await.expect("revoked");
    assert!(revoked
        .iter()
        .any(|r| r.jti == jti.as_str().unwrap_or_default()));
    // Wrong user password is invalid_grant, not invalid_client.
    let (status, _, body) = km
        .post(
            "/oauth2/token",
            Some(("app1", SECRET)),
            &[
                ("grant_type", "password"),
                ("username", "alice"),
                ("password", "x"),
            ],
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

#[tokio::test]
async fn another_clients_refresh_token_is_refused() {
    let km = start().await;
    let (_, _, body) = km
        .post(
            "/oauth2/token",
            Some(("app1", SECRET)),
            &[
                ("grant_type", "password"),
                ("username", "alice"),
                ("password", "alice-pw"),
            ],
        )
        .await;
    let r = RefreshToken::new(body["refresh_token"].as_str().expect("rt").into());
    let other = oauth_client!(km, "app2");
    assert!(other
        .exchange_refresh_token(&r)
        .request_async(&http())
        .await
        .is_err());
}

#[tokio::test]
async fn opaque_tokens_introspect_and_revoke() {
    let km = start().await;
    let owner = oauth_client!(km, "opaque1");
    let token = owner
        .exchange_client_credentials()
        .request_async(&http())
        .await
        .expect("token");
    assert!(
        !token.access_token().secret().contains('.'),
        "opaque, not a JWT"
    );
    let gateway = oauth_client!(km, "gateway");
    let info = gateway
        .introspect(token.access_token())
        .request_async(&http())
        .await
        .expect("introspect");
    assert!(info.active());
    assert_eq!(info.client_id().map(|c| c.as_str()), Some("opaque1"));
    assert_eq!(info.sub(), Some("opaque1"));
    // A client without introspection rights sees other clients' tokens as inactive.
    let stranger = oauth_client!(km, "app2");
    let info = stranger
        .introspect(token.access_token())
        .request_async(&http())
        .await
        .expect("introspect");
    assert!(!info.active());
    // (The oauth2 crate refuses a non-https revocation URL, so this call is raw.)
    let (status, ..) = km
        .post(
            "/oauth2/revoke",
            Some(("opaque1", SECRET)),
            &[
                ("token", token.access_token().secret()),
                ("token_type_hint", "access_token"),
            ],
        )
        .await;
    assert_eq!(status, 200);
    let info = gateway
        .introspect(token.access_token())
        .request_async(&http())
        .await
        .expect("introspect");
    assert!(!info.active(), "revoked opaque token is inactive");
    // Introspection requires client authentication.
    let (status, _, _) = km.post("/oauth2/introspect", None, &[("token", "x")]).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn revoking_a_jwt_puts_its_jti_on_the_revocation_list() {
    let km = start().await;
    let token = km.client_credentials("app1").await;
    let access = token["access_token"].as_str().expect("at");
    let jti = split(access).1["jti"].as_str().expect("jti").to_owned();
    // Another client may not revoke it; an unknown token is a silent 200.
    let (status, _, body) = km
        .post(
            "/oauth2/revoke",
            Some(("app2", SECRET)),
            &[("token", access)],
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unauthorized_client"))
    );
    let (status, ..) = km
        .post(
            "/oauth2/revoke",
            Some(("app1", SECRET)),
            &[("token", "garbage")],
        )
        .await;
    assert_eq!(status, 200);
    let changed = km.km.revocations_changed();
    let (status, ..) = km
        .post(
            "/oauth2/revoke",
            Some(("app1", SECRET)),
            &[("token", access)],
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        changed.has_changed().unwrap_or(false),
        "the control plane is told to publish"
    );
    assert!(km
        .km
        .revoked()
        .await
        .expect("list")
        .iter()
        .any(|r| r.jti == jti));
    let (_, _, info) = km
        .post(
            "/oauth2/introspect",
            Some(("gateway", SECRET)),
            &[("token", access)],
        )
        .await;
    assert_eq!(info["active"], false);
}

#[tokio::test]
async fn brute_force_locks_the_client_id_then_unlocks() {
    let km = start().await;
    let attempt = |secret: &'static str| {
        let km = &km;
        async move {
            km.post(
                "/oauth2/token",
                Some(("app1", secret)),
                &[("grant_type", "client_credentials")],
            )
            .await
        }
    };
    for _ in 0..9 {
        assert_eq!(attempt("wrong").await.0, 401);
    }
    let (status, headers, body) = attempt("wrong").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (429, Some("invalid_client"))
    );
    assert_eq!(headers["retry-after"], "60");
    // Locked: even the right secret is refused, and other clients are unaffected.
    assert_eq!(attempt(SECRET).await.0, 429);
    km.client_credentials("app2").await;
    km.clock.advance(std::time::Duration::from_secs(61));
    assert_eq!(attempt(SECRET).await.0, 200);
}

#[tokio::test]
async fn rotation_keeps_old_keys_in_the_jwks() {
    let km = start().await;
    let before = km.client_credentials("app1").await;
    let new_kid = km.km.rotate_keys().await.expect("rotate");
    let after = km.client_credentials("app1").await;
    let set = jwks(&km).await;
    assert_eq!(set["keys"].as_array().map(Vec::len), Some(2));
    let old = before["access_token"].as_str().expect("at");
    let new = after["access_token"].as_str().expect("at");
    verify_independently(old, &set);
    verify_independently(new, &set);
    assert_eq!(split(new).0["kid"], new_kid.as_str());
    assert_ne!(split(old).0["kid"], new_kid.as_str());
    // Once the old key's tokens have all expired, the next rotation drops it.
    km.clock.advance(std::time::Duration::from_secs(25 * 3600));
    km.km.rotate_keys().await.expect("rotate");
    assert_eq!(km.km.jwks().keys.len(), 2);
}

#[tokio::test]
async fn rs256_is_an_option() {
    let mut config = KeyManagerConfig::new("");
    config.signing_alg = SigningAlg::RS256;
    let km = start_with(config).await;
    let token = km.client_credentials("app1").await;
    let set = jwks(&km).await;
    assert_eq!(set["keys"][0]["kty"], "RSA");
    let (header, ..) = split(token["access_token"].as_str().expect("at"));
    assert_eq!(header["alg"], "RS256");
    verify_independently(token["access_token"].as_str().expect("at"), &set);
}

#[tokio::test]
async fn discovery_names_the_endpoints() {
    let km = start().await;
    let doc: serde_json::Value = reqwest::get(km.url("/.well-known/openid-configuration"))
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(doc["issuer"], km.base.as_str());
    assert_eq!(doc["token_endpoint"], km.url("/oauth2/token").as_str());
    assert_eq!(doc["jwks_uri"], km.url("/oauth2/jwks").as_str());
    assert_eq!(
        doc["introspection_endpoint"],
        km.url("/oauth2/introspect").as_str()
    );
    assert_eq!(
        doc["revocation_endpoint"],
        km.url("/oauth2/revoke").as_str()
    );
    assert_eq!(doc["id_token_signing_alg_values_supported"][0], "ES256");
}

#[tokio::test]
async fn expired_tokens_introspect_as_inactive() {
    let km = start().await;
    let jwt = km.client_credentials("app1").await;
    let opaque = km.client_credentials("opaque1").await;
    for t in [&jwt, &opaque] {
        let token = t["access_token"].as_str().expect("at");
        let (_, _, info) = km
            .post(
                "/oauth2/introspect",
                Some(("gateway", SECRET)),
                &[("token", token)],
            )
            .await;
        assert_eq!(info["active"], true);
    }
    km.clock.advance(std::time::Duration::from_secs(601));
    for t in [&jwt, &opaque] {
        let token = t["access_token"].as_str().expect("at");
        let (_, _, info) = km
            .post(
                "/oauth2/introspect",
                Some(("gateway", SECRET)),
                &[("token", token)],
            )
            .await;
        assert_eq!(info["active"], false);
    }
}

/// WSO2's `keytype` claim: the JWTs of a sandbox client say SANDBOX, a production
/// client's PRODUCTION; opaque tokens say it through introspection (what gateways read).
#[tokio::test]
async fn tokens_carry_the_key_type_of_the_keys_that_obtained_them() {
    let km = start().await;
    for (client, want) in [("app1", "PRODUCTION"), ("sandbox1", "SANDBOX")] {
        let t = km.client_credentials(client).await;
        let (_, claims, ..) = split(t["access_token"].as_str().expect("token"));
        assert_eq!(claims["keytype"], want, "{client}");
    }
    for (client, want) in [("opaque1", "PRODUCTION"), ("sandbox-opaque", "SANDBOX")] {
        let t = km.client_credentials(client).await;
        let token = t["access_token"].as_str().expect("token");
        let (status, _, info) = km
            .post(
                "/oauth2/introspect",
                Some(("gateway", SECRET)),
                &[("token", token)],
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(
            (info["active"].clone(), info["keytype"].clone()),
            (serde_json::json!(true), serde_json::json!(want)),
            "{client}"
        );
    }
}
