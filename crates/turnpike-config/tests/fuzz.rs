//! Property-style fuzzing (cargo-fuzz needs nightly): arbitrary text and bytes at the
//! YAML loader, mutated valid files, generated APIs at the compiler, and arbitrary
//! hosts, methods and paths at the router. Nothing may panic, and what comes back
//! must make sense. Case counts are bounded so the suite stays fast.

use http::Method;
use proptest::prelude::*;
use turnpike_config::{ConfigError, RouteResult, Snapshot};

const EXAMPLE: &str = include_str!("../../../examples/gateway.yaml");

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Loads text; a refusal must list located problems that fall inside the text.
fn load_is_sane(text: &str) {
    match Snapshot::from_yaml(text, "fuzz.yaml") {
        Ok(s) => {
            for api in &s.apis {
                assert!(api.context.starts_with('/'));
                assert!(!api.endpoints.is_empty());
            }
        }
        Err(ConfigError::Problems(p)) => {
            assert!(!p.list.is_empty());
            let lines = text.lines().count() + 1;
            for problem in &p.list {
                assert!(!problem.message.is_empty());
                if let Some(at) = problem.location {
                    assert!(
                        at.line >= 1 && at.line <= lines,
                        "{problem} in {lines} lines"
                    );
                    assert!(at.column >= 1);
                }
            }
            assert!(p.to_string().lines().count() > p.list.len());
        }
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}

/// Routes and checks the answer against the request.
fn route_is_sane(s: &Snapshot, host: Option<&str>, method: &Method, path: &str) {
    match s.route(host, method, path) {
        RouteResult::Matched {
            api, upstream_path, ..
        }
        | RouteResult::NotFoundIn { api, upstream_path } => {
            let no_query = path.split('?').next().unwrap_or_default();
            assert!(upstream_path.starts_with('/'), "{upstream_path:?}");
            assert!(!upstream_path.contains('?'));
            assert!(
                no_query.starts_with(&api.context),
                "{path} -> {}",
                api.context
            );
            assert!(
                no_query.ends_with(upstream_path) || upstream_path == "/",
                "{path} -> {upstream_path}"
            );
        }
        RouteResult::MethodNotAllowed { allow, .. } => {
            assert!(!allow.is_empty());
            let allowed = allow.to_str().unwrap_or_default();
            assert!(
                !allowed.split(", ").any(|m| m == method.as_str()),
                "{allowed}"
            );
        }
        RouteResult::NotFound => {}
    }
}

fn yaml_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("apis:".to_owned()),
        Just("\n".to_owned()),
        Just("  - ".to_owned()),
        Just("    ".to_owned()),
        Just("name: a".to_owned()),
        Just("context: /c".to_owned()),
        Just("version: v1".to_owned()),
        Just("default: true".to_owned()),
        Just("endpoints: [\"http://h\"]".to_owned()),
        Just("resources: [{path: \"/*\", methods: [GET]}]".to_owned()),
        Just("max_body_size: ".to_owned()),
        Just("timeouts: {connect: 1s}".to_owned()),
        Just("host: \"*.x.com\"".to_owned()),
        Just("&a ".to_owned()),
        Just("*a".to_owned()),
        Just("<<: *a".to_owned()),
        Just("!!str ".to_owned()),
        Just("? ".to_owned()),
        Just("---\n".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(": ".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just("#".to_owned()),
        Just("\t".to_owned()),
        "[a-z0-9/{}*%.:-]{0,8}",
    ]
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn arbitrary_text_never_panics_the_loader(text in any::<String>()) {
        load_is_sane(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_loader(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        load_is_sane(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn yaml_shaped_noise_never_panics_the_loader(tokens in proptest::collection::vec(yaml_token(), 0..60)) {
        load_is_sane(&tokens.concat());
    }

    #[test]
    fn mutated_example_never_panics_the_loader(
        at in 0usize..EXAMPLE.len(),
        cut in 0usize..40,
        insert in "[ -~\n\t]{0,12}",
    ) {
        let mut text = EXAMPLE.to_owned();
        let start = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        let end = (start + cut).min(text.len());
        let end = (end..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
        text.replace_range(start..end, &insert);
        load_is_sane(&text);
    }
}

fn method() -> impl Strategy<Value = Method> {
    prop_oneof![
        Just(Method::GET),
        Just(Method::HEAD),
        Just(Method::POST),
        Just(Method::PUT),
        Just(Method::DELETE),
        Just(Method::PATCH),
        Just(Method::OPTIONS),
        "[A-Z]{1,10}".prop_map(|m| Method::from_bytes(m.as_bytes()).unwrap_or(Method::GET)),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("pets".to_owned()),
        Just("v1".to_owned()),
        Just("v2".to_owned()),
        Just("files".to_owned()),
        Just("photos".to_owned()),
        Just(String::new()),
        Just("..".to_owned()),
        Just("%2F".to_owned()),
        Just("{id}".to_owned()),
        "[^/?]{0,6}",
    ]
}

fn host() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("api.example.com".to_owned())),
        Just(Some("API.EXAMPLE.COM:8280".to_owned())),
        Just(Some("a.b.example.com".to_owned())),
        Just(Some("[::1]:1".to_owned())),
        any::<String>().prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn arbitrary_requests_get_sane_routes(
        host in host(),
        method in method(),
        segments in proptest::collection::vec(segment(), 0..6),
        query in proptest::option::of("[ -~]{0,10}"),
        raw in any::<String>(),
    ) {
        let s = match Snapshot::from_yaml(EXAMPLE, "gateway.yaml") {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let mut path = String::new();
        for seg in &segments {
            path.push('/');
            path.push_str(seg);
        }
        if let Some(q) = query {
            path.push('?');
            path.push_str(&q);
        }
        route_is_sane(&s, host.as_deref(), &method, &path);
        route_is_sane(&s, host.as_deref(), &method, &raw);
    }
}

fn api_entry() -> impl Strategy<Value = String> {
    let word = || prop_oneof![Just("a"), Just("b"), Just("v1"), Just("x")];
    let template = prop_oneof![
        Just("/"),
        Just("/*"),
        Just("/a"),
        Just("/{id}"),
        Just("/a/*"),
        Just("/{id}/b"),
        Just("/v1/{x}"),
    ];
    (
        proptest::collection::vec(word(), 1..3),
        word(),
        any::<bool>(),
        proptest::collection::vec((template, prop_oneof![Just("GET"), Just("POST"), Just("\"*\"")]), 1..4),
        prop_oneof![Just(""), Just("host: a.com"), Just("host: \"*.a.com\"")],
    )
        .prop_map(|(ctx, version, default, resources, host)| {
            let resources: Vec<String> = resources
                .iter()
                .map(|(p, m)| format!("{{ path: \"{p}\", methods: [{m}] }}"))
                .collect();
            format!(
                "  - {{ name: n, context: /{}, version: {version}, default: {default}, {}{} endpoints: [\"http://h\"], resources: [{}] }}\n",
                ctx.join("/"),
                host,
                if host.is_empty() { "" } else { "," },
                resources.join(", ")
            )
        })
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn generated_apis_compile_or_explain_and_route_sanely(
        apis in proptest::collection::vec(api_entry(), 1..6),
        probes in proptest::collection::vec((host(), method(), proptest::collection::vec(segment(), 0..5)), 20),
    ) {
        let text = format!("apis:\n{}", apis.concat());
        load_is_sane(&text);
        if let Ok(s) = Snapshot::from_yaml(&text, "gen.yaml") {
            for (host, method, segs) in &probes {
                let path: String = segs.iter().map(|s| format!("/{s}")).collect();
                route_is_sane(&s, host.as_deref(), method, &path);
            }
        }
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    for open in ["[", "{a: ", "- "] {
        let text = format!("apis: {}", open.repeat(10_000));
        load_is_sane(&text);
    }
}
