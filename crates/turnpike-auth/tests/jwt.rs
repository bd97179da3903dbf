//! JWTs from a live key manager, validated locally: the happy path, the cache, and every
//! way a token must be refused.

mod support;

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use support::*;
use turnpike_auth::*;

fn authenticator(jwt: &Jwt) -> Authenticator {
    Authenticator {
        jwt: Some(jwt.validator.clone()),
        revocations: jwt.revocations.clone(),
        ..Default::default()
    }
}

fn parts_of(token: &str) -> (serde_json::Value, serde_json::Value) {
    let p: Vec<&str> = token.split('.').collect();
    let dec =
        |s: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).expect("b64")).expect("json");
    (dec(p[0]), dec(p[1]))
}

fn forge(header: serde_json::Value, claims: &serde_json::Value, sig: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        URL_SAFE_NO_PAD.encode(sig)
    )
}

#[tokio::test]
async fn a_keymanager_jwt_authenticates_and_is_cached() {
    let km = start_km().await;
    let jwt = jwt_validator(vec![km.issuer(&["turnpike"]).await]);
    let auth = authenticator(&jwt);
    let token = km.token("app1", Some("read")).await;
    let id = auth.authenticate(&bearer(&token)).await.expect("valid");
    assert_eq!(id.kind, CredentialKind::Jwt);
    assert_eq!(id.application_id.as_deref(), Some("app-app1"));
    assert_eq!(id.subscriber.as_deref(), Some("alice"));
    assert_eq!(id.scopes, vec!["read"]);
    assert_eq!(jwt.cache.len(), 1);
    let again = auth.authenticate(&bearer(&token)).await.expect("valid");
    assert!(Arc::ptr_eq(&id, &again), "second call is a cache hit");
    // Subscription and scope checks on the identity.
    let subs = Subscriptions::new([Subscription {
        api_id: "pizza".into(),
        application_id: "app-app1".into(),
        state: SubscriptionState::Active,
        tier: "Gold".into(),
    }]);
    assert_eq!(subs.check(&id, "pizza").map(|s| &*s.tier), Ok("Gold"));
    assert_eq!(
        subs.check(&id, "other").err(),
        Some(AuthError::NotSubscribed)
    );
    let write = ScopeRequirement::AnyOf(vec!["write".into()]);
    assert_eq!(
        write.check(&id),
        Err(AuthError::InsufficientScope("write".into()))
    );
}

