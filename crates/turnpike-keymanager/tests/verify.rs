//! Public clients (RFC 6749 §2.1: `client_id` alone, password grant) and in-process
//! validation of access tokens (`KeyManager::verify_access_token`): good, wrong audience,
//! expired, revoked, tampered, `alg: none`, and tokens signed before a key rotation.

mod support;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use support::*;
use turnpike_keymanager::*;

const CLI: &str = "cli";

async fn with_public_client() -> Km {
    let mut config = KeyManagerConfig::new("");
    config.public_clients = vec![CLI.into()];
    let km = start_with(config).await;
    let mut cli = client(CLI, TokenFormat::Jwt, false);
    cli.grant_types = vec![GrantType::Password, GrantType::RefreshToken];
    cli.audience = vec!["mgmt".into()];
    km.store.add_client(cli);
    km
}

async fn password_token(km: &Km) -> String {
    let (status, _, json) = km
        .post(
            "/oauth2/token",
            None,
            &[
                ("grant_type", "password"),
                ("client_id", CLI),
                ("username", "alice"),
                ("password", "alice-pw"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(json["scope"], "read", "alice may delegate only `read`");
    json["access_token"].as_str().expect("token").to_string()
}

fn rejection(r: Result<AccessClaims, VerifyError>) -> TokenRejection {
    match r {
        Err(VerifyError::Rejected(why)) => why,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test]
async fn a_public_client_authenticates_with_its_id_alone_and_others_cannot() {
    let km = with_public_client().await;
    password_token(&km).await;
    // A public client presenting a secret is refused (it has none to present).
    let (status, _, _) = km
        .post(
            "/oauth2/token",
            Some((CLI, SECRET)),
            &[
                ("grant_type", "password"),
                ("username", "alice"),
                ("password", "alice-pw"),
            ],
        )
        .await;
    assert_eq!(status, 401);
    // A confidential client without its secret is refused.
    let (status, headers, json) = km
        .post(
            "/oauth2/token",
            None,
            &[("grant_type", "client_credentials"), ("client_id", "app1")],
        )
        .await;
    assert_eq!(
        (status, json["error"].as_str()),
        (401, Some("invalid_client"))
    );
    assert!(headers.contains_key("www-authenticate"));
    // The public client may not use client_credentials.
    let (status, _, json) = km
        .post(
            "/oauth2/token",
            None,
            &[("grant_type", "client_credentials"), ("client_id", CLI)],
        )
        .await;
    assert_eq!(
        (status, json["error"].as_str()),
        (400, Some("unauthorized_client"))
    );
    // A wrong password through the public client is invalid_grant, not a free pass.
    let (status, _, json) = km
        .post(
            "/oauth2/token",
            None,
            &[
                ("grant_type", "password"),
                ("client_id", CLI),
                ("username", "alice"),
                ("password", "nope"),
            ],
        )
        .await;
    assert_eq!(
        (status, json["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

#[tokio::test]
async fn verify_checks_signature_audience_time_and_revocation() {
    let km = with_public_client().await;
    let token = password_token(&km).await;
    let claims = km
        .km
        .verify_access_token(&token, "mgmt")
        .await
        .expect("valid");
    assert_eq!(claims.username.as_deref(), Some("alice"));
    assert_eq!(
        rejection(km.km.verify_access_token(&token, "turnpike").await),
        TokenRejection::WrongAudience
    );

    // Tampered payload: the signature no longer matches.
    let parts: Vec<&str> = token.split('.').collect();
    let mut payload: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
    payload["scope"] = "read write admin".into();
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(payload.to_string()),
        parts[2]
    );
    assert_eq!(
        rejection(km.km.verify_access_token(&forged, "mgmt").await),
        TokenRejection::BadSignature
    );
    // `alg: none` with the real kid: refused before any signature work.
    let mut header: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).expect("b64")).expect("json");
    header["alg"] = "none".into();
    let none = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        parts[1]
    );
    assert_eq!(
        rejection(km.km.verify_access_token(&none, "mgmt").await),
        TokenRejection::Malformed
    );
    assert_eq!(
        rejection(km.km.verify_access_token("opaque-looking", "mgmt").await),
        TokenRejection::Malformed
    );

    // Revoked through RFC 7009 by the public client that holds it.
    let (status, _, _) = km
        .post(
            "/oauth2/revoke",
            None,
            &[("client_id", CLI), ("token", &token)],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        rejection(km.km.verify_access_token(&token, "mgmt").await),
        TokenRejection::Revoked
    );

    // Expired: 600 s lifetime, the injected clock moves past it.
    let fresh = password_token(&km).await;
    km.km
        .verify_access_token(&fresh, "mgmt")
        .await
        .expect("valid");
    km.clock.advance(std::time::Duration::from_secs(601));
    assert_eq!(
        rejection(km.km.verify_access_token(&fresh, "mgmt").await),
        TokenRejection::Expired
    );
}

#[tokio::test]
async fn tokens_signed_before_a_rotation_keep_verifying() {
    let km = with_public_client().await;
    let old = password_token(&km).await;
    let old_kid = split(&old).0["kid"].clone();
    let new_kid = km.km.rotate_keys().await.expect("rotate");
    let keys = km.km.keys();
    assert_eq!(keys.len(), 2);
    assert!(keys.iter().any(|k| k.kid == new_kid && k.active));
    assert!(keys
        .iter()
        .any(|k| k.kid == old_kid.as_str().unwrap_or_default() && !k.active));
    let new = password_token(&km).await;
    assert_eq!(split(&new).0["kid"], new_kid.as_str());
    km.km
        .verify_access_token(&old, "mgmt")
        .await
        .expect("old key still trusted");
    km.km
        .verify_access_token(&new, "mgmt")
        .await
        .expect("new key");
}
