//! The compiled throttler and its one hot function, `check`: for each level that applies
//! (resource and API advanced policies, subscription burst and quota or the
//! Unauthenticated tier, application tier) it takes from the level's counter; if one
//! refuses, what the others took is given back and the decision names the refusing
//! rule. Counters live in the shared `CounterStore`, so a new `Throttler` built on a
//! snapshot swap continues every count.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use turnpike_policy::{Charges, Decision, RuleId};

use crate::compile::{AdvancedC, AppTierC, CondC, NameMap, Rule, RuleKind, SubTierC};
use crate::counter;
use crate::facts::RequestFacts;
use crate::store::{CounterStore, KeyHash, SlotKind};
use crate::UnixNanos;

/// What one rule said.
#[derive(Clone, Copy)]
struct Step {
    rule: RuleId,
    allowed: bool,
    over: bool,
    remaining: u64,
    reset_ns: u64,
    retry_ns: u64,
}

/// What to give back if a later rule refuses.
#[derive(Clone, Copy)]
enum Undo {
    Window { key: u64, window: u64, cost: u64 },
    Gcra { key: u64, t_ns: u64 },
}

const MAX_STEPS: usize = 6;

/// The compiled policies of one snapshot.
pub struct Throttler {
    pub(crate) store: Arc<CounterStore>,
    pub(crate) rules: Vec<Rule>,
    pub(crate) subs: NameMap<SubTierC>,
    pub(crate) apps: NameMap<AppTierC>,
    pub(crate) advanced: NameMap<AdvancedC>,
    pub(crate) unauth: Box<str>,
    unknown: AtomicU64,
}

impl std::fmt::Debug for Throttler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttler")
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

