//! Browser login: the authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636) for
//! the first-party clients named in [`crate::KeyManagerConfig::authorize_clients`] (the
//! web portals) and for every application that registered redirect URIs
//! ([`ClientRecord::redirect_uris`]). `GET /oauth2/authorize` validates the request and
//! either answers at once (a valid login session cookie) or shows the login page;
//! `POST /oauth2/authorize` checks the CSRF token and the password, opens the session and
//! redirects with a one-time code. An application (a third party) gets a code only after
//! the signed-in user allowed it on the consent page (Allow / Deny, the same form
//! endpoint with `consent=`); Deny sends `error=access_denied`. `POST /oauth2/logout` ends
//! the session; the token endpoint exchanges the code for tokens when the
//! `code_verifier` matches (`S256` only, never `plain`).
//!
//! Cookies are `HttpOnly`, `SameSite=Strict`, and `Secure` when the issuer is HTTPS. The
//! login form is CSRF-safe by a double-submit token (a cookie and a hidden field that
//! must match). Codes (one minute, single use) and sessions live in memory: a restart
//! logs browsers out, and several control planes behind one address need sticky routing.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::clientauth::Form;
use crate::error::{no_store, OAuthError};
use crate::login_page::{self, LoginPage};
use crate::secret::{random_token, token_hash, TokenHash};
use crate::store::{ClientRecord, Grant};
use crate::token::TokenResponse;
use crate::KeyManager;

/// A client allowed to use the authorization code grant, with its exact redirect URIs.
#[derive(Debug, Clone)]
pub struct AuthorizeClient {
    pub client_id: String,
    pub redirect_uris: Vec<String>,
}

/// How long an authorization code may wait for its exchange (RFC 6749 §4.1.2: short).
const CODE_TTL: u64 = 60;
/// Caps on what unauthenticated callers can make the server hold.
const MAX_CODES: usize = 10_000;
const MAX_SESSIONS: usize = 100_000;
const MAX_CONSENTS: usize = 100_000;
/// How long a remembered consent spares the user the consent page.
const CONSENT_TTL: u64 = 30 * 24 * 3600;
const SESSION_COOKIE: &str = "tp_session";
const CSRF_COOKIE: &str = "tp_csrf";

struct CodeRecord {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    username: String,
    scope: Option<String>,
    resource: Option<String>,
    expires_at: u64,
}

struct SessionRecord {
    username: String,
    expires_at: u64,
}

/// Outstanding codes and login sessions, keyed by the SHA-256 of the secret.
#[derive(Default)]
pub(crate) struct BrowserState {
    codes: Mutex<HashMap<TokenHash, CodeRecord>>,
    sessions: Mutex<HashMap<TokenHash, SessionRecord>>,
    /// Consents given, by [`consent_key`], with when they lapse.
    consents: Mutex<HashMap<TokenHash, u64>>,
}

/// A validated authorization request.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuthRequest {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    pub(crate) state: Option<String>,
    pub(crate) code_challenge: String,
    pub(crate) scope: Option<String>,
    /// The API the token is for (RFC 8707), checked.
    pub(crate) resource: Option<String>,
    /// `prompt=consent` (OpenID Connect): ask even when the user allowed the same before.
    pub(crate) force_consent: bool,
    /// Set for an application (a third party): the user consents before a code is
    /// issued. `None` for the first-party portals.
    pub(crate) consent: Option<ConsentFor>,
}

/// What the consent page names: the application and who owns it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConsentFor {
    pub(crate) application: String,
    pub(crate) owner: String,
}

