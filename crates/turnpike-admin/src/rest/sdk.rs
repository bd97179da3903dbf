//! `GET /api/am/devportal/v1/apis/{id}/sdks/{language}` (WSO2's "download SDK"): a zip of
//! a client library generated from the API's served OpenAPI document (the DevPortal's
//! `/swagger`: its servers are the gateway URLs), for `typescript` (typescript-fetch),
//! `python` or `java` (java.net.http, Jackson).
//!
//! The generator is openapi-generator, the one every peer uses: a Java program the control
//! plane runs when it is installed, so a control plane without Java pays nothing. The jar
//! is `TURNPIKE_OPENAPI_GENERATOR_JAR` (default: version 7.17.0 in the Maven local
//! repository, where `scripts/install-test-deps.sh` puts it), java is `TURNPIKE_JAVA` or the
//! first `java` on `PATH`. Without either: 503 `sdk_generator_unavailable` naming what is
//! missing. A generation takes seconds of CPU, so one runs at a time (a caller waits up to
//! [`QUEUE_WAIT`], then gets 503 `sdk_generator_busy`), and zips are cached by API,
//! revision, language and document (at most [`CACHED`]): the second download is instant.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{header, StatusCode};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::auth::Portal;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::AppState;

/// The jar's version when `TURNPIKE_OPENAPI_GENERATOR_JAR` does not name one.
const GENERATOR_VERSION: &str = "7.17.0";
/// Longest one generation may run.
const TIMEOUT: Duration = Duration::from_secs(180);
/// Longest a caller waits for the generation before it.
const QUEUE_WAIT: Duration = Duration::from_secs(120);
/// Zips kept in memory.
const CACHED: usize = 32;
/// Most files and bytes a generated client may have (a bound on what is zipped).
const MAX_FILES: usize = 5000;
const MAX_BYTES: u64 = 32 << 20;

static RUNNING: Semaphore = Semaphore::const_new(1);
static CACHE: Mutex<VecDeque<(String, Bytes)>> = Mutex::new(VecDeque::new());

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/apis/{id}/sdks/{language}", get(download))
}

/// The java binary and the generator's jar, or a sentence naming what is missing.
pub(crate) fn locate(
    jar: Option<OsString>,
    java: Option<OsString>,
    path: Option<OsString>,
    home: Option<OsString>,
) -> Result<(PathBuf, PathBuf), String> {
    let jar = jar.map(PathBuf::from).or_else(|| {
        home.map(|h| {
            PathBuf::from(h).join(format!(
                ".m2/repository/org/openapitools/openapi-generator-cli/{GENERATOR_VERSION}/openapi-generator-cli-{GENERATOR_VERSION}.jar"
            ))
        })
    });
    let java = java.map(PathBuf::from).or_else(|| {
        path.and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("java"))
                .find(|j| j.is_file())
        })
    });
    let mut missing = Vec::new();
    let jar = jar.filter(|j| j.is_file());
    if jar.is_none() {
        missing.push(format!("the openapi-generator-cli jar (set TURNPIKE_OPENAPI_GENERATOR_JAR, or put version {GENERATOR_VERSION} in the Maven local repository)"));
    }
    if java.is_none() {
        missing.push("java 11 or later (set TURNPIKE_JAVA or put java on PATH)".to_string());
    }
    match (jar, java) {
        (Some(jar), Some(java)) => Ok((java, jar)),
        _ => Err(format!(
            "SDK generation is not installed on this control plane: it needs {}",
            missing.join(" and ")
        )),
    }
}

fn unavailable(why: String) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "sdk_generator_unavailable",
        why,
    )
}

async fn download(
    State(s): State<AppState>,
    _c: Portal,
    Path((id, language)): Path<(String, String)>,
) -> ApiResult<Response> {
    let Some(&(_, generator)) = crate::openapi::detail::SDK_LANGUAGES
        .iter()
        .find(|(l, _)| *l == language)
    else {
        let offered: Vec<&str> = crate::openapi::detail::SDK_LANGUAGES
            .iter()
            .map(|(l, _)| *l)
            .collect();
        return Err(ApiError::invalid(vec![FieldError {
            field: "language".into(),
            message: format!("must be one of {offered:?}"),
        }]));
    };
    let api = crate::rest::devportal::visible_api(&s, &id).await?;
    let envs = crate::rest::environments::list(&s).await?;
    let doc = crate::rest::publisher::definition_value(
        &api,
        crate::rest::environments::servers(&envs, &api),
    );
    let doc = serde_json::to_vec(&doc).map_err(|_| ApiError::internal())?;
    let key = format!(
        "{}/{}/{language}/{:x}",
        api.id,
        api.revision,
        Sha256::digest(&doc)
    );
    let slug = slug(&format!("{}-{}", api.name, api.version));
    let zip = match cached(&key) {
        Some(zip) => zip,
        None => {
            let (java, jar) = locate(
                std::env::var_os("TURNPIKE_OPENAPI_GENERATOR_JAR"),
                std::env::var_os("TURNPIKE_JAVA"),
                std::env::var_os("PATH"),
                std::env::var_os("HOME"),
            )
            .map_err(unavailable)?;
            let _turn = tokio::time::timeout(QUEUE_WAIT, RUNNING.acquire())
                .await
                .ok()
                .and_then(Result::ok)
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "sdk_generator_busy",
                        "other SDKs are being generated: try again in a minute",
                    )
                })?;
            let zip = match cached(&key) {
                Some(zip) => zip,
                None => generate(&java, &jar, generator, &doc, &slug, &language).await?,
            };
            remember(key, zip.clone());
            zip
        }
    };
    let disposition = format!("attachment; filename=\"{slug}-{language}.zip\"");
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        zip,
    )
        .into_response())
}

