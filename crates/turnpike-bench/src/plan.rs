//! Matrix plans: scenarios x users x message sizes x back-end delays (x WSO2's GraphQL
//! queries for the `graphql` scenario), with per-plan warm-up and duration. Plans are data
//! (YAML under `bench/plans/`, the bundled ones compiled in); this module parses and checks
//! them and lists their cells in run order.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::setup::{Auth, Pin, Protocol, Target, MAX_TOKENS};
use crate::BenchError;

/// The bundled plans, by name.
pub const BUNDLED: [(&str, &str); 5] = [
    ("quick", include_str!("../../../bench/plans/quick.yaml")),
    (
        "seed-2.6",
        include_str!("../../../bench/plans/seed-2.6.yaml"),
    ),
    (
        "seed-3.0",
        include_str!("../../../bench/plans/seed-3.0.yaml"),
    ),
    (
        "coldfusion",
        include_str!("../../../bench/plans/coldfusion.yaml"),
    ),
    ("graphql", include_str!("../../../bench/plans/graphql.yaml")),
];

/// What traffic a cell sends, and through what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// POST of a JSON body through a plain proxied API (the seeds' "Echo API").
    Passthrough,
    /// GET answered with a body of the cell's size (ColdFusion "HTTP GET").
    Get,
    /// POST of a JSON body (ColdFusion "HTTP POST").
    Post,
    /// JSON-to-JSON rewrite of the payload (the seeds' "Mediation API"), on a secured
    /// API (an API key and a subscription).
    Transformation,
    /// POST of a JSON body through the same secured API as `transformation`, on a
    /// resource without the rewrite (the seeds' "Echo API", which is secured too): the
    /// reference `transformation` is compared with.
    SecuredPassthrough,
    /// WSO2's Star Wars GraphQL queries (the plan's `graphql_queries`) through a secured
    /// GRAPHQL API (schema analysis, depth and complexity limits) to `turnpike echo
    /// --graphql`; its baseline is the same query sent straight to that back end.
    Graphql,
    /// `secured-passthrough` with a rate limit: the same secured API's resources under a
    /// second API whose subscription is on a tier with a request quota (too high to refuse
    /// anything), so every request is counted by the limiter (Kong's published "key-auth +
    /// rate limit" case).
    SecuredRateLimited,
    /// SOAP 1.2 proxy.
    SoapProxy,
    /// SOAP service published as a REST API.
    SoapToRest,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Passthrough => "passthrough",
            Scenario::Get => "get",
            Scenario::Post => "post",
            Scenario::Transformation => "transformation",
            Scenario::SecuredPassthrough => "secured-passthrough",
            Scenario::SecuredRateLimited => "secured-rate-limited",
            Scenario::Graphql => "graphql",
            Scenario::SoapProxy => "soap-proxy",
            Scenario::SoapToRest => "soap-to-rest",
        }
    }

    /// Every scenario.
    pub const ALL: [Scenario; 9] = [
        Scenario::Passthrough,
        Scenario::Get,
        Scenario::Post,
        Scenario::Transformation,
        Scenario::SecuredPassthrough,
        Scenario::SecuredRateLimited,
        Scenario::Graphql,
        Scenario::SoapProxy,
        Scenario::SoapToRest,
    ];

    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Where the scenario's API is under the matrix's own gateway (and, unless a target's
    /// `paths` says otherwise, under a target's URL).
    pub fn default_path(self) -> &'static str {
        match self {
            Scenario::Transformation => "/secured/v1/mediation",
            Scenario::SecuredPassthrough => "/secured/v1",
            Scenario::SecuredRateLimited => "/limited/v1",
            Scenario::SoapProxy => "/soap/v1",
            Scenario::SoapToRest => "/soaprest/v1/echo",
            Scenario::Graphql => "/starwars/v1/graphql",
            Scenario::Passthrough | Scenario::Get | Scenario::Post => "/echo/v1",
        }
    }

    /// Whether the scenario's API is secured (it gets the plan's credential).
    pub fn is_secured(self) -> bool {
        matches!(
            self,
            Scenario::Transformation
                | Scenario::SecuredPassthrough
                | Scenario::SecuredRateLimited
                | Scenario::Graphql
        )
    }

    /// Why the scenario cannot run yet, or None when it can.
    pub fn skip_reason(self) -> Option<&'static str> {
        match self {
            Scenario::Passthrough
            | Scenario::Get
            | Scenario::Post
            | Scenario::Transformation
            | Scenario::SecuredPassthrough
            | Scenario::SecuredRateLimited
            | Scenario::Graphql => None,
            Scenario::SoapProxy | Scenario::SoapToRest => None,
        }
    }

    /// What the scenario sends, which also names its direct baseline: `GET`, `POST`,
    /// `SOAP` (a SOAP 1.2 envelope POSTed to the echo's SOAP service; SOAP-to-REST sends
    /// JSON to the gateway, which calls the same service) or `GRAPHQL` (WSO2's query N
    /// POSTed to `turnpike echo --graphql`).
    pub fn method(self) -> &'static str {
        match self {
            Scenario::Get => "GET",
            Scenario::SoapProxy | Scenario::SoapToRest => "SOAP",
            Scenario::Graphql => "GRAPHQL",
            _ => "POST",
        }
    }
}

