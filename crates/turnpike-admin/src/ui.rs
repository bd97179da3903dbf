//! The web portals' static files: the single-page app built from the repository's `ui/`
//! (`npm run build` → `ui/dist`), served from a directory at `/`, with the app's own
//! paths (`/publisher`, `/devportal`, `/admin`, `/callback`) answered by `index.html`.
//! Hashed assets under `/assets/` are cached for a year, `index.html` never. Assets go
//! out compressed when the client accepts it: the build writes `NAME.br` and `NAME.gz`
//! beside each file (`ui/vite.config.ts`), so nothing is compressed per request; a file
//! without them goes out as it is. Where the
//! directory comes from: `--ui-dir`, else `ui/dist` under the working directory or
//! beside the binary's repository checkout; without one, `/` says how to build it.
//! Also holds the URL of the gateway the try-it relay (`crate::rest::try_it`) calls.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{header, HeaderMap, StatusCode, Uri};

use crate::AppState;

/// Flags of `turnpike control-plane` and `turnpike up` for the web portals.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UiArgs {
    /// Directory of the built web portals (`ui/dist`); default: found next to the
    /// working directory or the binary.
    #[arg(long, env = "TURNPIKE_UI_DIR")]
    pub ui_dir: Option<PathBuf>,
    /// The gateway URL the portals' try-it console relays requests to (`turnpike up`
    /// sets its own gateway).
    #[arg(long, env = "TURNPIKE_GATEWAY_URL")]
    pub gateway_url: Option<String>,
}

/// Where the portals' files are and which gateway try-it calls; set after start.
#[derive(Default)]
pub(crate) struct UiSettings {
    dir: Mutex<Option<PathBuf>>,
    gateway_url: Mutex<Option<String>>,
}

/// Sets the portals' directory (or discovers `ui/dist`) and the try-it gateway URL.
/// Returns the directory served, if any.
pub fn configure(state: &AppState, args: &UiArgs) -> Option<PathBuf> {
    let dir = args.ui_dir.clone().or_else(discover);
    if let Ok(mut d) = state.inner.ui.dir.lock() {
        d.clone_from(&dir);
    }
    if let Some(url) = &args.gateway_url {
        set_gateway_url(state, url);
    }
    dir
}

/// The gateway the try-it relay calls (`http://host:port`).
pub fn set_gateway_url(state: &AppState, url: &str) {
    if let Ok(mut g) = state.inner.ui.gateway_url.lock() {
        *g = Some(url.trim_end_matches('/').to_string());
    }
}

pub(crate) fn gateway_url(state: &AppState) -> Option<String> {
    state.inner.ui.gateway_url.lock().ok()?.clone()
}

fn dir(state: &AppState) -> Option<PathBuf> {
    state.inner.ui.dir.lock().ok()?.clone()
}

/// `ui/dist` (with an `index.html`) under the working directory, or up to four levels
/// above the binary (a `target/release/turnpike` in a checkout).
fn discover() -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("ui/dist")];
    if let Ok(exe) = std::env::current_exe() {
        candidates.extend(exe.ancestors().skip(1).take(4).map(|a| a.join("ui/dist")));
    }
    candidates
        .into_iter()
        .find(|c| c.join("index.html").is_file())
}

pub(crate) fn routes() -> Router<AppState> {
    let app = || get(index);
    Router::new()
        .route("/", app())
        .route("/callback", app())
        .route("/publisher", app())
        .route("/publisher/{*rest}", app())
        .route("/devportal", app())
        .route("/devportal/{*rest}", app())
        .route("/admin", app())
        .route("/admin/{*rest}", app())
        .route("/assets/{*path}", get(asset))
        .route("/favicon.svg", get(asset))
}

const CSP: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

async fn index(State(s): State<AppState>) -> Response {
    let Some(dir) = dir(&s) else {
        return not_built();
    };
    match tokio::fs::read(dir.join("index.html")).await {
        Ok(bytes) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
                (header::CONTENT_SECURITY_POLICY, CSP),
                (header::X_FRAME_OPTIONS, "DENY"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            bytes,
        )
            .into_response(),
        Err(_) => not_built(),
    }
}

fn not_built() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "The web portals are not built. From the repository: \
         (cd ui && npm ci && npm run build), then restart, or pass --ui-dir DIR.\n",
    )
        .into_response()
}

/// The file under `dir` for a request path, refusing anything but plain components.
fn resolve(dir: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path.trim_start_matches('/'));
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| dir.join(rel))
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "html" => "text/html; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "json" | "map" => "application/json",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    }
}

/// The content codings a client accepts (`Accept-Encoding`, RFC 9110 §12.5.3), in our
/// order of preference: brotli, then gzip. A coding with `q=0` is refused.
fn accepted_codings(headers: &HeaderMap) -> Vec<&'static str> {
    let mut accepted = Vec::new();
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        for item in value.to_str().unwrap_or("").split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            if !refused {
                accepted.push(coding);
            }
        }
    }
    ["br", "gzip"]
        .into_iter()
        .filter(|c| accepted.iter().any(|a| a == c))
        .collect()
}

/// The precompressed sibling of `file` for the first accepted coding that has one.
async fn precompressed(file: &Path, headers: &HeaderMap) -> Option<(&'static str, Vec<u8>)> {
    for coding in accepted_codings(headers) {
        let ext = if coding == "br" { "br" } else { "gz" };
        let mut name = file.as_os_str().to_owned();
        name.push(format!(".{ext}"));
        if let Ok(bytes) = tokio::fs::read(PathBuf::from(name)).await {
            return Some((coding, bytes));
        }
    }
    None
}

async fn asset(State(s): State<AppState>, uri: Uri, headers: HeaderMap) -> Response {
    let missing = || crate::error::ApiError::not_found("file").into_response();
    let Some(file) = dir(&s).and_then(|d| resolve(&d, uri.path())) else {
        return missing();
    };
    let (coding, bytes) = match precompressed(&file, &headers).await {
        Some((coding, bytes)) => (Some(coding), bytes),
        None => match tokio::fs::read(&file).await {
            Ok(bytes) => (None, bytes),
            Err(_) => return missing(),
        },
    };
    // Vite names assets by content hash: a new build is a new name.
    let cache = if uri.path().starts_with("/assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut resp = (
        [
            (header::CONTENT_TYPE, content_type(&file)),
            (header::CACHE_CONTROL, cache),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::VARY, "Accept-Encoding"),
        ],
        bytes,
    )
        .into_response();
    if let Some(c) = coding {
        resp.headers_mut()
            .insert(header::CONTENT_ENCODING, http::HeaderValue::from_static(c));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codings_are_chosen_br_first_and_q0_refused() {
        let h = |v: &'static str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT_ENCODING, http::HeaderValue::from_static(v));
            m
        };
        assert_eq!(accepted_codings(&h("gzip, deflate, br")), ["br", "gzip"]);
        assert_eq!(accepted_codings(&h("gzip;q=0.5, br;q=0")), ["gzip"]);
        assert_eq!(accepted_codings(&h("identity")), Vec::<&str>::new());
        assert_eq!(accepted_codings(&HeaderMap::new()), Vec::<&str>::new());
    }

    #[test]
    fn only_plain_paths_resolve() {
        let d = Path::new("/srv/ui");
        assert_eq!(
            resolve(d, "/assets/index-abc.js"),
            Some(PathBuf::from("/srv/ui/assets/index-abc.js"))
        );
        assert_eq!(resolve(d, "/assets/../../etc/passwd"), None);
        assert_eq!(
            resolve(d, "/assets/./x"),
            Some(PathBuf::from("/srv/ui/assets/x"))
        );
    }
}
