//! The client's address as the brute-force limiter keys it: the TCP peer, from the
//! `ConnectInfo` that `into_make_service_with_connect_info::<SocketAddr>()` records.
//! Forwarding headers are not read (anyone could send them); behind a reverse proxy every
//! client shares the proxy's address. Served without connect info (tests calling the
//! router directly), the address is unknown and all callers share one count.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use http::request::Parts;

/// The peer's IP address, if the server recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerIp(pub Option<IpAddr>);

impl PeerIp {
    /// From a request's extensions.
    pub fn of(extensions: &http::Extensions) -> Self {
        PeerIp(
            extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip().to_canonical()),
        )
    }
}

impl<S: Send + Sync> FromRequestParts<S> for PeerIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::of(&parts.extensions))
    }
}
