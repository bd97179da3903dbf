//! The OpenTelemetry GenAI metrics of AI (LLM) API calls (semantic conventions for
//! generative AI, Prometheus names): `gen_ai_client_token_usage` (tokens per call,
//! `gen_ai_token_type` `input` or `output`) and `gen_ai_server_time_to_first_token_seconds`
//! (request head to the first response byte), by API, provider and answering model. Fed
//! from the `TokenUsage` an AI API's policy leaves in the request context; a request
//! without one costs a look into an empty extension map.
//!
//! Series are atomics behind a copy-on-write map: a call reads it without a lock; only a
//! new (API, provider, model) takes the lock to add its series, and past [`MAX_SERIES`]
//! new ones are counted under the model `other`, so a provider inventing model names
//! cannot grow `/metrics` without bound.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use turnpike_policy::ai::TokenUsage;
use turnpike_policy::ApiLabel;

/// Tokens per call, by token type.
pub(crate) const M_TOKEN_USAGE: &str = "gen_ai_client_token_usage";
/// Request head to the first response body byte, for AI calls.
pub(crate) const M_TTFT: &str = "gen_ai_server_time_to_first_token_seconds";

/// The conventions' bucket boundaries: tokens, and seconds to the first token.
const TOKEN_BUCKETS: [u64; 14] = [
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304, 16_777_216,
    67_108_864,
];
const TTFT_BUCKETS: [f64; 16] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// Most (API, provider, model) series kept apart.
pub(crate) const MAX_SERIES: usize = 256;

/// A fixed-bucket histogram: per-bucket counts (the last one +Inf) and the sum.
struct Buckets<const N: usize> {
    counts: [AtomicU64; N],
    sum: AtomicU64,
}

