//! Depth and complexity as WSO2 computes them, fragment expansion, list arguments vs
//! ordinary arguments, variables, and the directive cost model.
#![allow(clippy::unwrap_used)]

mod support;

use serde_json::json;
use support::*;
use turnpike_graphql::{Caps, CostConfig, CostModel, ErrorCode, Limits, OperationKind};

#[test]
fn wso2_worked_example_costs_35() {
    let a = films()
        .analyze(
            "{ allFilms(first:5){ id title planets(first:2){ climate } } }",
            None,
            None,
        )
        .unwrap();
    assert_eq!(a.complexity, 35);
    assert_eq!(a.depth, 3);
}

#[test]
fn wso2_depth_example_is_7() {
    let q = "query{ allFilms{ id species{ id films{ title planets{ climate residents{ name films{ title id } } } } } } }";
    assert_eq!(films().analyze(q, None, None).unwrap().depth, 7);
}

#[test]
fn seed_queries_have_the_root_fields_wso2_counts_as_operations() {
    let sw = starwars();
    for (q, n) in [(Q1, 1), (Q2, 4), (Q3, 9), (Q3_ONELINE, 9)] {
        let a = sw.analyze(q, None, None).unwrap();
        assert_eq!(a.root_fields.len(), n);
        assert_eq!(a.kind, OperationKind::Query);
        assert_eq!(
            a.depth, 3,
            "hero {{ friends {{ id }} }} is three fields deep"
        );
    }
    let names: Vec<_> = sw
        .analyze(Q3, None, None)
        .unwrap()
        .root_fields
        .iter()
        .map(|r| r.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "hero",
            "search",
            "character",
            "droid",
            "human",
            "allHumans",
            "allDroids",
            "allCharacters",
            "starship"
        ]
    );
}

#[test]
fn query1_complexity_counts_each_field_once() {
    // hero 1 + id 1 + name 1 + friends (1 + 3) + friendsConnection (1 + 1) + appearsIn 1
    let a = starwars().analyze(Q1, None, None).unwrap();
    assert_eq!(a.complexity, 10);
}

#[test]
fn scalar_arguments_are_not_multipliers() {
    // WSO2 sums every Int argument (and fails on others); `id` and `text` size nothing.
    let sw = starwars();
    let one = sw
        .analyze("{ character(id: 1000) { name } }", None, None)
        .unwrap();
    assert_eq!(one.complexity, 2);
    let many = sw
        .analyze("{ allHumans(first: 10) { name } }", None, None)
        .unwrap();
    assert_eq!(many.complexity, 20);
    let search = sw
        .analyze(
            r#"{ search(text: "Luke") { ... on Human { name } } }"#,
            None,
            None,
        )
        .unwrap();
    assert_eq!(search.complexity, 2);
}

#[test]
fn list_argument_names_are_configurable_per_field() {
    let cost = CostConfig {
        list_arguments: vec![("Query.allFilms".into(), vec![])],
        field_costs: vec![("Planet.climate".into(), 3)],
        ..CostConfig::default()
    };
    let a = analyzer(FILMS, cost, Caps::default(), true)
        .analyze(
            "{ allFilms(first:5){ id title planets(first:2){ climate } } }",
            None,
            None,
        )
        .unwrap();
    // allFilms is no longer multiplied: 1 + 1 + 1 + (1 + 3) * 2
    assert_eq!(a.complexity, 11);
}

#[test]
fn a_cost_table_naming_an_unknown_field_is_refused() {
    let cost = CostConfig {
        field_costs: vec![("Film.budget".into(), 3)],
        list_arguments: vec![("Film.title".into(), vec!["first".into()])],
        ..CostConfig::default()
    };
    let err = turnpike_graphql::CompiledSchema::compile(FILMS, &cost).unwrap_err();
    assert_eq!(err.errors.len(), 2, "{err}");
    assert!(err.to_string().contains("Film.budget"), "{err}");
    assert!(err.to_string().contains("`first`"), "{err}");
}

#[test]
fn named_fragments_do_not_hide_depth_or_cost() {
    let plain = "{ allFilms(first:5){ id title planets(first:2){ climate } } }";
    let hidden = "query { allFilms(first:5) { ...F } } fragment F on Film { id ...T planets(first:2) { ...P } } fragment T on Film { title } fragment P on Planet { climate }";
    let f = films();
    let a = f.analyze(plain, None, None).unwrap();
    let b = f.analyze(hidden, None, None).unwrap();
    assert_eq!((b.depth, b.complexity), (a.depth, a.complexity));
}

