//! The snapshot builder's subscription index: every subscription row by the store id of
//! its API, reread from SQL only when the store's subscription counter moved
//! (`Store::subscription_changes`), and the wire buckets (`turnpike_sync::wire::Bucket`)
//! of the live APIs' subscriptions, kept from build to build. A build that changed no
//! subscription costs the APIs that went live, went away or changed context/version
//! (their rows move in or out of their buckets), not a million rows: publishing a new API
//! touches no bucket at all.
//!
//! Inside a bucket subscriptions are sorted by API id, then application
//! (`turnpike_sync::wire::sort_bucket`): the order a fresh index, an incrementally updated
//! one and a gateway splitting the full file all reach, so the bucket hashes (and the
//! snapshot's structural hash) do not depend on the order changes happened in.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use turnpike_store::SubscriptionRow;
use turnpike_sync::wire::{bucket_of_sub, sort_bucket, Bucket, Interner, Sub, WireError, BUCKETS};

/// One subscription of an API, its strings shared.
#[derive(Debug, Clone)]
struct Row {
    application: Arc<str>,
    state: Arc<str>,
    tier: Arc<str>,
}

/// What the builder read for this update.
pub enum Reread {
    /// The counter did not move.
    Nothing,
    /// Every row, at this subscription log position.
    All {
        rows: Vec<SubscriptionRow>,
        log: u64,
    },
    /// The rows of these APIs (store ids), whose subscriptions changed up to `log`.
    Apis {
        apis: Vec<String>,
        rows: Vec<SubscriptionRow>,
        log: u64,
    },
}

/// The index; `Default` is empty and rereads at the first build.
#[derive(Default)]
pub struct SubsIndex {
    /// The store's counter when `by_api` was last brought up to date; `None`: never read.
    changes: Option<u64>,
    /// The subscription log position `by_api` reflects.
    log: u64,
    by_api: HashMap<String, Vec<Row>>,
    /// The live APIs whose rows are in `buckets`: store id -> snapshot id.
    placed: HashMap<String, Arc<str>>,
    buckets: Vec<Arc<Bucket>>,
    strings: Interner,
}

/// What one update did, for the build log.
#[derive(Debug, Default, Clone, Copy)]
pub struct Update {
    pub reread: bool,
    /// APIs whose rows were reread (the log named them).
    pub apis_reread: usize,
    pub rows: usize,
    pub buckets_changed: usize,
}

impl SubsIndex {
    /// The counter value the index was read at (the builder rereads when it differs).
    pub fn changes(&self) -> Option<u64> {
        self.changes
    }

    /// The subscription log position the index reflects (`None` before the first read).
    pub fn log_position(&self) -> Option<u64> {
        self.changes.map(|_| self.log)
    }

