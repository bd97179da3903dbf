//! The `/oauth2/token` grants (RFC 6749 §4.3, §4.4, §6) and token issuance: scopes,
//! per-application lifetimes, JWT or opaque access tokens, refresh-token rotation. A
//! refresh token is single-use; presenting a used one revokes its whole family (every
//! refresh token and every access token issued from the same grant).

use serde::{Deserialize, Serialize};

use crate::clientauth::Form;
use crate::error::OAuthError;
use crate::secret::{random_id, random_token, token_hash};
use crate::store::{
    ClientRecord, Grant, GrantType, OpaqueRecord, RefreshRecord, RefreshUse, RevokedJti,
    TokenFormat,
};
use crate::KeyManager;

/// The claims of an access-token JWT (RFC 9068 plus Turnpike's application claims).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessClaims {
    pub iss: String,
    pub sub: String,
    pub aud: Vec<String>,
    pub exp: u64,
    pub iat: u64,
    pub nbf: u64,
    pub jti: String,
    /// Space-separated scopes.
    pub scope: String,
    pub client_id: String,
    /// The application id: what subscriptions are keyed by.
    pub application: String,
    pub application_name: String,
    /// The application's owner.
    pub subscriber: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// `PRODUCTION` or `SANDBOX` (WSO2's claim name): which keys of the application
    /// obtained the token. Tokens issued before the claim existed read as production.
    #[serde(default = "production")]
    pub keytype: String,
}

fn production() -> String {
    key_type_name(false).to_owned()
}

/// The `keytype` claim's value for a client's keys, in WSO2's spelling.
pub fn key_type_name(sandbox: bool) -> &'static str {
    if sandbox {
        "SANDBOX"
    } else {
        "PRODUCTION"
    }
}

/// RFC 6749 §5.1 success body.
#[derive(Debug, Serialize)]
pub(crate) struct TokenResponse {
    access_token: String,
    token_type: &'static str,
    expires_in: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    scope: String,
}

fn allowed(client: &ClientRecord, grant_type: GrantType) -> Result<(), OAuthError> {
    if client.grant_types.contains(&grant_type) {
        Ok(())
    } else {
        Err(OAuthError::UnauthorizedClient(
            "this client may not use this grant type",
        ))
    }
}

