//! An AI API's answer cache (`ai.cache:`): whole answers to deterministic requests
//! reused for the same application. The exact level keys an answer by the SHA-256 of
//! the application, the front, and the request body (after PII masking, `stream` left
//! out: serde_json's maps are sorted, so the same members in any order are one key); it
//! holds non-streamed chat, completions and messages calls with `temperature: 0` or a
//! `seed`, and embeddings. The semantic level (`semantic.rs`) finds a cached answer of a
//! similar prompt. Entries live in a byte-bounded `quick_cache` per API, kept in the
//! gateway's `Runtime` by the API's id so a snapshot swap keeps them; each expires after
//! the TTL (checked on read, on the runtime's clock).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use foldhash::fast::RandomState;
use quick_cache::sync::Cache;
use quick_cache::Weighter;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use turnpike_model::ai_guard::AiCacheSpec;
use turnpike_model::clock::Clock;
use turnpike_policy::spec::size::parse_size;
use turnpike_policy::{BuildCx, RequestCtx};

use crate::request::Front;
use crate::semantic::{Index, Semantic};

const DEFAULT_TTL: Duration = Duration::from_secs(300);
const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
const DEFAULT_MAX_SIZE: u64 = 16 << 20;
/// Bytes charged per entry besides its body (key, times, model).
const ENTRY_OVERHEAD: u64 = 128;

pub(crate) type Key = [u8; 32];

/// One cached answer, in the front's shape, placeholders still masked.
pub(crate) struct Entry {
    pub(crate) body: Bytes,
    pub(crate) expires_ns: u64,
    pub(crate) model: Option<Arc<str>>,
    pub(crate) provider: Arc<str>,
}

#[derive(Clone)]
struct ByBytes;

impl Weighter<Key, Arc<Entry>> for ByBytes {
    fn weight(&self, _: &Key, e: &Arc<Entry>) -> u64 {
        e.body.len() as u64 + ENTRY_OVERHEAD
    }
}

/// One API's cached answers.
pub(crate) struct Store {
    entries: Cache<Key, Arc<Entry>, ByBytes, RandomState>,
    semantic: Arc<Index>,
}

/// Every AI API's store, in the gateway's runtime.
#[derive(Default)]
pub(crate) struct AiCaches {
    apis: Mutex<HashMap<String, Arc<Store>>>,
}

/// An AI API's compiled cache settings and its store.
pub(crate) struct AnswerCache {
    pub(crate) store: Arc<Store>,
    ttl: Duration,
    clock: Arc<dyn Clock>,
    pub(crate) semantic: Option<Semantic>,
}

impl AnswerCache {
    pub(crate) fn build(
        spec: &AiCacheSpec,
        api_id: &str,
        provider: (&str, Option<&http::HeaderValue>),
        cx: &mut BuildCx<'_>,
    ) -> AnswerCache {
        let ttl =
            crate::settings::duration(cx, ".cache.ttl", spec.ttl.as_ref(), DEFAULT_TTL, MAX_TTL);
        let max_size = match spec.max_size.as_ref().map(parse_size) {
            None => DEFAULT_MAX_SIZE,
            Some(Ok(Some(n))) if n > 0 => n,
            Some(Ok(_)) => {
                cx.problem(
                    ".cache.max_size",
                    "a cache needs a bound, such as \"16MiB\"",
                );
                DEFAULT_MAX_SIZE
            }
            Some(Err(e)) => {
                cx.problem(".cache.max_size", e);
                DEFAULT_MAX_SIZE
            }
        };
        let caches = cx.runtime.get_or_init(AiCaches::default);
        let store = caches.for_api(api_id, max_size);
        let semantic = spec
            .semantic
            .as_ref()
            .and_then(|s| Semantic::build(s, provider, store.semantic.clone(), cx));
        AnswerCache {
            store,
            ttl,
            clock: cx.runtime.clock().clone(),
            semantic,
        }
    }

    /// The live entry under `key`.
    pub(crate) fn get(&self, key: &Key) -> Option<Arc<Entry>> {
        let e = self.store.entries.get(key)?;
        if e.expires_ns <= self.clock.now().as_nanos() {
            self.store.entries.remove(key);
            return None;
        }
        Some(e)
    }

    /// Keeps `body` under `key` for the TTL.
    pub(crate) fn put(&self, key: Key, body: Bytes, model: Option<Arc<str>>, provider: Arc<str>) {
        let expires_ns = self
            .clock
            .now()
            .as_nanos()
            .saturating_add(self.ttl.as_nanos() as u64);
        let entry = Arc::new(Entry {
            body,
            expires_ns,
            model,
            provider,
        });
        self.store.entries.insert(key, entry);
    }
}

impl AiCaches {
    fn for_api(&self, id: &str, max_size: u64) -> Arc<Store> {
        let mut apis = self.apis.lock().unwrap_or_else(PoisonError::into_inner);
        let store = apis.entry(id.to_owned()).or_insert_with(|| {
            Arc::new(Store {
                entries: Cache::with(
                    1024,
                    max_size,
                    ByBytes,
                    RandomState::default(),
                    Default::default(),
                ),
                semantic: Arc::default(),
            })
        });
        if store.entries.capacity() != max_size {
            store.entries.set_capacity(max_size);
        }
        store.clone()
    }
}

/// Whether a call's answer may be reused: a whole answer of a deterministic request.
pub(crate) fn cacheable(front: Front, parsed: &Map<String, Value>) -> bool {
    let streamed = parsed.get("stream").and_then(Value::as_bool) == Some(true);
    let zero = parsed
        .get("temperature")
        .and_then(Value::as_f64)
        .is_some_and(|t| t == 0.0);
    let seeded = parsed.get("seed").is_some_and(|s| !s.is_null());
    match front {
        Front::Embeddings => true,
        Front::Chat | Front::Responses | Front::Completions | Front::Messages => {
            !streamed && (zero || seeded)
        }
        _ => false,
    }
}

/// Who the answer is cached for: the calling application (or the credential's subject,
/// or nobody on an open API).
pub(crate) fn consumer(ctx: &RequestCtx) -> String {
    ctx.auth.as_ref().map_or_else(String::new, |a| {
        let id = &a.identity;
        id.application_id
            .clone()
            .unwrap_or_else(|| format!("subject:{}", id.subject))
    })
}

/// The exact key of a request.
pub(crate) fn key(consumer: &str, front: Front, parsed: &Map<String, Value>) -> Key {
    let mut h = Sha256::new();
    h.update(consumer.as_bytes());
    h.update([0, front as u8]);
    for (k, v) in parsed {
        if k == "stream" || k == "stream_options" {
            continue;
        }
        h.update(k.as_bytes());
        h.update([0]);
        h.update(v.to_string().as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}
