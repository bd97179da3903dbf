//! The round-trip property: for every operation of every test WSDL, in both directions
//! (request and response message), a JSON document generated from the schema becomes a
//! SOAP envelope (SOAP 1.1 and 1.2) that parses back into the same JSON.

mod support;

use proptest::prelude::*;
use turnpike_soap::read::{envelope_body, read_body};
use turnpike_soap::sample::{self, Rng};
use turnpike_soap::tree::Tree;
use turnpike_soap::write::write_body;
use turnpike_soap::xml::Limits;
use turnpike_soap::{SoapVersion, Wsdl};

fn wsdls() -> Vec<(String, Wsdl)> {
    // Every root WSDL found under tests/data, so one added there is covered too.
    support::discover()
        .iter()
        .map(|(f, r)| (format!("{f}/{r}"), support::import(f, r)))
        .collect()
}

fn round_trip(name: &str, w: &Wsdl, seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let mut checked = 0;
    for port in &w.ports {
        for op in &port.operations {
            for message in std::iter::once(&op.input).chain(op.output.as_ref()) {
                let json = sample::message(&w.types, message, &mut rng);
                for version in [SoapVersion::V11, SoapVersion::V12] {
                    let mut body = String::new();
                    write_body(&w.types, op, message, &json, &mut body)
                        .unwrap_or_else(|e| panic!("{name} {}: {e}\n{json}", op.name));
                    let env = format!(
                        "<s:Envelope xmlns:s=\"{}\"><s:Body>{body}</s:Body></s:Envelope>",
                        version.envelope_ns()
                    );
                    let doc = Tree::parse(&env, Limits::MESSAGES)
                        .unwrap_or_else(|e| panic!("{name} {}: {e}\n{env}", op.name));
                    let (v, body_node) = envelope_body(&doc).expect("envelope");
                    assert_eq!(v, version);
                    let back = read_body(&w.types, op, message, body_node)
                        .unwrap_or_else(|e| panic!("{name} {}: {e}\n{env}", op.name));
                    assert_eq!(back, json, "{name} {}\n{env}", op.name);
                    checked += 1;
                }
            }
        }
    }
    checked
}

#[test]
fn every_operation_of_every_wsdl_round_trips() {
    let all = wsdls();
    let mut total = 0;
    for (name, w) in &all {
        for seed in 0..50 {
            total += round_trip(name, w, seed);
        }
    }
    // 10 WSDLs, 100+ operation bindings, two messages, two versions, 50 seeds.
    assert!(total > 10_000, "only {total} round trips ran");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn random_seeds_round_trip(seed in any::<u64>(), which in 0usize..support::ROOTS.len()) {
        let (f, r) = support::ROOTS[which];
        let w = support::import(f, r);
        prop_assert!(round_trip(r, &w, seed) > 0);
    }
}
