//! A client's rustls config: the servers it trusts (a CA file, else the web PKI roots)
//! and, for mTLS, the certificate it presents (reloaded when its files change).

use std::path::PathBuf;
use std::sync::Arc;

use crate::reload::Reloading;
use crate::server::ca_roots;
use crate::TlsError;

/// What a client's TLS is made of.
#[derive(Debug, Clone, Default)]
pub struct ClientTls {
    /// PEM CA certificates to trust instead of the web PKI roots (a private CA, or a
    /// self-signed control plane's own certificate).
    pub ca: Option<PathBuf>,
    /// The client certificate and key for mTLS.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// Builds the client config (ALPN `http/1.1`).
pub fn client_config(tls: &ClientTls) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let roots = match &tls.ca {
        Some(ca) => ca_roots(ca)?,
        None => rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        },
    };
    let builder = rustls::ClientConfig::builder_with_provider(crate::provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    let mut cfg = match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            builder.with_client_cert_resolver(Reloading::new(cert.clone(), key.clone())?)
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err(TlsError::HalfPair),
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// `tls` (default: [`client_config`] of no CA, the web PKI roots) for a hyper-rustls
/// connector, which sets ALPN from the HTTP versions it enables and refuses a preset.
/// The control plane's clients (the follower, analytics shipping, the CLI) all build
/// theirs from it: the certificate is always verified.
pub fn for_hyper(tls: Option<Arc<rustls::ClientConfig>>) -> Result<rustls::ClientConfig, TlsError> {
    let tls = match tls {
        Some(t) => t,
        None => client_config(&ClientTls::default())?,
    };
    let mut tls = (*tls).clone();
    tls.alpn_protocols.clear();
    Ok(tls)
}
