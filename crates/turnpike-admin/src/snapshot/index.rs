//! The snapshot builder's API entries: each live API's file entry (`ApiSpec`) and wire
//! hash, kept from build to build and redone only for APIs whose row revision (moved by
//! every write to the row) or stored security setting changed. A build at 10,000 APIs
//! reads two columns of each and the whole row of the few that changed.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};
use turnpike_model::ApiSpec;
use turnpike_store::Api;
use turnpike_sync::wire::{api_part, WireError};

/// One live API as the last build saw it.
struct Entry {
    revision: i64,
    /// The stored `auth:` JSON (`None`: the default).
    auth: Option<String>,
    snapshot_id: String,
    spec: ApiSpec,
    hash: u64,
}

/// Why an entry could not be made.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("API {id}: stored security is not valid: {source}")]
    Auth {
        id: String,
        source: serde_json::Error,
    },
    #[error("API {id} does not make a file entry: {source}")]
    Spec {
        id: String,
        source: serde_json::Error,
    },
    #[error("{0}")]
    Wire(#[from] WireError),
}

/// The index; `Default` is empty (the first build makes every entry).
#[derive(Default)]
pub struct ApiIndex {
    entries: HashMap<String, Entry>,
    /// Whether entries carry `auth:` (the control plane runs the key manager).
    secured: bool,
}

impl ApiIndex {
    /// Entries carry `auth:` when `secured`; a change of that empties the index.
    pub fn secure(&mut self, secured: bool) {
        if self.secured != secured {
            self.entries.clear();
            self.secured = secured;
        }
    }

