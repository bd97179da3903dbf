//! `turnpike login`: a REST-API bearer token for scripts, the way `apictl login` gets one
//! from WSO2. A password grant against the control plane's built-in public client
//! `turnpike-cli`; prints the access token on stdout (`export TURNPIKE_TOKEN=$(turnpike
//! login)`, then `turnpike apply` or curl use it), or the whole token response with
//! `--json` (refresh token, expiry, scopes). The password comes from `TURNPIKE_PASSWORD`
//! (or `--password`), from the first line of stdin with `--password-stdin` (as
//! `docker login` reads it), or from a prompt without echo when stdin is a terminal.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
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
    /// Password (prefer the environment variable, `--password-stdin` or the prompt).
    #[arg(long, env = "TURNPIKE_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// How an `https://` control plane is verified.
    #[command(flatten)]
    pub tls: crate::http::TlsArgs,
    /// Read the password from the first line of stdin.
    #[arg(long, conflicts_with = "password")]
    pub password_stdin: bool,
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

/// The longest password line read (stdin or the prompt): a cap, not a policy.
const MAX_PASSWORD_LINE: u64 = 4096;

/// The first line of `input`, without its line end.
fn first_line(input: impl std::io::Read) -> Result<String, BoxError> {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(input.take(MAX_PASSWORD_LINE)).read_line(&mut line)?;
    let line = line.trim_end_matches(['\n', '\r']).to_string();
    if line.is_empty() {
        return Err("login: empty password".into());
    }
    Ok(line)
}

/// Turns the terminal's echo on or off with `stty` (on the terminal that is stdin): no
/// terminal-control dependency for one prompt.
fn echo(on: bool) -> Result<(), BoxError> {
    let ok = std::process::Command::new("stty")
        .arg(if on { "echo" } else { "-echo" })
        .stdin(std::process::Stdio::inherit())
        .status()?
        .success();
    if ok {
        Ok(())
    } else {
        Err("login: cannot turn the terminal's echo off (stty)".into())
    }
}

/// Asks on the terminal with echo off, turning it back on whatever happens.
fn prompt(user: &str) -> Result<String, BoxError> {
    use std::io::Write;
    eprint!("Password for {user}: ");
    std::io::stderr().flush()?;
    echo(false)?;
    let read = first_line(std::io::stdin().lock());
    let restored = echo(true);
    eprintln!();
    restored?;
    read
}

/// The password from the flag or environment, stdin, or a prompt on a terminal.
fn password(args: &LoginArgs) -> Result<String, BoxError> {
    use std::io::IsTerminal;
    if let Some(p) = &args.password {
        return Ok(p.clone());
    }
    if args.password_stdin {
        return first_line(std::io::stdin().lock());
    }
    if std::io::stdin().is_terminal() {
        return prompt(&args.user);
    }
    Err("login: no password: set TURNPIKE_PASSWORD, pass --password-stdin, or run on a terminal to be asked".into())
}

/// Asks for the token and prints it.
pub async fn run(args: LoginArgs) -> Result<(), BoxError> {
    let password = password(&args)?;
    let mut pairs = vec![
        ("grant_type", "password"),
        ("client_id", CLI_CLIENT_ID),
        ("username", args.user.as_str()),
        ("password", password.as_str()),
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
    let client = args.tls.client()?;
    let resp = crate::http::send(&client, req).await?;
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
