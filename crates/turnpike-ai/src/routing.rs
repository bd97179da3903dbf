//! Model routing (docs/ai-gateway.md "Routing and fallback"): a model name's targets
//! (provider and provider's model) shared by weight, the order a call tries them in,
//! and each provider's health (consecutive failures, suspension) that leaves a failing
//! provider out for a while. Lock-free on the request path: a route with one target
//! reads no counter; several take one atomic increment into a smooth weighted round
//! robin cycle computed once per snapshot; a provider's health is three atomics, kept
//! across snapshot swaps by a registry in the runtime (keyed by API and provider).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use turnpike_model::clock::Clock;

/// Most targets one model may name.
pub const MAX_TARGETS: usize = 16;
/// Most tries one request may make, whatever `max_attempts` says.
pub const MAX_ATTEMPTS: u32 = 10;
/// Most further tries of the same target (`fallback.retries`).
pub const MAX_RETRIES: u32 = 3;

/// One target of a model: a provider (index) and the provider's model.
pub(crate) struct Target {
    pub(crate) provider: usize,
    pub(crate) model: Arc<str>,
}

/// Where a model name goes: its targets, and the weighted cycle that picks the first.
pub(crate) struct Route {
    pub(crate) targets: Box<[Target]>,
    /// Target indexes in smooth weighted round robin order, one whole cycle (empty for
    /// one target: nothing to count).
    schedule: Box<[u8]>,
    turn: AtomicUsize,
}

impl Route {
    pub(crate) fn new(targets: Vec<Target>, weights: &[u32]) -> Route {
        let schedule = if targets.len() > 1 {
            smooth_cycle(weights)
        } else {
            Vec::new()
        };
        Route {
            targets: targets.into_boxed_slice(),
            schedule: schedule.into_boxed_slice(),
            turn: AtomicUsize::new(0),
        }
    }

    /// The target a call tries first.
    pub(crate) fn first(&self) -> usize {
        if self.schedule.is_empty() {
            return 0;
        }
        let turn = self.turn.fetch_add(1, Relaxed);
        usize::from(self.schedule[turn % self.schedule.len()])
    }

    /// The `k`-th target a call that started at `first` tries: `first`, then the others
    /// in the order written.
    pub(crate) fn nth(&self, first: usize, k: usize) -> Option<usize> {
        match k {
            0 => Some(first),
            _ => {
                let i = if k - 1 < first { k - 1 } else { k };
                (i < self.targets.len()).then_some(i)
            }
        }
    }
}

/// One cycle of nginx's smooth weighted round robin over `weights` (divided by their
/// common divisor first, so `3, 1` is a cycle of 4): spreads each target's turns
/// through the cycle instead of bunching them. Weight 0 (a standby) never comes first;
/// when every weight is 0 the first target does.
fn smooth_cycle(weights: &[u32]) -> Vec<u8> {
    let g = weights.iter().fold(0, |g, &w| gcd(g, w));
    if g == 0 {
        return vec![0];
    }
    let w: Vec<i64> = weights.iter().map(|&x| i64::from(x / g)).collect();
    let total: i64 = w.iter().sum();
    let mut current = vec![0i64; w.len()];
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for _ in 0..total {
        for (c, x) in current.iter_mut().zip(&w) {
            *c += x;
        }
        let best = (0..current.len()).max_by_key(|&i| (current[i], -(i as i64)));
        let best = best.unwrap_or(0);
        current[best] -= total;
        out.push(u8::try_from(best).unwrap_or(0));
    }
    out
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The API's `fallback:` section, compiled.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fallback {
    pub(crate) retries: u32,
    /// None: every target once, plus its retries.
    pub(crate) max_attempts: Option<u32>,
    pub(crate) suspend_after: u32,
    pub(crate) suspend_for: Duration,
}

impl Default for Fallback {
    fn default() -> Self {
        Fallback {
            retries: 0,
            max_attempts: None,
            suspend_after: 3,
            suspend_for: Duration::from_secs(30),
        }
    }
}

impl Fallback {
    /// All tries a call of a route with `targets` targets may make.
    pub(crate) fn attempts(&self, targets: usize) -> u32 {
        let each = u32::try_from(targets).unwrap_or(u32::MAX);
        let all = each.saturating_mul(self.retries + 1);
        self.max_attempts.unwrap_or(all).min(MAX_ATTEMPTS)
    }
}

