//! `turnpike apply -f apis.yaml --control-plane URL --user U` (or `TURNPIKE_TOKEN`, a
//! REST-API bearer token): reconciles a declarative
//! API file (the DB-less format, `turnpike_model::GatewayFile`) against a control plane
//! through its Publisher REST API, like decK or apictl. Each API in the file is created or
//! updated (matched by context + version) and published; with `--prune`, live APIs that
//! the file no longer lists are demoted to CREATED. Idempotent: a second run changes
//! nothing. Prints one line per action; `--dry-run` only prints.

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use turnpike_model::GatewayFile;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Command-line arguments of `turnpike apply`.
#[derive(Debug, Clone, clap::Args)]
pub struct ApplyArgs {
    /// The declarative file (YAML or JSON).
    #[arg(short = 'f', long)]
    pub file: std::path::PathBuf,
    /// Control plane base URL.
    #[arg(
        long,
        env = "TURNPIKE_CONTROL_PLANE",
        default_value = "http://127.0.0.1:9400"
    )]
    pub control_plane: String,
    /// User with the publisher role.
    #[arg(long, env = "TURNPIKE_USER", default_value = "admin")]
    pub user: String,
    /// Password (prefer the environment variable).
    #[arg(long, env = "TURNPIKE_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// A REST-API bearer token instead of a password (`POST /oauth2/token`, password
    /// grant, client `turnpike-cli`; needs `apim:api_view apim:api_create apim:api_publish`).
    #[arg(long, env = "TURNPIKE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Demote live APIs the file does not list.
    #[arg(long)]
    pub prune: bool,
    /// Print what would change without changing it.
    #[arg(long)]
    pub dry_run: bool,
}

struct Api {
    client: Client<HttpConnector, Full<Bytes>>,
    base: String,
    auth: String,
}

impl Api {
    async fn call(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), BoxError> {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let req = http::Request::builder()
            .method(method)
            .uri(format!("{}/api/am/publisher/v1{path}", self.base))
            .header("authorization", &self.auth)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(bytes)))?;
        let resp = self.client.request(req).await?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await?.to_bytes();
        let v = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if status >= 400 {
            return Err(format!("{path}: HTTP {status}: {v}").into());
        }
        Ok((status, v))
    }
}

fn desired(spec: &turnpike_model::ApiSpec) -> Value {
    json!({
        "name": spec.name,
        "context": spec.context,
        "version": spec.version,
        "isDefaultVersion": spec.default,
        "endpoints": spec.endpoints,
        "resources": spec.resources.iter().map(|r| {
            let methods: Vec<String> = if r.methods.iter().any(|m| m == "*") {
                crate::api_body::METHODS.iter().map(|m| m.to_string()).collect()
            } else {
                r.methods.iter().map(|m| m.to_ascii_uppercase()).collect()
            };
            let mut res = json!({"path": r.path, "methods": methods});
            if !r.scopes.is_empty() {
                res["scopes"] = json!(r.scopes);
            }
            res
        }).collect::<Vec<_>>(),
    })
}

fn differs(current: &Value, want: &Value) -> bool {
    ["name", "isDefaultVersion", "endpoints", "resources"]
        .iter()
        .any(|k| current.get(*k) != want.get(*k))
}

/// Makes the API's security the file's `auth:` (open when omitted, as in a DB-less
/// file); returns the number of changes (0 or 1).
async fn secure(
    api: &Api,
    spec: &turnpike_model::ApiSpec,
    id: &str,
    label: &str,
    dry_run: bool,
) -> Result<usize, BoxError> {
    let want = serde_json::to_value(
        spec.auth
            .clone()
            .unwrap_or_else(turnpike_model::security::ApiAuthSpec::none),
    )?;
    let path = format!("/apis/{id}/security");
    let (_, current) = api.call(http::Method::GET, &path, None).await?;
    if current == want {
        return Ok(0);
    }
    println!("secure  {label}");
    if !dry_run {
        api.call(http::Method::PUT, &path, Some(&want)).await?;
    }
    Ok(1)
}