    /// Brings the buckets up to date with `live` (store id -> snapshot id of every live
    /// API) and with what was reread at counter `changes`.
    pub fn update(
        &mut self,
        changes: u64,
        reread: Reread,
        live: &HashMap<String, String>,
    ) -> Result<Update, WireError> {
        let mut out = Update::default();
        let mut dirty = BTreeSet::new();
        match reread {
            Reread::Nothing => {}
            Reread::All { rows, log } => {
                self.load(changes, rows);
                self.log = log;
                out.reread = true;
            }
            Reread::Apis { apis, rows, log } => {
                self.replace_apis(&apis, rows, &mut dirty);
                self.changes = Some(changes);
                self.log = log;
                out.apis_reread = apis.len();
            }
        }
        if self.buckets.len() != BUCKETS as usize {
            // One shared empty bucket: the first write to a bucket copies it.
            let empty = Arc::new(Bucket::new(Vec::new())?);
            self.buckets = (0..BUCKETS).map(|_| empty.clone()).collect();
            self.placed.clear();
        }
        // Out: APIs no longer live, or live under another id.
        let gone: Vec<String> = self
            .placed
            .iter()
            .filter(|(id, sid)| live.get(*id).map(String::as_str) != Some(&***sid))
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            self.unplace(&id, &mut dirty);
        }
        // In: live APIs not placed yet.
        for (id, sid) in live {
            if self.placed.contains_key(id) {
                continue;
            }
            let sid: Arc<str> = self.strings.get(sid);
            for row in self.by_api.get(id).into_iter().flatten() {
                let s = sub(&sid, row);
                let b = bucket_of_sub(&s) as usize;
                if let Some(bucket) = self.buckets.get_mut(b) {
                    Arc::make_mut(bucket).subs.push(s);
                    dirty.insert(b);
                }
            }
            self.placed.insert(id.clone(), sid);
        }
        for b in &dirty {
            if let Some(bucket) = self.buckets.get_mut(*b) {
                let bucket = Arc::make_mut(bucket);
                sort_bucket(&mut bucket.subs);
                bucket.rehash()?;
            }
        }
        out.rows = self.buckets.iter().map(|b| b.subs.len()).sum();
        out.buckets_changed = dirty.len();
        Ok(out)
    }

    /// The buckets as they stand (shared with the index: cheap to take per build).
    pub fn buckets(&self) -> Vec<Arc<Bucket>> {
        self.buckets.clone()
    }

    /// New rows for these APIs: the placed ones leave their buckets (and come back with
    /// their new rows when still live, by the caller's placing loop).
    fn replace_apis(
        &mut self,
        apis: &[String],
        rows: Vec<SubscriptionRow>,
        dirty: &mut BTreeSet<usize>,
    ) {
        for id in apis {
            self.unplace(id, dirty);
            self.by_api.remove(id);
        }
        self.add_rows(rows);
    }

    /// Takes a placed API's rows out of their buckets.
    fn unplace(&mut self, id: &str, dirty: &mut BTreeSet<usize>) {
        let Some(sid) = self.placed.remove(id) else {
            return;
        };
        for row in self.by_api.get(id).into_iter().flatten() {
            let b = bucket_of_sub(&sub(&sid, row)) as usize;
            if let Some(bucket) = self.buckets.get_mut(b) {
                Arc::make_mut(bucket)
                    .subs
                    .retain(|s| !(s.api == sid && s.application == row.application));
                dirty.insert(b);
            }
        }
    }

    /// Files rows under their APIs, strings shared.
    fn add_rows(&mut self, rows: Vec<SubscriptionRow>) {
        for r in rows {
            let row = Row {
                application: self.strings.get(&r.application_id),
                state: self.strings.get(&r.state),
                tier: self.strings.get(&r.tier),
            };
            self.by_api.entry(r.api_id).or_default().push(row);
        }
    }

    fn load(&mut self, changes: u64, rows: Vec<SubscriptionRow>) {
        self.strings = Interner::default();
        self.by_api.clear();
        self.placed.clear();
        self.buckets.clear();
        self.add_rows(rows);
        self.changes = Some(changes);
    }
}

