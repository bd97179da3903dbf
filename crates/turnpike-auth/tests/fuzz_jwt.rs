//! Fuzzing the JWT path on stable Rust: a correctly signed token (an Ed25519 key of the
//! test's own) mutated character by character, segment by segment, and with hostile
//! header and claim JSON re-encoded around the original signature. Nothing may panic, and
//! nothing but the bytes that were signed may be accepted: a token that passes must carry
//! exactly the original claims.
//!
//! Cases: `TURNPIKE_FUZZ_CASES` (default 3,000, well under a second); `bench/fuzz.sh`
//! runs more. The seed is printed; `TURNPIKE_FUZZ_SEED` replays a run.

mod support;

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::KeyPair;
use support::*;
use turnpike_auth::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ";

const HEADERS: &[&str] = &[
    r#"{"alg":"none","kid":"k1"}"#,
    r#"{"alg":"HS256","kid":"k1"}"#,
    r#"{"alg":"EdDSA","kid":["k1"]}"#,
    r#"{"alg":"EdDSA","kid":"k1","crit":["b64"],"b64":false}"#,
    r#"{"alg":"EdDSA","kid":"../../k1"}"#,
    r#"{"alg":"EdDSA"}"#,
    r#"{"alg":"EdDSA","kid":"k1","jku":"http://169.254.169.254/"}"#,
    r#"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["#,
    r#"{"alg":"EdDSA","kid":"k1","alg":"none"}"#,
    "",
    "null",
];

const CLAIMS: &[&str] = &[
    r#"{"iss":"https://fuzz.test","sub":"mallory","exp":99999999999}"#,
    r#"{"iss":"https://fuzz.test","sub":"alice","exp":"99999999999"}"#,
    r#"{"iss":"https://fuzz.test","sub":"alice","exp":1e400}"#,
    r#"{"iss":["https://fuzz.test"],"sub":"alice","exp":99999999999}"#,
    r#"{"iss":"https://fuzz.test","sub":{"a":[1,2,{"b":null}]},"exp":-1}"#,
    r#"{"iss":"https://fuzz.test","iss":"https://other","exp":99999999999}"#,
];

fn b64(s: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(s)
}

fn mutate(rng: &mut Rng, token: &str) -> String {
    let segs: Vec<&str> = token.split('.').collect();
    match rng.below(6) {
        // Hostile header, original claims and signature.
        0 => format!(
            "{}.{}.{}",
            b64(HEADERS[rng.below(HEADERS.len())].as_bytes()),
            segs[1],
            segs[2]
        ),
        // Original header, hostile claims, original signature.
        1 => format!(
            "{}.{}.{}",
            segs[0],
            b64(CLAIMS[rng.below(CLAIMS.len())].as_bytes()),
            segs[2]
        ),
        // Segments dropped, repeated or emptied.
        2 => {
            let mut v: Vec<&str> = segs.clone();
            match rng.below(3) {
                0 => {
                    v.remove(rng.below(v.len()));
                }
                1 => v.push(segs[rng.below(segs.len())]),
                _ => {
                    let i = rng.below(v.len());
                    v[i] = "";
                }
            }
            v.join(".")
        }
        // Characters changed.
        _ => {
            let mut bytes = token.as_bytes().to_vec();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(bytes.len());
                match rng.below(3) {
                    0 => bytes[at] = ALPHABET[rng.below(ALPHABET.len())],
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, ALPHABET[rng.below(ALPHABET.len())]),
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }
}

#[test]
fn mutated_tokens_never_panic_and_only_the_signed_claims_pass() {
    let cases: usize = std::env::var("TURNPIKE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let seed = std::env::var("TURNPIKE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64 | 1)
                .unwrap_or(0x9e37_79b9)
        });
    eprintln!("fuzz_jwt: {cases} cases, TURNPIKE_FUZZ_SEED={seed}");
    let rng_key = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng_key).expect("keygen");
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("key");
    let jwks = serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k1",
        "x": b64(pair.public_key().as_ref())}]});
    let keys = KeySet::from_jwks_json(jwks.to_string().as_bytes()).expect("jwks");
    let issuer = Arc::new(TrustedIssuer::new("https://fuzz.test", vec![], keys));
    let jwt = jwt_validator(vec![issuer]);
    let claims =
        serde_json::json!({"iss": "https://fuzz.test", "sub": "alice", "exp": now() + 600});
    let input = format!(
        "{}.{}",
        b64(br#"{"alg":"EdDSA","kid":"k1"}"#),
        b64(claims.to_string().as_bytes())
    );
    let token = format!("{input}.{}", b64(pair.sign(input.as_bytes()).as_ref()));
    let original = jwt
        .validator
        .validate(&token)
        .expect("the unmutated token is valid");
    let mut rng = Rng(seed);
    let mut accepted = 0;
    for _ in 0..cases {
        let t = mutate(&mut rng, &token);
        if let Ok(id) = jwt.validator.validate(&t) {
            // Only an encoding of the same signed bytes may pass (a base64 character whose
            // low bits are unused, say).
            accepted += 1;
            assert_eq!(id.subscriber, original.subscriber, "{t}");
            assert_eq!(id.issuer, original.issuer, "{t}");
            assert_eq!(id.expires_at, original.expires_at, "{t}");
        }
    }
    eprintln!("fuzz_jwt: {accepted} mutations were equivalent encodings and passed");
}
