//! The upstream client: endpoint pools (`pool.rs`, kept outside the snapshot), the
//! forwarder that picks an endpoint and sends through the in-task HTTP/1.1 client (`h1/`)
//! or hyper's (`forward.rs`; HTTP/2 and h2c: `h2/`), and the upstream response body of hyper's client
//! (`body.rs`). Nothing here names the client side's connection state beyond the
//! shared state the forwarder is handed.

pub(crate) mod ai;
pub(crate) mod body;
pub(crate) mod checks;
pub(crate) mod forward;
pub(crate) mod h1;
pub(crate) mod h2;
pub(crate) mod pool;
pub(crate) mod resilient;
