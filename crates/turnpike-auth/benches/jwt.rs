//! JWT validation cost per algorithm (ES256, RS256, EdDSA): the cold path (a token never
//! seen: parse, signature, claim checks, identity) against the signature check alone
//! (ring, the floor) and against `jsonwebtoken::decode` (what the gateway did before its
//! own single-parse path), and the cached path. Prints, after criterion's table, the
//! ratios measured in alternating rounds in this same run. Run:
//! `cargo bench -p turnpike-auth --bench jwt` (on a shared machine, read the ratios).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{criterion_group, criterion_main, Criterion};
use jsonwebtoken::{DecodingKey, Validation};
use turnpike_auth::*;

use common::{median_ns, signers, validator, Signer};

fn ring_verify(s: &Signer, input: &[u8], sig: &[u8]) {
    use ring::signature as rs;
    let ok = match s.name {
        "es256" => {
            rs::UnparsedPublicKey::new(&rs::ECDSA_P256_SHA256_FIXED, &s.public).verify(input, sig)
        }
        "eddsa" => rs::UnparsedPublicKey::new(&rs::ED25519, &s.public).verify(input, sig),
        _ => {
            let (n, e) = s.rsa_ne.as_ref().expect("rsa");
            rs::RsaPublicKeyComponents { n, e }.verify(&rs::RSA_PKCS1_2048_8192_SHA256, input, sig)
        }
    };
    ok.expect("valid");
}

fn decoding_key(s: &Signer) -> DecodingKey {
    let j = &s.jwk;
    let f = |k: &str| j[k].as_str().expect("jwk field");
    match s.name {
        "es256" => DecodingKey::from_ec_components(f("x"), f("y")).expect("ec"),
        "eddsa" => DecodingKey::from_ed_components(f("x")).expect("ed"),
        _ => DecodingKey::from_rsa_components(f("n"), f("e")).expect("rsa"),
    }
}

fn jsonwebtoken_decode(s: &Signer, key: &DecodingKey, token: &str) {
    let mut v = Validation::new(s.alg);
    v.set_issuer(&[common::ISSUER]);
    v.set_audience(&["turnpike"]);
    jsonwebtoken::decode::<serde_json::Value>(token, key, &v).expect("valid");
}

fn bench(c: &mut Criterion) {
    let signers = signers();
    let (validator, cache) = validator(&signers, 64 << 20);
    let mut g = c.benchmark_group("jwt_validate");
    for s in &signers {
        let token = s.token(1);
        let key = TokenKey::of(&token);
        let (input, sig) = Signer::split(&token);
        let dk = decoding_key(s);
        g.bench_function(format!("cold_{}", s.name), |b| {
            b.iter(|| {
                cache.remove(&key);
                validator.validate(&token).expect("valid")
            })
        });
        g.bench_function(format!("signature_only_{}", s.name), |b| {
            b.iter(|| ring_verify(s, input, &sig))
        });
        g.bench_function(format!("jsonwebtoken_decode_{}", s.name), |b| {
            b.iter(|| jsonwebtoken_decode(s, &dk, &token))
        });
    }
    let token = signers[0].token(2);
    validator.validate(&token).expect("valid");
    g.bench_function("cached", |b| {
        b.iter(|| validator.validate(&token).expect("valid"))
    });
    g.bench_function("sha256_key_only", |b| b.iter(|| TokenKey::of(&token)));
    g.finish();
    ratios(&signers);
}

/// Alternating rounds, medians, ratios: what to read on a machine shared with others.
fn ratios(signers: &[Signer]) {
    let (validator, cache) = validator(signers, 256 << 20);
    println!("\nper-algorithm cost, medians of 7 alternating rounds (µs per token):");
    println!("| alg | cold path (never-seen token) | signature alone (ring) | cold / signature | jsonwebtoken::decode | cold / jsonwebtoken |");
    println!("|---|---|---|---|---|---|");
    for s in signers {
        // Distinct tokens so every call is a miss: pre-signed outside the timing.
        let tokens: Vec<String> = (0..4000).map(|i| s.token(10_000 + i)).collect();
        let next = AtomicU64::new(0);
        let (input, sig) = Signer::split(&tokens[0]);
        let dk = decoding_key(s);
        let (mut cold, mut sig_only, mut jwt_lib) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..7 {
            cold.push(median_ns(1, 400, || {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize % tokens.len();
                let t = &tokens[i];
                // Evict first: rounds wrap around the pre-signed tokens.
                cache.remove(&TokenKey::of(t));
                validator.validate(t).expect("valid");
            }));
            sig_only.push(median_ns(1, 400, || ring_verify(s, input, &sig)));
            jwt_lib.push(median_ns(1, 400, || {
                jsonwebtoken_decode(s, &dk, &tokens[0])
            }));
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2] / 1000.0
        };
        let (c, g, j) = (med(&mut cold), med(&mut sig_only), med(&mut jwt_lib));
        println!(
            "| {} | {c:.1} | {g:.1} | {:.2} | {j:.1} | {:.2} |",
            s.name.to_uppercase(),
            c / g,
            c / j
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
