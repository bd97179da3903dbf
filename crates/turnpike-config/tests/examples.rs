//! Every documented example file in `examples/` compiles.

use std::path::Path;

use turnpike_config::Snapshot;

#[test]
fn every_example_file_compiles() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) => panic!("cannot read {}: {e}", dir.display()),
    };
    let mut seen = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if !is_yaml {
            continue;
        }
        match Snapshot::load(&path) {
            Ok(s) => assert!(!s.apis.is_empty(), "{} declares no API", path.display()),
            Err(e) => panic!("{} does not compile:\n{e}", path.display()),
        }
        seen.push(entry.file_name());
    }
    for required in ["echo.yaml", "gateway.yaml"] {
        assert!(
            seen.iter().any(|n| n == required),
            "examples/{required} is missing"
        );
    }
}
