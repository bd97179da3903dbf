//! Matrix plans: scenarios x users x message sizes x back-end delays, with per-plan warm-up
//! and duration. Plans are data (YAML under `bench/plans/`, the bundled ones compiled in);
//! this module parses and checks them and lists their cells in run order.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::BenchError;

/// The bundled plans, by name.
pub const BUNDLED: [(&str, &str); 4] = [
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
    /// GraphQL queries with operation analysis.
    Graphql,
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
            Scenario::Graphql => "graphql",
            Scenario::SoapProxy => "soap-proxy",
            Scenario::SoapToRest => "soap-to-rest",
        }
    }

    /// Why the scenario cannot run yet, or None when it can.
    pub fn skip_reason(self) -> Option<&'static str> {
        match self {
            Scenario::Passthrough
            | Scenario::Get
            | Scenario::Post
            | Scenario::Transformation
            | Scenario::SecuredPassthrough => None,
            Scenario::Graphql => Some(
                "needs GraphQL APIs in the gateway and `turnpike echo --graphql`, not built yet",
            ),
            Scenario::SoapProxy | Scenario::SoapToRest => None,
        }
    }

    /// What the scenario sends, which also names its direct baseline: `GET`, `POST`, or
    /// `SOAP` (a SOAP 1.2 envelope POSTed to the echo's SOAP service; SOAP-to-REST sends
    /// JSON to the gateway, which calls the same service).
    pub fn method(self) -> &'static str {
        match self {
            Scenario::Get => "GET",
            Scenario::SoapProxy | Scenario::SoapToRest => "SOAP",
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
    /// the direct baselines its scenarios need (once per method), then the scenarios.
    pub fn runs_for_delay(&self, delay_ms: u64) -> Vec<RunKey> {
        let mut out = Vec::new();
        for &users in &self.users {
            for &size in &self.sizes {
                let mut methods: Vec<&'static str> = self
                    .scenarios
                    .iter()
                    .filter(|s| s.skip_reason().is_none())
                    .map(|s| s.method())
                    .collect();
                methods.sort_unstable();
                methods.dedup();
                for method in methods {
                    out.push(RunKey {
                        target: Via::Direct,
                        scenario: None,
                        method,
                        users,
                        size,
                        delay_ms,
                    });
                }
                for &s in &self.scenarios {
                    out.push(RunKey {
                        target: Via::Gateway,
                        scenario: Some(s),
                        method: s.method(),
                        users,
                        size,
                        delay_ms,
                    });
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
        assert_eq!(direct, vec!["GET", "POST"]);
        assert_eq!(runs.len(), 2 + 4);
        assert!(runs.iter().all(|r| r.delay_ms == 30));
        assert_eq!(p.runs().len(), 12);
    }
}
