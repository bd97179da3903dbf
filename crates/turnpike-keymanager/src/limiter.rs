//! Brute-force protection for every password and secret the control plane checks: HTTP
//! Basic on the REST APIs, the login form, the token endpoint's password grant and client
//! secrets all go through one [`PasswordGuard`], so failures on one path count on all.
//!
//! Each failure counts under three keys: the (account, client address) pair, the address
//! alone, and the account alone. The pair and the address lock quickly (10 and 30
//! failures a minute by default); the account alone only at a much higher total (100),
//! and even then not for addresses that signed in to it successfully in the last day.
//! So an attacker on one address locks themselves out long before the account, and one
//! spread over many addresses cannot lock the owner out of the places they work from.
//! A lock that recurs doubles, up to `max_lockout`. While locked every attempt, even
//! with the right password, is refused with `Retry-After` before any argon2 runs (a
//! flood costs the server nothing) and does not count. The table is bounded: stale
//! entries are purged, and past the cap new keys go untracked.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use turnpike_model::clock::Clock;

/// The limits. Counts are failures within `window`.
#[derive(Debug, Clone)]
pub struct BruteForcePolicy {
    /// Failures of one account from one address before that pair is locked.
    pub per_account_address: u32,
    /// Failures from one address, whatever the accounts, before the address is locked.
    pub per_address: u32,
    /// Failures of one account from every address before the account is locked, except
    /// for addresses that signed in to it within `trusted_for`.
    pub per_account: u32,
    pub window: Duration,
    /// The first lock's length; each lock of a key that was locked before doubles it.
    pub lockout: Duration,
    pub max_lockout: Duration,
    /// How long a successful sign-in exempts its address from the account's lock.
    pub trusted_for: Duration,
    /// Most keys tracked at once.
    pub max_entries: usize,
}

