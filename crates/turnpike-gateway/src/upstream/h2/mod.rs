//! HTTP/2 to upstreams, on hyper's client: the handshake shared by `https://` endpoints
//! that chose h2 by ALPN and plain ones declared `upstream_protocol: h2c` (prior
//! knowledge, RFC 9113 section 3.3), and the checkout of an h2c endpoint's one
//! multiplexed connection. Requests then go through `forward::send` like any hyper-client
//! request; trailers (gRPC's `grpc-status`) pass through as body frames.

mod checkout;
pub(crate) mod conn;
