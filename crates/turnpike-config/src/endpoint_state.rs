//! One endpoint's health as this gateway sees it: the circuit (active, suspended,
//! probing: WSO2's suspension with its progression), the active health check's verdict,
//! and the requests in flight (least connections). Plain atomics, no lock: the request
//! path reads and reports in a few loads and stores. Long-lived: the registry hands the
//! same state to every snapshot naming the same API and endpoint URL, so a swap neither
//! forgets a suspension nor restarts a health check's count.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use turnpike_model::clock::{Clock, SystemClock};

use http::StatusCode;

/// Inclusive status ranges (`503` is 503..=503, `5xx` 500..=599).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Statuses(Vec<(u16, u16)>);

impl Statuses {
    pub fn new(ranges: Vec<(u16, u16)>) -> Self {
        Statuses(ranges)
    }

    pub fn push(&mut self, range: (u16, u16)) {
        self.0.push(range);
    }

    pub fn contains(&self, s: StatusCode) -> bool {
        let s = s.as_u16();
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&s))
    }
}

/// Which failures of an exchange count against an endpoint.
#[derive(Debug, Clone, Default)]
pub struct Counted {
    pub connect_failure: bool,
    pub timeout: bool,
    pub reset: bool,
    pub statuses: Statuses,
}

#[derive(Debug, Clone)]
pub struct Suspension {
    pub on: Counted,
    pub initial: Duration,
    pub factor: f64,
    pub max: Duration,
}

#[derive(Debug, Clone)]
pub struct Breaker {
    pub consecutive_failures: u32,
    pub failure_ratio: Option<f64>,
    pub window: u32,
}

/// The circuit's parameters: when it opens and for how long.
#[derive(Debug, Clone)]
pub struct Circuit {
    pub suspension: Suspension,
    pub breaker: Breaker,
}

const ACTIVE: u8 = 0;
const SUSPENDED: u8 = 1;
const PROBING: u8 = 2;

/// What `/metrics` and the gateway's status report show for an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointHealth {
    /// Taking traffic.
    Active,
    /// Left out after failures until its suspension ends (circuit open).
    Suspended,
    /// The suspension ended; one request is testing it (circuit half-open).
    Probing,
    /// Its active health check failed `unhealthy_threshold` times in a row.
    Unhealthy,
}

impl EndpointHealth {
    pub const ALL: [EndpointHealth; 4] = [
        EndpointHealth::Active,
        EndpointHealth::Suspended,
        EndpointHealth::Probing,
        EndpointHealth::Unhealthy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EndpointHealth::Active => "active",
            EndpointHealth::Suspended => "suspended",
            EndpointHealth::Probing => "probing",
            EndpointHealth::Unhealthy => "unhealthy",
        }
    }
}

/// Counters and the circuit of one endpoint of one API.
pub struct EndpointState {
    pub api_id: String,
    pub url: String,
    clock: Arc<dyn Clock>,
    mode: AtomicU8,
    /// Suspended: when it ends; probing: when a lost probe may be replaced (Unix ns).
    until: AtomicU64,
    /// The next suspension's length (ns): the initial one after a success.
    next_suspension: AtomicU64,
    consecutive_failures: AtomicU32,
    window_calls: AtomicU32,
    window_failures: AtomicU32,
    /// The health check's verdict, and its consecutive passes and failures.
    checked_down: AtomicBool,
    check_passes: AtomicU32,
    check_failures: AtomicU32,
    in_flight: AtomicU32,
    suspensions: AtomicU64,
}

impl std::fmt::Debug for EndpointState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointState")
            .field("api_id", &self.api_id)
            .field("url", &self.url)
            .field("health", &self.health())
            .finish_non_exhaustive()
    }
}

impl EndpointState {
    fn new(api_id: String, url: String, clock: Arc<dyn Clock>) -> Self {
        EndpointState {
            api_id,
            url,
            clock,
            mode: AtomicU8::new(ACTIVE),
            until: AtomicU64::new(0),
            next_suspension: AtomicU64::new(0),
            consecutive_failures: AtomicU32::new(0),
            window_calls: AtomicU32::new(0),
            window_failures: AtomicU32::new(0),
            checked_down: AtomicBool::new(false),
            check_passes: AtomicU32::new(0),
            check_failures: AtomicU32::new(0),
            in_flight: AtomicU32::new(0),
            suspensions: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        self.clock.now().as_nanos()
    }

    pub fn health(&self) -> EndpointHealth {
        if self.checked_down.load(Relaxed) {
            return EndpointHealth::Unhealthy;
        }
        match self.mode.load(Relaxed) {
            SUSPENDED => EndpointHealth::Suspended,
            PROBING => EndpointHealth::Probing,
            _ => EndpointHealth::Active,
        }
    }

    /// How many times this endpoint was suspended since the gateway started.
    pub fn suspensions(&self) -> u64 {
        self.suspensions.load(Relaxed)
    }

    /// When the current suspension ends (Unix milliseconds); `None` unless suspended.
    pub fn suspended_until_ms(&self) -> Option<u64> {
        (self.mode.load(Relaxed) == SUSPENDED).then(|| self.until.load(Relaxed) / 1_000_000)
    }

    /// Counted failures since the last success or suspension.
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures.load(Relaxed)
    }