/// Why an authorization request was refused: before the redirect URI is trusted the
/// user sees a page; after, the client gets `?error=` at its redirect URI.
enum Refusal {
    Page(&'static str),
    /// The client could not be looked up (store down): nothing to redirect to.
    Store(OAuthError),
    Redirect(Box<AuthRequest>, &'static str, &'static str),
}

fn is_pkce_string(s: &str) -> bool {
    (43..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The PKCE `S256` transform: BASE64URL(SHA-256(verifier)).
pub fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl KeyManager {
    fn authorize_client(&self, client_id: &str) -> Option<&AuthorizeClient> {
        self.inner
            .config
            .authorize_clients
            .iter()
            .find(|c| c.client_id == client_id)
    }

    /// Whether `client` may use the authorization code grant: a first-party client of
    /// the configuration, or an application with registered redirect URIs.
    fn may_authorize(&self, client: &ClientRecord) -> bool {
        self.authorize_client(&client.client_id).is_some() || !client.redirect_uris.is_empty()
    }

    /// The redirect URIs of `client_id` and, for an application, whom the user consents
    /// to; `None` when the client may not use the browser flow.
    async fn requester(
        &self,
        client_id: &str,
    ) -> Result<Option<(Vec<String>, Option<ConsentFor>)>, Refusal> {
        if let Some(c) = self.authorize_client(client_id) {
            return Ok(Some((c.redirect_uris.clone(), None)));
        }
        // A metadata document's client: its redirect URIs are the document's, fresh.
        let document = match crate::metadata_document::is_document_url(client_id) {
            true => self
                .client_document(client_id)
                .await
                .map_err(Refusal::Store)?
                .transpose()
                .map_err(Refusal::Page)?,
            false => None,
        };
        let app = self.inner.stores.clients.client(client_id).await;
        let Some(app) = app.map_err(|e| Refusal::Store(e.into()))? else {
            return Ok(None);
        };
        let uris = document.map_or(app.redirect_uris, |d| d.redirect_uris);
        Ok((!uris.is_empty()).then(|| {
            let consent = ConsentFor {
                application: app.application_name,
                owner: app.owner,
            };
            (uris, Some(consent))
        }))
    }

    fn secure_cookies(&self) -> bool {
        self.inner.config.issuer.starts_with("https://")
    }

    async fn validate(
        &self,
        get: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<AuthRequest, Refusal> {
        let client_id = get("client_id").ok_or(Refusal::Page("client_id is required"))?;
        let (redirect_uris, consent) = self
            .requester(&client_id)
            .await?
            .ok_or(Refusal::Page("unknown client"))?;
        let redirect_uri = get("redirect_uri").ok_or(Refusal::Page("redirect_uri is required"))?;
        if !redirect_uris.contains(&redirect_uri) {
            return Err(Refusal::Page(
                "redirect_uri is not registered for this client",
            ));
        }
        let state = get("state");
        let partial = AuthRequest {
            client_id,
            redirect_uri,
            state: state.clone(),
            consent,
            ..AuthRequest::default()
        };
        let refuse = |code, why| Refusal::Redirect(Box::new(partial.clone()), code, why);
        if state.as_ref().is_some_and(|s| s.len() > 512) {
            return Err(refuse("invalid_request", "state is too long"));
        }
        if get("response_type").as_deref() != Some("code") {
            return Err(refuse(
                "unsupported_response_type",
                "response_type must be code",
            ));
        }
        let Some(code_challenge) = get("code_challenge") else {
            return Err(refuse(
                "invalid_request",
                "code_challenge is required (PKCE)",
            ));
        };
        if get("code_challenge_method").as_deref() != Some("S256") {
            return Err(refuse(
                "invalid_request",
                "code_challenge_method must be S256",
            ));
        }
        if !is_pkce_string(&code_challenge) {
            return Err(refuse("invalid_request", "malformed code_challenge"));
        }
        let scope = get("scope");
        if scope.as_ref().is_some_and(|s| s.len() > 1024) {
            return Err(refuse("invalid_scope", "scope is too long"));
        }
        let resource = match self.target(get("resource").as_deref(), None).await {
            Ok(r) => r,
            Err(OAuthError::InvalidTarget(why)) => return Err(refuse("invalid_target", why)),
            Err(e) => return Err(Refusal::Store(e)),
        };
        let force_consent = get("prompt").is_some_and(|p| p.split(' ').any(|p| p == "consent"));
        Ok(AuthRequest {
            code_challenge,
            scope,
            resource,
            force_consent,
            ..partial
        })
    }

    fn session_user(&self, headers: &HeaderMap) -> Option<String> {
        let sid = cookie(headers, SESSION_COOKIE)?;
        let now = self.inner.clock.now_secs();
        let sessions = self.inner.browser.sessions.lock().ok()?;
        sessions
            .get(&token_hash(&sid))
            .filter(|s| s.expires_at > now)
            .map(|s| s.username.clone())
    }

    fn open_session(&self, username: &str) -> Result<String, OAuthError> {
        let now = self.inner.clock.now_secs();
        let sid = random_token();
        let mut sessions = self.inner.browser.sessions.lock().map_err(poisoned)?;
        if sessions.len() >= MAX_SESSIONS {
            sessions.retain(|_, s| s.expires_at > now);
        }
        if sessions.len() >= MAX_SESSIONS {
            return Err(OAuthError::Server("too many login sessions".into()));
        }
        sessions.insert(
            token_hash(&sid),
            SessionRecord {
                username: username.to_owned(),
                expires_at: now + self.inner.config.session_ttl.as_secs().max(1),
            },
        );
        Ok(sid)
    }

    fn issue_code(&self, req: &AuthRequest, username: &str) -> Result<String, OAuthError> {
        let now = self.inner.clock.now_secs();
        let code = random_token();
        let mut codes = self.inner.browser.codes.lock().map_err(poisoned)?;
        if codes.len() >= MAX_CODES {
            codes.retain(|_, c| c.expires_at > now);
        }
        if codes.len() >= MAX_CODES {
            return Err(OAuthError::Server("too many outstanding codes".into()));
        }
        codes.insert(
            token_hash(&code),
            CodeRecord {
                client_id: req.client_id.clone(),
                redirect_uri: req.redirect_uri.clone(),
                challenge: req.code_challenge.clone(),
                username: username.to_owned(),
                scope: req.scope.clone(),
                resource: req.resource.clone(),
                expires_at: now + CODE_TTL,
            },
        );
        Ok(code)
    }

    /// Whether `user` already allowed this client these scopes for this resource.
    fn consented(&self, req: &AuthRequest, user: &str) -> bool {
        let now = self.inner.clock.now_secs();
        let Ok(consents) = self.inner.browser.consents.lock() else {
            return false;
        };
        consents
            .get(&consent_key(req, user))
            .is_some_and(|until| *until > now)
    }

    /// Remembers an Allow (bounded: expired ones go first, then nothing new is kept),
    /// or forgets one on a Deny.
    fn remember_consent(&self, req: &AuthRequest, user: &str, allow: bool) {
        let now = self.inner.clock.now_secs();
        let Ok(mut consents) = self.inner.browser.consents.lock() else {
            return;
        };
        if !allow {
            consents.remove(&consent_key(req, user));
            return;
        }
        if consents.len() >= MAX_CONSENTS {
            consents.retain(|_, until| *until > now);
        }
        if consents.len() < MAX_CONSENTS {
            consents.insert(consent_key(req, user), now + CONSENT_TTL);
        }
    }

    /// The consent page, or the code at once when the user allowed the same before.
    fn consent_or_code(&self, req: &AuthRequest, user: &str, status: StatusCode) -> Response {
        if req.force_consent || !self.consented(req, user) {
            return self.consent_page(req, user);
        }
        match self.issue_code(req, user) {
            Ok(code) => code_redirect(status, req, &code),
            Err(e) => e.into_response(),
        }
    }

    fn cookie_attrs(&self) -> &'static str {
        if self.secure_cookies() {
            "HttpOnly; SameSite=Strict; Secure"
        } else {
            "HttpOnly; SameSite=Strict"
        }
    }

    /// The login page with a fresh CSRF token (and its cookie).
    fn login_page(&self, req: &AuthRequest, status: StatusCode, error: Option<&str>) -> Response {
        self.form_page(status, |csrf| {
            login_page::render(&LoginPage {
                request: req,
                csrf,
                error,
            })
        })
    }

    /// The consent page for `user` (signed in) with a fresh CSRF token.
    fn consent_page(&self, req: &AuthRequest, user: &str) -> Response {
        self.form_page(StatusCode::OK, |csrf| login_page::consent(req, csrf, user))
    }

    /// An HTML form page whose CSRF token `html` embeds, with the matching cookie.
    fn form_page(&self, status: StatusCode, html: impl FnOnce(&str) -> String) -> Response {
        let csrf = random_token();
        let html = html(&csrf);
        let mut resp = (status, html_headers(), html).into_response();
        let cookie = format!(
            "{CSRF_COOKIE}={csrf}; Path=/oauth2/authorize; Max-Age=1800; {}",
            self.cookie_attrs()
        );
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
        resp
    }

    /// The `authorization_code` grant at the token endpoint.
    pub(crate) async fn exchange_code(
        &self,
        client: &ClientRecord,
        form: &Form,
    ) -> Result<TokenResponse, OAuthError> {
        if !self.may_authorize(client) {
            return Err(OAuthError::UnauthorizedClient(
                "this client registered no redirect URI",
            ));
        }
        let code = form
            .get("code")
            .ok_or(OAuthError::InvalidRequest("code is required"))?;
        let verifier = form
            .get("code_verifier")
            .ok_or(OAuthError::InvalidRequest("code_verifier is required"))?;
        let record = self
            .inner
            .browser
            .codes
            .lock()
            .map_err(poisoned)?
            .remove(&token_hash(code))
            .ok_or(OAuthError::InvalidGrant(
                "unknown or used authorization code",
            ))?;
        if record.expires_at <= self.inner.clock.now_secs() {
            return Err(OAuthError::InvalidGrant("authorization code expired"));
        }
        if record.client_id != client.client_id {
            return Err(OAuthError::InvalidGrant(
                "authorization code was issued to another client",
            ));
        }
        if form.get("redirect_uri") != Some(record.redirect_uri.as_str()) {
            return Err(OAuthError::InvalidGrant("redirect_uri does not match"));
        }
        let computed = s256_challenge(verifier);
        if !is_pkce_string(verifier)
            || !bool::from(computed.as_bytes().ct_eq(record.challenge.as_bytes()))
        {
            return Err(OAuthError::InvalidGrant("code_verifier does not match"));
        }
        let user = self
            .inner
            .stores
            .clients
            .user(&record.username)
            .await?
            .ok_or(OAuthError::InvalidGrant("the user no longer exists"))?;
        let delegable = self
            .inner
            .stores
            .clients
            .delegable_scopes(client, &user)
            .await?;
        let allowed: Vec<String> = client
            .scopes
            .iter()
            .filter(|s| delegable.as_ref().is_none_or(|d| d.contains(s)))
            .cloned()
            .collect();
        let scopes = crate::token::resolve_scopes(record.scope.as_deref(), &allowed)?;
        // RFC 8707 §2.2: the token request may repeat the authorized resource, not
        // change it; checked again (the API may be gone, the client opaque).
        if form
            .get("resource")
            .is_some_and(|r| Some(r) != record.resource.as_deref())
        {
            return Err(OAuthError::InvalidTarget(
                "resource differs from the authorization request's",
            ));
        }
        let aud = self
            .target(record.resource.as_deref(), Some(client))
            .await?;
        let grant = Grant {
            client_id: client.client_id.clone(),
            subject: user.username.clone(),
            username: Some(user.username),
            scopes,
        };
        let refresh = crate::token::refresh_for(client, &grant, aud.as_deref());
        self.issue(client, grant, refresh, aud).await
    }
}

/// What a consent is remembered by: the user, the client, the scopes (in any order)
/// and the resource, hashed.
fn consent_key(req: &AuthRequest, user: &str) -> TokenHash {
    let mut scopes: Vec<&str> = req.scope.as_deref().map_or_else(
        || vec!["*"],
        |s| s.split(' ').filter(|s| !s.is_empty()).collect(),
    );
    scopes.sort_unstable();
    scopes.dedup();
    let resource = req.resource.as_deref().unwrap_or("");
    token_hash(&format!(
        "{user}\0{}\0{}\0{resource}",
        req.client_id,
        scopes.join(" ")
    ))
}

fn poisoned<T>(_: T) -> OAuthError {
    OAuthError::Server("lock poisoned".into())
}

fn html_headers() -> [(header::HeaderName, &'static str); 4] {
    [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
    ]
}

/// A cookie's value from the request's `Cookie` headers.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

fn error_page(status: StatusCode, message: &str) -> Response {
    let mut resp = (status, html_headers(), login_page::error(message)).into_response();
    no_store(&mut resp);
    resp
}

/// `redirect_uri` with `params` appended as a query.
fn redirect(status: StatusCode, uri: &str, params: &[(&str, &str)]) -> Response {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        q.append_pair(k, v);
    }
    let sep = if uri.contains('?') { '&' } else { '?' };
    let location = format!("{uri}{sep}{}", q.finish());
    let mut resp = status.into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    no_store(&mut resp);
    resp
}

fn refusal_response(r: Refusal) -> Response {
    match r {
        Refusal::Page(why) => error_page(StatusCode::BAD_REQUEST, why),
        Refusal::Store(e) => e.into_response(),
        Refusal::Redirect(req, code, why) => {
            let mut params = vec![("error", code), ("error_description", why)];
            if let Some(s) = &req.state {
                params.push(("state", s));
            }
            redirect(StatusCode::FOUND, &req.redirect_uri, &params)
        }
    }
}

fn code_redirect(status: StatusCode, req: &AuthRequest, code: &str) -> Response {
    let mut params = vec![("code", code)];
    if let Some(s) = &req.state {
        params.push(("state", s));
    }
    redirect(status, &req.redirect_uri, &params)
}

/// `GET /oauth2/authorize`.
pub(crate) async fn authorize_get(
    State(km): State<KeyManager>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let get = |k: &str| q.get(k).filter(|v| !v.is_empty()).cloned();
    let req = match km.validate(&get).await {
        Ok(r) => r,
        Err(r) => return refusal_response(r),
    };
    let force_login = get("prompt").as_deref() == Some("login");
    match km.session_user(&headers).filter(|_| !force_login) {
        Some(user) if req.consent.is_some() => km.consent_or_code(&req, &user, StatusCode::FOUND),
        Some(user) => match km.issue_code(&req, &user) {
            Ok(code) => code_redirect(StatusCode::FOUND, &req, &code),
            Err(e) => e.into_response(),
        },
        None => km.login_page(&req, StatusCode::OK, None),
    }
}

/// The consent form's answer (`consent=allow|deny`) from the signed-in user.
fn consent_answer(
    km: &KeyManager,
    req: &AuthRequest,
    headers: &HeaderMap,
    allow: bool,
) -> Response {
    let Some(user) = km.session_user(headers) else {
        return km.login_page(
            req,
            StatusCode::UNAUTHORIZED,
            Some("Your session ended. Please sign in again."),
        );
    };
    if !allow || req.consent.is_none() {
        km.remember_consent(req, &user, false);
        let mut params = vec![
            ("error", "access_denied"),
            ("error_description", "the user denied the request"),
        ];
        if let Some(s) = &req.state {
            params.push(("state", s));
        }
        return redirect(StatusCode::SEE_OTHER, &req.redirect_uri, &params);
    }
    km.remember_consent(req, &user, true);
    match km.issue_code(req, &user) {
        Ok(code) => code_redirect(StatusCode::SEE_OTHER, req, &code),
        Err(e) => e.into_response(),
    }
}

/// `POST /oauth2/authorize`: the login form.
pub(crate) async fn authorize_post(
    State(km): State<KeyManager>,
    crate::PeerIp(ip): crate::PeerIp,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = match Form::parse(&headers, &body) {
        Ok(f) => f,
        Err(_) => return error_page(StatusCode::BAD_REQUEST, "malformed login form"),
    };
    let get = |k: &str| form.get(k).map(str::to_owned);
    let req = match km.validate(&get).await {
        Ok(r) => r,
        Err(r) => return refusal_response(r),
    };
    let csrf_ok = match (cookie(&headers, CSRF_COOKIE), form.get("csrf")) {
        (Some(c), Some(f)) => bool::from(c.as_bytes().ct_eq(f.as_bytes())),
        _ => false,
    };
    if !csrf_ok {
        return km.login_page(
            &req,
            StatusCode::FORBIDDEN,
            Some("The sign-in form expired. Please sign in again."),
        );
    }
    if let Some(answer) = form.get("consent") {
        return consent_answer(&km, &req, &headers, answer == "allow");
    }
    let (Some(username), Some(password)) = (form.get("username"), form.get("password")) else {
        return km.login_page(
            &req,
            StatusCode::BAD_REQUEST,
            Some("Enter your username and password."),
        );
    };
    match km.check_user_password(username, password, ip).await {
        Ok(true) => {}
        Ok(false) => {
            return km.login_page(
                &req,
                StatusCode::UNAUTHORIZED,
                Some("Wrong username or password."),
            )
        }
        Err(OAuthError::TooManyAttempts { retry_after }) => {
            let mut page = km.login_page(
                &req,
                StatusCode::TOO_MANY_REQUESTS,
                Some("Too many failed attempts. Try again later."),
            );
            if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
                page.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return page;
        }
        Err(e) => return e.into_response(),
    }
    let sid = match km.open_session(username) {
        Ok(sid) => sid,
        Err(e) => return e.into_response(),
    };
    let ttl = km.inner.config.session_ttl.as_secs();
    let session = format!(
        "{SESSION_COOKIE}={sid}; Path=/oauth2; Max-Age={ttl}; {}",
        km.cookie_attrs()
    );
    // An application asks the user next; the portals get their code at once.
    if req.consent.is_some() {
        let mut page = km.consent_or_code(&req, username, StatusCode::SEE_OTHER);
        if let Ok(v) = HeaderValue::from_str(&session) {
            page.headers_mut().append(header::SET_COOKIE, v);
        }
        return page;
    }
    let code = match km.issue_code(&req, username) {
        Ok(code) => code,
        Err(e) => return e.into_response(),
    };
    let mut resp = code_redirect(StatusCode::SEE_OTHER, &req, &code);
    let cookies = [
        session,
        format!(
            "{CSRF_COOKIE}=; Path=/oauth2/authorize; Max-Age=0; {}",
            km.cookie_attrs()
        ),
    ];
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(&c) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    resp
}

/// `POST /oauth2/logout`: ends the login session (a cross-site request carries no
/// `SameSite=Strict` cookie, so it cannot log anyone out).
pub(crate) async fn logout(State(km): State<KeyManager>, headers: HeaderMap) -> Response {
    if let Some(sid) = cookie(&headers, SESSION_COOKIE) {
        if let Ok(mut sessions) = km.inner.browser.sessions.lock() {
            sessions.remove(&token_hash(&sid));
        }
    }
    let mut resp = StatusCode::NO_CONTENT.into_response();
    let clear = format!(
        "{SESSION_COOKIE}=; Path=/oauth2; Max-Age=0; {}",
        km.cookie_attrs()
    );
    if let Ok(v) = HeaderValue::from_str(&clear) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    no_store(&mut resp);
    resp
}

impl KeyManager {
    /// A user's password under the brute-force limiter (unknown users cost a
    /// verification too).
    async fn check_user_password(
        &self,
        username: &str,
        password: &str,
        ip: Option<std::net::IpAddr>,
    ) -> Result<bool, OAuthError> {
        let user = self.inner.stores.clients.user(username).await?;
        let hash = user.as_ref().map_or_else(
            || crate::clientauth::dummy_hash().to_owned(),
            |u| u.password_hash.clone(),
        );
        let ok = self
            .check_secret(
                &crate::user_account(username),
                ip,
                password.to_owned(),
                hash,
            )
            .await?;
        Ok(ok && user.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_rfc7636_appendix_b() {
        assert_eq!(
            s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" // RFC 7636 Appendix B
        );
    }

    #[test]
    fn pkce_strings_are_43_to_128_unreserved() {
        assert!(is_pkce_string(&"a".repeat(43)));
        assert!(!is_pkce_string(&"a".repeat(42)));
        assert!(!is_pkce_string(&"a".repeat(129)));
        assert!(!is_pkce_string(&format!("{}+", "a".repeat(43))));
    }

    #[test]
    fn cookies_are_found_by_exact_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("xtp_session=no; tp_session=yes; other=1"),
        );
        assert_eq!(cookie(&h, "tp_session").as_deref(), Some("yes"));
        assert_eq!(cookie(&h, "tp_csrf"), None);
    }
}
