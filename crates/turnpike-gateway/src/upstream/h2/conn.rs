//! One HTTP/2 client connection: the handshake, and the task that drives it (also
//! HTTP/1.1 connections of hyper's client).

use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::OwnedSemaphorePermit;

use crate::client_body::ClientBody;
use crate::error::{ErrorKind, GatewayError};

/// Opens HTTP/2 over `io` (TLS after ALPN h2, or plain TCP for h2c); the connection's
/// task holds `slot` (its place in the endpoint's connection cap) until it ends.
pub(crate) async fn handshake<T>(
    io: T,
    slot: OwnedSemaphorePermit,
) -> Result<http2::SendRequest<ClientBody>, GatewayError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, conn) = http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .handshake(io)
        .await
        .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
    drive(conn, slot);
    Ok(sender)
}

/// Runs a client connection (either protocol) in its own task, holding its slot.
pub(crate) fn drive<C>(conn: C, slot: OwnedSemaphorePermit)
where
    C: std::future::Future<Output = Result<(), hyper::Error>> + Send + 'static,
{
    tokio::spawn(async move {
        let _slot = slot;
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "upstream connection ended");
        }
    });
}