#[tokio::test]
async fn rs256_tokens_validate_and_es256_pinning_holds() {
    let km = start_km_with(turnpike_keymanager::SigningAlg::RS256).await;
    let jwt = jwt_validator(vec![km.issuer(&["turnpike"]).await]);
    let token = km.token("app1", None).await;
    assert_eq!(parts_of(&token).0["alg"], "RS256");
    let id = jwt.validator.validate(&token).expect("valid");
    assert_eq!(id.client_id.as_deref(), Some("app1"));
    // The same claims re-signed as HS256 with the RSA key's JWK as the secret.
    let (header, claims) = parts_of(&token);
    let jwks: serde_json::Value = serde_json::from_slice(&km.jwks_bytes().await).expect("json");
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    h.kid = header["kid"].as_str().map(str::to_owned);
    let secret = jwks["keys"][0]["n"].as_str().unwrap_or_default().to_owned();
    let hs = jsonwebtoken::encode(
        &h,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("hs256");
    assert_eq!(
        jwt.validator.validate(&hs).err(),
        Some(AuthError::InvalidToken("algorithm not allowed"))
    );
}

#[tokio::test]
async fn expired_and_not_yet_valid_tokens_are_refused() {
    let km = start_km().await;
    let jwt = jwt_validator(vec![km.issuer(&[]).await]);
    km.clock
        .set(turnpike_model::clock::UnixNanos::from_secs(now() - 3600));
    let expired = km.token("app1", None).await;
    km.clock
        .set(turnpike_model::clock::UnixNanos::from_secs(now() + 3600));
    let future = km.token("app1", None).await;
    assert_eq!(
        jwt.validator.validate(&expired).err(),
        Some(AuthError::Expired)
    );
    assert_eq!(
        jwt.validator.validate(&future).err(),
        Some(AuthError::InvalidToken("the token is not valid yet"))
    );
    let err = AuthError::Expired;
    assert_eq!(err.status(), 401);
    assert!(err
        .www_authenticate()
        .expect("challenge")
        .to_str()
        .unwrap_or("")
        .contains("invalid_token"));
}

#[tokio::test]
async fn wrong_issuer_or_audience_is_refused() {
    let km = start_km().await;
    let token = km.token("app1", None).await;
    let keys = KeySet::from_jwks_json(&km.jwks_bytes().await).expect("keys");
    let other_iss = jwt_validator(vec![Arc::new(TrustedIssuer::new(
        "https://elsewhere",
        vec![],
        keys,
    ))]);
    assert_eq!(
        other_iss.validator.validate(&token).err(),
        Some(AuthError::InvalidToken("untrusted issuer"))
    );
    let other_aud = jwt_validator(vec![km.issuer(&["billing"]).await]);
    assert_eq!(
        other_aud.validator.validate(&token).err(),
        Some(AuthError::InvalidToken(
            "the token is not for this audience"
        ))
    );
}

#[tokio::test]
async fn bad_signature_alg_none_and_hs256_with_the_public_key_are_refused() {
    let km = start_km().await;
    let jwt = jwt_validator(vec![km.issuer(&[]).await]);
    let token = km.token("app1", None).await;
    let (header, mut claims) = parts_of(&token);
    let sig = URL_SAFE_NO_PAD
        .decode(token.rsplit('.').next().expect("sig"))
        .expect("b64");
    // Same signature over changed claims.
    claims["scope"] = "read write admin".into();
    let tampered = forge(header.clone(), &claims, &sig);
    assert_eq!(
        jwt.validator.validate(&tampered).err(),
        Some(AuthError::InvalidToken("bad signature"))
    );
    // alg: none with an empty signature.
    let none = forge(
        serde_json::json!({"alg": "none", "typ": "JWT", "kid": header["kid"]}),
        &claims,
        b"",
    );
    assert!(matches!(
        jwt.validator.validate(&none),
        Err(AuthError::InvalidToken(_))
    ));
    // HS256 "signed" with the public key's JWK bytes as the HMAC secret.
    let jwks: serde_json::Value = serde_json::from_slice(&km.jwks_bytes().await).expect("json");
    let secret = jwks["keys"][0].to_string();
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    h.kid = header["kid"].as_str().map(str::to_owned);
    let hs = jsonwebtoken::encode(
        &h,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("hs256");
    assert_eq!(
        jwt.validator.validate(&hs).err(),
        Some(AuthError::InvalidToken("algorithm not allowed"))
    );
    // Unknown kid.
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    h.kid = Some("nope".into());
    let unknown = forge(serde_json::to_value(&h).expect("header"), &claims, &sig);
    assert_eq!(
        jwt.validator.validate(&unknown).err(),
        Some(AuthError::InvalidToken("unknown signing key"))
    );
    assert!(jwt.cache.is_empty(), "nothing refused is cached");
}

#[tokio::test]
async fn revocation_applies_even_to_cached_tokens() {
    let km = start_km().await;
    let jwt = jwt_validator(vec![km.issuer(&[]).await]);
    let token = km.token("app1", None).await;
    let id = jwt.validator.validate(&token).expect("valid");
    // The key manager revokes it; the next snapshot carries the list.
    let form = format!("token={token}");
    let status = reqwest::Client::new()
        .post(format!("{}/oauth2/revoke", km.base))
        .basic_auth("app1", Some(SECRET))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("revoke")
        .status();
    assert_eq!(status, 200);
    let revoked = km.km.revoked().await.expect("list");
    assert_eq!(
        revoked.first().map(|r| Some(r.jti.clone())),
        Some(id.token_id.as_deref().map(str::to_owned))
    );
    jwt.revocations.replace(revoked.into_iter().map(|r| r.jti));
    assert_eq!(
        jwt.validator.validate(&token).err(),
        Some(AuthError::Revoked)
    );
    assert_eq!(jwt.cache.len(), 1, "the refusal came from a cache hit");
}

#[tokio::test]
async fn a_key_dropped_from_the_snapshot_invalidates_cached_tokens() {
    let km = start_km().await;
    let issuer = km.issuer(&[]).await;
    let jwt = jwt_validator(vec![issuer.clone()]);
    let token = km.token("app1", None).await;
    jwt.validator.validate(&token).expect("valid");
    km.km.rotate_keys().await.expect("rotate");
    let jwks: serde_json::Value = serde_json::from_slice(&km.jwks_bytes().await).expect("json");
    let kid = parts_of(&token).0["kid"].clone();
    let only_new: Vec<_> = jwks["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .filter(|k| k["kid"] != kid)
        .cloned()
        .collect();
    let set = serde_json::json!({ "keys": only_new }).to_string();
    issuer.set_keys(KeySet::from_jwks_json(set.as_bytes()).expect("keys"));
    assert_eq!(
        jwt.validator.validate(&token).err(),
        Some(AuthError::InvalidToken("unknown signing key"))
    );
}

#[tokio::test]
async fn malformed_authorization_headers_are_refused() {
    let km = start_km().await;
    let jwt = jwt_validator(vec![km.issuer(&[]).await]);
    let auth = authenticator(&jwt);
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[], "missing_credentials"),
        (&[("authorization", "Bearer")], "malformed_credentials"),
        (&[("authorization", "Bearer ")], "malformed_credentials"),
        (&[("authorization", "Bearer a b")], "malformed_credentials"),
        (&[("authorization", "Bearer a\"b")], "malformed_credentials"),
        (&[("authorization", "Token abc")], "malformed_credentials"),
        (
            &[
                ("authorization", "Bearer a.b.c"),
                ("authorization", "Bearer a.b.c"),
            ],
            "malformed_credentials",
        ),
        (&[("authorization", "Bearer a.b.c")], "invalid_token"),
        (
            &[("authorization", "Bearer eyJhbGciOiJFUzI1NiJ9.e30.e30")],
            "invalid_token",
        ),
        (
            &[("authorization", "Bearer opaque-but-not-accepted")],
            "invalid_token",
        ),
    ];
    for (headers, code) in cases {
        let err = auth
            .authenticate(&head("/x", headers))
            .await
            .expect_err("refused");
        assert_eq!(err.code(), *code, "{headers:?}");
    }
    let mut parts = head("/x", &[]);
    parts.headers.insert(
        "authorization",
        http::HeaderValue::from_bytes(b"Bearer \xff").expect("bytes"),
    );
    assert_eq!(
        auth.authenticate(&parts).await.expect_err("refused").code(),
        "malformed_credentials"
    );
}

#[tokio::test]
async fn a_third_party_issuer_is_fetched_in_the_background_with_claim_mapping() {
    let km = start_km().await;
    let mapping = ClaimMapping {
        application: "client_id".into(),
        ..ClaimMapping::default()
    };
    let issuer = Arc::new(
        TrustedIssuer::new(km.base.clone(), vec![], KeySet::default()).with_mapping(mapping),
    );
    let jwt = jwt_validator(vec![issuer.clone()]);
    let url: http::Uri = format!("{}/oauth2/jwks", km.base).parse().expect("uri");
    let mut source = JwksSource::new(url);
    source.min_interval = std::time::Duration::ZERO;
    let task = spawn_jwks_refresh(
        issuer.clone(),
        source,
        HttpClient::new(std::time::Duration::from_secs(5)).expect("client"),
    );
    issuer.wait_for_keys(1).await;
    let id = jwt
        .validator
        .validate(&km.token("app1", None).await)
        .expect("valid");
    assert_eq!(
        id.application_id.as_deref(),
        Some("app1"),
        "mapped from client_id"
    );
    // A rotated key is unknown at first, then fetched because a token asked for it.
    km.km.rotate_keys().await.expect("rotate");
    let fresh = km.token("app1", None).await;
    assert_eq!(
        jwt.validator.validate(&fresh).err(),
        Some(AuthError::InvalidToken("unknown signing key"))
    );
    issuer.wait_for_keys(2).await;
    assert!(jwt.validator.validate(&fresh).is_ok());
    task.abort();
}

#[tokio::test]
async fn api_keys_by_header_and_query() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let keys = ApiKeyValidator::new(
        [ApiKeyRecord {
            hash: hash_api_key("key-123"),
            application_id: "app-9".into(),
            application_name: "Nine".into(),
            subscriber: "bob".into(),
            scopes: vec![],
            key_type: KeyType::Production,
            expires_at: None,
        }],
        clock.clone(),
    );
    let auth = Authenticator {
        api_keys: Some((
            ApiKeyLocation {
                header: Some(http::HeaderName::from_static("apikey")),
                query: Some("api_key".into()),
            },
            Arc::new(keys),
        )),
        ..Default::default()
    };
    let id = auth
        .authenticate(&head("/x", &[("apikey", "key-123")]))
        .await
        .expect("header");
    assert_eq!(id.application_id.as_deref(), Some("app-9"));
    assert!(auth
        .authenticate(&head("/x?a=1&api_key=key-123", &[]))
        .await
        .is_ok());
    assert_eq!(
        auth.authenticate(&head("/x", &[("apikey", "nope")]))
            .await
            .err(),
        Some(AuthError::InvalidApiKey)
    );
    assert_eq!(
        auth.authenticate(&head("/x", &[])).await.err(),
        Some(AuthError::Missing)
    );
    let mut parts = head(
        "/x",
        &[("apikey", "key-123"), ("authorization", "Bearer x")],
    );
    strip_credentials(&mut parts, auth.api_keys.as_ref().map(|(l, _)| l));
    assert!(parts.headers.is_empty());
}

