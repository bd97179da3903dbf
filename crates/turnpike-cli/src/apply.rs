//! `turnpike apply -f apis.yaml --control-plane URL --user U` (or `TURNPIKE_TOKEN`, a
//! REST-API bearer token): reconciles a declarative
//! API file (the DB-less format, `turnpike_model::GatewayFile`) against a control plane
//! through its Publisher REST API, like decK or apictl. Each API in the file is created or
//! updated (matched by context + version) and published; with `--prune`, live APIs that
//! the file no longer lists are demoted to CREATED. The file's throttling policies
//! (subscription and application tiers with bursts, bandwidth and billing, advanced
//! policies with conditional groups) become the Admin API's tiers first. Idempotent: a
//! second run changes nothing. Prints one line per action; `--dry-run` prints the same
//! lines and count without changing anything. Both first check the whole file
//! (`apply_check.rs`: the gateways' compile, against the control plane's tiers too) and
//! write nothing if any API has a problem; every problem is listed. The writes that
//! follow are separate REST calls, not one transaction: a refusal the check does not
//! foresee (or an outage) stops the run with the earlier changes kept.

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use turnpike_model::GatewayFile;

use crate::apply_check;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Where the control plane is and who calls it (`turnpike apply`, `turnpike export`).
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// Control plane base URL.
    #[arg(
        long,
        env = "TURNPIKE_CONTROL_PLANE",
        default_value = "http://127.0.0.1:9400"
    )]
    pub control_plane: String,
    /// User name (the publisher role for `apply`, admin for `export`).
    #[arg(long, env = "TURNPIKE_USER", default_value = "admin")]
    pub user: String,
    /// Password (prefer the environment variable).
    #[arg(long, env = "TURNPIKE_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// A REST-API bearer token instead of a password (`turnpike login`; `apply` needs
    /// `apim:api_view apim:api_create apim:api_publish`).
    #[arg(long, env = "TURNPIKE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl Connection {
    /// The base URL without a trailing `/`.
    pub(crate) fn base(&self) -> String {
        self.control_plane.trim_end_matches('/').to_string()
    }

    /// The `Authorization` value: the bearer token, else Basic with the password.
    pub(crate) fn auth_header(&self) -> Result<String, BoxError> {
        match (&self.token, &self.password) {
            (Some(t), _) => Ok(format!("Bearer {t}")),
            (None, Some(p)) => Ok(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{}:{p}", self.user))
            )),
            (None, None) => Err("set TURNPIKE_PASSWORD (or --password) or TURNPIKE_TOKEN".into()),
        }
    }
}

/// Command-line arguments of `turnpike apply`.
#[derive(Debug, Clone, clap::Args)]
pub struct ApplyArgs {
    /// The declarative file (YAML or JSON).
    #[arg(short = 'f', long)]
    pub file: std::path::PathBuf,
    #[command(flatten)]
    pub connection: Connection,
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
    /// A call under `/api/am/publisher/v1`.
    async fn call(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), BoxError> {
        self.call_at(method, &format!("/api/am/publisher/v1{path}"), body)
            .await
    }

    /// A call to any path; 404 is an answer (`Ok`), other errors stop the run.
    async fn call_at(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), BoxError> {
        let (status, v) = self.send(method, path, body).await?;
        if status >= 400 && status != 404 {
            return Err(format!("{path}: HTTP {status}: {v}").into());
        }
        Ok((status, v))
    }

    /// A call whose every status is an answer.
    async fn send(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), BoxError> {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let req = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("authorization", &self.auth)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(bytes)))?;
        let resp = self.client.request(req).await?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await?.to_bytes();
        let v = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Ok((status, v))
    }

    /// The control plane's tier names by family; `None` when the caller may not list
    /// them (403: a publisher without the admin role).
    async fn tier_names(&self) -> Result<apply_check::ServerTiers, BoxError> {
        let mut out: [Vec<String>; 3] = Default::default();
        for (i, names) in out.iter_mut().enumerate() {
            let path = apply_check::tiers_path(i);
            match self.send(http::Method::GET, &path, None).await? {
                (200, list) => *names = apply_check::names(&list),
                (401 | 403, _) => return Ok(None),
                (status, v) => return Err(format!("{path}: HTTP {status}: {v}").into()),
            }
        }
        Ok(Some(out))
    }
}

