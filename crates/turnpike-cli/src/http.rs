//! The CLI's HTTP client: `http://` and `https://` control planes alike. An HTTPS
//! control plane's certificate is always verified: against `--ca` (its self-signed
//! `tls/cert.pem`, or a private CA) or else the web PKI roots; there is no switch to
//! skip it. `--client-cert`/`--client-key` present a certificate (mTLS).

use std::path::PathBuf;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Every request the CLI sends has a (possibly empty) whole body.
pub type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// How the CLI trusts an `https://` control plane.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// PEM CA certificate(s) an https:// control plane's certificate must chain to (its
    /// self-signed tls/cert.pem, or a private CA); default: the web PKI roots.
    #[arg(long = "ca", env = "TURNPIKE_CA_FILE")]
    pub ca: Option<PathBuf>,
    /// Client certificate (PEM) to present when the control plane asks for one (mTLS).
    #[arg(long, env = "TURNPIKE_CLIENT_CERT", requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// Private key of --client-cert.
    #[arg(long, env = "TURNPIKE_CLIENT_KEY", requires = "client_cert")]
    pub client_key: Option<PathBuf>,
}

impl TlsArgs {
    /// A client for `http://` and verified `https://` URLs.
    pub fn client(&self) -> Result<HttpClient, BoxError> {
        let tls = if self.ca.is_none() && self.client_cert.is_none() {
            None
        } else {
            let files = turnpike_tls::ClientTls {
                ca: self.ca.clone(),
                cert: self.client_cert.clone(),
                key: self.client_key.clone(),
            };
            Some(
                turnpike_tls::client_config(&files)
                    .map_err(|e| format!("--ca/--client-cert: {e}"))?,
            )
        };
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(turnpike_tls::for_hyper(tls)?)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Client::builder(TokioExecutor::new()).build(connector))
    }
}

/// Sends `req`; a failure names the URL and every cause (hyper's own message is only
/// "client error (Connect)": the certificate problem is in its sources).
pub async fn send(
    client: &HttpClient,
    req: http::Request<Full<Bytes>>,
) -> Result<http::Response<hyper::body::Incoming>, BoxError> {
    let url = req.uri().to_string();
    client.request(req).await.map_err(|e| {
        let mut said = format!("{url}: {e}");
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            said.push_str(&format!(": {c}"));
            cause = c.source();
        }
        said.into()
    })
}
