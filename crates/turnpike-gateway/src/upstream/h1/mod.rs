//! The plain-HTTP/1.1 upstream exchange, run inside the request's own task. hyper's
//! client connection runs as a separate task fed through channels (request mpsc,
//! response oneshot, body channel), which costs several task wake-ups and moves per
//! request; here the request future writes the head (and body) straight to the pooled
//! socket, parses the response head with `httparse`, and the response body reads the
//! same socket from the client connection's task, handing it back to the pool at the end.
//! HTTPS upstreams (TLS, HTTP/2 by ALPN) keep using hyper's client (`pool.rs`, `forward.rs`).

pub(crate) mod body;
pub(crate) mod conn;
pub(crate) mod exchange;
