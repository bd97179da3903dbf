//! Secrets at rest and random tokens: argon2 hashing of client secrets and passwords,
//! SHA-256 digests of refresh and opaque tokens (stored hashed, never in clear), and the
//! random values the server hands out. Nothing here logs.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// A SHA-256 digest: how refresh and opaque access tokens are keyed in a store.
pub type TokenHash = [u8; 32];

/// Hashes a secret (client secret or user password) with argon2id default parameters
/// (19 MiB, 2 passes): the PHC string the store keeps.
pub fn hash_secret(secret: &str) -> Result<String, argon2::password_hash::Error> {
    hash_with(Argon2::default(), secret)
}

/// Hashes with cheap argon2 parameters. For tests only: verification reads the
/// parameters from the PHC string, so cheap hashes verify fast.
pub fn hash_secret_for_tests(secret: &str) -> Result<String, argon2::password_hash::Error> {
    let params = Params::new(8, 1, 1, None)?;
    hash_with(
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params),
        secret,
    )
}

fn hash_with(argon: Argon2<'_>, secret: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Ok(argon.hash_password(secret.as_bytes(), &salt)?.to_string())
}

/// Verifies a secret against a PHC string. A malformed hash verifies as false.
/// CPU-heavy by design: call it from `spawn_blocking`.
pub fn verify_secret(secret: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default()
            .verify_password(secret.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// Verifies on a blocking thread so argon2 never stalls the async executor.
pub async fn verify_secret_blocking(secret: String, phc: String) -> bool {
    tokio::task::spawn_blocking(move || verify_secret(&secret, &phc))
        .await
        .unwrap_or(false)
}

/// 32 random bytes, base64url without padding (43 characters, no dots): refresh tokens,
/// opaque access tokens, generated client secrets.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// 16 random bytes as base64url: token ids (`jti`), refresh-token families, key ids.
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// SHA-256 of a token: the only form in which tokens reach a store.
pub fn token_hash(token: &str) -> TokenHash {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_wrong_secrets_do_not() {
        let phc = hash_secret_for_tests("s3cret").unwrap();
        assert!(phc.starts_with("$argon2id$"));
        assert!(verify_secret("s3cret", &phc));
        assert!(!verify_secret("s3cret!", &phc));
        assert!(!verify_secret("s3cret", "not a phc string"));
    }

    #[test]
    fn random_tokens_are_distinct_and_dotless() {
        let a = random_token();
        assert_eq!(a.len(), 43);
        assert!(!a.contains('.'));
        assert_ne!(a, random_token());
    }
}
