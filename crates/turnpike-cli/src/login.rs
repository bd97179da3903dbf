//! `turnpike login`: a REST-API bearer token for scripts, the way `apictl login` gets one
//! from WSO2. A password grant against the control plane's built-in public client
//! `turnpike-cli`; prints the access token on stdout (`export TURNPIKE_TOKEN=$(turnpike
//! login)`, then `turnpike apply` or curl use it), or the whole token response with
//! `--json` (refresh token, expiry, scopes).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use turnpike_model::rest::CLI_CLIENT_ID;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Command-line arguments of `turnpike login`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoginArgs {
    /// Control plane base URL.
    #[arg(
        long,
        env = "TURNPIKE_CONTROL_PLANE",
        default_value = "http://127.0.0.1:9400"
    )]
    pub control_plane: String,
    #[arg(long, env = "TURNPIKE_USER", default_value = "admin")]
    pub user: String,
    /// Password (prefer the environment variable).
    #[arg(long, env = "TURNPIKE_PASSWORD", hide_env_values = true)]
    pub password: String,
    /// Space-separated `apim:` scopes; default: all the user's roles allow.
    #[arg(long)]
    pub scope: Option<String>,
    /// Print the whole token response (JSON) instead of the access token alone.
    #[arg(long)]
    pub json: bool,
}

/// `application/x-www-form-urlencoded` escaping.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Asks for the token and prints it.
pub async fn run(args: LoginArgs) -> Result<(), BoxError> {
    let mut pairs = vec![
        ("grant_type", "password"),
        ("client_id", CLI_CLIENT_ID),
        ("username", args.user.as_str()),
        ("password", args.password.as_str()),
    ];
    if let Some(s) = &args.scope {
        pairs.push(("scope", s.as_str()));
    }
    let req = http::Request::post(format!(
        "{}/oauth2/token",
        args.control_plane.trim_end_matches('/')
    ))
    .header("content-type", "application/x-www-form-urlencoded")
    .body(Full::new(Bytes::from(form(&pairs))))?;
    let client = Client::builder(TokioExecutor::new()).build_http();
    let resp = client.request(req).await?;
    let status = resp.status();
    let body: Value =
        serde_json::from_slice(&resp.into_body().collect().await?.to_bytes()).unwrap_or_default();
    if !status.is_success() {
        let err = body["error"].as_str().unwrap_or("error");
        let desc = body["error_description"].as_str().unwrap_or_default();
        return Err(format!("login failed: HTTP {status}: {err}: {desc}").into());
    }
    if args.json {
        println!("{body}");
    } else {
        let token = body["access_token"]
            .as_str()
            .ok_or("login: the response has no access_token")?;
        println!("{token}");
    }
    Ok(())
}
