//! The control plane: the Publisher (`/api/am/publisher/v1`), DevPortal
//! (`/api/am/devportal/v1`) and Admin (`/api/am/admin/v1`) REST APIs over the store, the
//! gateway snapshot long-poll (`/api/am/gateway/v1/snapshot`), and the OpenAPI 3 document
//! of all of them (`/api/am/openapi.json`); the web portals' files at `/` (`ui.rs`) and
//! their try-it relay (`rest/try_it.rs`). HTTP Basic or bearer tokens from the built-in
//! key manager (scopes `apim:*`, `scopes.rs`), roles admin, publisher, subscriber.
//! Depends on the store and the file format, never on the gateway.
//!
//! [`router`] builds the app so tests call it without a socket; [`serve`] runs it.

mod ai_report;
mod analytics_report;
mod auth;
mod error;
mod http;
mod import;
mod merge;
mod multipart;
mod openapi;
mod rest;
pub mod runtime;
pub mod scopes;
pub mod security;
mod service;
mod snapshot;
pub mod tls;
pub mod ui;
mod validate;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use turnpike_keymanager::{BruteForcePolicy, Clock, PasswordGuard, SystemClock};
use turnpike_store::Store;

pub use error::ApiError;
pub use openapi::doc::document as openapi_document;
pub use openapi::operations::{Operation, OPERATIONS};
pub use rest::admin::create_user_with;
pub use rest::environments;

/// The import body limit unless `--max-import-size` sets another.
pub const DEFAULT_IMPORT_LIMIT: usize = 16 * 1024 * 1024;

/// Control-plane settings.
#[derive(Debug, Clone)]
pub struct AdminConfig {
    /// The token gateways present (`Authorization: Bearer ...`) to fetch snapshots.
    pub gateway_token: String,
    /// The longest a snapshot long-poll waits for a change.
    pub long_poll: Duration,
    /// Largest request body accepted.
    pub body_limit: usize,
    /// Largest body of an import (OpenAPI, WSDL, GraphQL) and of a document it fetches by
    /// URL: descriptions of large public APIs run to megabytes.
    pub import_limit: usize,
    /// A gateway lagging longer than this counts as lagging (`/gateways`, `/metrics`).
    pub max_lag: Duration,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            gateway_token: String::new(),
            long_poll: Duration::from_secs(30),
            body_limit: 2 * 1024 * 1024,
            import_limit: DEFAULT_IMPORT_LIMIT,
            max_lag: Duration::from_secs(30),
        }
    }
}

/// Shared state of every handler.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    config: AdminConfig,
    auth_cache: auth::AuthCache,
    /// Brute-force limits of every password check: HTTP Basic here, and the key
    /// manager's login form, password grant and client secrets (it shares this one).
    guard: Arc<PasswordGuard>,
    readiness: rest::ready::Readiness,
    snapshots: snapshot::Cache,
    /// The key manager, once [`security::enable`] ran.
    security: std::sync::OnceLock<security::Security>,
    /// Set when the server stops: pending long-polls answer at once.
    closing: tokio::sync::watch::Sender<bool>,
    /// The web portals' directory and the try-it gateway.
    ui: ui::UiSettings,
}

impl AppState {
    pub fn new(store: Store, config: AdminConfig) -> AppState {
        Self::with_clock(store, config, Arc::new(SystemClock))
    }

    /// [`AppState::new`] whose brute-force limits read `clock` (tests step it; pass the
    /// same clock to [`security::enable_with_clock`]).
    pub fn with_clock(store: Store, config: AdminConfig, clock: Arc<dyn Clock>) -> AppState {
        let guard = Arc::new(PasswordGuard::new(BruteForcePolicy::default(), clock));
        AppState {
            inner: Arc::new(Inner {
                store,
                config,
                auth_cache: auth::AuthCache::default(),
                guard,
                readiness: rest::ready::Readiness::default(),
                snapshots: snapshot::Cache::default(),
                security: std::sync::OnceLock::new(),
                closing: tokio::sync::watch::channel(false).0,
                ui: ui::UiSettings::default(),
            }),
        }
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Ends pending snapshot long-polls (they answer 503) so a graceful stop is quick.
    pub fn begin_shutdown(&self) {
        self.inner.closing.send_replace(true);
    }
}

async fn not_found() -> error::ApiError {
    error::ApiError::not_found("resource")
}

/// The whole control-plane app (with the key manager's `/oauth2/*` routes once
/// [`security::enable`] ran).
pub fn router(state: AppState) -> Router {
    let limit = state.inner.config.body_limit;
    let km = state.inner.security.get().map(|s| s.km.router());
    let app = rest::routes()
        .merge(rest::ready::routes())
        .merge(snapshot::metrics_routes())
        .merge(ui::routes())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state.clone());
    let app = match km {
        Some(km) => app.merge(km),
        None => app,
    };
    app.layer(axum::middleware::from_fn_with_state(
        state,
        rest::ready::observe,
    ))
}

/// Serves the app on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The peer address keys the brute-force limits (`turnpike_keymanager::PeerIp`).
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// [`serve`] over HTTPS (`tls.rs`: handshakes off the accept loop, the certificate
/// reloaded when its files change).
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    config: Arc<rustls::ServerConfig>,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    // `tap_io` (doing nothing) is what gives a custom listener axum's `ConnectInfo`.
    let listener = tls::TlsListener::new(listener, config)?.tap_io(|_| {});
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Creates the first admin when the store has no user; returns the password it set
/// (`preset` or a random one) so the caller can print it once.
pub async fn ensure_admin(
    state: &AppState,
    preset: Option<String>,
) -> Result<Option<String>, error::ApiError> {
    if state.inner.store.user_count().await? > 0 {
        return Ok(None);
    }
    let password = preset
        .filter(|p| !p.is_empty())
        .unwrap_or_else(random_secret);
    match create_user_with(state, "system", "admin", &password, &["admin".to_string()]).await {
        Ok(()) => Ok(Some(password)),
        // Another control plane starting on the same database created it first.
        Err(_) if state.inner.store.user_count().await? > 0 => Ok(None),
        Err(e) => Err(e),
    }
}

/// A random secret: 24 URL-safe characters.
pub fn random_secret() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut b = [0u8; 18];
    rand::thread_rng().fill_bytes(&mut b);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}
