//! FNV-1a 64, the workspace's one non-keyed hash: stable across processes and builds
//! (unlike `DefaultHasher`), so the sync wire hash and the throttle's Redis keys agree on
//! every node, and cheap on short keys (pool authorities, policy names) where SipHash
//! would be the bigger cost. Only for keys that come from configuration or are
//! compared across processes: a client cannot choose them to flood one bucket.

use std::hash::Hasher;

/// The FNV-1a 64 offset basis: the hash of no bytes.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// FNV-1a 64 of `bytes`.
#[inline]
pub const fn fnv64(bytes: &[u8]) -> u64 {
    fnv64_extend(FNV_OFFSET, bytes)
}

/// Continues the hash `h` over `bytes`: `fnv64_extend(fnv64(a), b) == fnv64(a ++ b)`.
#[inline]
pub const fn fnv64_extend(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

/// FNV-1a 64 as a [`Hasher`], for `HashMap`s keyed by configuration strings
/// (`BuildHasherDefault<FnvHasher>`). A state of 0 stands for the offset basis, so
/// `Default` is derived and costs nothing; `finish()` before any write is 0.
#[derive(Debug, Default, Clone, Copy)]
pub struct FnvHasher(u64);

impl Hasher for FnvHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let h = if self.0 == 0 { FNV_OFFSET } else { self.0 };
        self.0 = fnv64_extend(h, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_vectors() {
        // From the FNV reference test suite (fnv-1a 64); the last two pin the basis too.
        assert_eq!(fnv64(b""), FNV_OFFSET);
        assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn extending_equals_hashing_the_concatenation() {
        assert_eq!(fnv64_extend(fnv64(b"foo"), b"bar"), fnv64(b"foobar"));
    }

    #[test]
    fn hasher_starts_at_the_offset_basis() {
        let mut h = FnvHasher::default();
        assert_eq!(h.finish(), 0);
        h.write(b"foo");
        h.write(b"bar");
        assert_eq!(h.finish(), fnv64(b"foobar"));
    }
}
