//! Build once: a `ThrottleSpec` is validated (every problem reported at once) and
//! compiled into rules with precomputed keys, header values and counters, looked up by
//! name in hash maps so a check does no parsing and no allocation.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use http::HeaderValue;
use turnpike_model::fnv::{fnv64_extend, FNV_OFFSET};
use turnpike_model::throttling::{BurstUnit, Condition, Limit, ThrottleSpec, UNAUTHENTICATED};
use turnpike_policy::{Problem, RuleId};

use crate::ip::IpRange;
use crate::stats::RuleStats;
use crate::store::{CounterStore, KeyHash};
use crate::throttler::Throttler;
use crate::token_limit::{TokenPart, TokenRef};

/// Policy names to compiled policies. Names come from the configuration, never from a
/// client, so a fast non-keyed hash (FNV-1a with a multiply finaliser) is safe here and
/// costs a fraction of SipHash on every check.
pub(crate) type NameMap<V> = HashMap<Box<str>, V, BuildHasherDefault<NameHasher>>;

#[derive(Clone, Copy)]
pub(crate) struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> Self {
        NameHasher(FNV_OFFSET)
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = fnv64_extend(self.0, bytes);
    }

    fn finish(&self) -> u64 {
        // Spread into the high bits, which the table's control bytes use.
        (self.0 ^ (self.0 >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleKind {
    /// A fixed-window quota.
    Quota { bytes: bool, unit_ns: u64 },
    /// A GCRA spike limit: emission interval `t_ns`.
    Burst { t_ns: u64 },
    /// A token budget (LLM APIs): a fixed window charged with a call's tokens.
    Tokens { part: TokenPart, unit_ns: u64 },
}

/// One compiled limit.
#[derive(Debug)]
pub(crate) struct Rule {
    /// The policy's name as users know it (`Gold`, `10KPerMin`).
    pub policy: Box<str>,
    /// Unique label: `Gold`, `Gold/burst`, `10KPerMin/group:ip-allow`.
    pub label: Box<str>,
    pub kind: RuleKind,
    pub limit: u64,
    pub window_secs: u64,
    pub seed: KeyHash,
    /// `"label";q=LIMIT;w=SECONDS` for `RateLimit-Policy`.
    pub policy_header: HeaderValue,
    pub stats: Arc<RuleStats>,
}

#[derive(Debug)]
pub(crate) struct SubTierC {
    pub quota: Option<RuleId>,
    pub burst: Option<RuleId>,
    pub stop_on_quota: bool,
    pub tokens: Box<[TokenRef]>,
}

#[derive(Debug)]
pub(crate) struct AppTierC {
    pub quota: Option<RuleId>,
    pub tokens: Box<[TokenRef]>,
}

#[derive(Debug)]
pub(crate) enum Matcher {
    Exact(Box<str>),
    Prefix(Box<str>),
}

impl Matcher {
    fn new(v: &str) -> Self {
        match v.strip_suffix('*') {
            Some(p) => Matcher::Prefix(p.into()),
            None => Matcher::Exact(v.into()),
        }
    }

    pub fn matches(&self, v: Option<&str>) -> bool {
        match (self, v) {
            (_, None) => false,
            (Matcher::Exact(e), Some(v)) => **e == *v,
            (Matcher::Prefix(p), Some(v)) => v.starts_with(&**p),
        }
    }
}

#[derive(Debug)]
pub(crate) enum CondC {
    Ip(IpRange),
    Header(Box<str>, Matcher),
    Query(Box<str>, Matcher),
    Claim(Box<str>, Matcher),
}

#[derive(Debug)]
pub(crate) struct GroupC {
    /// (condition, inverted)
    pub conds: Vec<(CondC, bool)>,
    pub rule: RuleId,
}

#[derive(Debug)]
pub(crate) struct AdvancedC {
    pub default: Option<RuleId>,
    /// Sorted by limit, lowest first: the first group that matches is the one that applies.
    pub groups: Vec<GroupC>,
    pub tokens: Box<[TokenRef]>,
}

#[derive(Default)]
pub(crate) struct Builder {
    pub(crate) rules: Vec<Rule>,
    pub(crate) problems: Vec<String>,
}

impl Builder {
    fn quota(&mut self, store: &CounterStore, policy: &str, label: String, l: &Limit) -> RuleId {
        let (amount, bytes) = match (l.requests, l.bytes) {
            (Some(n), None) => (n, false),
            (None, Some(n)) => (n, true),
            _ => {
                self.problems.push(format!(
                    "{label}: a limit needs exactly one of `requests` and `bytes`"
                ));
                (0, false)
            }
        };
        if l.every == 0 {
            self.problems
                .push(format!("{label}: `every` must be at least 1"));
        }
        let secs = l.per.seconds() * u64::from(l.every.max(1));
        let kind = RuleKind::Quota {
            bytes,
            unit_ns: secs * 1_000_000_000,
        };
        self.push(store, policy, label, kind, amount, secs)
    }

    pub(crate) fn push(
        &mut self,
        store: &CounterStore,
        policy: &str,
        label: String,
        kind: RuleKind,
        limit: u64,
        window_secs: u64,
    ) -> RuleId {
        let (tag, extra) = match kind {
            RuleKind::Quota { bytes, .. } => (if bytes { "bytes" } else { "requests" }, 0),
            RuleKind::Burst { t_ns } => ("burst", t_ns),
            RuleKind::Tokens { part, .. } => (part.name(), 0),
        };
        // Keyed by what the count means (label, kind, window), not by the limit: raising
        // a tier's limit keeps the count of the current window.
        let seed = KeyHash::new()
            .part(label.as_bytes())
            .part(tag.as_bytes())
            .num(window_secs)
            .num(extra);
        let quoted = format!("\"{}\";q={limit};w={window_secs}", sf_escape(&label));
        let policy_header = HeaderValue::from_str(&quoted).unwrap_or_else(|_| {
            HeaderValue::from_str(&format!("\"policy\";q={limit};w={window_secs}"))
                .unwrap_or(HeaderValue::from_static("\"policy\""))
        });
        let id = RuleId::new(self.rules.len() as u32);
        self.rules.push(Rule {
            policy: policy.into(),
            stats: store.stats_for(&label),
            label: label.into(),
            kind,
            limit,
            window_secs,
            seed,
            policy_header,
        });
        id
    }
}

/// A structured-field string: printable ASCII with `"` and `\` escaped; others dropped.
fn sf_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

fn check_names<'a>(
    kind: &str,
    names: impl Iterator<Item = &'a String>,
    problems: &mut Vec<String>,
) {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if n.is_empty() {
            problems.push(format!("a {kind} has an empty name"));
        } else if !seen.insert(n.as_str()) {
            problems.push(format!("{kind} {n:?} is declared twice"));
        }
    }
}

/// Rate of a quota as (is bandwidth, amount, window ns), for "lowest limit first".
fn rate_order(rules: &[Rule], a: RuleId, b: RuleId) -> std::cmp::Ordering {
    let key = |r: &Rule| match r.kind {
        RuleKind::Quota { bytes, unit_ns } => (bytes, r.limit, unit_ns),
        RuleKind::Burst { t_ns } => (false, r.limit, t_ns),
        RuleKind::Tokens { unit_ns, .. } => (true, r.limit, unit_ns),
    };
    let (ab, an, au) = key(&rules[a.index()]);
    let (bb, bn, bu) = key(&rules[b.index()]);
    // an/au < bn/bu  <=>  an*bu < bn*au
    ab.cmp(&bb)
        .then((u128::from(an) * u128::from(bu)).cmp(&(u128::from(bn) * u128::from(au))))
}

impl Throttler {
    /// Validates and compiles `spec` over `store` (keep one store for the process); every
    /// problem found is at `throttling`, its message naming the tier or policy.
    pub fn build(spec: &ThrottleSpec, store: Arc<CounterStore>) -> Result<Self, Vec<Problem>> {
        let mut b = Builder::default();
        check_names(
            "subscription tier",
            spec.subscription_tiers.iter().map(|t| &t.name),
            &mut b.problems,
        );
        check_names(
            "application tier",
            spec.application_tiers.iter().map(|t| &t.name),
            &mut b.problems,
        );
        check_names(
            "advanced policy",
            spec.advanced_policies.iter().map(|t| &t.name),
            &mut b.problems,
        );

        let mut subs = NameMap::default();
        for t in &spec.subscription_tiers {
            let quota = t
                .quota
                .as_ref()
                .map(|l| b.quota(&store, &t.name, format!("sub:{}", t.name), l));
            let burst = t.burst.as_ref().map(|bl| {
                if bl.requests == 0 {
                    b.problems.push(format!(
                        "subscription tier {:?}: burst requests must be at least 1",
                        t.name
                    ));
                }
                let secs = match bl.per {
                    BurstUnit::Second => 1,
                    BurstUnit::Minute => 60,
                };
                let t_ns = secs * 1_000_000_000 / bl.requests.max(1);
                b.push(
                    &store,
                    &t.name,
                    format!("sub:{}/burst", t.name),
                    RuleKind::Burst { t_ns },
                    bl.requests,
                    secs,
                )
            });
            let tokens = b.tokens(&store, &t.name, &format!("sub:{}", t.name), &t.tokens);
            subs.insert(
                Box::<str>::from(t.name.as_str()),
                SubTierC {
                    quota,
                    burst,
                    stop_on_quota: t.stop_on_quota,
                    tokens,
                },
            );
        }

        let mut apps = NameMap::default();
        for t in &spec.application_tiers {
            let quota = t
                .quota
                .as_ref()
                .map(|l| b.quota(&store, &t.name, format!("app:{}", t.name), l));
            let tokens = b.tokens(&store, &t.name, &format!("app:{}", t.name), &t.tokens);
            apps.insert(
                Box::<str>::from(t.name.as_str()),
                AppTierC { quota, tokens },
            );
        }

        let mut advanced = NameMap::default();
        for p in &spec.advanced_policies {
            let default = p
                .default_limit
                .as_ref()
                .map(|l| b.quota(&store, &p.name, format!("adv:{}", p.name), l));
            let mut groups = Vec::new();
            for (i, g) in p.groups.iter().enumerate() {
                let gname = g.name.clone().unwrap_or_else(|| i.to_string());
                let label = format!("adv:{}/group:{gname}", p.name);
                if g.conditions.is_empty() {
                    b.problems.push(format!(
                        "{label}: a conditional group needs at least one condition"
                    ));
                }
                let mut conds = Vec::new();
                for c in &g.conditions {
                    let compiled = match c {
                        Condition::Ip { ip, invert } => match IpRange::parse(ip) {
                            Ok(r) => (CondC::Ip(r), *invert),
                            Err(e) => {
                                b.problems.push(format!("{label}: {e}"));
                                continue;
                            }
                        },
                        Condition::Header {
                            name,
                            value,
                            invert,
                        } => (
                            CondC::Header(name.to_ascii_lowercase().into(), Matcher::new(value)),
                            *invert,
                        ),
                        Condition::Query {
                            name,
                            value,
                            invert,
                        } => (
                            CondC::Query(name.as_str().into(), Matcher::new(value)),
                            *invert,
                        ),
                        Condition::Claim {
                            name,
                            value,
                            invert,
                        } => (
                            CondC::Claim(name.as_str().into(), Matcher::new(value)),
                            *invert,
                        ),
                    };
                    conds.push(compiled);
                }
                let rule = b.quota(&store, &p.name, label, &g.limit);
                groups.push(GroupC { conds, rule });
            }
            groups.sort_by(|x, y| rate_order(&b.rules, x.rule, y.rule));
            let tokens = b.tokens(&store, &p.name, &format!("adv:{}", p.name), &p.tokens);
            advanced.insert(
                Box::<str>::from(p.name.as_str()),
                AdvancedC {
                    default,
                    groups,
                    tokens,
                },
            );
        }

        let unauth_name = spec
            .unauthenticated_tier
            .as_deref()
            .unwrap_or(UNAUTHENTICATED);
        if spec.unauthenticated_tier.is_some() && !subs.contains_key(unauth_name) {
            b.problems.push(format!(
                "unauthenticated_tier {unauth_name:?} is not a subscription tier"
            ));
        }
        if !b.problems.is_empty() {
            // The caller, which has the file's own lists, names the entry at fault.
            let at = |m: String| Problem::new("throttling", m);
            return Err(b.problems.into_iter().map(at).collect());
        }
        Ok(Throttler::from_parts(
            store,
            b.rules,
            subs,
            apps,
            advanced,
            unauth_name.into(),
        ))
    }
}