/// Refuses a file with any problem before anything is written, listing them all.
async fn check(api: &Api, file: &GatewayFile, name: &str) -> Result<(), BoxError> {
    let problems = apply_check::problems(file, &api.tier_names().await?);
    if problems.is_empty() {
        return Ok(());
    }
    let mut msg = format!(
        "{name}: {} problem(s), nothing was applied:",
        problems.len()
    );
    for p in problems {
        msg.push_str("\n  ");
        msg.push_str(&p);
    }
    Err(msg.into())
}

/// The REST body of a file's API entry: every field the file can say (gateway settings
/// and resources' `auth: none` and advanced policies included).
fn desired(spec: &turnpike_model::ApiSpec) -> Value {
    let mut body = json!({
        "name": spec.name,
        "context": spec.context,
        "version": spec.version,
        "isDefaultVersion": spec.default,
        "endpoints": spec.endpoints,
        "sandboxEndpoints": spec.sandbox_endpoints,
        "resources": spec.resources.iter().map(|r| {
            let methods: Vec<String> = if r.methods.iter().any(|m| m == "*") {
                turnpike_model::rest::METHODS.iter().map(|m| m.to_string()).collect()
            } else {
                r.methods.iter().map(|m| m.to_ascii_uppercase()).collect()
            };
            let mut res = json!({"path": r.path, "methods": methods});
            if !r.scopes.is_empty() {
                res["scopes"] = json!(r.scopes);
            }
            if r.auth.is_some() {
                res["auth"] = json!("none");
            }
            if let Some(t) = &r.throttling {
                res["throttlingPolicy"] = json!(t);
            }
            if let Some(m) = r.mediation.as_ref().filter(|m| !m.is_empty()) {
                res["mediation"] = json!(m);
            }
            if let Some(c) = &r.cache {
                res[turnpike_model::rest::cache::FIELD] = json!(c);
            }
            res
        }).collect::<Vec<_>>(),
    });
    let options = [
        ("host", json!(spec.host)),
        (
            "loadBalancing",
            match spec.load_balancing {
                turnpike_model::LoadBalancing::RoundRobin => Value::Null,
                lb => json!(lb),
            },
        ),
        ("maxBodySize", json!(spec.max_body_size)),
        (
            "timeouts",
            if spec.timeouts == turnpike_model::TimeoutSpec::default() {
                Value::Null
            } else {
                json!(spec.timeouts)
            },
        ),
        ("apiThrottlingPolicy", json!(spec.throttling)),
        ("upstreamProtocol", json!(spec.upstream_protocol)),
        ("graphql", json!(spec.graphql)),
        ("mediation", json!(spec.mediation)),
        (
            "paths",
            if spec.paths.is_default() {
                Value::Null
            } else {
                json!(spec.paths)
            },
        ),
        ("requestBuffering", json!(spec.request_buffering)),
        ("resilience", json!(spec.resilience)),
    ];
    for (k, v) in options {
        if !v.is_null() {
            body[k] = v;
        }
    }
    if let Some(cors) = spec.policies.iter().find_map(|p| p.cors.as_ref()) {
        body[turnpike_model::rest::cors::FIELD] = turnpike_model::rest::cors::from_spec(cors);
    }
    if let Some(cache) = spec.policies.iter().find_map(|p| p.cache.as_ref()) {
        body[turnpike_model::rest::cache::FIELD] = turnpike_model::rest::cache::from_spec(cache);
    }
    body
}

/// The body of `POST /apis/import-wsdl` for a file's API with a `soap:` section: the
/// WSDL and its files, with the API's fields as `additionalProperties`.
fn soap_import(soap: &turnpike_model::soap::SoapSpec, want: &Value) -> Value {
    let mut body = json!({"wsdl": soap.wsdl, "files": soap.files, "type": soap.api_type,
        "getOperations": soap.get_operations, "additionalProperties": want});
    if let Some(s) = &soap.service {
        body["service"] = json!(s);
    }
    if let Some(p) = &soap.port {
        body["port"] = json!(p);
    }
    body
}

/// The fields of `want` that `current` does not have as `want` says (a field the file
/// leaves out must be absent from `current` too).
fn differs(current: &Value, want: &Value) -> bool {
    let mut keys: Vec<&str> = vec!["name", "isDefaultVersion", "endpoints", "resources"];
    keys.extend(turnpike_model::rest::OPTION_FIELDS.iter().map(|(k, _)| *k));
    keys.push(turnpike_model::rest::cors::FIELD);
    keys.push(turnpike_model::rest::cache::FIELD);
    keys.iter().any(|k| current.get(*k) != want.get(*k))
}

