//! Serving one client HTTP/1.1 connection to its end: [`serve_h1`] drives it (its socket
//! in `io::JsonErrorsIo`, so hyper's own error answers read like the rest of the
//! gateway's) and, when hyper gives up on a request head that did not arrive in time
//! (`header_read_timeout`), answers `408 request_timeout` if part of a head was received
//! (an idle keep-alive connection is just closed, as HTTP allows); [`ended`] runs what a
//! finished connection leaves: the 408, or the relay job of an upgrade. Parked
//! connections (`park.rs`) end through the same [`ended`]. The drain signal each
//! connection watches is in `drain.rs`.

use std::pin::Pin;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::HttpService;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use crate::drain::{until_done, Watcher};
use crate::error::ErrorKind;
use crate::io::{error_answer, ClientIo, JsonErrorsIo, UpgradeSlot};
use crate::self_wake::ConnWake;

/// Serves one HTTP/1.1 connection until it ends or drains; a request head cut short by
/// the header-read timeout gets `408 request_timeout` before the close.
pub(crate) async fn serve_h1<T, S, B>(
    builder: &http1::Builder,
    io: T,
    service: S,
    mut drain: Watcher,
    upgrade: &UpgradeSlot,
    wake: &Arc<ConnWake>,
) -> hyper::Result<()>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    S: HttpService<Incoming, ResBody = B> + Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut conn = builder.serve_connection(TokioIo::new(JsonErrorsIo::new(io)), service);
    let result = until_done(Pin::new(&mut conn), &mut drain, wake).await;
    ended(result, conn, upgrade, &drain).await
}

/// A connection hyper finished: a request head cut short by the header-read timeout
/// gets `408 request_timeout` before the close; a connection hyper let go after a `101`
/// (the service left a relay job in `upgrade`) is taken apart, and the job runs on its
/// socket (with the bytes hyper read past the head) until the relay ends or `drain`
/// says so.
pub(crate) async fn ended<T, S, B>(
    result: hyper::Result<()>,
    conn: http1::Connection<TokioIo<JsonErrorsIo<T>>, S>,
    upgrade: &UpgradeSlot,
    drain: &Watcher,
) -> hyper::Result<()>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    S: HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match result {
        Ok(()) => {
            if let Some(job) = upgrade.take() {
                let _counted = upgrade.mark();
                let parts = conn.into_parts();
                let (io, _) = parts.io.into_inner().into_parts();
                let client = ClientIo::new(Box::new(io), parts.read_buf);
                job(client, drain.clone()).await;
            }
            Ok(())
        }
        Err(e) if e.is_timeout() => {
            let parts = conn.into_parts();
            if !parts.read_buf.is_empty() {
                answer_timeout(parts.io.into_inner()).await;
            }
            Err(e)
        }
        other => other,
    }
}

/// Writes `408 request_timeout` (a head that did not arrive in time) and closes.
pub(crate) async fn answer_timeout<T: AsyncWrite + Unpin>(mut io: T) {
    let answer = error_answer(ErrorKind::RequestTimeout);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
        io.write_all(&answer).await?;
        io.shutdown().await
    })
    .await;
}