/// A plan as written in YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub scenarios: Vec<Scenario>,
    pub users: Vec<usize>,
    /// Message sizes in bytes.
    pub sizes: Vec<usize>,
    pub delays_ms: Vec<u64>,
    /// e.g. `10s`, `500ms`.
    pub warmup: String,
    pub duration: String,
    /// WSO2's GraphQL queries (1-3) the `graphql` scenario runs, each its own cell (and
    /// baseline); `[1]` when left out. GraphQL cells run at the first size only (a query's
    /// size is its own).
    #[serde(default = "default_graphql_queries")]
    pub graphql_queries: Vec<u8>,
    /// The secured scenarios' credential: `jwt` (default) or `api-key`.
    #[serde(default)]
    pub auth: Auth,
    /// Distinct tokens the secured scenarios cycle over (JWTs from the bench issuer, or
    /// client-credentials grants of a target); 1 by default.
    #[serde(default = "default_tokens")]
    pub tokens: usize,
    /// `http` (default), `https` (HTTP/1.1 over TLS) or `h2` (HTTP/2 over TLS) to the gateway.
    #[serde(default)]
    pub protocol: Protocol,
    /// `auto` (default), `off`, or `{ gateway, backend, generator }` CPU lists.
    #[serde(default)]
    pub pin: Pin,
    /// A running gateway to drive instead of the matrix's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

fn default_graphql_queries() -> Vec<u8> {
    vec![1]
}

fn default_tokens() -> usize {
    1
}

impl Plan {
    /// A bundled plan by name, or a YAML file.
    pub fn load(name_or_path: &str) -> Result<Plan, BenchError> {
        let (origin, text) = match BUNDLED.iter().find(|(n, _)| *n == name_or_path) {
            Some((n, text)) => (format!("bundled plan {n}"), (*text).to_owned()),
            None => {
                let text = std::fs::read_to_string(name_or_path).map_err(|e| {
                    let names: Vec<_> = BUNDLED.iter().map(|(n, _)| *n).collect();
                    BenchError::Usage(format!(
                        "plan {name_or_path:?} is neither a bundled plan ({}) nor a readable file: {e}",
                        names.join(", ")
                    ))
                })?;
                (name_or_path.to_owned(), text)
            }
        };
        Plan::parse(&text).map_err(|e| BenchError::Usage(format!("{origin}: {e}")))
    }

    /// Parses and checks a plan.
    pub fn parse(text: &str) -> Result<Plan, String> {
        let plan: Plan = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        let mut errors = Vec::new();
        if plan.scenarios.is_empty() {
            errors.push("scenarios: empty".to_owned());
        }
        if plan.users.is_empty() || plan.users.contains(&0) {
            errors.push("users: must be a non-empty list of numbers above 0".to_owned());
        }
        if plan.sizes.is_empty() {
            errors.push("sizes: empty".to_owned());
        }
        if plan.delays_ms.is_empty() {
            errors.push("delays_ms: empty".to_owned());
        }
        for (field, v) in [("warmup", &plan.warmup), ("duration", &plan.duration)] {
            if let Err(e) = crate::run::parse_duration(v) {
                errors.push(format!("{field}: {e}"));
            }
        }
        if plan.graphql_queries.is_empty()
            || plan.graphql_queries.iter().any(|q| !(1..=3).contains(q))
        {
            errors.push(
                "graphql_queries: must be a non-empty list of 1, 2 or 3 (WSO2's queries)"
                    .to_owned(),
            );
        }
        if plan.tokens == 0 || plan.tokens > MAX_TOKENS {
            errors.push(format!("tokens: between 1 and {MAX_TOKENS}"));
        }
        if let Some(t) = &plan.target {
            t.check(&mut errors);
            for name in t.paths.keys() {
                if Scenario::from_name(name).is_none() {
                    errors.push(format!("target.paths.{name}: not a scenario"));
                }
            }
        }
        if matches!(plan.duration(), Ok(d) if d.is_zero()) {
            errors.push("duration: must be above 0".to_owned());
        }
        if errors.is_empty() {
            Ok(plan)
        } else {
            Err(errors.join("; "))
        }
    }