    /// The ids among `live` (store id, revision) whose entry is missing or stale.
    pub fn stale(&self, live: &[(String, i64)], auth: &HashMap<String, String>) -> Vec<String> {
        live.iter()
            .filter(|(id, rev)| {
                self.entries
                    .get(id)
                    .is_none_or(|e| e.revision != *rev || e.auth.as_ref() != auth.get(id))
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Drops the APIs that are no longer live and (re)makes the entries of `fetched`
    /// (the rows [`ApiIndex::stale`] named). Returns how many entries were made.
    pub fn update(
        &mut self,
        live: &[(String, i64)],
        fetched: Vec<Api>,
        auth: &HashMap<String, String>,
    ) -> Result<usize, IndexError> {
        let live_ids: HashMap<&str, i64> = live.iter().map(|(i, r)| (i.as_str(), *r)).collect();
        self.entries
            .retain(|id, _| live_ids.contains_key(id.as_str()));
        let mut made = 0;
        for api in fetched {
            // A row that moved on since the revision list was read waits for the next build.
            if live_ids.get(api.id.as_str()) != Some(&api.revision) {
                continue;
            }
            let stored = auth.get(&api.id).cloned();
            let spec = entry_spec(&api, self.secured, stored.as_deref())?;
            let (snapshot_id, (spec, hash)) = api_part(spec)?;
            self.entries.insert(
                api.id.clone(),
                Entry {
                    revision: api.revision,
                    auth: stored,
                    snapshot_id,
                    spec,
                    hash,
                },
            );
            made += 1;
        }
        Ok(made)
    }

    /// The API parts of the file (keyed by `{context}/{version}`).
    pub fn parts(&self) -> BTreeMap<String, (ApiSpec, u64)> {
        self.entries
            .values()
            .map(|e| (e.snapshot_id.clone(), (e.spec.clone(), e.hash)))
            .collect()
    }

    /// Store id -> `{context}/{version}` of every live API.
    pub fn snapshot_ids(&self) -> HashMap<String, String> {
        self.entries
            .iter()
            .map(|(id, e)| (id.clone(), e.snapshot_id.clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// An API's file entry: resources with their scopes, and, when `secured`, its `auth:`
/// (the stored setting, else the default: OAuth2 and a subscription, as in WSO2).
pub(crate) fn entry_spec(
    api: &Api,
    secured: bool,
    stored_auth: Option<&str>,
) -> Result<ApiSpec, IndexError> {
    // Built as JSON and parsed back: the file format's own checks apply.
    let mut value = json!({
        "name": api.name,
        "context": api.context,
        "version": api.version,
        "default": api.is_default_version,
        "endpoints": api.endpoints,
        "resources": crate::security::resource_specs(api),
    });
    if !api.sandbox_endpoints.is_empty() {
        value["sandbox_endpoints"] = json!(api.sandbox_endpoints);
    }
    if let Some(obj) = value.as_object_mut() {
        for (rest, file) in turnpike_model::rest::OPTION_FIELDS {
            if let Some(v) = api.options.get(rest) {
                obj.insert(file.into(), v.clone());
            }
        }
        // A deprecated API's responses say so (Deprecation / Sunset headers); without a
        // date of its own, it is deprecated since its row last changed.
        if api.lifecycle_status == turnpike_store::LifecycleState::Blocked {
            obj.insert("lifecycle".into(), json!("BLOCKED"));
        }
        if api.lifecycle_status == turnpike_store::LifecycleState::Deprecated {
            obj.insert("lifecycle".into(), json!("DEPRECATED"));
            let mut d = obj.get("deprecation").cloned().unwrap_or_else(|| json!({}));
            if d.get("since").is_none_or(Value::is_null) {
                d["since"] = json!(utc_second(api.last_updated_time));
            }
            obj.insert("deprecation".into(), d);
        }
        let cors = api.options.get(turnpike_model::rest::cors::FIELD);
        if let Some(entry) = cors.and_then(crate::service::cors_body::policy) {
            obj.insert("policies".into(), json!([entry]));
        }
    }
    if let (Some(soap), Some(obj)) = (
        crate::service::api_body::stored_spec(api),
        value.as_object_mut(),
    ) {
        obj.insert("soap".into(), json!(soap));
    }
    if secured {
        let auth = match stored_auth {
            Some(json) => serde_json::from_str(json).map_err(|source| IndexError::Auth {
                id: api.id.clone(),
                source,
            })?,
            None => turnpike_model::security::ApiAuthSpec::default(),
        };
        if let Some(obj) = value.as_object_mut() {
            obj.insert("auth".into(), json!(auth));
        }
    }
    serde_json::from_value(value).map_err(|source| IndexError::Spec {
        id: api.id.clone(),
        source,
    })
}

/// Milliseconds since the epoch as `2026-06-30T12:00:00Z` (civil-from-days).
fn utc_second(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = turnpike_model::clock::civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_store::LifecycleState;

    fn api(i: usize, revision: i64) -> Api {
        Api {
            id: format!("id{i}"),
            name: format!("api{i}"),
            context: format!("/a{i}"),
            version: "v1".into(),
            is_default_version: false,
            lifecycle_status: LifecycleState::Published,
            api_type: "HTTP".into(),
            description: String::new(),
            endpoints: vec!["http://127.0.0.1:9".into()],
            sandbox_endpoints: Vec::new(),
            resources: Vec::new(),
            policies: Vec::new(),
            options: Default::default(),
            definition: None,
            provider: "admin".into(),
            revision,
            created_time: 0,
            last_updated_time: 0,
        }
    }

    #[test]
    fn a_deprecated_api_ships_its_lifecycle_and_since_date() {
        let mut a = api(1, 1);
        a.lifecycle_status = LifecycleState::Deprecated;
        a.last_updated_time = 784_111_777_000;
        let spec = entry_spec(&a, false, None).unwrap();
        assert_eq!(spec.lifecycle.as_deref(), Some("DEPRECATED"));
        let d = spec.deprecation.unwrap();
        assert_eq!(d.since.as_deref(), Some("1994-11-06T08:49:37Z"));
    }

    #[test]
    fn only_changed_revisions_and_security_settings_are_refetched() {
        let mut ix = ApiIndex::default();
        ix.secure(true);
        let live: Vec<(String, i64)> = (0..5).map(|i| (format!("id{i}"), 1)).collect();
        let mut auth = HashMap::new();
        assert_eq!(ix.stale(&live, &auth).len(), 5);
        ix.update(&live, (0..5).map(|i| api(i, 1)).collect(), &auth)
            .unwrap();
        assert!(ix.stale(&live, &auth).is_empty());
        let before = ix.parts();

        let mut live2 = live.clone();
        live2[2].1 = 2; // id2 was written
        live2.remove(4); // id4 is no longer live
        auth.insert("id1".to_string(), "\"none\"".to_string());
        let stale = ix.stale(&live2, &auth);
        assert_eq!(stale, vec!["id1".to_string(), "id2".to_string()]);
        let mut a2 = api(2, 2);
        a2.endpoints = vec!["http://127.0.0.1:10".into()];
        ix.update(&live2, vec![api(1, 1), a2], &auth).unwrap();
        let after = ix.parts();
        assert_eq!(after.len(), 4);
        assert!(!after.contains_key("/a4/v1"));
        assert_eq!(after["/a0/v1"], before["/a0/v1"]);
        assert_ne!(after["/a1/v1"].1, before["/a1/v1"].1, "auth change");
        assert!(after["/a1/v1"].0.auth.as_ref().is_some_and(|a| a.is_open()));
        assert_ne!(after["/a2/v1"].1, before["/a2/v1"].1, "row change");
        // The hash is the wire hash of the entry, as a gateway computes it.
        let (_, (_, h)) = api_part(after["/a2/v1"].0.clone()).unwrap();
        assert_eq!(h, after["/a2/v1"].1);
    }

    #[test]
    fn a_row_newer_than_the_revision_list_waits_for_the_next_build() {
        let mut ix = ApiIndex::default();
        let live = vec![("id0".to_string(), 1)];
        ix.update(&live, vec![api(0, 2)], &HashMap::new()).unwrap();
        assert_eq!(ix.len(), 0);
        assert_eq!(ix.stale(&live, &HashMap::new()), vec!["id0".to_string()]);
    }
}