/// A merge patch of `want` that also clears the gateway settings the file leaves out.
fn replacing(want: &Value) -> Value {
    let mut body = want.clone();
    let settings = turnpike_model::rest::OPTION_FIELDS.iter().map(|(k, _)| *k);
    let policies = [
        turnpike_model::rest::cors::FIELD,
        turnpike_model::rest::cache::FIELD,
    ];
    for k in settings.chain(policies) {
        if body.get(k).is_none() {
            body[k] = Value::Null;
        }
    }
    body
}

/// The security an API has after `create` (the control plane's default).
fn default_auth() -> Value {
    json!(turnpike_model::security::ApiAuthSpec::default())
}

fn wanted_auth(spec: &turnpike_model::ApiSpec) -> Result<Value, BoxError> {
    Ok(serde_json::to_value(spec.auth.clone().unwrap_or_else(
        turnpike_model::security::ApiAuthSpec::none,
    ))?)
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
    let want = wanted_auth(spec)?;
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

/// A tier's REST body from the file's quota (`requests` or `bytes` per `every` x `per`).
fn tier_json(
    name: &str,
    description: &Option<String>,
    quota: &Option<turnpike_model::throttling::Limit>,
) -> Value {
    let mut t = json!({"name": name, "description": description.clone().unwrap_or_default()});
    if let Some(q) = quota {
        match (q.requests, q.bytes) {
            (_, Some(b)) => t["dataAmount"] = json!(b),
            (Some(r), None) => t["requestCount"] = json!(r),
            (None, None) => {}
        }
        t["unitSeconds"] = json!(q.per.seconds() * u64::from(q.every.max(1)));
    }
    t
}

/// The file's throttling policies as (family, REST body), in the order they must exist
/// (subscription and application tiers before the advanced policies APIs name).
fn wanted_tiers(file: &GatewayFile) -> Vec<(&'static str, Value)> {
    let th = &file.throttling;
    let mut out = Vec::new();
    for t in &th.subscription_tiers {
        let mut body = tier_json(&t.name, &t.description, &t.quota);
        if let Some(b) = &t.burst {
            body["burst"] = json!(b);
        }
        if !t.stop_on_quota {
            body["stopOnQuota"] = json!(false);
        }
        out.push(("subscription", body));
    }
    for t in &th.application_tiers {
        out.push(("application", tier_json(&t.name, &t.description, &t.quota)));
    }
    for p in &th.advanced_policies {
        let mut body = tier_json(&p.name, &p.description, &p.default_limit);
        if !p.groups.is_empty() {
            body["conditionalGroups"] = json!(p.groups);
        }
        out.push(("advanced", body));
    }
    out
}

/// What a stored tier says, in the shape [`wanted_tiers`] writes (so they compare).
fn tier_as_written(current: &Value) -> Value {
    let mut t = json!({"name": current["name"], "description": current["description"]});
    let limited = !current["requestCount"].is_null() || current.get("dataAmount").is_some();
    for k in ["requestCount", "dataAmount", "burst", "conditionalGroups"] {
        if let Some(v) = current.get(k).filter(|v| !v.is_null()) {
            t[k] = v.clone();
        }
    }
    if limited {
        t["unitSeconds"] = current["unitSeconds"].clone();
    }
    if current.get("stopOnQuota") == Some(&json!(false)) {
        t["stopOnQuota"] = json!(false);
    }
    t
}

/// A tier's fields that a file may leave out.
const TIER_FIELDS: [&str; 6] = [
    "requestCount",
    "dataAmount",
    "unitSeconds",
    "burst",
    "conditionalGroups",
    "stopOnQuota",
];

/// Creates or replaces the file's tiers; returns the number of changes.
async fn apply_tiers(api: &Api, file: &GatewayFile, dry_run: bool) -> Result<usize, BoxError> {
    let mut changes = 0;
    for (family, want) in wanted_tiers(file) {
        let name = want["name"].as_str().unwrap_or_default().to_string();
        let base = format!("/api/am/admin/v1/throttling/policies/{family}");
        let path = format!("{base}/{}", percent_encode(&name));
        let (status, current) = api.call_at(http::Method::GET, &path, None).await?;
        let (verb, method, at) = if status == 404 {
            ("create", http::Method::POST, base.clone())
        } else if tier_as_written(&current) != want {
            ("update", http::Method::PATCH, path.clone())
        } else {
            continue;
        };
        println!("{verb:<7} {family} tier {name}");
        changes += 1;
        if !dry_run {
            let mut body = want.clone();
            if verb == "update" {
                // A merge patch: what the file leaves out goes back to its default.
                for k in TIER_FIELDS {
                    if body.get(k).is_none() {
                        body[k] = Value::Null;
                    }
                }
            }
            let (status, v) = api.call_at(method, &at, Some(&body)).await?;
            if status == 404 {
                return Err(format!("{at}: HTTP 404: {v}").into());
            }
        }
    }
    Ok(changes)
}

/// Sets the unauthenticated tier and the rate-limit header style when they differ from
/// the file's (a throttling section that leaves them out wants the defaults); returns
/// the number of changes (0 or 1).
async fn apply_throttling_settings(
    api: &Api,
    file: &GatewayFile,
    dry_run: bool,
) -> Result<usize, BoxError> {
    // A file without a throttling section leaves the environment's throttling alone
    // (as it leaves its tiers), so a publisher without the admin role can apply APIs.
    if file.throttling.is_empty() {
        return Ok(0);
    }
    let path = "/api/am/admin/v1/settings/throttling";
    let want = serde_json::json!({
        "unauthenticatedTier": file.throttling.unauthenticated_tier,
        "rateLimitHeaders": file.throttling.headers,
    });
    let (_, current) = api.call_at(http::Method::GET, path, None).await?;
    if current == want {
        return Ok(0);
    }
    println!("update  throttling settings");
    if !dry_run {
        api.call_at(http::Method::PUT, path, Some(&want)).await?;
    }
    Ok(1)
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Runs the reconciliation; the first failing call stops it with its error.
pub async fn run(args: ApplyArgs) -> Result<(), BoxError> {
    reconcile(args).await.map(|_| ())
}

/// [`run`], returning the number of changes made (or, with `--dry-run`, that a run
/// would make).
pub async fn reconcile(args: ApplyArgs) -> Result<usize, BoxError> {
    let text = std::fs::read_to_string(&args.file)?;
    // A file nested past any real one is refused before the parser spends time on it.
    turnpike_config::check_depth(&text).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let file: GatewayFile =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let auth = args.connection.auth_header()?;
    let api = Api {
        client: Client::builder(TokioExecutor::new()).build_http(),
        base: args.connection.base(),
        auth,
    };
    // The real run and the dry run check alike, before any write.
    check(&api, &file, &args.file.display().to_string()).await?;
    let mut changes = apply_tiers(&api, &file, args.dry_run).await?;
    changes += apply_throttling_settings(&api, &file, args.dry_run).await?;
    let (_, all) = api
        .call(http::Method::GET, "/apis?limit=1000", None)
        .await?;
    let existing: Vec<Value> = all["list"].as_array().cloned().unwrap_or_default();
    for spec in &file.apis {
        let mut want = desired(spec);
        // A SOAP API listing no resources gets them from its WSDL.
        let wsdl_resources = spec.soap.is_some() && spec.resources.is_empty();
        if let (true, Some(obj)) = (wsdl_resources, want.as_object_mut()) {
            obj.remove("resources");
        }
        let label = format!("{} {}", spec.context, spec.version);
        let found = existing.iter().find(|a| {
            a["context"] == spec.context.as_str() && a["version"] == spec.version.as_str()
        });
        let (id, state) = match found {
            None => {
                println!("create  {label}");
                changes += 1;
                if args.dry_run {
                    // What the run would do after the create: secure, publish.
                    if wanted_auth(spec)? != default_auth() {
                        println!("secure  {label}");
                        changes += 1;
                    }
                    println!("publish {label}");
                    changes += 1;
                    continue;
                }
                let (_, a) = match &spec.soap {
                    Some(soap) => {
                        let body = soap_import(soap, &want);
                        api.call(http::Method::POST, "/apis/import-wsdl", Some(&body))
                            .await?
                    }
                    None => api.call(http::Method::POST, "/apis", Some(&want)).await?,
                };
                let id = a["id"].as_str().unwrap_or_default().to_string();
                changes += secure(&api, spec, &id, &label, args.dry_run).await?;
                (id, "CREATED".to_string())
            }
            Some(cur) => {
                let id = cur["id"].as_str().unwrap_or_default().to_string();
                if wsdl_resources {
                    want["resources"] = cur["resources"].clone();
                }
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
                        let body = replacing(&want);
                        api.call(http::Method::PATCH, &format!("/apis/{id}"), Some(&body))
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
    Ok(changes)
}
