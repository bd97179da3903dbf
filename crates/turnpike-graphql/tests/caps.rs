//! Caps checked before analysis, and the HTTP request shapes.
#![allow(clippy::unwrap_used)]

mod support;

use support::*;
use turnpike_graphql::{errors_body, Caps, CostConfig, ErrorCode, GraphqlRequest};

fn capped(caps: Caps) -> turnpike_graphql::Analyzer {
    analyzer(STARWARS, CostConfig::default(), caps, true)
}

fn code(caps: Caps, q: &str) -> ErrorCode {
    capped(caps).analyze(q, None, None).unwrap_err()[0].code
}

#[test]
fn each_cap_refuses_above_and_accepts_at_its_value() {
    let q = "{ a: hero { name } b: hero { name @include(if: true) } }";
    let at = Caps {
        max_bytes: q.len(),
        max_aliases: 2,
        max_root_fields: 2,
        max_directives: 1,
        ..Caps::default()
    };
    assert!(capped(at).analyze(q, None, None).is_ok());
    for caps in [
        Caps {
            max_bytes: q.len() - 1,
            ..at
        },
        Caps {
            max_aliases: 1,
            ..at
        },
        Caps {
            max_root_fields: 1,
            ..at
        },
        Caps {
            max_directives: 0,
            ..at
        },
        Caps {
            max_tokens: 10,
            ..at
        },
        Caps {
            max_nesting: 1,
            ..at
        },
    ] {
        assert_eq!(code(caps, q), ErrorCode::QueryTooLarge, "{caps:?}");
    }
}

#[test]
fn root_fields_spread_from_fragments_count() {
    let caps = Caps {
        max_root_fields: 2,
        ..Caps::default()
    };
    let q = "query { ...R hero { id } } fragment R on Query { droid(id: 1) { id } human(id: 1) { id } }";
    assert_eq!(code(caps, q), ErrorCode::QueryTooLarge);
}

#[test]
fn requests_arrive_as_json_graphql_or_get() {
    let json = br#"{"query":"{ hero { name } }","operationName":null,"variables":{"n":1}}"#;
    let r = GraphqlRequest::from_http("POST", Some("application/json; charset=utf-8"), None, json)
        .unwrap();
    assert_eq!(r.query(), "{ hero { name } }");
    assert_eq!(r.variables.unwrap()["n"], 1);
    let r = GraphqlRequest::from_http(
        "POST",
        Some("application/graphql"),
        None,
        b"{ hero { id } }",
    )
    .unwrap();
    assert_eq!(r.query(), "{ hero { id } }");
    let r = GraphqlRequest::from_http(
        "GET",
        None,
        Some("query=query+Q%28%24n%3AInt%29%7Bhero%7Bid%7D%7D&operationName=Q&variables=%7B%22n%22%3A2%7D"),
        b"",
    )
    .unwrap();
    assert_eq!(r.query(), "query Q($n:Int){hero{id}}");
    assert_eq!(r.operation_name.as_deref(), Some("Q"));
    assert_eq!(r.variables.unwrap()["n"], 2);
}

#[test]
fn malformed_requests_are_bad_requests() {
    for (m, ct, qs, body) in [
        ("POST", Some("application/json"), None, &b"{not json"[..]),
        (
            "POST",
            Some("application/json"),
            None,
            br#"{"variables":{}}"#,
        ),
        ("POST", Some("text/plain"), None, b"{ hero { id } }"),
        ("GET", None, Some("operationName=x"), b""),
        ("GET", None, Some("query=%7Bhero%7D&variables=%5B1%5D"), b""),
        ("PUT", None, None, b""),
    ] {
        let err = GraphqlRequest::from_http(m, ct, qs, body).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadRequest, "{m} {ct:?} {qs:?}");
    }
}

#[test]
fn errors_body_is_graphql_shaped() {
    let err = starwars()
        .analyze("{ hero { name nope } }", None, None)
        .unwrap_err();
    assert_eq!(err.len(), 1, "{err:?}");
    let body: serde_json::Value = serde_json::from_str(&errors_body(&err, Some("r1"))).unwrap();
    let e = &body["errors"][0];
    assert!(e["message"].as_str().unwrap().contains("nope"));
    assert_eq!(e["locations"][0]["line"], 1);
    assert_eq!(e["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED");
    assert_eq!(e["extensions"]["request_id"], "r1");
}
