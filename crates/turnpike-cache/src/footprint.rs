//! What a stored entry truly holds in memory, which is what the store's bound counts.
//!
//! The bound (`max_size`) is a promise about the gateway's memory, so an entry is
//! charged every allocation it keeps alive, not only its body and header bytes: the
//! variant itself, its header map's buckets and index (by capacity), the one buffer
//! its values and body were copied into ([`crate::detach`]), the request values it
//! kept, its tags, a built RFC policy, and each allocation's overhead in the
//! allocator. Charging ~0.7 KiB for what held ~1.5 KiB let a store bounded at 256 MiB
//! grow the gateway to 530 MB (bench/RESULTS.md, session 18); the gateway test
//! `cache_memory.rs` counts an entry's live allocations against this charge.

use crate::detach::{Detached, Field};

/// What the allocator adds to an allocation, on average (its size-class rounding and
/// bookkeeping).
pub(crate) const PER_ALLOCATION: usize = 16;
/// A store slot besides its key's and value's own allocations: quick_cache's entry
/// (key, value, state) and its table's index.
pub(crate) const STORE_SLOT: usize = 80;
/// One header of a map: `http`'s bucket (hash, name, value, links: 104 bytes) and its
/// index slot (4 bytes, a map keeps a third more than its capacity).
const MAP_ENTRY: usize = 104 + 6;
/// A value stored beside another of the same name (`http`'s extra value).
const EXTRA_VALUE: usize = 56;
/// A name beside its bytes: a name that is not a standard one is a buffer of its own
/// with a shared counter (24 bytes and two allocations); a standard one is static.
/// Telling them apart is a lookup per name, so each is charged about half of the
/// former (answers carry a few of each).
const NAME: usize = 24;
/// A built RFC policy besides its copies of the heads: its parsed directives.
const POLICY: usize = 1024;

/// The bytes an entry with these parts holds (`entry`: the size of its own struct).
/// The head's map is charged whether or not a hit built it yet: an entry's charge is
/// fixed when it is stored, and must hold for its life.
pub(crate) fn footprint(entry: usize, copied: &Detached, tags: &[Box<str>], policy: bool) -> u64 {
    // In an `Arc`: two counters more.
    let variant = entry + 2 * size_of::<usize>() + PER_ALLOCATION;
    let head = copied.head();
    let map = match map_capacity(head.len()) {
        0 => 0,
        n => n * MAP_ENTRY + 2 * PER_ALLOCATION,
    };
    // A map iterates a name's values one after another: a name is new where it differs
    // from the one before it.
    let mut distinct = 0;
    let mut names = 0;
    let mut before: Option<&Field> = None;
    for field in head {
        if before.is_none_or(|b| b.0 != field.0) {
            distinct += 1;
            names += field.0.as_str().len() + NAME;
        }
        before = Some(field);
    }
    let extra = (head.len() - distinct) * EXTRA_VALUE;
    // The buffer, and the counter its slices share.
    let held = copied.held();
    let buffer = held + 24 + 2 * PER_ALLOCATION;
    let fields = size_of_val(copied.fields()) + PER_ALLOCATION;
    let tags: usize =
        size_of_val(tags) + tags.iter().map(|t| t.len() + PER_ALLOCATION).sum::<usize>();
    let policy = if policy {
        POLICY + 2 * (map + names + held)
    } else {
        0
    };
    (variant + map + extra + names + buffer + fields + tags + policy) as u64
}

/// The capacity `http` gives a map made for `n` fields (`HeaderMap::with_capacity`:
/// a third more, rounded up to a power of two, three quarters of it usable).
fn map_capacity(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let raw = (n + n / 3).next_power_of_two();
    raw - raw / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderMap;

    #[test]
    fn a_maps_capacity_is_what_http_gives_it() {
        for n in 0..200 {
            assert_eq!(
                map_capacity(n),
                HeaderMap::<()>::with_capacity(n).capacity(),
                "{n} fields"
            );
        }
    }
}