/// Whether a provider's answer with this status is a failure a call falls back on
/// (429 and every 5xx; refused connections, timeouts and broken connections are too,
/// as the gateway sees them).
pub fn falls_back_on(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// One provider's health as this gateway sees it: failures in a row, and until when it
/// is left out. A failure once suspended (the suspension over, the count not reset)
/// suspends it again at once: the first call after a suspension is its probe.
#[derive(Debug, Default)]
pub struct ProviderHealth {
    failures: AtomicU32,
    until_ms: AtomicU64,
    suspensions: AtomicU64,
}

impl ProviderHealth {
    /// Whether calls may go to the provider now.
    pub fn admits(&self, now_ms: u64) -> bool {
        self.until_ms.load(Relaxed) <= now_ms
    }

    /// Whether the provider is suspended now.
    pub fn suspended(&self, now_ms: u64) -> bool {
        !self.admits(now_ms)
    }

    pub fn consecutive_failures(&self) -> u32 {
        self.failures.load(Relaxed)
    }

    /// Times the provider was suspended since the gateway started.
    pub fn suspensions(&self) -> u64 {
        self.suspensions.load(Relaxed)
    }

    pub(crate) fn failed(&self, f: &Fallback, now_ms: u64) {
        let n = self.failures.fetch_add(1, Relaxed).saturating_add(1);
        if f.suspend_after == 0 || n < f.suspend_after || !self.admits(now_ms) {
            return;
        }
        let until = now_ms.saturating_add(u64::try_from(f.suspend_for.as_millis()).unwrap_or(0));
        self.until_ms.store(until, Relaxed);
        self.suspensions.fetch_add(1, Relaxed);
    }

    pub(crate) fn succeeded(&self) {
        // A load first: a healthy provider's calls write nothing shared.
        if self.failures.load(Relaxed) != 0 {
            self.failures.store(0, Relaxed);
        }
    }
}

/// Each provider's health, by API and provider name, handed to every snapshot that
/// names them (a swap keeps a suspension); dropped with the last snapshot naming them.
#[derive(Default)]
pub(crate) struct HealthRegistry {
    map: Mutex<HashMap<(String, String), Weak<ProviderHealth>>>,
}

impl HealthRegistry {
    pub(crate) fn health(&self, api: &str, provider: &str) -> Arc<ProviderHealth> {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|_, w| w.strong_count() > 0);
        let key = (api.to_owned(), provider.to_owned());
        if let Some(h) = map.get(&key).and_then(Weak::upgrade) {
            return h;
        }
        let h = Arc::new(ProviderHealth::default());
        map.insert(key, Arc::downgrade(&h));
        h
    }
}

/// Milliseconds since the epoch from the runtime's clock.
pub(crate) fn now_ms(clock: &dyn Clock) -> u64 {
    clock.now().as_nanos() / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(weights: &[u32]) -> Route {
        let targets = (0..weights.len())
            .map(|provider| Target {
                provider,
                model: "m".into(),
            })
            .collect();
        Route::new(targets, weights)
    }

    #[test]
    fn weights_share_the_calls_smoothly() {
        assert_eq!(smooth_cycle(&[3, 1]), vec![0, 0, 1, 0]);
        assert_eq!(smooth_cycle(&[50, 50]), vec![0, 1]);
        assert_eq!(smooth_cycle(&[1, 0]), vec![0]);
        assert_eq!(smooth_cycle(&[0, 0]), vec![0]);
        let r = route(&[3, 1]);
        let picks: Vec<usize> = (0..8).map(|_| r.first()).collect();
        assert_eq!(picks.iter().filter(|&&p| p == 0).count(), 6);
    }

    #[test]
    fn a_call_tries_its_first_then_the_others_in_order() {
        let r = route(&[1, 1, 1]);
        let order: Vec<usize> = (0..4).map_while(|k| r.nth(1, k)).collect();
        assert_eq!(order, vec![1, 0, 2]);
        let order: Vec<usize> = (0..4).map_while(|k| r.nth(0, k)).collect();
        assert_eq!(order, vec![0, 1, 2]);
    }

    #[test]
    fn failures_in_a_row_suspend_and_the_first_failure_after_resuspends() {
        let f = Fallback {
            suspend_after: 2,
            suspend_for: Duration::from_millis(100),
            ..Fallback::default()
        };
        let h = ProviderHealth::default();
        h.failed(&f, 1000);
        assert!(h.admits(1000));
        h.failed(&f, 1000);
        assert!(h.suspended(1050) && h.admits(1100));
        assert_eq!(h.suspensions(), 1);
        h.failed(&f, 1100);
        assert!(h.suspended(1150), "the probe failed: suspended again");
        h.succeeded();
        h.failed(&f, 1300);
        assert!(h.admits(1300), "a success reset the count");
    }

    #[test]
    fn attempts_are_capped() {
        let f = Fallback {
            retries: 1,
            ..Fallback::default()
        };
        assert_eq!(f.attempts(2), 4);
        assert_eq!(f.attempts(16), MAX_ATTEMPTS);
    }
}
