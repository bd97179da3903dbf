//! The AI report (`/analytics/ai`, docs/analytics.md "AI APIs"): tokens, cost and time
//! to first token of AI (LLM) API calls, in total and by model, application or API
//! (`by=`). Cost prices each rollup row's tokens by its model with the price table
//! (`turnpike_analytics::prices`: the control plane's edits over the built-in list
//! prices) when the report is made, so a price edit applies to past traffic too. Rows
//! without a model (every other request) are left out.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};
use turnpike_analytics::prices::{cost_usd, price_of, Price};
use turnpike_analytics::rollup::Row;
use turnpike_analytics::{Hist, Rollup};

/// What the report groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AiBy {
    Model,
    Application,
    Api,
}

impl AiBy {
    pub fn parse(s: &str) -> Option<AiBy> {
        match s {
            "model" => Some(AiBy::Model),
            "application" => Some(AiBy::Application),
            "api" => Some(AiBy::Api),
            _ => None,
        }
    }

    fn fields(self) -> &'static [&'static str] {
        match self {
            AiBy::Model => &["provider", "model"],
            AiBy::Application => &["applicationId", "applicationName"],
            AiBy::Api => &["apiName", "apiContext", "apiVersion"],
        }
    }

    fn key(self, r: &Row) -> Vec<String> {
        let k = &r.key;
        match self {
            AiBy::Model => vec![k.provider.clone(), k.model.clone()],
            AiBy::Application => vec![k.application_id.clone(), k.application_name.clone()],
            AiBy::Api => vec![
                k.api_name.clone(),
                k.api_context.clone(),
                k.api_version.clone(),
            ],
        }
    }
}

/// Sums of one group.
#[derive(Default)]
struct Group {
    sums: Rollup,
    cost: f64,
}

impl Group {
    fn add(&mut self, r: &Row, cost: f64) {
        self.sums.merge(&r.sums);
        self.cost += cost;
    }

    fn json(&self) -> Value {
        let s = &self.sums;
        json!({
            "requests": s.requests,
            "errors": s.errors,
            "promptTokens": s.prompt_tokens,
            "completionTokens": s.completion_tokens,
            "cachedTokens": s.cached_tokens,
            "totalTokens": s.prompt_tokens + s.completion_tokens,
            "costUsd": self.cost,
            "timeToFirstToken": ttft(&s.ttft),
        })
    }
}

/// Time-to-first-token percentiles in microseconds (bucket upper bounds, as the
/// latency report's) and how many calls they cover.
fn ttft(h: &Hist) -> Value {
    json!({
        "count": h.count(),
        "p50Us": h.percentile(0.5),
        "p90Us": h.percentile(0.9),
        "p99Us": h.percentile(0.99),
    })
}

/// The report over `rows`, at most `limit` groups (the most tokens first).
pub fn ai(rows: &[Row], by: AiBy, prices: &[(String, Price)], limit: usize) -> Value {
    let mut total = Group::default();
    let mut groups: BTreeMap<Vec<String>, Group> = BTreeMap::new();
    let mut unpriced = BTreeSet::new();
    for r in rows.iter().filter(|r| !r.key.model.is_empty()) {
        let s = &r.sums;
        let cost = match price_of(&r.key.model, prices) {
            Some(p) => cost_usd(p, s.prompt_tokens, s.cached_tokens, s.completion_tokens),
            None => {
                unpriced.insert(r.key.model.clone());
                0.0
            }
        };
        total.add(r, cost);
        groups.entry(by.key(r)).or_default().add(r, cost);
    }
    let mut groups: Vec<(Vec<String>, Group)> = groups.into_iter().collect();
    groups.sort_by_key(|(_, g)| std::cmp::Reverse(g.sums.prompt_tokens + g.sums.completion_tokens));
    let items: Vec<Value> = groups
        .iter()
        .take(limit)
        .map(|(key, g)| {
            let mut v = g.json();
            if let Value::Object(m) = &mut v {
                for (field, value) in by.fields().iter().zip(key) {
                    m.insert((*field).to_string(), value.clone().into());
                }
            }
            v
        })
        .collect();
    json!({
        "totals": total.json(),
        "unpricedModels": unpriced.into_iter().collect::<Vec<_>>(),
        "groups": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_analytics::rollup::{Counted, Tokens, MINUTE};
    use turnpike_analytics::{Latency, Outcome, RollupKey};

    fn row(app: &str, model: &str, prompt: u64, completion: u64, ttft_us: u64) -> Row {
        let mut sums = Rollup::default();
        sums.count(&Counted {
            status: 200,
            outcome: Outcome::Served,
            bytes_in: 0,
            bytes_out: 0,
            latency: Latency::default(),
            upstream_answered: true,
            tokens: Some(Tokens {
                prompt,
                completion,
                cached: 0,
                ttft_us: Some(ttft_us),
            }),
        });
        Row {
            bucket: 0,
            period: MINUTE,
            key: RollupKey {
                application_id: app.into(),
                model: model.into(),
                provider: "openai".into(),
                ..RollupKey::default()
            },
            sums,
        }
    }

    #[test]
    fn tokens_and_cost_by_model_and_application() {
        let rows = vec![
            row("a1", "gpt-4o-mini", 1_000_000, 0, 100_000),
            row("a2", "gpt-4o-mini", 0, 1_000_000, 300_000),
            row("a2", "home-made", 10, 10, 200_000),
            Row {
                key: RollupKey::default(),
                ..row("a3", "", 5, 5, 1)
            },
        ];
        let r = ai(&rows, AiBy::Model, &[], 10);
        assert_eq!(
            r["totals"]["requests"], 3,
            "the row without a model is left out"
        );
        assert_eq!(r["totals"]["totalTokens"], 2_000_020);
        // gpt-4o-mini: $0.15 per 1M input, $0.60 per 1M output.
        let cost = r["totals"]["costUsd"].as_f64().expect("cost");
        assert!((cost - 0.75).abs() < 1e-9, "{cost}");
        assert_eq!(r["unpricedModels"], json!(["home-made"]));
        assert_eq!(r["groups"][0]["model"], "gpt-4o-mini");
        assert_eq!(r["groups"][0]["timeToFirstToken"]["count"], 2);
        let edited = vec![(
            "home-made".to_string(),
            Price {
                input: 1_000_000,
                output: 0,
                cached_input: 0,
            },
        )];
        let r = ai(&rows, AiBy::Application, &edited, 1);
        assert_eq!(r["groups"].as_array().map(Vec::len), Some(1), "limit");
        // Groups come by tokens, most first: a2's 1,000,020 before a1's 1,000,000.
        assert_eq!(r["groups"][0]["applicationId"], "a2");
        assert_eq!(r["unpricedModels"], json!([]));
    }
}
