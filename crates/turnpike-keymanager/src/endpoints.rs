//! The axum handlers: token, revoke (RFC 7009), introspect (RFC 7662), JWKS, discovery.
//! Each parses its form, authenticates the client where the RFC asks, and answers with
//! `Cache-Control: no-store`.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use jsonwebtoken::Validation;
use serde::Serialize;

use crate::clientauth::Form;
use crate::error::{no_store, OAuthError};
use crate::secret::token_hash;
use crate::store::{ClientRecord, Grant};
use crate::token::{revoked, AccessClaims};
use crate::{KeyManager, PeerIp};

fn ok_json<T: Serialize>(body: T) -> Response {
    let mut resp = Json(body).into_response();
    no_store(&mut resp);
    resp
}

pub(crate) async fn token(
    State(km): State<KeyManager>,
    PeerIp(ip): PeerIp,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let form = Form::parse(&headers, &body)?;
    let client = km.authenticate_client(&headers, &form, ip).await?;
    let resp = if form.get("grant_type") == Some("authorization_code") {
        km.exchange_code(&client, &form).await?
    } else {
        km.grant(&client, &form, ip).await?
    };
    Ok(ok_json(resp))
}

/// A token this server issued, found by whichever form it has.
enum Found {
    Access {
        claims: AccessClaims,
    },
    Refresh {
        grant: Grant,
        family: String,
        exp: u64,
    },
}

impl KeyManager {
    /// Verifies one of our JWTs (signature, issuer, expiry), ignoring revocation.
    fn verify_own_jwt(&self, token: &str) -> Option<AccessClaims> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        let (alg, key) = self.inner.keys.decoding_key(header.kid.as_deref()?)?;
        let mut v = Validation::new(alg);
        v.set_issuer(&[&self.inner.config.issuer]);
        v.validate_aud = false;
        // Expiry is checked against the injected clock below, not jsonwebtoken's.
        v.validate_exp = false;
        let data = jsonwebtoken::decode::<AccessClaims>(token, &key, &v).ok()?;
        (data.claims.exp > self.inner.clock.now_secs()).then_some(data.claims)
    }

    async fn find(&self, token: &str, hint: Option<&str>) -> Result<Option<Found>, OAuthError> {
        let tokens = &self.inner.stores.tokens;
        let now = self.inner.clock.now_secs();
        if token.contains('.') {
            return Ok(self
                .verify_own_jwt(token)
                .map(|claims| Found::Access { claims }));
        }
        let hash = token_hash(token);
        let try_refresh_first = hint == Some("refresh_token");
        for attempt in 0..2 {
            if (attempt == 0) == try_refresh_first {
                if let Some(r) = tokens.find_refresh(&hash).await? {
                    if r.expires_at > now {
                        return Ok(Some(Found::Refresh {
                            grant: r.grant,
                            family: r.family,
                            exp: r.expires_at,
                        }));
                    }
                }
            } else if let Some(o) = tokens.find_opaque(&hash).await? {
                if o.expires_at > now {
                    let client = self.inner.stores.clients.client(&o.grant.client_id).await?;
                    return Ok(client.map(|c| Found::Access {
                        claims: opaque_claims(&self.inner.config.issuer, &c, o),
                    }));
                }
            }
        }
        Ok(None)
    }
}

fn opaque_claims(iss: &str, client: &ClientRecord, o: crate::store::OpaqueRecord) -> AccessClaims {
    AccessClaims {
        iss: iss.to_owned(),
        sub: o.grant.subject,
        aud: o.audience,
        exp: o.expires_at,
        iat: o.issued_at,
        nbf: o.issued_at,
        jti: o.jti,
        scope: o.grant.scopes.join(" "),
        client_id: o.grant.client_id,
        application: client.application_id.clone(),
        application_name: client.application_name.clone(),
        subscriber: client.owner.clone(),
        username: o.grant.username,
        keytype: crate::token::key_type_name(client.sandbox).to_owned(),
    }
}

/// RFC 7009: always 200 for unknown or invalid tokens; a token of another client is
/// refused with `unauthorized_client`. Revoking a refresh token revokes its family.
pub(crate) async fn revoke(
    State(km): State<KeyManager>,
    PeerIp(ip): PeerIp,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let form = Form::parse(&headers, &body)?;
    let client = km.authenticate_client(&headers, &form, ip).await?;
    let token = form
        .get("token")
        .ok_or(OAuthError::InvalidRequest("token is required"))?;
    match km.find(token, form.get("token_type_hint")).await? {
        None => {}
        Some(Found::Access { claims }) => {
            if claims.client_id != client.client_id {
                return Err(OAuthError::UnauthorizedClient(
                    "token was issued to another client",
                ));
            }
            km.revoke_jti(revoked(claims.jti, claims.exp)).await?;
        }
        Some(Found::Refresh { grant, family, .. }) => {
            if grant.client_id != client.client_id {
                return Err(OAuthError::UnauthorizedClient(
                    "token was issued to another client",
                ));
            }
            km.revoke_family(&family).await?;
        }
    }
    Ok(ok_json(serde_json::json!({})))
}