#[tokio::test]
async fn backend_jwt_carries_the_identity_and_is_cached() {
    let km = start_km().await;
    let jwt = jwt_validator(vec![km.issuer(&[]).await]);
    let id = jwt
        .validator
        .validate(&km.token("app1", Some("read")).await)
        .expect("valid");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let signer = BackendJwtSigner::generate(BackendJwtConfig::default(), clock).expect("signer");
    let v1 = signer.header_value(&id).expect("sign");
    assert_eq!(
        v1,
        signer.header_value(&id).expect("sign"),
        "cached per identity"
    );
    let keys = KeySet::from_jwks_json(signer.jwks().to_string().as_bytes()).expect("keys");
    let backend = jwt_validator(vec![Arc::new(TrustedIssuer::new(
        "turnpike-gateway",
        vec![],
        keys,
    ))]);
    let seen = backend
        .validator
        .validate(v1.to_str().expect("ascii"))
        .expect("back end verifies");
    assert_eq!(&*seen.subject, "app1");
    assert_eq!(seen.application_id.as_deref(), Some("app-app1"));
    assert_eq!(seen.scopes, vec!["read"]);
    assert_eq!(signer.header_name().as_str(), "x-jwt-assertion");
}

/// A token signed by a key of our own (Ed25519), trusted as issuer `https://crit.test`.
fn own_issuer() -> (ring::signature::Ed25519KeyPair, Jwt) {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).expect("keygen");
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("key");
    use ring::signature::KeyPair;
    let x = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
    let jwks = serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k1", "x": x}]});
    let keys = KeySet::from_jwks_json(jwks.to_string().as_bytes()).expect("jwks");
    let issuer = Arc::new(TrustedIssuer::new("https://crit.test", vec![], keys));
    (pair, jwt_validator(vec![issuer]))
}