impl<const N: usize> Default for Buckets<N> {
    fn default() -> Self {
        Buckets {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Buckets<N> {
    fn add(&self, bucket: usize, value: u64) {
        self.counts[bucket.min(N - 1)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// `name_bucket{labels,le=..}` lines, `_sum` (scaled by `unit`) and `_count`.
    fn render(&self, out: &mut String, name: &str, labels: &str, les: &[String], unit: f64) {
        let mut cumulative = 0;
        for (i, le) in les.iter().enumerate() {
            cumulative += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
        }
        cumulative += self.counts[N - 1].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {cumulative}");
        let sum = self.sum.load(Ordering::Relaxed) as f64 * unit;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}");
    }
}

/// One (API, provider, model)'s series.
struct Series {
    /// `api="..",version="..",gen_ai_provider_name="..",gen_ai_response_model=".."`.
    labels: String,
    input: Buckets<{ TOKEN_BUCKETS.len() + 1 }>,
    output: Buckets<{ TOKEN_BUCKETS.len() + 1 }>,
    /// In microseconds.
    ttft: Buckets<{ TTFT_BUCKETS.len() + 1 }>,
}

/// The GenAI series of one gateway.
#[derive(Default)]
pub(crate) struct GenAiMetrics {
    series: ArcSwap<HashMap<String, Arc<Series>>>,
    grow: Mutex<()>,
}

fn token_bucket(n: u64) -> usize {
    TOKEN_BUCKETS.partition_point(|&b| b < n)
}

fn ttft_bucket(us: u64) -> usize {
    TTFT_BUCKETS.partition_point(|&b| ((b * 1e6) as u64) < us)
}

impl GenAiMetrics {
    /// Records one AI call of `api`.
    pub(crate) fn observe(
        &self,
        api: Option<&ApiLabel>,
        usage: &TokenUsage,
        ttft: Option<Duration>,
        escape: fn(&str) -> String,
    ) {
        let (name, version) = api.map_or(("", ""), |a| (&*a.name, &*a.version));
        let provider = usage.provider.as_deref().unwrap_or("");
        let model = usage.model.as_deref().unwrap_or("");
        let key = format!("{name}\0{version}\0{provider}\0{model}");
        let series = match self.series.load().get(&key) {
            Some(s) => s.clone(),
            None => self.add(key, [name, version, provider, model], escape),
        };
        series.input.add(token_bucket(usage.prompt), usage.prompt);
        series
            .output
            .add(token_bucket(usage.completion), usage.completion);
        if let Some(t) = ttft {
            let us = u64::try_from(t.as_micros()).unwrap_or(u64::MAX);
            series.ttft.add(ttft_bucket(us), us);
        }
    }

    /// The series of a key seen for the first time (cold: copies the map).
    #[cold]
    fn add(
        &self,
        key: String,
        [name, version, provider, model]: [&str; 4],
        escape: fn(&str) -> String,
    ) -> Arc<Series> {
        let _grow = self.grow.lock();
        let map = self.series.load();
        if let Some(s) = map.get(&key) {
            return s.clone();
        }
        let (key, model) = if map.len() >= MAX_SERIES {
            (format!("{name}\0{version}\0{provider}\0other"), "other")
        } else {
            (key, model)
        };
        if let Some(s) = map.get(&key) {
            return s.clone();
        }
        let series = Arc::new(Series {
            labels: format!(
                "api=\"{}\",version=\"{}\",gen_ai_provider_name=\"{}\",gen_ai_response_model=\"{}\"",
                escape(name),
                escape(version),
                escape(provider),
                escape(model)
            ),
            input: Buckets::default(),
            output: Buckets::default(),
            ttft: Buckets::default(),
        });
        let mut next = HashMap::clone(&map);
        next.insert(key, series.clone());
        self.series.store(Arc::new(next));
        series
    }

    /// The Prometheus text of every series (nothing before the first AI call).
    pub(crate) fn render(&self, out: &mut String) {
        let map = self.series.load();
        if map.is_empty() {
            return;
        }
        let mut all: Vec<&Arc<Series>> = map.values().collect();
        all.sort_by(|a, b| a.labels.cmp(&b.labels));
        let token_les: Vec<String> = TOKEN_BUCKETS.iter().map(u64::to_string).collect();
        let ttft_les: Vec<String> = TTFT_BUCKETS.iter().map(f64::to_string).collect();
        let _ = writeln!(
            out,
            "# HELP {M_TOKEN_USAGE} Tokens per AI call, by token type (input, output)"
        );
        let _ = writeln!(out, "# TYPE {M_TOKEN_USAGE} histogram");
        for s in &all {
            for (ty, h) in [("input", &s.input), ("output", &s.output)] {
                let labels = format!("{},gen_ai_token_type=\"{ty}\"", s.labels);
                h.render(out, M_TOKEN_USAGE, &labels, &token_les, 1.0);
            }
        }
        let _ = writeln!(
            out,
            "# HELP {M_TTFT} Time from the request head to the first response byte of AI calls"
        );
        let _ = writeln!(out, "# TYPE {M_TTFT} histogram");
        for s in &all {
            s.ttft.render(out, M_TTFT, &s.labels, &ttft_les, 1e-6);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(model: &str, prompt: u64, completion: u64) -> TokenUsage {
        TokenUsage {
            prompt,
            completion,
            total: prompt + completion,
            model: Some(model.into()),
            provider: Some("openai".into()),
            ..TokenUsage::default()
        }
    }

    fn plain(s: &str) -> String {
        s.to_owned()
    }

    #[test]
    fn calls_fill_token_and_ttft_histograms_per_model() {
        let m = GenAiMetrics::default();
        let api = ApiLabel {
            name: "chat".into(),
            context: "/ai".into(),
            version: "v1".into(),
        };
        m.observe(
            Some(&api),
            &usage("gpt-4o-mini", 10, 300),
            Some(Duration::from_millis(30)),
            plain,
        );
        m.observe(Some(&api), &usage("gpt-4o-mini", 3, 1), None, plain);
        let mut out = String::new();
        m.render(&mut out);
        let l = "api=\"chat\",version=\"v1\",gen_ai_provider_name=\"openai\",gen_ai_response_model=\"gpt-4o-mini\"";
        assert!(
            out.contains(&format!(
                "gen_ai_client_token_usage_bucket{{{l},gen_ai_token_type=\"input\",le=\"16\"}} 2"
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "gen_ai_client_token_usage_bucket{{{l},gen_ai_token_type=\"output\",le=\"256\"}} 1"
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "gen_ai_client_token_usage_sum{{{l},gen_ai_token_type=\"output\"}} 301"
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "gen_ai_server_time_to_first_token_seconds_bucket{{{l},le=\"0.04\"}} 1"
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "gen_ai_server_time_to_first_token_seconds_count{{{l}}} 1"
            )),
            "{out}"
        );
    }

    #[test]
    fn models_past_the_cap_share_one_series() {
        let m = GenAiMetrics::default();
        for i in 0..MAX_SERIES + 10 {
            m.observe(None, &usage(&format!("m{i}"), 1, 1), None, plain);
        }
        let map = m.series.load();
        assert_eq!(map.len(), MAX_SERIES + 1);
        let other = map
            .values()
            .find(|s| s.labels.contains("\"other\""))
            .expect("other");
        assert_eq!(
            other
                .input
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .sum::<u64>(),
            10
        );
    }
}
