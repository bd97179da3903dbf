//! A listener's rustls config: its certificate (reloaded on change), ALPN, and optionally
//! client certificates required and verified against a CA file (mTLS).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;

use crate::files::read_certs;
use crate::reload::Reloading;
use crate::{TlsError, TlsSource};

/// What a listener's TLS is made of.
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub source: TlsSource,
    /// ALPN protocols offered, in preference order (e.g. `h2`, `http/1.1`).
    pub alpn: Vec<Vec<u8>>,
    /// When set, every client must present a certificate this CA (PEM, one or more)
    /// signed: mTLS. Read at start; rotate a CA by listing the old and the new one.
    pub client_ca: Option<PathBuf>,
}

/// A built config and a way to see its certificate's reloads.
pub struct Served {
    pub config: Arc<rustls::ServerConfig>,
    reloading: Arc<Reloading>,
}

impl Served {
    /// How many times the certificate was reloaded since start.
    pub fn reloads(&self) -> u64 {
        self.reloading.reloads()
    }
}

fn roots(ca: &Path) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for c in read_certs(ca)? {
        roots.add(c)?;
    }
    Ok(roots)
}

pub(crate) fn ca_roots(ca: &Path) -> Result<rustls::RootCertStore, TlsError> {
    roots(ca)
}

/// Builds the server config (generating the self-signed pair if needed).
pub fn server_config(tls: &ServerTls) -> Result<Served, TlsError> {
    let (cert, key) = tls.source.files()?;
    let reloading = Reloading::new(cert, key)?;
    let builder = rustls::ServerConfig::builder_with_provider(crate::provider())
        .with_safe_default_protocol_versions()?;
    let builder = match &tls.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots(ca)?),
                crate::provider(),
            )
            .build()
            .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut cfg = builder.with_cert_resolver(reloading.clone());
    cfg.alpn_protocols = tls.alpn.clone();
    Ok(Served {
        config: Arc::new(cfg),
        reloading,
    })
}