/// Resolves the `scope` parameter against what may be granted: none asked means all
/// allowed; anything outside `allowed` is `invalid_scope` (we refuse, not silently trim).
pub(crate) fn resolve_scopes(
    requested: Option<&str>,
    allowed: &[String],
) -> Result<Vec<String>, OAuthError> {
    let Some(requested) = requested else {
        return Ok(allowed.to_vec());
    };
    let mut out: Vec<String> = Vec::new();
    for s in requested.split(' ').filter(|s| !s.is_empty()) {
        let valid = s
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if !valid {
            return Err(OAuthError::InvalidScope("malformed scope".into()));
        }
        if !allowed.iter().any(|a| a == s) {
            return Err(OAuthError::InvalidScope(format!("scope not allowed: {s}")));
        }
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    Ok(out)
}

impl KeyManager {
    /// Dispatches on `grant_type`; the client is already authenticated.
    pub(crate) async fn grant(
        &self,
        client: &ClientRecord,
        form: &Form,
        ip: Option<std::net::IpAddr>,
    ) -> Result<TokenResponse, OAuthError> {
        let grant_type = form
            .get("grant_type")
            .ok_or(OAuthError::InvalidRequest("grant_type is required"))?;
        match GrantType::parse(grant_type) {
            Some(GrantType::ClientCredentials) => {
                allowed(client, GrantType::ClientCredentials)?;
                let scopes = resolve_scopes(form.get("scope"), &client.scopes)?;
                let aud = self.target(form.get("resource"), Some(client)).await?;
                let grant = Grant {
                    client_id: client.client_id.clone(),
                    subject: client.client_id.clone(),
                    username: None,
                    scopes,
                };
                self.issue(client, grant, None, aud).await
            }
            Some(GrantType::Password) => self.password(client, form, ip).await,
            Some(GrantType::RefreshToken) => self.refresh(client, form).await,
            None => Err(OAuthError::UnsupportedGrantType),
        }
    }

    async fn password(
        &self,
        client: &ClientRecord,
        form: &Form,
        ip: Option<std::net::IpAddr>,
    ) -> Result<TokenResponse, OAuthError> {
        allowed(client, GrantType::Password)?;
        let (Some(username), Some(password)) = (form.get("username"), form.get("password")) else {
            return Err(OAuthError::InvalidRequest(
                "username and password are required",
            ));
        };
        let user = self.inner.stores.clients.user(username).await?;
        // Unknown users cost one argon2 verification too: no timing oracle on usernames.
        let hash = user.as_ref().map_or_else(
            || crate::clientauth::dummy_hash().to_owned(),
            |u| u.password_hash.clone(),
        );
        let account = crate::user_account(username);
        let ok = self
            .check_secret(&account, ip, password.to_owned(), hash)
            .await?;
        let Some(user) = user.filter(|_| ok) else {
            return Err(OAuthError::InvalidGrant(
                "invalid resource owner credentials",
            ));
        };
        let delegable = self
            .inner
            .stores
            .clients
            .delegable_scopes(client, &user)
            .await?;
        let allowed_scopes: Vec<String> = match &delegable {
            Some(us) => client
                .scopes
                .iter()
                .filter(|s| us.contains(s))
                .cloned()
                .collect(),
            None => client.scopes.clone(),
        };
        let scopes = resolve_scopes(form.get("scope"), &allowed_scopes)?;
        let aud = self.target(form.get("resource"), Some(client)).await?;
        let grant = Grant {
            client_id: client.client_id.clone(),
            subject: user.username.clone(),
            username: Some(user.username),
            scopes,
        };
        let refresh = refresh_for(client, &grant, aud.as_deref());
        self.issue(client, grant, refresh, aud).await
    }

    async fn refresh(
        &self,
        client: &ClientRecord,
        form: &Form,
    ) -> Result<TokenResponse, OAuthError> {
        allowed(client, GrantType::RefreshToken)?;
        let presented = form
            .get("refresh_token")
            .ok_or(OAuthError::InvalidRequest("refresh_token is required"))?;
        let tokens = &self.inner.stores.tokens;
        let record = match tokens.use_refresh(&token_hash(presented)).await? {
            RefreshUse::Unknown => return Err(OAuthError::InvalidGrant("unknown refresh token")),
            RefreshUse::Reused(rec) => {
                tracing::warn!(client_id = ?client.client_id, "refresh token reuse: revoking its family");
                self.revoke_family(&rec.family).await?;
                return Err(OAuthError::InvalidGrant(
                    "refresh token already used; grant revoked",
                ));
            }
            RefreshUse::Fresh(rec) => rec,
        };
        if record.grant.client_id != client.client_id {
            // Another client holds this client's refresh token: treat it as leaked.
            self.revoke_family(&record.family).await?;
            return Err(OAuthError::InvalidGrant(
                "refresh token was issued to another client",
            ));
        }
        if record.expires_at <= self.inner.clock.now_secs() {
            return Err(OAuthError::InvalidGrant("refresh token expired"));
        }
        let scopes = resolve_scopes(form.get("scope"), &record.grant.scopes)?;
        let access = Grant {
            scopes,
            ..record.grant.clone()
        };
        // An unbound grant may be narrowed to one resource per access token (RFC 8707
        // §2.2); the refresh token stays the grant's.
        let aud = self.target(form.get("resource"), Some(client)).await?;
        self.issue(client, access, Some((record.family, record.grant)), aud)
            .await
    }

    /// A short-lived access token for an application's own client, as the
    /// client_credentials grant would issue it but without the client's secret: for a
    /// caller that has already checked who may act for the application (the control
    /// plane's try-it relay). The lifetime is the client's, capped at `max_ttl`.
    pub async fn mint_client_token(
        &self,
        client_id: &str,
        max_ttl: std::time::Duration,
    ) -> Result<String, OAuthError> {
        let mut client = self
            .inner
            .stores
            .clients
            .client(client_id)
            .await?
            .ok_or(OAuthError::InvalidClient)?;
        client.access_token_ttl = client.access_token_ttl.min(max_ttl);
        let grant = Grant {
            client_id: client.client_id.clone(),
            subject: client.client_id.clone(),
            username: None,
            scopes: client.scopes.clone(),
        };
        Ok(self.issue(&client, grant, None, None).await?.access_token)
    }

    /// Revokes every refresh token of a family and the access tokens issued with them.
    pub(crate) async fn revoke_family(&self, family: &str) -> Result<(), OAuthError> {
        for jti in self.inner.stores.tokens.revoke_family(family).await? {
            self.revoke_jti(jti).await?;
        }
        Ok(())
    }

    /// Issues an access token for `grant` and, with `refresh = Some((family, grant))`, a
    /// new refresh token in that family. `resource` (checked, RFC 8707) becomes the
    /// token's only `aud`.
    pub(crate) async fn issue(
        &self,
        client: &ClientRecord,
        grant: Grant,
        refresh: Option<(String, Grant)>,
        resource: Option<String>,
    ) -> Result<TokenResponse, OAuthError> {
        let cfg = &self.inner.config;
        let now = self.inner.clock.now_secs();
        let ttl = client
            .access_token_ttl
            .min(cfg.max_access_ttl)
            .as_secs()
            .max(1);
        let exp = now + ttl;
        let jti = random_id();
        let audience = match resource {
            Some(r) => vec![r],
            None if client.audience.is_empty() => cfg.audience.clone(),
            None => client.audience.clone(),
        };
        let scope = grant.scopes.join(" ");
        let access_token = match client.token_format {
            TokenFormat::Jwt => self.inner.keys.sign(&AccessClaims {
                iss: cfg.issuer.clone(),
                sub: grant.subject.clone(),
                aud: audience,
                exp,
                iat: now,
                nbf: now,
                jti: jti.clone(),
                scope: scope.clone(),
                client_id: client.client_id.clone(),
                application: client.application_id.clone(),
                application_name: client.application_name.clone(),
                subscriber: client.owner.clone(),
                username: grant.username.clone(),
                keytype: key_type_name(client.sandbox).to_owned(),
            })?,
            TokenFormat::Opaque => {
                let token = random_token();
                let record = OpaqueRecord {
                    jti: jti.clone(),
                    grant,
                    issued_at: now,
                    expires_at: exp,
                    audience,
                };
                self.inner
                    .stores
                    .tokens
                    .put_opaque(token_hash(&token), record)
                    .await?;
                token
            }
        };
        let refresh_token = match refresh {
            None => None,
            Some((family, grant)) => {
                let token = random_token();
                self.inner
                    .stores
                    .tokens
                    .put_refresh(RefreshRecord {
                        hash: token_hash(&token),
                        family,
                        grant,
                        expires_at: now + client.refresh_token_ttl.as_secs().max(1),
                        access_jti: jti,
                        access_expires_at: exp,
                    })
                    .await?;
                Some(token)
            }
        };
        Ok(TokenResponse {
            access_token,
            token_type: "Bearer",
            expires_in: ttl,
            refresh_token,
            scope,
        })
    }
}

/// A new refresh family for `grant` when the client may refresh. A grant bound to a
/// resource gets none: refresh records carry no resource, and a refreshed token must
/// not outgrow its binding (the client asks again; a remembered consent makes that a
/// redirect).
pub(crate) fn refresh_for(
    client: &ClientRecord,
    grant: &Grant,
    resource: Option<&str>,
) -> Option<(String, Grant)> {
    (resource.is_none() && client.grant_types.contains(&GrantType::RefreshToken))
        .then(|| (random_id(), grant.clone()))
}

/// What a revocation of one token id needs: kept here so revoke and refresh agree.
pub(crate) fn revoked(jti: String, expires_at: u64) -> RevokedJti {
    RevokedJti { jti, expires_at }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_default_to_all_allowed_and_refuse_extras() {
        let allowed = vec!["read".to_string(), "write".to_string()];
        assert_eq!(resolve_scopes(None, &allowed).unwrap(), allowed);
        assert_eq!(
            resolve_scopes(Some("read read"), &allowed).unwrap(),
            vec!["read"]
        );
        assert!(resolve_scopes(Some("admin"), &allowed).is_err());
        assert!(resolve_scopes(Some("re\"ad"), &allowed).is_err());
    }
}