    /// Requests from this gateway waiting on this endpoint now.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Relaxed)
    }

    /// Whether a request may go here now. A suspension that has ended lets exactly one
    /// request through as the probe (half-open); a probe lost without a report (its
    /// client went away) is replaced after `probe_for`.
    pub fn admits(&self, probe_for: Duration) -> bool {
        if self.checked_down.load(Relaxed) {
            return false;
        }
        let mode = self.mode.load(Relaxed);
        if mode == ACTIVE {
            return true;
        }
        let now = self.now();
        let until = self.until.load(Relaxed);
        if now < until {
            return false;
        }
        let next = now.saturating_add(probe_for.as_nanos() as u64);
        let won = self.until.compare_exchange(until, next, Relaxed, Relaxed);
        if won.is_ok() {
            self.mode.store(PROBING, Relaxed);
        }
        won.is_ok()
    }

    /// A call that did not fail in a counted way: closes the circuit, and the next
    /// suspension starts again from the initial duration.
    pub fn succeeded(&self, r: &Circuit) {
        self.consecutive_failures.store(0, Relaxed);
        self.tally(r, false);
        if self.mode.load(Relaxed) != ACTIVE {
            self.mode.store(ACTIVE, Relaxed);
            self.next_suspension.store(0, Relaxed);
        }
    }

    /// A counted failure (`suspension.on`): suspends when the circuit breaker trips, or
    /// at once when it was the probe.
    pub fn failed(&self, r: &Circuit) {
        let consecutive = self.consecutive_failures.fetch_add(1, Relaxed) + 1;
        let ratio_tripped = self.tally(r, true);
        let mode = self.mode.load(Relaxed);
        let trip = mode == PROBING
            || (mode == ACTIVE && (consecutive >= r.breaker.consecutive_failures || ratio_tripped));
        if trip {
            self.suspend(r);
        }
    }

    fn suspend(&self, r: &Circuit) {
        let s = &r.suspension;
        let mut d = self.next_suspension.load(Relaxed);
        if d == 0 {
            d = s.initial.as_nanos() as u64;
        }
        let max = s.max.as_nanos() as u64;
        let d = d.min(max);
        let next = ((d as f64) * s.factor).min(max as f64) as u64;
        self.next_suspension.store(next.max(d), Relaxed);
        self.until.store(self.now().saturating_add(d), Relaxed);
        self.mode.store(SUSPENDED, Relaxed);
        self.consecutive_failures.store(0, Relaxed);
        self.suspensions.fetch_add(1, Relaxed);
    }

    /// Counts a call into the ratio window; true when the window just filled with a
    /// failed share at or above the breaker's ratio.
    fn tally(&self, r: &Circuit, failed: bool) -> bool {
        let Some(ratio) = r.breaker.failure_ratio else {
            return false;
        };
        let failures = if failed {
            self.window_failures.fetch_add(1, Relaxed) + 1
        } else {
            self.window_failures.load(Relaxed)
        };
        let calls = self.window_calls.fetch_add(1, Relaxed) + 1;
        if calls < r.breaker.window {
            return false;
        }
        // A new window (racing reporters may land in either; the ratio is a guide).
        self.window_calls.store(0, Relaxed);
        self.window_failures.store(0, Relaxed);
        f64::from(failures) / f64::from(calls) >= ratio
    }

    /// One health check's result; true when it changed the verdict.
    pub fn checked(&self, passed: bool, healthy_after: u32, unhealthy_after: u32) -> bool {
        if passed {
            self.check_failures.store(0, Relaxed);
            let n = self.check_passes.fetch_add(1, Relaxed).saturating_add(1);
            if n >= healthy_after && self.checked_down.swap(false, Relaxed) {
                // Back by its check: no stale suspension keeps it out.
                self.mode.store(ACTIVE, Relaxed);
                self.next_suspension.store(0, Relaxed);
                return true;
            }
        } else {
            self.check_passes.store(0, Relaxed);
            let n = self.check_failures.fetch_add(1, Relaxed).saturating_add(1);
            if n >= unhealthy_after && !self.checked_down.swap(true, Relaxed) {
                return true;
            }
        }
        false
    }

    /// Counts a request in flight until the guard drops.
    pub fn start(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Relaxed);
        InFlight(self.clone())
    }
}

/// A request in flight to an endpoint (least connections).
#[derive(Debug)]
pub struct InFlight(Arc<EndpointState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

/// Every endpoint state of a gateway, by API id and endpoint URL. Snapshots hold the
/// states strongly; the registry only weakly, so an endpoint no snapshot names is gone
/// with the last snapshot (and its health check stops).
pub struct EndpointRegistry {
    clock: Arc<dyn Clock>,
    /// The states, and the size past which dead entries are swept (twice the live
    /// count at the last sweep, so compiling 10,000 APIs sweeps a few times, not 10,000).
    states: Mutex<(HashMap<(String, String), Weak<EndpointState>>, usize)>,
}

impl Default for EndpointRegistry {
    fn default() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }
}

impl EndpointRegistry {
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        EndpointRegistry {
            clock,
            states: Mutex::new((HashMap::new(), 64)),
        }
    }

    /// The state of `url` in `api_id`: the live one, or a fresh one.
    pub fn state(&self, api_id: &str, url: &str) -> Arc<EndpointState> {
        let mut guard = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let (map, sweep_at) = &mut *guard;
        let key = (api_id.to_owned(), url.to_owned());
        if let Some(live) = map.get(&key).and_then(Weak::upgrade) {
            return live;
        }
        // Compiling is when endpoints come and go: drop the dead entries here.
        if map.len() >= *sweep_at {
            map.retain(|_, w| w.strong_count() > 0);
            *sweep_at = (map.len() * 2).max(64);
        }
        let fresh = Arc::new(EndpointState::new(
            key.0.clone(),
            key.1.clone(),
            self.clock.clone(),
        ));
        map.insert(key, Arc::downgrade(&fresh));
        fresh
    }
}

#[cfg(test)]
#[path = "endpoint_state_tests.rs"]
mod tests;
