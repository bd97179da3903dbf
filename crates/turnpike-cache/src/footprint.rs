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

use http::{HeaderMap, HeaderName, HeaderValue};

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

/// The bytes an entry with these parts holds (`entry`: the size of its own struct;
/// `held`: the copied buffer's length).
pub(crate) fn footprint(
    entry: usize,
    headers: &HeaderMap,
    held: usize,
    selecting: &[(HeaderName, Option<HeaderValue>)],
    tags: &[Box<str>],
    policy: bool,
) -> u64 {
    // In an `Arc`: two counters more.
    let variant = entry + 2 * size_of::<usize>() + PER_ALLOCATION;
    let map = match headers.capacity() {
        0 => 0,
        n => n * MAP_ENTRY + 2 * PER_ALLOCATION,
    };
    let extra = (headers.len() - headers.keys_len()) * EXTRA_VALUE;
    let names: usize = headers.keys().map(|n| n.as_str().len() + NAME).sum();
    // The buffer, and the counter its slices share.
    let buffer = held + 24 + 2 * PER_ALLOCATION;
    let kept = size_of_val(selecting) + PER_ALLOCATION;
    let tags: usize =
        size_of_val(tags) + tags.iter().map(|t| t.len() + PER_ALLOCATION).sum::<usize>();
    let policy = if policy {
        POLICY + 2 * (map + names + held)
    } else {
        0
    };
    (variant + map + extra + names + buffer + kept + tags + policy) as u64
}
