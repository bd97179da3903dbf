//! The control plane's command-line client, run by the `turnpike` binary: `turnpike apply`
//! reconciles a declarative file against a control plane through its REST API
//! (`apply.rs`), `turnpike login` gets a REST-API bearer token (`login.rs`), `turnpike
//! cluster status` lists every gateway with its lag (`cluster.rs`). It speaks
//! HTTP only: the REST names it shares with the server live in `turnpike_model::rest`,
//! so it links neither the server (`turnpike-admin`) nor its web framework or database.

pub mod apply;
mod apply_check;
pub mod cluster;
pub mod login;

use base64::Engine;

/// The `Authorization` value of a REST call: the bearer token, else HTTP Basic.
pub(crate) fn auth_header(
    token: Option<&str>,
    password: Option<&str>,
    user: &str,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    match (token, password) {
        (Some(t), _) => Ok(format!("Bearer {t}")),
        (None, Some(p)) => Ok(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{p}"))
        )),
        (None, None) => Err("set TURNPIKE_PASSWORD (or --password) or TURNPIKE_TOKEN".into()),
    }
}
