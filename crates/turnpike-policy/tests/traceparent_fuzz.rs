//! The W3C `traceparent` reader under arbitrary input: it never panics, accepts exactly
//! the values the specification's grammar allows (checked against an independent
//! reading of the grammar), and what the gateway writes upstream always reads back.

use http::HeaderValue;
use proptest::prelude::*;
use turnpike_policy::trace::parse_traceparent;
use turnpike_policy::TraceContext;

/// The grammar, read independently: `version "-" trace-id "-" parent-id "-" flags`,
/// lowercase hex, no all-zero ids, version `ff` invalid, version 00 exactly 55 bytes.
fn valid(v: &[u8]) -> bool {
    let hex = |s: &[u8]| {
        s.iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    if v.len() < 55 || !hex(&v[0..2]) || &v[0..2] == b"ff" {
        return false;
    }
    let fields_ok = v[2] == b'-'
        && hex(&v[3..35])
        && v[35] == b'-'
        && hex(&v[36..52])
        && v[52] == b'-'
        && hex(&v[53..55]);
    let zero = |s: &[u8]| s.iter().all(|&c| c == b'0');
    let length_ok = if &v[0..2] == b"00" {
        v.len() == 55
    } else {
        v.len() == 55 || v[55] == b'-'
    };
    fields_ok && length_ok && !zero(&v[3..35]) && !zero(&v[36..52])
}

fn near_valid() -> impl Strategy<Value = Vec<u8>> {
    // Mostly lowercase hex (valid), sometimes a stray upper-case digit or zeros.
    let hex = |n: usize| {
        prop_oneof![
            8 => prop::string::string_regex(&format!("[0-9a-f]{{{n}}}")).expect("a regex"),
            1 => prop::string::string_regex(&format!("[0-9a-fA-F]{{{n}}}")).expect("a regex"),
            1 => Just("0".repeat(n)),
        ]
    };
    (
        hex(2),
        hex(32),
        hex(16),
        hex(2),
        "(-[a-z0-9]{0,4})?",
        prop::sample::select(vec!['-', '-', '-', '_']),
    )
        .prop_map(|(v, t, p, f, tail, dash)| format!("{v}-{t}{dash}{p}-{f}{tail}").into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("TURNPIKE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(3000)
    ))]

    #[test]
    fn arbitrary_bytes_never_panic(v in prop::collection::vec(any::<u8>(), 0..80)) {
        prop_assert_eq!(parse_traceparent(&v).is_some(), valid(&v));
    }

    #[test]
    fn near_valid_values_are_judged_by_the_grammar(v in near_valid()) {
        prop_assert_eq!(parse_traceparent(&v).is_some(), valid(&v), "{}", String::from_utf8_lossy(&v));
        if let Ok(h) = HeaderValue::from_bytes(&v) {
            let t = TraceContext::for_request(Some(&h));
            let up = t.upstream_traceparent();
            let back = parse_traceparent(up.as_bytes());
            prop_assert!(back.is_some());
            prop_assert_eq!(back.map(|p| p.trace_id), Some(t.trace_id));
        }
    }
}