    pub fn warmup(&self) -> Result<Duration, String> {
        crate::run::parse_duration(&self.warmup)
    }

    pub fn duration(&self) -> Result<Duration, String> {
        crate::run::parse_duration(&self.duration)
    }

    /// The runs of the plan for one back-end delay, in order: for each users level and size,
    /// the direct baselines its scenarios need (once per method, and per GraphQL query),
    /// then the scenarios (`graphql` once per query, at the first size only).
    pub fn runs_for_delay(&self, delay_ms: u64) -> Vec<RunKey> {
        let mut out = Vec::new();
        for &users in &self.users {
            for (i, &size) in self.sizes.iter().enumerate() {
                let runs = |s: Scenario| -> Vec<Option<u8>> {
                    match s {
                        Scenario::Graphql if i > 0 => Vec::new(),
                        Scenario::Graphql => {
                            self.graphql_queries.iter().map(|q| Some(*q)).collect()
                        }
                        _ => vec![None],
                    }
                };
                let mut methods: Vec<(&'static str, Option<u8>)> = self
                    .scenarios
                    .iter()
                    .filter(|s| s.skip_reason().is_none())
                    .flat_map(|&s| runs(s).into_iter().map(move |q| (s.method(), q)))
                    .collect();
                methods.sort_unstable();
                methods.dedup();
                for (method, graphql_query) in methods {
                    out.push(RunKey {
                        target: Via::Direct,
                        scenario: None,
                        method,
                        users,
                        size,
                        delay_ms,
                        graphql_query,
                    });
                }
                for &s in &self.scenarios {
                    for graphql_query in runs(s) {
                        out.push(RunKey {
                            target: Via::Gateway,
                            scenario: Some(s),
                            method: s.method(),
                            users,
                            size,
                            delay_ms,
                            graphql_query,
                        });
                    }
                }
            }
        }
        out
    }

    /// Every run of the plan.
    pub fn runs(&self) -> Vec<RunKey> {
        self.delays_ms
            .iter()
            .flat_map(|&d| self.runs_for_delay(d))
            .collect()
    }
}

/// Whether a run goes straight to the back end or through the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    Direct,
    Gateway,
}

