//! The snapshot wire format both ends share: a declarative file split into keyed
//! [`Parts`] (each API by its id `{context}/{version}`, subscriptions in [`BUCKETS`]
//! buckets by a stable hash of API and application, every other field as a named
//! section such as `throttling.applications` or `security.revoked`), the structural hash
//! over the parts' hashes, the [`Manifest`] (hashes only) a control plane keeps per
//! version, and the [`Delta`] between a manifest and a newer file. A change to one API of
//! 10,000 ships that API; a subscription change ships one bucket (about 250 entries at
//! 1,000,000 subscriptions).
//!
//! Inside a bucket subscriptions are sorted by API, then application ([`sort_bucket`]).
//! The hash of a part is FNV-1a 64 of its `serde_json` bytes: both ends serialize the same
//! types with the same serializer, so a follower that applied a delta can check it holds
//! exactly the file the control plane announced. Plain data and serde only: no IO.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use turnpike_model::fnv::{fnv64, fnv64_extend, FNV_OFFSET};
use turnpike_model::security::{SecuritySpec, SubscriptionSpec};
use turnpike_model::{api_id, ApiSpec, GatewayFile};

/// Subscription buckets per snapshot. Fixed: a different count on the two ends means a
/// full snapshot.
pub const BUCKETS: u32 = 4096;

/// Why a file could not be split or a delta not applied.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("two APIs share the id {0} (context/version)")]
    DuplicateApi(String),
    #[error("the delta is based on {got}, this gateway holds {held}")]
    WrongBase { got: String, held: String },
    #[error("delta uses {got} subscription buckets, expected {BUCKETS}")]
    Buckets { got: u32 },
    #[error("bucket {0} out of range")]
    BucketRange(u32),
    #[error("section {name} does not fit the file format: {reason}")]
    Section { name: String, reason: String },
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

fn hash_of<T: Serialize>(v: &T) -> Result<u64, WireError> {
    Ok(fnv64(&serde_json::to_vec(v)?))
}

/// The hash as it travels in `x-turnpike-hash`.
pub fn hash_hex(h: u64) -> String {
    format!("{h:016x}")
}

/// The bucket of a subscription.
pub fn bucket_of(s: &SubscriptionSpec) -> u32 {
    let h = fnv64_extend(fnv64(s.api.as_bytes()), &[0]);
    (fnv64_extend(h, s.application.as_bytes()) % u64::from(BUCKETS)) as u32
}

/// A subscription held compactly: API ids, application ids, states and tiers repeat
/// across a million rows, so each is one shared string (64 bytes a row, no allocation of
/// its own, against about 200 for a [`SubscriptionSpec`]). Serializes exactly as a
/// `SubscriptionSpec` does, so hashes agree.
#[derive(Debug, Clone, PartialEq)]
pub struct Sub {
    pub api: Arc<str>,
    pub application: Arc<str>,
    pub state: Arc<str>,
    pub tier: Arc<str>,
}

impl Serialize for Sub {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("SubscriptionSpec", 4)?;
        st.serialize_field("api", &*self.api)?;
        st.serialize_field("application", &*self.application)?;
        st.serialize_field("state", &*self.state)?;
        st.serialize_field("tier", &*self.tier)?;
        st.end()
    }
}

impl Sub {
    pub fn to_spec(&self) -> SubscriptionSpec {
        SubscriptionSpec {
            api: self.api.to_string(),
            application: self.application.to_string(),
            state: self.state.to_string(),
            tier: self.tier.to_string(),
        }
    }
}

/// Shares equal strings while subscriptions are converted.
#[derive(Default)]
pub struct Interner(HashSet<Arc<str>>);

impl Interner {
    pub fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.0.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        self.0.insert(a.clone());
        a
    }
    fn sub(&mut self, s: &SubscriptionSpec) -> Sub {
        Sub {
            api: self.get(&s.api),
            application: self.get(&s.application),
            state: self.get(&s.state),
            tier: self.get(&s.tier),
        }
    }
}

/// The bucket of a compact subscription (same as [`bucket_of`]).
pub fn bucket_of_sub(s: &Sub) -> u32 {
    let h = fnv64_extend(fnv64(s.api.as_bytes()), &[0]);
    (fnv64_extend(h, s.application.as_bytes()) % u64::from(BUCKETS)) as u32
}

