//! Fuzzing the PII scanner (proptest, stable Rust). Over text made of what its patterns
//! look for (digits, separators, `@`, `+`, IBAN-like letters) mixed with anything but
//! `<` (a prompt that already holds a placeholder-like `<NAME_1>` cannot round-trip):
//! masking then unmasking gives the text back, and a masked answer streamed in arbitrary
//! pieces through the unmasker comes out exactly as the text. Over any text with
//! placeholder-like pieces: it never panics.
//!
//! Cases: `TURNPIKE_FUZZ_CASES` (default 1,000, under a second); `bench/fuzz.sh` may run
//! more.

use std::sync::LazyLock;

use proptest::prelude::*;
use turnpike_ai::pii::{Masks, Scanner, Unmasker};

/// Compiled once: the scanner is built once per snapshot, not per request.
static SCANNER: LazyLock<Scanner> = LazyLock::new(|| Scanner::new(&[]));

fn cases() -> u32 {
    std::env::var("TURNPIKE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

fn piiish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("4111 1111 1111 1111".to_owned()),
        Just("DE89370400440532013000".to_owned()),
        Just("bob@example.com".to_owned()),
        Just("+1 (415) 555-0134".to_owned()),
        "[0-9 +()@._A-Z-]{0,24}",
        "[^<]{0,12}",
    ];
    prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn mask_then_unmask_is_the_identity(text in piiish(), cuts in prop::collection::vec(0usize..64, 0..8)) {
        let scanner = &*SCANNER;
        let mut masks = Masks::default();
        let Ok(masked) = scanner.mask(&text, &mut masks) else {
            return Ok(());
        };
        let Some(masked) = masked else {
            return Ok(());
        };
        prop_assert_eq!(masks.unmask(&masked), text.clone());

        // Streamed in pieces cut anywhere (on char boundaries).
        let mut u = Unmasker::default();
        let mut out = String::new();
        let mut rest = masked.as_str();
        for c in cuts {
            let mut at = c.min(rest.len());
            while !rest.is_char_boundary(at) {
                at -= 1;
            }
            let (a, b) = rest.split_at(at);
            out.push_str(&u.push(&masks, a));
            rest = b;
        }
        out.push_str(&u.push(&masks, rest));
        out.push_str(&u.flush(&masks));
        prop_assert_eq!(out, text);
    }

    #[test]
    fn any_text_scans_without_panicking(text in "(\\PC|<[A-Z_0-9]{0,8}>?){0,64}") {
        let scanner = &*SCANNER;
        let _ = scanner.mask(&text, &mut Masks::default());
    }
}
