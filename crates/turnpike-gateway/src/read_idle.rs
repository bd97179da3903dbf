//! The read-idle guard of a response body (`timeouts.read_idle`): the body fails when
//! the upstream sends nothing for that long. The one limit a long response (Server-Sent
//! Events, a gRPC stream) may have: a total-time or size limit would cut a healthy stream,
//! while a silent back end is exactly what the guard catches. Only APIs that set it pay
//! for the timer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::error::{ErrorKind, GatewayError};

/// A body that fails with `upstream_response_timeout` after `every` without a frame.
pub(crate) struct ReadIdle<B> {
    body: B,
    every: Duration,
    /// Boxed so the body stays `Unpin`; re-armed at each frame.
    sleep: Pin<Box<Sleep>>,
}

impl<B> ReadIdle<B> {
    pub(crate) fn new(body: B, every: Duration) -> Self {
        ReadIdle {
            body,
            every,
            sleep: Box::pin(tokio::time::sleep(every)),
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<B> Body for ReadIdle<B>
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(r) => {
                this.sleep.as_mut().reset(Instant::now() + this.every);
                Poll::Ready(r.map(|r| r.map_err(Into::into)))
            }
            Poll::Pending => match this.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let e = GatewayError::with_source(
                        ErrorKind::UpstreamResponseTimeout,
                        format!("no bytes from the upstream for {:?}", this.every),
                    );
                    Poll::Ready(Some(Err(e.into())))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