fn cached(key: &str) -> Option<Bytes> {
    let cache = CACHE.lock().ok()?;
    cache.iter().find(|(k, _)| k == key).map(|(_, z)| z.clone())
}

fn remember(key: String, zip: Bytes) {
    if let Ok(mut cache) = CACHE.lock() {
        if cache.iter().any(|(k, _)| *k == key) {
            return;
        }
        if cache.len() >= CACHED {
            cache.pop_front();
        }
        cache.push_back((key, zip));
    }
}

/// Lower-case letters, digits and dashes: a package and file name every language takes.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "api".into()
    } else if s.starts_with(|c: char| c.is_ascii_digit()) {
        format!("api-{s}")
    } else {
        s
    }
}

/// The generator's options for one language: package names from the API's slug.
fn options(generator: &str, slug: &str) -> String {
    let snake = slug.replace('-', "_");
    let flat = slug.replace('-', "");
    match generator {
        "python" => format!("packageName={snake}_client,projectName={slug}-client"),
        "java" => format!(
            "library=native,artifactId={slug}-client,groupId=com.example,invokerPackage=com.example.{flat}.client,apiPackage=com.example.{flat}.client.api,modelPackage=com.example.{flat}.client.model,hideGenerationTimestamp=true"
        ),
        _ => format!("npmName={slug}-client,supportsES6=true"),
    }
}

async fn generate(
    java: &FsPath,
    jar: &FsPath,
    generator: &str,
    doc: &[u8],
    slug: &str,
    language: &str,
) -> ApiResult<Bytes> {
    let dir = std::env::temp_dir().join(format!("turnpike-sdk-{}", crate::random_secret()));
    let result = run(java, jar, generator, doc, slug, &dir)
        .await
        .and_then(|()| {
            let prefix = format!("{slug}-{language}");
            zip_dir(&dir.join("out"), &prefix).map_err(|e| {
                tracing::error!(error = %e, "sdk: zipping the generated client");
                ApiError::internal()
            })
        });
    let _ = std::fs::remove_dir_all(&dir);
    result.map(Bytes::from)
}

fn failed(message: String) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "sdk_generation_failed",
        message,
    )
}

async fn run(
    java: &FsPath,
    jar: &FsPath,
    generator: &str,
    doc: &[u8],
    slug: &str,
    dir: &FsPath,
) -> ApiResult<()> {
    std::fs::create_dir_all(dir).map_err(|e| failed(format!("a work directory: {e}")))?;
    let input = dir.join("openapi.json");
    std::fs::write(&input, doc).map_err(|e| failed(format!("a work directory: {e}")))?;
    let child = tokio::process::Command::new(java)
        .arg("-jar")
        .arg(jar)
        .args(["generate", "--skip-validate-spec", "-g", generator, "-i"])
        .arg(&input)
        .arg("-o")
        .arg(dir.join("out"))
        .arg(format!(
            "--additional-properties={}",
            options(generator, slug)
        ))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(TIMEOUT, child)
        .await
        .map_err(|_| failed(format!("the generator took over {} s", TIMEOUT.as_secs())))?
        .map_err(|e| unavailable(format!("cannot run {}: {e}", java.display())))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        tracing::warn!(generator, output = %text, "sdk: the generator failed");
        let last = text
            .lines()
            .rev()
            .find(|l| l.contains("Exception") || l.contains("ERROR"))
            .unwrap_or("see the control plane's log");
        return Err(failed(format!(
            "openapi-generator ({generator}) failed on this API's document: {}",
            last.trim()
        )));
    }
    Ok(())
}

/// Every file under `root`, as `prefix/relative/path`, in a zip.
fn zip_dir(root: &FsPath, prefix: &str) -> Result<Vec<u8>, String> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(root).map_err(|e| e.to_string())?;
            let data = std::fs::read(&path).map_err(|e| e.to_string())?;
            total += data.len() as u64;
            if files.len() >= MAX_FILES || total > MAX_BYTES {
                return Err(format!("over {MAX_FILES} files or {MAX_BYTES} bytes"));
            }
            let rel = rel.to_string_lossy().replace('\\', "/");
            files.push((format!("{prefix}/{rel}"), data));
        }
    }
    files.sort();
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    Ok(turnpike_soap::zip::write_stored(&entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_generator_is_named() {
        let e = locate(
            Some("/nonexistent/openapi-generator-cli.jar".into()),
            None,
            Some("/nonexistent-bin".into()),
            None,
        )
        .expect_err("nothing installed");
        assert!(e.contains("openapi-generator-cli jar"), "{e}");
        assert!(e.contains("TURNPIKE_OPENAPI_GENERATOR_JAR"), "{e}");
        assert!(e.contains("java 11"), "{e}");
    }

    #[test]
    fn slugs_are_package_names() {
        assert_eq!(slug("Pet Store-v1.0"), "pet-store-v1-0");
        assert_eq!(slug("1 API"), "api-1-api");
        assert_eq!(slug("!!"), "api");
    }
}
