//! The control plane's command-line client, run by the `turnpike` binary: `turnpike apply`
//! sends a declarative file to the control plane, which applies it in one transaction
//! (`apply.rs`), `turnpike login` gets a REST-API bearer token (`login.rs`), `turnpike
//! cluster status` lists every gateway with its lag (`cluster.rs`), `turnpike export` writes
//! the configuration as that file (`export.rs`). It speaks
//! HTTP only: the REST names it shares with the server live in `turnpike_model::rest`,
//! so it links neither the server (`turnpike-admin`) nor its web framework or database.

pub mod apply;
pub mod cluster;
pub mod export;
pub mod http;
pub mod login;