/// The order inside a bucket: by API, then application. Both ends keep it (a control
/// plane's incremental index and a split file alike), so a bucket's hash does not depend
/// on the order the file listed its subscriptions in.
pub fn sort_bucket(subs: &mut [Sub]) {
    subs.sort_unstable_by(|x, y| (&x.api, &x.application).cmp(&(&y.api, &y.application)));
}

/// One subscription bucket and its hash.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bucket {
    pub subs: Vec<Sub>,
    pub hash: u64,
}

impl Bucket {
    /// A bucket of these subscriptions, in this order (the order is part of the hash).
    pub fn new(subs: Vec<Sub>) -> Result<Bucket, WireError> {
        let hash = hash_of(&subs)?;
        Ok(Bucket { subs, hash })
    }

    /// Recomputes the hash after `subs` changed.
    pub fn rehash(&mut self) -> Result<(), WireError> {
        self.hash = hash_of(&self.subs)?;
        Ok(())
    }
}

/// A file split into keyed parts, each with its hash. Buckets are shared: a build or a
/// delta that leaves a bucket alone keeps the same allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Parts {
    pub apis: BTreeMap<String, (ApiSpec, u64)>,
    pub buckets: Vec<Arc<Bucket>>,
    pub sections: BTreeMap<String, (Value, u64)>,
}

/// Hashes only: what a control plane remembers of a version it served (kept in its
/// store as JSON, so another control plane or a restarted one can build deltas from it).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u64,
    pub hash: u64,
    pub apis: HashMap<String, u64>,
    pub buckets: Vec<u64>,
    pub sections: BTreeMap<String, u64>,
}

/// What changed between a base version and a newer one. Whole API entries, whole
/// buckets, whole sections; a section set to `null` went back to its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delta {
    pub base: u64,
    pub base_hash: String,
    pub version: u64,
    pub hash: String,
    pub buckets: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apis: Vec<ApiSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_apis: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subscriptions: BTreeMap<u32, Vec<SubscriptionSpec>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sections: BTreeMap<String, Value>,
}

impl Delta {
    /// True when nothing changed (a version bump that did not touch the snapshot).
    pub fn is_empty(&self) -> bool {
        self.apis.is_empty()
            && self.removed_apis.is_empty()
            && self.subscriptions.is_empty()
            && self.sections.is_empty()
    }
}

/// One API's part: its id and hash.
pub fn api_part(spec: ApiSpec) -> Result<(String, (ApiSpec, u64)), WireError> {
    let h = hash_of(&spec)?;
    Ok((api_id(&spec.context, &spec.version), (spec, h)))
}

/// The API parts of a list of entries; ids must be unique.
pub fn api_parts(
    specs: impl IntoIterator<Item = ApiSpec>,
) -> Result<BTreeMap<String, (ApiSpec, u64)>, WireError> {
    let mut apis = BTreeMap::new();
    for a in specs {
        let (id, part) = api_part(a)?;
        if apis.insert(id.clone(), part).is_some() {
            return Err(WireError::DuplicateApi(id));
        }
    }
    Ok(apis)
}

/// Splits `v` (a JSON object) into sections named `{prefix}{key}`.
fn sections_of(
    v: Value,
    prefix: &str,
    out: &mut BTreeMap<String, (Value, u64)>,
) -> Result<(), WireError> {
    if let Value::Object(map) = v {
        for (k, v) in map {
            let h = hash_of(&v)?;
            out.insert(format!("{prefix}{k}"), (v, h));
        }
    }
    Ok(())
}