fn sub(sid: &Arc<str>, row: &Row) -> Sub {
    Sub {
        api: sid.clone(),
        application: row.application.clone(),
        state: row.state.clone(),
        tier: row.tier.clone(),
    }
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    fn rows(apis: usize, apps: usize) -> Vec<SubscriptionRow> {
        (0..apis)
            .flat_map(|a| {
                (0..apps).map(move |p| SubscriptionRow {
                    api_id: format!("id{a}"),
                    application_id: format!("app{p}"),
                    state: "ACTIVE".into(),
                    tier: "Gold".into(),
                })
            })
            .collect()
    }

    fn live(ids: &[usize]) -> HashMap<String, String> {
        ids.iter()
            .map(|i| (format!("id{i}"), format!("/a{i}/v1")))
            .collect()
    }

    /// An index that read `rows` whole at counter 1, log position `log`.
    fn loaded(log: u64, rows: Vec<SubscriptionRow>, live: &HashMap<String, String>) -> SubsIndex {
        let mut ix = SubsIndex::default();
        ix.update(1, Reread::All { log, rows }, live).unwrap();
        ix
    }

    fn hashes(ix: &SubsIndex) -> Vec<u64> {
        ix.buckets().iter().map(|b| b.hash).collect()
    }

    #[test]
    fn incremental_updates_reach_the_buckets_a_fresh_index_builds() {
        let mut inc = loaded(0, rows(10, 30), &live(&[0, 1, 2, 3]));
        // 4 and 5 go live, 1 goes away, 2 changes its snapshot id.
        let mut now = live(&[0, 3, 4, 5]);
        now.insert("id2".into(), "/renamed/v2".into());
        let u = inc.update(1, Reread::Nothing, &now).unwrap();
        assert!(!u.reread);
        assert!(u.buckets_changed > 0);
        let fresh = loaded(0, rows(10, 30), &now);
        assert_eq!(hashes(&inc), hashes(&fresh));
        assert_eq!(u.rows, 5 * 30);
        let apis: BTreeSet<String> = inc
            .buckets()
            .iter()
            .flat_map(|b| b.subs.iter().map(|s| s.api.to_string()))
            .collect();
        assert!(
            apis.contains("/renamed/v2") && !apis.contains("/a1/v1") && !apis.contains("/a2/v1")
        );
    }

    #[test]
    fn rereading_one_api_reaches_the_buckets_a_fresh_index_builds() {
        let mut inc = loaded(5, rows(6, 40), &live(&[0, 1, 2, 3]));
        // API 2 loses its first 10 subscriptions and one is blocked; API 5 (not live)
        // gains none it shows.
        let mut now: Vec<SubscriptionRow> = rows(6, 40)
            .into_iter()
            .filter(|r| !(r.api_id == "id2" && r.application_id.len() == 4))
            .collect();
        if let Some(r) = now.iter_mut().find(|r| r.api_id == "id2") {
            r.state = "BLOCKED".into();
        }
        let changed: Vec<SubscriptionRow> =
            now.iter().filter(|r| r.api_id == "id2").cloned().collect();
        let u = inc
            .update(
                2,
                Reread::Apis {
                    apis: vec!["id2".into(), "id5".into()],
                    rows: changed,
                    log: 9,
                },
                &live(&[0, 1, 2, 3]),
            )
            .unwrap();
        assert!(!u.reread);
        assert_eq!(u.apis_reread, 2);
        assert!(u.buckets_changed > 0 && u.buckets_changed < 80);
        assert_eq!((inc.changes(), inc.log_position()), (Some(2), Some(9)));
        let mut fresh = SubsIndex::default();
        fresh
            .update(2, Reread::All { log: 9, rows: now }, &live(&[0, 1, 2, 3]))
            .unwrap();
        assert_eq!(hashes(&inc), hashes(&fresh));
        assert_eq!(u.rows, 3 * 40 + 30);
    }

    #[test]
    fn a_new_api_without_subscriptions_touches_no_bucket() {
        let mut ix = loaded(0, rows(5, 20), &live(&[0, 1, 2]));
        let before = ix.buckets();
        let u = ix
            .update(1, Reread::Nothing, &live(&[0, 1, 2, 99]))
            .unwrap();
        assert_eq!(u.buckets_changed, 0);
        assert!(before
            .iter()
            .zip(ix.buckets())
            .all(|(a, b)| Arc::ptr_eq(a, &b)));
    }

    #[test]
    fn buckets_held_by_an_older_build_are_not_changed_under_it() {
        let mut ix = loaded(0, rows(3, 50), &live(&[0, 1, 2]));
        let old = ix.buckets();
        let old_hashes: Vec<u64> = old.iter().map(|b| b.hash).collect();
        ix.update(1, Reread::Nothing, &live(&[0])).unwrap();
        assert_eq!(old.iter().map(|b| b.hash).collect::<Vec<_>>(), old_hashes);
        assert_eq!(old.iter().map(|b| b.subs.len()).sum::<usize>(), 150);
        assert_eq!(ix.buckets().iter().map(|b| b.subs.len()).sum::<usize>(), 50);
    }
}
