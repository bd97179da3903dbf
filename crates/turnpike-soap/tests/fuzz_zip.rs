//! Fuzzing the capped zip reader (`turnpike_soap::zip`, the WSDL and OpenAPI archive
//! imports; bench/fuzz.sh raises the case count with TURNPIKE_FUZZ_CASES): arbitrary bytes
//! and mutated real archives (flipped bytes, truncations, headers pointing anywhere)
//! never panic, and whatever it accepts stays within its caps: at most `MAX_ENTRIES`
//! files, `MAX_TOTAL` bytes in all, no path climbing out of the archive.

use proptest::prelude::*;
use turnpike_soap::zip::{unpack_matching, write_stored, MAX_ENTRIES, MAX_TOTAL};

fn cases() -> u32 {
    std::env::var("TURNPIKE_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2000)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn archive() -> Vec<u8> {
    write_stored(&[
        (
            "openapi.yaml",
            b"openapi: 3.0.3\npaths: {$ref: paths.yaml}\n",
        ),
        ("paths.yaml", b"/a: {get: {}}\n"),
        ("svc/a.wsdl", b"<definitions/>"),
    ])
}

const SUFFIXES: &[&str] = &[".yaml", ".wsdl", ".xsd", ".json"];

fn within_caps(files: &std::collections::BTreeMap<String, String>) {
    assert!(files.len() <= MAX_ENTRIES);
    let total: usize = files.values().map(String::len).sum();
    assert!(total as u64 <= MAX_TOTAL);
    for name in files.keys() {
        assert!(!name.starts_with('/') && !name.split('/').any(|s| s == ".."));
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(files) = unpack_matching(&bytes, SUFFIXES) {
            within_caps(&files);
        }
    }

    #[test]
    fn mutated_archives_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut zip = archive();
        for (at, byte) in edits {
            let i = at.index(zip.len());
            zip[i] = byte;
        }
        if truncate {
            zip.truncate(cut.index(zip.len()));
        }
        if let Ok(files) = unpack_matching(&zip, SUFFIXES) {
            within_caps(&files);
        }
    }
}

#[test]
fn the_unmutated_archive_reads_back() {
    let files = unpack_matching(&archive(), SUFFIXES).expect("reads");
    assert_eq!(files.len(), 3);
    assert_eq!(files["paths.yaml"], "/a: {get: {}}\n");
}