impl Parts {
    /// Splits a file (borrowed: a million subscriptions are not copied as they are). API
    /// ids must be unique.
    pub fn from_file(file: &GatewayFile) -> Result<Parts, WireError> {
        let mut buckets = vec![Vec::new(); BUCKETS as usize];
        let mut strings = Interner::default();
        for s in &file.security.subscriptions {
            let s = strings.sub(s);
            if let Some(b) = buckets.get_mut(bucket_of_sub(&s) as usize) {
                b.push(s);
            }
        }
        let buckets = buckets
            .into_iter()
            .map(|mut subs| {
                sort_bucket(&mut subs);
                Bucket::new(subs).map(Arc::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::assemble(
            file.format_version,
            api_parts(file.apis.iter().cloned())?,
            &file.security,
            &file.throttling,
            buckets,
        )
    }

    /// Parts from pieces a control plane keeps apart: the API parts (see [`api_parts`];
    /// a builder may keep them from one build to the next), the security section (its
    /// `subscriptions` are ignored: they are `buckets`, [`BUCKETS`] of them) and the
    /// throttling section.
    pub fn assemble(
        format_version: Option<u32>,
        apis: BTreeMap<String, (ApiSpec, u64)>,
        sec: &SecuritySpec,
        throttling: &turnpike_model::throttling::ThrottleSpec,
        buckets: Vec<Arc<Bucket>>,
    ) -> Result<Parts, WireError> {
        if buckets.len() != BUCKETS as usize {
            return Err(WireError::Buckets {
                got: buckets.len() as u32,
            });
        }
        let mut sections = BTreeMap::new();
        let top = GatewayFile {
            format_version,
            ..GatewayFile::default()
        };
        let mut top = serde_json::to_value(&top)?;
        if let Some(m) = top.as_object_mut() {
            m.remove("apis");
        }
        sections_of(top, "", &mut sections)?;
        let security = SecuritySpec {
            issuers: sec.issuers.clone(),
            api_keys: sec.api_keys.clone(),
            basic_users: sec.basic_users.clone(),
            subscriptions: Vec::new(),
            revoked: sec.revoked.clone(),
            revoked_applications: sec.revoked_applications.clone(),
            introspection: sec.introspection.clone(),
        };
        sections_of(serde_json::to_value(&security)?, "security.", &mut sections)?;
        sections_of(
            serde_json::to_value(throttling)?,
            "throttling.",
            &mut sections,
        )?;
        Ok(Parts {
            apis,
            buckets,
            sections,
        })
    }

    /// The structural hash: sections, then APIs (by id), then buckets.
    pub fn hash(&self) -> u64 {
        let mut h = FNV_OFFSET;
        for (name, (_, sh)) in &self.sections {
            h = fnv64_extend(h, name.as_bytes());
            h = fnv64_extend(h, &[0]);
            h = fnv64_extend(h, &sh.to_le_bytes());
        }
        h = fnv64_extend(h, b"\0apis\0");
        for (id, (_, ah)) in &self.apis {
            h = fnv64_extend(h, id.as_bytes());
            h = fnv64_extend(h, &[0]);
            h = fnv64_extend(h, &ah.to_le_bytes());
        }
        self.buckets
            .iter()
            .fold(h, |h, b| fnv64_extend(h, &b.hash.to_le_bytes()))
    }

    pub fn manifest(&self, version: u64) -> Manifest {
        Manifest {
            version,
            hash: self.hash(),
            apis: self
                .apis
                .iter()
                .map(|(k, (_, h))| (k.clone(), *h))
                .collect(),
            buckets: self.buckets.iter().map(|b| b.hash).collect(),
            sections: self
                .sections
                .iter()
                .map(|(k, (_, h))| (k.clone(), *h))
                .collect(),
        }
    }

    /// Subscriptions, bucket by bucket.
    pub fn subscription_count(&self) -> usize {
        self.buckets.iter().map(|b| b.subs.len()).sum()
    }

    /// A fingerprint of the subscriptions alone (the bucket hashes): equal values, equal
    /// subscriptions, so a follower can keep the table it compiled.
    pub fn subscriptions_hash(&self) -> u64 {
        self.buckets
            .iter()
            .fold(FNV_OFFSET, |h, b| fnv64_extend(h, &b.hash.to_le_bytes()))
    }

    /// The file again (APIs in id order, subscriptions in bucket order).
    pub fn to_file(&self) -> Result<GatewayFile, WireError> {
        let mut file = self.to_file_without_subscriptions()?;
        file.security.subscriptions = self.subscriptions_by_api();
        Ok(file)
    }

    /// Every subscription, sorted by API, then application: grouped as a gateway's table
    /// keeps them, and still bucket-consistent (inside each bucket the same relative
    /// order a control plane keeps, so a file made from these parts splits back into the
    /// same buckets and the same hash).
    fn subscriptions_by_api(&self) -> Vec<SubscriptionSpec> {
        let mut by_api: HashMap<&str, Vec<&Sub>> = HashMap::new();
        for s in self.buckets.iter().flat_map(|b| b.subs.iter()) {
            by_api.entry(&*s.api).or_default().push(s);
        }
        let mut apis: Vec<(&str, Vec<&Sub>)> = by_api.into_iter().collect();
        apis.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut out = Vec::with_capacity(self.subscription_count());
        for (_, mut subs) in apis {
            subs.sort_by(|a, b| a.application.cmp(&b.application));
            out.extend(subs.into_iter().map(Sub::to_spec));
        }
        out
    }

    /// The file with `security.subscriptions` left empty (a follower that keeps its
    /// compiled subscription table needs nothing else).
    pub fn to_file_without_subscriptions(&self) -> Result<GatewayFile, WireError> {
        let mut file = self.wide_file()?;
        file.apis = self.apis.values().map(|(a, _)| a.clone()).collect();
        Ok(file)
    }

    /// A fingerprint of the file-wide sections alone (names and hashes): equal values,
    /// equal sections, so a follower can keep what it compiled from them.
    pub fn sections_hash(&self) -> u64 {
        self.sections.iter().fold(FNV_OFFSET, |h, (name, (_, sh))| {
            let h = fnv64_extend(fnv64_extend(h, name.as_bytes()), &[0]);
            fnv64_extend(h, &sh.to_le_bytes())
        })
    }

    /// The file-wide sections as a file: no APIs, no subscriptions.
    pub fn wide_file(&self) -> Result<GatewayFile, WireError> {
        let mut top = Map::new();
        let mut security = Map::new();
        let mut throttling = Map::new();
        for (name, (v, _)) in &self.sections {
            if let Some(k) = name.strip_prefix("security.") {
                security.insert(k.to_string(), v.clone());
            } else if let Some(k) = name.strip_prefix("throttling.") {
                throttling.insert(k.to_string(), v.clone());
            } else {
                top.insert(name.clone(), v.clone());
            }
        }
        top.insert("security".into(), Value::Object(security));
        top.insert("throttling".into(), Value::Object(throttling));
        serde_json::from_value(Value::Object(top)).map_err(|e| WireError::Section {
            name: "file".into(),
            reason: e.to_string(),
        })
    }

    /// What turns `base` into `self`.
    pub fn delta_from(&self, base: &Manifest, version: u64) -> Delta {
        let apis = self
            .apis
            .iter()
            .filter(|(id, (_, h))| base.apis.get(*id) != Some(h))
            .map(|(_, (a, _))| a.clone())
            .collect();
        let removed_apis = base
            .apis
            .keys()
            .filter(|id| !self.apis.contains_key(*id))
            .cloned()
            .collect();
        let subscriptions = self
            .buckets
            .iter()
            .enumerate()
            .filter(|(i, b)| base.buckets.get(*i) != Some(&b.hash))
            .map(|(i, b)| (i as u32, b.subs.iter().map(Sub::to_spec).collect()))
            .collect();
        let mut sections: BTreeMap<String, Value> = self
            .sections
            .iter()
            .filter(|(k, (_, h))| base.sections.get(*k) != Some(h))
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect();
        for k in base.sections.keys() {
            if !self.sections.contains_key(k) {
                sections.insert(k.clone(), Value::Null);
            }
        }
        Delta {
            base: base.version,
            base_hash: hash_hex(base.hash),
            version,
            hash: hash_hex(self.hash()),
            buckets: BUCKETS,
            apis,
            removed_apis,
            subscriptions,
            sections,
        }
    }

    /// Applies a delta in place. On error `self` may be half-changed: drop it and fetch
    /// a full snapshot. The caller compares [`Parts::hash`] with `delta.hash` afterwards.
    pub fn apply(&mut self, delta: Delta) -> Result<(), WireError> {
        if delta.buckets != BUCKETS {
            return Err(WireError::Buckets { got: delta.buckets });
        }
        let held = hash_hex(self.hash());
        if delta.base_hash != held {
            return Err(WireError::WrongBase {
                got: delta.base_hash,
                held,
            });
        }
        for id in &delta.removed_apis {
            self.apis.remove(id);
        }
        for a in delta.apis {
            let h = hash_of(&a)?;
            self.apis.insert(api_id(&a.context, &a.version), (a, h));
        }
        let mut strings = Interner::default();
        for (i, subs) in delta.subscriptions {
            let b = self
                .buckets
                .get_mut(i as usize)
                .ok_or(WireError::BucketRange(i))?;
            *b = Arc::new(Bucket::new(subs.iter().map(|s| strings.sub(s)).collect())?);
        }
        for (name, v) in delta.sections {
            if v.is_null() {
                self.sections.remove(&name);
            } else {
                let h = hash_of(&v)?;
                self.sections.insert(name, (v, h));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn file(n: usize, subs: usize) -> GatewayFile {
        let mut f = GatewayFile::default();
        for i in 0..n {
            f.apis.push(ApiSpec {
                name: format!("api{i}"),
                context: format!("/a{i}"),
                version: "v1".into(),
                endpoints: vec!["http://127.0.0.1:1".into()],
                ..ApiSpec::default()
            });
        }
        for i in 0..subs {
            f.security.subscriptions.push(SubscriptionSpec {
                api: format!("/a{}/v1", i % n.max(1)),
                application: format!("app{i}"),
                state: "ACTIVE".into(),
                tier: "Gold".into(),
            });
        }
        f.security.revoked = vec!["jti-1".into()];
        f
    }

    #[test]
    fn delta_turns_the_base_into_the_new_file() {
        let old = Parts::from_file(&file(50, 500)).unwrap();
        let mut f = file(50, 500);
        f.apis[3].endpoints = vec!["http://127.0.0.1:2".into()];
        f.apis.remove(7);
        f.security.subscriptions[10].state = "BLOCKED".into();
        f.security.revoked.clear();
        f.throttling.unauthenticated_tier = Some("Bronze".into());
        let new = Parts::from_file(&f).unwrap();
        let d = new.delta_from(&old.manifest(1), 2);
        assert_eq!(d.apis.len(), 1);
        assert_eq!(d.removed_apis, vec!["/a7/v1".to_string()]);
        assert_eq!(d.subscriptions.len(), 1);
        assert_eq!(d.sections.len(), 2, "{:?}", d.sections);
        let wire: Delta = serde_json::from_slice(&serde_json::to_vec(&d).unwrap()).unwrap();
        let mut held = old.clone();
        held.apply(wire).unwrap();
        assert_eq!(hash_hex(held.hash()), d.hash);
        assert_eq!(held, new);
        assert_eq!(held.to_file().unwrap().apis.len(), 49);
    }

    #[test]
    fn full_file_round_trips_through_json_with_the_same_hash() {
        let p = Parts::from_file(&file(20, 100)).unwrap();
        let body = serde_json::to_vec(&p.to_file().unwrap()).unwrap();
        let back = Parts::from_file(&serde_json::from_slice(&body).unwrap()).unwrap();
        assert_eq!(back.hash(), p.hash());
        assert_eq!(back.subscription_count(), 100);
    }

    #[test]
    fn subscription_order_in_the_file_does_not_change_the_hash_and_files_come_grouped_by_api() {
        let f = file(30, 600);
        let mut reversed = f.clone();
        reversed.security.subscriptions.reverse();
        let a = Parts::from_file(&f).unwrap();
        let b = Parts::from_file(&reversed).unwrap();
        assert_eq!(a.hash(), b.hash());
        assert_eq!(a, b);
        let out = a.to_file().unwrap().security.subscriptions;
        assert_eq!(out.len(), 600);
        assert!(out
            .windows(2)
            .all(|w| (&w[0].api, &w[0].application) < (&w[1].api, &w[1].application)));
    }

    #[test]
    fn a_compact_subscription_serializes_as_the_file_entry() {
        let spec = SubscriptionSpec {
            api: "/a/v1".into(),
            application: "app\"1".into(),
            state: "ACTIVE".into(),
            tier: "Gold".into(),
        };
        let compact = Interner::default().sub(&spec);
        assert_eq!(
            serde_json::to_vec(&compact).unwrap(),
            serde_json::to_vec(&spec).unwrap()
        );
        assert_eq!(compact.to_spec(), spec);
        assert_eq!(bucket_of_sub(&compact), bucket_of(&spec));
    }

    #[test]
    fn wrong_base_is_refused() {
        let mut a = Parts::from_file(&file(2, 0)).unwrap();
        let b = Parts::from_file(&file(3, 0)).unwrap();
        let d = b.delta_from(&b.manifest(1), 2);
        assert!(matches!(a.apply(d), Err(WireError::WrongBase { .. })));
    }
}
