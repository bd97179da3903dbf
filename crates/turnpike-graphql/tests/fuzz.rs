//! Property runs: arbitrary text and arbitrary query-shaped text never panic the
//! request parser or the analyzer, and every refusal is a GraphQL error with a code.
#![allow(clippy::unwrap_used)]

mod support;

use proptest::prelude::*;
use support::*;

fn query_like() -> impl Strategy<Value = String> {
    let tokens = prop::sample::select(vec![
        "{",
        "}",
        "(",
        ")",
        "...",
        "on",
        "Human",
        "Droid",
        "hero",
        "friends",
        "name",
        "id",
        "fragment",
        "F",
        "query",
        "mutation",
        "a:",
        "first:",
        "5",
        "$n",
        "@skip(if:true)",
        "search(text:\"x\")",
        "__schema",
        "__typename",
        "allHumans",
        ":",
        "\"",
        "\n",
        "#",
    ]);
    prop::collection::vec(tokens, 0..60).prop_map(|t| t.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn analyzer_never_panics_on_query_like_text(q in query_like()) {
        let sw = starwars();
        match sw.analyze(&q, None, None) {
            Ok(a) => prop_assert!(a.depth >= 1 || a.root_fields.is_empty()),
            Err(errors) => prop_assert!(!errors.is_empty()),
        }
    }

    #[test]
    fn analyzer_never_panics_on_arbitrary_text(q in ".{0,300}") {
        let _ = starwars().analyze(&q, None, None);
    }

    #[test]
    fn request_parser_never_panics(body in prop::collection::vec(any::<u8>(), 0..300), qs in ".{0,200}") {
        let _ = turnpike_graphql::GraphqlRequest::from_http("POST", Some("application/json"), None, &body);
        let _ = turnpike_graphql::GraphqlRequest::from_http("POST", Some("application/graphql"), None, &body);
        let _ = turnpike_graphql::GraphqlRequest::from_http("GET", None, Some(&qs), &[]);
    }

    #[test]
    fn locations_stay_inside_the_text(text in ".{0,200}", offset in 0usize..400) {
        let l = turnpike_graphql::location(&text, offset);
        prop_assert!(l.line >= 1 && l.column >= 1);
        prop_assert!(l.line <= text.lines().count().max(1) + 1);
    }
}