#[test]
fn a_field_selected_by_several_fragments_counts_once_per_path() {
    let q = "{ allFilms(first:5){ id ...A ...B ... on Film { id title } } } fragment A on Film { id title } fragment B on Film { title id }";
    let a = films().analyze(q, None, None).unwrap();
    assert_eq!(a.complexity, 15); // (1 + id + title) * 5
}

#[test]
fn aliases_are_separate_paths() {
    let q = "{ a: allFilms(first:5){ id } b: allFilms(first:5){ id } }";
    assert_eq!(films().analyze(q, None, None).unwrap().complexity, 20);
}

#[test]
fn fragment_cycles_are_refused_by_validation() {
    let q = "{ allFilms { ...A } } fragment A on Film { species { films { ...B } } } fragment B on Film { ...A }";
    let err = films().analyze(q, None, None).unwrap_err();
    assert_eq!(err[0].code, ErrorCode::ValidationFailed, "{err:?}");
}

#[test]
fn fragment_fan_out_is_capped() {
    // Each fragment spreads the next one twice under aliases: 2^12 expanded fields.
    let mut q = String::from("{ allFilms { ...F0 } }\n");
    for i in 0..12 {
        q.push_str(&format!(
            "fragment F{i} on Film {{ a{i}: species {{ films {{ ...F{n} }} }} b{i}: species {{ films {{ ...F{n} }} }} }}\n",
            n = i + 1
        ));
    }
    q.push_str("fragment F12 on Film { id }\n");
    let caps = Caps {
        max_expanded_fields: 1000,
        max_nesting: 200,
        ..Caps::default()
    };
    let err = analyzer(FILMS, CostConfig::default(), caps, true)
        .analyze(&q, None, None)
        .unwrap_err();
    assert_eq!(err[0].code, ErrorCode::QueryTooLarge, "{err:?}");
}

#[test]
fn list_sizes_from_variables_follow_each_request() {
    let f = films();
    let q = "query Q($n: Int = 3) { allFilms(first: $n) { id } }";
    let vars = |n: i64| json!({ "n": n }).as_object().cloned().unwrap();
    assert_eq!(f.analyze(q, None, Some(&vars(5))).unwrap().complexity, 10);
    assert_eq!(f.analyze(q, None, Some(&vars(50))).unwrap().complexity, 100);
    // no variables: the declared default
    assert_eq!(f.analyze(q, None, None).unwrap().complexity, 6);
    assert_eq!(f.cache().stats().misses, 1, "the document was parsed once");
}

#[test]
fn operation_name_selects_among_several() {
    let q = "query A { film(id: 1) { id } } mutation B { x }";
    let f = films();
    assert!(
        f.analyze(q, Some("A"), None).is_err(),
        "mutation B does not validate"
    );
    let q = "query A { film(id: 1) { id } } query B { allFilms(first: 2) { id title } }";
    assert_eq!(f.analyze(q, Some("B"), None).unwrap().complexity, 6);
    let err = f.analyze(q, None, None).unwrap_err();
    assert_eq!(err[0].code, ErrorCode::OperationNotFound);
    let err = f.analyze(q, Some("C"), None).unwrap_err();
    assert_eq!(err[0].code, ErrorCode::OperationNotFound);
}

#[test]
fn invalid_queries_carry_locations() {
    let err = starwars()
        .analyze("{\n  hero {\n    nmae\n  }\n}", None, None)
        .unwrap_err();
    assert_eq!(err[0].code, ErrorCode::ValidationFailed);
    let typo = err.iter().find(|e| e.message.contains("nmae")).unwrap();
    assert_eq!((typo.locations[0].line, typo.locations[0].column), (3, 5));
    let err = starwars().analyze("{ hero { ", None, None).unwrap_err();
    assert_eq!(err[0].code, ErrorCode::ParseFailed);
    assert!(!err[0].locations.is_empty());
}