/// One run of a matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunKey {
    pub target: Via,
    /// None for a direct baseline.
    pub scenario: Option<Scenario>,
    pub method: &'static str,
    pub users: usize,
    pub size: usize,
    pub delay_ms: u64,
    /// WSO2's query (1-3) of a GraphQL run.
    pub graphql_query: Option<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_plans_parse() {
        for (name, _) in BUNDLED {
            let p = Plan::load(name).expect(name);
            assert_eq!(p.name, name);
        }
        let seed = Plan::load("seed-2.6").expect("seed-2.6");
        assert_eq!(seed.users, vec![100, 200, 300, 1000, 2000]);
        assert_eq!(seed.sizes, vec![50, 1024, 10240, 102400]);
        assert_eq!(seed.delays_ms, vec![0, 30, 500, 1000]);
    }

    #[test]
    fn security_transport_pinning_and_target_are_plan_options() {
        let base = "name: x\nscenarios: [secured-passthrough]\nusers: [1]\nsizes: [1]\ndelays_ms: [0]\nwarmup: 1s\nduration: 1s\n";
        let p = Plan::parse(base).expect("defaults");
        assert_eq!(
            (p.auth, p.tokens, p.protocol),
            (Auth::Jwt, 1, Protocol::Http)
        );
        assert_eq!(p.pin, Pin::default());
        let p = Plan::parse(&format!(
            "{base}auth: api-key\ntokens: 5000\nprotocol: h2\npin: {{ gateway: \"1\", generator: \"0\" }}\n\
             target:\n  url: https://gw:8443\n  insecure: true\n  paths: {{ secured-passthrough: /kong/echo }}\n\
             \x20 token: {{ file: t.txt, header: \"apikey: {{token}}\" }}\n"
        ))
        .expect("options");
        assert_eq!(
            (p.auth, p.tokens, p.protocol),
            (Auth::ApiKey, 5000, Protocol::H2)
        );
        let t = p.target.expect("target");
        let url = |s: Scenario| t.scenario_url(s.name(), s.default_path());
        assert_eq!(
            url(Scenario::SecuredPassthrough),
            "https://gw:8443/kong/echo"
        );
        assert_eq!(url(Scenario::Passthrough), "https://gw:8443/echo/v1");
        let err = Plan::parse(&format!(
            "{base}tokens: 0\ntarget:\n  url: gw:1\n  paths: {{ nope: /x }}\n  token: {{ header: \"apikey: x\" }}\n"
        ))
        .expect_err("bad");
        assert!(
            err.contains("tokens")
                && err.contains("target.url")
                && err.contains("exactly one")
                && err.contains("target.token.header")
                && err.contains("target.paths.nope"),
            "{err}"
        );
    }

    #[test]
    fn unknown_fields_and_bad_values_are_refused_all_at_once() {
        let err = Plan::parse("name: x\nscenarios: [get]\nusers: [1]\nsizes: [1]\ndelays_ms: [0]\nwarmup: 1s\nduration: 1s\nextra: 1\n")
            .expect_err("unknown field");
        assert!(err.contains("extra"), "{err}");
        let err = Plan::parse("name: x\nscenarios: []\nusers: [0]\nsizes: [1]\ndelays_ms: [0]\nwarmup: soon\nduration: 1s\n")
            .expect_err("bad values");
        assert!(
            err.contains("scenarios") && err.contains("users") && err.contains("warmup"),
            "{err}"
        );
    }

    #[test]
    fn runs_put_one_baseline_per_method_before_the_scenarios() {
        let p = Plan::parse("name: x\nscenarios: [passthrough, post, get, graphql]\nusers: [10]\nsizes: [50]\ndelays_ms: [0, 30]\nwarmup: 1s\nduration: 1s\n")
            .expect("plan");
        let runs = p.runs_for_delay(30);
        let direct: Vec<_> = runs
            .iter()
            .filter(|r| r.target == Via::Direct)
            .map(|r| r.method)
            .collect();
        assert_eq!(direct, vec!["GET", "GRAPHQL", "POST"]);
        assert_eq!(runs.len(), 3 + 4);
        assert!(runs.iter().all(|r| r.delay_ms == 30));
        assert_eq!(p.runs().len(), 14);
    }

    #[test]
    fn graphql_queries_are_cells_with_their_baselines_at_the_first_size() {
        let p = Plan::parse("name: x\nscenarios: [graphql, post]\nusers: [10]\nsizes: [50, 1024]\ndelays_ms: [0]\nwarmup: 1s\nduration: 1s\ngraphql_queries: [1, 3]\n")
            .expect("plan");
        assert_eq!(p.graphql_queries, vec![1, 3]);
        let runs = p.runs_for_delay(0);
        let gql: Vec<_> = runs
            .iter()
            .filter(|r| r.method == "GRAPHQL")
            .map(|r| (r.target, r.graphql_query, r.size))
            .collect();
        assert_eq!(
            gql,
            vec![
                (Via::Direct, Some(1), 50),
                (Via::Direct, Some(3), 50),
                (Via::Gateway, Some(1), 50),
                (Via::Gateway, Some(3), 50),
            ]
        );
        assert_eq!(
            runs.len(),
            4 + 2 * 2,
            "post's baseline and cell at both sizes"
        );
        let defaulted = Plan::parse("name: x\nscenarios: [graphql]\nusers: [1]\nsizes: [1]\ndelays_ms: [0]\nwarmup: 1s\nduration: 1s\n")
            .expect("plan");
        assert_eq!(defaulted.graphql_queries, vec![1]);
        let err = Plan::parse("name: x\nscenarios: [graphql]\nusers: [1]\nsizes: [1]\ndelays_ms: [0]\nwarmup: 1s\nduration: 1s\ngraphql_queries: [4]\n")
            .expect_err("query 4");
        assert!(err.contains("graphql_queries"), "{err}");
    }

    #[test]
    fn the_bundled_graphql_plan_is_the_seeds_layout() {
        let p = Plan::load("graphql").expect("graphql");
        assert_eq!(p.scenarios, vec![Scenario::Graphql]);
        assert_eq!(p.users, vec![50, 100, 200, 500, 1000]);
        assert_eq!(p.graphql_queries, vec![1, 2, 3]);
        assert_eq!(p.delays_ms, vec![0]);
        // direct + gateway per query and users level
        assert_eq!(p.runs().len(), 5 * 3 * 2);
    }
}
