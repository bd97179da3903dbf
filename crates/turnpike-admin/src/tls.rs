//! The control plane's HTTPS listener: TCP accepted here, each TLS handshake in its own
//! task under a timeout (a slow or silent client holds up no one else) and a cap on
//! handshakes in flight, finished streams handed to axum. The certificate, its reload on
//! change and optional client-certificate verification (mTLS) are `turnpike-tls`'s, the
//! same code the gateway's HTTPS listener runs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_rustls::server::TlsStream;

/// Handshakes in flight at once; more connections wait in the kernel's backlog.
const MAX_HANDSHAKES: usize = 1024;
/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Command-line TLS flags of `turnpike control-plane`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CpTlsArgs {
    /// PEM certificate chain: serve HTTPS with it (with --tls-key); reloaded when the
    /// files change, so a rotation needs no restart.
    #[arg(long = "tls-cert", env = "TURNPIKE_CP_TLS_CERT")]
    pub cert: Option<std::path::PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long = "tls-key", env = "TURNPIKE_CP_TLS_KEY")]
    pub key: Option<std::path::PathBuf>,
    /// Serve HTTPS with a self-signed certificate generated once into
    /// `<tls-dir>/tls/cert.pem` (gateways trust it with --control-plane-ca).
    #[arg(long = "tls-self-signed", env = "TURNPIKE_CP_TLS_SELF_SIGNED")]
    pub self_signed: bool,
    /// Where the self-signed pair is kept.
    #[arg(
        long = "tls-dir",
        env = "TURNPIKE_CP_TLS_DIR",
        default_value = "./data"
    )]
    pub dir: std::path::PathBuf,
    /// Require every client to present a certificate signed by this CA (PEM): mTLS for
    /// gateways (and any other client of this listener).
    #[arg(long = "tls-client-ca", env = "TURNPIKE_CP_TLS_CLIENT_CA")]
    pub client_ca: Option<std::path::PathBuf>,
}

impl CpTlsArgs {
    /// The listener's TLS, or `None` for plain HTTP.
    pub fn server_tls(&self) -> Result<Option<turnpike_tls::ServerTls>, turnpike_tls::TlsError> {
        if self.cert.is_none() && self.key.is_none() && !self.self_signed {
            if self.client_ca.is_some() {
                return Err(turnpike_tls::TlsError::Rustls(rustls::Error::General(
                    "--tls-client-ca needs HTTPS (--tls-cert/--tls-key or --tls-self-signed)"
                        .into(),
                )));
            }
            return Ok(None);
        }
        let source = turnpike_tls::TlsSource::from_flags(
            self.cert.as_deref(),
            self.key.as_deref(),
            &self.dir,
        )?;
        Ok(Some(turnpike_tls::ServerTls {
            source,
            alpn: vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            client_ca: self.client_ca.clone(),
        }))
    }
}

/// TLS connections ready for HTTP.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl TlsListener {
    pub fn new(listener: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let accept = tokio::spawn(accept_loop(listener, acceptor, tx));
        Ok(TlsListener {
            ready,
            local,
            accept,
        })
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    tx: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let permits = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let (tcp, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "control plane: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let (acceptor, tx) = (acceptor.clone(), tx.clone());
        tokio::spawn(async move {
            let shake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await;
            drop(permit);
            match shake {
                Ok(Ok(tls)) => {
                    let _ = tx.send((tls, peer)).await;
                }
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "control plane: TLS handshake failed")
                }
                Err(_) => tracing::debug!(%peer, "control plane: TLS handshake timed out"),
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept task ended (it never does while the listener lives).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
