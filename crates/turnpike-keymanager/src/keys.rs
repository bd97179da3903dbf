//! Signing keys and the JWKS (RFC 7517). The newest key signs; a rotated-out key stays in
//! the JWKS until every token it signed has expired, so rotation never breaks a gateway
//! that validates with the previous snapshot's keys. Private key bytes never leave this
//! module except to the [`KeyStore`].

use std::sync::RwLock;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::traits::PublicKeyParts;
use serde::{Deserialize, Serialize};

use crate::secret::random_id;
use crate::store::{KeyStore, SigningAlg, StoreError, StoredKey};

/// Key-handling failure.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("key generation failed: {0}")]
    Generate(String),
    #[error("stored key {kid} is unusable: {reason}")]
    Corrupt { kid: String, reason: String },
    #[error("signing failed: {0}")]
    Sign(#[from] jsonwebtoken::errors::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One public key as served in the JWKS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    pub kid: String,
    #[serde(rename = "use")]
    pub use_: String,
    pub alg: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crv: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub y: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e: Option<String>,
}

/// A JWK Set: `{"keys": [...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

struct LoadedKey {
    stored: StoredKey,
    encoding: EncodingKey,
    jwk: Jwk,
}

/// The key ring: loaded from a [`KeyStore`], rotated on demand.
pub struct KeyRing {
    keys: RwLock<Vec<LoadedKey>>,
    alg: SigningAlg,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn load(stored: StoredKey) -> Result<LoadedKey, KeyError> {
    let corrupt = |reason: String| KeyError::Corrupt {
        kid: stored.kid.clone(),
        reason,
    };
    let (encoding, mut jwk) = match stored.alg {
        SigningAlg::ES256 => {
            let pair = EcdsaKeyPair::from_pkcs8(
                &ECDSA_P256_SHA256_FIXED_SIGNING,
                &stored.private_der,
                &SystemRandom::new(),
            )
            .map_err(|e| corrupt(e.to_string()))?;
            let point = pair.public_key().as_ref();
            if point.len() != 65 {
                return Err(corrupt("unexpected EC point length".into()));
            }
            let jwk = Jwk {
                kty: "EC".into(),
                crv: Some("P-256".into()),
                x: Some(b64(&point[1..33])),
                y: Some(b64(&point[33..65])),
                alg: "ES256".into(),
                ..empty_jwk()
            };
            (EncodingKey::from_ec_der(&stored.private_der), jwk)
        }
        SigningAlg::RS256 => {
            let key = rsa::RsaPrivateKey::from_pkcs1_der(&stored.private_der)
                .map_err(|e| corrupt(e.to_string()))?;
            let jwk = Jwk {
                kty: "RSA".into(),
                n: Some(b64(&key.n().to_bytes_be())),
                e: Some(b64(&key.e().to_bytes_be())),
                alg: "RS256".into(),
                ..empty_jwk()
            };
            (EncodingKey::from_rsa_der(&stored.private_der), jwk)
        }
    };
    jwk.kid = stored.kid.clone();
    Ok(LoadedKey {
        stored,
        encoding,
        jwk,
    })
}

fn empty_jwk() -> Jwk {
    Jwk {
        kty: String::new(),
        kid: String::new(),
        use_: "sig".into(),
        alg: String::new(),
        crv: None,
        x: None,
        y: None,
        n: None,
        e: None,
    }
}

/// Generates a fresh private key for `alg` (RSA 2048 is slow in debug builds).
pub fn generate(alg: SigningAlg, now: u64) -> Result<StoredKey, KeyError> {
    let private_der = match alg {
        SigningAlg::ES256 => {
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|e| KeyError::Generate(e.to_string()))?
                .as_ref()
                .to_vec()
        }
        SigningAlg::RS256 => {
            let key = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048)
                .map_err(|e| KeyError::Generate(e.to_string()))?;
            key.to_pkcs1_der()
                .map_err(|e| KeyError::Generate(e.to_string()))?
                .as_bytes()
                .to_vec()
        }
    };
    Ok(StoredKey {
        kid: random_id(),
        alg,
        private_der,
        created_at: now,
        retired_at: None,
    })
}

