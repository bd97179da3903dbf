//! Carries a follower's compiled subscription table across a delta: the rows the delta
//! changed are taken out of the old table and put back from the new parts, every API the
//! change does not touch keeps its map (shared, not copied). A changed bucket is compared
//! row by row with the one it replaces (both are sorted by API, then application), so a
//! subscription change at a million rows costs the rows that differ, and only the APIs
//! those rows name get a new map (and a recompiled chain: `turnpike_config::compile_changes`
//! reuses an API only when its map is the same allocation).

use std::cmp::Ordering;
use std::sync::Arc;

use turnpike_config::{Subscription, Subscriptions};
use turnpike_model::SubscriptionState;

use crate::wire::{Bucket, Sub};

/// The table for `after`, made from `table` (compiled from `before`). `None` when a
/// changed row holds a subscription the table cannot take (an unknown state): the
/// caller compiles the whole file, which names the problem.
pub(crate) fn carry(
    table: &Arc<Subscriptions>,
    before: &[Arc<Bucket>],
    after: &[Arc<Bucket>],
) -> Option<Arc<Subscriptions>> {
    if before.len() != after.len() {
        return None;
    }
    let mut removed: Vec<&Sub> = Vec::new();
    let mut upserts = Vec::new();
    let changed = before
        .iter()
        .zip(after)
        .filter(|(old, new)| !Arc::ptr_eq(old, new) && old.hash != new.hash);
    for (old, new) in changed {
        for row in diff(&old.subs, &new.subs) {
            match row {
                Row::Gone(s) => removed.push(s),
                Row::Put(s) => upserts.push(Subscription {
                    api_id: s.api.to_string(),
                    application_id: s.application.to_string(),
                    state: SubscriptionState::parse(&s.state)?,
                    tier: Arc::clone(&s.tier),
                }),
            }
        }
    }
    if removed.is_empty() && upserts.is_empty() {
        return Some(Arc::clone(table));
    }
    let removed = removed.into_iter().map(|s| (&*s.api, &*s.application));
    Some(Arc::new(table.with_changes(removed, upserts)))
}

/// One row that differs between two versions of a bucket.
enum Row<'a> {
    /// In the old bucket only.
    Gone(&'a Sub),
    /// New, or changed (state or tier).
    Put(&'a Sub),
}

/// The rows that differ between `old` and `new`, both sorted by API, then application
/// (`wire::sort_bucket`): one merge pass.
fn diff<'a>(old: &'a [Sub], new: &'a [Sub]) -> Vec<Row<'a>> {
    let key = |s: &'a Sub| (&*s.api, &*s.application);
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < old.len() || j < new.len() {
        let order = match (old.get(i), new.get(j)) {
            (Some(o), Some(n)) => key(o).cmp(&key(n)),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                out.push(Row::Gone(&old[i]));
                i += 1;
            }
            Ordering::Greater => {
                out.push(Row::Put(&new[j]));
                j += 1;
            }
            Ordering::Equal => {
                if old[i] != new[j] {
                    out.push(Row::Put(&new[j]));
                }
                i += 1;
                j += 1;
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::wire::sort_bucket;

    fn sub(api: &str, app: &str, state: &str) -> Sub {
        Sub {
            api: api.into(),
            application: app.into(),
            state: state.into(),
            tier: "Gold".into(),
        }
    }

    fn bucket(mut subs: Vec<Sub>) -> Arc<Bucket> {
        sort_bucket(&mut subs);
        Arc::new(Bucket::new(subs).unwrap())
    }

    /// One changed row in a bucket of rows of many APIs copies that API's map only.
    #[test]
    fn a_changed_row_copies_only_its_apis_map() {
        let rows = |state_of_b: &str| {
            vec![
                sub("/a/v1", "x", "ACTIVE"),
                sub("/b/v1", "x", state_of_b),
                sub("/c/v1", "y", "ACTIVE"),
            ]
        };
        let before = vec![bucket(rows("ACTIVE"))];
        let after = vec![bucket(rows("BLOCKED"))];
        let table = Arc::new(Subscriptions::new(before[0].subs.iter().map(|s| {
            Subscription {
                api_id: s.api.to_string(),
                application_id: s.application.to_string(),
                state: SubscriptionState::parse(&s.state).unwrap(),
                tier: s.tier.clone(),
            }
        })));
        let next = carry(&table, &before, &after).unwrap();
        assert!(next.shares_api(&table, "/a/v1"));
        assert!(next.shares_api(&table, "/c/v1"));
        assert!(!next.shares_api(&table, "/b/v1"));
        assert_eq!(next.len(), 3);
    }

    #[test]
    fn diff_finds_gone_new_and_changed_rows() {
        let old = [
            sub("a", "1", "ACTIVE"),
            sub("a", "2", "ACTIVE"),
            sub("b", "1", "ACTIVE"),
        ];
        let new = [
            sub("a", "2", "BLOCKED"),
            sub("b", "1", "ACTIVE"),
            sub("c", "1", "ACTIVE"),
        ];
        let rows: Vec<String> = diff(&old, &new)
            .into_iter()
            .map(|r| match r {
                Row::Gone(s) => format!("-{}{}", s.api, s.application),
                Row::Put(s) => format!("+{}{}{}", s.api, s.application, s.state),
            })
            .collect();
        assert_eq!(rows, ["-a1", "+a2BLOCKED", "+c1ACTIVE"]);
    }
}
