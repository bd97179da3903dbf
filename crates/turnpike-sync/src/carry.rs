//! Carries a follower's compiled subscription table across a delta: the buckets the delta
//! changed are taken out of the old table and put back from the new parts, every API the
//! change does not touch keeps its map (shared, not copied). A subscription change at a
//! million rows then costs the few hundred rows of its bucket, not a recompile of all.

use std::sync::Arc;

use turnpike_config::{Subscription, Subscriptions};
use turnpike_model::SubscriptionState;

use crate::wire::Bucket;

/// The table for `after`, made from `table` (compiled from `before`). `None` when a
/// changed bucket holds a subscription the table cannot take (an unknown state): the
/// caller compiles the whole file, which names the problem.
pub(crate) fn carry(
    table: &Arc<Subscriptions>,
    before: &[Arc<Bucket>],
    after: &[Arc<Bucket>],
) -> Option<Arc<Subscriptions>> {
    if before.len() != after.len() {
        return None;
    }
    let changed: Vec<(&Bucket, &Bucket)> = before
        .iter()
        .zip(after)
        .filter(|(old, new)| !Arc::ptr_eq(old, new) && old.hash != new.hash)
        .map(|(old, new)| (&**old, &**new))
        .collect();
    if changed.is_empty() {
        return Some(Arc::clone(table));
    }
    let mut upserts = Vec::new();
    for (_, new) in &changed {
        for s in &new.subs {
            upserts.push(Subscription {
                api_id: s.api.to_string(),
                application_id: s.application.to_string(),
                state: SubscriptionState::parse(&s.state)?,
                tier: Arc::clone(&s.tier),
            });
        }
    }
    let removed = changed
        .iter()
        .flat_map(|(old, _)| old.subs.iter())
        .map(|s| (&*s.api, &*s.application));
    Some(Arc::new(table.with_changes(removed, upserts)))
}