pub(crate) fn ip_bytes(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

impl Throttler {
    pub(crate) fn from_parts(
        store: Arc<CounterStore>,
        rules: Vec<Rule>,
        subs: NameMap<SubTierC>,
        apps: NameMap<AppTierC>,
        advanced: NameMap<AdvancedC>,
        unauth: Box<str>,
    ) -> Self {
        Throttler {
            store,
            rules,
            subs,
            apps,
            advanced,
            unauth,
            unknown: AtomicU64::new(0),
        }
    }

    /// The store this throttler counts in.
    pub fn store(&self) -> &Arc<CounterStore> {
        &self.store
    }

    pub fn has_subscription_tier(&self, name: &str) -> bool {
        self.subs.contains_key(name)
    }

    pub fn has_application_tier(&self, name: &str) -> bool {
        self.apps.contains_key(name)
    }

    pub fn has_advanced_policy(&self, name: &str) -> bool {
        self.advanced.contains_key(name)
    }

    /// Whether some quota counts bytes (then responses must be charged).
    pub fn has_bandwidth_quota(&self) -> bool {
        let bytes = |r: &Rule| matches!(r.kind, RuleKind::Quota { bytes: true, .. });
        self.rules.iter().any(bytes)
    }

    /// Checks that named a tier or policy this throttler does not know (they pass
    /// unlimited at that level; config validation should make this impossible).
    pub fn unknown_policy_total(&self) -> u64 {
        self.unknown.load(Ordering::Relaxed)
    }

    /// The policy name users know (`Gold`, `10KPerMin`) of a rule.
    pub fn policy_name(&self, rule: RuleId) -> &str {
        self.rules.get(rule.index()).map_or("", |r| &r.policy)
    }

    /// The rule's unique label (`sub:Gold/burst`, `adv:10KPerMin/group:ip`), as in metrics.
    pub fn rule_label(&self, rule: RuleId) -> &str {
        self.rules.get(rule.index()).map_or("", |r| &r.label)
    }

    pub(crate) fn rule(&self, id: RuleId) -> Option<&Rule> {
        self.rules.get(id.index())
    }

    /// Decides one request at `now`, taking from every counter that applies.
    pub fn check(&self, f: &RequestFacts<'_>, now: UnixNanos) -> Decision {
        let now = now.as_nanos();
        let mut steps = [None::<(Step, Option<Undo>)>; MAX_STEPS];
        let mut n = 0;
        let mut push = |s: Option<(Step, Option<Undo>)>| -> bool {
            if let Some((step, undo)) = s {
                steps[n] = Some((step, undo));
                n += 1;
                !step.allowed
            } else {
                false
            }
        };
        let api = f.api_id.as_bytes();
        let refused = 'levels: {
            if let Some(name) = f.resource_policy {
                let res = f.resource.unwrap_or("").as_bytes();
                if push(self.advanced_step(name, f, now, b"R", &[api, res])) {
                    break 'levels true;
                }
            }
            if let Some(name) = f.api_policy {
                if push(self.advanced_step(name, f, now, b"P", &[api])) {
                    break 'levels true;
                }
            }
            let (tier, level, scope): (Option<&str>, &[u8], [&[u8]; 2]) = match f.application_id {
                Some(app) => (f.subscription_tier, b"S", [api, app.as_bytes()]),
                None => (Some(&*self.unauth), b"U", [api, &ip_bytes(f.client_ip)]),
            };
            if let Some(tier) = tier {
                match self.subs.get(tier) {
                    Some(t) => {
                        if let Some(burst) = t.burst {
                            if push(self.burst_step(burst, now, level, &scope)) {
                                break 'levels true;
                            }
                        }
                        if let Some(q) = t.quota {
                            let force = !t.stop_on_quota;
                            if push(self.quota_step(q, f.bytes, now, level, &scope, force)) {
                                break 'levels true;
                            }
                        }
                    }
                    None if f.application_id.is_some() => {
                        self.unknown.fetch_add(1, Ordering::Relaxed);
                    }
                    None => {}
                }
            }
            if let (Some(app), Some(tier)) = (f.application_id, f.application_tier) {
                match self.apps.get(tier).map(|t| t.quota) {
                    Some(Some(q)) => {
                        let user = f.user.unwrap_or("").as_bytes();
                        let scope = [app.as_bytes(), user];
                        if push(self.quota_step(q, f.bytes, now, b"A", &scope, false)) {
                            break 'levels true;
                        }
                    }
                    Some(None) => {}
                    None => {
                        self.unknown.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            false
        };
        self.decide(&steps[..n], refused, now)
    }

    /// Decides a GraphQL request's operations at `now`: each `(key, policy)` (a stable
    /// key within the API, e.g. `query:hero`, and its advanced policy) takes from its own
    /// counter, keyed per API and operation as a resource's policy is keyed per API and
    /// resource (same store, same cluster leases). If one refuses, what the others took is
    /// given back, so a refused request debits none of them; the decision names the
    /// refusing rule (when allowed, the one with the least left), and the index is the
    /// refused operation's in `operations`.
    pub fn check_operations(
        &self,
        f: &RequestFacts<'_>,
        operations: &[(&str, &str)],
        now: UnixNanos,
    ) -> (Decision, Option<usize>) {
        let now = now.as_nanos();
        let api = f.api_id.as_bytes();
        let mut steps = Vec::with_capacity(operations.len());
        let mut refused = None;
        for (i, (key, policy)) in operations.iter().enumerate() {
            if let Some(s) = self.advanced_step(policy, f, now, b"O", &[api, key.as_bytes()]) {
                steps.push(Some(s));
                if !s.0.allowed {
                    refused = Some(i);
                    break;
                }
            }
        }
        (self.decide(&steps, refused.is_some(), now), refused)
    }

    fn decide(&self, steps: &[Option<(Step, Option<Undo>)>], refused: bool, now: u64) -> Decision {
        let mut out = Decision::UNLIMITED;
        let mut best: Option<Step> = None;
        for (step, undo) in steps.iter().flatten() {
            let Some(rule) = self.rule(step.rule) else {
                continue;
            };
            if refused && step.allowed {
                if let Some(u) = undo {
                    self.undo(*u, now);
                }
            }
            if !step.allowed {
                rule.stats.throttled.add(1);
                best = Some(*step);
                continue;
            }
            if let (false, Some(Undo::Window { key, .. })) = (refused, undo) {
                if matches!(rule.kind, RuleKind::Quota { bytes: true, .. }) {
                    out.charges.push(*key, step.rule);
                }
            }
            if step.over {
                rule.stats.flagged.add(1);
                out.flagged = true;
            } else if !refused {
                rule.stats.allowed.add(1);
            }
            let better = match best {
                None => true,
                Some(b) => b.allowed && (step.remaining, step.reset_ns) < (b.remaining, b.reset_ns),
            };
            if better && !step.over {
                best = Some(*step);
            }
        }
        if let Some(b) = best {
            let limit = self.rule(b.rule).map_or(0, |r| r.limit);
            out.allowed = b.allowed;
            out.rule = Some(b.rule);
            out.limit = limit;
            out.remaining = b.remaining;
            out.reset = Duration::from_nanos(b.reset_ns);
            out.retry_after = (!b.allowed).then(|| Duration::from_nanos(b.retry_ns));
        }
        out
    }

    /// Charges `bytes` (a response's size) to the bandwidth quotas that admitted a
    /// request, in the window current at `now`. Never refuses (the response is already
    /// on its way): a count pushed over its limit refuses the caller's next request.
    pub fn charge_bytes(&self, charges: &Charges, bytes: u64, now: UnixNanos) {
        if bytes == 0 {
            return;
        }
        let now = now.as_nanos();
        let link = self.store.cluster.get();
        for (key, id) in charges.iter() {
            let Some(rule) = self.rule(id) else { continue };
            let RuleKind::Quota { unit_ns, .. } = rule.kind else {
                continue;
            };
            let window = now / unit_ns.max(1);
            let limit = rule.limit;
            self.store
                .with_slot(key, SlotKind::Window { unit_ns }, now, |s| match link {
                    None => {
                        counter::window_take(&s.word, window, bytes, limit, true);
                    }
                    Some(l) => {
                        l.take(s, key, window, unit_ns, bytes, limit, true);
                    }
                });
        }
    }

    fn undo(&self, u: Undo, _now: u64) {
        match u {
            Undo::Window { key, window, cost } => {
                self.store
                    .peek(key, |s| counter::window_refund(&s.word, window, cost));
            }
            Undo::Gcra { key, t_ns } => {
                self.store
                    .peek(key, |s| counter::gcra_refund(&s.word, t_ns));
            }
        }
    }

    fn key(rule: &Rule, level: &[u8], scope: &[&[u8]]) -> u64 {
        let mut h: KeyHash = rule.seed.part(level);
        for p in scope {
            h = h.part(p);
        }
        h.finish()
    }

    fn advanced_step(
        &self,
        name: &str,
        f: &RequestFacts<'_>,
        now: u64,
        level: &[u8],
        scope: &[&[u8]],
    ) -> Option<(Step, Option<Undo>)> {
        let Some(p) = self.advanced.get(name) else {
            self.unknown.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        // Groups are sorted lowest limit first: the first match is the one that applies.
        let rule = p
            .groups
            .iter()
            .find(|g| g.conds.iter().all(|(c, inv)| cond_matches(c, f) != *inv))
            .map(|g| g.rule)
            .or(p.default)?;
        self.quota_step(rule, f.bytes, now, level, scope, false)
    }

    fn burst_step(
        &self,
        id: RuleId,
        now: u64,
        level: &[u8],
        scope: &[&[u8]],
    ) -> Option<(Step, Option<Undo>)> {
        let rule = self.rule(id)?;
        let RuleKind::Burst { t_ns } = rule.kind else {
            return None;
        };
        let key = Self::key(rule, level, scope);
        let o = self.store.with_slot(key, SlotKind::Gcra, now, |s| {
            counter::gcra_take(&s.word, now, t_ns, rule.limit)
        })?;
        let step = Step {
            rule: id,
            allowed: o.allowed,
            over: false,
            remaining: o.remaining,
            reset_ns: o.reset_ns,
            retry_ns: o.retry_ns,
        };
        Some((step, Some(Undo::Gcra { key, t_ns })))
    }

    fn quota_step(
        &self,
        id: RuleId,
        bytes: u64,
        now: u64,
        level: &[u8],
        scope: &[&[u8]],
        force: bool,
    ) -> Option<(Step, Option<Undo>)> {
        let rule = self.rule(id)?;
        let RuleKind::Quota {
            bytes: is_bytes,
            unit_ns,
        } = rule.kind
        else {
            return None;
        };
        let cost = if is_bytes { bytes } else { 1 };
        let key = Self::key(rule, level, scope);
        let window = now / unit_ns;
        let reset_ns = (window + 1) * unit_ns - now;
        let limit = rule.limit;
        let link = self.store.cluster.get();
        let taken = self
            .store
            .with_slot(key, SlotKind::Window { unit_ns }, now, |s| match link {
                None => {
                    let (ok, used) = counter::window_take(&s.word, window, cost, limit, force);
                    (ok, used, used)
                }
                Some(l) => l.take(s, key, window, unit_ns, cost, limit, force),
            });
        // A full store admits untracked (see CounterStore): the limit still shows.
        let (ok, used, global) = taken.unwrap_or((true, 0, 0));
        let retry_ns = if ok { 0 } else { reset_ns };
        let step = Step {
            rule: id,
            allowed: ok,
            over: force && global > limit,
            remaining: limit.saturating_sub(global),
            reset_ns,
            retry_ns,
        };
        let _ = used;
        Some((step, ok.then_some(Undo::Window { key, window, cost })))
    }
}

fn cond_matches(c: &CondC, f: &RequestFacts<'_>) -> bool {
    match c {
        CondC::Ip(r) => r.contains(f.client_ip),
        CondC::Header(n, m) => m.matches(f.lookup.header(n)),
        CondC::Query(n, m) => m.matches(f.lookup.query(n).as_deref()),
        CondC::Claim(n, m) => m.matches(f.lookup.claim(n)),
    }
}
