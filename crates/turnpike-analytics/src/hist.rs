//! A mergeable latency histogram over fixed log-linear buckets of microseconds: values
//! 0..8 exactly, then 8 buckets per power of two (at most 12.5 % wide), up to 2^41 µs
//! (25 days; larger values land in the last bucket). Fixed buckets make merging a sum of
//! counts, so a percentile over any window of rollups is the percentile of all its
//! requests (to the bucket), which pre-computed percentiles cannot be. Sparse: a
//! rollup holds only the buckets it saw (a sorted vector: latencies cluster in a few
//! buckets, so recording is a short binary search), serialized as `index:count,...`.

/// Sub-buckets per power of two.
const SUB: u64 = 8;
/// Number of buckets.
pub const BUCKETS: usize = (SUB + SUB * 38) as usize;

/// The bucket of a value in microseconds.
pub fn bucket_of(us: u64) -> usize {
    if us < SUB {
        return us as usize;
    }
    let e = 63 - u64::from(us.leading_zeros()); // floor(log2), >= 3
    let m = (us >> (e - 3)) - SUB; // 0..8
    ((SUB + (e - 3) * SUB + m) as usize).min(BUCKETS - 1)
}

/// The smallest value of bucket `i`.
pub fn bucket_low(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let e = (i - SUB) / SUB + 3;
    let m = (i - SUB) % SUB;
    (SUB + m) << (e - 3)
}

/// The largest value of bucket `i` (what percentiles report: "at most").
pub fn bucket_high(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        return u64::MAX;
    }
    bucket_low(i + 1) - 1
}

/// Counts per bucket over the contiguous range of buckets seen: `counts[i]` is bucket
/// `base + i`. Latencies of one key cluster in a few dozen buckets, so recording is an
/// index and an increment, and the range stays small (2.5 KB at the very most).
#[derive(Debug, Clone, Default)]
pub struct Hist {
    base: u16,
    counts: Vec<u64>,
}

impl PartialEq for Hist {
    /// The same counts per bucket, however the ranges were grown.
    fn eq(&self, other: &Hist) -> bool {
        self.pairs().eq(other.pairs())
    }
}

impl Eq for Hist {}

/// A serialized histogram that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("bad histogram text at {at:?}")]
pub struct BadHist {
    at: String,
}

impl Hist {
    #[inline]
    pub fn record(&mut self, us: u64) {
        self.add(bucket_of(us) as u16, 1);
    }

    #[inline]
    fn add(&mut self, bucket: u16, n: u64) {
        if let Some(c) = self
            .counts
            .get_mut(usize::from(bucket.wrapping_sub(self.base)))
        {
            *c += n;
            return;
        }
        self.grow_add(bucket, n);
    }

    /// [`Hist::add`] outside the range so far.
    fn grow_add(&mut self, bucket: u16, n: u64) {
        if n == 0 {
            return;
        }
        if self.counts.is_empty() {
            self.base = bucket;
        } else if bucket < self.base {
            let grow = usize::from(self.base - bucket);
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.base = bucket;
        }
        let i = usize::from(bucket - self.base);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += n;
    }

    /// `(bucket, count)` for every bucket with a count, ascending.
    pub fn pairs(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        let base = self.base;
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(move |(i, &n)| (base + i as u16, n))
    }

    pub fn merge(&mut self, other: &Hist) {
        for (b, n) in other.pairs() {
            self.add(b, n);
        }
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The value (upper bound of its bucket, µs) at or below which a fraction `q` of
    /// the values lie: the bucket of the `ceil(q * n)`-th smallest value. `None` when
    /// empty.
    pub fn percentile(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = rank(q, n);
        let mut seen = 0;
        let mut last = None;
        for (b, c) in self.pairs() {
            seen += c;
            last = Some(b);
            if seen >= rank {
                return Some(bucket_high(usize::from(b)));
            }
        }
        last.map(|b| bucket_high(usize::from(b)))
    }

    /// `index:count` pairs, comma-separated, ascending.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.counts.len() * 6);
        for (i, (b, n)) in self.pairs().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&b.to_string());
            out.push(':');
            out.push_str(&n.to_string());
        }
        out
    }

    pub fn decode(text: &str) -> Result<Hist, BadHist> {
        let mut h = Hist::default();
        for pair in text.split(',').filter(|p| !p.is_empty()) {
            let bad = || BadHist {
                at: pair.chars().take(32).collect(),
            };
            let (b, n) = pair.split_once(':').ok_or_else(bad)?;
            let b: u16 = b.parse().map_err(|_| bad())?;
            let n: u64 = n.parse().map_err(|_| bad())?;
            if usize::from(b) >= BUCKETS {
                return Err(bad());
            }
            h.add(b, n);
        }
        Ok(h)
    }
}

/// Written as its text (`index:count,...`), the form the store keeps.
impl serde::Serialize for Hist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.encode())
    }
}

impl<'de> serde::Deserialize<'de> for Hist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Hist, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Hist::decode(&text).map_err(serde::de::Error::custom)
    }
}

/// The 1-based rank of the `q` quantile among `n` values.
pub fn rank(q: f64, n: u64) -> u64 {
    ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_tile_the_line() {
        for i in 0..BUCKETS - 1 {
            assert_eq!(bucket_of(bucket_low(i)), i, "low of {i}");
            assert_eq!(bucket_of(bucket_high(i)), i, "high of {i}");
            assert_eq!(bucket_high(i) + 1, bucket_low(i + 1));
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_and_text() {
        let mut h = Hist::default();
        for v in [1, 2, 3, 100, 1000] {
            h.record(v);
        }
        assert_eq!(h.percentile(0.5), Some(3));
        assert_eq!(h.percentile(1.0), Some(bucket_high(bucket_of(1000))));
        let back = Hist::decode(&h.encode()).expect("round trip");
        assert_eq!(back, h);
        assert!(Hist::decode("1:x").is_err());
        assert!(Hist::decode("9999:1").is_err());
        assert_eq!(Hist::default().percentile(0.5), None);
        let json = serde_json::to_string(&h).expect("json");
        assert_eq!(serde_json::from_str::<Hist>(&json).expect("back"), h);
        assert!(serde_json::from_str::<Hist>("\"9999:1\"").is_err());
    }

    proptest! {
        #[test]
        fn decode_never_panics(s in ".{0,64}") {
            let _ = Hist::decode(&s);
        }

        #[test]
        fn recording_in_any_order_equals_sorted_counts(vs in proptest::collection::vec(0u64..1_000_000, 0..200)) {
            let mut h = Hist::default();
            let mut other = Hist::default();
            for (i, v) in vs.iter().enumerate() {
                h.record(*v);
                if i % 2 == 0 { other.record(*v) }
            }
            let mut want: Vec<u16> = vs.iter().map(|v| bucket_of(*v) as u16).collect();
            want.sort_unstable();
            let expanded: Vec<u16> = h.pairs().flat_map(|(b, n)| std::iter::repeat_n(b, n as usize)).collect();
            prop_assert_eq!(expanded, want);
            let mut merged = Hist::default();
            merged.merge(&other);
            for (i, v) in vs.iter().enumerate() {
                if i % 2 == 1 { merged.record(*v) }
            }
            prop_assert_eq!(merged, h);
        }

        #[test]
        fn relative_width_is_at_most_an_eighth(v in 8u64..(1 << 40)) {
            let i = bucket_of(v);
            let (lo, hi) = (bucket_low(i), bucket_high(i));
            prop_assert!(lo <= v && v <= hi);
            prop_assert!((hi - lo + 1) * 8 <= lo);
        }
    }
}
