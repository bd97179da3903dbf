//! TLS for every Turnpike listener and client, in one place: the gateway's HTTPS listener,
//! the control plane's HTTPS listener, and the follower's connection to the control plane.
//! Owns reading PEM files, the self-signed pair generated once into `<data-dir>/tls/`,
//! certificates that reload when their files change (rotation without a restart: the
//! files are looked at, at most once a second, by the next handshake), and client configs
//! that trust a CA file (or the web PKI roots) and present a client certificate (mTLS).
//! Plain rustls types out; no sockets, no HTTP, no other `turnpike-*` crate.

mod client;
mod files;
mod reload;
mod server;

pub use client::{client_config, for_hyper, ClientTls};
pub use files::{TlsError, TlsSource};
pub use server::{server_config, Served, ServerTls};

/// The crypto every config here uses (ring, as the rest of the workspace).
fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}
