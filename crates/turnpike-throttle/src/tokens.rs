//! Token budgets of LLM APIs: tiers and advanced policies count prompt, completion or
//! total tokens per window as well as requests. A call is decided in two steps, because
//! its cost is known only once its answer has ended:
//!
//! 1. [`Throttler::check_tokens`], before the call: each budget that applies *holds*
//!    the call's estimate (prompt + `max_tokens` for a total budget, each part for the
//!    others) in its window, refusing when what is left cannot hold it; so concurrent
//!    calls cannot all spend the same remainder.
//! 2. [`Throttler::settle_tokens`], when the call ended: each hold becomes the tokens
//!    actually used (the difference is charged or given back). A charge never refuses
//!    (the answer is out): it may take a window below zero, and the next call is
//!    refused until the window rolls.
//!
//! Counters are the request quotas' fixed windows (same store, same Redis leases), each
//! take charging many units at once.

use std::time::Duration;

use turnpike_model::throttling::{TokenLimit, MAX_TOKEN_KEYS, MAX_TOKEN_LIMITS};
use turnpike_policy::ai::{TokenEstimate, TokenUsage};
use turnpike_policy::RuleId;

use crate::compile::{Builder, Rule, RuleKind};
use crate::counter;
use crate::facts::RequestFacts;
use crate::store::{CounterStore, SlotKind};
use crate::throttler::{ip_bytes, Throttler};
use crate::token_limit::{TokenKey, TokenPart, TokenRef};
use crate::UnixNanos;

/// One valid token limit: what it counts, its count, window and keys.
struct Parsed {
    part: TokenPart,
    count: u64,
    secs: u64,
    per: String,
    by: Box<[TokenKey]>,
}

/// Reads `l` (the `i`th of its list), or says every problem it has.
fn parse_limit(i: usize, l: &TokenLimit) -> Result<Parsed, Vec<String>> {
    let mut problems = Vec::new();
    let (part, count) = match (l.total, l.prompt, l.completion) {
        (Some(n), None, None) => (TokenPart::Total, n),
        (None, Some(n), None) => (TokenPart::Prompt, n),
        (None, None, Some(n)) => (TokenPart::Completion, n),
        _ => {
            problems.push(format!(
                "tokens[{i}]: a token limit needs exactly one of `total`, `prompt` and `completion`"
            ));
            (TokenPart::Total, 1)
        }
    };
    if count == 0 || l.every == 0 {
        problems.push(format!(
            "tokens[{i}]: the count and `every` must be at least 1"
        ));
    }
    if l.by.len() > MAX_TOKEN_KEYS {
        problems.push(format!(
            "tokens[{i}]: at most {MAX_TOKEN_KEYS} `by` keys (found {})",
            l.by.len()
        ));
    }
    let mut by = Vec::with_capacity(l.by.len());
    for k in &l.by {
        match TokenKey::parse(k) {
            Ok(key) => by.push(key),
            Err(e) => problems.push(format!("tokens[{i}].by: {e}")),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let per = match l.every {
        1 => l.per.name().to_owned(),
        n => format!("{n}-{}s", l.per.name()),
    };
    Ok(Parsed {
        part,
        count,
        secs: l.per.seconds() * u64::from(l.every),
        per,
        by: by.into_boxed_slice(),
    })
}

/// Every problem of one tier's or policy's `tokens:` list, each naming its entry
/// (`tokens[1]: ...`): the file's compile and the Admin REST API say the same.
pub fn token_limit_problems(limits: &[TokenLimit]) -> Vec<String> {
    let mut problems = Vec::new();
    if limits.len() > MAX_TOKEN_LIMITS {
        problems.push(format!(
            "tokens: at most {MAX_TOKEN_LIMITS} token limits (found {})",
            limits.len()
        ));
    }
    let mut seen = Vec::new();
    for (i, l) in limits.iter().enumerate() {
        match parse_limit(i, l) {
            Ok(p) if seen.contains(&(p.part, p.secs)) => problems.push(format!(
                "tokens[{i}]: a second {} limit per {}",
                p.part.name(),
                p.per
            )),
            Ok(p) => seen.push((p.part, p.secs)),
            Err(found) => problems.extend(found),
        }
    }
    problems
}

impl Builder {
    /// Compiles a tier's or policy's `tokens:` (labels `{prefix}/{part}-per-{window}`,
    /// problems `{prefix}/tokens[i]: ...`).
    pub(crate) fn tokens(
        &mut self,
        store: &CounterStore,
        policy: &str,
        prefix: &str,
        limits: &[TokenLimit],
    ) -> Box<[TokenRef]> {
        let problems = token_limit_problems(limits);
        if !problems.is_empty() {
            let at = |p: String| format!("{prefix}/{p}");
            self.problems.extend(problems.into_iter().map(at));
            return Box::default();
        }
        let mut out = Vec::with_capacity(limits.len());
        for (i, l) in limits.iter().enumerate() {
            let Ok(p) = parse_limit(i, l) else { continue };
            let label = format!("{prefix}/{}-per-{}", p.part.name(), p.per);
            let kind = RuleKind::Tokens {
                part: p.part,
                unit_ns: p.secs * 1_000_000_000,
            };
            let rule = self.push(store, policy, label, kind, p.count, p.secs);
            out.push(TokenRef { rule, by: p.by });
        }
        out.into_boxed_slice()
    }
}

/// Part of one budget's window held by a call until it settles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hold {
    key: u64,
    rule: RuleId,
    window: u64,
    tokens: u64,
}

/// What the budgets said about one call: the binding budget (the refusing one, or the
/// one with the least left) for the `RateLimit` headers, and the holds to settle (at
/// most 4 levels x `MAX_TOKEN_LIMITS`, as compiling checks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenDecision {
    pub allowed: bool,
    /// `None` when no budget applied.
    pub rule: Option<RuleId>,
    pub limit: u64,
    /// What the binding budget has left with this call's estimate held.
    pub remaining: u64,
    pub reset: Duration,
    pub retry_after: Option<Duration>,
    holds: Vec<Hold>,
}

