//! The semantic level of an AI API's answer cache (`ai.cache.semantic`, off by
//! default): on an exact miss, the prompt's texts are embedded by the API's first
//! provider (`POST {url}/embeddings` with its key, under a timeout: a slow or failing
//! provider only means no semantic hit) and compared with the vectors of cached answers
//! of the same application and model; the most similar at or above the threshold
//! (cosine) answers. The index is a flat scan, newest first, bounded by `max_entries`
//! (1000 by default: at 1536 dimensions about 6 MB and a few hundred microseconds a
//! scan, next to a provider call of hundreds of milliseconds): an HNSW graph pays off
//! only at sizes a per-API in-memory cache should not reach. Its answers live in the
//! exact level's store; one evicted there is a miss here.

use std::collections::VecDeque;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use http::HeaderValue;
use serde_json::{json, Value};
use turnpike_model::ai_guard::SemanticCacheSpec;
use turnpike_policy::BuildCx;

/// The exact level's key of an answer (`cache.rs`), kept here as its bytes.
type Key = [u8; 32];

const DEFAULT_THRESHOLD: f64 = 0.95;
const DEFAULT_MAX_ENTRIES: usize = 1000;
const MAX_ENTRIES: usize = 100_000;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest embeddings answer read, and most dimensions kept.
const MAX_EMBEDDING_BYTES: usize = 1 << 20;
const MAX_DIMENSIONS: usize = 8192;
/// Longest prompt text sent to be embedded.
const MAX_TEXT_BYTES: usize = 32 * 1024;

struct Vector {
    /// Hash of the application and the model: only their entries are compared.
    scope: u64,
    unit: Arc<[f32]>,
    key: Key,
}

/// The per-API index, in the gateway's runtime (with the exact store).
#[derive(Default)]
pub(crate) struct Index {
    vectors: RwLock<VecDeque<Vector>>,
}

pub(crate) struct Semantic {
    model: String,
    threshold: f32,
    max_entries: usize,
    timeout: Duration,
    url: String,
    auth: Option<HeaderValue>,
    client: reqwest::Client,
    pub(crate) index: Arc<Index>,
}

impl Semantic {
    pub(crate) fn build(
        spec: &SemanticCacheSpec,
        provider: (&str, Option<&HeaderValue>),
        index: Arc<Index>,
        cx: &mut BuildCx<'_>,
    ) -> Option<Semantic> {
        let threshold = spec.threshold.unwrap_or(DEFAULT_THRESHOLD);
        if !(0.0..=1.0).contains(&threshold) || threshold == 0.0 {
            cx.problem(".cache.semantic.threshold", "a cosine similarity in (0, 1]");
        }
        let max_entries = spec.max_entries.unwrap_or(DEFAULT_MAX_ENTRIES);
        if max_entries == 0 || max_entries > MAX_ENTRIES {
            cx.problem(".cache.semantic.max_entries", format!("1 to {MAX_ENTRIES}"));
        }
        let timeout = crate::settings::duration(
            cx,
            ".cache.semantic.timeout",
            spec.timeout.as_ref(),
            DEFAULT_TIMEOUT,
            MAX_TIMEOUT,
        );
        if spec.embedding_model.is_empty() {
            cx.problem(
                ".cache.semantic.embedding_model",
                "name the embeddings model",
            );
        }
        let client = reqwest::Client::builder().timeout(timeout).build().ok()?;
        Some(Semantic {
            model: spec.embedding_model.clone(),
            threshold: threshold as f32,
            max_entries: max_entries.clamp(1, MAX_ENTRIES),
            timeout,
            url: format!("{}/embeddings", provider.0.trim_end_matches('/')),
            auth: provider.1.cloned(),
            client,
            index,
        })
    }

    /// The prompt's vector, normalised; `None` when the provider gave none in time.
    pub(crate) async fn embed(&self, texts: &[String]) -> Option<Box<[f32]>> {
        let mut text = texts.join("\n");
        if text.len() > MAX_TEXT_BYTES {
            let mut cut = MAX_TEXT_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        let body = serde_json::to_vec(&json!({"model": self.model, "input": text})).ok()?;
        let mut req = self
            .client
            .post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(a) = &self.auth {
            req = req.header(http::header::AUTHORIZATION, a.clone());
        }
        let read = async {
            let mut resp = req.send().await.ok()?;
            if !resp.status().is_success() {
                return None;
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = resp.chunk().await.ok()? {
                if bytes.len() + chunk.len() > MAX_EMBEDDING_BYTES {
                    return None;
                }
                bytes.extend_from_slice(&chunk);
            }
            Some(bytes)
        };
        let bytes = tokio::time::timeout(self.timeout, read).await.ok()??;
        let v: Value = serde_json::from_slice(&bytes).ok()?;
        let raw = v["data"][0]["embedding"].as_array()?;
        if raw.is_empty() || raw.len() > MAX_DIMENSIONS {
            return None;
        }
        let floats: Vec<f32> = raw
            .iter()
            .map(|x| x.as_f64().unwrap_or(0.0) as f32)
            .collect();
        unit(floats)
    }

    /// The key of the most similar cached answer in `scope` at or above the threshold.
    pub(crate) fn nearest(&self, scope: u64, v: &[f32]) -> Option<(Key, f32)> {
        let vectors = self
            .index
            .vectors
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        vectors
            .iter()
            .filter(|e| e.scope == scope && e.unit.len() == v.len())
            .map(|e| (e.key, dot(&e.unit, v)))
            .filter(|(_, s)| *s >= self.threshold)
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Remembers the vector of a newly cached answer (the oldest goes past the bound).
    pub(crate) fn remember(&self, scope: u64, unit: Arc<[f32]>, key: Key) {
        let mut vectors = self
            .index
            .vectors
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        while vectors.len() >= self.max_entries {
            vectors.pop_back();
        }
        vectors.push_front(Vector { scope, unit, key });
    }
}

/// `v` scaled to length 1 (`None` for the zero vector).
fn unit(mut v: Vec<f32>) -> Option<Box<[f32]>> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return None;
    }
    v.iter_mut().for_each(|x| *x /= norm);
    Some(v.into_boxed_slice())
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The scope of an application and a model.
pub(crate) fn scope(consumer: &str, model: &str) -> u64 {
    turnpike_model::fnv::fnv64(format!("{consumer}\u{0}{model}").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_unit_vectors() {
        let a = unit(vec![1.0, 1.0, 0.0]).expect("unit");
        let b = unit(vec![1.0, 0.9, 0.1]).expect("unit");
        let c = unit(vec![0.0, 0.0, 1.0]).expect("unit");
        assert!(dot(&a, &a) > 0.999);
        assert!(dot(&a, &b) > 0.95);
        assert!(dot(&a, &c).abs() < 1e-6);
        assert!(unit(vec![0.0; 3]).is_none());
    }
}