impl Default for BruteForcePolicy {
    fn default() -> Self {
        Self {
            per_account_address: 10,
            per_address: 30,
            per_account: 100,
            window: Duration::from_secs(60),
            lockout: Duration::from_secs(60),
            max_lockout: Duration::from_secs(15 * 60),
            trusted_for: Duration::from_secs(24 * 3600),
            max_entries: 100_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Pair,
    Address,
    Account,
    /// A successful sign-in (the account's lock does not apply to that address).
    Trusted,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    kind: Kind,
    account: Box<str>,
    ip: Option<IpAddr>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    window_start: u64,
    failures: u32,
    locked_until: u64,
    /// Locks in a row (the next one lasts `lockout << strikes`).
    strikes: u32,
}

/// The one failure table of a control plane; cheap to share (`Arc`).
pub struct PasswordGuard {
    policy: BruteForcePolicy,
    clock: Arc<dyn Clock>,
    entries: Mutex<HashMap<Key, Entry>>,
}

impl std::fmt::Debug for PasswordGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordGuard")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// The limiter's name for a control-plane user (REST Basic, login form, password grant).
pub fn user_account(username: &str) -> String {
    format!("user:{username}")
}

fn keys(account: &str, ip: Option<IpAddr>) -> [Key; 3] {
    let k = |kind, account: &str, ip| Key {
        kind,
        account: account.into(),
        ip,
    };
    [
        k(Kind::Pair, account, ip),
        k(Kind::Address, "", ip),
        k(Kind::Account, account, None),
    ]
}

impl PasswordGuard {
    pub fn new(policy: BruteForcePolicy, clock: Arc<dyn Clock>) -> Self {
        Self {
            policy,
            clock,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn policy(&self) -> &BruteForcePolicy {
        &self.policy
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn trusted(
        &self,
        map: &HashMap<Key, Entry>,
        account: &str,
        ip: Option<IpAddr>,
        now: u64,
    ) -> bool {
        let key = Key {
            kind: Kind::Trusted,
            account: account.into(),
            ip,
        };
        ip.is_some()
            && map
                .get(&key)
                .is_some_and(|e| e.window_start + self.policy.trusted_for.as_secs() > now)
    }

    /// `Err(retry_after_secs)` while `account` may not be tried from `ip`. Call it before
    /// any hashing.
    pub fn check(&self, account: &str, ip: Option<IpAddr>) -> Result<(), u64> {
        let now = self.clock.now_secs();
        let map = self.lock();
        let mut wait = 0;
        for key in keys(account, ip) {
            if let Some(e) = map.get(&key).filter(|e| e.locked_until > now) {
                if key.kind == Kind::Account && self.trusted(&map, account, ip, now) {
                    continue;
                }
                wait = wait.max(e.locked_until - now);
            }
        }
        if wait > 0 {
            return Err(wait);
        }
        Ok(())
    }

    /// Counts a failed check; `Some(retry_after)` if it locked `account` for `ip`.
    pub fn failure(&self, account: &str, ip: Option<IpAddr>) -> Option<u64> {
        let now = self.clock.now_secs();
        let mut map = self.lock();
        let trusted = self.trusted(&map, account, ip, now);
        let mut locked = None;
        for key in keys(account, ip) {
            let kind = key.kind;
            let Some(until) = self.count(&mut map, key, now) else {
                continue;
            };
            if !(kind == Kind::Account && trusted) {
                locked = Some(locked.unwrap_or(0).max(until - now));
            }
        }
        locked
    }

    /// Forgets the pair's failures and exempts `ip` from the account's lock for a while
    /// (the address and account counts stay: signing in to one's own account must not
    /// reset a count an attacker runs up against others).
    pub fn success(&self, account: &str, ip: Option<IpAddr>) {
        let now = self.clock.now_secs();
        let mut map = self.lock();
        let [pair, ..] = keys(account, ip);
        map.remove(&pair);
        if ip.is_some() && self.make_room(&mut map, now) {
            let trusted = Key {
                kind: Kind::Trusted,
                account: account.into(),
                ip,
            };
            map.insert(
                trusted,
                Entry {
                    window_start: now,
                    failures: 0,
                    locked_until: 0,
                    strikes: 0,
                },
            );
        }
    }

    fn threshold(&self, kind: Kind) -> u32 {
        match kind {
            Kind::Pair => self.policy.per_account_address,
            Kind::Address => self.policy.per_address,
            Kind::Account | Kind::Trusted => self.policy.per_account,
        }
        .max(1)
    }

    fn stale(&self, key: &Key, e: &Entry, now: u64) -> bool {
        match key.kind {
            Kind::Trusted => e.window_start + self.policy.trusted_for.as_secs() <= now,
            _ => {
                e.window_start + self.policy.window.as_secs() <= now
                    && e.locked_until + self.policy.max_lockout.as_secs() <= now
            }
        }
    }

    /// Whether a new key fits (purging stale ones when the table is full).
    fn make_room(&self, map: &mut HashMap<Key, Entry>, now: u64) -> bool {
        if map.len() < self.policy.max_entries {
            return true;
        }
        map.retain(|k, e| !self.stale(k, e, now));
        map.len() < self.policy.max_entries
    }

    /// Adds one failure under `key`; `Some(locked_until)` when this one locked it.
    fn count(&self, map: &mut HashMap<Key, Entry>, key: Key, now: u64) -> Option<u64> {
        let threshold = self.threshold(key.kind);
        if !map.contains_key(&key) && !self.make_room(map, now) {
            return None;
        }
        let stale = map.get(&key).is_some_and(|e| self.stale(&key, e, now));
        let e = map.entry(key).or_insert(Entry {
            window_start: now,
            failures: 0,
            locked_until: 0,
            strikes: 0,
        });
        if stale {
            e.strikes = 0;
        }
        if now >= e.window_start + self.policy.window.as_secs() {
            e.window_start = now;
            e.failures = 0;
        }
        e.failures += 1;
        if e.failures < threshold {
            return None;
        }
        let secs = self.policy.lockout.as_secs().max(1);
        let lock = secs
            .saturating_mul(1u64 << e.strikes.min(20))
            .min(self.policy.max_lockout.as_secs().max(secs));
        e.locked_until = now + lock;
        e.window_start = now;
        e.failures = 0;
        e.strikes = e.strikes.saturating_add(1);
        Some(e.locked_until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::clock::ManualClock;

    fn guard(policy: BruteForcePolicy) -> (PasswordGuard, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::at_secs(1_000));
        (PasswordGuard::new(policy, clock.clone()), clock)
    }

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([10, 0, 0, last]))
    }

    fn small() -> BruteForcePolicy {
        BruteForcePolicy {
            per_account_address: 3,
            per_address: 5,
            per_account: 8,
            ..BruteForcePolicy::default()
        }
    }

    #[test]
    fn the_pair_locks_first_and_other_addresses_still_get_in() {
        let (g, clock) = guard(small());
        assert!(g.failure("user:a", ip(1)).is_none());
        assert!(g.failure("user:a", ip(1)).is_none());
        assert_eq!(g.failure("user:a", ip(1)), Some(60));
        clock.advance(std::time::Duration::from_secs(8));
        assert_eq!(g.check("user:a", ip(1)), Err(52));
        assert!(g.check("user:a", ip(2)).is_ok());
        assert!(g.check("user:b", ip(1)).is_ok());
        clock.advance(std::time::Duration::from_secs(53));
        assert!(g.check("user:a", ip(1)).is_ok());
    }

    #[test]
    fn one_address_spraying_accounts_is_locked_for_all_of_them() {
        let (g, _) = guard(small());
        for n in 0..4 {
            assert!(g.failure(&format!("user:{n}"), ip(1)).is_none());
        }
        assert_eq!(g.failure("user:4", ip(1)), Some(60));
        assert_eq!(g.check("user:other", ip(1)), Err(60));
        assert!(g.check("user:other", ip(2)).is_ok());
    }

    #[test]
    fn the_account_lock_spares_addresses_that_signed_in_before() {
        let (g, _) = guard(small());
        g.success("user:a", ip(200));
        for n in 0..8u8 {
            g.failure("user:a", ip(n));
        }
        assert_eq!(g.check("user:a", ip(100)), Err(60));
        assert!(g.check("user:a", ip(200)).is_ok());
    }

    #[test]
    fn repeated_locks_double_up_to_the_cap() {
        let (g, clock) = guard(small());
        let mut locks = Vec::new();
        for _ in 0..6 {
            let lock = (0..3).find_map(|_| g.failure("user:a", ip(1)));
            locks.push(lock.unwrap_or(0));
            clock.advance(std::time::Duration::from_secs(lock.unwrap_or(0)));
        }
        assert_eq!(locks, [60, 120, 240, 480, 900, 900]);
    }

    #[test]
    fn failures_outside_the_window_do_not_add_up() {
        let (g, clock) = guard(small());
        assert!(g.failure("user:a", ip(1)).is_none());
        assert!(g.failure("user:a", ip(1)).is_none());
        clock.advance(std::time::Duration::from_secs(61));
        assert!(g.failure("user:a", ip(1)).is_none());
        assert!(g.check("user:a", ip(1)).is_ok());
    }

    #[test]
    fn success_resets_the_pair_but_not_the_address() {
        let (g, _) = guard(small());
        g.failure("user:a", ip(1));
        g.failure("user:a", ip(1));
        g.success("user:a", ip(1));
        assert!(g.failure("user:a", ip(1)).is_none());
        g.failure("user:z", ip(1));
        assert_eq!(g.failure("user:z", ip(1)), Some(60));
    }

    #[test]
    fn the_table_is_capped() {
        let (g, _) = guard(BruteForcePolicy {
            max_entries: 10,
            ..small()
        });
        for n in 0..100u8 {
            g.failure(&format!("user:{n}"), ip(n));
        }
        assert!(g.lock().len() <= 10);
    }
}
