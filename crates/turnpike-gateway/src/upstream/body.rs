//! The upstream's response body from hyper's client, and the pooled HTTP/1.1 connection
//! it returns to its pool once the response ends.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::client::conn::http1;

use crate::client_body::ClientBody;
use crate::upstream::pool::EndpointPool;

/// An HTTP/1.1 upstream connection to return to its pool once the response ends.
pub(crate) struct Pooled {
    pub sender: http1::SendRequest<ClientBody>,
    pub pool: Arc<EndpointPool>,
}

/// The upstream's response body from hyper's client.
pub(crate) struct UpstreamBody {
    pub(crate) inner: Incoming,
    pub(crate) pooled: Option<Pooled>,
}

impl UpstreamBody {
    pub(crate) fn release(&mut self) {
        if let Some(p) = self.pooled.take() {
            p.pool.put_back(p.sender);
        }
    }
}