/// RFC 7662 response.
#[derive(Debug, Default, Serialize)]
struct Introspection {
    active: bool,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    claims: Option<AccessClaims>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_type: Option<&'static str>,
}

/// RFC 7662: the caller authenticates as a client; clients with `can_introspect` (the
/// gateways) see any token, others only their own. Revoked or expired is `active: false`.
pub(crate) async fn introspect(
    State(km): State<KeyManager>,
    PeerIp(ip): PeerIp,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let form = Form::parse(&headers, &body)?;
    let caller = km.authenticate_client(&headers, &form, ip).await?;
    let token = form
        .get("token")
        .ok_or(OAuthError::InvalidRequest("token is required"))?;
    let may_see = |client_id: &str| caller.can_introspect || caller.client_id == client_id;
    let inactive = ok_json(Introspection::default());
    let resp = match km.find(token, form.get("token_type_hint")).await? {
        Some(Found::Access { claims }) if may_see(&claims.client_id) => {
            if km.inner.stores.tokens.is_revoked(&claims.jti).await? {
                return Ok(inactive);
            }
            Introspection {
                active: true,
                claims: Some(claims),
                token_type: Some("Bearer"),
            }
        }
        Some(Found::Refresh { grant, exp, .. }) if may_see(&grant.client_id) => {
            return Ok(ok_json(serde_json::json!({
                "active": true,
                "token_type": "refresh_token",
                "client_id": grant.client_id,
                "sub": grant.subject,
                "scope": grant.scopes.join(" "),
                "exp": exp,
            })));
        }
        _ => return Ok(inactive),
    };
    Ok(ok_json(resp))
}

pub(crate) async fn jwks(State(km): State<KeyManager>) -> Response {
    let mut resp = Json(km.jwks()).into_response();
    // Gateways and third parties may cache the key set briefly; rotation keeps old keys.
    resp.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("public, max-age=300"),
    );
    resp
}

/// The server's metadata: OpenID discovery and RFC 8414 serve the same document. The
/// authorization endpoint is always there (any application may register redirect URIs);
/// the registration endpoint (RFC 7591) only while registration is on;
/// `none` is the public clients' token endpoint authentication (the portals, the CLI).
pub(crate) async fn discovery(State(km): State<KeyManager>) -> Response {
    let iss = km.inner.config.issuer.trim_end_matches('/');
    let alg = match km.inner.config.signing_alg {
        crate::store::SigningAlg::ES256 => "ES256",
        crate::store::SigningAlg::RS256 => "RS256",
    };
    let auth_methods = ["client_secret_basic", "client_secret_post"];
    let token_auth_methods = ["client_secret_basic", "client_secret_post", "none"];
    let grants = [
        "client_credentials",
        "password",
        "refresh_token",
        "authorization_code",
    ];
    let doc = serde_json::json!({
        "issuer": km.inner.config.issuer,
        "authorization_endpoint": format!("{iss}/oauth2/authorize"),
        "token_endpoint": format!("{iss}/oauth2/token"),
        "jwks_uri": format!("{iss}/oauth2/jwks"),
        "revocation_endpoint": format!("{iss}/oauth2/revoke"),
        "introspection_endpoint": format!("{iss}/oauth2/introspect"),
        "grant_types_supported": grants,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "code_challenge_methods_supported": ["S256"],
        "subject_types_supported": ["public"],
        "token_endpoint_auth_methods_supported": token_auth_methods,
        "revocation_endpoint_auth_methods_supported": auth_methods,
        "introspection_endpoint_auth_methods_supported": auth_methods,
        "id_token_signing_alg_values_supported": [alg],
    });
    let mut doc = doc;
    // A store that cannot answer leaves the endpoint out (a registration then says why).
    if km.registration_policy().await.ok().flatten().is_some() {
        doc["registration_endpoint"] = format!("{iss}/oauth2/register").into();
    }
    if km.metadata_document_policy().await.ok().flatten().is_some() {
        doc["client_id_metadata_document_supported"] = true.into();
    }
    Json(doc).into_response()
}