#[test]
fn introspection_can_be_turned_off() {
    let q = "{ __schema { queryType { name } } }";
    assert!(starwars()
        .analyze(q, None, None)
        .unwrap()
        .uses_introspection());
    let off = analyzer(STARWARS, CostConfig::default(), Caps::default(), false);
    let err = off.analyze(q, None, None).unwrap_err();
    assert_eq!(err[0].code, ErrorCode::IntrospectionDisabled);
    assert!(off
        .analyze("{ hero { __typename name } }", None, None)
        .is_ok());
}

/// graphql-js `getIntrospectionQuery()`, what GraphiQL, Postman and code generators send.
const INTROSPECTION: &str = include_str!("data/introspection.graphql");

#[test]
fn introspection_is_counted_apart_from_depth_and_complexity() {
    let sw = starwars();
    let a = sw.analyze(INTROSPECTION, None, None).unwrap();
    assert_eq!(a.introspection_depth, 13, "the standard query is 13 deep");
    assert_eq!((a.depth, a.complexity), (0, 0), "no tier limit sees it");
    // A tier's depth limit of 12 does not refuse it.
    let limits = Limits {
        max_depth: Some(12),
        max_complexity: Some(5),
    };
    assert!(sw.check(&a, INTROSPECTION, &limits, None).is_ok());
    // Mixed with ordinary fields, only those count.
    let mixed = "{ hero { friends { id } } __schema { types { name } } }";
    let a = sw.analyze(mixed, None, None).unwrap();
    assert_eq!((a.depth, a.introspection_depth), (3, 3));
    // Its own limit holds: at the limit, and one above.
    let at = starwars().with_introspection_max_depth(13);
    assert!(at.analyze(INTROSPECTION, None, None).is_ok());
    let below = starwars().with_introspection_max_depth(12);
    let err = below.analyze(INTROSPECTION, None, None).unwrap_err();
    assert_eq!(err[0].code, ErrorCode::MaxDepthExceeded);
    assert!(
        err[0].message.contains("introspection depth 13"),
        "{}",
        err[0].message
    );
    // The default leaves room for clients asking a few more `ofType` levels, not for a
    // cyclic walk through `fields { type { fields ... } }`.
    let mut cyclic = String::from("{ __schema { types { ");
    for _ in 0..10 {
        cyclic.push_str("fields { type { ");
    }
    cyclic.push_str("name");
    cyclic.push_str(&" } }".repeat(10));
    cyclic.push_str(" } } }");
    let err = starwars().analyze(&cyclic, None, None).unwrap_err();
    assert_eq!(err[0].code, ErrorCode::MaxDepthExceeded, "{cyclic}");
}

const COSTED: &str = r#"
directive @cost(weight: Int!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | INPUT_FIELD_DEFINITION | OBJECT | SCALAR
directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION
type Query {
  books(first: Int, last: Int): [Book] @listSize(slicingArguments: ["first", "last"])
  shelves: [Shelf] @listSize(assumedSize: 4)
  authors: [Author]
  search(text: String @cost(weight: 5), first: Int): BookConnection @listSize(slicingArguments: ["first"], sizedFields: ["edges"])
  expensive: Book @cost(weight: 50)
}
type Book { title: String rating: Int @cost(weight: 2) }
type Shelf { name: String }
type Author { name: String }
type BookConnection { edges: [Book] total: Int }
"#;

fn costed() -> turnpike_graphql::Analyzer {
    let cost = CostConfig {
        model: CostModel::Directives,
        default_list_size: 7,
        ..CostConfig::default()
    };
    analyzer(COSTED, cost, Caps::default(), true)
}

#[test]
fn directive_model_uses_cost_and_list_size() {
    let c = costed();
    let cost = |q: &str| c.analyze(q, None, None).unwrap().complexity;
    // list of 5 (largest slicing argument) x (object 1 + title 0 + rating 2)
    assert_eq!(cost("{ books(first: 5, last: 3) { title rating } }"), 15);
    assert_eq!(cost("{ shelves { name } }"), 4);
    assert_eq!(cost("{ authors { name } }"), 7);
    assert_eq!(cost("{ expensive { title } }"), 50);
    // argument weight 5 + connection 1 + edges sized by `first`: 3 x 1
    assert_eq!(
        cost(r#"{ search(text: "x", first: 3) { edges { title } total } }"#),
        9
    );
}
