//! The shared level's entry decoder (`turnpike_cache::wire::decode`) under arbitrary
//! and near-valid bytes: what Redis hands back is untrusted, so the decoder never
//! panics, reads back exactly what was written, refuses every truncation, and whatever
//! it accepts after a byte was changed encodes and decodes to itself again.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use proptest::prelude::*;
use turnpike_cache::wire::{decode, encode, WireEntry, MAX_ENTRY_BYTES};

fn name() -> impl Strategy<Value = HeaderName> {
    "[a-z][a-z0-9-]{0,15}".prop_map(|n| HeaderName::from_bytes(n.as_bytes()).expect("token"))
}

fn value() -> impl Strategy<Value = HeaderValue> {
    "[ -~]{0,30}".prop_map(|v| HeaderValue::from_str(&v).expect("visible ASCII"))
}

fn method() -> impl Strategy<Value = Method> {
    prop_oneof![Just(Method::GET), Just(Method::HEAD), Just(Method::POST)]
}

fn entry() -> impl Strategy<Value = WireEntry> {
    let head = (
        ".{0,40}",
        any::<u64>(),
        100u16..600,
        method(),
        proptest::collection::vec((name(), proptest::option::of(value())), 0..4),
        any::<bool>(),
        proptest::collection::vec((name(), value()), 0..8),
    );
    let rest = (
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::array::uniform6(any::<u64>()),
        proptest::collection::vec("[a-z0-9]{1,8}", 0..4),
    );
    (head, rest).prop_map(|(h, r)| {
        let (key, generation, status, method, selecting, vary_star, pairs) = h;
        let (body, t, tags) = r;
        let mut headers = HeaderMap::new();
        for (n, v) in pairs {
            headers.append(n, v);
        }
        WireEntry {
            key,
            generation,
            status: StatusCode::from_u16(status).expect("status"),
            method,
            selecting,
            vary_star,
            headers,
            body: Bytes::from(body),
            received_at_ms: t[0],
            fresh_until_ms: t[1],
            arrived_age_s: t[2],
            ttl_ms: t[3],
            stale_while_revalidate_ms: t[4],
            stale_if_error_ms: t[5],
            tags: tags.into_iter().map(Into::into).collect(),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("TURNPIKE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&bytes);
        // With the magic in front, the rest is read field by field.
        let mut framed = b"TPC\x01".to_vec();
        framed.extend_from_slice(&bytes);
        let _ = decode(&framed);
    }

    #[test]
    fn what_is_written_is_read_back_and_no_truncation_is(e in entry(), cut in any::<prop::sample::Index>()) {
        let bytes = encode(&e).expect("a small entry encodes");
        prop_assert_eq!(decode(&bytes), Some(e));
        let at = cut.index(bytes.len());
        prop_assert_eq!(decode(&bytes[..at]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        prop_assert_eq!(decode(&longer), None, "nothing may follow");
    }

    #[test]
    fn a_changed_byte_is_refused_or_decodes_to_a_stable_entry(
        e in entry(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = encode(&e).expect("encodes");
        let i = at.index(bytes.len());
        bytes[i] = byte;
        if let Some(d) = decode(&bytes) {
            let again = encode(&d).expect("what decoded encodes");
            prop_assert_eq!(decode(&again), Some(d));
        }
    }
}

#[test]
fn declared_lengths_beyond_the_caps_are_refused_before_reading() {
    let e = WireEntry {
        key: "GET /x".into(),
        generation: 0,
        status: StatusCode::OK,
        method: Method::GET,
        selecting: Vec::new(),
        vary_star: false,
        headers: HeaderMap::new(),
        body: Bytes::from_static(b"ok"),
        received_at_ms: 0,
        fresh_until_ms: 0,
        arrived_age_s: 0,
        ttl_ms: 0,
        stale_while_revalidate_ms: 0,
        stale_if_error_ms: 0,
        tags: Vec::new(),
    };
    let bytes = encode(&e).expect("encodes");
    // The body's length says 4 GiB.
    let mut huge = bytes.clone();
    let n = huge.len();
    huge[n - 6..n - 2].copy_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(decode(&huge), None);
    // More input than an entry may have.
    assert_eq!(decode(&vec![0; MAX_ENTRY_BYTES + 1]), None);
    // A body too large to share is not encoded.
    let big = WireEntry {
        body: Bytes::from(vec![0; MAX_ENTRY_BYTES]),
        ..e
    };
    assert_eq!(encode(&big), None);
}
