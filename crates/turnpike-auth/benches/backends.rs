//! Which signature verifier is fastest on this machine, per JWT algorithm: `ring` (what
//! the gateway uses), `aws-lc-rs` (with its pre-parsed public keys) and the RustCrypto
//! crates (`p256`, `ed25519-dalek`, `rsa`), all constant-time and maintained. Criterion
//! times each; then ratios against ring from alternating rounds in this same run are
//! printed. Run: `cargo bench -p turnpike-auth --features bench-backends --bench backends`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};

use common::{median_ns, signers, Signer};

type Verify<'a> = Box<dyn Fn() + 'a>;

/// (backend, verify-once closure) for one signer's token.
fn backends<'a>(s: &'a Signer, input: &'a [u8], sig: &'a [u8]) -> Vec<(&'static str, Verify<'a>)> {
    use aws_lc_rs::signature as aws;
    use ring::signature as rs;
    let mut out: Vec<(&'static str, Verify<'a>)> = Vec::new();
    match s.name {
        "es256" => {
            out.push((
                "ring",
                Box::new(move || {
                    rs::UnparsedPublicKey::new(&rs::ECDSA_P256_SHA256_FIXED, &s.public)
                        .verify(input, sig)
                        .expect("ring");
                }),
            ));
            let parsed =
                aws::ParsedPublicKey::new(&aws::ECDSA_P256_SHA256_FIXED, &s.public).expect("aws");
            out.push((
                "aws-lc-rs",
                Box::new(move || parsed.verify_sig(input, sig).expect("aws")),
            ));
            use p256::ecdsa::signature::Verifier;
            let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&s.public).expect("p256");
            let sg = p256::ecdsa::Signature::from_slice(sig).expect("sig");
            out.push((
                "RustCrypto p256",
                Box::new(move || vk.verify(input, &sg).expect("p256")),
            ));
        }
        "eddsa" => {
            out.push((
                "ring",
                Box::new(move || {
                    rs::UnparsedPublicKey::new(&rs::ED25519, &s.public)
                        .verify(input, sig)
                        .expect("ring");
                }),
            ));
            let parsed = aws::ParsedPublicKey::new(&aws::ED25519, &s.public).expect("aws");
            out.push((
                "aws-lc-rs",
                Box::new(move || parsed.verify_sig(input, sig).expect("aws")),
            ));
            let bytes: [u8; 32] = s.public.as_slice().try_into().expect("32 bytes");
            let vk = ed25519_dalek::VerifyingKey::from_bytes(&bytes).expect("dalek");
            let sg = ed25519_dalek::Signature::from_slice(sig).expect("sig");
            out.push((
                "ed25519-dalek",
                Box::new(move || vk.verify_strict(input, &sg).expect("dalek")),
            ));
        }
        _ => {
            let (n, e) = s.rsa_ne.as_ref().expect("rsa");
            out.push((
                "ring",
                Box::new(move || {
                    rs::RsaPublicKeyComponents { n, e }
                        .verify(&rs::RSA_PKCS1_2048_8192_SHA256, input, sig)
                        .expect("ring");
                }),
            ));
            let parsed = aws::ParsedPublicKey::new(&aws::RSA_PKCS1_2048_8192_SHA256, &s.public)
                .expect("aws");
            out.push((
                "aws-lc-rs",
                Box::new(move || parsed.verify_sig(input, sig).expect("aws")),
            ));
            use rsa::pkcs1::DecodeRsaPublicKey;
            use rsa::signature::Verifier;
            let pk = rsa::RsaPublicKey::from_pkcs1_der(&s.public).expect("rsa");
            let vk = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(pk);
            let sg = rsa::pkcs1v15::Signature::try_from(sig).expect("sig");
            out.push((
                "RustCrypto rsa",
                Box::new(move || vk.verify(input, &sg).expect("rsa")),
            ));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let signers = signers();
    let tokens: Vec<String> = signers.iter().map(|s| s.token(1)).collect();
    let mut g = c.benchmark_group("verify");
    for (s, t) in signers.iter().zip(&tokens) {
        let (input, sig) = Signer::split(t);
        for (name, f) in backends(s, input, &sig) {
            g.bench_function(format!("{}_{}", s.name, name.replace(' ', "_")), |b| {
                b.iter(&f)
            });
        }
    }
    g.finish();
    println!(
        "\nverification µs per signature, medians of 9 alternating rounds; ratio = backend / ring:"
    );
    println!("| alg | backend | µs | vs ring |");
    println!("|---|---|---|---|");
    for (s, t) in signers.iter().zip(&tokens) {
        let (input, sig) = Signer::split(t);
        let fs = backends(s, input, &sig);
        let mut samples = vec![Vec::new(); fs.len()];
        for _ in 0..9 {
            for (i, (_, f)) in fs.iter().enumerate() {
                samples[i].push(median_ns(1, 200, f));
            }
        }
        let med: Vec<f64> = samples
            .iter_mut()
            .map(|v| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2] / 1000.0
            })
            .collect();
        for (i, (name, _)) in fs.iter().enumerate() {
            println!(
                "| {} | {name} | {:.1} | {:.2} |",
                s.name.to_uppercase(),
                med[i],
                med[i] / med[0]
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
