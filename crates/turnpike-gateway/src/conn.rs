//! Connection state: what every connection of a gateway shares ([`Shared`]) and what one
//! connection computed at accept ([`ConnCtx`]), plus the pool sweeper that lives as long
//! as the shared state. The request path (`proxy.rs`), the upstream client and upgrades
//! read these; this file names none of them back.

use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use arc_swap::ArcSwap;
use http::HeaderValue;
use turnpike_config::Snapshot;

use crate::access_log::AccessLog;
use crate::metrics::GatewayMetrics;
use crate::upstream::pool::{live_keys, Upstreams, SWEEP_EVERY};

/// State shared by every connection of a gateway.
pub(crate) struct Shared {
    /// Draining: each HTTP/1.x answer then closes its connection.
    pub health: Arc<crate::health::Health>,
    pub snapshots: Arc<ArcSwap<Snapshot>>,
    pub upstreams: Upstreams,
    pub access_log: Option<Arc<AccessLog>>,
    pub metrics: Option<Arc<GatewayMetrics>>,
    /// Process-wide `on_complete` listeners (`GatewayBuilder::observer`).
    pub observers: Box<[Arc<dyn turnpike_policy::Observer>]>,
    /// Longest wait for the next bytes of a request body (`--body-read-timeout`).
    pub body_read_timeout: std::time::Duration,
    /// What buffered request bodies hold at once (`--request-buffer-mib`).
    pub buffer_budget: Arc<crate::client_body::BufferBudget>,
    /// `--trusted-proxies`: read once per connection, at accept.
    pub trusted_proxies: crate::headers::TrustedProxies,
    /// Requests are traced (`GatewayBuilder::trace`).
    pub trace: bool,
}

/// Per-connection facts, computed once at accept.
pub(crate) struct ConnCtx {
    pub shared: Arc<Shared>,
    pub client: SocketAddr,
    pub client_ip: HeaderValue,
    /// The peer is in `--trusted-proxies`: its forwarding headers are kept.
    pub trusted_proxy: bool,
    pub https: bool,
    /// A WebSocket upgrade on its way (`upgrade/`); empty otherwise.
    pub(crate) upgrade: crate::io::UpgradeSlot,
    /// Its wake state (`self_wake.rs`): the poller's, and its request bodies'.
    pub(crate) wake: Arc<crate::self_wake::ConnWake>,
}

/// Runs [`Upstreams::sweep`] against the current snapshot every [`SWEEP_EVERY`] until the
/// gateway's shared state is gone.
pub(crate) fn spawn_sweeper(shared: Weak<Shared>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let live = live_keys(&shared.snapshots.load());
            shared.upstreams.sweep(&live);
        }
    });
}