impl TokenDecision {
    fn new() -> Self {
        TokenDecision {
            allowed: true,
            rule: None,
            limit: u64::MAX,
            remaining: u64::MAX,
            reset: Duration::ZERO,
            retry_after: None,
            holds: Vec::new(),
        }
    }

    /// Tokens this call holds in its budgets (summed over them), for tests and logs.
    pub fn held(&self) -> u64 {
        self.holds.iter().map(|h| h.tokens).sum()
    }

    /// Makes `step` the binding budget when it has less left than the one chosen so far
    /// (or as much, and resets sooner).
    fn bind(&mut self, step: Step) {
        let tighter = self.rule.is_none()
            || (step.remaining, step.reset_ns) < (self.remaining, self.reset.as_nanos() as u64);
        if tighter {
            self.rule = Some(step.rule);
            self.limit = step.limit;
            self.remaining = step.remaining;
            self.reset = Duration::from_nanos(step.reset_ns);
        }
    }
}

/// What one budget said.
#[derive(Clone, Copy)]
struct Step {
    rule: RuleId,
    limit: u64,
    remaining: u64,
    reset_ns: u64,
}

/// One level's budgets and the scope its counters are keyed by.
struct Level<'a> {
    refs: &'a [TokenRef],
    tag: &'static [u8],
    scope: [&'a [u8]; 2],
}

impl Throttler {
    /// Whether some tier or policy of this throttler counts tokens.
    pub fn has_token_limits(&self) -> bool {
        self.rules
            .iter()
            .any(|r| matches!(r.kind, RuleKind::Tokens { .. }))
    }

    /// Whether the subscription tier `name` counts tokens.
    pub fn tier_counts_tokens(&self, name: &str) -> bool {
        self.subs.get(name).is_some_and(|t| !t.tokens.is_empty())
    }

    /// Whether the advanced policy `name` counts tokens.
    pub fn policy_counts_tokens(&self, name: &str) -> bool {
        self.advanced
            .get(name)
            .is_some_and(|p| !p.tokens.is_empty())
    }

    /// Whether some subscription or application tier counts tokens.
    pub fn caller_tiers_count_tokens(&self) -> bool {
        self.subs.values().any(|t| !t.tokens.is_empty())
            || self.apps.values().any(|t| !t.tokens.is_empty())
    }