impl KeyRing {
    /// Loads the stored keys, generating and saving one if none is active.
    pub async fn open(store: &dyn KeyStore, alg: SigningAlg, now: u64) -> Result<Self, KeyError> {
        let mut loaded = Vec::new();
        for stored in store.load_keys().await? {
            loaded.push(load(stored)?);
        }
        let ring = Self {
            keys: RwLock::new(loaded),
            alg,
        };
        if ring.active_kid().is_none() {
            ring.rotate(store, now).await?;
        }
        Ok(ring)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<LoadedKey>> {
        self.keys.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<LoadedKey>> {
        self.keys.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The kid of the key that signs now: the newest not retired.
    pub fn active_kid(&self) -> Option<String> {
        self.read()
            .iter()
            .filter(|k| k.stored.retired_at.is_none() && k.stored.alg == self.alg)
            .max_by_key(|k| k.stored.created_at)
            .map(|k| k.stored.kid.clone())
    }

    /// Generates a new signing key and retires the current one (it keeps verifying).
    pub async fn rotate(&self, store: &dyn KeyStore, now: u64) -> Result<String, KeyError> {
        let fresh = generate(self.alg, now)?;
        let kid = fresh.kid.clone();
        store.save_key(fresh.clone()).await?;
        let retired: Vec<StoredKey> = {
            let mut keys = self.write();
            let mut retired = Vec::new();
            for k in keys.iter_mut().filter(|k| k.stored.retired_at.is_none()) {
                k.stored.retired_at = Some(now);
                retired.push(k.stored.clone());
            }
            keys.push(load(fresh)?);
            retired
        };
        for k in retired {
            store.save_key(k).await?;
        }
        Ok(kid)
    }

    /// Drops retired keys whose last token expired before `now` (`max_ttl` after retirement).
    pub async fn prune(
        &self,
        store: &dyn KeyStore,
        now: u64,
        max_ttl: u64,
    ) -> Result<(), KeyError> {
        let dead: Vec<String> = {
            let mut keys = self.write();
            let dead = keys
                .iter()
                .filter(|k| matches!(k.stored.retired_at, Some(r) if r + max_ttl < now))
                .map(|k| k.stored.kid.clone())
                .collect::<Vec<_>>();
            keys.retain(|k| !dead.contains(&k.stored.kid));
            dead
        };
        for kid in dead {
            store.delete_key(&kid).await?;
        }
        Ok(())
    }

    /// Every key for operators, newest first (no key material).
    pub fn info(&self) -> Vec<crate::verify::KeyInfo> {
        let active = self.active_kid();
        let mut out: Vec<crate::verify::KeyInfo> = self
            .read()
            .iter()
            .map(|k| crate::verify::KeyInfo {
                kid: k.stored.kid.clone(),
                alg: k.stored.alg,
                active: active.as_deref() == Some(k.stored.kid.as_str()),
                created_at: k.stored.created_at,
                retired_at: k.stored.retired_at,
            })
            .collect();
        out.sort_by_key(|k| std::cmp::Reverse(k.created_at));
        out
    }

    /// The public keys gateways must trust: the active key and every retired one still live.
    pub fn jwks(&self) -> Jwks {
        Jwks {
            keys: self.read().iter().map(|k| k.jwk.clone()).collect(),
        }
    }

    /// Signs claims with the active key, `kid` and `typ: at+jwt` (RFC 9068) in the header.
    pub fn sign<T: Serialize>(&self, claims: &T) -> Result<String, KeyError> {
        let keys = self.read();
        let key = keys
            .iter()
            .filter(|k| k.stored.retired_at.is_none() && k.stored.alg == self.alg)
            .max_by_key(|k| k.stored.created_at)
            .ok_or_else(|| KeyError::Generate("no active signing key".into()))?;
        let mut header = Header::new(match key.stored.alg {
            SigningAlg::ES256 => Algorithm::ES256,
            SigningAlg::RS256 => Algorithm::RS256,
        });
        header.kid = Some(key.stored.kid.clone());
        header.typ = Some("at+jwt".into());
        Ok(jsonwebtoken::encode(&header, claims, &key.encoding)?)
    }

    /// Decoding keys for verifying our own tokens (revocation and introspection of JWTs).
    pub fn decoding_key(&self, kid: &str) -> Option<(Algorithm, jsonwebtoken::DecodingKey)> {
        let keys = self.read();
        let k = keys.iter().find(|k| k.stored.kid == kid)?;
        match k.stored.alg {
            SigningAlg::ES256 => {
                let dk = jsonwebtoken::DecodingKey::from_ec_components(
                    k.jwk.x.as_deref()?,
                    k.jwk.y.as_deref()?,
                )
                .ok()?;
                Some((Algorithm::ES256, dk))
            }
            SigningAlg::RS256 => {
                let dk = jsonwebtoken::DecodingKey::from_rsa_components(
                    k.jwk.n.as_deref()?,
                    k.jwk.e.as_deref()?,
                )
                .ok()?;
                Some((Algorithm::RS256, dk))
            }
        }
    }
}