/// Runs the reconciliation; the first failing call stops it with its error.
pub async fn run(args: ApplyArgs) -> Result<(), BoxError> {
    let text = std::fs::read_to_string(&args.file)?;
    let file: GatewayFile =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let auth = match (&args.token, &args.password) {
        (Some(t), _) => format!("Bearer {t}"),
        (None, Some(p)) => format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{}:{p}", args.user))
        ),
        (None, None) => {
            return Err("set TURNPIKE_PASSWORD (or --password) or TURNPIKE_TOKEN".into())
        }
    };
    let api = Api {
        client: Client::builder(TokioExecutor::new()).build_http(),
        base: args.control_plane.trim_end_matches('/').to_string(),
        auth,
    };
    let (_, all) = api
        .call(http::Method::GET, "/apis?limit=1000", None)
        .await?;
    let existing: Vec<Value> = all["list"].as_array().cloned().unwrap_or_default();
    let mut changes = 0;
    for spec in &file.apis {
        let want = desired(spec);
        let label = format!("{} {}", spec.context, spec.version);
        let found = existing.iter().find(|a| {
            a["context"] == spec.context.as_str() && a["version"] == spec.version.as_str()
        });
        let (id, state) = match found {
            None => {
                println!("create  {label}");
                changes += 1;
                if args.dry_run {
                    continue;
                }
                let (_, a) = api.call(http::Method::POST, "/apis", Some(&want)).await?;
                let id = a["id"].as_str().unwrap_or_default().to_string();
                changes += secure(&api, spec, &id, &label, args.dry_run).await?;
                (id, "CREATED".to_string())
            }
            Some(cur) => {
                let id = cur["id"].as_str().unwrap_or_default().to_string();
                // Resource scopes need a secured API: secure before adding scopes, and
                // drop scopes before opening an API.
                let open = spec.auth.as_ref().is_none_or(|a| a.is_open());
                if !open {
                    changes += secure(&api, spec, &id, &label, args.dry_run).await?;
                }
                if differs(cur, &want) {
                    println!("update  {label}");
                    changes += 1;
                    if !args.dry_run {
                        let mut body = want.clone();
                        body["policies"] = cur["policies"].clone();
                        body["description"] = cur["description"].clone();
                        api.call(http::Method::PUT, &format!("/apis/{id}"), Some(&body))
                            .await?;
                    }
                }
                if open {
                    changes += secure(&api, spec, &id, &label, args.dry_run).await?;
                }
                (
                    id,
                    cur["lifecycleStatus"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            }
        };
        let action = match state.as_str() {
            "CREATED" | "PROTOTYPED" => Some("Publish"),
            "BLOCKED" => Some("Re-Publish"),
            _ => None,
        };
        if let Some(action) = action {
            println!("publish {label}");
            changes += 1;
            if !args.dry_run {
                let q = format!(
                    "/apis/change-lifecycle?apiId={id}&action={}",
                    action.replace(' ', "%20")
                );
                api.call(http::Method::POST, &q, None).await?;
            }
        }
    }
    if args.prune {
        for cur in &existing {
            let listed = file.apis.iter().any(|s| {
                cur["context"] == s.context.as_str() && cur["version"] == s.version.as_str()
            });
            if listed
                || !matches!(
                    cur["lifecycleStatus"].as_str(),
                    Some("PUBLISHED" | "PROTOTYPED")
                )
            {
                continue;
            }
            println!(
                "demote  {} {}",
                cur["context"].as_str().unwrap_or(""),
                cur["version"].as_str().unwrap_or("")
            );
            changes += 1;
            if !args.dry_run {
                let id = cur["id"].as_str().unwrap_or_default();
                api.call(
                    http::Method::POST,
                    &format!("/apis/change-lifecycle?apiId={id}&action=Demote%20to%20Created"),
                    None,
                )
                .await?;
            }
        }
    }
    println!(
        "{changes} change(s){}",
        if args.dry_run { " (dry run)" } else { "" }
    );
    Ok(())
}