    /// The subscription tier requests without an application count on.
    pub fn unauthenticated_tier(&self) -> &str {
        &self.unauth
    }

    /// Whether some budget is counted per model (then the caller reads the request's
    /// model for [`check_tokens`](Self::check_tokens)).
    pub fn tokens_by_model(&self) -> bool {
        let by_model = |refs: &[TokenRef]| {
            refs.iter()
                .any(|r| r.by.iter().any(|k| matches!(k, TokenKey::Model)))
        };
        self.subs.values().any(|t| by_model(&t.tokens))
            || self.apps.values().any(|t| by_model(&t.tokens))
            || self.advanced.values().any(|p| by_model(&p.tokens))
    }

    /// The budgets that apply to `f`, in the order request quotas are checked.
    fn token_levels<'a>(
        &'a self,
        f: &'a RequestFacts<'a>,
        ip: &'a [u8; 16],
    ) -> [Option<Level<'a>>; 4] {
        let api = f.api_id.as_bytes();
        let advanced = |name: Option<&str>| self.advanced.get(name?).map(|p| &*p.tokens);
        let resource = advanced(f.resource_policy).map(|refs| Level {
            refs,
            tag: b"R",
            scope: [api, f.resource.unwrap_or("").as_bytes()],
        });
        let api_level = advanced(f.api_policy).map(|refs| Level {
            refs,
            tag: b"P",
            scope: [api, b""],
        });
        let subscription = match f.application_id {
            Some(app) => f
                .subscription_tier
                .and_then(|t| self.subs.get(t))
                .map(|t| Level {
                    refs: &t.tokens,
                    tag: b"S",
                    scope: [api, app.as_bytes()],
                }),
            None => self.subs.get(&*self.unauth).map(|t| Level {
                refs: &t.tokens,
                tag: b"U",
                scope: [api, ip.as_slice()],
            }),
        };
        let application = match (f.application_id, f.application_tier) {
            (Some(app), Some(tier)) => self.apps.get(tier).map(|t| Level {
                refs: &t.tokens,
                tag: b"A",
                scope: [app.as_bytes(), f.user.unwrap_or("").as_bytes()],
            }),
            _ => None,
        };
        [resource, api_level, subscription, application]
    }

    /// Holds a call's `estimate` in every budget that applies to `f` at `now`, or refuses
    /// it (holding nothing) when one cannot hold its part. `model`: the model the
    /// request names (budgets counted per model). Without an estimate (a call that
    /// spends no tokens) nothing is held or refused, but the decision still names the
    /// budgets' keys so that [`settle_tokens`](Self::settle_tokens) charges any usage.
    pub fn check_tokens(
        &self,
        f: &RequestFacts<'_>,
        model: Option<&str>,
        estimate: Option<&TokenEstimate>,
        now: UnixNanos,
    ) -> TokenDecision {
        let now = now.as_nanos();
        let mut d = TokenDecision::new();
        let ip = ip_bytes(f.client_ip);
        for level in self.token_levels(f, &ip).iter().flatten() {
            for r in level.refs {
                let Some(rule) = self.rule(r.rule) else {
                    continue;
                };
                let key = token_key(rule, level, r, f, model);
                match self.hold(r.rule, key, estimate, now) {
                    Some(Ok((hold, step))) => {
                        d.holds.push(hold);
                        d.bind(step);
                    }
                    Some(Err(step)) => return self.refuse(d, step),
                    None => {}
                }
            }
        }
        for h in &d.holds {
            if let Some(rule) = self.rule(h.rule) {
                rule.stats.allowed.add(1);
            }
        }
        d
    }

    /// Takes `estimate`'s part in budget `id`'s current window: the hold and what is
    /// left, or the refusing step (`None`: not a token budget).
    fn hold(
        &self,
        id: RuleId,
        key: u64,
        estimate: Option<&TokenEstimate>,
        now: u64,
    ) -> Option<Result<(Hold, Step), Step>> {
        let rule = self.rule(id)?;
        let RuleKind::Tokens { part, unit_ns } = rule.kind else {
            return None;
        };
        let window = now / unit_ns;
        let (ok, tokens, global) = match estimate {
            Some(e) => {
                let cost = part.of_estimate(e);
                let (ok, global) = self.take(key, window, unit_ns, cost, rule.limit, false, now);
                (ok, cost, global)
            }
            None => (true, 0, self.used(key, window)),
        };
        let step = Step {
            rule: id,
            limit: rule.limit,
            remaining: rule.limit.saturating_sub(global),
            reset_ns: (window + 1) * unit_ns - now,
        };
        Some(match ok {
            true => Ok((
                Hold {
                    key,
                    rule: id,
                    window,
                    tokens,
                },
                step,
            )),
            false => Err(step),
        })
    }

    /// A refusal by `step`: what the budgets before it held is given back.
    #[cold]
    fn refuse(&self, mut d: TokenDecision, step: Step) -> TokenDecision {
        for h in d.holds.drain(..) {
            self.store.peek(h.key, |s| {
                counter::window_refund(&s.word, h.window, h.tokens)
            });
        }
        if let Some(rule) = self.rule(step.rule) {
            rule.stats.throttled.add(1);
        }
        d.allowed = false;
        d.rule = Some(step.rule);
        d.limit = step.limit;
        d.remaining = step.remaining;
        d.reset = Duration::from_nanos(step.reset_ns);
        d.retry_after = Some(d.reset);
        d
    }

    /// Turns a call's holds into the tokens it used (`None`: it used none, e.g. the
    /// provider was never called): the difference is charged (never refused, so a window
    /// may go past its limit) or given back. A window that rolled since the check gets
    /// the whole usage; the hold ended with its window.
    pub fn settle_tokens(&self, d: &TokenDecision, usage: Option<&TokenUsage>, now: UnixNanos) {
        let now = now.as_nanos();
        for h in &d.holds {
            let Some(rule) = self.rule(h.rule) else {
                continue;
            };
            let RuleKind::Tokens { part, unit_ns } = rule.kind else {
                continue;
            };
            let used = usage.map_or(0, |u| part.of_usage(u));
            let window = now / unit_ns;
            let (charge, refund) = if window == h.window {
                (used.saturating_sub(h.tokens), h.tokens.saturating_sub(used))
            } else {
                (used, 0)
            };
            if charge > 0 {
                self.take(h.key, window, unit_ns, charge, rule.limit, true, now);
            }
            if refund > 0 {
                self.store
                    .peek(h.key, |s| counter::window_refund(&s.word, h.window, refund));
            }
        }
    }

    /// Adds `cost` to a window counter (locally or under the cluster's leases): whether
    /// it fit and the estimated global count after.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &self,
        key: u64,
        window: u64,
        unit_ns: u64,
        cost: u64,
        limit: u64,
        force: bool,
        now: u64,
    ) -> (bool, u64) {
        let link = self.store.cluster.get();
        let taken = self
            .store
            .with_slot(key, SlotKind::Window { unit_ns }, now, |s| match link {
                None => counter::window_take(&s.word, window, cost, limit, force),
                Some(l) if force => {
                    let (ok, _, global) = l.take(s, key, window, unit_ns, cost, limit, true);
                    (ok, global)
                }
                Some(l) => l.hold(s, key, window, unit_ns, cost, limit),
            });
        // A full store admits untracked (see CounterStore).
        taken.unwrap_or((true, 0))
    }

    /// The count of a window as this node knows it (its own and, in a cluster, the
    /// others' at its last lease).
    fn used(&self, key: u64, window: u64) -> u64 {
        self.store
            .peek(key, |s| {
                counter::window_used(&s.word, window)
                    .saturating_add(counter::window_used(&s.others, window))
            })
            .unwrap_or(0)
    }
}

/// The counter key of one budget for one call: the rule, its level's scope and each of
/// its `by` values.
fn token_key(
    rule: &Rule,
    level: &Level<'_>,
    r: &TokenRef,
    f: &RequestFacts<'_>,
    model: Option<&str>,
) -> u64 {
    let mut h = rule.seed.part(level.tag);
    for p in level.scope {
        h = h.part(p);
    }
    for k in r.by.iter() {
        h = h.part(k.value(f, model).as_bytes());
    }
    h.finish()
}
