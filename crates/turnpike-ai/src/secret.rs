//! Provider keys from secret references: `env:NAME` (the gateway's environment) or
//! `file:/path` (the file's first line). Read when the snapshot is compiled on the
//! gateway: the file and the snapshot carry only the reference, and no message here
//! ever holds the value.

use std::fmt;

/// A resolved key; `Debug` never shows it.
#[derive(Clone, PartialEq)]
pub(crate) struct Secret(String);

impl Secret {
    #[cfg(test)]
    pub(crate) fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Reads `reference` (`Ok(None)` when `unread`: its form checked only, for a compiler
/// that never serves the API); the error names the reference, never a value.
pub(crate) fn resolve(reference: &str, unread: bool) -> Result<Option<Secret>, String> {
    let known = ["env:", "file:"]
        .iter()
        .any(|p| reference.strip_prefix(*p).is_some_and(|r| !r.is_empty()));
    if !known {
        return Err("a key is a secret reference: env:NAME or file:/path".into());
    }
    if unread {
        return Ok(None);
    }
    let value = if let Some(name) = reference.strip_prefix("env:") {
        std::env::var(name).map_err(|_| format!("environment variable {name} is not set"))?
    } else if let Some(path) = reference.strip_prefix("file:") {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the key file {path}: {}", e.kind()))?;
        text.lines().next().unwrap_or_default().to_owned()
    } else {
        return Err("a key is a secret reference: env:NAME or file:/path".into());
    };
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Err(format!("{reference} is empty"));
    }
    if value.bytes().any(|b| !(0x21..0x7f).contains(&b)) {
        return Err(format!(
            "{reference} holds characters a header cannot carry"
        ));
    }
    Ok(Some(Secret(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_and_errors_never_show_a_value() {
        let dir = std::env::temp_dir().join(format!("tp-ai-secret-{}", std::process::id()));
        std::fs::write(&dir, "sk-file-123\nignored\n").expect("write");
        let from_file = resolve(&format!("file:{}", dir.display()), false)
            .expect("file")
            .expect("read");
        assert_eq!(from_file.expose(), "sk-file-123");
        assert_eq!(format!("{from_file:?}"), "Secret(..)");
        let _ = std::fs::remove_file(&dir);
        let missing = resolve("env:TURNPIKE_AI_TEST_SURELY_UNSET", false).expect_err("unset");
        assert_eq!(
            resolve("env:TURNPIKE_AI_TEST_SURELY_UNSET", true),
            Ok(None),
            "unread: form only"
        );
        assert!(
            missing.contains("TURNPIKE_AI_TEST_SURELY_UNSET"),
            "{missing}"
        );
        let plain = resolve("sk-in-clear", true).expect_err("plain keys are refused");
        assert!(!plain.contains("sk-in-clear"), "{plain}");
    }
}