fn signed(pair: &ring::signature::Ed25519KeyPair, header: serde_json::Value) -> String {
    let claims =
        serde_json::json!({"iss": "https://crit.test", "sub": "alice", "exp": now() + 600});
    signed_claims(pair, header, &claims)
}

fn signed_claims(
    pair: &ring::signature::Ed25519KeyPair,
    header: serde_json::Value,
    claims: &serde_json::Value,
) -> String {
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig = pair.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

#[test]
fn a_token_with_a_critical_extension_is_refused() {
    let (pair, jwt) = own_issuer();
    let plain = signed(&pair, serde_json::json!({"alg": "EdDSA", "kid": "k1"}));
    assert!(
        jwt.validator.validate(&plain).is_ok(),
        "the same token without crit is valid"
    );
    // RFC 7515 4.1.11: an extension the recipient does not understand, marked critical.
    let crit = signed(
        &pair,
        serde_json::json!({"alg": "EdDSA", "kid": "k1", "crit": ["exp-ext"], "exp-ext": 1}),
    );
    assert!(
        matches!(jwt.validator.validate(&crit), Err(AuthError::InvalidToken(m)) if m.contains("critical")),
        "a correctly signed token with crit was accepted"
    );
}

/// `exp`, `nbf` and `iat` are RFC 7519 NumericDates: JSON numbers, integer or not. Each
/// token below is correctly signed by a trusted key; only its time claims differ.
#[test]
fn time_claims_are_numeric_dates_and_malformed_ones_are_refused() {
    let (pair, jwt) = own_issuer();
    let header = serde_json::json!({"alg": "EdDSA", "kid": "k1"});
    let t = now() as f64;
    let token = |extra: serde_json::Value| {
        let mut claims = serde_json::json!({"iss": "https://crit.test", "sub": "alice",
            "exp": t + 600.0});
        for (k, v) in extra.as_object().expect("object") {
            claims[k] = v.clone();
        }
        signed_claims(&pair, header.clone(), &claims)
    };
    // Fractional dates are dates: a fractional exp used to be refused as malformed.
    let id = jwt
        .validator
        .validate(&token(
            serde_json::json!({"exp": t + 600.5, "iat": t - 0.25, "nbf": t - 10.5}),
        ))
        .expect("fractional exp, iat and nbf in the past are valid");
    assert_eq!(
        id.expires_at,
        Some((t + 600.5).ceil() as u64),
        "exp rounded up"
    );
    // A fractional nbf in the future (beyond the 30 s leeway) refuses the token: it used
    // to be ignored unless it was an unsigned integer.
    for nbf in [t + 3600.5, t + 120.0 + 0.001] {
        assert_eq!(
            jwt.validator
                .validate(&token(serde_json::json!({ "nbf": nbf })))
                .err(),
            Some(AuthError::InvalidToken("the token is not valid yet")),
            "nbf {nbf}"
        );
    }
    let fractional_past_exp = token(serde_json::json!({"exp": t - 3600.5}));
    assert_eq!(
        jwt.validator.validate(&fractional_past_exp).err(),
        Some(AuthError::Expired)
    );
    // Present but not a NumericDate: refused, whichever claim it is.
    let malformed = [
        serde_json::json!({"nbf": "2099-01-01T00:00:00Z"}),
        serde_json::json!({"nbf": format!("{}", t + 3600.0)}),
        serde_json::json!({"nbf": true}),
        serde_json::json!({"nbf": null}),
        serde_json::json!({"nbf": -1}),
        serde_json::json!({"nbf": [t + 3600.0]}),
        serde_json::json!({"exp": u64::MAX}),
        serde_json::json!({"exp": 1e300}),
        serde_json::json!({"exp": format!("{}", t + 600.0)}),
        serde_json::json!({"exp": null}),
        serde_json::json!({"iat": "yesterday"}),
        serde_json::json!({"iat": -5.5}),
        serde_json::json!({"iat": {"seconds": 1}}),
    ];
    for extra in malformed {
        let err = jwt.validator.validate(&token(extra.clone())).err();
        assert!(
            matches!(err, Some(AuthError::InvalidToken(m)) if m.contains("NumericDate")),
            "{extra}: {err:?}"
        );
        assert_eq!(err.map(|e| e.code()), Some("invalid_token"));
    }
    assert_eq!(jwt.cache.len(), 1, "only the valid token is cached");
}
