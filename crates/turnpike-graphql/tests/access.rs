//! Field-level access and per-tier limits on analysed queries.
#![allow(clippy::unwrap_used)]

mod support;

use support::*;
use turnpike_graphql::{ErrorCode, FieldAccess, Limits};

#[test]
fn a_denied_field_is_named_with_its_location() {
    let sw = starwars();
    let deny = FieldAccess::deny(sw.schema(), &["Human.mass"]).unwrap();
    let q = "{\n  human(id: 1000) {\n    name\n    mass\n  }\n}";
    let a = sw.analyze(q, None, None).unwrap();
    let err = sw
        .check(&a, q, &Limits::default(), Some(&deny))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::FieldNotAllowed);
    assert!(err.message.contains("Human.mass"), "{err}");
    assert_eq!((err.locations[0].line, err.locations[0].column), (4, 5));
    let ok = sw
        .analyze("{ human(id: 1000) { name } }", None, None)
        .unwrap();
    assert!(sw.check(&ok, "", &Limits::default(), Some(&deny)).is_ok());
}

#[test]
fn a_denied_field_is_denied_through_fragments_and_interfaces() {
    let sw = starwars();
    let deny = FieldAccess::deny(sw.schema(), &["Human.friends"]).unwrap();
    for q in [
        "{ search(text: \"x\") { ... on Human { friends { id } } } }",
        "{ human(id: 1) { ...F } } fragment F on Human { friends { id } }",
        // the interface field can return a Human's friends
        "{ hero { friends { id } } }",
    ] {
        let a = sw.analyze(q, None, None).unwrap();
        let err = sw
            .check(&a, q, &Limits::default(), Some(&deny))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::FieldNotAllowed, "{q}");
    }
    let q = "{ droid(id: 1) { friends { id } } }";
    let a = sw.analyze(q, None, None).unwrap();
    assert!(sw.check(&a, q, &Limits::default(), Some(&deny)).is_ok());
}

#[test]
fn denying_a_type_denies_its_fields_and_the_fields_returning_it() {
    let sw = starwars();
    let deny = FieldAccess::deny(sw.schema(), &["Starship"]).unwrap();
    for q in [
        "{ starship(id: 1) { id } }",
        "{ human(id: 1) { starships { name } } }",
    ] {
        let a = sw.analyze(q, None, None).unwrap();
        assert!(
            sw.check(&a, q, &Limits::default(), Some(&deny)).is_err(),
            "{q}"
        );
    }
}

#[test]
fn an_allow_list_denies_everything_else() {
    let sw = starwars();
    let allow = FieldAccess::allow(sw.schema(), &["Query.hero", "Character"]).unwrap();
    let ok = sw.analyze("{ hero { id name } }", None, None).unwrap();
    assert!(sw.check(&ok, "", &Limits::default(), Some(&allow)).is_ok());
    let q = "{ droid(id: 1) { id } }";
    let no = sw.analyze(q, None, None).unwrap();
    let err = sw
        .check(&no, q, &Limits::default(), Some(&allow))
        .unwrap_err();
    assert!(err.message.contains("Query.droid"), "{err}");
}

#[test]
fn unknown_coordinates_are_refused_at_configuration() {
    let sw = starwars();
    assert!(FieldAccess::deny(sw.schema(), &["Human.wings"]).is_err());
    assert!(FieldAccess::allow(sw.schema(), &["Wookiee"]).is_err());
}

#[test]
fn limits_refuse_above_and_accept_at_the_maximum() {
    let f = films();
    let q = "{ allFilms(first:5){ id title planets(first:2){ climate } } }";
    let a = f.analyze(q, None, None).unwrap();
    let at = Limits {
        max_depth: Some(3),
        max_complexity: Some(35),
    };
    assert!(f.check(&a, q, &at, None).is_ok());
    let depth = Limits {
        max_depth: Some(2),
        ..at
    };
    assert_eq!(
        f.check(&a, q, &depth, None).unwrap_err().code,
        ErrorCode::MaxDepthExceeded
    );
    let cx = Limits {
        max_complexity: Some(34),
        ..at
    };
    let err = f.check(&a, q, &cx, None).unwrap_err();
    assert_eq!(err.code, ErrorCode::MaxComplexityExceeded);
    assert!(err.message.contains("35"), "{err}");
}

#[test]
fn explain_lists_every_merged_field() {
    let f = films();
    let q = "{ allFilms(first:5){ id title planets(first:2){ climate } } }";
    let limits = Limits {
        max_depth: Some(10),
        max_complexity: Some(30),
    };
    let e = f.explain(q, None, None, &limits).unwrap();
    assert_eq!((e.depth, e.complexity, e.within_limits), (3, 35, false));
    let planets = e
        .fields
        .iter()
        .find(|r| r.path == "allFilms.planets")
        .unwrap();
    assert_eq!((planets.multiplier, planets.subtotal), (2, 4));
    assert_eq!(planets.coordinate, "Film.planets");
    assert_eq!(e.fields.len(), 5);
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["complexity"], 35);
    assert_eq!(json["limits"]["max_complexity"], 30);
}
