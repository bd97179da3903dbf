//! The h2c endpoint's connection: one per endpoint, shared by every request (HTTP/2
//! multiplexes them), reopened when it closed.

use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::time::Instant;

use super::conn::handshake;
use crate::error::{ErrorKind, GatewayError};
use crate::upstream::pool::{Conn, EndpointPool};

impl EndpointPool {
    /// The endpoint's HTTP/2 connection over plain TCP, opened by the first request that
    /// finds none; requests arriving meanwhile wait for that one instead of each opening
    /// their own. Bounded by `connect_timeout` like any checkout.
    pub(crate) async fn checkout_h2c(
        &self,
        connect_timeout: Duration,
    ) -> Result<Conn, GatewayError> {
        if let Some(s) = self.shared_h2() {
            return Ok(Conn::H2(s));
        }
        let deadline = Instant::now() + connect_timeout;
        let timed_out = || {
            GatewayError::with_source(
                ErrorKind::UpstreamConnectTimeout,
                format!("connect to {} timed out", self.authority()),
            )
        };
        let _opening = tokio::time::timeout_at(deadline, self.h2_opening.lock())
            .await
            .map_err(|_| timed_out())?;
        if let Some(s) = self.shared_h2() {
            return Ok(Conn::H2(s));
        }
        let slot = loop {
            if let Some(slot) = self.slot(deadline).await? {
                break slot;
            }
        };
        let open = async { handshake(TokioIo::new(self.tcp().await?), slot).await };
        let sender = tokio::time::timeout_at(deadline, open)
            .await
            .map_err(|_| timed_out())??;
        self.share_h2(sender.clone());
        Ok(Conn::H2(sender))
    }
}
